"""The Python entry points that join a workflow to the HTML report: what the CLI's commands do,
for use from a notebook or a training loop.

Workflows and the report sit side by side in the layers (neither imports the other); this module
is the one place above both that puts them together, so the CLI stays a thin wrapper over it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from stratbench.report.build import ReportResult
from stratbench.workflows.scorecard import ScorecardResult, run_scorecard
from stratbench.workflows.trend import TrendResult, run_trend

__all__ = ["report", "scorecard", "trend"]


def report(path: str | Path, output: str | Path | None = None, max_records: int = 10,
           figures: str = "auto") -> ReportResult:
    """`stratbench report`: the HTML report of the runs under ``path``; a scorecard's table is
    shown only while its scorecard.json agrees with its runs' records, a collection's list of runs
    only while it agrees with its plan and runs (checked by the workflows)."""
    from stratbench.report.build import build_report
    from stratbench.workflows.collection_check import check_collection
    from stratbench.workflows.scorecard import check_scorecard
    from stratbench.workflows.verify import check_run

    return build_report(path, output, max_records, figures, check_scorecard=check_scorecard, check_run=check_run,
                        check_suite=check_collection)


def _report_index(folder: Path) -> Path:
    from stratbench.report.build import build_report

    # the scorecard's own report, its scorecard.json computed from the records a moment ago
    return build_report(folder).index


def scorecard(models: Sequence[str] = ("embedded",), budget: str = "quick", seed: int = 0,
              output_dir: str | Path = "results", resume_dir: str | Path | None = None,
              chat: bool | None = None, base_url: str | None = None, no_cache: bool = False,
              report: bool = True, on_run: Callable[[dict[str, Any]], None] | None = None,
              timeout: float | None = None, retries: int | None = None,
              wait_for_server: float | None = None, reasoning_effort: str | None = None,
              price_table: str | None = None, think_tags: str | None = None,
              max_tokens: int | None = None) -> ScorecardResult:
    """`stratbench scorecard`: every suite for every model at one budget (quick, standard or
    paper) next to chance and optimal references, in one folder `scorecard_<time>/` with
    scorecard.json, scorecard.csv and (``report``) the HTML report; ``resume_dir`` finishes an
    interrupted one. ``chat``: read every model as a chat model (True) or a raw model (False);
    None decides per model. ``reasoning_effort``: the HTTP models' (saved with the scorecard).
    ``think_tags``: "OPEN,CLOSE", the tags the models write their thinking between (saved).
    ``max_tokens``: the output budget of the models' generated answers in every suite (saved; None:
    each suite's default). ``timeout``, ``retries``, ``wait_for_server``: HTTP settings of every
    run (the suites' defaults when None). ``price_table``: JSON prices by model spec, saved with the
    scorecard, which its Nash-gap runs price their cost with (run.json's ``model_cost_usd``). Bad
    inputs raise :class:`stratbench.errors.InputError` before any folder exists."""
    return run_scorecard(models, budget=budget, seed=seed, output_dir=output_dir, resume_dir=resume_dir,
                         chat=chat, base_url=base_url, no_cache=no_cache,
                         report=_report_index if report else None, on_run=on_run, timeout=timeout,
                         retries=retries, wait_for_server=wait_for_server, reasoning_effort=reasoning_effort,
                         price_table=price_table, think_tags=think_tags, max_tokens=max_tokens)


def trend(models: Sequence[str] = (), steps: Sequence[int] = (), step_from: str | None = None,
          tokens: Sequence[int] = (), budget: str | None = None, seed: int | None = None,
          output_dir: str | Path = "results", resume_dir: str | Path | None = None,
          add_to: str | Path | None = None, chat: bool | None = None, base_url: str | None = None,
          no_cache: bool = False, report: bool = True, on_run: Callable[[dict[str, Any]], None] | None = None,
          timeout: float | None = None, retries: int | None = None, wait_for_server: float | None = None,
          reasoning_effort: str | None = None, think_tags: str | None = None,
          max_tokens: int | None = None) -> TrendResult:
    """`stratbench trend`: the scorecard of every checkpoint (``models``, each with its training
    step: ``steps`` in order, or read from the specs by the regular expression ``step_from``;
    ``tokens`` seen, optional) at one budget (default quick) and seed (default 0) in one folder
    `trend_<time>/` with trend.json (per suite: score per step, paired differences, emergence,
    regressions), trend.csv, and (``report``) the HTML page of the curves; each checkpoint's
    scorecard gets its own report too. ``resume_dir`` finishes an interrupted trend; ``add_to``
    adds checkpoints to a trend (only they run). ``reasoning_effort``, ``think_tags`` and
    ``max_tokens`` are every checkpoint's, as the scorecard takes them (saved with the trend). The result's ``table`` holds trend.csv's rows. Bad
    inputs raise :class:`stratbench.errors.InputError` before any folder is created or changed."""
    from stratbench.report.trend import build_trend_report

    return run_trend(models, steps=steps, step_from=step_from, tokens=tokens, budget=budget, seed=seed,
                     output_dir=output_dir, resume_dir=resume_dir, add_to=add_to, chat=chat, base_url=base_url,
                     no_cache=no_cache, report=build_trend_report if report else None,
                     scorecard_report=_report_index if report else None, on_run=on_run, timeout=timeout,
                     retries=retries, wait_for_server=wait_for_server, reasoning_effort=reasoning_effort,
                     think_tags=think_tags, max_tokens=max_tokens)
