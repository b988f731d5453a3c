# The two commands of the README: `make demo` (install + main job) and `make test` (install + tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench bench-scorecard bench-trend trend-picture clean chromium

# llama-cpp-python builds from source (a few minutes on 2 cores, once per machine: the wheel is kept
# in WHEELS). It is built for one fixed instruction set, never for the build machine's own CPU
# (llama.cpp's default): on x86-64 that is x86-64-v3 (AVX2, FMA, F16C, BMI2; no AVX-512, no AMX), so
# every x86-64 machine from about 2015 on runs the same kernels and gets the same log-probabilities,
# and a CPU with AMX does not get llama.cpp's AMX path (it crashed with SIGSEGV on such a machine).
# tests/test_machines.py checks the build in use. CMAKE_ARGS from the environment replaces these.
LLAMA_CPP := llama-cpp-python==0.3.36
ifeq ($(shell uname -m),x86_64)
LLAMA_CPU := -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
else
LLAMA_CPU := -DGGML_NATIVE=OFF
endif
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF $(LLAMA_CPU)
# pip's own wheel cache ignores CMAKE_ARGS (it would hand back a wheel built with other flags): the
# wheel is kept in a folder named after the version, the flags and the Python that built it
WHEEL_KEY := $(shell printf '%s|%s|%s' '$(LLAMA_CPP)' '$(CMAKE_ARGS)' "$$($(PYTHON) -c 'import sys; print(sys.version)' 2>/dev/null)" | sha256sum | cut -c1-16)
WHEELS ?= $(HOME)/.cache/stratbench/wheels/$(WHEEL_KEY)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	ls $(WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
		$(BIN)/python -m pip wheel -q --no-deps --no-cache-dir -w $(WHEELS) '$(LLAMA_CPP)'
	$(BIN)/python -m pip install -q $(WHEELS)/llama_cpp_python-*.whl
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
# benchmarks/results/local.md (the benchmark table of docs/benchmarks.md); then the API backend's throughput,
# the CHBench fits, the ToM tabular baseline and the hf: backend (shared prompt vs a plain forward) (benchmarks/results/*.txt: docs/benchmarks.md's other
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

# The trend's cost per checkpoint against one scorecard (smoke budget, planted checkpoints on the fake
# OpenAI-compatible server, offline, about 5 minutes); writes benchmarks/results/trend.md.
bench-trend: $(STAMP)
	$(BIN)/python benchmarks/bench_trend.py

# docs/img/trend.png: the curves of a five-checkpoint trend on the same planted checkpoints (quick budget, 5 minutes).
trend-picture: $(STAMP)
	$(BIN)/python benchmarks/trend_picture.py

clean:
	rm -rf $(VENV) results
