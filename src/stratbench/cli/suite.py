"""`stratbench suite tiered`: the original's tiered research suite, as a thin wrapper over
`stratbench.suites.nashgap.tiered.run_tiered_suite`.

The original took several values after one flag (`--seeds 42 43`, argparse nargs="+"). Click
options take one value each, so `expand_multi_value_flags` rewrites `--seeds 42 43` into
`--seeds 42 --seeds 43` before parsing; comma lists (`--seeds 42,43`) and repeated flags work too.
"""

from __future__ import annotations

from typing import List, Optional

import typer

from stratbench.cli.display import console, err_console, fmt, progress_bar
from stratbench.cli.options import group
from stratbench.cli.plan import plannable
from stratbench.errors import InputError

suite_app = group("Multi-model research suites.")

MULTI_VALUE_FLAGS = ("--seeds", "--providers", "--bucket-ids")


def expand_multi_value_flags(args: list[str]) -> list[str]:
    """`suite tiered --seeds 42 43 --quiet` → `suite tiered --seeds 42 --seeds 43 --quiet`.
    Only for `suite tiered` (which takes no positional arguments, so every bare word after one of
    these flags is one of its values)."""
    if args[:2] != ["suite", "tiered"]:
        return args
    out = args[:2]
    i = 2
    while i < len(args):
        a = args[i]
        out.append(a)
        i += 1
        if a == "--":
            out += args[i:]
            break
        if a in MULTI_VALUE_FLAGS:
            values = []
            while i < len(args) and not args[i].startswith("-"):
                values.append(args[i])
                i += 1
            if values:
                out.append(values[0])
                for v in values[1:]:
                    out += [a, v]
    return out


def _split(values: Optional[List[str]], flag: str = "") -> Optional[List[str]]:
    """Repeated flags and comma lists, flattened; None when the flag was not given. A flag given
    with nothing in it (``--bucket-ids ""``) is one line, never taken as not given (which would
    mean its default: every bucket)."""
    if values is None or (not values and not flag):
        return None
    out = [v.strip() for item in values for v in item.split(",") if v.strip()]
    if not out and flag:
        raise InputError(f"{flag}: give at least one value")
    return out or None


def _seeds(values: Optional[List[str]]) -> Optional[List[int]]:
    items = _split(values)
    if items is None:
        return None
    try:
        return [int(v) for v in items]
    except ValueError:
        raise InputError(f"--seeds: expected integers, got {' '.join(items)}") from None


@suite_app.command("tiered")
@plannable
def tiered(
    config: Optional[str] = typer.Option(None, "--config", help="TOML or YAML suite file (flags given here override it)."),
    num_games_per_bucket: Optional[int] = typer.Option(None, help="Games per bucket and seed (default 30)."),
    num_trials: Optional[int] = typer.Option(None, help="Trials per game for sampled policies (default 20)."),
    seeds: Optional[List[str]] = typer.Option(None, help="Seeds: --seeds 42 43, --seeds 42,43 or repeated (default 42)."),
    providers: Optional[List[str]] = typer.Option(None, help="together and/or openai (default together)."),
    bucket_ids: Optional[List[str]] = typer.Option(None, help="Subset of buckets, e.g. 2x2_lowVar_pure 3x3_midVar_mixed (default all six)."),
    together_model_tiers_json: Optional[str] = typer.Option(None, help='Together tiers, e.g. {"A":["m1"],"B":[],"C":[]}.'),
    openai_model_tiers_json: Optional[str] = typer.Option(None, help='OpenAI tiers, e.g. {"A":["gpt-4o"],"B":["gpt-4o-mini"],"C":[]}.'),
    model: Optional[List[str]] = typer.Option(None, help="Extra model (any spec, incl. hf:, gguf:, embedded, scripted). Repeatable."),
    use_dummy: bool = typer.Option(False, help="The scripted random player stands in for every model (offline dry run)."),
    modes: Optional[str] = typer.Option(None, help="pure, mixed or pure,mixed (default both, as the original)."),
    policy: Optional[str] = typer.Option(None, help="logprob (exact, default where available) or sample."),
    temperature: Optional[float] = typer.Option(None, help="Sampling temperature for --policy sample (default 0, as the original)."),
    max_tokens: Optional[int] = typer.Option(None, help="Generation budget for --policy sample (default 512)."),
    chat: Optional[bool] = typer.Option(None, "--chat/--no-chat", help="Send prompts as chat messages."),
    base_url: Optional[str] = typer.Option(None, help="Base URL for openai-compatible models (with --resume: given again, e.g. with its credentials)."),
    max_concurrency: Optional[int] = typer.Option(None, help="Concurrent decisions per run (default 8)."),
    num_workers: Optional[int] = typer.Option(None, help="The original's name for --max-concurrency."),
    no_cache: bool = typer.Option(False, help="Bypass the response cache."),
    order_rotations: Optional[int] = typer.Option(None, help="Evaluate each game under K cyclic row rotations."),
    price_table: Optional[str] = typer.Option(None, help="JSON prices per million tokens by model spec."),
    output_dir: Optional[str] = typer.Option(None, help="Where the suite folder is created (default results)."),
    shard: Optional[str] = typer.Option(None, help="Run shard i/n of every Nash-gap run (scale-out)."),
    resume: Optional[str] = typer.Option(None, help="Finish an interrupted suite in this folder."),
    quiet: bool = typer.Option(False, help="No progress or tables; print the suite folder."),
) -> int:
    """Tiered research suite: providers × model tiers A/B/C × difficulty buckets × seeds."""
    from stratbench.suites.nashgap.tiered import TieredConfig, model_entry, run_tiered_suite
    from stratbench.suites.nashgap.tiered_config import load_suite_file

    if num_workers is not None and max_concurrency is not None:
        raise InputError("give --num-workers or --max-concurrency, not both")
    if config is not None and not config.strip():
        raise InputError("--config: empty; give a suite file (TOML or YAML), or leave the flag out")
    if resume:
        plan_flags = {"--num-games-per-bucket": num_games_per_bucket, "--num-trials": num_trials, "--seeds": seeds,
                      "--providers": providers, "--bucket-ids": bucket_ids,
                      "--together-model-tiers-json": together_model_tiers_json,
                      "--openai-model-tiers-json": openai_model_tiers_json, "--model": model,
                      "--use-dummy": use_dummy or None, "--modes": modes, "--policy": policy,
                      "--temperature": temperature, "--max-tokens": max_tokens, "--chat/--no-chat": chat,
                      "--order-rotations": order_rotations, "--price-table": price_table,
                      "--output-dir": output_dir, "--shard": shard}
        given_flags = [f for f, v in plan_flags.items() if v is not None]
        if given_flags:  # (the saved plan is finished as it was started: these would be ignored)
            raise InputError(f"{', '.join(given_flags)}: --resume finishes the suite in {resume} with the plan "
                             f"saved there, so {'this flag' if len(given_flags) == 1 else 'these flags'} would be "
                             f"ignored; drop {'it' if len(given_flags) == 1 else 'them'} (a resume takes --config "
                             "and --base-url again, --max-concurrency, --no-cache, --quiet)")
        cfg = TieredConfig()
        if num_workers is not None or max_concurrency is not None:
            cfg.max_concurrency = num_workers if num_workers is not None else max_concurrency  # type: ignore[assignment]
        if config:  # the suite file again: the base URLs a suite folder holds redacted
            given = load_suite_file(config)
            cfg.base_url, cfg.models = given.base_url, given.models
        if base_url is not None:  # a URL saved with its credentials redacted, given again
            cfg.base_url = base_url
    else:
        cfg = load_suite_file(config) if config else TieredConfig()
        overrides = {
            "num_games_per_bucket": num_games_per_bucket, "num_trials": num_trials,
            "seeds": _seeds(seeds), "providers": _split(providers, "--providers"),
            "bucket_ids": _split(bucket_ids, "--bucket-ids"),
            "together_model_tiers": together_model_tiers_json,
            "openai_model_tiers": openai_model_tiers_json,
            "modes": _split([modes], "--modes") if modes is not None else None, "policy": policy,
            "temperature": temperature, "max_tokens": max_tokens, "chat": chat, "base_url": base_url,
            "max_concurrency": num_workers if num_workers is not None else max_concurrency,
            "order_rotations": order_rotations, "price_table": price_table, "output_dir": output_dir,
            "shard": shard,
        }
        for k, v in overrides.items():
            if v is not None:
                setattr(cfg, k, v)
        if price_table:  # (saved absolute: a resume from another folder reads the same table)
            import os

            cfg.price_table = os.path.abspath(price_table)
        if use_dummy:
            cfg.use_dummy = True
        if no_cache:
            cfg.no_cache = True
        if model:
            cfg.models = list(cfg.models) + [model_entry(m) for m in model]
        cfg.tiers()  # malformed tier JSON fails before anything else

    def announce(cell, result, folder) -> None:  # type: ignore[no-untyped-def]
        if quiet:
            return
        e = cell.entry
        note = "" if result is not None else " (finished earlier)"
        dummy = f" (played by {cell.player})" if cell.player != e.spec else ""
        err_console.print(f"seed {cell.seed} · {cell.bucket.id} · {e.provider}/{e.tier}/{e.display}"
                          f"{dummy}: {folder}{note}", highlight=False, soft_wrap=True)

    with progress_bar(quiet) as progress:
        result = run_tiered_suite(cfg, progress=progress, resume_dir=resume, on_cell=announce)
    if quiet:
        print(result.folder)
    else:
        _print_table(result.aggregated, bool(result.config and result.config.use_dummy))
        for name in ("big_table_all_runs.csv", "big_table_aggregated.csv", "big_table_aggregated.md",
                     "suite_metadata.json"):
            console.print(f"  {result.folder / name}", highlight=False)
    if result.n_errors:
        err_console.print(f"{result.n_errors} records are errors (see each run's status_counts)")
        return 1
    return 0


def _print_table(agg: list[dict], dummy: bool) -> None:  # type: ignore[type-arg]
    from rich.table import Table

    title = "Tiered suite (means across seeds; 95% bootstrap CIs over games)"
    if dummy:
        title += " — dry run: every model played by the random player"
    t = Table(title=title, title_justify="left")
    for col in ("provider", "tier", "model", "bucket", "mode", "nash gap", "exploitability",
                "expl. (norm.)", "fail / err", "games"):
        if col == "model":  # long names wrap rather than squeezing the numbers
            t.add_column(col, overflow="fold", max_width=46)
        else:
            t.add_column(col, no_wrap=True, min_width=len(col))
    def ci(r: dict, m: str) -> list[float] | None:  # type: ignore[type-arg]
        lo = r[f"{m}_ci95_low"]
        return None if lo is None else [lo, r[f"{m}_ci95_high"]]

    for r in agg:
        t.add_row(r["provider"], r["tier"], r["model"], r["bucket_id"], r["mode"],
                  fmt(r["mean_nash_gap_mean"], ci(r, "mean_nash_gap"), 2),
                  fmt(r["mean_exploitability_mean"], ci(r, "mean_exploitability"), 2),
                  fmt(r["mean_exploitability_normalized_mean"], None, 3),
                  f"{r['parse_failure_rate_mean']:.0%} / {r['error_rate_mean']:.0%}",
                  str(r["n_games_scored"]))
    console.print(t)


@suite_app.command("run")
@plannable(prices_for_ceiling=True)
def run_file(
    file: Optional[str] = typer.Argument(None, help="Suite file (.toml, .yaml): models, seeds, and one section per suite."),
    output_dir: Optional[str] = typer.Option(None, help="Where the suite folder is created (default: the file's output_dir or results)."),
    resume: Optional[str] = typer.Option(None, help="Finish an interrupted suite in this folder."),
    shard: Optional[str] = typer.Option(None, help="Run only shard i/n of the file's runs (whole runs, round-robin); "
                                        "combine with stratbench merge."),
    report: bool = typer.Option(True, help="Write the HTML report of the suite folder at the end."),
    quiet: bool = typer.Option(False, help="Print only the suite folder."),
    price_table: Optional[str] = typer.Option(
        None, help="JSON prices per million tokens by model spec, over the shipped table (for --dry-run and "
                   "--max-cost); with --resume, stands in for a section's saved price table that is gone."),
) -> int:
    """Run every suite × model × seed of a suite file (nashgap, tmgbench, chbench, tom sections)."""
    from stratbench.workflows.suite_file import run_suite_file

    if file is None and resume is None:
        raise InputError("give a suite file (or --resume SUITE_DIR)")

    def show(entry: dict) -> None:
        if not quiet:
            err_console.print(f"  {entry['suite']:<9} {entry['model']:<28} seed {entry['seed']:<6} "
                              f"{entry['setting']:<24} -> {entry['folder']} ({entry['errors']} errors)")

    if output_dir is not None and not output_dir.strip():  # (not the file's output_dir, silently)
        raise InputError("--output-dir: empty; give a folder")
    if resume is not None:  # (the suite is finished in its folder, as the shard it was started as)
        given = [f for f, v in (("--output-dir", output_dir), ("--shard", shard)) if v is not None]
        if given:
            raise InputError(f"{', '.join(given)}: --resume finishes the suite in {resume} as it was started, so "
                             f"{'this flag' if len(given) == 1 else 'these flags'} would be ignored; drop "
                             f"{'it' if len(given) == 1 else 'them'}")
    res = run_suite_file(file, output_dir=output_dir, resume_dir=resume, on_run=show, shard=shard,
                         price_table=price_table if resume else None)
    if report:
        from stratbench.api import report as build_report

        build_report(res.folder)
    if quiet:
        print(res.folder)
    else:
        console.print(f"suite — {res.folder}: {len(res.runs)} runs, {res.n_errors} errored records; "
                      f"runs.csv, suite_metadata.json" + (", report/index.html" if report else ""))
    if res.n_errors:
        import shlex

        err_console.print(f"{res.n_errors} records are errors; stratbench suite run --resume "
                          f"{shlex.quote(str(res.folder))} tries them again", highlight=False, soft_wrap=True)
    return 1 if res.n_errors else 0


def register(app: typer.Typer) -> None:
    app.add_typer(suite_app, name="suite")
