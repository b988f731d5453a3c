"""The three repeated games of the functional-ToM evaluation, with the paper's payoffs.

Payoffs are stored as two matrices indexed ``[my_action, partner_action]`` so that regret and
best responses are plain numpy indexing. The games are symmetric in who is "me": the partner's
payoff is ``payoff_partner[my_action, partner_action]`` (Tables 5-7 of the paper list (you,
partner)).

Action label sets come from Appendix C: the paper varies the surface form of actions to probe the
inductive bias of the LLM (neutral letters, long neutral strings, canonical names, and unrelated
food words), so prompts built elsewhere can pick a label set by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stratbench.errors import InputError

T_DEFAULT = 100
"""The paper's interaction horizon (10x Akata et al., so behaviour can converge)."""


@dataclass(frozen=True)
class RepeatedGame:
    """A two-player matrix game played repeatedly.

    ``actions`` are the default (neutral) labels; ``labels`` maps a label-set name to one label per
    action. Payoff matrices are read-only arrays of shape (n_actions, n_actions).
    """

    name: str
    actions: tuple[str, ...]
    payoff_me: np.ndarray
    payoff_partner: np.ndarray
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    title: str = ""
    score_wording: bool = False
    """Appendix C.1: RPS prompts say "receive a score of +1/0/-1" instead of "win N points"."""

    def __post_init__(self) -> None:
        me = np.array(self.payoff_me, dtype=float)
        pa = np.array(self.payoff_partner, dtype=float)
        n = len(self.actions)
        if me.shape != (n, n) or pa.shape != (n, n):
            raise InputError(f"{self.name}: payoff matrices must be {n}x{n}")
        me.setflags(write=False)
        pa.setflags(write=False)
        object.__setattr__(self, "payoff_me", me)
        object.__setattr__(self, "payoff_partner", pa)
        for key, labs in self.labels.items():
            if len(labs) != n:
                raise InputError(f"{self.name}: label set {key!r} needs {n} labels")

    @property
    def n_actions(self) -> int:
        return len(self.actions)

    @property
    def r_max(self) -> float:
        """Largest payoff the agent can get in one step (the R-max optimism constant)."""
        return float(self.payoff_me.max())

    def best_response(self, partner_action: int) -> int:
        """Myopic best response (lowest index on ties, so it is deterministic)."""
        return int(np.argmax(self.payoff_me[:, partner_action]))

    def action_labels(self, label_set: str = "neutral") -> tuple[str, ...]:
        """Labels of one label set; ``"index"`` gives "0", "1", ..."""
        if label_set == "index":
            return tuple(str(i) for i in range(self.n_actions))
        try:
            return self.labels[label_set]
        except KeyError:
            raise InputError(
                f"{self.name}: unknown label set {label_set!r}; known: {sorted(self.labels)}"
            ) from None

    def action_index(self, label: str, label_set: str | None = None) -> int:
        """Index of an action label (case-insensitive); searches all label sets when none given."""
        sets = [label_set] if label_set else list(self.labels)
        want = label.strip().lower()
        for key in sets:
            for i, lab in enumerate(self.action_labels(key)):
                if lab.lower() == want:
                    return i
        raise InputError(f"{self.name}: {label!r} is not an action label")


def _long(letter: str, n: int) -> str:
    return letter * n


# Appendix C label sets. "neutral" = J/F/B (used for all three games in Tables 3, 4, 10);
# "rps_letters" = R/P/S (Tables 1-2); "neutral_long" = the repeated-letter strings of Appendix C
# (repeat counts as printed in the paper); "canonical" = the game's usual names; "unrelated" =
# food words with no game meaning.
RPS = RepeatedGame(
    name="rps",
    title="Rock, Paper, Scissors",
    actions=("J", "F", "B"),
    score_wording=True,
    # a1 beats a0, a2 beats a1, a0 beats a2 (Paper beats Rock ...): win +1, tie 0, loss -1.
    payoff_me=np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]]),
    payoff_partner=np.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]]),
    labels={
        "neutral": ("J", "F", "B"),
        "rps_letters": ("R", "P", "S"),
        "neutral_long": (_long("J", 21), _long("F", 26), _long("B", 24)),
        "canonical": ("Rock", "Paper", "Scissors"),
        "unrelated": ("Pasta", "Rice", "Bread"),
    },
)

IBS = RepeatedGame(
    name="ibs",
    title="Iterated Battle of the Sexes",
    actions=("J", "F"),
    payoff_me=np.array([[10, 0], [0, 7]]),
    payoff_partner=np.array([[7, 0], [0, 10]]),
    labels={
        "neutral": ("J", "F"),
        "neutral_long": (_long("J", 23), _long("F", 26)),
        "canonical": ("Fight", "Ballet"),
        "unrelated": ("Pasta", "Rice"),
    },
)

IPD = RepeatedGame(
    name="ipd",
    title="Iterated Prisoner's Dilemma",
    actions=("J", "F"),
    # a0 = cooperate, a1 = defect.
    payoff_me=np.array([[8, 0], [10, 5]]),
    payoff_partner=np.array([[8, 10], [0, 5]]),
    labels={
        "neutral": ("J", "F"),
        "neutral_long": (_long("J", 23), _long("F", 24)),
        "canonical": ("Cooperate", "Defect"),
        "unrelated": ("Pasta", "Rice"),
    },
)

GAMES: dict[str, RepeatedGame] = {g.name: g for g in (RPS, IBS, IPD)}


def get_game(name: str | RepeatedGame) -> RepeatedGame:
    """Look a game up by name ("rps", "ibs", "ipd"); a RepeatedGame passes through."""
    if isinstance(name, RepeatedGame):
        return name
    try:
        return GAMES[name.lower()]
    except KeyError:
        raise InputError(f"unknown game {name!r}; known: {sorted(GAMES)}") from None
