"""--base-url goes to the HTTP players of a command: a scripted or local player beside them runs
here and saves no URL; a command with no HTTP player is refused (tests/hostile/cases_flags.py); a
folder made when the flag was ignored for local players (its saved config holds the URL) still
resumes."""

from __future__ import annotations

import json
from pathlib import Path

from fake_openai_server import FakeOpenAIServer


def _runs(out: Path) -> dict[str, dict]:
    return {json.loads((d / "run.json").read_text())["config"]["model"]: json.loads((d / "run.json").read_text())
            for d in out.iterdir()}


def test_url_goes_to_the_http_player_only(tmp_path, cli):
    with FakeOpenAIServer() as server:
        url = server.base_url
        out = tmp_path / "o"
        r = cli("nashgap", "--model", "random", "--model", "openai-compatible:m", "--base-url", url,
                "--num-games", "1", "--num-trials", "1", "--seed", "3", "--quiet", "--output-dir", str(out))
    assert r.returncode == 0, r.stderr
    runs = _runs(out)
    assert runs["openai-compatible:m"]["config"]["base_url"] == url
    assert runs["random"]["config"]["base_url"] is None


def test_a_folder_saved_with_a_url_for_a_local_player_still_resumes(tmp_path, cli):
    out = tmp_path / "o"
    r = cli("nashgap", "--model", "random", "--num-games", "2", "--num-trials", "1", "--seed", "3", "--quiet",
            "--output-dir", str(out))
    assert r.returncode == 0, r.stderr
    (folder,) = out.iterdir()
    meta = json.loads((folder / "run.json").read_text())
    meta["config"]["base_url"] = "http://127.0.0.1:9/v1"  # as an older stratbench saved it
    meta["status"] = "running"
    (folder / "trials.jsonl").write_text((folder / "trials.jsonl").read_text().splitlines(keepends=True)[0])
    (folder / "run.json").write_text(json.dumps(meta))
    r = cli("nashgap", "--resume", str(folder), "--quiet")
    assert r.returncode == 0, r.stderr
    assert len((folder / "trials.jsonl").read_text().splitlines()) == 2
    # the command's own --base-url for that local run is still refused
    r = cli("nashgap", "--resume", str(folder), "--base-url", "http://127.0.0.1:8/v1")
    assert r.returncode == 2 and "--base-url applies to HTTP models" in r.stderr, r.stderr
