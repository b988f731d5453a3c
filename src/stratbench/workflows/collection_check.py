"""What the report checks of a collection folder (a suite file's or a scorecard's) before it
shows its list of runs. Apart from both workflows because it dispatches to each: the scorecard's
workflow builds on the suite file's, so neither may import the other back."""

from __future__ import annotations

import json
from pathlib import Path

from stratbench.errors import InputError
from stratbench.runner.folders import migrate_run_json
from stratbench.suites.nashgap.tiered import SUITE as TIERED
from stratbench.suites.nashgap.tiered import check_tiered_folder
from stratbench.workflows.scorecard import check_scorecard_runs
from stratbench.workflows.suite_file import check_suite_file_folder

__all__ = ["COLLECTION_TABLES", "check_collection"]

#: the tables a collection writes from its runs (a suite file's, a scorecard's, a tiered suite's):
#: a folder holding one is a collection, whose suite_metadata.json says what they must be
COLLECTION_TABLES = ("runs.csv", "scorecard.json", "big_table_all_runs.csv", "big_table_aggregated.csv",
                     "big_table_aggregated.md")


def check_collection(folder: Path) -> None:
    """InputError (one line) when a collection folder's suite_metadata.json is not what its runs
    and its plan give — what the report checks before it shows a suite file's or a scorecard's
    list of runs (their headline numbers, seeds and folders): a plan that is not its config's, an
    entry for a run outside the plan or the folder, listed twice, swapped with another, or with a
    headline or seed its run does not have; a folder holding the runs of a suite file
    (``runs.csv``) without its suite_metadata.json; a tiered suite's tables and runs not its cells'."""
    p = folder / "suite_metadata.json"
    try:
        meta = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if any((folder / name).is_file() for name in COLLECTION_TABLES):
            raise InputError(f"{p}: missing (deleted?); the collection's list of runs cannot be checked") from None
        return
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        raise InputError(f"{p}: not readable JSON") from None
    if not isinstance(meta, dict):
        raise InputError(f"{p}: not a JSON object")
    if meta.get("suite") == "scorecard":
        check_scorecard_runs(folder)
    elif meta.get("suite") == "suite-file":
        check_suite_file_folder(folder, migrate_run_json(meta, str(p)))
    elif meta.get("suite") == TIERED:
        check_tiered_folder(folder, meta)
    else:  # (no collection writes another: its tables cannot be checked against its runs)
        raise InputError(f"{p}: suite {str(meta.get('suite'))[:60]!r} is no collection's (a scorecard's, a suite "
                         "file's or a tiered suite's): edited by hand?; its tables cannot be checked")
