"""The `Suite` interface: what every benchmark offers the workflows (suite files, merge, compare)
and the report, so that none of them names a suite.

A suite is a package under `stratbench.suites` with a module-level object that implements
:class:`Suite` (usually a subclass of :class:`SuiteBase`, which supplies the optional hooks), and
one line in the registry (`stratbench.suites.SUITES`). One package may register several entries,
one per kind of run it writes (TMGBench: atomic and complex; ToM: model runs and the tabular
baseline; CHBench: play and fits): an entry is selected for a result folder by run.json's
``suite`` and ``kind``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypedDict, TypeVar, runtime_checkable

from stratbench.errors import InputError
from stratbench.players.scripted import NO_SCRIPTED, ScriptedRoster
from stratbench.render.views import Ctx, Leaderboard, RunDir, SuiteView
from stratbench.runner.lifecycle import Progress, RunPlan, RunResult

__all__ = [
    "CompareUnits", "HeadlineRow", "Job", "Leaderboard", "Suite", "SuiteBase", "SuiteModel",
    "build_section_config", "model_overrides",
]

C = TypeVar("C")  # a suite's config class

CompareUnits = dict[str, dict[Hashable, dict[str, float]]]
"""part (a mode, a setting) → unit (a game, an episode) → metric → value, for `stratbench compare`:
units shared by two runs are compared pairwise."""


class HeadlineRow(TypedDict):
    """One headline number of a run (suite files' runs.csv, scorecards)."""

    part: str
    metric: str
    value: float | None
    ci95: list[float] | None


@dataclass(frozen=True)
class SuiteModel:
    """A model of a suite file: its spec, its label in folder names and tables, and settings that
    override the suite's for this model only."""

    spec: str
    label: str
    policy: str | None = None
    base_url: str | None = None
    chat: bool | None = None


@dataclass
class Job(Generic[C]):
    """One run a suite file (or the scorecard) asks for: ``config`` is an instance of the config
    class of the suite named ``suite`` (``Job[NashgapConfig]``), validated."""

    suite: str  # registry name
    label: str  # model label ("" for a run that holds every model, e.g. CHBench)
    seed: int
    config: C  # the suite's config, validated
    setting: str = ""  # what distinguishes runs of one model and seed (e.g. "rps/tit_for_tat")
    key: str = ""
    folder: str | None = None
    status: str = "pending"


# keys a suite file's section may not set: the file's top level owns them
OWNED_KEYS = frozenset({"model", "models", "seed", "output_dir", "shard", "llm_type", "llm_model", "folder_tag"})


def build_section_config(cls: type, where: str, section: str, params: Mapping[str, Any], **owned: Any) -> Any:
    """A suite's config from a suite file's section (unknown or owned keys are one error line)."""
    names = {f.name for f in fields(cls)}
    bad = sorted(set(params) & OWNED_KEYS)
    if bad:
        raise InputError(f"{where}: [{section}] sets {', '.join(bad)}; the suite file sets models, seeds and "
                         "output_dir at its top level")
    unknown = sorted(set(params) - names)
    if unknown:
        raise InputError(f"{where}: [{section}] unknown key(s) {', '.join(unknown)}")
    specs = owned.get("model", owned.get("models"))
    if "base_url" in params and specs is not None:
        from stratbench.models import is_http_spec

        if not any(is_http_spec(x) for x in ([specs] if isinstance(specs, str) else specs)):
            # a section's server is its HTTP models' (a run of local or scripted players has none)
            params = {k: v for k, v in params.items() if k != "base_url"}
    try:
        return cls(**{**params, **{k: v for k, v in owned.items() if k in names}})
    except TypeError as e:
        raise InputError(f"{where}: [{section}] {e}") from None


def model_overrides(m: SuiteModel) -> dict[str, Any]:
    """A suite-file model's own settings, as config keys."""
    kw: dict[str, Any] = {}
    if m.policy is not None:
        kw["policy"] = m.policy
    if m.base_url is not None:
        kw["base_url"] = m.base_url
    if m.chat is not None:
        kw["chat"] = m.chat
    return kw


@runtime_checkable
class Suite(Protocol):
    """A benchmark, as the workflows and the report see it (:class:`SuiteBase` implements it)."""

    name: str  # registry name, suite-file section and CLI group
    family: str  # run.json "suite"
    kinds: tuple[str, ...]  # run.json "kind" values this entry reads (the first is what it writes)
    description: str

    def run(self, config: Any, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        """Run (or finish) one run and write its result folder."""
        ...

    def merge(self, folders: list[Path], out: Path) -> Any:
        """Write into ``out`` the records and summaries of the unsharded run whose finished shards
        are ``folders`` (already checked to be shards 1..n of one config)."""
        ...

    def owns(self, meta: Mapping[str, Any]) -> bool:
        """Whether a run.json was written by this entry."""
        ...


class SuiteBase(Generic[C]):
    """Defaults for the optional hooks. Subclasses set the class attributes and override what
    they support; an unsupported hook raises InputError naming the suite. Generic in the suite's
    config class ``C`` (``class NashgapSuite(SuiteBase[NashgapConfig])``): `run` takes one and
    `jobs` plans `Job[C]`s, so a config of another suite is a type error, not a run's surprise."""

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    kinds: ClassVar[tuple[str, ...]] = ("run",)
    description: ClassVar[str] = ""
    # the suite's definition (runner.schema.SUITE_VERSION_DOC); the RunPlans it runs write the same
    # number (RunPlan.version), which the contract test checks over every registered suite
    version: ClassVar[int] = 1
    #: whether a finished run's summaries can be recomputed from its folder (its suite's merge of
    #: the one folder): a run that fits play collected elsewhere (CHBench's fit) is shown as saved
    recomputable: ClassVar[bool] = True
    #: every registered suite; the registry (``stratbench.suites``) sets it when it is imported, so
    #: that a suite can name another suite's scripted player without importing the registry (which
    #: imports this module)
    siblings: ClassVar[Callable[[], Iterable[SuiteBase[Any]]]] = staticmethod(lambda: ())
    #: the summary keys the report shows first, in order (any other key with a CI follows)
    headline_keys: ClassVar[tuple[str, ...]] = ()
    #: how the report ranks comparable runs (None: no leaderboard)
    leaderboard: ClassVar[Leaderboard | None] = None
    #: metrics `stratbench compare` reports (keys of compare_units' metric dicts)
    compare_metrics: ClassVar[tuple[str, ...]] = ()
    #: files whose presence identifies a folder without run.json as this suite's
    marker_files: ClassVar[tuple[str, ...]] = ()
    #: whether suite files may have a section for this suite (it implements `jobs`)
    in_suite_files: ClassVar[bool] = False
    #: the module of the suite's CLI command group ("stratbench.cli.<name>", with `register(app)`)
    cli: ClassVar[str | None] = None
    #: the module of the suite's part of `stratbench scorecard` (with a ``PART`` object,
    #: :class:`stratbench.suites.scorecards.ScorecardPart`); None: not on the scorecard
    scorecard: ClassVar[str | None] = None
    #: the players this suite plays without a model (`stratbench.players.scripted`)
    scripted: ClassVar[ScriptedRoster] = NO_SCRIPTED
    #: what a suite file naming a scripted player this suite does not play is told to do instead
    scripted_hint: ClassVar[str] = ""

    # -- identity ---------------------------------------------------------------------------------
    def owns(self, meta: Mapping[str, Any]) -> bool:
        if meta.get("suite") != self.family:
            return False
        kind = meta.get("kind")
        if isinstance(kind, str):
            return kind in self.kinds
        config = meta.get("config")
        return self.legacy_owns(config if isinstance(config, Mapping) else {})

    def legacy_owns(self, config: Mapping[str, Any]) -> bool:
        """For folders written before run.json had "kind": whether the config is this entry's."""
        return True

    def detect(self, names: set[str]) -> bool:
        """Whether a folder without run.json (file names ``names``) looks like this suite's."""
        return any(n in names for n in self.marker_files)

    # -- running ----------------------------------------------------------------------------------
    def run(self, config: C, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        raise InputError(f"{self.name}: running is not supported")

    def merge(self, folders: list[Path], out: Path) -> Any:
        raise InputError(f"merging {self.family} {self.kinds[0]} runs is not supported")

    def merge_collection(self, folders: list[Path], output_dir: str | Path) -> Path:
        """Merge the shards of a collection of runs (a folder with suite_metadata.json)."""
        raise InputError(f"merging {self.family} suite folders is not supported")

    # -- suite files ------------------------------------------------------------------------------
    def check_players(self, where: str, specs: Iterable[str]) -> None:
        """Each spec is one of this suite's scripted players or a model spec (one line otherwise,
        before any folder exists): another suite's scripted player is named as such."""
        from stratbench.models import split_spec

        for spec in specs:
            if self.scripted.matches(spec):
                continue
            try:
                split_spec(spec)
            except InputError:
                owners = [s.family for s in SuiteBase.siblings()
                          if s.family != self.family and s.in_suite_files and s.scripted.matches(spec)]
                if not owners:
                    raise
                raise InputError(
                    f"{where}: [{self.name}] model {spec!r} is a scripted player of {' and '.join(dict.fromkeys(owners))}; "
                    f"{self.name}'s scripted players: {self.scripted.listing()}"
                    + (f" ({self.scripted_hint})" if self.scripted_hint else "")) from None

    def jobs(self, where: str, params: Mapping[str, Any], models: Sequence[SuiteModel],
             seeds: Sequence[int]) -> list[Job[C]]:
        """The runs a suite file's section asks for, each config validated (nothing written)."""
        raise InputError(f"{where}: [{self.name}] cannot be run from a suite file")

    def headline(self, folder: Path) -> list[HeadlineRow]:
        """The key numbers of a finished run (runs.csv)."""
        return []

    def scorecard_part(self) -> Any:
        """The suite's scorecard part (None when it has none); imported on first use."""
        if not self.scorecard:
            return None
        import importlib

        return importlib.import_module(self.scorecard).PART

    # -- reading a folder back ----------------------------------------------------------------------
    def folder_plan(self, folder: Path) -> RunPlan | None:
        """The run in ``folder`` as it was planned — its saved config, its own shard, its players
        not opened — whose streams check the records read back (:meth:`check_records`). None: the
        suite has no such plan, and its records are checked only as JSON objects of finite numbers."""
        return None

    def check_records(self, folder: Path) -> int | None:
        """InputError naming the file and line of the first record of ``folder`` that its run could
        not have written, whatever run.json says of the run (finished or not, one shard or all):
        compare and the report read every record this way; only the recomputation of summaries
        needs a finished, whole run. Returns the number of records read (None: the suite has no
        plan to read them by, only their JSON is checked)."""
        plan = self.folder_plan(folder)
        if plan is not None:
            from stratbench.runner.lifecycle import check_records

            return sum(len(rs) for rs in check_records(plan, folder).values())
        from stratbench.runner.jsonl import read_jsonl
        from stratbench.runner.validation import check_schema

        for f in sorted(folder.glob("*.jsonl")):
            check_schema(read_jsonl(f), dict, f)  # (a plain dict: only the finite-number check applies)
        return None

    # -- compare ----------------------------------------------------------------------------------
    def compare_units(self, folder: Path) -> CompareUnits:
        raise InputError(f"compare does not support {self.family!r} {self.kinds[0]} runs yet")

    # -- report -----------------------------------------------------------------------------------
    def report_view(self, ctx: Ctx, run: RunDir, anchor: str) -> SuiteView:
        """The suite's part of a run's report section (tables, figures, leaderboard entries)."""
        from stratbench.render.views import default_view

        return default_view(ctx, run, self, anchor)

    def summary_extras(self, summary: Mapping[str, Any]) -> list[Any]:
        """HTML shown after a summary's headline table by :func:`default_view` (e.g. TMGBench's
        metrics by number of equilibria)."""
        return []

    def leaderboard_group(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        """Runs are ranked together only within a group (same games, mode, setting)."""
        return self.family


def read_summary(folder: Path, name: str = "summary.json") -> dict[str, Any]:
    """A finished run's summary (empty when missing or unreadable: headline rows then say None)."""
    import json

    try:
        data = json.loads((folder / name).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def headline_rows(summary: Mapping[str, Any], keys: Iterable[str], part: str = "") -> list[HeadlineRow]:
    """Headline rows for ``keys`` of one summary (value and its ``_ci95``)."""
    return [HeadlineRow(part=part, metric=k, value=summary.get(k), ci95=summary.get(f"{k}_ci95")) for k in keys]
