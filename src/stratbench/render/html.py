"""A tiny HTML builder that escapes by construction.

Why not string formatting: result folders hold model-written text (raw answers, model names, file
contents), and one forgotten ``html.escape`` would let an answer such as ``<script>`` run in the
reader's browser. Here every plain ``str`` is escaped when it becomes part of a page; only values
of type :class:`Html` — produced by this module from literal tags and already-escaped parts — pass
through unchanged. Tag and attribute *names* come from code, never from data.
"""

from __future__ import annotations

import base64
import html as _html
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Html", "el", "esc", "fmt_ci", "fmt_num", "img_data_uri", "join", "kv_table", "pre_json", "table"]


class Html(str):
    """Trusted markup. Only this module creates it from untrusted input (by escaping)."""

    __slots__ = ()


# Unicode's bidirectional embeddings, overrides and isolates (LRE RLE PDF LRO RLO, LRI RLI FSI PDI):
# in model-written text they reorder what the reader sees ("Trojan Source"); they are shown as
# their code points instead. Marks (LRM, RLM) only settle neutral characters and stay.
BIDI_CONTROLS = {c: f"<U+{c:04X}>" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def esc(value: Any) -> Html:
    """Escape anything for text or attribute context (``&<>"'``; bidirectional controls shown as
    ``<U+202E>``); Html passes unchanged."""
    if isinstance(value, Html):
        return value
    text = ("" if value is None else str(value)).translate(BIDI_CONTROLS)
    return Html(_html.escape(text, quote=True))


def _children(parts: Iterable[Any]) -> Iterable[Html]:
    for p in parts:
        if p is None or p is False:
            continue
        if isinstance(p, (list, tuple)):
            yield from _children(p)
        else:
            yield esc(p)


def join(parts: Iterable[Any], sep: str = "") -> Html:
    """Concatenate parts, escaping the plain strings among them."""
    return Html(sep.join(_children(parts)))


_VOID = {"img", "br", "hr", "meta", "link"}


def el(tag: str, *children: Any, **attrs: Any) -> Html:
    """``<tag attrs>children</tag>``. ``class_`` gives ``class``; ``None``/``False`` attrs are
    left out, ``True`` gives a bare attribute; attribute values are escaped like text."""
    if not tag.isalnum():  # names come from code; guard against misuse anyway
        raise ValueError(f"bad tag name {tag!r}")
    out = ["<", tag]
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = name.rstrip("_").replace("_", "-")
        if not name.replace("-", "").isalnum():
            raise ValueError(f"bad attribute name {name!r}")
        out.append(f" {name}" if value is True else f' {name}="{esc(value)}"')
    out.append(">")
    if tag in _VOID:
        return Html("".join(out))
    out.extend(_children(children))
    out.append(f"</{tag}>")
    return Html("".join(out))


def fmt_num(x: Any, key: str = "") -> str:
    """A readable number: percentages (``*_pct``) with one decimal, other floats with 4 significant
    digits, ints as they are; None as an em dash."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        if key.endswith("_pct") or "_pct_" in key:
            return f"{x:.1f}"
        if x == 0:
            return "0"
        if abs(x) >= 1000:
            return f"{x:,.1f}"
        if abs(x) >= 1:
            return f"{x:.3f}"
        if abs(x) >= 1e-3:
            return f"{x:.4f}"
        return f"{x:.3g}"
    return str(x)


def fmt_ci(ci: Any, key: str = "") -> str:
    """``[low, high]`` or an em dash when the interval is missing or malformed."""
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in ci
    ):
        return f"[{fmt_num(float(ci[0]), key)}, {fmt_num(float(ci[1]), key)}]"
    return "—"


def table(
    headers: Iterable[Any], rows: Iterable[Iterable[Any]], *, class_: str | None = None,
    caption: Any = None,
) -> Html:
    """A table; every cell is escaped unless it is Html."""
    head = el("thead", el("tr", [el("th", h) for h in headers]))
    body = el("tbody", [el("tr", [el("td", c) for c in r]) for r in rows])
    return el("table", el("caption", caption) if caption is not None else None, head, body,
              class_=class_)


def img_data_uri(png: bytes, alt: Any, *, title: Any = None) -> Html:
    """An <img> with the PNG embedded, so the page needs no other file."""
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return el("img", src=src, alt=alt, title=title, loading="lazy")


def pre_json(obj: Any, limit: int = 20_000) -> Html:
    """Pretty JSON in a <pre>, truncated for very large objects."""
    text = json.dumps(obj, indent=2, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters)"
    return el("pre", text)


def kv_table(d: Mapping[str, Any]) -> Html:
    """Two-column table of a flat mapping (nested values shown as compact JSON)."""
    rows = []
    for k, v in d.items():
        if isinstance(v, (dict, list)):
            v = json.dumps(v, ensure_ascii=False, default=str)
        elif isinstance(v, float):
            v = fmt_num(v, k)
        rows.append((k, "—" if v is None else v))
    return table(("key", "value"), rows, class_="kv")
