# Two commands do everything on a fresh Debian/Ubuntu machine with Python 3.11:
#   make reproduce   # venv + pinned deps, then `dvc repro` of the whole DAG (default profile)
#   make test        # venv + pinned deps, then the whole test suite (what CI runs)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: reproduce test test-fast lint bench clean-venv

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and alone: the pinned CPU build; a looser pin would pull a CUDA build
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -r requirements.lock
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

bench: $(STAMP)
	python -m benchmarks.matrix_denoising

clean-venv:
	rm -rf $(VENV)
