"""Flags given beside ``--resume`` on a run command: a resumed run is carried out with the settings
saved in its folder, so a flag that would change what it plays (``--num-games 50``, ``--seed 7``,
``--model …``) is refused in one line instead of being silently ignored. What a resume does take
from its command line is how the run is carried out (``runner.lifecycle.RUNTIME_KEYS``: the
server, timeouts, concurrency, the response cache) and what is not saved with it (``--quiet``,
``--max-cost``, a replacement ``--price-table`` or ``--chat-template`` for a saved file that is gone,
which `runner.lifecycle` checks); ``--dry-run`` is let through to its own refusal.

The scorecard and the trend refuse their own flags with their own words; the suite file and the
tiered suite take their file or config again. This guard covers the single-suite run commands.
"""

from __future__ import annotations

from typing import Any

from stratbench.errors import InputError

#: the run commands guarded (command words as typed)
GUARDED = (("nashgap",), ("tmgbench", "run"), ("tmgbench", "stories", "generate"), ("chbench", "run"),
           ("tom", "run"), ("tom", "baseline"))
#: what a resumed run takes from the command that resumes it (see the module docstring)
TAKEN = frozenset({"resume", "quiet", "dry_run", "max_cost", "price_table", "chat_template", "max_concurrency", "parallel",
                   "num_workers", "base_url", "no_cache", "timeout", "retries", "wait_for_server"})


def _flag(param: Any) -> str:
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")]
    return opts[0] if opts else f"--{(param.name or '').replace('_', '-')}"


def _typed(ctx: Any, name: str) -> bool:
    """Whether the parameter was typed on the command line, not left at its default. (The source is
    compared by name: typer carries its own copy of click.)"""
    return getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"


def refuse_ignored_flags(ctx: Any) -> None:
    """One line naming the flags given beside --resume that the resumed run would ignore (``ctx``:
    the command's parsed context)."""
    if not ctx.params.get("resume") or ctx.params.get("dry_run"):
        return  # (--dry-run beside --resume: refused in its own words, it plans a new run)
    given = [p for p in ctx.command.params if p.name not in TAKEN and p.name is not None and _typed(ctx, p.name)]
    if not given:
        return
    names = ", ".join(_flag(p) for p in given)
    # (--dry-run passes here to be refused in its own words: it plans a new run)
    takes = ", ".join(_flag(p) for p in ctx.command.params if p.name in TAKEN and p.name not in ("resume", "dry_run"))
    raise InputError(f"{names}: --resume finishes the run in its folder with the settings saved there, so "
                     f"{'this flag' if len(given) == 1 else 'these flags'} would be ignored; drop "
                     f"{'it' if len(given) == 1 else 'them'} "
                     f"({'a resume takes ' + takes if takes else 'a resume takes no other flag'})")


def guard_run_commands(root: Any) -> None:
    """Check the GUARDED commands of the command tree (``root``: the click command typer built)
    before they run: each one's ``invoke`` first refuses ignored flags."""
    for words in GUARDED:
        cmd: Any = root
        for w in words:
            cmd = getattr(cmd, "commands", {}).get(w)
            if cmd is None:
                break
        if cmd is None or getattr(cmd, "_resume_guarded", False):
            continue

        def invoke(ctx: Any, __inner: Any = cmd.invoke) -> Any:
            refuse_ignored_flags(ctx)
            return __inner(ctx)

        cmd.invoke = invoke
        cmd._resume_guarded = True


def refuse_output_dir_and_check_url(ctx: Any, folder_flag: str, folder: str, base_url: str | None) -> None:
    """For a command that continues a folder (`scorecard --resume`, `trend --resume`/`--add`):
    ``--output-dir`` typed beside it (``ctx``: the command's context) would be ignored (the folder is where the command writes), and
    a ``--base-url`` is checked as a run checks it even when nothing is left to run (a finished
    folder opens no model, so a port 0 would pass unseen)."""
    from pathlib import Path

    if not Path(folder).is_dir():
        return  # (the command names a folder that is not one in its own words first)
    if _typed(ctx, "output_dir"):
        raise InputError(f"--output-dir: {folder_flag} {folder} writes into that folder, so --output-dir would be "
                         "ignored; drop it")
    if base_url is not None:
        from stratbench.models.http_transport import check_base_url

        check_base_url(base_url, f"{folder_flag} {folder}")
