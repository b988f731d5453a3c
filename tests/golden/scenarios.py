"""Golden scenarios: real commands whose outputs pin the product's behaviour across refactors.

Each scenario runs `stratbench` commands (fresh interpreters, as a user would) in its own folder
and reduces what they wrote to a *fingerprint*: exit codes, the first line of stderr on failure,
folder and file names (timestamps masked), run.json keys, config and totals, every summary and
every record (timings and machine paths masked, floats compared with a tolerance). The
fingerprints were recorded before the Suite refactor (`python tests/golden/regen.py`) and must
stay equal: a refactor is behaviour-neutral or it is not a refactor.

Scenarios use scripted players, the fake OpenAI-compatible server (deterministic generations) and
the embedded model on tiny budgets, so the whole set runs in about a minute and a half.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
TESTS = HERE.parent
STORIES = TESTS / "data" / "tmgbench_stories"

# Keys whose values say only how fast or where something ran (or whether the cache answered).
VOLATILE = frozenset({
    "latency_s", "seconds", "start_time", "end_time", "resumed_at", "merged_at", "created",
    "command", "platform", "versions", "git", "llama_cpp_python", "path", "elapsed_s", "cache", "created_at",
})
TS = re.compile(r"\d{8}_\d{6}")
URL = re.compile(r"http://127\.0\.0\.1:\d+")


@dataclass
class Step:
    args: list[str]
    expect_rc: int | None = None  # checked by the harness when set


#: How a fingerprint is compared with its golden; written into every golden file (``compare``), so
#: the file says which fields are compared how. Floats computed through BLAS/LAPACK (the Nash
#: solver's polish, means of many numbers) legitimately differ in their last bits between CPUs,
#: OpenBLAS kernels and thread counts (measured: up to 2e-15 relative); llama.cpp's log-probabilities
#: are bit-identical on every x86-64 CPU for the build `make install` pins (x86-64-v3: measured on a
#: Sapphire Rapids Xeon and an emulated Haswell, 1-8 threads), while builds for other instruction sets
#: differ by up to 0.68 nat (the embedded golden was re-recorded when the build was pinned). Neither
#: tolerance lets a different optimum pass: a CH mean level of 1.00 against 2.73, a Nash strategy or a
#: parsed action differ by far more.
PLAIN_TOL = 1e-9
MODEL_TOL = 2e-3


def compare_rules(tol: float) -> dict[str, Any]:
    return {
        "exact": "exit codes, stderr first lines, file names, keys, strings, booleans, integers and nulls",
        "floats": {"rel_tol": tol, "abs_tol": tol},
        "text_files": ".csv, .md and .txt files token by token: words and integers exactly, other numbers as "
                      "floats",
        "masked": sorted(VOLATILE) + ["*latency_s", "timestamps in names", "temporary paths", "server URLs",
                                       "report/, PNG and SQLite files by name only"],
    }


@dataclass
class Scenario:
    name: str
    steps: list[Step | Callable[["Ctx"], Step]]
    model: bool = False  # numbers come from the embedded model: compare floats loosely
    server: bool = False  # needs the fake OpenAI-compatible server
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tol(self) -> float:
        return MODEL_TOL if self.model else PLAIN_TOL


@dataclass
class Ctx:
    root: Path
    base_url: str | None = None

    def folders(self, pattern: str) -> list[str]:
        return sorted(str(p) for p in self.root.glob(pattern))


def run_cli(args: list[str], cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CI="1", STRATBENCH_CACHE_DIR=str(cache), COLUMNS="200")
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "stratbench", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600, env=env)


def _mask(text: str, root: Path) -> str:
    text = text.replace(str(root), "<ROOT>").replace(str(TESTS.parent), "<REPO>")
    return URL.sub("<URL>", TS.sub("<TS>", text))


def _clean(x: Any, root: Path) -> Any:
    if isinstance(x, dict):
        return {k: ("<V>" if k in VOLATILE or k.endswith("latency_s") else _clean(v, root)) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v, root) for v in x]
    if isinstance(x, str):
        return _mask(x, root)
    return x


def _read_jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def fingerprint_tree(root: Path) -> dict[str, Any]:
    """Every file under root: JSON/JSONL cleaned, CSV/MD text masked, other files by name only."""
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        rel = _mask(p.relative_to(root).as_posix(), root)
        if "/report/" in f"/{rel}" or rel.endswith(".png") or rel.endswith(".sqlite"):
            out[rel] = "<file>"
        elif p.suffix == ".json":
            out[rel] = _clean(json.loads(p.read_text(encoding="utf-8")), root)
        elif p.suffix == ".jsonl":
            out[rel] = _clean(_read_jsonl(p), root)
        elif p.suffix in (".csv", ".md", ".txt"):
            out[rel] = _mask(p.read_text(encoding="utf-8"), root)
        else:
            out[rel] = "<file>"
    return out


def run_scenario(sc: Scenario, root: Path, cache: Path, base_url: str | None = None) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(root, base_url)
    steps = []
    for step in sc.steps:
        s = step(ctx) if callable(step) else step
        args = [a.replace("{URL}", base_url or "") for a in s.args]
        r = run_cli(args, root, cache)
        first_err = r.stderr.strip().splitlines()[:1] if r.returncode == 2 else []
        steps.append({"args": _mask(" ".join(args), root), "rc": r.returncode,
                      "stderr_first": [_mask(x, root) for x in first_err]})
        if s.expect_rc is not None and r.returncode != s.expect_rc:
            raise AssertionError(f"{sc.name}: {' '.join(args)} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
    return {"steps": steps, "files": fingerprint_tree(root)}


# ------------------------------------------------------------------------------------------------
# The scenarios
# ------------------------------------------------------------------------------------------------

GAMES_FILE = [
    {"payoff_matrix": [[1, -1], [-1, 1]], "row_labels": ["H", "T"], "col_labels": ["h", "t"]},
    {"payoff_matrix": [[3, 0, -2], [1, 2, 0]]},
    {"payoff_matrix": [[0.5, -0.25], [-0.75, 1.5]]},
]

SUITE_FILE = """
name = "golden"
seeds = [3]
models = ["random", "nash"]

[nashgap]
num_games = 3
num_trials = 2
combined = true
"""

SUITE_FILE_2 = """
name = "golden-tmg"
seeds = [4]
models = ["oracle", "empty"]

[tmgbench]
games = "111,444"
"""


def _merge(pattern: str, out: str = "merged") -> Callable[[Ctx], Step]:
    def make(ctx: Ctx) -> Step:
        return Step(["merge", *ctx.folders(pattern), "--output-dir", out, "--quiet"], 0)
    return make


def _compare(a: str, b: str, out: str) -> Callable[[Ctx], Step]:
    def make(ctx: Ctx) -> Step:
        (fa,), (fb,) = ctx.folders(a), ctx.folders(b)
        return Step(["compare", fa, fb, "--output", out])
    return make


def _with_file(name: str, text: str, step: Step) -> Callable[[Ctx], Step]:
    def make(ctx: Ctx) -> Step:
        (ctx.root / name).write_text(text)
        return step
    return make


def _report(pattern: str) -> Callable[[Ctx], Step]:
    def make(ctx: Ctx) -> Step:
        return Step(["report", ctx.folders(pattern)[0], "--quiet", "--figures", "none"], 0)
    return make


SCENARIOS: list[Scenario] = [
    Scenario("nashgap_dummy", [
        Step(["nashgap", "--num-games", "6", "--num-trials", "3", "--llm-type", "dummy", "--seed", "42"], 0),
        Step(["nashgap", "run", "--num-games", "3", "--num-trials", "2", "--llm-type", "dummy", "--seed", "42",
              "--mixed-strategy", "--overwrite"], 0),
    ]),
    Scenario("nashgap_combined_players", [
        Step(["nashgap", "--num-games", "4", "--num-trials", "2", "--model", "nash", "--model", "random",
              "--model", "first-action", "--combined", "--seed", "7", "--order-rotations", "2"], 0),
        Step(["nashgap", "--bucket", "3x3_midVar_mixed", "--num-games", "3", "--num-trials", "2",
              "--model", "maximin-pure", "--seed", "1", "--mixed-strategy", "--parallel", "--num-workers", "3",
              "--output-dir", "bucket"], 0),
        # each step its own folder: two runs in one folder within different seconds mask to one name
        _with_file("games.json", json.dumps(GAMES_FILE),
                   Step(["nashgap", "--games-file", "games.json", "--model", "nash", "--num-trials", "2",
                         "--seed", "0", "--output-dir", "file"], 0)),
    ]),
    Scenario("nashgap_shards_merge_compare", [
        Step(["nashgap", "--num-games", "5", "--num-trials", "2", "--model", "random", "--seed", "5",
              "--combined", "--shard", "1/2", "--output-dir", "shards"], 0),
        Step(["nashgap", "--num-games", "5", "--num-trials", "2", "--model", "random", "--seed", "5",
              "--combined", "--shard", "2/2", "--output-dir", "shards"], 0),
        _merge("shards/*"),
        Step(["nashgap", "--num-games", "5", "--num-trials", "2", "--model", "nash", "--seed", "5",
              "--combined", "--output-dir", "nash"], 0),
        _compare("merged/*", "nash/*", "cmp.json"),
    ]),
    Scenario("nashgap_errors", [
        Step(["nashgap", "--num-games", "0", "--llm-type", "dummy"], 2),
        Step(["nashgap", "--bucket", "nope", "--llm-type", "dummy"], 2),
        Step(["nashgap", "--model", "nosuch", "--seed", "1"], 2),
        Step(["nashgap", "--policy", "maybe", "--llm-type", "dummy"], 2),
        Step(["nashgap", "--shard", "1/2", "--llm-type", "dummy"], 2),
        Step(["nashgap", "--resume", "missing_folder"], 2),
        Step(["nashgap", "--not-a-flag"], 2),
        Step(["tmgbench", "run", "--prompting", "XYZ"], 2),
        Step(["tmgbench", "run", "--games", "999"], 2),
        Step(["chbench", "run", "--mechanism", "nope"], 2),
        Step(["tom", "run", "--game", "chess"], 2),
        Step(["tom", "baseline", "--partner", "nobody"], 2),
        Step(["merge"], 2),
        Step(["compare", "a", "b"], 2),
        Step(["report", "missing"], 2),
        Step(["suite", "run", "missing.toml"], 2),
    ]),
    Scenario("tmgbench_scripted", [
        Step(["tmgbench", "run", "--model", "oracle", "--seed", "1"], 0),
        Step(["tmgbench", "run", "--model", "empty", "--seed", "1", "--output-dir", "empty"], 0),
        Step(["tmgbench", "run", "--model", "uniform", "--games", "111,244,444", "--seed", "2",
              "--output-dir", "uniform"], 0),
        Step(["tmgbench", "games", "--format", "json"], 0),
        _compare("results/tmgbench_*", "empty/tmgbench_*", "cmp.json"),
    ]),
    Scenario("tmgbench_story_complex_shards", [
        Step(["tmgbench", "run", "--model", "oracle", "--setting", "story", "--stories-dir", str(STORIES),
              "--seed", "3", "--output-dir", "story"], 0),
        Step(["tmgbench", "run", "--model", "oracle", "--form", "sequential", "--k", "3", "--num-tasks", "4",
              "--seed", "5", "--output-dir", "seq"], 0),
        Step(["tmgbench", "run", "--model", "empty", "--form", "nested", "--num-tasks", "3", "--seed", "6",
              "--output-dir", "nested"], 0),
        Step(["tmgbench", "run", "--model", "oracle", "--form", "parallel", "--k", "3", "--num-tasks", "3",
              "--seed", "6", "--output-dir", "parallel"], 0),
        Step(["tmgbench", "run", "--model", "uniform", "--games", "111,122,444", "--seed", "8", "--shard", "1/2",
              "--output-dir", "shards"], 0),
        Step(["tmgbench", "run", "--model", "uniform", "--games", "111,122,444", "--seed", "8", "--shard", "2/2",
              "--output-dir", "shards"], 0),
        _merge("shards/*"),
        Step(["tmgbench", "run", "--model", "oracle", "--form", "sequential", "--k", "3", "--num-tasks", "4",
              "--seed", "5", "--shard", "1/2", "--output-dir", "seqshards"], 0),
        Step(["tmgbench", "run", "--model", "oracle", "--form", "sequential", "--k", "3", "--num-tasks", "4",
              "--seed", "5", "--shard", "2/2", "--output-dir", "seqshards"], 0),
        _merge("seqshards/*", "seqmerged"),
    ]),
    Scenario("chbench_scripted", [
        Step(["chbench", "run", "--models", "level-k:1", "--opponents", "random,poisson:1.5", "--games", "1,2,8",
              "--rounds", "6", "--seed", "0", "--bootstrap", "5", "--restarts", "2", "--quiet"], 0),
        Step(["chbench", "run", "--models", "level-k:2,first-action", "--games", "3", "--rounds", "4",
              "--seed", "1", "--bootstrap", "3", "--restarts", "2", "--shard", "1/2", "--output-dir", "shards",
              "--quiet"], 0),
        Step(["chbench", "run", "--models", "level-k:2,first-action", "--games", "3", "--rounds", "4",
              "--seed", "1", "--bootstrap", "3", "--restarts", "2", "--shard", "2/2", "--output-dir", "shards",
              "--quiet"], 0),
        _merge("shards/*"),
        lambda ctx: Step(["chbench", "fit", "--data", ctx.folders("results/chbench_*/observations_baseline.csv")[0],
                          "--restarts", "2", "--allow-uncertain", "--output-dir", "fit"], 0),
    ]),
    Scenario("tom_baseline", [
        Step(["tom", "baseline", "--game", "rps,ipd", "--partner", "single_action,tit_for_tat", "--episodes", "5",
              "--rounds", "20", "--seed", "0"], 0),
        Step(["tom", "baseline", "--game", "ibs", "--episodes", "4", "--rounds", "10", "--seed", "1",
              "--shard", "1/2", "--output-dir", "shards"], 0),
        Step(["tom", "baseline", "--game", "ibs", "--episodes", "4", "--rounds", "10", "--seed", "1",
              "--shard", "2/2", "--output-dir", "shards"], 0),
        _merge("shards/*"),
        Step(["tom", "baseline", "--game", "ibs", "--episodes", "4", "--rounds", "10", "--seed", "1",
              "--output-dir", "whole"], 0),
        _compare("merged/*", "whole/*", "cmp.json"),
    ]),
    Scenario("suite_files", [
        _with_file("s.toml", SUITE_FILE, Step(["suite", "run", "s.toml", "--no-report", "--quiet"], 0)),
        _with_file("t.toml", SUITE_FILE_2, Step(["suite", "run", "t.toml", "--no-report", "--quiet",
                                                 "--output-dir", "tmg"], 0)),
        Step(["suite", "tiered", "--use-dummy", "--num-games-per-bucket", "3", "--num-trials", "2", "--seeds",
              "42", "43", "--bucket-ids", "2x2_lowVar_pure", "3x3_midVar_mixed", "--quiet"], 0),
        _report("results/tiered_suite_*"),
    ]),
    Scenario("server_generation", [
        Step(["nashgap", "--model", "openai-compatible:fake", "--base-url", "{URL}", "--policy", "sample",
              "--num-games", "3", "--num-trials", "2", "--seed", "9", "--max-tokens", "24"], None),
        Step(["nashgap", "--model", "openai-compatible:fake", "--base-url", "{URL}", "--num-games", "3",
              "--seed", "9", "--output-dir", "logprob"], None),
        Step(["tmgbench", "run", "--model", "openai-compatible:fake", "--base-url", "{URL}", "--policy", "sample",
              "--prompting", "CoT", "--games", "111,444", "--repeats", "2", "--seed", "9", "--max-tokens", "40",
              "--output-dir", "tmg"], None),
        Step(["tom", "run", "--model", "openai-compatible:fake", "--base-url", "{URL}", "--prompting", "QA",
              "--rounds", "3", "--episodes", "2", "--seed", "9", "--output-dir", "tom"], None),
        Step(["chbench", "run", "--models", "openai-compatible:fake", "--base-url", "{URL}", "--policy", "sample",
              "--mechanism", "chat", "--games", "1", "--rounds", "2", "--seed", "9", "--bootstrap", "0",
              "--restarts", "1", "--self-play", "--output-dir", "ch", "--quiet"], None),
    ], server=True),
    Scenario("embedded", [
        Step(["nashgap", "--model", "embedded", "--num-games", "3", "--seed", "3", "--order-rotations", "2",
              "--combined"], 0),
        Step(["tmgbench", "run", "--games", "111,244,444", "--seed", "2", "--output-dir", "tmg"], 0),
        Step(["tom", "run", "--game", "rps", "--rounds", "4", "--episodes", "2", "--seed", "0",
              "--output-dir", "tom"], 0),
        Step(["chbench", "run", "--models", "embedded", "--opponents", "level-k:1", "--games", "1",
              "--rounds", "3", "--bootstrap", "0", "--restarts", "1", "--output-dir", "ch", "--quiet"], 0),
    ], model=True),
]


# ------------------------------------------------------------------------------------------------
# Comparison
# ------------------------------------------------------------------------------------------------


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _text_diff(want: str, got: str, tol: float, path: str) -> list[str]:
    """A text file token by token: words and integers exactly, other numbers within ``tol``."""
    if want == got:
        return []
    wn, gn = NUMBER.findall(want), NUMBER.findall(got)
    if NUMBER.split(want) != NUMBER.split(got) or len(wn) != len(gn):
        return [f"{path}: text differs: {want[:200]!r} != {got[:200]!r}"]
    out = []
    for a, b in zip(wn, gn):
        integer = not any(ch in a + b for ch in ".eE")
        if (a != b) if integer else not math.isclose(float(a), float(b), rel_tol=tol, abs_tol=tol):
            out.append(f"{path}: number {a} != {b}")
    return out[:5]


def diff(want: Any, got: Any, tol: float, path: str = "") -> list[str]:
    """Human-readable differences (empty when equal under the golden's rules, `compare_rules`)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(want) | set(got), key=str):
            if k not in got:
                out.append(f"{path}/{k}: missing")
            elif k not in want:
                out.append(f"{path}/{k}: unexpected")
            elif not (k in VOLATILE or str(k).endswith("latency_s")):  # masked on either side
                out += diff(want[k], got[k], tol, f"{path}/{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items expected, {len(got)} found"]
        out = []
        for i, (a, b) in enumerate(zip(want, got)):
            out += diff(a, b, tol, f"{path}[{i}]")
            if len(out) > 20:
                break
        return out
    if isinstance(want, bool) or isinstance(got, bool) or (isinstance(want, int) and isinstance(got, int)):
        return [] if want == got and type(want) is type(got) else [f"{path}: {want!r} != {got!r}"]
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if math.isclose(float(want), float(got), rel_tol=tol, abs_tol=tol):
            return []
        return [f"{path}: {want!r} != {got!r}"]
    if isinstance(want, str) and isinstance(got, str) and path.rsplit("/", 1)[-1].endswith((".csv", ".md", ".txt")):
        return _text_diff(want, got, tol, path)
    if want != got:
        return [f"{path}: {str(want)[:200]!r} != {str(got)[:200]!r}"]
    return []
