"""A GGUF's own chat template is code from the file, checked like a template the user names.

llama-cpp-python compiles every template in a GGUF's metadata when it loads the file, used or not;
stratbench renders the default one in its bounded sandbox and probes it once at load. Each hostile
template below is written into a copy of the embedded instruct GGUF (in place of its own template,
padded to the same length, so the file stays a valid GGUF) and tried both ways a GGUF's template
is used: as a local model (`gguf:FILE --chat`) and as an HTTP model's `--chat-template FILE`.
Every case ends in one line naming the file and the problem, exit 2, no folder — never a
traceback, a hang or a prompt without its game.
"""

from __future__ import annotations

import asyncio
import shutil
import struct
from pathlib import Path

import pytest

from stratbench.models.llama import embedded_instruct_path

KEY = b"tokenizer.chat_template"

HOSTILE = {
    # does not compile: llama-cpp-python's constructor raises jinja2's TemplateSyntaxError
    "syntax": ("{% for %}", "its chat template does not compile (TemplateSyntaxError"),
    # compiles, then renders 10^10 steps: stopped by the time limit at the probe
    "loop": ("{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}",
             "rendering ran past its time limit"),
    # renders, but without the conversation: every prompt would lose its game
    "drop": ("hello", "does not contain the user's message"),
    # nested past Python's recursion limit while compiling
    "deep": ("{{" + "(" * 170 + "1" + ")" * 170 + "}}", "nested too deeply to compile"),
}


def _with_template(dst: Path, template: str) -> Path:
    src, _ = embedded_instruct_path()
    shutil.copyfile(src, dst)
    with dst.open("r+b") as f:
        head = f.read(4_000_000)
        at = head.index(KEY) + len(KEY)
        (kind,) = struct.unpack("<I", head[at:at + 4])
        (n,) = struct.unpack("<Q", head[at + 4:at + 12])
        assert kind == 8, "the key's value is a GGUF string"
        text = template.encode()
        assert len(text) <= n, "the hostile template must fit the original's length"
        f.seek(at + 12)
        f.write(text + b" " * (n - len(text)))
    return dst


def _cli(argv: list[str]) -> int:
    from stratbench.cli.main import main

    try:
        main(argv)
    except SystemExit as e:
        return int(e.code or 0)
    return 0


@pytest.fixture(scope="module")
def hostile_ggufs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ggufs")
    return {name: _with_template(root / f"{name}.gguf", t) for name, (t, _) in HOSTILE.items()}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_local_gguf_with_a_hostile_template(case, hostile_ggufs, tmp_path, capsys):
    path = hostile_ggufs[case]
    out = tmp_path / "out"
    code = _cli(["tmgbench", "run", "--model", f"gguf:{path}", "--chat", "--num-tasks", "1",
                 "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = err.splitlines()
    assert line.startswith(f"error: gguf:{path}: ") and HOSTILE[case][1] in line, line
    assert not out.exists()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_http_model_given_a_hostile_gguf_template(case, hostile_ggufs, tmp_path, capsys):
    path = hostile_ggufs[case]
    out = tmp_path / "out"
    code = _cli(["tmgbench", "run", "--model", "openai-compatible:x", "--base-url", "http://127.0.0.1:9/v1",
                 "--chat", "--chat-template", str(path), "--num-tasks", "1", "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = err.splitlines()
    assert line.startswith(f"error: --chat-template {path}: ") and HOSTILE[case][1] in line, line
    assert not out.exists()


def test_a_base_run_of_a_gguf_with_a_refused_template_still_runs(hostile_ggufs, tmp_path):
    """The template is refused for conversations only: raw completion prompts never use it."""
    from stratbench.models.llama import LlamaCppModel

    model = LlamaCppModel(hostile_ggufs["drop"])
    try:
        assert not model.supports_chat and "does not contain the user's message" in (model.chat_problem or "")
        assert model.tokenize("Action: 1")
    finally:
        asyncio.run(model.aclose())
