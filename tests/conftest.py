from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run and machine (seeds fix every draw): a case
# one run finds is kept as an @example, not left to turn up again by chance in CI.
settings.register_profile("stratbench", derandomize=True)
settings.load_profile("stratbench")

# The tests send Ctrl-C (SIGINT) to the commands they start. A shell that starts a job in the
# background without job control (`make test &` in a script, a CI step run that way) starts it with
# SIGINT ignored, and an ignored signal is inherited through every exec: each command would then
# run on through the test's Ctrl-C. The test process takes SIGINT back (a handler, which an exec
# resets to the default), so the commands it starts receive it as a user's terminal would send it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the real command line in a fresh interpreter, as a user would."""
    env = dict(os.environ, CI="1")
    return subprocess.run(
        [sys.executable, "-m", "stratbench", *args],
        capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env,
    )


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Tests never read or write the user's response cache."""
    path = tmp_path_factory.mktemp("cache")
    old = os.environ.get("STRATBENCH_CACHE_DIR")
    os.environ["STRATBENCH_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("STRATBENCH_CACHE_DIR", None)
    else:
        os.environ["STRATBENCH_CACHE_DIR"] = old


@pytest.fixture(autouse=True)
def _signal_dispositions():
    """Every test leaves SIGINT and SIGTERM as it found them. A command run in-process (`main([...])`)
    that ends interrupted ignores both from then on, as the real process does until it exits; in a
    pytest worker that outlived it, every later subprocess inherited SIGTERM ignored (SIG_IGN survives
    exec), and the kill tests that landed on the same worker failed: their SIGTERM never arrived."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in saved.items():
        if handler is not None and signal.getsignal(s) is not handler:
            signal.signal(s, handler)
