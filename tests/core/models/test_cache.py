"""The response cache in front of a backend: hits cost no call; a prefix-reusing backend (whose
scores depend on the sequence of its calls) is served only answers stored before its session."""

from __future__ import annotations

import asyncio
from typing import Any

from stratbench.models.base import LanguageModel, ScoreRequest, ScoreResult
from stratbench.models.cache import CachedModel, ResponseCache


class Counting(LanguageModel):
    """Scores depend on how many calls came before (as llama.cpp's do under prefix reuse)."""

    def __init__(self, reuse: bool) -> None:
        super().__init__()
        self.spec, self.reuse, self.calls = "counting", reuse, 0

    async def score(self, requests: Any) -> list[ScoreResult]:
        out = []
        for r in requests:
            self.calls += 1
            out.append(ScoreResult([-float(self.calls)] * len(r.continuations), [1] * len(r.continuations),
                                   tokens_in=len(r.prompt)))
        return out

    async def generate(self, requests: Any) -> Any:  # pragma: no cover - unused
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"spec": self.spec, "prefix_reuse": self.reuse}


def _session(path: Any, reuse: bool, prompts: list[str]) -> tuple[list[float], int]:
    inner = Counting(reuse)
    model = CachedModel(inner, ResponseCache(path), earlier_only=reuse)

    async def go() -> list[float]:
        out = []
        for p in prompts:  # one after another, as an episode's rounds
            (r,) = await model.score([ScoreRequest(p, (" a", " b"))])
            out.append(r.logprobs[0])
        return out

    values = asyncio.run(go())
    model.cache.close()
    return values, inner.calls


def test_a_reusing_backend_is_not_served_its_own_session_but_a_rerun_is_free(tmp_path):
    prompts = ["start", "start then", "start", "start then more"]  # episode 2 opens like episode 1
    first, calls = _session(tmp_path / "c.sqlite", True, prompts)
    assert calls == 4 and first == [-1.0, -2.0, -3.0, -4.0]  # exactly an uncached run's sequence
    again, calls = _session(tmp_path / "c.sqlite", True, prompts)
    assert calls == 0 and again == first  # all hits, each occurrence its own value


def test_an_ordinary_backend_shares_answers_within_its_session(tmp_path):
    values, calls = _session(tmp_path / "c.sqlite", False, ["x", "y", "x"])
    assert calls == 2 and values == [-1.0, -2.0, -1.0]
