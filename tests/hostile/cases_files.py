"""Hostile files: files that parse (or nearly) but must be refused, one per case, for every command
that reads a user file. `FILE_CASES` is run by test_corpus.py: each case must end with exit code 2
and one line `error: ...` naming the input and containing the expected fragment, with nothing
written.

The files under ``files/`` are made by :func:`write_corpus` (``python tests/hostile/cases_files.py``
rewrites them; tests/core/test_files.py checks that the committed corpus is what it writes).
A case's name is its file (or folder) under ``files/``; ``{file}`` in the command line is its path.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"
STORY = (HERE.parent / "data" / "tmgbench_stories" / "111_0.txt").read_text(encoding="utf-8")

DEEP = 10_000  # far past the parsers' recursion, and the readers' limit of 64
GAME = {"payoff_matrix": [[1, -1], [-1, 1]]}
SUITE_HEAD = 'seeds = [1]\nmodels = ["random"]\n'
OBS_HEAD = "game_id,round,row_player,col_player,row_action,col_action\n"
LAUGHS = "".join(
    ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)]
    + ["nashgap: {num_games: *i}\nmodels: [random]\n"])


def _json(obj: object) -> bytes:
    return json.dumps(obj).encode()


def _games(**game: object) -> bytes:
    return _json([{**GAME, **game}])


def _story(edit: Callable[[str], str]) -> str:
    text = edit(STORY)
    assert text != STORY, "the edit did not apply to the fixture story"
    return text


# name -> bytes (a file), a dict name -> bytes|str (a folder), or ("symlink", target)
CORPUS: dict[str, object] = {
    # -- games files: nashgap --games-file ---------------------------------------------------------
    "games_deep.json": ("[" * DEEP + "]" * DEEP).encode(),
    "games_payoff_1e308.json": _json([{"payoff_matrix": [[1e308, 0], [0, 1]]}]),
    "games_payoff_overflow.json": b'[{"payoff_matrix": [[1e999, 0], [0, 1]]}]',
    "games_nan.json": b'[{"payoff_matrix": [[NaN, 0], [0, 1]]}]',
    "games_int_labels.json": _games(row_labels=[1, 2]),
    "games_dict_label.json": _games(col_labels=[{"label": "H"}, "T"]),
    "games_surrogate_label.json": b'[{"payoff_matrix": [[1, -1], [-1, 1]], "row_labels": ["\\ud800", "T"]}]',
    "games_5000_digits.json": b'[{"payoff_matrix": [[1' + b"0" * 5000 + b', 0], [0, 1]]}]',
    "games_truncated.json": _games()[:25],
    "games_empty.json": b"",
    "games_latin1.json": '[{"payoff_matrix": [[1, -1], [-1, 1]], "name": "café"}]'.encode("latin-1"),
    "games_utf16.json": _games().decode().encode("utf-16"),
    "games_nul.json": b'[{"payoff_matrix": [[1, -1], [-1, 1]]}]\x00\x00',
    "games_duplicate_key.json": b'[{"payoff_matrix": [[1]], "payoff_matrix": [[2]]}]',
    "games_1001_actions.json": _json([{"payoff_matrix": [[0] * 1001]}]),
    "games_ragged.json": _json([{"payoff_matrix": [[1, 2], [3]]}]),
    "games_bool_payoff.json": _json([{"payoff_matrix": [[True, 0], [0, 1]]}]),
    "games_name_int.json": _games(name=5),
    "games_a_string.json": b'"payoff_matrix"',
    "games_none.json": b"[]",
    "games_binary.json": bytes(range(256)) * 4,
    "games_directory.json": {"inside.json": _games()},
    "games_symlink_loop.json": ("symlink", "games_symlink_loop.json"),
    # -- price tables: nashgap --price-table (JSON) -----------------------------------------------
    "price_deep.json": ("{\"a\": " * DEEP + "1" + "}" * DEEP).encode(),
    "price_nan.json": b'{"random": {"input_per_million": NaN, "output_per_million": 1}}',
    "price_latin1.json": '{"café": {"input_per_million": 1, "output_per_million": 1}}'.encode("latin-1"),
    # a price whose costs overflow to inf (1e308 a million tokens): the run's own folder was refused later
    "price_overflow.json": b'{"random": {"input_per_million": 1e308, "output_per_million": 1}}',
    "price_huge_int.json": b'{"random": {"input_per_million": 1' + b"0" * 30 + b', "output_per_million": 1}}',
    # -- suite files: suite run -------------------------------------------------------------------
    "suite_deep.toml": (SUITE_HEAD + "[nashgap]\nx = " + "[" * DEEP + "]" * DEEP + "\n").encode(),
    "suite_deep.yaml": ("seeds: [1]\nmodels: [random]\nnashgap: {x: " + "[" * DEEP + "]" * DEEP + "}\n").encode(),
    "suite_billion_laughs.yaml": LAUGHS.encode(),
    "suite_alias.yaml": b"seeds: &s [1]\nmodels: [random]\nnashgap: {num_trials: 1}\nother: *s\n",
    # YAML 1.1 forms other readers take otherwise: 010 was seed 8, 1:30 seed 90, on was true (fuzz 26 B F5)
    "suite_yaml11_octal.yaml": b"seeds: [010]\nmodels: [random]\nnashgap: {num_games: 2}\n",
    "suite_yaml11_base60.yaml": b"seeds: [1:30]\nmodels: [random]\nnashgap: {num_games: 2}\n",
    "suite_yaml11_bool.yaml": b"seeds: [1]\nmodels: [random]\ntmgbench: {combined: on}\n",
    "suite_float_count.toml": (SUITE_HEAD + "[nashgap]\nnum_games = 2.5\n").encode(),
    "suite_bool_count.toml": (SUITE_HEAD + "[nashgap]\nnum_games = true\n").encode(),
    "suite_inf_count.toml": (SUITE_HEAD + "[nashgap]\nnum_games = inf\n").encode(),
    "suite_duplicate_seeds.toml": b'seeds = [1, 1]\nmodels = ["random"]\n[nashgap]\nnum_games = 2\n',
    "suite_5000_digits.yaml": b"seeds: [1" + b"0" * 5000 + b"]\nmodels: [random]\nnashgap: {}\n",
    "suite_empty_spec.toml": b'seeds = [1]\nmodels = [{spec = " "}]\n[nashgap]\n',
    "suite_int_label.toml": b'seeds = [1]\nmodels = [{spec = "random", label = 7}]\n[nashgap]\n',
    "suite_duplicate_label.toml": b'seeds = [1]\nmodels = [{spec = "random", label = "x"}, {spec = "nash", label = "x"}]\n'
                                  b"[nashgap]\n",
    "suite_model_key_typo.toml": b'seeds = [1]\nmodels = [{spec = "random", lable = "x"}]\n[nashgap]\n',
    "suite_latin1.toml": (SUITE_HEAD + '[nashgap]\nbucket = "café"\n').encode("latin-1"),
    "suite_nul.yaml": b"seeds: [1]\nmodels: [random]\x00\nnashgap: {}\n",
    "suite_surrogate.yaml": b'name: "\\ud800"\nseeds: [1]\nmodels: [random]\nnashgap: {}\n',
    "suite_duplicate_key.yaml": b"seeds: [1]\nseeds: [2]\nmodels: [random]\nnashgap: {}\n",
    "suite_python_tag.yaml": b"seeds: [1]\nmodels: [!!python/object/apply:os.system [echo]]\nnashgap: {}\n",
    "suite_a_list.yaml": b"- nashgap\n- random\n",
    "suite_empty.toml": b"",
    "suite_truncated.toml": b'seeds = [1\nmodels = ["random"]\n',
    "suite_binary.yaml": bytes(range(128, 256)),
    "suite_not_toml.json": b'{"seeds": [1]}',
    # a suite's own checks of a section, said as the file's key, not as a flag nobody gave
    "suite_negative_count.toml": (SUITE_HEAD + "[nashgap]\nnum_games = -1\n").encode(),
    "suite_negative_seed.toml": b'seeds = [-1]\nmodels = ["random"]\n[nashgap]\nnum_games = 1\n',
    "suite_unknown_mechanism.toml": (SUITE_HEAD + '[chbench]\nmechanisms = ["nope"]\n').encode(),
    "suite_nul_output_dir.toml": (SUITE_HEAD + 'output_dir = "a\\u0000b"\n[nashgap]\nnum_games = 1\n').encode(),
    # a file the section names is read before any folder exists (output_dir: none may be made)
    "suite_missing_games_file.toml": (SUITE_HEAD + 'output_dir = "made/here"\n[nashgap]\n'
                                      'games_file = "/nonexistent/stratbench-games.json"\n').encode(),
    "suite_missing_price_table.toml": (SUITE_HEAD + 'output_dir = "made/here"\n[nashgap]\nnum_games = 1\n'
                                       'price_table = "/nonexistent/stratbench-prices.json"\n').encode(),
    "suite_missing_stories_dir.toml": ('seeds = [1]\nmodels = ["uniform"]\noutput_dir = "made/here"\n[tmgbench]\n'
                                       'setting = "story"\nstories_dir = "/nonexistent/stratbench-stories"\n').encode(),
    # -- tiered suite files: suite tiered --config -------------------------------------------------
    "tiered_float_count.toml": b"num_games_per_bucket = 2.5\nuse_dummy = true\n",
    "tiered_duplicate_seeds.toml": b"seeds = [42, 42]\nuse_dummy = true\n",
    "tiered_billion_laughs.yaml": LAUGHS.replace("nashgap: {num_games: *i}\nmodels: [random]\n",
                                                "seeds: *i\n").encode(),
    "tiered_deep.yaml": ("use_dummy: true\nmodes: " + "[" * DEEP + "]" * DEEP + "\n").encode(),
    "tiered_empty_spec.yaml": b"use_dummy: true\nmodels:\n  - spec: ''\n",
    "tiered_model_key_typo.toml": b'use_dummy = true\nmodels = [{spec = "random", teir = "A"}]\n',
    "tiered_duplicate_label.toml": b'use_dummy = true\nmodels = [{spec = "random", label = "m"}, {spec = "nash", label = "m"}]\n',
    "tiered_latin1.yaml": "use_dummy: true\nmodels: [café]\n".encode("latin-1"),
    # -- CHBench corrections: chbench run --corrections --------------------------------------------
    "corrections_deep.json": ("[" * DEEP + "]" * DEEP).encode(),
    "corrections_payoff_1e308.json": _json({"8": {"payoff_row": [[1e308, 0], [0, 1]], "payoff_col": [[0, 1], [1, 0]]}}),
    "corrections_arabic_id.json": _json({"٨": {"payoff_row": [[1, 0], [0, 1]], "payoff_col": [[0, 1], [1, 0]]}}),
    "corrections_duplicate_id.json": _json({"8": {"payoff_row": [[1, 0], [0, 1]], "payoff_col": [[0, 1], [1, 0]]},
                                            "08": {"payoff_row": [[1, 0], [0, 1]], "payoff_col": [[0, 1], [1, 0]]}}),
    "corrections_truncated.json": b'{"8": {"payoff_row": [[1, 0],',
    "corrections_latin1.json": '{"8": "café"}'.encode("latin-1"),
    "corrections_empty.json": b"",
    # -- observations: chbench fit --data ----------------------------------------------------------
    "obs_digits_1_based.csv": (OBS_HEAD + "1,1,a,b,1,2\n1,2,a,b,2,2\n").encode(),
    "obs_superscript_two.csv": (OBS_HEAD + "1,1,a,b,A,²\n").encode(),
    "obs_fullwidth_game_id.csv": (OBS_HEAD + "１,1,a,b,A,B\n").encode(),
    "obs_uncertain_game.csv": (OBS_HEAD + "1,1,a,b,A,B\n8,1,a,b,A,B\n").encode(),
    "obs_cell_131073.csv": (OBS_HEAD + "1,1,a," + "b" * 131_073 + ",A,B\n").encode(),
    "obs_latin1.csv": (OBS_HEAD + "1,1,André,b,A,B\n").encode("latin-1"),
    "obs_utf16.csv": (OBS_HEAD + "1,1,a,b,A,B\n").encode("utf-16"),
    "obs_binary.csv": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
    "obs_nul.csv": (OBS_HEAD + "1,1,a\x00,b,A,B\n").encode(),
    "obs_empty.csv": b"",
    "obs_missing_column.csv": b"game_id,round,row_player,col_player,row_action\n1,1,a,b,A\n",
    "obs_ragged_row.csv": (OBS_HEAD + "1,1,a,b,A,B,extra\n").encode(),
    "obs_unterminated_quote.csv": (OBS_HEAD + '1,1,"a,b,A,B\n').encode(),
    "obs_duplicate_column.csv": b"game_id,game_id,round,row_player,col_player,row_action,col_action\n",
    "obs_header_only.csv": OBS_HEAD.encode(),
    "obs_directory.csv": {"inside.csv": OBS_HEAD},
    # -- story folders: tmgbench run --setting story --stories-dir, tmgbench stories verify ---------
    "stories_same_story_twice": {"111_0.txt": STORY, "111_00.txt": STORY},
    "stories_folder_named_like_a_story": {"111_0.txt": {"README.md": "a folder, not a story"}},
    "stories_deep_characters": {"111_0.txt": _story(lambda t: t.replace(
        '"A": "Mira, head of the Lakeside Fishers\' Cooperative"', '"A": ' + "[" * DEEP + "]" * DEEP))},
    "stories_deep_preferences": {"111_0.txt": _story(lambda t: t.replace(
        '4: "Exceed the quota while Tomas respects it (big catch from a healthy lake)"',
        "4: " + "{1: " * DEEP + '"x"' + "}" * DEEP, 1))},
    "stories_5000_digit_payoff": {"111_0.txt": _story(lambda t: t.replace("| 1 \\ 4 |", "| 1" + "0" * 5000 + " \\ 4 |"))},
    "stories_latin1": {"111_0.txt": STORY.replace("Mira", "Mirá").encode("latin-1")},
    "stories_nul": {"111_0.txt": STORY.replace("[Scenario]", "[Scenario]\x00")},
    "stories_bad_name": {"story.txt": STORY},
    "stories_symlink_loop": {"111_0.txt": ("symlink", "111_0.txt")},
    "stories_a_file.txt": STORY,
    # -- a corrections file given to chbench fit (with the valid observations below) --------------
    "fit_corrections_wrong_shape.json": _json({"8": {"payoff_row": [[1, 0, 0]], "payoff_col": [[0, 1, 0]]}}),
    # -- chat templates of HTTP models: --chat-template (and a GGUF model: --model gguf:) ----------
    "template_empty.jinja": b"",
    "template_no_messages.jinja": b"You are a helpful assistant.\n",
    "template_first_two_turns.jinja": b"{{ messages[0]['content'] }}|{% if messages|length > 1 %}"
                                      b"{{ messages[1]['content'] }}{% endif %}|END",
    "template_endless_loop.jinja": b"{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
                                   b"{% for m in messages %}{{ m['content'] }}{% endfor %}",
    "template_huge_range.jinja": b"{% for i in range(10**9) %}{% endfor %}{{ messages[0]['content'] }}",
    "template_doubling.jinja": b'{% set ns = namespace(s="x") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}'
                               b"{% endfor %}{{ messages[0]['content'] }}",
    # one expression whose filters run in jinja's code, not the template's lines: a list of millions
    # handed to |map chains (minutes), and |map chains over a list within the cap (seconds)
    "template_long_list.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}{% set l = ('ab' * 1900000)|list %}"
                                b"{{ l|map('string')|map('upper')|map('lower')|map('trim')|map('title')|list|length }}",
    "template_map_chain.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}{% set l = range(99999)|list %}"
                                + b"{{ l" + b"|map('string')|map('trim')" * 40 + b"|list|length }}",
    # small values whose text is gigabytes, built by a filter (or the output) before any check after it
    "template_indent_wide.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}"
                                  b"{{ ('a\\n' * 1950000)|indent(1000)|length }}",
    "template_tojson_shared.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}{% set s = 'x' * 3900000 %}"
                                    b"{{ ([s] * 500)|tojson|length }}",
    "template_output_shared.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}{% set s = 'x' * 3900000 %}"
                                    b"{{ [s] * 500 }}",
    "template_lone_surrogate.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}{{ '\\udc80' }}",
    # an integer of 5,000 digits: said as what the file holds, not as Python's advice (fuzz 10 A M4)
    "template_big_int.jinja": b"{{ " + b"1" * 5000 + b" }}{% for m in messages %}{{ m.content }}{% endfor %}",
    # str methods whose result dwarfs their inputs: 3.6 GB and 3 GB were built before a limit applied
    "template_str_replace.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}{% set a = 'a' * 60000 %}"
                                  b"{{ a.replace('a', a)|length }}",
    "template_filter_replace.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}{% set a = 'a' * 60000 %}"
                                     b"{{ a|replace('a', a)|length }}",
    "template_expandtabs.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}"
                                 b"{{ ('\t' * 3000000).expandtabs(1000)|length }}",
    # jinja's own text generator ran outside the checks: 110 s and 680 MB past a 2 s limit (fuzz 25 A F3)
    "template_lipsum.jinja": b"{% set x = lipsum(600000, html=False) %}{% for m in messages %}{{ m.content }}"
                             b"{% endfor %}",
    # a resumed run would render other prompts than the run it finishes
    "template_random.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}{{ [1, 2]|random }}",
    "template_a_text.gguf": b"{% for m in messages %}{{ m['content'] }}{% endfor %}",
    "template_config_empty.json": _json({"chat_template": "", "bos_token": "<s>"}),
    "model_a_text.gguf": b"not a model, only text\n",
    # -- valid inputs the cases above need (not cases themselves) ----------------------------------
    "valid": {"observations.csv": OBS_HEAD + "1,1,a,b,A,B\n8,1,a,b,B,A\n"},
}
HELPERS = {"valid"}

_GAMES = ["nashgap", "--games-file", "{file}", "--llm-type", "dummy"]
_PRICE = ["nashgap", "--price-table", "{file}", "--llm-type", "dummy", "--num-games", "2"]
_SUITE = ["suite", "run", "{file}"]
_TIERED = ["suite", "tiered", "--config", "{file}"]
_CORR = ["chbench", "run", "--corrections", "{file}", "--models", "random"]
_FIT = ["chbench", "fit", "--data", "{file}"]
_STORIES = ["tmgbench", "run", "--setting", "story", "--stories-dir", "{file}", "--model", "oracle"]
_VERIFY = ["tmgbench", "stories", "verify", "{file}"]
_FIT_CORR = ["chbench", "fit", "--data", "{files}/valid/observations.csv", "--corrections", "{file}"]

_HTTP = ["--model", "openai-compatible:m", "--base-url", "http://127.0.0.1:9/v1"]  # never connected to
_TEMPLATE = ["nashgap", *_HTTP, "--chat-template", "{file}"]
_TOM_TEMPLATE = ["tom", "run", *_HTTP, "--chat", "--chat-template", "{file}"]
_GGUF_MODEL = ["nashgap", "--model", "gguf:{file}"]

# (name of the file under files/, command line with {file}, fragment of the one error line)
FILE_CASES: list[tuple[str, list[str], str]] = [
    ("games_deep.json", _GAMES, "nested deeper than 64 levels"),
    ("games_payoff_1e308.json", _GAMES, "payoffs must lie within"),
    ("games_payoff_overflow.json", _GAMES, "too large for a float"),
    ("games_nan.json", _GAMES, "NaN is not allowed"),
    ("games_int_labels.json", _GAMES, "row_labels[0]: expected a string, got 1"),
    ("games_dict_label.json", _GAMES, "col_labels[0]: expected a string, got a table"),
    ("games_surrogate_label.json", _GAMES, "lone surrogate"),
    ("games_5000_digits.json", _GAMES, "an integer of 5001 digits (at most 64)"),
    ("games_truncated.json", _GAMES, "invalid JSON"),
    ("games_empty.json", _GAMES, "invalid JSON"),
    ("games_latin1.json", _GAMES, "not UTF-8 text (byte 0xe9"),
    ("games_utf16.json", _GAMES, "not UTF-8"),
    ("games_nul.json", _GAMES, "NUL byte"),
    ("games_duplicate_key.json", _GAMES, "duplicate key 'payoff_matrix'"),
    ("games_1001_actions.json", _GAMES, "at most 1000 actions"),
    ("games_ragged.json", _GAMES, "ragged"),
    ("games_bool_payoff.json", _GAMES, "not a number"),
    ("games_name_int.json", _GAMES, "name: expected a string, got 5"),
    ("games_a_string.json", _GAMES, "expected an object"),
    ("games_none.json", _GAMES, "contains no games"),
    ("games_binary.json", _GAMES, "not UTF-8"),
    ("games_directory.json", _GAMES, "is a directory"),
    ("games_symlink_loop.json", _GAMES, "symlink loop"),
    ("price_deep.json", _PRICE, "--price-table"),
    ("price_nan.json", _PRICE, "--price-table"),
    ("price_latin1.json", _PRICE, "--price-table"),
    ("price_overflow.json", _PRICE, "a price over 1,000,000 dollars a million tokens"),
    ("price_huge_int.json", _PRICE, "a price over 1,000,000 dollars a million tokens"),
    ("suite_deep.toml", _SUITE, "nested deeper than 64 levels"),
    ("suite_deep.yaml", _SUITE, "nested deeper than 64 levels"),
    ("suite_billion_laughs.yaml", _SUITE, "anchors (&name) are not allowed"),
    ("suite_alias.yaml", _SUITE, "anchors (&name) are not allowed"),
    ("suite_yaml11_octal.yaml", _SUITE, "'010' is a YAML 1.1 number (octal, binary or base 60)"),
    ("suite_yaml11_base60.yaml", _SUITE, "'1:30' is a YAML 1.1 number (octal, binary or base 60)"),
    ("suite_yaml11_bool.yaml", _SUITE, "'on' is a YAML 1.1 boolean that other readers take as text"),
    ("suite_float_count.toml", _SUITE, "[nashgap] num_games: expected an integer, got 2.5"),
    ("suite_bool_count.toml", _SUITE, "[nashgap] num_games: expected an integer, got true"),
    ("suite_inf_count.toml", _SUITE, "inf is not a finite number"),
    ("suite_duplicate_seeds.toml", _SUITE, "seeds: 1 is listed twice"),
    ("suite_5000_digits.yaml", _SUITE, "more than 4300 digits"),
    ("suite_empty_spec.toml", _SUITE, "models[0]: spec: must not be empty"),
    ("suite_int_label.toml", _SUITE, "models[0]: label: expected a string, got 7"),
    ("suite_duplicate_label.toml", _SUITE, "appear twice"),
    ("suite_model_key_typo.toml", _SUITE, "unknown key(s) lable"),
    ("suite_latin1.toml", _SUITE, "not UTF-8"),
    ("suite_nul.yaml", _SUITE, "NUL byte"),
    ("suite_surrogate.yaml", _SUITE, "lone surrogate"),
    ("suite_duplicate_key.yaml", _SUITE, "duplicate key 'seeds'"),
    ("suite_python_tag.yaml", _SUITE, "could not determine a constructor"),
    ("suite_a_list.yaml", _SUITE, "must hold a table/mapping"),
    ("suite_empty.toml", _SUITE, "no suite section"),
    ("suite_truncated.toml", _SUITE, "invalid TOML"),
    ("suite_binary.yaml", _SUITE, "not UTF-8"),
    ("suite_not_toml.json", _SUITE, "use a .toml, .yaml or .yml file"),
    ("suite_negative_count.toml", _SUITE, "suite_negative_count.toml: [nashgap] num_games must be at least 1"),
    ("suite_negative_seed.toml", _SUITE, "suite_negative_seed.toml: seeds: a seed must be at least 0"),
    ("suite_unknown_mechanism.toml", _SUITE, "[chbench] unknown mechanisms 'nope'"),
    ("suite_nul_output_dir.toml", _SUITE, "output_dir: a folder name cannot hold a NUL character"),
    ("suite_missing_games_file.toml", _SUITE, "[nashgap] games_file /nonexistent/stratbench-games.json: file not found"),
    ("suite_missing_price_table.toml", _SUITE,
     "[nashgap] price_table /nonexistent/stratbench-prices.json: file not found"),
    ("suite_missing_stories_dir.toml", _SUITE, "[tmgbench] stories_dir /nonexistent/stratbench-stories: folder not found"),
    ("tiered_float_count.toml", _TIERED, "num_games_per_bucket: expected an integer, got 2.5"),
    ("tiered_duplicate_seeds.toml", _TIERED, "seeds: 42 is listed twice"),
    ("tiered_billion_laughs.yaml", _TIERED, "anchors (&name) are not allowed"),
    ("tiered_deep.yaml", _TIERED, "nested deeper than 64 levels"),
    ("tiered_empty_spec.yaml", _TIERED, "spec: must not be empty"),
    ("tiered_model_key_typo.toml", _TIERED, "unknown key(s) teir"),
    ("tiered_duplicate_label.toml", _TIERED, "'m' appears twice"),
    ("tiered_latin1.yaml", _TIERED, "not UTF-8"),
    ("corrections_deep.json", _CORR, "nested deeper than 64 levels"),
    ("corrections_payoff_1e308.json", _CORR, "payoffs must lie within"),
    ("corrections_arabic_id.json", _CORR, "is not an integer"),
    ("corrections_duplicate_id.json", _CORR, "game 8 is corrected twice"),
    ("corrections_truncated.json", _CORR, "invalid JSON"),
    ("corrections_latin1.json", _CORR, "not UTF-8"),
    ("corrections_empty.json", _CORR, "invalid JSON"),
    ("obs_digits_1_based.csv", _FIT, "--action-base"),
    ("obs_superscript_two.csv", _FIT, "ASCII digits"),
    ("obs_fullwidth_game_id.csv", _FIT, "game_id '１' is not an integer"),
    ("obs_uncertain_game.csv", _FIT, "game 8's payoffs are uncertain"),
    ("obs_cell_131073.csv", _FIT, "line 2: a cell of more than 131072 characters"),
    ("obs_latin1.csv", _FIT, "not UTF-8 text (byte 0xe9"),
    ("obs_utf16.csv", _FIT, "not UTF-8"),
    ("obs_binary.csv", _FIT, "not UTF-8"),
    ("obs_nul.csv", _FIT, "NUL byte"),
    ("obs_empty.csv", _FIT, "empty file"),
    ("obs_missing_column.csv", _FIT, "missing column(s) ['col_action']"),
    ("obs_ragged_row.csv", _FIT, "7 cells, but the header has 6 columns"),
    ("obs_unterminated_quote.csv", _FIT, "unexpected end of data"),
    ("obs_duplicate_column.csv", _FIT, "appear twice"),
    ("obs_header_only.csv", _FIT, "no observations"),
    ("obs_directory.csv", _FIT, "is a directory"),
    ("stories_same_story_twice", _STORIES, "111_0.txt and 111_00.txt are both story 0 of game 111"),
    ("stories_folder_named_like_a_story", _STORIES, "is a directory"),
    ("stories_deep_characters", _STORIES, "nested deeper than 64 levels"),
    ("stories_deep_preferences", _STORIES, "nested deeper than 64 levels"),
    ("stories_5000_digit_payoff", _STORIES, "cannot read table line"),
    ("stories_latin1", _STORIES, "not UTF-8"),
    ("stories_nul", _STORIES, "NUL byte"),
    ("stories_bad_name", _STORIES, "{id}_{k}.txt"),
    ("stories_symlink_loop", _STORIES, "symlink loop"),
    ("stories_a_file.txt", _STORIES, "not a directory"),
    ("stories_same_story_twice", _VERIFY, "both story 0 of game 111"),
    ("template_empty.jinja", _TEMPLATE, "empty template"),
    ("template_no_messages.jinja", _TEMPLATE, "does not contain the user's message"),
    ("template_first_two_turns.jinja", _TEMPLATE, "drops one of them"),
    ("template_endless_loop.jinja", _TEMPLATE, "ran past its time limit"),
    ("template_huge_range.jinja", _TOM_TEMPLATE, "range(...) is given 1,000,000,000"),
    ("template_doubling.jinja", _TEMPLATE, "builds a value of"),
    ("template_long_list.jinja", _TEMPLATE, "builds a sequence of 3,800,000 items (at most 100,000)"),
    ("template_map_chain.jinja", _TEMPLATE, "ran past its time limit"),
    ("template_indent_wide.jinja", _TEMPLATE, "filter 'indent' builds a text of more than 4,000,000 characters"),
    ("template_tojson_shared.jinja", _TEMPLATE, "filter 'tojson' would make a text of more than 4,000,000"),
    ("template_output_shared.jinja", _TEMPLATE, "would make a text of more than 4,000,000 characters"),
    ("template_lone_surrogate.jinja", _TEMPLATE, "holds a lone surrogate"),
    ("template_big_int.jinja", _TEMPLATE, "an integer of more than 4300 digits"),
    ("template_str_replace.jinja", _TEMPLATE, "replace(...) would build a text of 3,600,000,000 characters"),
    ("template_filter_replace.jinja", _TEMPLATE, "filter 'replace' would build a text of 3,600,000,000 characters"),
    ("template_expandtabs.jinja", _TEMPLATE, "expandtabs(...) would build a text of 3,003,000,000 characters"),
    ("template_lipsum.jinja", _TEMPLATE, "'lipsum' is undefined"),
    ("template_random.jinja", _TEMPLATE, "No filter named 'random'"),
    ("template_a_text.gguf", _TEMPLATE, "not a GGUF file"),
    ("template_config_empty.json", _TEMPLATE, "no chat_template in it"),
    ("model_a_text.gguf", _GGUF_MODEL, "not a GGUF file"),
    ("fit_corrections_wrong_shape.json", _FIT_CORR, "game 8: shape 1x3 does not match the catalogue's 2x2"),
]


def _write(path: Path, content: object) -> None:
    if isinstance(content, tuple):
        path.symlink_to(content[1])
    elif isinstance(content, dict):
        path.mkdir()
        for name, sub in content.items():
            _write(path / name, sub)
    elif isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)


def write_corpus(target: Path) -> None:
    """Write every corpus entry under ``target`` (which must not exist)."""
    target.mkdir(parents=True)
    for name, content in CORPUS.items():
        _write(target / name, content)


if __name__ == "__main__":
    if FILES.exists() or FILES.is_symlink():
        shutil.rmtree(FILES)
    write_corpus(FILES)
    print(f"{len(CORPUS)} entries in {FILES}", file=sys.stderr)
