"""Messages on stderr are single lines however long their paths: users and scripts grep them, and a
wrapped summary splits a path (or a count) across two lines."""

from __future__ import annotations

import pytest


def test_a_long_stderr_message_stays_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from stratbench.cli.display import err_console

    path = "/tmp/" + "deeply-nested-folder/" * 20 + "run_20261124_151945"
    err_console.print(f"{path}: 3 records, 3 model calls, 0 cache hits, 0 errors")
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"{path}: 3 records, 3 model calls, 0 cache hits, 0 errors"]


def test_a_long_stdout_summary_stays_one_line_and_tables_still_fit(capsys: pytest.CaptureFixture[str]) -> None:
    from rich.table import Table

    from stratbench.cli.display import console

    path = "/tmp/" + "deeply-nested-folder/" * 20 + "tom_20261124_154446"
    console.print(f"ToM — {path} — embedded-instruct / QA: regret/step 0.000 [0.000, 0.000]")
    assert capsys.readouterr().out.splitlines() == [
        f"ToM — {path} — embedded-instruct / QA: regret/step 0.000 [0.000, 0.000]"]
    table = Table("cell")
    table.add_row("x" * 400)
    console.print(table)
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= console.width


@pytest.mark.parametrize("argv,what", [
    (["tmgbench", "run", "--games", "111,112"], "records are errors"),
    (["tom", "run", "--game", "ipd", "--partner", "tit_for_tat", "--rounds", "2", "--episodes", "1"], "episodes hold errors"),
], ids=["tmgbench", "tom"])
def test_a_run_whose_calls_failed_says_so_and_names_its_resume(tmp_path, cli, argv, what):
    """Exit 1 always comes with a line on stderr (--quiet too): how many failed, and the resume that
    tries them again (fuzz 28 A F2: tmgbench run and tom run exited 1 without a word)."""
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(fault_rate=1.0, fault_kinds=("500",)) as server:
        r = cli(*argv, "--model", "openai-compatible:m", "--base-url", server.base_url, "--retries", "0", "--quiet",
                "--no-cache", "--output-dir", str(tmp_path / "o"))
    (folder,) = (tmp_path / "o").iterdir()
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert what in r.stderr and f"--resume {folder} tries them again" in r.stderr, r.stderr
