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
