"""Model answers of the Nash-gap suite: mixed strategies, and whether an answer is *strict*.

Mixed strategies: a JSON object {label: probability} or a JSON list, the last one wins. Parsed with
`json.loads` (never `eval`). Non-finite numbers (NaN, Infinity), negative values and all-zero
vectors are rejected with a reason. Fractions such as 1/3 are read exactly. A vector must read as
probabilities (every value in 0..1) or as percentages (values in 0..100 summing to 100, up to
rounding); anything else — three 8-digit numbers summing to millions, weights like {2, 6} — is not
a strategy and is refused, although it could be rescaled. A probability vector that does not sum to
1 is rescaled, but the decision records that it was (`renormalized`, `raw_sum`), so an answer like
{0.9, 0.9, 0.9} is visible in the statistics instead of silently passing as uniform.

Strict answers (lm-eval's strict-match, as opposed to flexible-extract): the reply's last non-empty
line is exactly the requested format — ``Action: X`` (pure), or a JSON object mapping every action
to a probability, summing to 1 within 1e-6 (mixed) — and the reply was not cut by the token budget.
Everything else that parses is flexible (:func:`parse_kind`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

SUM_TOL = 1e-9
STRICT_SUM_TOL = 1e-6  # a strict mixed answer sums to 1 within this
PERCENT_SUM_TOL = 1.0  # percentages sum to 100 within this (33 + 33 + 33 = 99)
_CANDIDATE = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]")
_FRACTION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)(?![\w.])")
_PERCENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*%")
_KEY_PREFIX = re.compile(r"^(?:action|row|option)\s*", re.I)


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


@dataclass(frozen=True)
class DistributionParse:
    probs: list[float] | None
    error: str | None = None
    renormalized: bool = False
    raw_sum: float | None = None

    @property
    def ok(self) -> bool:
        return self.probs is not None


def _fraction_to_decimal(m: re.Match[str]) -> str:
    den = float(m.group(2))
    return repr(float(m.group(1)) / den) if den != 0 else m.group(0)


def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        try:
            return float(x)
        except OverflowError:  # an integer beyond float range
            return math.inf
    if isinstance(x, str):
        try:
            return float(x.strip().rstrip("%")) / (100.0 if x.strip().endswith("%") else 1.0)
        except ValueError:
            return None
    return None


def _vector(obj: Any, labels: Sequence[str]) -> list[float] | str | None:
    """The probability vector `obj` describes, an error string, or None if it is not a strategy."""
    n = len(labels)
    if isinstance(obj, list):
        if len(obj) != n:
            return None
        vals = [_number(x) for x in obj]
        if any(v is None for v in vals):
            return None
        return vals  # type: ignore[return-value]
    if isinstance(obj, dict) and obj:
        lowered = {s.lower(): k for k, s in enumerate(labels)}
        vec = [0.0] * n
        for key, val in obj.items():
            k = _KEY_PREFIX.sub("", str(key).strip()).strip()
            idx = lowered.get(k.lower())
            if idx is None:
                return None
            v = _number(val)
            if v is None:
                return f"probability for {key!r} is not a number"
            vec[idx] = v
        return vec
    return None


def parse_distribution(text: str | None, labels: Sequence[str]) -> DistributionParse:
    """The final mixed strategy stated in `text` over `labels`, normalised, or a reason."""
    if text is None or not text.strip():
        return DistributionParse(None, "empty response")
    cleaned = _PERCENT.sub(lambda m: repr(float(m.group(1)) / 100.0), text)
    cleaned = _FRACTION.sub(_fraction_to_decimal, cleaned)
    for m in reversed(list(_CANDIDATE.finditer(cleaned))):
        chunk = m.group(0)
        try:
            obj = json.loads(chunk, parse_constant=_reject_constant)
        except _NonFinite as e:
            return DistributionParse(None, f"non-finite probability {e}")
        except ValueError:  # invalid JSON, or an integer beyond Python's digit limit
            try:  # single-quoted keys are common: {'0': 0.5, '1': 0.5}
                obj = json.loads(chunk.replace("'", '"'), parse_constant=_reject_constant)
            except _NonFinite as e:
                return DistributionParse(None, f"non-finite probability {e}")
            except ValueError:
                continue
        vec = _vector(obj, labels)
        if vec is None:
            continue
        if isinstance(vec, str):
            return DistributionParse(None, vec)
        if not all(math.isfinite(v) for v in vec):
            return DistributionParse(None, "non-finite probability")
        if min(vec) < 0:
            return DistributionParse(None, f"negative probability {min(vec):g}")
        try:
            total = math.fsum(vec)
        except OverflowError:
            total = math.inf
        if not math.isfinite(total):
            return DistributionParse(None, "probabilities too large (sum overflows)")
        if total <= 0:
            return DistributionParse(None, "probabilities sum to 0")
        if max(vec) > 1.0 + SUM_TOL:  # not probabilities: percentages summing to 100, or nothing
            if max(vec) > 100.0 + SUM_TOL or abs(total - 100.0) > PERCENT_SUM_TOL:
                return DistributionParse(
                    None, f"values {_brief(vec)} are neither probabilities (each 0..1) nor percentages "
                    "(summing to 100)", raw_sum=total)
            probs = [v / total for v in vec]
            return DistributionParse(probs, None, abs(total - 100.0) > SUM_TOL * 100, total)
        probs = [v / total for v in vec]
        renorm = abs(total - 1.0) > SUM_TOL
        return DistributionParse(probs, None, renorm, total)
    return DistributionParse(None, f"no probability vector over {len(labels)} actions found")


def _brief(vec: Sequence[float]) -> str:
    shown = ", ".join(f"{v:g}" for v in vec[:4])
    return "[" + shown + (", ...]" if len(vec) > 4 else "]")


# -- strict answers -----------------------------------------------------------------------------


def last_line(text: str | None) -> str:
    """The reply's last non-empty line, stripped ("" for an empty reply)."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def strict_action(text: str | None, labels: Sequence[str], action: int) -> bool:
    """The reply's last non-empty line is exactly ``Action: X``, X the parsed action's label."""
    return last_line(text) == f"Action: {labels[action]}"


def strict_distribution(text: str | None, labels: Sequence[str]) -> bool:
    """The reply's last non-empty line is exactly a JSON object mapping every label to a number
    in 0..1, the numbers summing to 1 within 1e-6 (no percentages, fractions or quotes)."""
    line = last_line(text)
    if not (line.startswith("{") and line.endswith("}")):
        return False
    try:
        obj = json.loads(line, parse_constant=_reject_constant)
    except ValueError:  # not JSON (or NaN/Infinity: _NonFinite is a ValueError)
        return False
    if not isinstance(obj, dict) or set(obj) != set(labels) or len(obj) != len(labels):
        return False
    vals = list(obj.values())
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1
               for v in vals):
        return False
    return abs(math.fsum(vals) - 1.0) <= STRICT_SUM_TOL


def parse_kind(text: str | None, labels: Sequence[str], mode: str, action: int | None,
               finish_reason: str | None) -> str:
    """"strict" or "flexible" for an answer that parsed: strict only when its last line is the
    requested format exactly and the reply was not cut at the token limit."""
    if finish_reason == "length":
        return "flexible"
    if mode == "pure":
        ok = action is not None and strict_action(text, labels, action)
    else:
        ok = strict_distribution(text, labels)
    return "strict" if ok else "flexible"


@dataclass(frozen=True)
class SampledAnswer:
    """What a generated reply says, as a trial records it: ``parsed`` with the action (pure) or
    the strategy (mixed) in the order shown and the answer's kind, or ``parse_failed`` with why."""

    status: str
    action: int | None = None
    strategy: list[float] | None = None
    parse: str | None = None
    error: str | None = None
    renormalized: bool = False
    raw_sum: float | None = None


def read_sampled(text: str | None, labels: Sequence[str], mode: str, finish_reason: str | None) -> SampledAnswer:
    """A reply read as a sampled trial reads it (the player, and a record read back: the same
    text must give the same answer)."""
    from stratbench.parsing import parse_action

    if mode == "pure":
        p = parse_action(text, labels)
        if not p.ok:
            return SampledAnswer("parse_failed", error=p.error)
        return SampledAnswer("parsed", action=p.action, parse=parse_kind(text, labels, "pure", p.action, finish_reason))
    q = parse_distribution(text, labels)
    if not q.ok:
        return SampledAnswer("parse_failed", error=q.error, raw_sum=q.raw_sum)
    return SampledAnswer("parsed", strategy=q.probs, parse=parse_kind(text, labels, "mixed", None, finish_reason),
                         renormalized=q.renormalized, raw_sum=q.raw_sum)
