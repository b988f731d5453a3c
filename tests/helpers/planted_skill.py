"""Checkpoints with a planted skill in every suite, served by the fake OpenAI server
(``FakeOpenAIServer(next_token=planted, planted_text=planted_text)``). For the model ``ckpt-<step>``
(a key of ``WEIGHTS``) with weight w, each suite's answer mixes a skilled one with chance, the
skilled part worked out from the prompt alone (never from stratbench's own solvers):

* Nash gap (next-token log-probabilities): w on the game's maximin strategy (solved with scipy from
  the table in the prompt) and 1 − w on the uniform one — w = 0 is exactly the chance reference;
* TMGBench (a sampled DA answer): the standard answer (the pure Nash equilibria of the table in the
  prompt) when a hash of the prompt, uniform in [0, 1), is below w, else an answer set drawn by a
  second hash from the 16 — so the games answered right at a lower w are among those at a higher;
* CHBench (next token of "Your choice is :"): w on the level-2 action (the best response to a
  level-1 opponent, who best responds to uniform play) and 1 − w uniform;
* theory of mind (next token of "A: Option"): w on the best response to the partner's predicted
  action — its last one, or, when every earlier action copied the agent's previous one (tit for
  tat), the agent's last action — and 1 − w on the other actions; uniform in the first round. The
  episode draws its action from this policy with one seed per round, the same for every
  checkpoint, so 1 − w must go to the other actions for a smaller w to play worse (w = 0 plays
  below chance).
Every other prompt (ToM predictions, CHBench advisors) gets the fake model's own answer (None), the
same for every checkpoint.

``WEIGHTS`` is a rise, a plateau and a fall: emergence at step 1000, a regression at 100000 (and
at 1000000, the fifth checkpoint).
Used by tests/workflows/test_trend.py, benchmarks/bench_trend.py and benchmarks/trend_picture.py
(``planted_server``: the server in a process of its own).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
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


def _log_policy(labels: list[str], best: int, w: float, others: bool = False) -> dict[str, float]:
    """w on ``labels[best]`` and 1 − w spread over all labels (``others``: over the other labels), as
    next-token log-probabilities."""
    if others:
        q = [w if i == best else (1.0 - w) / (len(labels) - 1) for i in range(len(labels))]
    else:
        q = [(1.0 - w) / len(labels) + (w if i == best else 0.0) for i in range(len(labels))]
    out = {lab: math.log(max(x, 1e-12)) for lab, x in zip(labels, q)}
    out["\n"] = math.log(1e-9)  # a token that is no label, far below them
    return out


def _nash(prompt: str, w: float) -> dict[str, float]:
    lines = prompt.split("\n")
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("you \\ opp"))
    labels, rows = [], []
    for line in lines[head + 2:]:
        if " | " not in line:
            break
        cells = [x.strip() for x in line.split(" | ")]
        labels.append(cells[0])
        rows.append([float(x) for x in cells[1:]])
    q = w * maximin(np.asarray(rows)) + (1.0 - w) / len(labels)
    out = {lab: math.log(max(float(x), 1e-12)) for lab, x in zip(labels, q)}
    out["\n"] = math.log(1e-9)
    return out


_CH_OUTCOME = re.compile(r"If you choose (\w+) and your opponent chooses (\w+), you will receive (-?[\d.]+) points? "
                         r"and your opponent will receive (-?[\d.]+) points?")


def _chbench(prompt: str, w: float) -> dict[str, float] | None:
    """Level 2: the best response to an opponent who best responds to uniform play."""
    found = _CH_OUTCOME.findall(prompt[:prompt.index("Question:")] if "Question:" in prompt else prompt)
    if not found:
        return None
    mine = list(dict.fromkeys(a for a, _, _, _ in found))
    theirs = list(dict.fromkeys(b for _, b, _, _ in found))
    u = np.zeros((len(mine), len(theirs)))
    v = np.zeros_like(u)
    for a, b, x, y in found:
        u[mine.index(a), theirs.index(b)] = float(x)
        v[mine.index(a), theirs.index(b)] = float(y)
    level1 = int(np.argmax(v.mean(axis=0)))  # the opponent's best response to my uniform play
    best = int(np.argmax(u[:, level1]))
    return _log_policy([f" {a}" for a in mine], best, w)


_TOM_OUTCOME = re.compile(r"If you choose Option (\w+) and the other player chooses Option (\w+), then you "
                          r"(?:receive a score of|win) ([+-]?[\d.]+)")
_TOM_ROUND = re.compile(r"In round \d+, you chose Option (\w+) and the other player chose Option (\w+)\.")


def _tom(prompt: str, w: float) -> dict[str, float] | None:
    """The best response to the partner's predicted action (see the module's docstring)."""
    found = _TOM_OUTCOME.findall(prompt)
    if not found:
        return None
    labels = list(dict.fromkeys(a for a, _, _ in found))
    pay = {(a, b): float(x) for a, b, x in found}
    history = _TOM_ROUND.findall(prompt)
    if not history:
        return _log_policy([f" {x}" for x in labels], 0, 0.0)
    mine, theirs = [h[0] for h in history], [h[1] for h in history]
    copies = len(history) > 1 and all(theirs[i] == mine[i - 1] for i in range(1, len(history)))
    nxt = mine[-1] if copies and len(set(theirs)) > 1 else theirs[-1]
    best = max(range(len(labels)), key=lambda i: pay[(labels[i], nxt)])
    return _log_policy([f" {x}" for x in labels], best, w, others=True)


def planted(model: str, prompt: str) -> dict[str, float] | None:
    """The checkpoints' next token (Nash gap, CHBench, ToM actions); None for every other prompt."""
    if model not in WEIGHTS:
        return None
    w = WEIGHTS[model]
    if prompt.endswith(NASH_END) and "you \\ opp" in prompt:
        return _nash(prompt, w)
    if prompt.startswith("Game Rules:") and prompt.endswith("Your choice is :"):
        return _chbench(prompt, w)
    if prompt.startswith("You are playing a game repeatedly") and prompt.endswith("\n\nA: Option"):
        return _tom(prompt, w)
    return None


_TMG_ROW = re.compile(r"^\| (A\d) +\| (-?\d+) \\ (-?\d+) \| (-?\d+) \\ (-?\d+) \|$", re.M)
TMG_END = 'answer = [{"Ax", "By"}] # list-type\n```\n\n```python\n'


def _uniform01(text: str, salt: str) -> float:
    return int.from_bytes(hashlib.sha256((salt + text).encode()).digest()[:8], "big") / 2.0**64


def _answer(cells: list[tuple[int, int]]) -> str:
    sets = ", ".join(f'{{"A{a + 1}", "B{b + 1}"}}' for a, b in cells)
    return f"answer = [{sets}]\n```"


def planted_text(model: str, prompt: str) -> str | None:
    """The checkpoints' sampled TMGBench DA answer; None for every other prompt."""
    if model not in WEIGHTS or not prompt.endswith(TMG_END):
        return None
    rows = _TMG_ROW.findall(prompt[:prompt.index("[/Scenario]")])
    if len(rows) != 2:
        return None
    a = np.array([[[float(r[1]), float(r[2])], [float(r[3]), float(r[4])]] for r in rows])  # [A][B][player]
    nash = [(i, j) for i in range(2) for j in range(2)
            if a[i, j, 0] >= a[1 - i, j, 0] and a[i, j, 1] >= a[i, 1 - j, 1]]
    if _uniform01(prompt, "skill") < WEIGHTS[model]:
        return _answer(nash)
    draw = int(_uniform01(prompt, "chance") * 16)  # one of the 16 subsets of the 4 cells
    return _answer([(c // 2, c % 2) for c in range(4) if draw >> c & 1])


_SERVE = """
import sys
sys.path.insert(0, sys.argv[1])
from fake_openai_server import FakeOpenAIServer
from planted_skill import planted, planted_text
with FakeOpenAIServer(next_token=planted, planted_text=planted_text) as s:
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
