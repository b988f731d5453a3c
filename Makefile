# The two commands of the README: `make demo` (install + main job) and `make test` (install + tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench bench-scorecard clean chromium

# llama-cpp-python builds from source (a few minutes on 2 cores, once: pip caches the wheel).
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Main job, offline: the quick scorecard for the embedded raw model — Nash gap, TMGBench, CHBench and
# functional theory of mind next to their reference players — printed as one table, written to
# results/scorecard_<time>/ with its HTML report (report/index.html). A re-run is served by the
# response cache (0 model calls).
demo: $(STAMP)
	$(BIN)/stratbench scorecard --model embedded --budget quick --seed 0 --output-dir results

# Headless Chromium for tests/test_report.py (the HTML report must render without errors). Best effort:
# where apt-get is missing or not allowed, nothing is installed and that test says it was skipped.
chromium:
	@command -v chromium >/dev/null || (apt-get install -y chromium >/dev/null 2>&1 || \
		(apt-get update >/dev/null 2>&1 && apt-get install -y chromium >/dev/null 2>&1) || true)

test: $(STAMP) chromium
	$(BIN)/python -m pytest

# Local scoring paths against llama.cpp's raw evaluation of the same tokens, and the solver; writes
# benchmarks/results/local.md (the README's benchmark table); then the API backend's throughput,
# the CHBench fits, the ToM tabular baseline and the hf: backend (shared prompt vs a plain forward) (benchmarks/results/*.txt: the README's other
# timings). Offline, under 10 minutes.
BENCH_OTHERS = api chbench_fit tom_tabular hf
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_local.py
	@for b in $(BENCH_OTHERS); do \
		echo "== benchmarks/bench_$$b.py"; \
		$(BIN)/python benchmarks/bench_$$b.py > benchmarks/results/$$b.txt || exit 1; \
		cat benchmarks/results/$$b.txt; \
	done

# What the quick scorecard costs for the embedded model next to the naive way (100 samples per
# decision, no prefix reuse); writes benchmarks/results/scorecard.md.
bench-scorecard: $(STAMP)
	$(BIN)/python benchmarks/bench_scorecard.py

clean:
	rm -rf $(VENV) results
