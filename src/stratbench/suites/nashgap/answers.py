"""Mixed-strategy answers: a JSON object {label: probability} or a JSON list, the last one wins.

Parsed with `json.loads` (never `eval`). Non-finite numbers (NaN, Infinity), negative values and
all-zero vectors are rejected with a reason. Fractions such as 1/3 are read exactly. A vector that
does not sum to 1 is rescaled, but the decision records that it was (`renormalized`, `raw_sum`), so
an answer like {0.9, 0.9, 0.9} is visible in the statistics instead of silently passing as uniform.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

SUM_TOL = 1e-9
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
        probs = [v / total for v in vec]
        renorm = abs(total - 1.0) > SUM_TOL
        return DistributionParse(probs, None, renorm, total)
    return DistributionParse(None, f"no probability vector over {len(labels)} actions found")
