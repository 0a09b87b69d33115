# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export OPENBLAS_NUM_THREADS := 1

.PHONY: install install-dev demo test lint bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch is pinned: an unpinned torch pulls a multi-GB CUDA build.
install: $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e .

install-dev: $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'

demo: install
	$(BIN)/waypost demo

lint:
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

test: install-dev lint
	$(BIN)/pytest -q

bench: install
	$(BIN)/python benchmarks/bench_latency.py
