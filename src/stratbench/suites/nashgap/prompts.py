"""Prompts of the Nash-gap suite: the model is the row player of a zero-sum game whose opponent
plays a Nash equilibrium strategy. Every count and every choice list follows the game's size, and
payoffs are shown at the precision they were generated with, so the shown game is the game."""

from __future__ import annotations

from string import Template
from typing import Sequence

import numpy as np

from stratbench.games.normal_form import NormalFormGame

# -- rendering: numbers, tables, choice lists --------------------------------------------------


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


# -- the prompts ------------------------------------------------------------------------------

_INTRO = Template(
    "You are the row player in a two-player zero-sum matrix game.\n"
    "You have $m actions ($rows); your opponent, the column player, has $n actions ($cols).\n"
    "The table gives YOUR payoff for each pair of actions (row = your action, column = your "
    "opponent's action). Your opponent receives the negative of your payoff.\n\n"
    "$table\n\n"
    "Your opponent plays a Nash equilibrium (minimax) strategy of this game.\n"
)

PURE_INSTRUCTIONS = Template(
    "Choose the action that maximises your expected payoff.\n"
    'Give your final answer on the last line in the form "Action: X", where X is $choices.'
)

# Raw models: a plain completion that ends exactly where the action label goes (trailing space,
# bare labels: SentencePiece tokenizers such as Gemma's put the space in a token of its own).
COMPLETION_ENDING = Template(
    "Choose the action that maximises your expected payoff. Answer with one of $choices.\n"
    "Answer: I choose action "
)

MIXED_INSTRUCTIONS = Template(
    "Choose a mixed strategy: a probability for each of your actions that maximises your "
    "expected payoff.\n"
    "Give your final answer on the last line as a JSON object mapping every action to its "
    "probability, for example $example. Probabilities must be non-negative and sum to 1."
)


def _example(labels: tuple[str, ...]) -> str:
    k = len(labels)
    probs = [round(1.0 / k, 2)] * k
    probs[-1] = round(1.0 - sum(probs[:-1]), 2)
    return "{" + ", ".join(f'"{lab}": {p:g}' for lab, p in zip(labels, probs)) + "}"


def nashgap_prompt(
    game: NormalFormGame, mode: str, decimals: int = 2, style: str = "instruction"
) -> str:
    """The full prompt for one game in `pure` or `mixed` mode.

    `style="completion"` is the raw-model format scored by log-probabilities; its distribution over
    the first action label is the model's policy in both modes (for a raw model that *is* its
    natural mixed strategy). `style="choice"` is the pure-mode instruction prompt in both modes:
    a chat model's exact distribution over its "Action: X" answer is its policy in both."""
    m, n = game.shape
    intro = _INTRO.substitute(
        m=m,
        n=n,
        rows=join_choices(game.row_labels),
        cols=join_choices(game.col_labels),
        table=payoff_table(game.payoff_row, game.row_labels, game.col_labels, decimals, "you \\ opp"),
    )
    if style == "completion":
        return intro + COMPLETION_ENDING.substitute(choices=join_choices(game.row_labels))
    if mode == "pure" or (style == "choice" and mode in ("pure", "mixed")):
        return intro + PURE_INSTRUCTIONS.substitute(choices=join_choices(game.row_labels))
    if mode == "mixed":
        return intro + MIXED_INSTRUCTIONS.substitute(example=_example(game.row_labels))
    raise ValueError(f"unknown mode {mode!r}")
