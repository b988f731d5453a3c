"""The one interface every language-model backend implements.

Two operations, as in lm-evaluation-harness: `score` (log-probabilities of candidate continuations
of a prompt — how raw models are evaluated exactly, with no sampling and no parsing) and
`generate` (text completion). Both are async and batched, as inspect_ai's providers are, so API
backends run calls concurrently and local backends batch forward passes.

Backends never raise for a failed call: after their retries, a result carries `error` and no
value, and the caller records it as an error. Nothing downstream ever invents a substitute.
"""

from __future__ import annotations

import abc
import asyncio
import re
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

Message = tuple[str, str]
"""One turn of a conversation: (role, content), role "system", "user" or "assistant"."""


def ends_answer(piece: str) -> bool:
    """Whether a token whose text is ``piece`` ends an answer before it: anything but a token that
    begins with a letter or digit ("0" after "1" makes "10"; " 0", ".", "\\n" or the end of text
    do not). A token that begins an incomplete UTF-8 character (shown as U+FFFD) may begin a
    letter: it does not end the answer."""
    if not piece:
        return True
    return not (piece[0].isalnum() or piece[0] == "\ufffd")


#: the most tokens one call's prompt or reply can be said to hold: far above any model's context
#: window (millions), far below what turns a sum of them into a float overflow
MAX_REPORTED_TOKENS = 10**9

_SURROGATE = re.compile("[\ud800-\udfff]")


def reported_count(value: Any) -> int | None:
    """A token count as a provider reported it, checked once for every backend: an integer (not a
    bool) from 0 to `MAX_REPORTED_TOKENS`; None for anything else (absent, negative, a float, a
    string, absurdly large) — a count no call has, so the call's usage is unknown, never guessed."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_REPORTED_TOKENS:
        return value
    return None


def clean_text(text: str) -> str:
    """`text` with every lone surrogate (a JSON reply may hold ``"\\udc80"``, which no UTF-8 file
    can hold) replaced by U+FFFD, so that a reply can always be written, cached and read back."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


class _Reply:
    """What every backend's result — and every answer read back from the response cache — passes
    through as it is built or changed (the one place for all of them): its texts are written as
    given but with lone surrogates replaced (`clean_text`), and its token counts are checked
    (`reported_count`). A count that is no count is stored as 0 with ``usage_unknown`` set, so
    the call is never free to ``--max-cost`` nor counted as such in run.json, and never negative
    or a crash in a sum; the answer itself stands. ``usage_unknown`` once set stays set."""

    _COUNTS: ClassVar[tuple[str, ...]] = ("tokens_in",)
    usage_unknown: bool

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._COUNTS:
            count = reported_count(value)
            if count is None:
                object.__setattr__(self, "usage_unknown", True)
                value = 0
            else:
                value = count
        elif name == "tokens_reasoning":  # a part of tokens_out, where known: never more than the whole
            value = None if value is None else reported_count(value)
            if value is not None and value > getattr(self, "tokens_out", 0):
                value = None
        elif name == "usage_unknown":
            value = bool(value) or bool(getattr(self, "usage_unknown", False))
        elif isinstance(value, str):
            value = clean_text(value)
        super().__setattr__(name, value)

    def redact(self, secrets: Sequence[str]) -> None:
        """Mask the backend's known secrets (`stratbench.redact.secret_forms`) in every text of
        this result — the reply, its reasoning, finish reason, rendered prompt and error — before
        anything stores it: a server that echoes the request's Authorization header in a
        successful reply must not get the key or password written to a record or the cache.

        What the model said (the reply, its reasoning, the rendered prompt) is masked only for
        secrets of `redact.CONTENT_MIN_SECRET` characters or more: a shorter one is a placeholder
        local servers are given (``EMPTY``, ``none``, ``test``) or an ordinary word, and masking it
        would rewrite the answer ("Action: 1" → "***: 1"); the error message is masked for all."""
        from stratbench.redact import CONTENT_MIN_SECRET, redact_known

        if not secrets:
            return
        long_ones = [x for x in secrets if len(x) >= CONTENT_MIN_SECRET]
        for name, value in list(vars(self).items()):
            if isinstance(value, str):
                setattr(self, name, redact_known(value, secrets if name == "error" else long_ones))


@dataclass(frozen=True)
class ScoreRequest:
    """log P(continuation | prompt) for each continuation (e.g. each legal action label).

    With `messages` (a chat model scored exactly: lm-eval's multiple-choice scoring of chat
    models), the backend renders the conversation with the model's chat template up to the start
    of the assistant's turn, appends `prompt` (a fixed answer stem, e.g. "Action: ") and scores
    the continuations after it.

    `closed`: each continuation is a whole answer — its log-probability includes log P(the next
    token ends the answer), i.e. does not begin with a letter or digit (`ENDS_ANSWER`). Without
    it P("1") also counts "10", "11", ...; with it the events are disjoint, so the probabilities of
    any set of answers sum to at most 1 (`stratbench.models.labels`). Backends that can compute it
    set `supports_closed_scoring`."""

    prompt: str
    continuations: tuple[str, ...]
    messages: tuple[Message, ...] = ()
    closed: bool = False


@dataclass
class ScoreResult(_Reply):
    logprobs: list[float] | None  # summed over each continuation's tokens; None on error
    n_tokens: list[int] | None = None  # tokens per continuation (1 = single-token fast path)
    tokens_in: int = 0  # prompt tokens actually evaluated (after prefix reuse / caching)
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None
    rendered: str | None = None  # chat scoring: the exact text scored (template + stem)
    # the provider did not say (or said no count) how many tokens a request of the call took
    usage_unknown: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and self.logprobs is not None


@dataclass(frozen=True)
class GenerateRequest:
    prompt: str
    max_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    seed: int | None = None
    sample_index: int = 0  # distinguishes repeated samples of one prompt (and their cache keys)
    chat: bool = False  # wrap the prompt as a user message (chat endpoints / when asked)
    system: str | None = None
    # a whole conversation (chat): system, user and assistant turns, the user's last; when given
    # it is what the model sees (`prompt`/`system` stay the flattened text records hash)
    messages: tuple[Message, ...] = ()
    # a dry run's reply (`stratbench.models.costs`): one the caller's parser reads as a legal
    # answer, so a planned repeated game goes on as a real one; never sent, never in a cache key
    dry_reply: str | None = None


@dataclass
class GenerateResult(_Reply):
    text: str | None
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    cached: bool = False
    finish_reason: str | None = None  # "stop", or "length" when the token budget cut the reply
    error: str | None = None
    rendered: str | None = None  # chat: the prompt as the model saw it, after its chat template
    # a reasoning model's thinking, apart from the answer in `text` (the server's
    # reasoning_content, or the reply's <think> block: see stratbench.models.reasoning)
    reasoning: str | None = None
    tokens_reasoning: int | None = None  # reasoning tokens, where the server reports them (billed)
    usage_unknown: bool = False  # the provider's token counts were absent or no counts (_Reply)

    _COUNTS: ClassVar[tuple[str, ...]] = ("tokens_in", "tokens_out")

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


@dataclass
class UsageTotals:
    calls: int = 0
    cache_hits: int = 0
    # requests the response cache failed to serve or store (it could not be read or written, or
    # its entry was invalid): the answers stand, they only cost a call or go unstored
    cache_failures: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    # calls whose provider reported no usable token counts: not in the tokens (nor in a cost made
    # from them), counted here so that such a total is never read as complete
    usage_unknown: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def add_score(self, r: ScoreResult) -> None:
        if r.cached:  # a cache hit costs no call and no tokens
            self.cache_hits += 1
            return
        self.calls += 1
        self.errors += r.error is not None
        self.tokens_in += r.tokens_in
        self.usage_unknown += r.usage_unknown

    def add_generate(self, r: GenerateResult) -> None:
        if r.cached:
            self.cache_hits += 1
            return
        self.calls += 1
        self.errors += r.error is not None
        self.tokens_in += r.tokens_in
        self.tokens_out += r.tokens_out
        self.usage_unknown += r.usage_unknown

    def as_dict(self) -> dict[str, Any]:
        # only when any: cache failures, calls of unknown usage
        failures = {"cache_failures": self.cache_failures} if self.cache_failures else {}
        unknown = {"usage_unknown": self.usage_unknown} if self.usage_unknown else {}
        return {"calls": self.calls, "cache_hits": self.cache_hits, **failures, "errors": self.errors,
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out, **unknown, **self.extra}


class LanguageModel(abc.ABC):
    """A backend. `spec` is what the user typed (`embedded`, `hf:path`, `openai:gpt-4o-mini`, ...)."""

    spec: str = ""
    supports_logprobs: bool = True  # can `score` run at all
    supports_chat: bool = False  # can it take conversations (a chat template, or a chat endpoint)
    supports_chat_scoring: bool = False  # can `score` take `messages` (the template is known here)
    supports_closed_scoring: bool = False  # can `score` take `closed` requests (full next-token rows)
    chat_problem: str | None = None  # why a chat template the model came with was refused, if it was
    #: the version of how this backend reads a generation reply into a result: raised when a fix
    #: reads the same reply differently (a refusal, a part not read), so the response cache — which
    #: stores the reading, not the reply — asks again instead of serving the old reading
    reply_reader: int = 1
    #: the same for a score reply (raised where a fix reads the same scoring reply differently)
    score_reader: int = 1

    def __init__(self) -> None:
        self.usage = UsageTotals()

    @abc.abstractmethod
    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]: ...

    def request_prompts(self, req: ScoreRequest) -> list[list[str]]:
        """The requests (HTTP requests, forward passes) that scoring `req` takes at most, each as
        the texts its prompt is made of: what a cost plan and ``--max-cost`` count
        (`stratbench.models.costs`). One, of the prompt and the conversation, unless a backend
        says otherwise (an HTTP completions endpoint takes several)."""
        return [[req.prompt, *(c for _, c in req.messages)]]

    def output_budget(self, req: GenerateRequest) -> int:
        """The most output tokens generating `req` may bill: its ``max_tokens``, unless a backend
        adds a thinking budget of its own (Anthropic's and Gemini's --reasoning-effort)."""
        return req.max_tokens

    @abc.abstractmethod
    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]: ...

    def take_traits(self, inner: "LanguageModel") -> None:
        """A wrapper (the response cache, the reasoning split) says what its backend can do."""
        self.spec = inner.spec
        self.supports_logprobs = inner.supports_logprobs
        self.supports_chat = inner.supports_chat
        self.supports_chat_scoring = inner.supports_chat_scoring
        self.supports_closed_scoring = inner.supports_closed_scoring
        self.chat_problem = inner.chat_problem
        self.reply_reader = inner.reply_reader
        self.score_reader = inner.score_reader

    def describe(self) -> dict[str, Any]:
        """Identification for run.json and cache keys. Never includes secrets."""
        return {"spec": self.spec}

    def check_chat(self, scoring: bool = False) -> None:
        """Before a run that sends conversations (``--chat``): one InputError line when this model
        cannot take them (no chat template), instead of an error in every record."""
        from stratbench.errors import InputError

        if not self.supports_chat:
            raise InputError(f"{self.spec}: {self.chat_problem or 'this model has no chat template'}; run it "
                             "without --chat (raw completion prompts)")
        if scoring and not self.supports_chat_scoring:
            raise InputError(f"{self.spec}: exact choice scoring needs the model's chat template here; "
                             "use a local model (gguf:, hf:, embedded-instruct), give an HTTP model its "
                             "template with --chat-template, or use --policy sample")

    async def aclose(self) -> None:
        """Release connections / memory."""


class WrappedModel(LanguageModel):
    """A backend seen through another (the reasoning split, a dry run, the cost ceiling): its
    traits, identity, usage counters, chat checks and own attributes are the inner backend's;
    subclasses say what happens to the calls."""

    def __init__(self, inner: LanguageModel) -> None:
        self.inner = inner
        self.usage = inner.usage
        self.take_traits(inner)

    def __getattr__(self, name: str) -> Any:  # a backend's own attributes (e.g. its tokenizer)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def request_prompts(self, req: ScoreRequest) -> list[list[str]]:
        return self.inner.request_prompts(req)

    def output_budget(self, req: GenerateRequest) -> int:
        return self.inner.output_budget(req)

    def check_chat(self, scoring: bool = False) -> None:
        self.inner.check_chat(scoring)

    async def aclose(self) -> None:
        await self.inner.aclose()


class LocalModel(LanguageModel):
    """A backend that computes in this process (llama.cpp, transformers): the blocking work runs
    in a worker thread so the event loop stays free, one batch at a time behind a lock."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    @abc.abstractmethod
    def _score_batch(self, requests: list[ScoreRequest]) -> list[ScoreResult]: ...

    @abc.abstractmethod
    def _generate_batch(self, requests: list[GenerateRequest]) -> list[GenerateResult]: ...

    def _locked(self, fn: Any, requests: list[Any]) -> list[Any]:
        with self._lock:
            return fn(requests)

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        results = await asyncio.to_thread(self._locked, self._score_batch, list(requests))
        for r in results:
            self.usage.add_score(r)
        return results

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        results = await asyncio.to_thread(self._locked, self._generate_batch, list(requests))
        for r in results:
            self.usage.add_generate(r)
        return results
