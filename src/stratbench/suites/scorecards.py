"""What a suite offers the scorecard (`stratbench scorecard`): its part of the plan at a named budget,
and its scores read back from the finished runs.

A suite with a scorecard part names the module in :attr:`SuiteBase.scorecard`; the module has a
``PART`` object implementing :class:`ScorecardPart`. The part plans its runs through its suite's own
`jobs` hook — the path suite files take — so a scorecard's run is the run a user gets by hand with
the same settings, and its numbers are that run's. Reference players are planned beside the models
(scripted, no model calls) or computed exactly from the games; the normalisation lives in
:mod:`stratbench.scoring`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from stratbench.runner.schema import SCORED_STATUSES
from stratbench.scoring import CellStatus, Role, ScoreCell, SuiteEntry, UnitScores, normalized_score, raw_mean
from stratbench.suites.base import Job, SuiteModel

__all__ = ["ScorecardModel", "ScorecardPart", "ScorecardRun", "cell", "status_counts"]

@dataclass(frozen=True)
class ScorecardModel:
    """A model on the scorecard. ``chat``: an instruction-tuned model, prompted through its chat
    template and read by exact choice scoring where the backend can score (local models) or by
    sampled, parsed answers (HTTP chat endpoints); raw models are read by log-probabilities."""

    spec: str
    label: str
    chat: bool = False
    base_url: str | None = None
    # --reasoning-effort: sent to this model's runs where it is an HTTP model (a local one reasons
    # as it was trained to); saved with the scorecard only when given
    reasoning_effort: str | None = None
    # --think-tags: the tags this model writes its thinking between (its generated answers are read
    # after them); saved with the scorecard only when given
    think_tags: str | None = None
    # --max-tokens: the output budget of this model's generated answers in every suite (each suite's
    # own default when None: a reasoning model needs room to think before it answers); saved only when given
    max_tokens: int | None = None

    @property
    def local(self) -> bool:
        """The backend runs here (its traits say so): exact choice scoring of chat prompts."""
        from stratbench.models import backend_traits

        return backend_traits(self.spec).local

    @property
    def policy(self) -> str:
        """How the suites read this model's answers."""
        if not self.chat:
            return "logprob"
        return "choice" if self.local else "sample"

    def suite_model(self, **overrides: Any) -> SuiteModel:
        """The model as a suite's `jobs` hook takes it (policy and chat mode set)."""
        from stratbench.models import is_http_spec

        # (a scorecard saved before local models were given no URL may hold one for them)
        url = self.base_url if is_http_spec(self.spec) else None
        kw: dict[str, Any] = {"policy": self.policy, "base_url": url, "chat": self.chat}
        kw.update(overrides)
        return SuiteModel(self.spec, self.label, **kw)


@dataclass(frozen=True)
class ScorecardRun:
    """A finished run of the scorecard, as a part reads it back."""

    job: Job
    folder: Path  # absolute
    rel: str  # relative to the scorecard folder
    player: str
    role: Role


class ScorecardPart:
    """A suite's part of the scorecard. Subclasses set the class attributes and implement
    `budget`, `jobs` and `cells`."""

    suite: ClassVar[str] = ""  # registry name
    title: ClassVar[str] = ""
    metric: ClassVar[str] = ""
    metric_label: ClassVar[str] = ""
    lower_is_better: ClassVar[bool] = True
    unit: ClassVar[str] = "games"
    chance: ClassVar[str] = ""
    optimal: ClassVar[str] = ""
    formula: ClassVar[str] = ""
    #: the reference players this part shows, with their roles
    references: ClassVar[tuple[tuple[str, Role], ...]] = ()

    def budget(self, name: str) -> dict[str, Any]:
        """The sizes this suite runs with at budget ``name`` (shown in docs/scorecard.md and scorecard.json)."""
        raise NotImplementedError

    def jobs(self, models: Sequence[ScorecardModel], budget: str, seed: int) -> list[tuple[Job, str, Role]]:
        """Every run of this suite: (job, player, role) for the models and the scripted references."""
        raise NotImplementedError

    def cells(self, runs: Sequence[ScorecardRun], models: Sequence[ScorecardModel], seed: int) -> list[ScoreCell]:
        """One cell per player (models, then references) from the finished runs."""
        raise NotImplementedError

    def units(self, runs: Sequence[ScorecardRun], player: str) -> UnitScores | None:
        """A player's per-unit scores, for paired comparisons of two scorecards; None when the
        suite's score is not a mean over units (a CH fit)."""
        return None

    def chance_threshold(self, run_folder: Path, spec: str, seed: int) -> float | None:
        """The normalised score above which a model's cell plays better than chance (a one-sided
        test at the 5% level), for a suite whose "95% CI above 0" is no valid test — a fitted
        parameter bounded at the chance level (CHBench) is above 0 by chance alone. ``run_folder``:
        the model's run, ``spec`` its player, ``seed`` the draws'. None: the CI rule holds."""
        return None

    def entry(self, budget: str) -> SuiteEntry:
        return SuiteEntry(suite=self.suite, title=self.title, metric=self.metric, metric_label=self.metric_label,
                          lower_is_better=self.lower_is_better, unit=self.unit, chance=self.chance,
                          optimal=self.optimal, formula=self.formula, budget=self.budget(budget))


def status_counts(records: Iterable[Mapping[str, Any]], key: str = "status") -> dict[str, int]:
    """Records by outcome: scored (ok / parsed), parse_failed, error."""
    out = {"scored": 0, "parse_failed": 0, "error": 0}
    for r in records:
        s = r.get(key)
        if s in SCORED_STATUSES:
            out["scored"] += 1
        elif s == "parse_failed":
            out["parse_failed"] += 1
        elif s == "error":
            out["error"] += 1
    return out


def cell_status(counts: Mapping[str, int], n_units: int) -> CellStatus:
    """failed: nothing scored (no unit, or not one record scored: a model whose every answer failed
    or did not parse has units — TMGBench counts an unreadable answer as a wrong one — but no
    score); errors: scored, but some records failed or did not parse."""
    if n_units == 0 or not counts.get("scored", 0):
        return "failed"
    return "errors" if counts.get("error", 0) or counts.get("parse_failed", 0) else "ok"


def row_of(player: str, role: Role) -> tuple[str, str | None]:
    """(table row, reference name): the chance and optimal references of every suite share the
    rows "chance" and "optimal"; models and other references have a row of their own."""
    return (role, player) if role in ("chance", "optimal") else (player, None)


def cell(player: str, role: Role, suite: str, units: UnitScores | None, counts: Mapping[str, int],
         runs: Sequence[str], seed: int) -> ScoreCell:
    """A cell from a player's unit scores: the raw mean and the normalised score, each with its
    bootstrap CI over the units (nothing scored: status failed, no numbers, no units)."""
    n = len(units) if units is not None else 0
    status = cell_status(counts, n)
    value = ci = score = score_ci = None
    if status == "failed":
        n = 0  # units whose every record failed were not scored
    elif units is not None:
        value, ci = raw_mean(units, seed)
        score, score_ci = normalized_score(units, seed)
    row, ref = row_of(player, role)
    return ScoreCell(player=row, reference=ref, suite=suite, status=status, value=value, ci95=ci,
                     normalized=score, normalized_ci95=score_ci, n_units=n, counts=dict(counts), exact=False,
                     runs=list(runs))


def exact_cell(player: str, role: Role, suite: str, value: float, score: float) -> ScoreCell:
    """An analytic reference (no run): its value is exact, so its interval is a point."""
    row, ref = row_of(player, role)
    return ScoreCell(player=row, reference=ref, suite=suite, status="ok", value=value, ci95=[value, value],
                     normalized=score, normalized_ci95=[score, score], n_units=0,
                     counts={"scored": 0, "parse_failed": 0, "error": 0}, exact=True, runs=[])


def runs_of(runs: Sequence[ScorecardRun], player: str) -> list[ScorecardRun]:
    return [r for r in runs if r.player == player]
