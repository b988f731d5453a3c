"""Every flag of every command is documented, on its command's page, and every flag the docs write
exists. The flags come from the real command line (`cli_spec`, the helper behind the CLI golden),
never from help text.

A flag counts as documented for a command when it is written (as `--flag`, anywhere in the page's
prose or code) on the page of the command (PAGES); a flag that at least SHARED commands take may be
documented once instead, in docs/models.md's table of the flags every run command shares. Only a
flag's primary spelling is required (`--chat`, not the `--no-chat` of a boolean pair, nor
click's generated `--no-no-cache`); every spelling counts as existing."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from cli_spec import cli_spec
from docs_pages import DOCS, README, pages, rel

#: command → the page that documents it
PAGES = {
    "nashgap": "docs/suites/nashgap.md",
    "tmgbench games": "docs/suites/tmgbench.md",
    "tmgbench run": "docs/suites/tmgbench.md",
    "tmgbench stories generate": "docs/suites/tmgbench.md",
    "tmgbench stories verify": "docs/suites/tmgbench.md",
    "chbench run": "docs/suites/chbench.md",
    "chbench fit": "docs/suites/chbench.md",
    "tom run": "docs/suites/tom.md",
    "tom baseline": "docs/suites/tom.md",
    "scorecard": "docs/scorecard.md",
    "trend": "docs/trend.md",
    "suite run": "docs/workflows.md",
    "suite tiered": "docs/workflows.md",
    "merge": "docs/workflows.md",
    "compare": "docs/workflows.md",
    "report": "docs/workflows.md",
    "models": "docs/models.md",
    "version": "docs/models.md",
}
SHARED_PAGE = "docs/models.md"
SHARED = 3  # a flag of at least this many commands may be documented on SHARED_PAGE alone

#: `--flags` the docs write that are not stratbench's own, each with the reason
NOT_OURS = {
    "--port": "vllm serve / python -m sglang.launch_server in the scale-out recipe (workflows.md)",
    "--model-path": "python -m sglang.launch_server in the scale-out recipe (workflows.md)",
    "--readme-from": "benchmarks/bench_local.py, a benchmark script (benchmarks.md)",
    "--debug": "read by the entry point before the command line is parsed (cli/main.py), so no command lists it",
    "--help": "click's own, on every command",
    "--write": "tests/docs/schema_tables.py, which regenerates docs/results.md's key tables (extending.md)",
}

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _commands() -> dict[str, dict[str, list[str]]]:
    """command → {"primary": long flags a user must find documented, "all": every spelling}."""
    out = {}
    for cmd, params in cli_spec().items():
        if cmd == "<root>":
            continue
        primary = sorted({o for p in params for o in p["opts"] if o.startswith("--")})
        every = sorted({o for p in params for o in p["opts"] + p["secondary_opts"] if o.startswith("--")})
        out[cmd] = {"primary": primary, "all": every}
    return out


def _leaf(cmd: str, spec: dict[str, dict[str, list[str]]]) -> bool:
    """A command that runs (a group such as `tmgbench` has commands under it, no flags)."""
    return not any(other.startswith(cmd + " ") for other in spec)


def _flags_in(text: str) -> set[str]:
    return set(FLAG.findall(text))


COMMANDS = _commands()
TEXT = {rel(p): p.read_text(encoding="utf-8") for p in pages()}


def test_every_command_has_a_page():
    leaves = sorted(c for c in COMMANDS if _leaf(c, COMMANDS))
    assert [c for c in leaves if c not in PAGES] == [], "give the new command a page in PAGES and a section on it"
    assert [c for c in PAGES if c not in COMMANDS] == [], "PAGES names a command the CLI no longer has"


@pytest.mark.parametrize("cmd", sorted(PAGES))
def test_every_flag_of_a_command_is_on_its_page(cmd):
    uses = defaultdict(int)
    for c in COMMANDS.values():
        for f in c["primary"]:
            uses[f] += 1
    page = _flags_in(TEXT[PAGES[cmd]])
    shared_page = _flags_in(TEXT[SHARED_PAGE])
    missing = [f for f in COMMANDS[cmd]["primary"]
               if f not in page and not (uses[f] >= SHARED and f in shared_page)]
    assert missing == [], f"stratbench {cmd}: flags not documented on {PAGES[cmd]}: {missing}"


def test_every_documented_flag_exists():
    real = {f for c in COMMANDS.values() for f in c["all"]}
    unknown = {}
    for page, text in TEXT.items():
        for f in sorted(_flags_in(text) - real - set(NOT_OURS)):
            line = next(n for n, ln in enumerate(text.split("\n"), 1) if re.search(rf"(?<![\w-]){f}(?![\w-])", ln))
            unknown.setdefault(f, f"{page}:{line}")
    assert unknown == {}, f"flags written in the docs that no stratbench command has: {unknown}"


def test_the_allowlist_holds_only_flags_the_docs_write():
    written = set().union(*(_flags_in(t) for t in TEXT.values()))
    assert sorted(set(NOT_OURS) - written) == []


def test_the_docs_are_where_the_test_looks():
    assert README.is_file() and (DOCS / "models.md").is_file()
