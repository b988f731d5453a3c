"""Checkpoints with a planted Nash-gap skill, served by the fake OpenAI server
(``FakeOpenAIServer(next_token=planted)``): for the model ``ckpt-<step>`` (a key of ``WEIGHTS``)
the next-token log-probabilities on a Nash-gap prompt put weight w on the game's maximin strategy
(solved with scipy from the table in the prompt) and 1 − w on the uniform one — w = 0 is exactly
the chance reference, and the score grows with w. Every other prompt gets the fake model's own
answer (``planted`` returns None), the same for every checkpoint.

``WEIGHTS`` is a rise, a plateau and a fall: emergence at step 1000, a regression at 100000 (and
at 1000000, the fifth checkpoint).
Used by tests/workflows/test_trend.py, benchmarks/bench_trend.py and benchmarks/trend_picture.py
(``planted_server``: the server in a process of its own).
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

WEIGHTS = {"ckpt-100": 0.0, "ckpt-1000": 0.9, "ckpt-10000": 0.9, "ckpt-100000": 0.2, "ckpt-1000000": 0.0}
NASH_END = "Answer: I choose action "


def maximin(a: np.ndarray) -> np.ndarray:
    """The row player's maximin strategy of a zero-sum game (payoffs ``a`` to the row player)."""
    m, n = a.shape
    c = np.zeros(m + 1)
    c[-1] = -1.0  # maximise v
    a_ub = np.hstack([-a.T, np.ones((n, 1))])  # v - p·A[:, j] <= 0
    a_eq = np.hstack([np.ones((1, m)), np.zeros((1, 1))])
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq, b_eq=[1.0],
                  bounds=[(0, None)] * m + [(None, None)], method="highs")
    p = np.clip(res.x[:m], 0.0, None)
    return p / p.sum()


def planted(model: str, prompt: str) -> dict[str, float] | None:
    """The checkpoints' next token on a Nash-gap prompt: w × maximin + (1 − w) × uniform."""
    if model not in WEIGHTS or not prompt.endswith(NASH_END) or "you \\ opp" not in prompt:
        return None
    lines = prompt.split("\n")
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("you \\ opp"))
    labels, rows = [], []
    for line in lines[head + 2:]:
        if " | " not in line:
            break
        cells = [x.strip() for x in line.split(" | ")]
        labels.append(cells[0])
        rows.append([float(x) for x in cells[1:]])
    w = WEIGHTS[model]
    q = w * maximin(np.asarray(rows)) + (1.0 - w) / len(labels)
    out = {lab: math.log(max(float(x), 1e-12)) for lab, x in zip(labels, q)}
    out["\n"] = math.log(1e-9)  # a token that is no label, far below them
    return out


_SERVE = """
import sys
sys.path.insert(0, sys.argv[1])
from fake_openai_server import FakeOpenAIServer
from planted_skill import planted
with FakeOpenAIServer(next_token=planted) as s:
    print(s.base_url, flush=True)
    sys.stdin.read()  # until the parent closes it
"""


@contextlib.contextmanager
def planted_server() -> Iterator[str]:
    """The planted checkpoints' fake server in a process of its own, as a real server would run
    (its CPU does not share the caller's interpreter lock); yields its base URL. For benchmarks."""
    proc = subprocess.Popen([sys.executable, "-c", _SERVE, str(Path(__file__).resolve().parent)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    url = proc.stdout.readline().strip()
    try:
        if not url.startswith("http://"):
            raise RuntimeError(f"the fake server did not start: {url!r}")
        yield url
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
