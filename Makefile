# The two commands of the README: `make demo` (install + main job) and `make test` (install + tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Main job: the Nash-gap suite (pure + mixed on the same 100 games), reference players.
demo: $(STAMP)
	$(BIN)/stratbench nashgap --combined --num-games 100 --num-trials 100 --seed 42 --llm-type random --parallel --num-workers 4
	$(BIN)/stratbench nashgap --combined --num-games 100 --num-trials 100 --seed 42 --llm-type nash --parallel --num-workers 4

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_solver.py

clean:
	rm -rf $(VENV) results
