"""CSV cells a spreadsheet opens as text, never as a formula.

Result CSVs hold text from users and models (model labels, player names, action labels). A cell
that starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or carriage return) is run as a formula by
spreadsheet programs — ``=HYPERLINK(...)`` as a model label would be a live link in runs.csv — so
such a text cell gets a leading ``'`` (OWASP's advice on CSV injection). Only text is touched:
numbers, and text that is a plain number (``-0.5``, ``+1e3``, as tables write formatted floats),
are written as they are, so numeric columns stay numeric. Every CSV writer in stratbench passes
its rows through :func:`csv_row` (or its values through :func:`csv_cell`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["FORMULA_STARTS", "csv_cell", "csv_row"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


#: a number as a spreadsheet reads one: sign, digits, a decimal point, an exponent — not Python's
#: wider float() (``-inf``, ``nan``, ``-1_0``), which a spreadsheet would run as a formula
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")  # (ASCII digits: \d is any script's)


def _plain_number(text: str) -> bool:
    """Whether a text is a plain decimal number (no spaces around it)."""
    return _NUMBER.fullmatch(text) is not None


def csv_cell(value: Any) -> Any:
    """The value as a CSV cell: a text that a spreadsheet would run as a formula, quoted with a
    leading ``'``; anything else (numbers, None, plain-number text) unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _plain_number(value):
        return "'" + value
    return value


def csv_row(values: Iterable[Any]) -> list[Any]:
    """A row of CSV cells (:func:`csv_cell` on each)."""
    return [csv_cell(v) for v in values]
