"""Tests for stratbench.suites.tmgbench.stories: story files in the paper's format."""

from __future__ import annotations

from pathlib import Path

import pytest

from stratbench.errors import GameFormatError, InputError
from stratbench.suites.tmgbench import prompts as tp
from stratbench.suites.tmgbench.stories import (
    Story,
    format_story,
    load_story,
    load_story_dir,
    parse_payoff_table,
    parse_preferences,
    parse_story,
    verify_story,
)

DATA = Path(__file__).parents[2] / "data" / "tmgbench_stories"

# The classic games of the three fixtures, [r][c] = (A{r+1}, B{c+1}).
# 111: the Prisoner's Dilemma in the paper's orientation (Appendix E.1, classic/111: A1B1 = 1 \ 4,
#      A1B2 = 3 \ 3, A2B1 = 2 \ 2, A2B2 = 4 \ 1): A cooperates with A1, B with B2. The textbook
#      orientation A = [[3,1],[4,2]], B = [[3,4],[1,2]] is the same game with B's columns swapped,
#      but it is not how the benchmark writes game 111.
# 122: Chicken (grid (1, 12): alpha2 x gamma2), two pure equilibria A1B1 and A2B2.
# 444: grid (3, 4): alpha4 x delta4, no pure equilibrium (the paper's failure case, Appendix F.2).
GAMES = {
    "111": ([[1, 3], [2, 4]], [[4, 3], [2, 1]]),
    "122": ([[2, 3], [1, 4]], [[4, 3], [1, 2]]),
    "444": ([[3, 1], [2, 4]], [[1, 4], [3, 2]]),
}

PAPER_EXAMPLE = """\
[Characters]
{
  "A": "Sarah, a small coffee shop owner",
  "B": "Mark, owner of a large coffee chain"
}
[/Characters]
[Choices]
{
  "A1": "Keep prices steady",
  "A2": "Lower prices",
  "B1": "Maintain current operations",
  "B2": "Expand aggressively in Sarah's area"
}
[/Choices]
[Preferences]
Characters' preferences for different scenarios (4 most preferred, 1 least preferred):
{
  "A": {
    4: "Lower prices while Mark expands (survive and gain market share)",
    3: "Keep prices steady while Mark maintains operations (stable coexistence)",
    2: "Lower prices while Mark maintains operations (unnecessary price war)",
    1: "Keep prices steady while Mark expands (lose customers)"
  },
  "B": {
    4: "Maintain operations while Sarah keeps prices steady (maximize profits)",
    3: "Expand while Sarah keeps prices steady (gain market share)",
    2: "Maintain operations while Sarah lowers prices (status quo)",
    1: "Expand while Sarah lowers prices (costly competition)"
  }
}
[/Preferences]
[Payoff Matrix]
| A \\ B | B1      | B2      |
|-----|-----|-----|
| A1    | 1 \\ 4 | 3 \\ 3 |
| A2    | 2 \\ 2 | 4 \\ 1 |
[/Payoff Matrix]
[Scenario]
In a bustling city, Sarah runs a cozy, independent coffee shop.
Their decisions will shape the local coffee market.
[/Scenario]
"""


def fixture_text(name: str = "111_0") -> str:
    return (DATA / f"{name}.txt").read_text(encoding="utf-8")


def write(tmp_path: Path, text: str, name: str = "111_0.txt") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def test_load_dir_finds_the_three_fixtures() -> None:
    stories = load_story_dir(DATA)
    assert [s.name for s in stories] == ["111_0", "122_0", "444_0"]
    for s in stories:
        assert isinstance(s, Story) and s.variant == 0
        a, b = GAMES[s.game_id]
        assert s.payoff_A == a and s.payoff_B == b
        assert verify_story(s, a, b) == []
        assert s.path is not None and s.path.name == f"{s.name}.txt"


def test_fixture_111_fields() -> None:
    s = load_story(DATA / "111_0.txt")
    assert s.game_id == "111" and s.variant == 0
    assert s.characters == {
        "A": "Mira, head of the Lakeside Fishers' Cooperative",
        "B": "Tomas, owner of the Northshore Fishing Company",
    }
    assert list(s.choices) == ["A1", "A2", "B1", "B2"]
    assert s.choices["B2"] == "Respect the seasonal catch quota"
    assert list(s.preferences["A"]) == [4, 3, 2, 1] and list(s.preferences["B"]) == [4, 3, 2, 1]
    assert s.preferences["B"][1] == "Respect the quota while Mira exceeds it (small catch, lost share)"
    assert s.scenario.startswith("Two fishing outfits share") and s.scenario.endswith("own business.")
    assert "[Scenario]" not in s.scenario and "[/Scenario]" not in s.scenario


@pytest.mark.parametrize("name", ["111_0", "122_0", "444_0"])
def test_format_round_trip(name: str, tmp_path: Path) -> None:
    s = load_story(DATA / f"{name}.txt")
    text = format_story(s)
    again = load_story(write(tmp_path, text, f"{name}.txt"))
    assert again == s
    assert format_story(again) == text
    # the written file holds the classic table, byte for byte
    assert tp.payoff_table(s.payoff_A, s.payoff_B) in text


def test_fixture_files_are_in_canonical_layout() -> None:
    for p in sorted(DATA.glob("*.txt")):
        assert format_story(load_story(p)) == p.read_text(encoding="utf-8"), p.name


def test_paper_example_parses() -> None:
    s = parse_story(PAPER_EXAMPLE, "111", 0)
    assert s.payoff_A == GAMES["111"][0] and s.payoff_B == GAMES["111"][1]
    assert s.characters["B"] == "Mark, owner of a large coffee chain"
    assert s.preferences["A"][4].startswith("Lower prices while Mark expands")
    assert s.scenario == (
        "In a bustling city, Sarah runs a cozy, independent coffee shop.\n"
        "Their decisions will shape the local coffee market."
    )


def test_lenient_forms(tmp_path: Path) -> None:
    text = (
        "Here is your story.\n\n"
        + PAPER_EXAMPLE.replace("[Characters]\n{", "[Characters]\n```json\n{")
        .replace('}\n[/Characters]', '}\n```\n[/Characters]')
        .replace('(costly competition)"\n', "(costly competition)\",\n")  # trailing comma
        .replace("| A1    | 1 \\ 4 | 3 \\ 3 |", "|A1|(1, 4)|(3, 3)|")
        + "\nThanks!\n"
    )
    s = load_story(write(tmp_path, text))
    assert s == parse_story(PAPER_EXAMPLE, "111", 0)


def test_preferences_parser_is_not_eval() -> None:
    prefs = parse_preferences(
        "Characters' preferences for different scenarios (4 most preferred, 1 least preferred):\n"
        "{'A': {4: 'x: 3, \"quoted\"', 3: \"__import__('os')\", 2: \"c\\u00e9\", 1: \"d\"},"
        ' "B": {"4": "e", 3: "f", 2: "g", 1: "h"}}'
    )
    assert prefs["A"] == {4: 'x: 3, "quoted"', 3: "__import__('os')", 2: "c\u00e9", 1: "d"}
    assert prefs["B"] == {4: "e", 3: "f", 2: "g", 1: "h"}
    for bad in (
        '{"A": {4: "a", 3: "b", 2: "c"}, "B": {4: "e", 3: "f", 2: "g", 1: "h"}}',
        '{"A": {4: "a", 3: "b", 2: "c", 1: "d"}}',
        '{"A": {4: "a", 4: "b", 2: "c", 1: "d"}, "B": {4: "e", 3: "f", 2: "g", 1: "h"}}',
        '{"A": {4: a, 3: "b", 2: "c", 1: "d"}, "B": {4: "e", 3: "f", 2: "g", 1: "h"}}',
        '{"A": {4: "a", 3: "b", 2: "c", 1: "d"}, "B": {4: "e", 3: "f", 2: "g", 1: "h"}} extra',
        "no object",
    ):
        with pytest.raises(ValueError):
            parse_preferences(bad)


def test_payoff_table_parser() -> None:
    assert parse_payoff_table(tp.payoff_table([[1, 2], [3, 4]], [[4, 3], [2, 1]])) == (
        [[1, 2], [3, 4]],
        [[4, 3], [2, 1]],
    )
    # rows in either order
    t = "| A \\ B | B1 | B2 |\n|---|---|---|\n| A2 | 2 \\ 2 | 4 \\ 1 |\n| A1 | 1 \\ 4 | 3 \\ 3 |"
    assert parse_payoff_table(t) == tuple(GAMES["111"])


# --------------------------------------------------------------------------------------------
# verify_story
# --------------------------------------------------------------------------------------------


def test_verify_finds_a_wrong_matrix() -> None:
    s = load_story(DATA / "111_0.txt")
    a444, b444 = GAMES["444"]
    problems = verify_story(s, a444, b444)
    assert len(problems) == 4  # every cell differs
    assert "cell A1B1 is 1 \\ 4 in the story but 3 \\ 1 in game 111" in problems[0]
    # the textbook PD orientation is a different matrix for the benchmark
    assert verify_story(s, [[3, 1], [4, 2]], [[3, 4], [1, 2]]) != []
    # one swapped cell pair for B
    problems = verify_story(s, GAMES["111"][0], [[3, 4], [2, 1]])
    assert [p.split(":")[1].strip().split()[1] for p in problems] == ["A1B1", "A1B2"]
    # tuples (the Robinson-Goforth module's type) compare equal to lists
    assert verify_story(s, ((1, 3), (2, 4)), ((4, 3), (2, 1))) == []


def test_verify_reports_non_ordinal_story(tmp_path: Path) -> None:
    text = fixture_text().replace("| A2     | 2 \\ 2 | 4 \\ 1 |", "| A2     | 2 \\ 2 | 3 \\ 1 |")
    s = load_story(write(tmp_path, text))
    problems = verify_story(s, *GAMES["111"])
    assert any("A's payoffs [1, 2, 3, 3] are not the ranks" in p for p in problems)
    assert any("cell A2B2" in p for p in problems)


# --------------------------------------------------------------------------------------------
# Malformed files
# --------------------------------------------------------------------------------------------

BROKEN = {
    "missing section": (lambda t: t.replace("[Choices]", "[Options]"), "[Choices]", "missing"),
    "unclosed section": (lambda t: t.replace("[/Characters]\n", ""), "[Characters]", "not closed"),
    "duplicate section": (lambda t: t + "[Scenario]\nagain\n[/Scenario]\n", "[Scenario]", "twice"),
    "bad characters json": (lambda t: t.replace('"A": "Mira', '"A": Mira'), "[Characters]", "JSON"),
    "wrong character keys": (lambda t: t.replace('"B": "Tomas', '"C": "Tomas'), "[Characters]", "keys"),
    "missing choice": (
        lambda t: t.replace(',\n  "B2": "Respect the seasonal catch quota"', ""),
        "[Choices]",
        "keys",
    ),
    "duplicate choice key": (lambda t: t.replace('"A2": "Exceed', '"A1": "Exceed'), "[Choices]", "duplicate"),
    "bad preferences": (lambda t: t.replace("    3: \"Respect the quota while Tomas", "    5: \"x"), "[Preferences]", "4, 3, 2, 1"),
    "unquoted preference": (lambda t: t.replace('1: "Respect the quota while Mira', "1: Respect"), "[Preferences]", "unexpected"),
    "missing table row": (lambda t: t.replace("| A2     | 2 \\ 2 | 4 \\ 1 |\n", ""), "[Payoff Matrix]", "A2"),
    "bad table cell": (lambda t: t.replace("| 2 \\ 2 |", "| two \\ 2 |"), "[Payoff Matrix]", "cannot read"),
    "no table header": (lambda t: t.replace("| A \\ B | B1      | B2      |\n", ""), "[Payoff Matrix]", "header"),
    "empty scenario": (
        lambda t: t.split("[Scenario]")[0] + "[Scenario]\n\n[/Scenario]\n",
        "[Scenario]",
        "empty",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_malformed_files_name_file_and_section(case: str, tmp_path: Path) -> None:
    edit, section, detail = BROKEN[case]
    text = edit(fixture_text())
    assert text != fixture_text()
    p = write(tmp_path, text)
    with pytest.raises(GameFormatError) as ei:
        load_story(p)
    msg = str(ei.value)
    assert isinstance(ei.value, InputError)
    assert "\n" not in msg
    assert msg.startswith(f"{p}: {section}:"), msg
    assert detail in msg, msg
    # the directory loader reports the same error
    with pytest.raises(GameFormatError, match="111_0.txt"):
        load_story_dir(tmp_path)


def test_bad_file_names_and_paths(tmp_path: Path) -> None:
    p = write(tmp_path, fixture_text(), "story.txt")
    with pytest.raises(GameFormatError, match=r"story\.txt.*\{id\}_\{k\}\.txt"):
        load_story(p)
    with pytest.raises(GameFormatError, match="story.txt"):
        load_story_dir(tmp_path)
    with pytest.raises(GameFormatError, match="nope_0.txt"):
        load_story(tmp_path / "nope_0.txt")
    with pytest.raises(GameFormatError, match="missing: folder not found"):
        load_story_dir(tmp_path / "missing")
    with pytest.raises(GameFormatError, match="not a directory"):
        load_story_dir(p)
    bad = tmp_path / "sub"
    bad.mkdir()
    (bad / "111_1.txt").write_bytes(b"\xff\xfe[Characters]")
    with pytest.raises(GameFormatError, match="111_1.txt: not UTF-8"):
        load_story_dir(bad)


def test_dir_ignores_other_files_and_sorts(tmp_path: Path) -> None:
    for name in ("444_0", "111_0", "122_0"):
        write(tmp_path, fixture_text(name), f"{name}.txt")
    write(tmp_path, fixture_text("111_0"), "111_10.txt")
    write(tmp_path, fixture_text("111_0"), "111_2.txt")
    (tmp_path / "README.md").write_text("not a story")
    assert [s.name for s in load_story_dir(tmp_path)] == ["111_0", "111_2", "111_10", "122_0", "444_0"]


def test_story_prompt_from_a_loaded_story() -> None:
    s = load_story(DATA / "444_0.txt")
    user = tp.build_messages(s.payoff_A, s.payoff_B, "FoToM", story=s)[1]["content"]
    assert user.startswith("[Scenario]\nOn a foggy night Lena")
    assert "[/Scenario]\n[Question]\n" in user
    with pytest.raises(ValueError):
        tp.build_messages(*GAMES["111"], "FoToM", story=s)


# --------------------------------------------------------------------------------------------
# Hostile story files and folders
# --------------------------------------------------------------------------------------------


def test_two_files_for_one_story_are_refused(tmp_path: Path) -> None:
    write(tmp_path, fixture_text(), "111_0.txt")
    write(tmp_path, fixture_text(), "111_00.txt")
    with pytest.raises(GameFormatError) as ei:
        load_story_dir(tmp_path, "--stories-dir")
    assert str(ei.value) == (f"--stories-dir {tmp_path}: 111_0.txt and 111_00.txt are both story 0 of game 111; "
                             "keep one")


def test_folders_and_links_named_like_stories_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "111_0.txt").mkdir()
    with pytest.raises(GameFormatError, match=r"111_0\.txt: is a directory, not a file"):
        load_story_dir(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "111_0.txt").symlink_to("111_0.txt")
    with pytest.raises(GameFormatError, match=r"111_0\.txt: symlink loop"):
        load_story_dir(tmp_path / "b")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "111_0.txt").symlink_to(tmp_path / "nowhere.txt")
    with pytest.raises(GameFormatError, match=r"111_0\.txt: file not found"):
        load_story_dir(tmp_path / "c")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes").mkdir()  # other entries are still ignored
    write(tmp_path / "d", fixture_text())
    assert [s.name for s in load_story_dir(tmp_path / "d")] == ["111_0"]


@pytest.mark.parametrize("edit, section, detail", [
    (lambda t: t.replace('"A": "Mira, head of the Lakeside Fishers\' Cooperative"', '"A": ' + "[" * 5000 + "]" * 5000),
     "[Characters]", "nested deeper than 64 levels"),
    (lambda t: t.replace('"A1": "Respect the seasonal catch quota"', '"A1": "\\ud800"'), "[Choices]", "lone surrogate"),
    (lambda t: t.replace('"A1": "Respect the seasonal catch quota"', '"A1": NaN'), "[Choices]", "NaN is not allowed"),
    (lambda t: t.replace('4: "Exceed the quota while Tomas respects it (big catch from a healthy lake)"',
                         "4: " + "{1: " * 5000 + '"x"' + "}" * 5000, 1), "[Preferences]", "nested deeper than 64 levels"),
    (lambda t: t.replace('4: "Exceed the quota while Tomas respects it (big catch from a healthy lake)"',
                         '4: "\\udc00"', 1), "[Preferences]", "lone surrogate"),
    (lambda t: t.replace('4: "Exceed', "4" + "0" * 5000 + ': "Exceed', 1), "[Preferences]", "bad number"),
    (lambda t: t.replace("| 1 \\ 4 |", "| 1" + "0" * 5000 + " \\ 4 |"), "[Payoff Matrix]", "cannot read table line"),
    (lambda t: t.replace("| 1 \\ 4 |", "| ١ \\ 4 |"), "[Payoff Matrix]", "cannot read table line"),
])
def test_hostile_sections_are_one_line(tmp_path: Path, edit, section, detail) -> None:
    text = edit(fixture_text())
    assert text != fixture_text()
    p = write(tmp_path, text)
    with pytest.raises(GameFormatError) as ei:
        load_story(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}: {section}:") and detail in msg and "\n" not in msg
    assert len(msg) < 400


def test_story_files_must_be_utf8_text(tmp_path: Path) -> None:
    write(tmp_path, fixture_text().replace("[Scenario]", "[Scenario]\x00"))
    with pytest.raises(GameFormatError, match=r"111_0\.txt: contains a NUL byte"):
        load_story_dir(tmp_path)
    (tmp_path / "111_0.txt").write_bytes(fixture_text().replace("Mira", "Mirá").encode("latin-1"))
    with pytest.raises(GameFormatError, match=r"111_0\.txt: not UTF-8 text \(byte 0xe1 at offset \d+, line 3\)"):
        load_story_dir(tmp_path)
    (tmp_path / "111_0.txt").write_bytes(b"\xef\xbb\xbf" + fixture_text().encode())  # a BOM is fine
    assert load_story_dir(tmp_path)[0].name == "111_0"


def test_preference_escapes_of_surrogate_pairs_are_characters() -> None:
    body = '{"A": {4: "\\ud83d\\ude00", 3: "b", 2: "c", 1: "d"}, "B": {4: "a", 3: "b", 2: "c", 1: "\\u00e9"}}'
    prefs = parse_preferences(body)
    assert prefs["A"][4] == "😀" and prefs["B"][1] == "é"
    with pytest.raises(ValueError, match="lone surrogate"):
        parse_preferences(body.replace("\\ude00", "x"))
