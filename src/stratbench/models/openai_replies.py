"""Reading an OpenAI-compatible server's replies (pure functions): usage counts, the choice, echoed
and top-k log-probabilities (checked: a NaN, an infinity or a log-probability above 0 is a
malformed reply, never a probability), reasoning tokens. Split from
`stratbench.models.openai_api`, whose module docstring describes the protocol."""

from __future__ import annotations

import math
import re
from typing import Any

from stratbench.models.base import (
    reported_count,
)
from stratbench.models.labels import LOGPROB_MAX


class Malformed(Exception):
    """A 2xx JSON response that does not have the shape we need."""


class BadLogprob(Malformed):
    """A log-probability in a response that no probability has: NaN, infinite, or above 0 by more
    than rounding (`labels.LOGPROB_MAX`). The call is an error, never scored otherwise."""


def is_reasoning_family(model: str) -> bool:
    """OpenAI's reasoning models (o1, o1-mini, o3, o4-mini, gpt-5 …, and their fine-tunes
    ``ft:o4-mini-…:org::id``), which take ``max_completion_tokens`` and no sampling parameters of
    their own choosing."""
    name = model.lower().rsplit("/", 1)[-1]
    return re.match(r"^(ft:)?(o\d+(-|:|$)|gpt-5)", name) is not None


def reasoning_tokens(data: Any) -> int | None:
    """``usage.completion_tokens_details.reasoning_tokens`` (OpenAI, DeepSeek), when reported."""
    usage = data.get("usage") if isinstance(data, dict) else None
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    value = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


# -- response parsing (pure functions) ------------------------------------------------------


def usage_int(data: Any, key: str) -> int | None:
    """``usage[key]`` of a reply, checked (`models.base.reported_count`); None when absent or no
    count: the request's usage is unknown."""
    usage = data.get("usage") if isinstance(data, dict) else None
    return reported_count(usage.get(key) if isinstance(usage, dict) else None)


def add_tokens(total: int | None, more: int | None) -> int | None:
    """Prompt tokens of a call's requests together: unknown (None) once one request's is."""
    return None if total is None or more is None else total + more


def prompt_usage(tokens_in: int | None) -> dict[str, Any]:
    """A scored call's usage fields: its prompt tokens, or none known."""
    return {"tokens_in": tokens_in or 0, "usage_unknown": tokens_in is None}


def usage_of(data: Any) -> dict[str, Any]:
    """A generation's usage fields: its prompt and reply tokens, or unknown when either is not
    reported as a count."""
    t_in, t_out = usage_int(data, "prompt_tokens"), usage_int(data, "completion_tokens")
    return {"tokens_in": t_in or 0, "tokens_out": t_out or 0, "usage_unknown": t_in is None or t_out is None}


def server_prompt(data: Any) -> str | None:
    """The prompt as the server rendered it, when it says: a top-level string ``prompt``, or
    llama.cpp's server's ``__verbose.prompt`` (when started with --verbose)."""
    if not isinstance(data, dict):
        return None
    for where in (data, data.get("__verbose")):
        if isinstance(where, dict) and isinstance(where.get("prompt"), str):
            return str(where["prompt"])
    return None


def first_choice(data: Any) -> dict:
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise Malformed("malformed response: no choices")
    return choices[0]


def echo_logprob(data: Any, prompt_len: int, full: str) -> tuple[float, int]:
    """Sum of the echoed log-probs of the tokens spelling full[prompt_len:]."""
    choice = first_choice(data)
    text = choice.get("text")
    if isinstance(text, str) and not text.startswith(full):
        raise Malformed("server did not echo the prompt (echo=true unsupported?)")
    lp = choice.get("logprobs")
    if not isinstance(lp, dict) or not isinstance(lp.get("tokens"), list) or not lp["tokens"]:
        raise Malformed("response has no echoed token log-probs (echo=true with logprobs unsupported?)")
    tokens, token_lps = lp["tokens"], lp.get("token_logprobs")
    if not isinstance(token_lps, list) or len(token_lps) != len(tokens):
        raise Malformed("malformed response: token_logprobs do not match tokens")
    offsets = lp.get("text_offset")
    if not isinstance(offsets, list) or len(offsets) != len(tokens):
        offsets, pos = [], 0  # reconstruct from the token texts
        for t in tokens:
            offsets.append(pos)
            pos += len(t) if isinstance(t, str) else 0
    if not _offsets_index(tokens, offsets, full):
        # offsets that skip special tokens (llama-cpp-python): the continuation's tokens are the
        # last ones before the generated ones
        generated = usage_int(data, "completion_tokens")
        if generated is None or generated > len(tokens):
            raise Malformed("echoed token offsets do not match the prompt")
        return _echo_suffix_logprob(tokens[: len(tokens) - generated], token_lps, full[prompt_len:])
    return _tiled_logprob(tokens, token_lps, offsets, prompt_len, full)


def _tiled_logprob(tokens: list[Any], token_lps: list[Any], offsets: list[Any], prompt_len: int,
                   full: str) -> tuple[float, int]:
    """The summed log-prob of the echoed tokens that spell ``full[prompt_len:]``, which must tile
    it exactly once: the first starts at `prompt_len`, each next one where the one before ends,
    none repeated, none going back, none left out, the last ending at ``len(full)`` (where the
    generated token, if any, starts). Anything else is a malformed reply — never a label counted
    twice or scored by a part of it.

    A *partial* token — one holding U+FFFD, or an empty text (llama-cpp-python echoes the byte
    tokens of a rare character so, each at that character's offset) — stands for bytes of one
    character: its length in characters is not known, so it ends where the next token begins,
    and what it covers beyond its own known characters is at most one character, which is not
    ASCII (no byte of an ASCII character is ever a partial token)."""
    full_len = len(full)
    total, n = 0.0, 0
    pos: int | None = None  # where the next continuation token must start (None: not started)
    partial: tuple[int, int] | None = None  # the token before was partial: (its offset, its known characters)

    def close_partial(end: int) -> None:
        assert partial is not None
        start, known = partial
        span = full[start:end]
        if end < start or len(span) > known + 1 or (len(span) > known and span.isascii()):
            raise Malformed(f"the echoed tokens do not spell the continuation exactly once (a token that holds part "
                            f"of a character at offset {start} would cover {span[:40]!r})")

    for tok, tok_lp, off in zip(tokens, token_lps, offsets):
        if not isinstance(off, int) or isinstance(off, bool):
            raise Malformed("malformed response: bad text_offset")
        if pos is None:
            if off < prompt_len:
                continue
            if off >= full_len:
                break  # nothing of the continuation (named below)
            if off != prompt_len:
                raise Malformed("continuation does not start at a token boundary")
            pos = prompt_len
        if off >= full_len and pos == full_len and partial is None:
            break  # the generated token (max_tokens=1), ignored
        if partial is not None:
            close_partial(min(off, full_len))
            if off >= full_len:
                partial = None
                pos = full_len
                break  # the generated token
            pos = off
        if off != pos:
            why = (f"a token at offset {off}, before the end of the one before it ({pos}): a repeated or earlier "
                   "offset" if off < pos else f"no token covers offsets {pos} to {off - 1}")
            raise Malformed(f"the echoed tokens do not spell the continuation exactly once ({why})")
        if not isinstance(tok, str):
            raise Malformed("malformed response: a continuation token is not a text")
        total += _logprob(tok_lp, "a continuation token")
        n += 1
        if not tok or "\ufffd" in tok:
            partial = (off, len(tok.replace("\ufffd", "")))
            pos = off
        else:
            partial = None
            pos = off + len(tok)
        if pos > full_len:
            raise Malformed("a token runs past the end of the continuation")
    if pos is None:
        # either a token covers the boundary and the whole continuation, or nothing was echoed
        if any(isinstance(o, int) and o < prompt_len for o in offsets):
            raise Malformed("continuation does not start at a token boundary")
        raise Malformed("server did not echo the continuation's tokens (echo=true unsupported?)")
    if partial is not None:
        close_partial(full_len)
    elif pos != full_len:
        raise Malformed(f"the echoed tokens do not spell the continuation exactly once (they end at offset "
                         f"{pos}, the continuation at {full_len})")
    return total, n


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _logprob(x: Any, what: str) -> float:
    """A log-probability the server returned for `what`, checked: Malformed when there is none
    (null, not a number), BadLogprob when it is no log-probability (NaN, infinite, above 0)."""
    if not _is_number(x):
        raise Malformed(f"server returned no log-prob for {what}")
    try:
        value = float(x)
    except OverflowError:  # a JSON integer no float holds (hundreds of digits)
        value = -math.inf if x < 0 else math.inf
    if not math.isfinite(value) or value > LOGPROB_MAX:
        shown = repr(value) if isinstance(x, float) or math.isfinite(value) else "an integer too large for a float"
        raise BadLogprob(f"server returned the log-probability {shown} for {what}: not a probability "
                          "(a log-probability is finite and at most 0)")
    return value


def _offsets_index(tokens: list[Any], offsets: list[Any], full: str) -> bool:
    """Whether the echoed offsets index `full` (each token's text is found at its offset)."""
    for tok, off in zip(tokens, offsets):
        if not isinstance(off, int) or not isinstance(tok, str):
            continue
        if off >= len(full) or not tok or "\ufffd" in tok:
            continue
        if not full.startswith(tok, off):
            return False
    return True


def _echo_suffix_logprob(tokens: list[Any], token_lps: list[Any], cont: str) -> tuple[float, int]:
    """The last prompt tokens, which must spell `cont` exactly."""
    spelled, total, n = "", 0.0, 0
    for i in range(len(tokens) - 1, -1, -1):
        if len(spelled) >= len(cont):
            break
        tok = tokens[i]
        if not isinstance(tok, str):
            raise Malformed("malformed response: a token is not a string")
        spelled, total, n = tok + spelled, total + _logprob(token_lps[i], "a continuation token"), n + 1
    if spelled == cont and n:
        return total, n
    if len(spelled) > len(cont) and spelled.endswith(cont):
        raise Malformed("continuation does not start at a token boundary")
    raise Malformed("the echoed tokens do not spell the continuation")


def completion_top_logprobs(data: Any) -> dict[str, float]:
    """token text -> log-prob at the first generated position of a completions response."""
    lp = first_choice(data).get("logprobs")
    top = lp.get("top_logprobs") if isinstance(lp, dict) else None
    if isinstance(top, list) and top and (isinstance(top[0], list) or (isinstance(top[0], dict)
                                                                      and {"token", "logprob"} <= set(top[0]))):
        # (the chat API's shape: read as a map, "token" and "logprob" would be two token texts;
        # the call's error, named as such, not an echo's failure after it)
        raise BadLogprob("completion response gives top_logprobs as {token, logprob} entries, not the completions "
                        "API's {token: logprob} map at each position")
    if not isinstance(top, list) or not top or not isinstance(top[0], dict):
        raise Malformed("completion response has no top_logprobs")
    out: dict[str, float] = {}
    for tok, value in top[0].items():
        if isinstance(tok, str) and _is_number(value):
            out[tok] = _logprob(value, f"the top-k token {tok!r}")
    return out


def _check_scored_message(message: dict[str, Any]) -> None:
    """Malformed unless the first generated position whose log-probs a chat score reads is the
    answer's first token: a refusal (the message's field or a content part), a tool call, or
    reasoning (a reasoning parser's ``reasoning_content``/``reasoning``, a thinking content part:
    the token was the thinking's, the answer had not begun) make the reply no answer, as generation
    reads the same message (fuzz 15 D2, fuzz 16 A D1-D2)."""
    refusal = message.get("refusal")
    if refusal and not (isinstance(refusal, str) and not refusal.strip()):
        raise Malformed("invalid reply: the message is a refusal, so its log-probs are not an answer's")
    if message.get("tool_calls") or message.get("function_call"):
        raise Malformed("invalid reply: the message holds a tool call, so its log-probs are not an answer's")
    if any(message.get(k) not in (None, "", [], {}) for k in ("reasoning_content", "reasoning")):
        raise Malformed("invalid reply: the message is reasoning, so its first token's log-probs are not the "
                        "answer's (score a reasoning model with --policy sample)")
    content = message.get("content")
    if not isinstance(content, (str, list)) or content == []:
        # (no answer text: a vLLM reasoning parser's reply at max_tokens=1 whose token was "<think>")
        raise Malformed("invalid reply: the message has no text content, so its log-probs are not an answer's")
    for i, part in enumerate(content if isinstance(content, list) else []):
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, str) or (kind in ("text", "output_text") and isinstance(part.get("text"), str)):
            continue
        if kind == "refusal":
            raise Malformed(f"invalid reply: content part {i} is a refusal, so the log-probs are not an answer's")
        if kind in ("thinking", "reasoning"):
            raise Malformed(f"invalid reply: content part {i} is reasoning, so the first token's log-probs are not "
                            "the answer's (score a reasoning model with --policy sample)")
        what = f"of type {kind!r}" if isinstance(kind, str) else "no text"
        raise Malformed(f"invalid reply: content part {i} is {what:.80}, which is not read, so the log-probs are "
                        "not an answer's")
    text = content if isinstance(content, str) else "".join(p if isinstance(p, str) else p["text"] for p in content)
    if not text:  # ("" or empty text parts: the one token was no text, e.g. a "<think>" a parser took away)
        raise Malformed("invalid reply: the message's text is empty, so its log-probs are not an answer's")


def chat_top_logprobs(data: Any) -> dict[str, float]:
    """token text -> log-prob at the first generated position (duplicates combined)."""
    choice = first_choice(data)
    message = choice.get("message")
    if isinstance(message, dict):
        _check_scored_message(message)
    lp = choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        raise Malformed("chat response has no logprobs (the server may not support logprobs)")
    first = content[0]
    entries = first.get("top_logprobs")
    if not isinstance(entries, list) or not entries:
        raise Malformed("chat response has no top_logprobs")
    out: dict[str, float] = {}
    for i, e in enumerate(entries):
        # an entry that cannot be read makes the reply malformed: skipping it would read its token
        # as outside the top-20 (probability 0), which the server never said
        if not isinstance(e, dict) or not isinstance(e.get("token"), str):
            raise Malformed(f"malformed response: top_logprobs entry {i} has no token text")
        value = e.get("logprob")
        if not _is_number(value):
            raise Malformed(f"malformed response: top_logprobs entry {i} ({e['token'][:40]!r}) has no "
                             "numeric logprob")
        tok = e["token"]
        lp = _logprob(value, f"the top-k token {tok!r}")
        out[tok] = lp if tok not in out else _logprob(_logaddexp(out[tok], lp), f"the top-k token {tok!r} (its entries together)")
    return out


def _logaddexp(a: float, b: float) -> float:
    if a == float("-inf"):
        return b
    if b == float("-inf"):
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))
