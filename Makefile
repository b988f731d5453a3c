# The two commands of the README: `make demo` (install + main job) and `make test` (install + tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench clean chromium

# llama-cpp-python builds from source (a few minutes on 2 cores, once: pip caches the wheel).
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Main job, offline: the Nash-gap suite (pure + mixed on the same 100 games) for the embedded raw
# model scored by exact log-probabilities (3 row-order rotations), next to the reference players,
# then the HTML report of everything under results/ (results/report/index.html).
demo: $(STAMP)
	$(BIN)/stratbench nashgap --combined --num-games 100 --seed 42 --policy logprob --order-rotations 3 \
		--model embedded --model random --model nash
	$(BIN)/stratbench report results

# Headless Chromium for tests/test_report.py (the HTML report must render without errors). Best effort:
# where apt-get is missing or not allowed, nothing is installed and that test says it was skipped.
chromium:
	@command -v chromium >/dev/null || (apt-get install -y chromium >/dev/null 2>&1 || \
		(apt-get update >/dev/null 2>&1 && apt-get install -y chromium >/dev/null 2>&1) || true)

test: $(STAMP) chromium
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_solver.py

clean:
	rm -rf $(VENV) results
