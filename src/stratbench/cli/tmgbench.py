"""`stratbench tmgbench games|run|stories`: the 144 Robinson–Goforth games, atomic and complex
runs, and story generation for the story setting."""

from __future__ import annotations

from typing import Any, Optional

import typer

from stratbench.cli.display import console, err_console, fmt, progress_bar, usage_unknown_note
from stratbench.cli.options import (
    BaseUrl,
    Chat,
    ChatTemplate,
    MaxConcurrency,
    NoCache,
    OutputDir,
    Quiet,
    ReasoningEffort,
    Resume,
    Retries,
    Seed,
    Shard,
    ThinkTags,
    Timeout,
    WaitForServer,
    group,
)
from stratbench.cli.plan import plannable
from stratbench.errors import InputError
from stratbench.suites import get_suite

tmg_app = group("TMGBench: the 144 Robinson–Goforth 2×2 games.")
stories_app = group("TMGBench story-based setting: generate and verify story files.")
tmg_app.add_typer(stories_app, name="stories")


@tmg_app.command("games")
def tmgbench_games(
    format: str = typer.Option("table", "--format", help="json or table."),
) -> None:
    """List the 144 games (id, grid position, payoffs, pure Nash equilibria)."""
    import json

    from stratbench.suites.tmgbench.games import all_games, to_json

    if format == "json":
        print(json.dumps([to_json(g) for g in all_games()], indent=1))
        return
    if format != "table":
        raise InputError(f"unknown --format {format!r}; use json or table")
    from rich.table import Table

    t = Table(title="TMGBench games")
    for col in ("id", "row", "col", "A", "B", "pure NE", "name"):
        t.add_column(col)
    for g in all_games():
        d = to_json(g)
        t.add_row(d["id"], str(d["row"]), str(d["col"]), str(d["payoff_A"]), str(d["payoff_B"]),
                  " ".join("".join(c) for c in d["pure_ne"]) or "—", d.get("name") or "")
    console.print(t)


def _is_complex_run(folder: str) -> bool:
    from stratbench.runner.folders import read_run_json
    from stratbench.suites import suite_for_run

    try:
        return suite_for_run(read_run_json(folder)).name == "tmgbench-complex"
    except InputError:
        return False


@tmg_app.command("run")
@plannable
def tmgbench_run(
    model: Optional[str] = typer.Option(None, help="Player: embedded (default), any model spec, or oracle/empty/uniform."),
    policy: Optional[str] = typer.Option(None, help="logprob (raw models: exact answer distribution; DA only), choice "
                                         "(chat models: exact answer distribution with the chat template; DA only) "
                                         "or sample."),
    prompting: str = typer.Option("DA", help="DA, CoT, FoToM, SoToM, reFoToM or reSoToM."),
    setting: str = typer.Option("classic", help="classic or story (with --stories-dir)."),
    stories_dir: Optional[str] = typer.Option(None, help="Story files {id}_{k}.txt for --setting story."),
    form: str = typer.Option("atomic", help="atomic, sequential, parallel or nested."),
    k: Optional[int] = typer.Option(None, "--k", help="Games per complex task (3, 5, 10; nested: 2)."),
    num_tasks: int = typer.Option(50, help="Complex-form tasks to sample."),
    repeats: int = typer.Option(4, help="Answers per game for sampled policies (the paper's T)."),
    games: Optional[str] = typer.Option(None, help="Comma-separated game ids (default: all 144)."),
    seed: Seed = None,
    base_url: BaseUrl = None,
    max_concurrency: MaxConcurrency = 8,
    no_cache: NoCache = False,
    temperature: float = typer.Option(1.0, help="Sampling temperature."),
    max_tokens: int = typer.Option(1024, help="Generation budget for sampled answers."),
    chat: bool = typer.Option(False, help="Send the paper's system + user messages as a conversation (the model's "
                              "chat template, or a chat endpoint)."),
    timeout: Timeout = 60.0,
    retries: Retries = 4,
    wait_for_server: WaitForServer = 0.0,
    chat_template: ChatTemplate = None,
    reasoning_effort: ReasoningEffort = None,
    think_tags: ThinkTags = None,
    output_dir: OutputDir = "results",
    resume: Resume = None,
    shard: Shard = None,
    quiet: Quiet = False,
) -> int:
    """Run TMGBench (classic or story setting, atomic games or complex forms): answers, metrics, heat maps."""
    from stratbench.suites.tmgbench.config import TmgbenchConfig

    kw: dict[str, Any] = dict(model=model, policy=policy, prompting=prompting, setting=setting, form=form,
              repeats=repeats, games=games, seed=seed, base_url=base_url, stories_dir=stories_dir,
              max_concurrency=max_concurrency, no_cache=no_cache, temperature=temperature,
              max_tokens=max_tokens, chat=chat, output_dir=output_dir, shard=shard, timeout=timeout,
              retries=retries, wait_for_server=wait_for_server, chat_template=chat_template,
              reasoning_effort=reasoning_effort, think_tags=think_tags)
    if form == "atomic" and k is not None and not resume:
        raise InputError("--k applies to complex forms only (--form sequential, parallel or nested)")
    if form != "atomic" or (resume and _is_complex_run(resume)):
        from stratbench.suites.tmgbench.complex_run import ComplexConfig

        cfg = ComplexConfig(**kw, k=k, num_tasks=num_tasks)
        if not resume:
            cfg.validate()
        with progress_bar(quiet) as progress:
            result = get_suite("tmgbench-complex").run(cfg, progress=progress, resume_dir=resume)
        s = result.summary
        if quiet:
            print(result.folder)
        else:
            console.print(f"TMGBench {s['form']} (k={s['k']}) — {result.folder} — {s['player']}: "
                          f"accuracy {fmt(s.get('accuracy_pct'), s.get('accuracy_pct_ci95'), 1)}% over "
                          f"{s.get('n_tasks')} tasks, parse failures {s.get('parse_failure_rate') or 0:.1%}")
            if s.get("strict_parse_rate") is not None:
                console.print(f"  strict answers {s['strict_parse_rate']:.1%}, flexible {s['flexible_parse_rate']:.1%}; "
                              f"strict accuracy {fmt(s.get('strict_accuracy_pct'), None, 1)}%")
            if note := usage_unknown_note(result.totals):
                err_console.print(f"{result.folder}: {note}")
        return _errors_line(result.n_errors, "tasks", result.folder)
    with progress_bar(quiet) as progress:
        result = get_suite("tmgbench").run(TmgbenchConfig(**kw), progress=progress, resume_dir=resume)
    s = result.summary
    if quiet:
        print(result.folder)
    else:
        console.print(f"TMGBench — {result.folder} — {s.get('player')} / {s.get('policy')} / {s.get('prompting')}")
        console.print(
            f"PAR {fmt(s.get('par_pct'), s.get('par_pct_ci95'), 1)}  ID {fmt(s.get('id_pct'), s.get('id_pct_ci95'), 1)}  "
            f"BD {fmt(s.get('bd_pct'), s.get('bd_pct_ci95'), 1)}  (percent; grids: {s.get('n_grids')}, "
            f"parse failures {s.get('parse_failure_rate', 0):.1%}, errors {s.get('error_rate', 0):.1%})")
        if s.get("strict_parse_rate") is not None:
            console.print(f"  strict answers {s['strict_parse_rate']:.1%}, flexible {s['flexible_parse_rate']:.1%}; "
                          f"flexible counted as failures: PAR {fmt(s.get('strict_par_pct'), None, 1)}  "
                          f"ID {fmt(s.get('strict_id_pct'), None, 1)}  BD {fmt(s.get('strict_bd_pct'), None, 1)}")
        for n in (0, 1, 2):
            console.print(f"  {n}-NE games: PAR {fmt(s.get(f'par_{n}_pct'), None, 1)}  "
                          f"ID {fmt(s.get(f'id_{n}_pct'), None, 1)}  BD {fmt(s.get(f'bd_{n}_pct'), None, 1)}")
        if note := usage_unknown_note(result.totals):
            err_console.print(f"{result.folder}: {note}")
    return _errors_line(result.n_errors, "records", result.folder)


def _errors_line(n_errors: int, what: str, folder: Any) -> int:
    """Exit 1 with the line every run command prints when calls failed: how many, and the resume
    that tries them again (a script's log says why the command failed, --quiet or not)."""
    if not n_errors:
        return 0
    import shlex

    err_console.print(f"{n_errors} {what} are errors (failed calls, counted, never scored); stratbench tmgbench run "
                      f"--resume {shlex.quote(str(folder))} tries them again", soft_wrap=True, highlight=False,
                      markup=False)
    return 1


@stories_app.command("generate")
@plannable
def tmgbench_stories_generate(
    model: Optional[str] = typer.Option(None, help="Model that writes the stories."),
    games: Optional[str] = typer.Option(None, help="Comma-separated game ids (default: all 144)."),
    variants: int = typer.Option(5, help="Stories per game (the paper: 5)."),
    topics: Optional[str] = typer.Option(None, help="Comma-separated topics (default: the paper's)."),
    max_attempts: int = typer.Option(3, help="Generations per story before giving up."),
    seed: Seed = None,
    temperature: float = typer.Option(1.0, help="Sampling temperature."),
    max_tokens: int = typer.Option(2048, help="Generation budget."),
    chat: Chat = False,
    base_url: BaseUrl = None,
    timeout: Timeout = 60.0,
    retries: Retries = 4,
    wait_for_server: WaitForServer = 0.0,
    reasoning_effort: ReasoningEffort = None,
    think_tags: ThinkTags = None,
    no_cache: NoCache = False,
    max_concurrency: MaxConcurrency = 8,
    output_dir: OutputDir = "results",
    quiet: bool = typer.Option(False, help="No progress bar."),
    resume: Resume = None,
) -> int:
    """Generate story files with a model; keep only stories whose matrix equals the classic game's."""
    from stratbench.checks import check_config
    from stratbench.suites.tmgbench.stories_gen import StoryGenConfig

    cfg = StoryGenConfig(model=model, games=games, variants=variants, topics=topics,
                         max_attempts=max_attempts, seed=seed, temperature=temperature,
                         max_tokens=max_tokens, chat=chat, base_url=base_url, no_cache=no_cache,
                         max_concurrency=max_concurrency, output_dir=output_dir, timeout=timeout, retries=retries,
                         wait_for_server=wait_for_server, reasoning_effort=reasoning_effort, think_tags=think_tags)
    check_config(cfg)  # the shared checks of flag values (story generation has no validate of its own)
    with progress_bar(quiet) as progress:
        res = get_suite("tmgbench-stories").run(cfg, progress=progress, resume_dir=resume)
    s = res.summary
    console.print(f"{res.folder}: {s['n_accepted']}/{s['n_requested']} stories accepted "
                  f"({s['attempts']} attempts: {s['attempt_status_counts']}); files in {s['stories_dir']}")
    return 1 if res.n_errors else 0


@stories_app.command("verify")
def tmgbench_stories_verify(directory: str = typer.Argument(..., help="Folder of {id}_{k}.txt files.")) -> int:
    """Check that every story's payoff matrix equals its classic game's."""
    from stratbench.suites.tmgbench.stories_gen import verify_story_dir

    checked = verify_story_dir(directory)
    bad = 0
    for path, problems in checked:
        if problems:
            bad += 1
            console.print(f"MISMATCH {path}: {problems[0]}")
    console.print(f"{bad} of {len(checked)} stories do not match their game")
    return 1 if bad else 0


def register(app: typer.Typer) -> None:
    app.add_typer(tmg_app, name="tmgbench")
