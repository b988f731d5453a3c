"""Paths that are not UTF-8 reaching a result file by routes other than the command line (fuzz 12 A
T1: an internal error writing run.json, folders left): a cache folder named in Latin-1 (HOME,
XDG_CACHE_HOME, STRATBENCH_CACHE_DIR) is bypassed with one warning, answers kept; a relative file
whose full path is not UTF-8 (the working folder's name) is one line before anything is made."""

from __future__ import annotations

import json
import os

import pytest
from fake_openai_server import FakeOpenAIServer

LATIN1 = "caf\udce9"  # b"caf\xe9": a name that is not UTF-8, as Python keeps it


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(canned_text="Action: 1") as s:
        yield s


def _args(server) -> list[str]:
    return ["nashgap", "--model", "openai-compatible:m", "--base-url", server.base_url, "--policy", "sample",
            "--num-games", "1", "--num-trials", "1", "--quiet"]


def test_a_cache_folder_that_is_not_utf8_is_bypassed_and_the_run_keeps_its_answers(tmp_path, cli, server,
                                                                                     monkeypatch):
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(tmp_path / LATIN1))
    r = cli(*_args(server), "--output-dir", str(tmp_path / "o"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "response cache" in r.stderr and "not UTF-8" in r.stderr and "answers are kept" in r.stderr, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert meta["status"] == "finished" and "\ufffd" in json.dumps(meta, ensure_ascii=False)


@pytest.mark.parametrize("flag,name,text", [
    ("--price-table", "p.json", '{"openai-compatible:m": {"input_per_million": 1, "output_per_million": 1}}'),
    ("--chat-template", "t.jinja", "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"),
])
def test_a_relative_file_from_a_folder_that_is_not_utf8_is_one_line_and_leaves_nothing(tmp_path, cli, server,
                                                                                        flag, name, text):
    here = tmp_path / LATIN1
    os.mkdir(here)
    (here / name).write_text(text)
    r = cli(*_args(server), flag, name, "--output-dir", "o", cwd=here)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{flag} {name}: its full path holds bytes that are not UTF-8" in r.stderr, r.stderr
    assert not (here / "o").exists()
