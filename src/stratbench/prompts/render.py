"""Rendering pieces shared by every suite's prompts: number formatting, tables, choice lists."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def format_payoff(x: float, decimals: int) -> str:
    s = f"{x:.{decimals}f}"
    return "0" + s[2:] if s.startswith("-0") and float(s) == 0 else s


def join_choices(labels: Sequence[str], conj: str = "or") -> str:
    """"0", "0 or 1", "0, 1 or 2": a choice list correct for any number of actions."""
    labels = list(labels)
    if len(labels) == 1:
        return labels[0]
    return ", ".join(labels[:-1]) + f" {conj} " + labels[-1]


def payoff_table(
    payoff: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    decimals: int,
    corner: str = "",
) -> str:
    """A plain-text grid with aligned columns: rows are the row player's actions."""
    cells = [[format_payoff(float(x), decimals) for x in row] for row in payoff]
    header = [corner] + list(col_labels)
    body = [[r] + c for r, c in zip(row_labels, cells)]
    widths = [max(len(line[k]) for line in [header] + body) for k in range(len(header))]
    fmt = lambda line: " | ".join(s.rjust(w) for s, w in zip(line, widths))  # noqa: E731
    sep = "-+-".join("-" * w for w in widths)
    return "\n".join([fmt(header), sep] + [fmt(line) for line in body])
