"""CHBench as registered suites: repeated play with cognitive-hierarchy fits (`chbench run`), and
fits of play collected anywhere (`chbench fit`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from stratbench.players.scripted import ScriptedRoster
from stratbench.render.html import el, table
from stratbench.runner.jsonl import read_jsonl
from stratbench.runner.lifecycle import Progress, RunResult
from stratbench.suites.base import (
    C,
    CompareUnits,
    HeadlineRow,
    Job,
    SuiteBase,
    SuiteModel,
    build_section_config,
    read_summary,
)

if TYPE_CHECKING:
    from stratbench.suites.chbench.fit_run import FitConfig
    from stratbench.suites.chbench.run import ChbenchConfig


class _ChbenchEntry(SuiteBase[C]):
    """What both CHBench entries share: identity, headline, comparison and the report view."""

    in_suite_files = True
    name = "chbench"
    family = "chbench"
    kinds = ("run",)
    description = "repeated play between models; Level-K and Poisson cognitive-hierarchy levels"
    cli: ClassVar[str | None] = "stratbench.cli.chbench"
    scorecard: ClassVar[str | None] = "stratbench.suites.chbench.scorecard"
    compare_metrics = ("utility",)
    marker_files = ("fit.json", "levels.md")
    # players.scripted_agent's players (the contract test holds them equal)
    scripted: ClassVar[ScriptedRoster] = ScriptedRoster(
        ("random", "level-0", "first-action"), (r"level-k:\d+", r"poisson:[0-9]*\.?[0-9]+"),
        "random, first-action, level-k:K (K=0..3), poisson:LAMBDA")

    def legacy_owns(self, config: Mapping[str, Any]) -> bool:
        return "mechanisms" in config

    def merge(self, folders: list[Path], out: Path) -> Any:
        from stratbench.suites.chbench.run import merge_chbench

        return merge_chbench(folders, out)

    def folder_plan(self, folder: Path) -> Any:
        from stratbench.suites.chbench.run import chbench_plan

        return chbench_plan(folder)

    def headline(self, folder: Path) -> list[HeadlineRow]:
        rows: list[HeadlineRow] = []
        for mech, players in read_summary(folder).get("mechanisms", {}).items():
            for pl, v in players.items():
                rows.append(HeadlineRow(part=f"{mech}/{pl}", metric="poisson_mean_level", value=v.get("poisson_mean_level"),
                                 ci95=v.get("poisson_mean_level_ci95")))
        return rows

    def summary_extras(self, summary: Mapping[str, Any]) -> list[Any]:
        """Which fitted mean levels the data identify: the value, the range of every maximum-likelihood
        fit where they do not, and the CI (which covers that range)."""
        rows = []
        for part, s in _fitted_players(summary):
            for cm, title in (("level_k", "Level-K"), ("poisson", "Poisson CH")):
                if f"{cm}_mean_level" not in s:
                    continue
                rng = s.get(f"{cm}_mean_level_range")
                ci = s.get(f"{cm}_mean_level_ci95")
                ident = s.get(f"{cm}_identified")
                rows.append((part, title, _num(s.get(f"{cm}_mean_level")),
                             "yes" if ident is True else ("no" if ident is False else "–"),
                             _pair(rng, "{} – {}"), _pair(ci, "[{}, {}]")))
        if not rows:
            return []
        return [el("h4", "Mean levels: what the data identify"),
                el("p", "Not identified: several level mixtures reach the same maximum likelihood; the lowest "
                        "mean level is reported, and the range covers every one of them."),
                table(("player", "CH model", "mean level", "identified", "maximisers' range", "95% CI"), rows)]

    def compare_units(self, folder: Path) -> CompareUnits:
        """mechanism/player → game → the player's mean utility per round in that game. The run's
        `--models` are keyed by position ("model 1", ...) so two checkpoints' runs pair up; scripted
        opponents by name. CH levels are fitted over all games at once, so they are compared through
        each run's own CIs, not here."""
        import numpy as np

        from stratbench.runner.folders import read_run_json

        models = list(read_run_json(folder)["config"].get("models", []))

        def role(player: str) -> str:  # checkpoints differ in name: pair --models by position
            return f"model {models.index(player) + 1}" if player in models else player

        acc: dict[str, dict[Any, list[float]]] = {}
        for r in read_jsonl(folder / "rounds.jsonl"):
            if r["status"] != "complete":
                continue
            for me in ("row", "col"):
                acc.setdefault(f"{r['mechanism']}/{role(r[f'{me}_player'])}", {}).setdefault(
                    r["game_id"], []).append(float(r[f"{me}_payoff"]))
        return {part: {g: {"utility": float(np.mean(v))} for g, v in by.items()} for part, by in acc.items()}

    def report_view(self, ctx: Any, run: Any, anchor: str) -> Any:
        from stratbench.render.views import run_files

        view = super().report_view(ctx, run, anchor)
        if run.player() == "?":  # one fit covers several players
            players = read_summary(run.path).get("players")
            view.player = ", ".join(map(str, players)) if isinstance(players, Mapping) and players else None
        if any(p.name.startswith("level_distribution") and p.suffix == ".png" for p in run_files(run)):
            return view
        self._level_figure(ctx, view, anchor, run.path)
        return view

    def _level_figure(self, ctx: Any, view: Any, anchor: str, folder: Path) -> None:
        """A run whose level_distribution.png is missing (its plot failed): draw it from summary.json."""
        from stratbench.suites.chbench.plots import level_distributions, run_panels

        summary = read_summary(folder)
        try:
            panels = run_panels(summary)
            if panels:
                view.parts.append(ctx.figure(f"{anchor}_level_distribution",
                                             lambda: level_distributions(panels, "Pooled CH level distributions"),
                                             "CH level distributions",
                                             "Pooled cognitive-hierarchy level distributions (from summary.json)"))
        except (AttributeError, KeyError, TypeError, ValueError):
            view.parts.append(el("p", "summary.json: level distributions could not be drawn", class_="warn"))


def _num(x: Any) -> str:
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf")
    return f"{x:.3f}" if ok else "–"


def _pair(x: Any, form: str) -> str:
    """Two numbers (a range, a CI) in ``form``; "–" for anything else (summary.json is a file)."""
    if not isinstance(x, (list, tuple)) or len(x) != 2 or "–" in (_num(x[0]), _num(x[1])):
        return "–"
    return form.format(_num(x[0]), _num(x[1]))


def _fitted_players(summary: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, fitted keys) per player: a run's mechanisms/player entries or a fit's players."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    mechs = summary.get("mechanisms")
    if isinstance(mechs, Mapping):
        for mech, players in mechs.items():
            if isinstance(players, Mapping):
                out += [(f"{mech}/{p}", s) for p, s in players.items() if isinstance(s, Mapping)]
    players = summary.get("players")
    if isinstance(players, Mapping):
        out += [(str(p), s) for p, s in players.items() if isinstance(s, Mapping)]
    return out


class ChbenchSuite(_ChbenchEntry["ChbenchConfig"]):
    """`chbench run`: repeated play between models."""

    def run(self, config: ChbenchConfig, progress: Progress | None = None,
            resume_dir: str | Path | None = None) -> RunResult:
        from stratbench.suites.chbench.run import run_chbench

        return run_chbench(config, progress, resume_dir)

    def jobs(self, where: str, params: Mapping[str, Any], models: Sequence[SuiteModel],
             seeds: Sequence[int]) -> list[Job[ChbenchConfig]]:
        from stratbench.suites.chbench.run import ChbenchConfig

        self.check_players(where, [m.spec for m in models])  # before any folder exists
        # one run holds every model: policy and chat come from the [chbench] section, and the
        # server from it too — or from the models' own tables when they name one server
        urls = sorted({m.base_url for m in models if m.base_url is not None})
        if "base_url" not in params and urls:
            if len(urls) > 1:
                from stratbench.errors import InputError
                from stratbench.redact import redact_url

                raise InputError(f"{where}: [chbench] the models name different servers "
                                 f"({', '.join(redact_url(u) for u in urls)}); one CHBench run holds every model "
                                 "and talks to one server: set base_url in [chbench]")
            params = {**params, "base_url": urls[0]}
        jobs = []
        for s in seeds:
            cfg = build_section_config(ChbenchConfig, where, self.name, params, models=[m.spec for m in models], seed=s)
            cfg.validate()
            jobs.append(Job(self.name, "", s, cfg))
        return jobs


class ChbenchFitSuite(_ChbenchEntry["FitConfig"]):
    in_suite_files = False
    name = "chbench-fit"
    kinds = ("fit",)
    recomputable = False  # (its input is a play file of its own, which no merge reads again)
    description = "Level-K and Poisson CH fits of play collected anywhere"
    cli = None  # the chbench command group runs both kinds
    scorecard = None  # the scorecard part belongs to the suite's main entry

    def legacy_owns(self, config: Mapping[str, Any]) -> bool:
        return "data" in config and "mechanisms" not in config

    def run(self, config: FitConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        from stratbench.suites.chbench.fit_run import run_fit

        return run_fit(config, progress, resume_dir)

    def _level_figure(self, ctx: Any, view: Any, anchor: str, folder: Path) -> None:
        """A fit folder has no PNG of its own: draw the fitted distributions from fit.json."""
        from stratbench.render.views import read_json
        from stratbench.suites.chbench.plots import fit_panels, level_distributions

        fits, _ = read_json(folder / "fit.json")
        if not (isinstance(fits, Mapping) and fits and all(isinstance(f, Mapping) for f in fits.values())):
            return
        try:
            panels = fit_panels(fits)
            view.parts.append(ctx.figure(f"{anchor}_level_distribution",
                                         lambda: level_distributions(panels, "Fitted level distributions"),
                                         "CH level distributions",
                                         "Fitted cognitive-hierarchy level distributions (from fit.json)"))
        except (TypeError, ValueError):
            view.parts.append(el("p", "fit.json: level distributions could not be drawn", class_="warn"))

    def merge(self, folders: list[Path], out: Path) -> Any:
        return SuiteBase.merge(self, folders, out)

    def compare_units(self, folder: Path) -> CompareUnits:
        return SuiteBase.compare_units(self, folder)


PLAY = ChbenchSuite()
FIT = ChbenchFitSuite()
