"""What a hosted run will cost, before it runs (``--dry-run``), and a ceiling while it runs
(``--max-cost``).

A dry run plays the command as it would run — the same games, prompts, budgets and number of
calls — against :class:`DryRunModel`, which makes no request: it counts each call, its prompt
tokens and its output budget, and answers with a legal reply so that repeated games go on as a real
run would. Its folders go to a scratch directory that is removed; the response cache is neither
read nor written. Prompt tokens are counted at about four characters a token (stratbench has no
offline tokenizer of hosted models; ``APPROX``), output tokens as the whole budget of every
generated reply: the dollars are an upper bound at the listed prices.

``--max-cost USD`` puts every backend of the command behind :class:`CostGuard`, below the response
cache (a cached answer costs nothing): before a call it adds the call's worst case (its prompt and
its whole output budget at the listed prices, over every request the call makes: the backend says
how many, `LanguageModel.request_prompts`) to what was spent and what calls in flight may still
cost; when that would pass the ceiling the call waits (calls are made in the order they came) for
the calls in flight to settle, each releasing its reservation down to what it took. Only when the
call's worst case cannot fit with no call in flight is it not made: the command stops as Ctrl-C
stops it — every finished record saved, the folder resumable — and says so (exit 3). So a ceiling
below "--max-concurrency × one call's worst case" makes fewer calls at once, not none. Spent cost is
counted from the tokens the provider reported; a call whose provider reported none (or no count,
`models.base.reported_count`) is counted at its worst case, never as free. The worst case is an
estimate where the prompt tokens are (about four characters a token): a command whose calls
took more than that may end past the ceiling, and then says so.

One session (:func:`cost_session`) per command; the CLI opens it (`stratbench.cli.plan`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from stratbench.errors import InputError
from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LanguageModel,
    ScoreRequest,
    ScoreResult,
    UsageTotals,
    WrappedModel,
)
from stratbench.models.prices import SHIPPED_PRICES, Price, load_price_table

__all__ = ["APPROX", "CallBound", "CostGuard", "CostSession", "DryRunModel", "PlanLine", "RefusalGuard", "approx_tokens",
           "call_bound", "cost_session", "current", "halted", "load_prices", "near_miss", "planning"]

APPROX = "prompt tokens at about 4 characters a token (no tokenizer of the hosted model here)"
CHARS_PER_TOKEN = 4
EXIT_MAX_COST = 3  # the command stopped at --max-cost: resumable, nothing lost


def approx_tokens(text: str | None) -> int:
    """Tokens of `text` at about four characters each (OpenAI's rule of thumb for English)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def _prompt_tokens(req: GenerateRequest | ScoreRequest) -> int:
    # a conversation's flattened text is `prompt` (GenerateRequest); a scored one keeps its turns apart
    n = approx_tokens(req.prompt)
    if isinstance(req, GenerateRequest):
        return n + approx_tokens(req.system)
    return n + sum(approx_tokens(c) for _, c in req.messages)


@dataclass
class PlanLine:
    """One model's planned calls in a dry run."""

    spec: str
    run: str = ""  # the run folder's name (a scorecard or suite file plans several runs)
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0  # the output budget of every generated reply (an upper bound)


@dataclass
class CostSession:
    """The prices and, in a dry run, the plan; with ``max_cost`` what was spent."""

    prices: dict[str, Price]
    dry_run: bool = False
    max_cost: float | None = None
    plan: dict[tuple[str, str], PlanLine] = field(default_factory=dict)
    run: str = ""  # the run being planned (its folder's name)
    spent: float = 0.0
    reserved: float = 0.0  # worst case of the calls in flight
    in_flight: int = 0  # guarded calls made and not yet settled
    tripped: bool = False
    # calls waiting for their turn (first come, first made) and what each waits on: a call in
    # flight settling (its reservation released down to what it took) or the command stopping
    queue: list[object] = field(default_factory=list)
    wakers: list[asyncio.Future[None]] = field(default_factory=list)
    unknown: int = 0  # calls whose provider reported no usage: counted in `spent` at their worst case

    local: Callable[[str], bool] = lambda spec: False  # whether a spec's model runs here (its traits)

    def price(self, spec: str) -> Price | None:
        """The price of `spec`: a model that runs here is free; otherwise the table's, or None."""
        if self.local(spec):
            return Price(0.0, 0.0, "", "runs here")
        return self.prices.get(spec)

    def line(self, spec: str) -> PlanLine:
        return self.plan.setdefault((self.run, spec), PlanLine(spec, self.run))

    def wake(self) -> None:
        """Something changed (a call settled, a waiting one went or was admitted): every waiting
        call looks again."""
        wakers, self.wakers = self.wakers, []
        for w in wakers:
            if not w.done():
                w.set_result(None)

    async def changed(self) -> None:
        """Until the next `wake`."""
        w = asyncio.get_running_loop().create_future()
        self.wakers.append(w)
        await w

    def cost(self, spec: str, tokens_in: int, tokens_out: int) -> float | None:
        p = self.price(spec)
        if p is None:
            return None
        return (tokens_in * p.input_per_million + tokens_out * p.output_per_million) / 1e6


_SESSION: CostSession | None = None


def current() -> CostSession | None:
    return _SESSION


def planning() -> bool:
    """Whether this is a dry run (no request is made: no API key is needed)."""
    return _SESSION is not None and _SESSION.dry_run


@contextlib.contextmanager
def cost_session(prices: dict[str, Price], *, dry_run: bool = False, max_cost: float | None = None,
                 local: Callable[[str], bool] | None = None) -> Iterator[CostSession]:
    """The command's session; ``local`` says which specs run here (free)."""
    global _SESSION
    previous = _SESSION
    _SESSION = CostSession(prices, dry_run=dry_run, max_cost=max_cost)
    if local is not None:
        _SESSION.local = local
    try:
        yield _SESSION
    finally:
        _SESSION = previous


def load_prices(path: str | None, label: str = "--price-table") -> dict[str, Price]:
    """The shipped table, with the entries of the user's file (the Nash-gap --price-table format)
    over it (``label``: where the file was given, for its messages)."""
    prices = dict(SHIPPED_PRICES)
    if path is not None:
        for spec, p in load_price_table(path, label).items():
            prices[spec] = Price(float(p.get("input_per_million", 0)), float(p.get("output_per_million", 0)),
                                 "", path)
    return prices


class _Wrapper(WrappedModel):
    def __init__(self, inner: LanguageModel, session: CostSession) -> None:
        super().__init__(inner)
        self.session = session


@dataclass(frozen=True)
class CallBound:
    """The most one call may take: its requests, their prompt tokens (at about four characters a
    token) and their output tokens (a generation's whole budget, its thinking budget included; one token for each scoring
    request, which asks for one)."""

    requests: int
    tokens_in: int
    tokens_out: int


def call_bound(model: LanguageModel, req: GenerateRequest | ScoreRequest) -> CallBound:
    """What `req` may take at most on `model`: a generation is one request; a scored answer set
    takes the requests its backend says (`LanguageModel.request_prompts`: on an HTTP completions
    endpoint the top-k request, the top-k walk's and one echo per answer)."""
    if isinstance(req, GenerateRequest):
        return CallBound(1, _prompt_tokens(req), model.output_budget(req))
    prompts = model.request_prompts(req)
    return CallBound(len(prompts), sum(approx_tokens(t) for p in prompts for t in p), len(prompts))


class DryRunModel(_Wrapper):
    """Makes no request: counts each call into the session's plan and answers it — a score with
    equal probabilities over the answers, a generation with the request's ``dry_reply`` (a reply
    its parser reads as a legal answer), so a repeated game plays on as a real run would."""

    def __init__(self, inner: LanguageModel, session: CostSession) -> None:
        super().__init__(inner, session)
        self.usage = UsageTotals()  # its own counts: the backend is never called

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        line = self.session.line(self.spec)
        out = []
        for req in requests:
            bound = call_bound(self.inner, req)
            line.calls += bound.requests
            line.tokens_in += bound.tokens_in
            line.tokens_out += bound.tokens_out  # the one token each scoring request asks for
            k = len(req.continuations)
            res = ScoreResult([-math.log(k)] * k, n_tokens=[1] * k, tokens_in=bound.tokens_in)
            self.usage.add_score(res)
            out.append(res)
        return out

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        line = self.session.line(self.spec)
        out = []
        for req in requests:
            tokens, budget = _prompt_tokens(req), self.inner.output_budget(req)
            line.calls += 1
            line.tokens_in += tokens
            line.tokens_out += budget
            res = GenerateResult(req.dry_reply or "", tokens_in=tokens, tokens_out=budget,
                                 finish_reason="stop")
            self.usage.add_generate(res)
            out.append(res)
        return out


#: a provider refusing the key or the account: every call would fail so (Gemini answers a bad key
#: with 400 API_KEY_INVALID, named so by its backend)
REFUSED = ("HTTP 401", "HTTP 403", "HTTP 400 API_KEY_INVALID")
_HALTED: list[str] = []  # why the command was stopped (read by the CLI after the interrupt)


def halted() -> str | None:
    """Why a refusal stopped the command (then forgotten), or None."""
    return _HALTED.pop() if _HALTED else None


async def _interrupt() -> None:
    """Stop the command as Ctrl-C stops it (the run saves what it has; the folder resumes); never
    returns. No signal is sent, so a command whose caller ignores SIGINT (``nohup``, ``cmd &`` in a
    script) stops all the same: asyncio's Ctrl-C handler, where it is installed, is called as the
    signal would call it (it cancels the run, which saves its records and ends in
    KeyboardInterrupt); elsewhere KeyboardInterrupt is raised here, as the signal would raise it."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not signal.default_int_handler:
        handler(signal.SIGINT, None)
        await asyncio.Event().wait()  # cancelled by the interrupt, as an HTTP call in flight is
    raise KeyboardInterrupt


async def _halt(why: str) -> None:
    """Stop the command for `why` (named by the CLI after the interrupt)."""
    if _HALTED:
        await asyncio.Event().wait()  # (already stopping)
    _HALTED.append(why)
    await _interrupt()


class RefusalGuard(_Wrapper):
    """A hosted model whose provider refuses the API key or the account (HTTP 401/403) would fail
    every call the same way: the first such reply stops the command (resumable, no error record
    written for it) instead of filling the folder with errors."""

    async def _checked(self, results: list[Any]) -> list[Any]:
        for r in results:
            if r.error and r.error.startswith(REFUSED):
                await _halt(f"{self.spec}: {r.error.strip()} — the provider refuses every call so; no record "
                            "was written for them")
        return results

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        return await self._checked(await self.inner.score(requests))

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return await self._checked(await self.inner.generate(requests))


def near_miss(spec: str, prices: dict[str, Price]) -> str | None:
    """A price-table key that is `spec` but for surrounding whitespace or letter case (a typo
    that reads as "no price"), or None."""
    want = spec.strip().casefold()
    return next((k for k in prices if k != spec and k.strip().casefold() == want), None)


class CostGuard(_Wrapper):
    """Holds a call whose worst case would take the cost past ``max_cost`` until the calls in flight
    settle; stops the command before one that cannot fit even with none in flight."""

    def __init__(self, inner: LanguageModel, session: CostSession) -> None:
        super().__init__(inner, session)
        if session.price(self.spec) is None:
            near = near_miss(self.spec, session.prices)
            raise InputError(f"--max-cost: no price for {self.spec} in the price table (stratbench's own or "
                             "--price-table); " + (f"the table has {near!r}, which is not {self.spec!r}: spell the "
                                                   "key as the spec" if near else "give one with --price-table FILE"))

    def _worst(self, req: GenerateRequest | ScoreRequest) -> float:
        bound = call_bound(self.inner, req)
        return self.session.cost(self.spec, bound.tokens_in, bound.tokens_out) or 0.0

    async def _stop(self) -> None:
        """The command stops as Ctrl-C stops it (the run saves what it has; the folder resumes)."""
        s = self.session
        if s.tripped:
            await asyncio.Event().wait()  # (already stopping)
        s.tripped = True
        await _interrupt()

    async def _admit(self, worst: float) -> None:
        """Reserve `worst` for a call, in the order the calls came (so the run makes its calls in
        the order of an unlimited run, only later): while what was spent, what the calls in flight
        may still take and `worst` would pass the ceiling, the call waits for those in flight to
        settle (each releases its reservation down to what it took); the command stops only when
        `worst` cannot fit with no call in flight."""
        s = self.session
        assert s.max_cost is not None
        ticket = object()
        s.queue.append(ticket)
        try:
            while True:
                if s.tripped:
                    await self._stop()
                if s.queue[0] is ticket:
                    if s.spent + s.reserved + worst <= s.max_cost:
                        s.reserved += worst
                        s.in_flight += 1
                        return
                    if not s.in_flight:  # nothing in flight to wait for: it can never fit
                        await self._stop()
                await s.changed()
        finally:
            s.queue.remove(ticket)
            s.wake()  # the next in line looks again

    def _settle(self, worst: float) -> None:
        s = self.session
        s.in_flight -= 1
        s.reserved = s.reserved - worst if s.in_flight else 0.0  # (no float residue once all settled)
        s.wake()

    async def _guarded(self, requests: Sequence[Any], call: Any) -> list[Any]:
        s = self.session
        each = [self._worst(r) for r in requests]
        worst = sum(each)
        await self._admit(worst)
        try:
            results = await call(requests)
            for r, bound in zip(results, each):
                if r.cached:
                    continue
                if r.usage_unknown:  # the provider did not say what it took: never free, its worst case
                    s.spent += bound
                    s.unknown += 1
                else:
                    s.spent += self.session.cost(self.spec, r.tokens_in, getattr(r, "tokens_out", 0)) or 0.0
        finally:
            self._settle(worst)  # what it took is in `spent` before the waiting calls look again
        return results

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        return await self._guarded(requests, self.inner.score)

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return await self._guarded(requests, self.inner.generate)
