"""`--dry-run` and `--max-cost` on every command that calls a model (the run commands and the
scorecard), added by one decorator so that they mean the same everywhere
(`stratbench.models.costs` has the rules).

``--dry-run`` runs the command as given into a scratch folder that is then removed, against models
that make no request, and prints the plan: calls, prompt tokens, the output budget and the dollars
at the price table's prices. ``--max-cost USD`` runs it for real and stops it, resumable, before
a call that could take its cost past USD.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

import typer

from stratbench.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

_DRY_RUN = inspect.Parameter(
    "dry_run", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
    default=typer.Option(False, "--dry-run", help=(
        "Print what the command would call — calls, prompt tokens, output budget and dollars at the price "
        "table's prices — and exit without a request or a folder.")))
_MAX_COST = inspect.Parameter(
    "max_cost", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[float],
    default=typer.Option(None, "--max-cost", metavar="USD", help=(
        "Stop (resumable, exit 3) before a call whose worst case would take this command's cost past USD "
        "at the price table's prices.")))
_PRICE_TABLE = inspect.Parameter(
    "price_table", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
    default=typer.Option(None, help="JSON prices per million tokens by model spec, over the shipped table "
                                    "(for --dry-run and --max-cost)."))


def plannable(fn: F | None = None, *, prices_for_ceiling: bool = False) -> Any:
    """`fn`, a command that calls models, with ``--dry-run`` and ``--max-cost`` (and
    ``--price-table`` where it has none). ``prices_for_ceiling``: the command's own
    ``--price-table`` prices only the plan and the ceiling of a new run (a suite file's runs price
    with their sections' tables), as the added one does."""
    if fn is None:
        return functools.partial(plannable, prices_for_ceiling=prices_for_ceiling)
    sig = inspect.signature(fn)
    own_prices = "price_table" in sig.parameters
    ceiling_only = prices_for_ceiling or not own_prices
    extra = [_DRY_RUN, _MAX_COST] + ([] if own_prices else [_PRICE_TABLE])
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
              else p for p in sig.parameters.values()]

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        dry_run = kwargs.pop("dry_run", False)
        max_cost = kwargs.pop("max_cost", None)
        prices_path = kwargs.get("price_table") if own_prices else kwargs.pop("price_table", None)
        if kwargs.get("resume") and os.path.isdir(str(kwargs["resume"])):
            from stratbench.runner.folders import check_result_files

            check_result_files(str(kwargs["resume"]), below=True)  # (a pipe there would block the resume)
        if prices_path is not None and not str(prices_path).strip():  # (not "no table", silently)
            raise InputError("--price-table: empty; give a JSON file (or leave the flag out)")
        if prices_path and kwargs.get("resume") and not dry_run:
            _check_resume_prices(str(prices_path), kwargs, max_cost)
        elif prices_path and ceiling_only and not dry_run and max_cost is None:
            # (read by nothing: a run here prices its cost with no table, or its file's own)
            raise InputError(f"--price-table {prices_path}: this command prices with it only for --dry-run and "
                             "--max-cost; give one of them, or drop --price-table")
        if not dry_run and max_cost is None:
            return fn(**kwargs)
        from stratbench.models import costs

        if max_cost is not None and (not math.isfinite(max_cost) or max_cost <= 0):
            raise InputError(f"--max-cost {_typed('--max-cost', max_cost)}: give a positive number of US dollars")
        if dry_run and max_cost is not None:
            raise InputError("--dry-run makes no call and --max-cost limits real ones: give one of them")
        saved = _implied_price_table(kwargs)
        if prices_path and saved and not os.path.exists(saved):
            saved = None  # (the saved table is gone: the command's stands in for it, as the run takes it)
        if prices_path and saved and (kwargs.get("resume") or kwargs.get("file")) \
                and not _same_file(prices_path, saved):
            # (the run prices its cost with its saved table, a new suite file's runs with their
            # section's: another one here would price the plan and the ceiling one way and
            # run.json's cost another; a tiered config's table is replaced by the flag, runs too)
            if kwargs.get("resume"):
                raise InputError(f"--price-table {prices_path}: the run in {kwargs['resume']} prices its cost with "
                                 f"{saved} (saved when it started); drop --price-table")
            raise InputError(f"--price-table {prices_path}: {kwargs['file']} prices its runs with its own "
                             f"price_table ({saved}); drop --price-table (or that setting)")
        # (a table the command names without the flag is named as its file's setting, or the resumed run's)
        where = f"{kwargs.get('file') or kwargs.get('config') or kwargs.get('resume')}: price_table"
        prices = costs.load_prices(prices_path or saved, "--price-table" if prices_path else where)
        if not dry_run:
            with costs.cost_session(prices, max_cost=max_cost, local=_runs_here) as session:
                try:
                    result = fn(**kwargs)
                except BaseException:
                    if session.tripped:
                        raise CostStop(max_cost, session.spent, session.unknown) from None
                    _say_passed(session, max_cost)  # (a run that ends in exit 1 too)
                    raise
                _say_passed(session, max_cost)
                return result
        if kwargs.get("resume"):
            raise InputError("--dry-run plans a new run; drop --resume")
        return _dry_run(fn, kwargs, prices)

    wrapper.__signature__ = sig.replace(parameters=params + extra)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**fn.__annotations__, "dry_run": bool, "max_cost": Optional[float],
                               **({} if own_prices else {"price_table": Optional[str]})}
    return wrapper  # type: ignore[return-value]


def _check_resume_prices(prices_path: str, kwargs: dict[str, Any], max_cost: float | None) -> None:
    """``--price-table`` beside ``--resume``: read and checked like a new run's; refused where the
    resume would not use it — beside a saved table that is still there (the run prices its cost
    with that one), or, without ``--max-cost``, on a run that saved none (nothing is priced)."""
    from stratbench.models.prices import load_price_table

    load_price_table(prices_path)  # (missing, not JSON, a folder: one line naming the flag)
    saved = _implied_price_table(kwargs)
    if saved and os.path.exists(saved) and not _same_file(prices_path, saved):
        raise InputError(f"--price-table {prices_path}: the run in {kwargs['resume']} prices its cost with "
                         f"{saved} (saved when it started); drop --price-table")
    if not saved and max_cost is None:
        raise InputError(f"--price-table {prices_path}: the run in {kwargs['resume']} saved no price table and "
                         "a resume without --max-cost prices nothing with it; drop --price-table (or give "
                         "--max-cost)")


def _typed(flag: str, value: float) -> str:
    """`flag`'s value as the user typed it (``1e-400``, which parses as 0), else as parsed."""
    import sys

    argv = sys.argv[1:]
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1][:60]
        if arg.startswith(flag + "="):
            return arg.partition("=")[2][:60]
    return f"{value:g}"


def _implied_price_table(kwargs: dict[str, Any]) -> str | None:
    """The price table a command names without --price-table, which its runs price their cost
    with too: a suite file's or tiered config's (``[nashgap] price_table``, ``price_table``), or
    the one a resumed run saved in its config (run.json, suite_metadata.json)."""
    from stratbench.workflows.suite_plan import file_folder, read_suite_file, with_file_paths

    config: Any = None
    if kwargs.get("resume"):
        folder = Path(kwargs["resume"])
        for name in ("run.json", "suite_metadata.json"):
            try:
                meta = json.loads((folder / name).read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                continue  # (the resume names a folder it cannot read itself)
            if isinstance(meta, dict) and isinstance(meta.get("config"), dict):
                config = meta["config"]
                if meta.get("suite") == "suite-file":  # (its runs read a relative path from the file's folder)
                    given = kwargs.get("file")  # (the suite file given again: its folder)
                    config = with_file_paths(config, file_folder(str(given or meta.get("file") or folder / "x")))
                break
    elif isinstance(kwargs.get("file") or kwargs.get("config"), str):
        path = kwargs.get("file") or kwargs["config"]
        try:
            config = read_suite_file(path)
        except InputError:
            return None  # (the command names the file's problem itself)
        if kwargs.get("file"):  # a suite file's sections: relative to its folder
            config = with_file_paths(config, file_folder(path))
        elif isinstance(config, dict) and isinstance(config.get("price_table"), str) and config["price_table"].strip():
            config = {**config, "price_table": os.path.join(file_folder(path), config["price_table"])}  # (tiered)
    for where in (config, config.get("nashgap") if isinstance(config, dict) else None):
        if isinstance(where, dict) and isinstance(where.get("price_table"), str):
            return str(where["price_table"])
    return None


def _same_file(given: str, saved: str) -> bool:
    """Whether --price-table `given` names the `saved` table (the same file, or one relative path
    saved by an older folder that `given` ends with)."""
    import os

    from stratbench.runner.lifecycle import same_path

    try:
        if os.path.samefile(given, saved):
            return True
    except OSError:
        pass
    return same_path(os.path.abspath(given), saved)


def _runs_here(spec: str) -> bool:
    """A model that runs on this machine (free), by its backend's traits."""
    from stratbench.models import backend_traits

    try:
        return backend_traits(spec).local
    except InputError:
        return False


def _say_passed(session: Any, max_cost: float) -> None:
    """The command's last line when its cost went past --max-cost after all: the guard reserves
    each call's worst case before it is made, but that worst case is an estimate (prompt tokens at
    about four characters a token; output at the request's limit, which a server may report past),
    and calls in flight together may each take more than it."""
    if session.spent <= max_cost:
        return
    from stratbench.cli.display import err_console

    err_console.print(f"warning: the cost went past --max-cost {max_cost:g} USD (spent about {session.spent:.4f} "
                      f"USD{_unknown_text(session.unknown)}): {_PASSED}", soft_wrap=True, highlight=False,
                      markup=False)


_PASSED = ("the calls' reported tokens came to more than the worst case estimated before each (prompt tokens at "
           "about 4 characters a token, output tokens at the request's limit, which a server may report past; "
           "calls already in flight together are let finish)")


class CostStop(Exception):
    """The command stopped before a call that could take its cost past --max-cost."""

    def __init__(self, limit: float, spent: float, unknown: int = 0) -> None:
        passed = f"; past it: {_PASSED}" if spent > limit else ""
        super().__init__(f"stopped before a call that could take the cost past --max-cost {limit:g} USD "
                         f"(spent about {spent:.4f} USD{_unknown_text(unknown)}{passed})")


def _unknown_text(unknown: int) -> str:
    return (f", {unknown} call{'s' if unknown != 1 else ''} whose provider reported no usage counted at "
            "their worst case" if unknown else "")


def _dry_run(fn: Callable[..., Any], kwargs: dict[str, Any], prices: dict[str, Any]) -> None:
    from stratbench.cli.display import console, err_console
    from stratbench.models import costs
    from stratbench.runner.lifecycle import on_run_folder

    scratch = tempfile.mkdtemp(prefix="stratbench-dry-run-")
    kwargs = {**kwargs, "output_dir": scratch}
    if "no_cache" in kwargs:
        kwargs["no_cache"] = True
    # (the scratch folder is thrown away: a report of it would cost minutes — a CHBench suite's fits
    # are recomputed to check them — and show nothing)
    if "report" in kwargs:
        kwargs["report"] = False
    if "no_report" in kwargs:
        kwargs["no_report"] = True
    quiet = console.quiet, err_console.quiet
    console.quiet = err_console.quiet = True
    try:
        with costs.cost_session(prices, dry_run=True, local=_runs_here) as session:

            def planning_run(folder: Path) -> None:  # the run whose calls come next
                parts = Path(folder).resolve().relative_to(Path(scratch).resolve()).parts
                inner = parts[1:] or parts  # (below a scorecard's or suite file's folder)
                session.run = "/".join(dict.fromkeys(_run_name(p) for p in (inner[0], inner[-1])))  # suite/run

            with on_run_folder(planning_run):
                try:
                    fn(**kwargs)
                except typer.Exit as e:  # a run whose records are errors exits 1; the plan stands
                    if e.exit_code not in (0, 1):
                        raise
    finally:
        console.quiet, err_console.quiet = quiet
        shutil.rmtree(scratch, ignore_errors=True)
    console.print(plan_table(session), soft_wrap=True, highlight=False, markup=False)


def _run_name(name: str) -> str:
    """A run folder's name without its time stamps (``nashgap/run_20261125_101500_2x2_lowVar_pure`` →
    ``nashgap/run_2x2_lowVar_pure``)."""
    return re.sub(r"_\d{8}_\d{6}(?:_\d+)?(?=_|$)", "", name).removesuffix(".partial")


def _price_text(p: Any, near: str | None = None) -> str:
    if p is None:
        return f"no price: the table has {near!r}, not this spec" if near else "no price: give --price-table"
    if p.source == "runs here":
        return "free (runs here)"
    return f"{p.input_per_million:g}, {p.output_per_million:g}" + (f" (as of {p.as_of}, {p.source})" if p.as_of
                                                                   else f" ({p.source})")


def plan_table(session: Any) -> str:
    """The plan as lines: one per run and model (with the runs' total per model where a command
    plans several runs), then the total and what the numbers assume."""
    from stratbench.models import costs

    several = len({r for r, _ in session.plan}) > 1
    rows: list[tuple[str, int, int, int, float | None, str]] = []
    per_model: dict[str, list[int]] = {}
    for (run, spec), line in sorted(session.plan.items()):
        t = per_model.setdefault(spec, [0, 0, 0])
        t[0] += line.calls
        t[1] += line.tokens_in
        t[2] += line.tokens_out
        if several:
            rows.append((f"{run} · {spec}", line.calls, line.tokens_in, line.tokens_out,
                         session.cost(spec, line.tokens_in, line.tokens_out), ""))
    totals = []
    total: float | None = 0.0
    unpriced = []
    for spec, (calls, tin, tout) in sorted(per_model.items()):
        cost = session.cost(spec, tin, tout)
        if cost is None:
            unpriced.append(spec)
        total = None if cost is None or total is None else total + cost
        totals.append((spec + (" (all runs)" if several else ""), calls, tin, tout, cost,
                       _price_text(session.price(spec), costs.near_miss(spec, session.prices))))
    width = max([len(r[0]) for r in rows + totals] + [len("run · model")])

    def fmt(r: tuple[str, int, int, int, float | None, str]) -> str:
        name, calls, tin, tout, cost, price = r
        return (f"{name:<{width}} {calls:>9,} {tin:>14,} {tout:>12,} {'?' if cost is None else f'{cost:.2f}':>11}  "
                f"{price}").rstrip()

    lines = ["dry run: no request was made and no folder was written", "",
             f"{'run · model' if several else 'model':<{width}} {'calls':>9} {'prompt tokens':>14} {'output ≤':>12} "
             f"{'cost ≤ USD':>11}  price (USD per 1M tokens in, out)"]
    lines += [fmt(r) for r in rows] + ([""] if several else []) + [fmt(r) for r in totals]
    if not session.plan:
        lines.append("(no model call)")
    lines.append("")
    lines.append("total: " + (f"at most {total:.2f} USD" if total is not None else
                              "unknown (no price for " + ", ".join(unpriced) + ")"))
    lines.append(f"assumes: {costs.APPROX}; every generated reply its whole budget (output ≤); ToM's answers "
                 "parsed at their first try (a re-asked one costs more), generated stories all failing their check "
                 "(every retry counted); nothing in the response cache")
    return "\n".join(lines)
