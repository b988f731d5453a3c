"""Functional theory of mind as registered suites: a model playing repeated games against
scripted partners (`tom run`) and the tabular R-max baseline (`tom baseline`).

Imported by the CLI at start-up: the run, merge and report code is imported inside the hooks."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl
from stratbench.runner.lifecycle import Progress, RunResult
from stratbench.suites.base import (
    C,
    CompareUnits,
    HeadlineRow,
    Job,
    Leaderboard,
    SuiteBase,
    SuiteModel,
    build_section_config,
    headline_rows,
    model_overrides,
    read_summary,
)

HEADLINE_KEYS = ("regret_per_step", "tom_accuracy", "tom_regret_per_step", "n_episodes", "n_error_episodes",
                 "tokens_evaluated_per_episode")
LEADERBOARD = Leaderboard((("regret_per_step", "regret/step"), ("tom_accuracy", "ToM accuracy"),
                           ("tom_regret_per_step", "ToM regret/step"), ("n_episodes", "episodes")),
                          lower_is_better=True)
METRICS = ("regret_per_step", "tom_accuracy", "tom_regret_per_step")

if TYPE_CHECKING:
    from stratbench.suites.tom.baseline_run import BaselineConfig
    from stratbench.suites.tom.model_run import TomRunConfig



class _TomBase(SuiteBase[C]):
    """What both ToM entries share: their family, headline keys, comparison and report view."""

    family = "tom"
    headline_keys = HEADLINE_KEYS
    leaderboard = LEADERBOARD
    compare_metrics = METRICS
    marker_files = ("regret_curve.png", "curves.json")
    cli: ClassVar[str | None] = None

    def compare_units(self, folder: Path) -> CompareUnits:
        """setting → episode → its metrics: `tom run` (complete episodes) and `tom baseline`. Episode
        e has the same seed in every run with the same --seed, so episodes pair across checkpoints."""
        import numpy as np

        from stratbench.runner.folders import read_run_json
        from stratbench.suites.tom.games import get_game
        from stratbench.suites.tom.partners import make_partner
        from stratbench.suites.tom.records import EPISODES_FILE, ROUNDS_FILE
        from stratbench.suites.tom.results import episode_groups, episode_status, trajectory_metrics

        config = read_run_json(folder)["config"]
        out: CompareUnits = {}
        if (folder / EPISODES_FILE).exists():  # tom baseline: one record per episode
            for r in read_jsonl(folder / EPISODES_FILE):
                out.setdefault(f"{r['game']}/{r['partner']}/tabular", {})[int(r["episode"])] = {
                    m: float(r[m]) for m in METRICS}
        else:
            groups = episode_groups(read_jsonl(folder / ROUNDS_FILE))
            done = [e for e, rs in groups.items() if episode_status(rs, int(config["rounds"])) == "complete"]
            if done:
                g = get_game(config["game"])
                p = make_partner(config["partner"], g)
                m = trajectory_metrics(
                    g, p, np.array([[r["my_action"] for r in groups[e]] for e in done]),
                    np.array([[r["partner_action"] for r in groups[e]] for e in done]),
                    np.array([[-1 if r.get("prediction") is None else r["prediction"] for r in groups[e]]
                              for e in done]),
                    np.array([groups[e][0]["initial_state"] for e in done]))
                part = f"{config['game']}/{config['partner']}/{config.get('prompting', 'LM')}"
                out[part] = {e: {k: float(m[k][i]) for k in METRICS} for i, e in enumerate(done)}
        for units in out.values():  # a metric missing (NaN) in any episode is left out of the comparison
            for k in METRICS:
                if any(math.isnan(v[k]) for v in units.values()):
                    for v in units.values():
                        v.pop(k, None)
        return out

    def report_view(self, ctx: Any, run: Any, anchor: str) -> Any:
        """The default view, plus the regret curves drawn from curves.json when the folder has no
        regret_curve PNG of its own."""
        from stratbench.render.views import is_num, read_json, run_files

        view = super().report_view(ctx, run, anchor)
        if any(p.name.startswith("regret_curve") and p.suffix == ".png" for p in run_files(run)):
            return view
        curves, _ = read_json(run.path / "curves.json")
        if isinstance(curves, Mapping) and curves and all(
                isinstance(v, list) and all(is_num(x) for x in v) for v in curves.values()):
            from stratbench.suites.tom.plots import regret_curves_plot

            view.parts.append(ctx.figure(f"{anchor}_regret_curve",
                                         lambda: regret_curves_plot(curves, "Regret per step", "regret"),
                                         "ToM regret curves", "Regret per step (drawn from curves.json)"))
        return view

    def leaderboard_group(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        parts = [summary.get(k) for k in ("game", "partner", "prompting", "T")]
        if summary.get("policy") == "choice":  # never ranked with raw log-prob runs
            parts.insert(3, "choice")
        return "tom · " + " · ".join(str(p) for p in parts if p is not None)


class TomSuite(_TomBase["TomRunConfig"]):
    in_suite_files = True
    name = "tom"
    scripted_hint = "tom runs need a language model; `stratbench tom baseline` runs the tabular agent"
    kinds = ("run",)
    description = "repeated RPS / Battle of the Sexes / Prisoner's Dilemma against scripted partners"
    cli = "stratbench.cli.tom"
    scorecard = "stratbench.suites.tom.scorecard"

    def legacy_owns(self, config: Mapping[str, Any]) -> bool:
        return "prompting" in config

    def run(self, config: TomRunConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        from stratbench.suites.tom.model_run import run_tom_model

        return run_tom_model(config, progress, resume_dir)

    def merge(self, folders: list[Path], out: Path) -> Any:
        from stratbench.suites.tom.model_run import merge_tom_runs

        return merge_tom_runs(folders, out)

    def folder_plan(self, folder: Path) -> Any:
        from stratbench.suites.tom.model_run import tom_run_plan

        return tom_run_plan(folder)

    def jobs(self, where: str, params: Mapping[str, Any], models: Sequence[SuiteModel],
             seeds: Sequence[int]) -> list[Job["TomRunConfig"]]:
        from stratbench.suites.tom.model_run import TomRunConfig

        params = dict(params)
        games = params.pop("games", [params.pop("game", "rps")])
        partners = params.pop("partners", [params.pop("partner", "single_action")])
        games = [games] if isinstance(games, str) else games
        partners = [partners] if isinstance(partners, str) else partners
        self.check_players(where, [m.spec for m in models])  # before any folder exists
        jobs = []
        for m in models:
            for g in games:
                for partner in partners:
                    for s in seeds:
                        kw = model_overrides(m)
                        # tom's policy follows its prompting strategy and chat mode (model_run doc):
                        # "choice" is LM prompting asked as a conversation, "sample" a generated answer
                        policy = kw.pop("policy", None)
                        if policy == "choice":
                            if kw.get("chat") is False:
                                raise InputError(f"{where}: [tom] model {m.label!r}: policy 'choice' is LM prompting "
                                                 "asked as a conversation; it needs chat")
                            kw["chat"] = True
                        merged = {**kw, **params}
                        if (policy == "sample" and merged.get("chat")
                                and str(merged.get("prompting", "LM")).strip().lower() == "lm"):
                            merged["prompting"] = "QA"  # a chat model's sampled answers: Figure 1's generated twin
                        cfg = build_section_config(TomRunConfig, where, self.name, merged, model=m.spec,
                                                   seed=s, game=g, partner=partner)
                        cfg = cfg.resolve()
                        jobs.append(Job(self.name, m.label, s, cfg, setting=f"{g}/{partner}"))
        return jobs

    def headline(self, folder: Path) -> list[HeadlineRow]:
        s = read_summary(folder)
        return headline_rows(s, ("regret_per_step", "tom_accuracy"),
                             f"{s.get('game')}/{s.get('partner')}/{s.get('prompting')}")


class TomBaselineSuite(_TomBase["BaselineConfig"]):
    name = "tom-baseline"
    kinds = ("baseline",)
    description = "the tabular R-max baseline of the functional-ToM paper"
    cli = None  # the tom command group runs both kinds

    def legacy_owns(self, config: Mapping[str, Any]) -> bool:
        return config.get("agent") == "tabular-rmax"

    def run(self, config: BaselineConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        from stratbench.suites.tom.baseline_run import run_tom_baseline

        return run_tom_baseline(config, progress, resume_dir)

    def merge(self, folders: list[Path], out: Path) -> Any:
        from stratbench.suites.tom.baseline_run import merge_baselines

        return merge_baselines(folders, out)

    def folder_plan(self, folder: Path) -> Any:
        from stratbench.runner.folders import read_run_json
        from stratbench.suites.tom.baseline_run import BaselinePlan, baseline_config

        return BaselinePlan(baseline_config(read_run_json(folder)["config"]))

    def headline(self, folder: Path) -> list[HeadlineRow]:
        rows: list[HeadlineRow] = []
        for s in read_summary(folder).get("settings", []):
            rows += headline_rows(s, ("regret_per_step", "tom_accuracy"), f"{s.get('game')}/{s.get('partner')}/tabular")
        return rows


MODEL_RUN = TomSuite()
BASELINE = TomBaselineSuite()
