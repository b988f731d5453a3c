"""Every shell block marked runnable (```` ```bash runnable ````) in README.md and docs/ runs, and
succeeds, as a reader would run it: with bash and `set -euo pipefail`, in a fresh folder per page
(the blocks of one page run in order in that folder, so a block may use what an earlier block of
its page wrote), with `stratbench` on the PATH being this Python's (`python -m stratbench`) and the
response cache in a temporary folder. One test per block, named `page:line`. The convention is
described in docs/extending.md ("Runnable examples in the docs")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from docs_pages import Block, blocks, pages, rel

import stratbench

TIMEOUT_S = 180  # one block; together they take well under a minute on an idle 2-core machine

RUNNABLE = [b for p in pages() for b in blocks(p) if b.runnable]


def test_there_are_runnable_blocks_in_the_readme_and_every_suite_page():
    have = {rel(b.page) for b in RUNNABLE}
    for page in ("README.md", "docs/suites/nashgap.md", "docs/suites/tmgbench.md", "docs/suites/chbench.md",
                 "docs/suites/tom.md", "docs/workflows.md", "docs/results.md"):
        assert page in have, f"{page} has no runnable block"


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    """A PATH whose `stratbench` is this interpreter's, a private response cache, and per page a
    folder plus the blocks already run in it."""
    bin_dir = tmp_path_factory.mktemp("bin")
    shim = bin_dir / "stratbench"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m stratbench "$@"\n')
    shim.chmod(0o755)
    src = str(Path(stratbench.__file__).resolve().parents[1])
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", CI="1",
               STRATBENCH_CACHE_DIR=str(tmp_path_factory.mktemp("cache")),
               PYTHONPATH=os.pathsep.join(x for x in (src, os.environ.get("PYTHONPATH")) if x))
    env.pop("STRATBENCH_DEBUG", None)
    for key in [k for k in env if k.endswith("_API_KEY")]:  # the docs' examples never reach a provider
        env.pop(key)
    state: dict[Path, tuple[Path, list[int]]] = {}

    def run(block: Block) -> subprocess.CompletedProcess[str]:
        if block.page not in state:
            state[block.page] = (tmp_path_factory.mktemp(block.page.stem), [])
        folder, done = state[block.page]
        # the page's earlier blocks first, when this one runs alone (pytest -k)
        for earlier in [b for b in RUNNABLE if b.page == block.page and b.line < block.line]:
            if earlier.line not in done:
                res = _bash(earlier, folder, env)
                assert res.returncode == 0, _failure(earlier, res)
                done.append(earlier.line)
        res = _bash(block, folder, env)
        done.append(block.line)
        return res

    return run


def _bash(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + block.text], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)


def _failure(block: Block, res: subprocess.CompletedProcess[str]) -> str:
    return (f"{block.id}: exit code {res.returncode}\n--- block\n{block.text}--- stdout (end)\n"
            f"{res.stdout[-3000:]}\n--- stderr (end)\n{res.stderr[-3000:]}")


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_runnable_block(block, shell):
    res = shell(block)
    assert res.returncode == 0, _failure(block, res)
