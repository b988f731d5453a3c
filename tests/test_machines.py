"""Tests that stand in for another machine: the numerically sensitive computations run in
subprocesses under several BLAS set-ups (thread counts, and the kernels of other CPUs via
``OPENBLAS_CORETYPE``) and must agree.

- **Bit-identical** (exact by construction): CHBench fits and their bootstrap CIs — `chbench fit`
  on the `chbench_scripted` golden scenario's data, and simulated players — (an exhaustive search
  over best-response pieces, BLAS pinned to one thread inside the fit, results rounded to 1e-6);
  ToM's R-max trajectories and DP regret; scorecard normalisation and its bootstrap CIs.
- **Within ``SOLVER_RTOL``** = 1e-12 relative (absolute below 1): the Nash solver's value and
  equilibrium strategies. HiGHS and the solver's linear-algebra polish sum in a different order
  with other kernels; measured differences are ≤ 1.1e-15 (Haswell, Sandybridge vs SkylakeX).
  1e-12 is three orders above that and far below any difference between two equilibria of these
  games (their payoffs have 1-2 decimals).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stratbench.cli.main import main as cli

PROBE = Path(__file__).parent / "helpers" / "machine_probe.py"
SOLVER_RTOL = 1e-12
SETUPS = {
    "1 thread": {"OPENBLAS_NUM_THREADS": "1"},
    "2 threads": {"OPENBLAS_NUM_THREADS": "2"},
    "Haswell": {"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "Haswell"},
    "SkylakeX": {"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "SkylakeX"},
    "Sandybridge": {"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "Sandybridge"},
}


def flat(x: Any, path: str = "") -> dict[str, Any]:
    """Leaves of a JSON document by path."""
    if isinstance(x, dict):
        return {k: v for key, val in x.items() for k, v in flat(val, f"{path}/{key}").items()}
    if isinstance(x, list):
        return {k: v for i, val in enumerate(x) for k, v in flat(val, f"{path}[{i}]").items()}
    return {path: x}


def disagreements(want: dict, got: dict) -> list[str]:
    """Where two probes differ beyond the rules above."""
    out = []
    a, b = flat(want["exact"]), flat(got["exact"])
    out += [f"{k}: {a.get(k)!r} != {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    a, b = flat(want["solver"]), flat(got["solver"])
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if x is None or y is None or abs(x - y) > SOLVER_RTOL * max(1.0, abs(x)):
            out.append(f"{k}: {x!r} vs {y!r} (beyond {SOLVER_RTOL:g})")
    return out


@pytest.fixture(scope="module")
def observations(tmp_path_factory) -> Path:
    """The `chbench_scripted` golden scenario's first run: level-k:1 against random and
    Poisson(1.5) on games 1, 2 and 8 — the data on which SLSQP once read level 1 as 2.73."""
    d = tmp_path_factory.mktemp("scripted")
    with pytest.raises(SystemExit) as e:
        cli(["chbench", "run", "--models", "level-k:1", "--opponents", "random,poisson:1.5", "--games", "1,2,8",
             "--rounds", "6", "--seed", "0", "--bootstrap", "5", "--quiet", "--output-dir", str(d)])
    assert not e.value.code
    (csv,) = d.glob("chbench_*/observations_baseline.csv")
    return csv


@pytest.fixture(scope="module")
def probes(observations, tmp_path_factory) -> dict[str, dict]:
    out = {}
    for name, env_vars in SETUPS.items():
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")} | env_vars
        target = tmp_path_factory.mktemp("probe") / "out.json"
        subprocess.run([sys.executable, str(PROBE), str(observations), str(target)], env=env, check=True,
                       capture_output=True, timeout=300)
        out[name] = json.loads(target.read_text())
    return out


def test_each_setup_ran_as_asked(probes):
    """The set-ups really differ: OpenBLAS took the kernels and threads asked for."""
    for name, env_vars in SETUPS.items():
        for lib in probes[name]["blas"]:
            assert lib["num_threads"] == int(env_vars["OPENBLAS_NUM_THREADS"])
            if "OPENBLAS_CORETYPE" in env_vars:
                assert lib["architecture"].lower() == env_vars["OPENBLAS_CORETYPE"].lower()


@pytest.mark.parametrize("name", [n for n in SETUPS if n != "1 thread"])
def test_setups_agree(probes, name):
    assert disagreements(probes["1 thread"], probes[name]) == []


def test_scripted_level_one_is_not_identified_on_every_setup(probes):
    """The acceptance reading: level-k:1's Level-K fit says it is not identified, with a range
    that holds 1 and 3 and the canonical point 1, the same everywhere."""
    for p in probes.values():
        lk = p["exact"]["chbench_fit_json"]["level-k:1"]["level_k"]
        assert lk["identified"] is False and lk["mean_level"] == 1.0
        assert lk["mean_level_range"][0] <= 1.0 and lk["mean_level_range"][1] >= 3.0
        assert lk["mean_level_ci95"][0] <= 1.0 and lk["mean_level_ci95"][1] >= 3.0


def test_the_comparison_can_fail(probes):
    """Another optimum, or a solver value off by more than its tolerance, is caught."""
    base = probes["1 thread"]
    other = json.loads(json.dumps(base))
    other["exact"]["chbench_fit_json"]["level-k:1"]["level_k"]["mean_level"] = 2.73
    assert len(disagreements(base, other)) == 1
    other = json.loads(json.dumps(base))
    other["exact"]["chbench_fit_json"]["level-k:1"]["level_k"]["mean_level"] = 1.0 + 1e-15
    assert len(disagreements(base, other)) == 1
    other = json.loads(json.dumps(base))
    key = next(iter(other["solver"]))
    other["solver"][key]["value"] *= 1 + 1e-10
    assert len(disagreements(base, other)) == 1
    other["solver"][key]["value"] = base["solver"][key]["value"] * (1 + 1e-14)
    assert disagreements(base, other) == []


def test_llama_cpp_is_built_for_the_pinned_instruction_set():
    """`make install` builds llama.cpp for x86-64-v3 (AVX2, FMA, F16C), not for the machine it is built
    on: another CPU's kernels would give other log-probabilities, and llama.cpp's AMX path crashed
    (SIGSEGV) on a machine whose CPU has AMX. A build made otherwise (pip's own, or an older wheel) is
    caught here, and run.json records what a run used."""
    import platform

    import llama_cpp  # noqa: F401  (loaded, so run.json's versions name its build)

    from stratbench.runner.folders import llama_cpu_features, package_versions

    if platform.machine() != "x86_64":
        pytest.skip("the pinned instruction set is x86-64's; other machines build llama.cpp's generic target")
    feats = set(llama_cpu_features() or [])
    assert {"AVX", "AVX2", "FMA", "F16C"} <= feats, feats
    extra = sorted(f for f in feats if f.startswith(("AVX512", "AMX", "AVX_VNNI")))
    assert not extra, (f"llama.cpp was built with {extra}: not the pinned build (rm -rf .venv and run make install, "
                       "which builds it with the Makefile's CMAKE_ARGS)")
    assert package_versions()["llama_cpp_cpu"] == " ".join(llama_cpu_features() or [])
