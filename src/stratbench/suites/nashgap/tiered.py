"""The tiered research suite: providers × model tiers A/B/C × difficulty buckets × seeds, each cell
one Nash-gap run, gathered into one suite folder with per-run and aggregated tables.

It reproduces the original project's `run_tiered_research_suite.py` (same flags, default tiers,
table columns and artefact names) with three deliberate differences:

* every model gets its own folder, keyed by provider, tier and model (the original keyed folders by
  model name alone, so its dummy runs — all called ``dummy_tier_<T>`` — overwrote each other);
* each cell is a full Nash-gap run folder (streamed, resumable, with run.json), so the suite
  inherits honest status accounting: failed calls and unparseable answers are counted, never
  replaced, and the tables carry exploitability, bootstrap CIs, parse-failure and error rates;
* the tables are built from the run folders on disk, hold nothing time- or path-dependent and are
  written with a fixed float format, so two identical invocations give byte-identical tables
  (times and folder names live only in ``suite_metadata.json``).

Games of a (seed, bucket) cell depend only on the seed and bucket (as `stratbench nashgap --bucket B
--seed S` would generate them), so every model of a cell plays exactly the same games.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from stratbench.checks import check_config
from stratbench.errors import InputError
from stratbench.players import check_policy
from stratbench.redact import is_redacted_url, redact_json, redact_url
from stratbench.render.csv_cells import csv_row
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import read_jsonl, write_atomic, write_json_atomic
from stratbench.runner.lifecycle import RunResult, announce_folder
from stratbench.runner.schema import SCORED_STATUSES
from stratbench.runner.shard import parse_shard
from stratbench.stats import stratified_bootstrap_ci
from stratbench.suites.nashgap.config import NashgapConfig, load_price_table
from stratbench.suites.nashgap.games import BUCKETS, Bucket
from stratbench.suites.nashgap.players import SCRIPTED_AGENTS
from stratbench.suites.nashgap.run import MODE_FILES, SINGLE_FILES, build_games, run_nashgap

SUITE = "tiered"
TIERS = ("A", "B", "C")
PROVIDERS = ("together", "openai")
MODES = ("pure", "mixed")
DUMMY_PLAYER = "random"  # the original's DummyLLM: uniform action / Dirichlet(1) strategy

# The original's defaults (run_tiered_research_suite.py), kept verbatim.
DEFAULT_TOGETHER_MODEL_TIERS: dict[str, list[str]] = {
    "A": ["meta-llama/Meta-Llama-3.1-405B-Instruct-Turbo", "Qwen/Qwen2.5-72B-Instruct-Turbo"],
    "B": ["meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "mistralai/Mixtral-8x22B-Instruct-v0.1"],
    "C": ["meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo", "Qwen/Qwen2.5-7B-Instruct-Turbo"],
}
DEFAULT_OPENAI_MODEL_TIERS: dict[str, list[str]] = {"A": ["gpt-4o"], "B": ["gpt-4o-mini"], "C": []}
DEFAULT_TIERS = {"together": DEFAULT_TOGETHER_MODEL_TIERS, "openai": DEFAULT_OPENAI_MODEL_TIERS}

NO_TIER = "-"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


# -- configuration ------------------------------------------------------------------------------


@dataclass
class ModelEntry:
    """One model of the suite. `spec` is what plays (a model spec or a scripted player); `provider`,
    `tier` and `model` identify it in the tables; `label` replaces `model` there when given. The
    optional fields override the suite's settings for this model only."""

    spec: str
    provider: str
    tier: str = NO_TIER
    model: str = ""
    label: str | None = None
    policy: str | None = None
    base_url: str | None = None
    chat: bool | None = None
    temperature: float | None = None
    max_tokens: int | None = None

    @property
    def display(self) -> str:
        return self.label or self.model or self.spec

    def identity(self) -> str:
        # the URL as saved (credentials redacted): the same before and after a resume
        url = redact_url(self.base_url) if self.base_url is not None else None
        return json.dumps([self.provider, self.tier, self.display, self.spec, self.policy,
                           url, self.chat, self.temperature, self.max_tokens])

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def provider_of(spec: str) -> tuple[str, str]:
    """(provider, model name) of a player spec: `together:M` → ('together', 'M'), `hf:/p` →
    ('hf', '/p'), `embedded` → ('embedded', 'embedded'), `embedded-instruct` → ('embedded',
    'embedded-instruct') (the local embedded models, named by their spec), `random` →
    ('scripted', 'random')."""
    s = spec.strip()
    if s.lower() in SCRIPTED_AGENTS:
        return "scripted", s.lower()
    from stratbench.models import EMBEDDED_SPECS, split_spec

    kind, name = split_spec(s)  # InputError for malformed specs
    if kind in EMBEDDED_SPECS:  # the models shipped with stratbench: no ":name", the spec names them
        return "embedded", kind
    return kind, name


def model_entry(spec: str, tier: str | None = None, label: str | None = None,
                **overrides: Any) -> ModelEntry:
    """A model given by spec (CLI `--model` or a suite file's `models` list)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("a model entry needs a non-empty spec")
    provider, name = provider_of(spec)
    tier = NO_TIER if tier is None else str(tier).strip()
    if tier != NO_TIER and not _NAME.match(tier):
        raise InputError(f"model {spec!r}: tier {tier!r} must be a short name (letters, digits, . _ -)")
    return ModelEntry(spec=spec.strip(), provider=provider, tier=tier, model=name, label=label,
                      **overrides)


def parse_model_tiers(raw: str | dict[str, Any] | None, default: dict[str, list[str]],
                      flag: str = "--model-tiers-json") -> dict[str, list[str]]:
    """The original's tier map {"A": [...], "B": [...], "C": [...]}; missing tiers are empty.
    Unlike the original, an unknown tier key (a typo) is an error, not silently ignored."""
    if raw is None:
        return {t: list(default.get(t, [])) for t in TIERS}
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except RecursionError:
            raise InputError(f"{flag}: not a tier map (nested too deeply)") from None
        except ValueError as e:
            raise InputError(f"{flag}: not valid JSON ({e})") from None
    else:
        parsed = raw
    if not isinstance(parsed, dict):
        raise InputError(f'{flag}: expected an object like {{"A": ["model"], "B": [], "C": []}}')
    unknown = [k for k in parsed if k not in TIERS]
    if unknown:
        raise InputError(f"{flag}: unknown tier(s) {', '.join(map(repr, unknown))}; tiers are A, B, C")
    out: dict[str, list[str]] = {}
    for t in TIERS:
        values = parsed.get(t, [])
        if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
            raise InputError(f"{flag}: tier {t} must be a list of model names")
        out[t] = [v.strip() for v in values]
    return out


def select_buckets(bucket_ids: Sequence[str] | None) -> list[Bucket]:
    """The buckets to run, in the order given (all six, in the original's order, by default)."""
    if not bucket_ids:
        return list(BUCKETS.values())
    missing = [b for b in bucket_ids if b not in BUCKETS]
    if missing:
        raise InputError(f"unknown bucket id(s) {', '.join(missing)}; known: {', '.join(BUCKETS)}")
    if len(set(bucket_ids)) != len(bucket_ids):
        raise InputError(f"bucket ids listed twice: {', '.join(bucket_ids)}")
    return [BUCKETS[b] for b in bucket_ids]


def build_model_specs(providers: Sequence[str], tiers: dict[str, dict[str, list[str]]]) -> list[ModelEntry]:
    """Providers × tiers × models, in the original's order (provider, then tier A, B, C)."""
    out = []
    for p in providers:
        for t in TIERS:
            for m in tiers[p][t]:
                out.append(ModelEntry(spec=f"{p}:{m}", provider=p, tier=t, model=m))
    return out


@dataclass
class TieredConfig:
    """Everything that defines a tiered suite; stored whole in suite_metadata.json so the suite can
    be resumed and repeated. Defaults are the original script's (30 games per bucket, 20 trials,
    seed 42, Together only, temperature 0, both modes)."""

    num_games_per_bucket: int = 30
    num_trials: int = 20
    seeds: list[int] = field(default_factory=lambda: [42])
    providers: list[str] | None = None  # None: ["together"], or none at all when `models` is given
    bucket_ids: list[str] | None = None  # None: all six buckets
    together_model_tiers: dict[str, list[str]] | None = None  # None: the original's defaults
    openai_model_tiers: dict[str, list[str]] | None = None
    models: list[ModelEntry] = field(default_factory=list)  # explicit models (file / --model)
    use_dummy: bool = False
    modes: list[str] = field(default_factory=lambda: list(MODES))
    policy: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    chat: bool = False
    base_url: str | None = None
    max_concurrency: int = 8
    no_cache: bool = False
    order_rotations: int = 1
    price_table: str | None = None
    output_dir: str = "results"
    shard: str | None = None
    config_file: str | None = None

    # -- derived ---------------------------------------------------------------------------

    def resolved_providers(self) -> list[str]:
        if self.providers is not None:
            return list(self.providers)
        return [] if self.models else ["together"]

    def tiers(self) -> dict[str, dict[str, list[str]]]:
        return {
            "together": parse_model_tiers(self.together_model_tiers, DEFAULT_TOGETHER_MODEL_TIERS,
                                          "--together-model-tiers-json"),
            "openai": parse_model_tiers(self.openai_model_tiers, DEFAULT_OPENAI_MODEL_TIERS,
                                        "--openai-model-tiers-json"),
        }

    def buckets(self) -> list[Bucket]:
        return select_buckets(self.bucket_ids)

    def model_entries(self) -> list[ModelEntry]:
        """Tier models of the chosen providers, then the explicit models; each listed once."""
        entries = build_model_specs(self.resolved_providers(), self.tiers()) + list(self.models)
        seen: dict[str, ModelEntry] = {}
        for e in entries:
            key = e.identity()
            if key in seen:
                raise InputError(f"model {e.display!r} (provider {e.provider}, tier {e.tier}) is listed twice")
            seen[key] = e
        return entries

    # -- checks ----------------------------------------------------------------------------

    def validate(self) -> list[ModelEntry]:
        """Check everything before anything is written; returns the model entries."""
        check_config(self, flags={"models": None})
        if self.num_games_per_bucket < 1:
            raise InputError(f"--num-games-per-bucket must be at least 1 (got {self.num_games_per_bucket})")
        if self.num_trials < 1:
            raise InputError(f"--num-trials must be at least 1 (got {self.num_trials})")
        if not self.seeds:
            raise InputError("--seeds needs at least one seed")
        if any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in self.seeds):
            raise InputError(f"--seeds must be non-negative integers (got {self.seeds})")
        if len(set(self.seeds)) != len(self.seeds):
            raise InputError(f"--seeds lists a seed twice: {self.seeds}")
        bad = [p for p in self.resolved_providers() if p not in PROVIDERS]
        if bad:
            raise InputError(f"unknown provider(s) {', '.join(bad)}; known: {', '.join(PROVIDERS)} "
                             "(other backends: list them as models in a suite file or with --model)")
        if len(set(self.resolved_providers())) != len(self.resolved_providers()):
            raise InputError(f"--providers lists a provider twice: {self.resolved_providers()}")
        if not self.modes or any(m not in MODES for m in self.modes) or len(set(self.modes)) != len(self.modes):
            raise InputError(f"modes must be pure, mixed or both (got {self.modes})")
        check_policy(self.policy)
        if self.max_concurrency < 1:
            raise InputError(f"--max-concurrency must be at least 1 (got {self.max_concurrency})")
        if self.order_rotations < 1:
            raise InputError(f"--order-rotations must be at least 1 (got {self.order_rotations})")
        if self.max_tokens < 1:
            raise InputError(f"--max-tokens must be at least 1 (got {self.max_tokens})")
        parse_shard(self.shard)
        if self.shard is not None and "shard" not in {f.name for f in fields(NashgapConfig)}:
            raise InputError("--shard: this version's Nash-gap runs cannot be sharded yet")
        load_price_table(self.price_table)
        self.buckets()
        entries = self.model_entries()
        if not entries:
            raise InputError("no models configured: give tiers with --together-model-tiers-json / "
                             "--openai-model-tiers-json, --model SPEC, or a suite file's models")
        for e in entries:
            check_policy(e.policy, f"model {e.display!r}: policy")
            if not self.use_dummy:
                _preflight(e, self.base_url)
        return entries

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["models"] = [m.to_json() for m in self.models]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "TieredConfig":
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["models"] = [ModelEntry(**m) for m in kw.get("models", [])]
        return cls(**kw)


def _preflight(entry: ModelEntry, base_url: str | None) -> None:
    """Catch what would fail later (a missing API key, a missing weights file) before anything is
    written, without loading any model."""
    if entry.provider == "scripted":
        return
    from stratbench.models import split_spec

    kind, name = split_spec(entry.spec)
    from stratbench.models.openai_api import PROVIDERS as API

    if kind in API:
        import os

        _, env, required = API[kind]
        if kind == "openai-compatible" and not (entry.base_url or base_url):
            raise InputError(f"{entry.spec}: openai-compatible models need a base_url")
        from stratbench.models.costs import planning

        if required and not (os.environ.get(env) or "").strip() and not planning():  # (--dry-run: no request)
            raise InputError(f"{entry.spec}: set {env} (or run an offline trial with --use-dummy, or --dry-run)")
    elif kind == "gguf" and not Path(name).is_file():
        raise InputError(f"{entry.spec}: no such GGUF file")


def _resupply_urls(config: TieredConfig, given: TieredConfig) -> None:
    """The base URLs a resumed suite is given again (a suite folder holds URLs with their
    credentials redacted): `given.base_url` (--base-url) replaces the suite's, and a model's own
    where the suite saved that URL; a model of `given.models` (--config: the suite file again) that
    is a saved model gives it its URL."""
    if given.base_url is not None:
        config.base_url = given.base_url
    by_identity = {m.identity(): m.base_url for m in given.models if m.base_url is not None}
    for m in config.models:
        if m.base_url is None or not is_redacted_url(m.base_url):
            continue
        if m.identity() in by_identity:
            m.base_url = by_identity[m.identity()]
        elif given.base_url is not None and m.base_url == redact_url(given.base_url):
            m.base_url = given.base_url


def _check_no_redacted_urls(config: TieredConfig, entries: Sequence[ModelEntry], folder: Path) -> None:
    """A resumed suite whose models would connect with a saved (redacted) URL: one line naming
    what to pass, before anything is written."""
    for e in entries:
        url = e.base_url if e.base_url is not None else config.base_url
        if url is not None and _player(config, e) == e.spec and is_redacted_url(url):
            raise InputError(f"--resume {folder}: model {e.display!r}: its base URL {url} was saved with the "
                             "credentials redacted (***); give it again: stratbench suite tiered --resume "
                             f"{folder} --base-url URL (a model's own URL: --config SUITE_FILE)")


# -- folders ------------------------------------------------------------------------------------


def _slug(text: str, limit: int = 80) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "model"
    if len(s) > limit:
        s = s[:limit - 9] + "-" + hashlib.sha1(text.encode()).hexdigest()[:8]
    return s


def model_folder_keys(entries: Sequence[ModelEntry]) -> list[str]:
    """One distinct folder name per model, `<provider>__<tier>__<model>` (the tier left out when
    there is none). Names that would collide after slugging get a hash of the full identity."""
    base = [
        "__".join(p for p in (e.provider, e.tier if e.tier != NO_TIER else None, _slug(e.display)) if p)
        for e in entries
    ]
    out = []
    for e, b in zip(entries, base):
        if base.count(b) > 1:
            b = f"{b}__{hashlib.sha1(e.identity().encode()).hexdigest()[:8]}"
        out.append(b)
    return out


@dataclass
class Cell:
    """One Nash-gap run of the suite: a model on a bucket's games for a seed."""

    seed: int
    bucket: Bucket
    entry: ModelEntry
    key: str  # the model's folder name
    player: str  # what plays: the entry's spec, or the dummy player with --use-dummy

    @property
    def tag(self) -> str:
        return f"seed{self.seed}_{self.bucket.id}"


def _cells(config: TieredConfig, entries: list[ModelEntry]) -> list[Cell]:
    keys = model_folder_keys(entries)
    return [Cell(s, b, e, k, _player(config, e)) for s in config.seeds for b in config.buckets()
            for e, k in zip(entries, keys)]


def _player(config: TieredConfig, entry: ModelEntry) -> str:
    """With --use-dummy every *model* is played by the random player; scripted reference players
    stay themselves (they need nothing external)."""
    return DUMMY_PLAYER if config.use_dummy and entry.provider != "scripted" else entry.spec


def nashgap_config(config: TieredConfig, cell: Cell, models_dir: Path) -> NashgapConfig:
    """The Nash-gap run of one cell: the bucket's games for the seed, both modes by default."""
    e, b = cell.entry, cell.bucket
    kw: dict[str, Any] = {}
    if config.shard is not None:
        kw["shard"] = config.shard
    return NashgapConfig(
        num_games=config.num_games_per_bucket, num_trials=config.num_trials,
        num_rows=b.rows, num_cols=b.cols, payoff_min=float(b.low), payoff_max=float(b.high),
        bucket=b.id, seed=cell.seed, model=cell.player,
        policy=e.policy if e.policy is not None else config.policy,
        order_rotations=config.order_rotations,
        base_url=e.base_url if e.base_url is not None else config.base_url,
        max_concurrency=config.max_concurrency, no_cache=config.no_cache,
        temperature=e.temperature if e.temperature is not None else config.temperature,
        max_tokens=e.max_tokens if e.max_tokens is not None else config.max_tokens,
        chat=e.chat if e.chat is not None else config.chat,
        price_table=config.price_table, folder_tag=cell.tag,
        output_dir=str(models_dir / cell.key),
        combined=len(config.modes) == 2, mixed_strategy=config.modes == ["mixed"],
        **kw,
    )


#: the settings of a cell's Nash-gap run that shape its records (what a resumed suite's saved plan
#: must give each cell that has a folder already)
CELL_KEYS = ("num_games", "num_trials", "num_rows", "num_cols", "payoff_min", "payoff_max", "bucket", "seed",
             "model", "policy", "order_rotations", "temperature", "max_tokens", "chat", "combined", "mixed_strategy")


def check_cells_are_the_plans(config: TieredConfig, cells: list[Cell], models_dir: Path, where: str) -> None:
    """InputError naming suite_metadata.json when a cell already run (finished or not) was run with
    other settings than the saved plan gives it now: the plan was edited by hand, and resuming it
    would play the cells left with the edited settings beside the earlier ones (a table of cells
    of 6 games and of 3; fuzz 29 A F2), and a merge would describe its runs wrongly. ``where``:
    the suite folder as the message names it. Nothing has changed yet."""
    for cell in cells:
        run_folder, _ = find_cell_folder(models_dir / cell.key, cell.tag)
        if run_folder is None:
            continue
        try:
            saved = json.loads((run_folder / "run.json").read_text())["config"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # (the cell's own resume names its run.json)
        planned = json.loads(json.dumps(asdict(nashgap_config(config, cell, models_dir))))
        for key in CELL_KEYS:
            if isinstance(saved, dict) and key in saved and saved[key] != planned.get(key):
                raise InputError(f"{where}/suite_metadata.json: its plan gives the cell {cell.tag} of "
                                 f"{cell.key} {key} {planned.get(key)!r}, but its run {run_folder.name} was run with "
                                 f"{saved[key]!r}: suite_metadata.json was edited by hand; the folder is left as it is")


def find_cell_folder(model_dir: Path, tag: str) -> tuple[Path | None, bool]:
    """The Nash-gap folder of a cell inside its model folder (found by the tag in its run.json),
    and whether it finished. Two folders that carry the cell's tag are one line: a suite holds
    one run per cell, and taking the first by name merged, resumed and tabled a run copied in
    beside the suite's own (fuzz 29 A F1)."""
    if not model_dir.is_dir():
        return None, False
    found: list[tuple[Path, bool]] = []
    for p in sorted(model_dir.iterdir()):
        meta = p / "run.json"
        if not meta.is_file():
            continue
        try:
            m = json.loads(meta.read_text())
        except ValueError:
            continue
        if isinstance(m, dict) and isinstance(m.get("config"), dict) and m["config"].get("folder_tag") == tag:
            found.append((p, m.get("status") == "finished"))
    if len(found) > 1:
        raise InputError(f"{model_dir}: {len(found)} runs of the cell {tag} ({found[0][0].name}, {found[1][0].name}); "
                         "a tiered suite holds one run per cell: remove the one its suite_metadata.json does not "
                         "list (copied in by hand?)")
    return found[0] if found else (None, False)


# -- tables -------------------------------------------------------------------------------------

# The original's columns, in its order (decision_source_counts holds our status counts: ok,
# parsed, parse_failed, error), then stratbench's additions.
ALL_RUNS_COLUMNS = (
    "seed", "provider", "bucket_id", "equilibrium_target", "num_rows", "num_cols", "payoff_min",
    "payoff_max", "tier", "model", "mode", "num_games", "num_trials_per_game", "total_trials",
    "mean_nash_gap", "median_nash_gap", "std_nash_gap", "min_nash_gap", "max_nash_gap",
    "mean_llm_value", "reference_value", "parse_success_rate", "decision_source_counts",
    # additions
    "player", "policy", "model_folder", "n_games_scored",
    "mean_nash_gap_ci95_low", "mean_nash_gap_ci95_high",
    "mean_nash_gap_normalized",
    "mean_exploitability", "mean_exploitability_ci95_low", "mean_exploitability_ci95_high",
    "mean_exploitability_normalized", "mean_exploitability_normalized_ci95_low",
    "mean_exploitability_normalized_ci95_high",
    "mean_mixture_exploitability", "position_bias", "mean_label_mass",
    "parse_failure_rate", "error_rate",
)
GROUP_KEYS = ("provider", "bucket_id", "equilibrium_target", "num_rows", "num_cols", "payoff_min",
              "payoff_max", "tier", "model", "mode")
ORIGINAL_AGG_METRICS = ("mean_nash_gap", "median_nash_gap", "std_nash_gap", "mean_llm_value",
                        "reference_value", "parse_success_rate")
EXTRA_AGG_METRICS = ("mean_nash_gap_normalized", "mean_exploitability",
                     "mean_exploitability_normalized", "position_bias", "parse_failure_rate",
                     "error_rate")
# Metrics whose aggregated CI is a bootstrap over games (stratified by seed): the per-trial key
# each is the mean of.
CI_METRICS = {"mean_nash_gap": "nash_gap", "mean_llm_value": "llm_value",
              "mean_exploitability": "exploitability",
              "mean_exploitability_normalized": "exploitability_normalized"}
MD_COLUMNS = ("provider", "bucket_id", "mode", "tier", "model", "player", "mean_nash_gap_mean",
              "mean_nash_gap_std_across_seeds", "mean_nash_gap_ci95", "mean_exploitability_mean",
              "mean_exploitability_ci95", "mean_exploitability_normalized_mean",
              "mean_llm_value_mean", "reference_value_mean", "parse_success_rate_mean",
              "parse_failure_rate_mean", "error_rate_mean", "n_games_scored", "seeds")


def _mode_files(run_config: dict[str, Any], mode: str) -> tuple[str, str]:
    return MODE_FILES[mode] if run_config.get("combined") else SINGLE_FILES


def _ci_cols(name: str, ci: Any) -> dict[str, Any]:
    lo, hi = (ci if ci else (None, None))
    return {f"{name}_ci95_low": lo, f"{name}_ci95_high": hi}


def per_game_means(records: Iterable[dict[str, Any]], key: str) -> list[float]:
    """Mean of `key` over each game's scored trials, in game order (games are the units)."""
    by_game: dict[int, list[float]] = {}
    for r in records:
        if r.get("status") in SCORED_STATUSES and r.get(key) is not None:
            by_game.setdefault(int(r["game_id"]), []).append(float(r[key]))
    return [float(np.mean(v)) for _, v in sorted(by_game.items())]


def run_rows(cell: Cell, folder: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, list[float]]]]:
    """The all-runs rows of one finished cell (one per mode), and its per-game values per mode
    for the aggregated CIs. Read from the run folder, so a resumed suite tables the same way."""
    meta = json.loads((folder / "run.json").read_text())
    rc = meta["config"]
    rows, per_game = [], {}
    b, e = cell.bucket, cell.entry
    for mode in MODES:
        trials_file, summary_file = _mode_files(rc, mode)
        if not (folder / summary_file).is_file():
            continue
        s = json.loads((folder / summary_file).read_text())
        if s.get("mode", mode) != mode:
            continue
        records = read_jsonl(folder / trials_file)
        per_game[mode] = {k: per_game_means(records, v) for k, v in CI_METRICS.items()}
        total = s["total_trials"]
        row = {
            "seed": cell.seed, "provider": e.provider, "bucket_id": b.id,
            "equilibrium_target": b.kind, "num_rows": b.rows, "num_cols": b.cols,
            "payoff_min": b.low, "payoff_max": b.high, "tier": e.tier, "model": e.display,
            "mode": mode, "num_games": s["num_games"], "num_trials_per_game": s["num_trials_per_game"],
            "total_trials": total, "mean_nash_gap": s["mean_nash_gap"],
            "median_nash_gap": s["median_nash_gap"], "std_nash_gap": s["std_nash_gap"],
            "min_nash_gap": s["min_nash_gap"], "max_nash_gap": s["max_nash_gap"],
            "mean_llm_value": s["mean_llm_value"], "reference_value": s["mean_br_value"],
            "parse_success_rate": s["n_trials_scored"] / total if total else None,
            "decision_source_counts": json.dumps(s["status_counts"], sort_keys=True),
            "player": cell.player, "policy": s.get("policy"),
            "model_folder": cell.key, "n_games_scored": s["n_games"],
            **_ci_cols("mean_nash_gap", s.get("mean_nash_gap_ci95")),
            "mean_nash_gap_normalized": s.get("mean_nash_gap_normalized"),
            "mean_exploitability": s.get("mean_exploitability"),
            **_ci_cols("mean_exploitability", s.get("mean_exploitability_ci95")),
            "mean_exploitability_normalized": s.get("mean_exploitability_normalized"),
            **_ci_cols("mean_exploitability_normalized", s.get("mean_exploitability_normalized_ci95")),
            "mean_mixture_exploitability": s.get("mean_mixture_exploitability"),
            "position_bias": s.get("position_bias"), "mean_label_mass": s.get("mean_label_mass"),
            "parse_failure_rate": s["parse_failure_rate"], "error_rate": s["error_rate"],
        }
        rows.append({k: row[k] for k in ALL_RUNS_COLUMNS})
    return rows, per_game


def aggregate(rows: Sequence[dict[str, Any]],
              per_game: dict[tuple[Any, ...], dict[str, list[float]]]) -> list[dict[str, Any]]:
    """Across seeds, per (provider, bucket, tier, model, mode): the original's `<metric>_mean` and
    `<metric>_std_across_seeds` (population std, as numpy), plus stratbench's metrics, bootstrap
    CIs over games (stratified by seed) and the number of games they rest on.

    `per_game` maps (model_folder, bucket_id, mode, seed) to that run's per-game values."""
    grouped: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        grouped.setdefault((r["model_folder"],) + tuple(r[k] for k in GROUP_KEYS), []).append(r)
    out = []
    for key, group in grouped.items():
        entry: dict[str, Any] = dict(zip(GROUP_KEYS, key[1:]))
        entry["player"] = group[0]["player"]
        entry["policy"] = group[0]["policy"]
        entry["model_folder"] = key[0]
        for metric in ORIGINAL_AGG_METRICS + EXTRA_AGG_METRICS:
            vals = [float(g[metric]) for g in group if g[metric] is not None]
            entry[f"{metric}_mean"] = float(np.mean(vals)) if vals else None
            entry[f"{metric}_std_across_seeds"] = float(np.std(vals)) if vals else None
        for metric in CI_METRICS:
            groups = [per_game.get((key[0], g["bucket_id"], g["mode"], g["seed"]), {}).get(metric, [])
                      for g in group]
            # A fixed bootstrap seed per metric: the same data always gives the same interval.
            ci = stratified_bootstrap_ci(groups, seed=int(hashlib.sha1(metric.encode()).hexdigest()[:8], 16))
            entry.update(_ci_cols(metric, ci))
        entry["n_games_scored"] = sum(int(g["n_games_scored"]) for g in group)
        entry["n_seeds"] = len(group)
        entry["seeds"] = ",".join(str(g["seed"]) for g in group)
        out.append(entry)
    out.sort(key=lambda r: (r["provider"], r["bucket_id"], r["mode"], r["tier"], r["model"],
                            r["model_folder"]))
    return out


def _cell_text(v: Any) -> str:
    """One fixed text form per value, so equal tables are equal bytes: floats as repr (shortest
    round-trip), None as empty."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return repr(v) if np.isfinite(v) else ""
    return str(v)


def csv_text(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow(csv_row(_cell_text(r.get(c)) for c in columns))  # labels never run as formulas
    return buf.getvalue()


def _md(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v).replace("|", "\\|")


def markdown_table(agg: Sequence[dict[str, Any]]) -> str:
    """The main report table: means across seeds with their spread and 95% CIs over games."""
    if not agg:
        return "No rows generated.\n"
    lines = ["| " + " | ".join(MD_COLUMNS) + " |", "|" + "|".join(["---"] * len(MD_COLUMNS)) + "|"]
    for r in agg:
        cells = []
        for c in MD_COLUMNS:
            if c.endswith("_ci95"):
                lo, hi = r.get(f"{c}_low"), r.get(f"{c}_high")
                cells.append("—" if lo is None else f"[{lo:.4f}, {hi:.4f}]")
            else:
                cells.append(_md(r.get(c)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def agg_columns(agg: Sequence[dict[str, Any]]) -> list[str]:
    cols = list(GROUP_KEYS) + ["player", "policy", "model_folder"]
    for m in ORIGINAL_AGG_METRICS + EXTRA_AGG_METRICS:
        cols += [f"{m}_mean", f"{m}_std_across_seeds"]
    for m in CI_METRICS:
        cols += [f"{m}_ci95_low", f"{m}_ci95_high"]
    return cols + ["n_games_scored", "n_seeds", "seeds"]


def write_tables(folder: Path, rows: Sequence[dict[str, Any]], agg: Sequence[dict[str, Any]]) -> None:
    write_atomic(folder / "big_table_all_runs.csv", csv_text(rows, ALL_RUNS_COLUMNS))
    write_atomic(folder / "big_table_aggregated.csv", csv_text(agg, agg_columns(agg)))
    write_atomic(folder / "big_table_aggregated.md", markdown_table(agg))


# -- running ------------------------------------------------------------------------------------


@dataclass
class TieredResult:
    folder: Path
    rows: list[dict[str, Any]]  # big_table_all_runs
    aggregated: list[dict[str, Any]]  # big_table_aggregated
    n_errors: int
    runs: list[dict[str, Any]]  # per cell: ids, folder (relative), status, totals
    config: TieredConfig | None = None  # as run (on resume: the suite's own)


def _bucket_json(b: Bucket) -> dict[str, Any]:
    return {"bucket_id": b.id, "num_rows": b.rows, "num_cols": b.cols,
            "payoff_range": [b.low, b.high], "nash_type": b.kind}


def _write_games(folder: Path, config: TieredConfig) -> None:
    """games/seed_<s>/<bucket>.json as the original wrote them: the games every model of that
    cell plays (identical to each run folder's games.json)."""
    for s in config.seeds:
        d = folder / "games" / f"seed_{s}"
        d.mkdir(parents=True, exist_ok=True)
        for b in config.buckets():
            cfg = NashgapConfig(num_games=config.num_games_per_bucket, seed=s, bucket=b.id)
            write_json_atomic(d / f"{b.id}.json", [e.to_json() for e in build_games(cfg)])


def _metadata(config: TieredConfig, entries: list[ModelEntry]) -> dict[str, Any]:
    tiers = config.tiers()
    keys = model_folder_keys(entries)
    meta = run_metadata(SUITE, config.to_json(), kind="suite")
    # The original's controlled variables, under its key names.
    meta.update({
        "created_at": meta["start_time"],
        "num_games_per_bucket": config.num_games_per_bucket,
        "num_trials": config.num_trials,
        "seeds": list(config.seeds),
        "temperature": config.temperature,
        "num_workers": config.max_concurrency,
        "providers": config.resolved_providers(),
        "buckets": [_bucket_json(b) for b in config.buckets()],
        "together_model_tiers": tiers["together"],
        "openai_model_tiers": tiers["openai"],
        "use_dummy": config.use_dummy,
        "modes": list(config.modes),
        "shard": config.shard,
        "models": redact_json([{**e.to_json(), "player": _player(config, e), "folder": f"models/{k}"}
                               for e, k in zip(entries, keys)]),
        "runs": [],
    })
    return meta


def run_tiered_suite(
    config: TieredConfig,
    progress: Any | None = None,
    resume_dir: str | Path | None = None,
    on_cell: Callable[[Cell, RunResult | None, Path], None] | None = None,
) -> TieredResult:
    """Run (or, with `resume_dir`, finish) a tiered suite and write its folder:

    ``suite_metadata.json``, ``big_table_all_runs.csv``, ``big_table_aggregated.csv``,
    ``big_table_aggregated.md``, ``games/seed_<s>/<bucket>.json`` and
    ``models/<provider>__<tier>__<model>/<nashgap run folder per seed and bucket>``.

    Everything is validated before the folder is created. Cells already finished (on resume) are
    not run again; an interrupted cell continues in its own folder. `on_cell(cell, result, folder)`
    is called after each cell (`result` is None for a cell finished earlier).
    """
    if resume_dir is not None:
        folder = Path(resume_dir)
        meta_path = folder / "suite_metadata.json"
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            raise InputError(f"--resume {folder}: not a tiered suite folder (no readable suite_metadata.json)") from None
        if meta.get("suite") != SUITE:
            raise InputError(f"--resume {folder}: not a tiered suite folder")
        given = config
        config = TieredConfig.from_json(meta["config"])
        config.max_concurrency = given.max_concurrency
        _resupply_urls(config, given)
        entries = config.validate()
        _check_no_redacted_urls(config, entries, folder)
        meta["status"] = "running"
        meta.setdefault("resumed_at", []).append(now_iso())
    else:
        entries = config.validate()
        for cell in _cells(config, entries):  # e.g. a shard count above the number of games
            nashgap_config(config, cell, Path(config.output_dir)).validate()
        folder = create_run_folder(config.output_dir, "tiered_suite").path
        meta = _metadata(config, entries)
        write_json_atomic(folder / "suite_metadata.json", meta)
        _write_games(folder, config)
    announce_folder(folder)  # an interrupted suite is resumed by its own folder, not a cell's
    models_dir = folder / "models"
    cells = _cells(config, entries)
    if resume_dir is not None:
        check_cells_are_the_plans(config, cells, models_dir, f"--resume {folder}")
    overall = progress.add_task("suite", total=len(cells)) if progress is not None else None

    runs: dict[tuple[int, str, str], dict[str, Any]] = {
        (r["seed"], r["bucket_id"], r["model_folder"]): r for r in meta.get("runs", [])}
    order = [(c.seed, c.bucket.id, c.key) for c in cells]
    all_rows: list[dict[str, Any]] = []
    per_game: dict[tuple[Any, ...], dict[str, list[float]]] = {}
    n_errors = 0
    for cell in cells:
        model_dir = models_dir / cell.key
        run_folder, finished = find_cell_folder(model_dir, cell.tag)
        result: RunResult | None = None
        if not finished:
            before = set(progress.task_ids) if progress is not None else set()
            result = run_nashgap(nashgap_config(config, cell, models_dir), progress=progress,
                                 resume_dir=run_folder)
            if progress is not None:
                for t in set(progress.task_ids) - before:
                    progress.remove_task(t)
            run_folder = result.folder
        assert run_folder is not None
        rows, entry = collect_cell(cell, run_folder, folder, per_game)
        all_rows += rows
        n_errors += entry["errors"]
        runs[(cell.seed, cell.bucket.id, cell.key)] = entry
        meta["runs"] = [runs[k] for k in order if k in runs]
        write_json_atomic(folder / "suite_metadata.json", meta)
        if progress is not None:
            progress.advance(overall)
        if on_cell is not None:
            on_cell(cell, result, run_folder)

    agg = aggregate(all_rows, per_game)
    write_tables(folder, all_rows, agg)
    meta["end_time"] = now_iso()
    meta["status"] = "finished"
    meta["totals"] = suite_totals(meta["runs"], len(cells), n_errors)
    write_json_atomic(folder / "suite_metadata.json", meta)
    return TieredResult(folder, all_rows, agg, n_errors, meta["runs"], config)


def collect_cell(cell: Cell, run_folder: Path, suite_folder: Path,
                 per_game: dict[tuple[Any, ...], dict[str, list[float]]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A finished cell run's table rows (its per-game values added to `per_game`) and its entry
    in suite_metadata.json's run list — one code path for suite runs and suite merges."""
    rows, pg = run_rows(cell, run_folder)
    for mode, values in pg.items():
        per_game[(cell.key, cell.bucket.id, mode, cell.seed)] = values
    errors = sum(json.loads(r["decision_source_counts"]).get("error", 0) for r in rows)
    run_meta = json.loads((run_folder / "run.json").read_text())
    entry = {
        "seed": cell.seed, "bucket_id": cell.bucket.id, "model_folder": cell.key,
        "provider": cell.entry.provider, "tier": cell.entry.tier, "model": cell.entry.display,
        "player": cell.player, "folder": str(run_folder.relative_to(suite_folder)),
        "status": run_meta.get("status"), "errors": errors, "totals": run_meta.get("totals", {}),
        "start_time": run_meta.get("start_time"), "end_time": run_meta.get("end_time"),
    }
    if "merged_from" in run_meta:
        entry["merged_from"] = run_meta["merged_from"]
    return rows, entry


def suite_totals(runs: Sequence[dict[str, Any]], n_cells: int, n_errors: int) -> dict[str, Any]:
    """suite_metadata.json's totals: the cells' run totals summed."""
    totals: dict[str, Any] = {"runs": n_cells, "errors": n_errors}
    for k in ("records", "model_calls", "model_cache_hits", "model_tokens_in", "model_tokens_out"):
        totals[k] = sum(int(r["totals"].get(k, 0) or 0) for r in runs)
    unknown = sum(int(r["totals"].get("model_usage_unknown", 0) or 0) for r in runs)
    if unknown:  # calls whose provider reported no usage: in neither the tokens nor the cost
        totals["model_usage_unknown"] = unknown
    costs = [r["totals"]["model_cost_usd"] for r in runs if "model_cost_usd" in r["totals"]]
    if costs:
        totals["model_cost_usd"] = float(sum(costs))
    return totals


def check_tiered_folder(folder: Path, meta: dict[str, Any]) -> None:
    """InputError (one line naming the file) when a finished tiered suite's tables or list of runs
    are not what its cells' records give: the big tables and suite_metadata.json's runs and totals
    recomputed from the finished cell runs (as a merge computes them) and compared — what the
    report checks before it shows them (an edited table was shown as it stood). An unfinished suite
    has no tables to check; one that holds them anyway (its status edited, or a resume of the
    finished suite stopped) is checked as a finished one. Each cell run's own records are the report's to
    check, as any run's."""
    try:
        config = TieredConfig.from_json(meta["config"])
        entries = config.model_entries()
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{folder}/suite_metadata.json: its config cannot be read ({e})") from None
    tables = ("big_table_all_runs.csv", "big_table_aggregated.csv", "big_table_aggregated.md")
    if meta.get("status") != "finished" and not any((folder / name).exists() for name in tables):
        return  # (an unfinished suite holding tables — written when it finishes — is checked as a finished one)
    rows: list[dict[str, Any]] = []
    per_game: dict[tuple[Any, ...], dict[str, list[float]]] = {}
    listed = []
    check_cells_are_the_plans(config, _cells(config, entries), folder / "models", str(folder))
    for cell in _cells(config, entries):
        run_folder, finished = find_cell_folder(folder / "models" / cell.key, cell.tag)
        if run_folder is None or not finished:
            raise InputError(f"{folder}/suite_metadata.json: the finished suite's cell {cell.key} "
                             f"({cell.bucket.id}, seed {cell.seed}) has no finished run (edited by hand)")
        more, entry = collect_cell(cell, run_folder, folder, per_game)
        rows += more
        listed.append(entry)
    agg = aggregate(rows, per_game)
    for name, text in (("big_table_all_runs.csv", csv_text(rows, ALL_RUNS_COLUMNS)),
                       ("big_table_aggregated.csv", csv_text(agg, agg_columns(agg))),
                       ("big_table_aggregated.md", markdown_table(agg))):
        try:
            saved = (folder / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            raise InputError(f"{folder / name}: missing or unreadable (the suite's cells give one)") from None
        if saved != text:
            raise InputError(f"{folder / name}: is not the table its cells' records give (edited by hand)")
    saved_runs = meta.get("runs")
    if json.dumps(saved_runs, sort_keys=True, default=str) != json.dumps(listed, sort_keys=True, default=str):
        raise InputError(f"{folder}/suite_metadata.json: its list of runs is not its cells' (edited by hand)")
    want = suite_totals(listed, len(listed), sum(e["errors"] for e in listed))
    if json.dumps(meta.get("totals"), sort_keys=True) != json.dumps(want, sort_keys=True):
        raise InputError(f"{folder}/suite_metadata.json: its totals are not its cells' (edited by hand)")
