"""Result folders edited by hand are refused on resume before anything in them changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.mark.parametrize("edit,why", [
    ({"seed": "x"}, "--seed must be an integer (got 'x')"),
    ({"num_games": -1}, "--num-games must be at least 1 (got -1)"),
    ({"temperature": float("nan")}, None),  # refused as run.json is read: no NaN in a result file
])
def test_a_saved_config_edited_to_nonsense_is_refused_before_the_folder_changes(tmp_path, cli, edit, why):
    r = cli("nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet",
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    trials = (folder / "trials.jsonl").read_text().splitlines()
    (folder / "trials.jsonl").write_text("\n".join(trials[:2]) + "\n")  # interrupted after 2 records
    meta.update(status="running", config={**meta["config"], **edit})
    (folder / "run.json").write_text(json.dumps(meta))
    before = {p.name: p.read_bytes() for p in Path(folder).iterdir()}
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2
    if why is None:
        assert r.stderr.strip() == f"error: --resume {folder}/run.json: config.temperature: nan is not a finite number"
    else:
        assert r.stderr.strip() == (f"error: --resume {folder}/run.json's saved config is not valid: {why}; "
                                    "the folder is left as it is")
    assert {p.name: p.read_bytes() for p in Path(folder).iterdir()} == before
