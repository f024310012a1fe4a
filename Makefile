# The two set-up commands of the README:
#   make demo   installs turnbench with the embedded model and runs the demo
#   make test   installs the test dependencies and runs the whole test suite
# Beside them: make check (lint, import contracts, unit tests: the fast feedback),
# make docs (serves the documentation site on http://127.0.0.1:8000).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# the shared data folder only when it is there: a data folder that is named is the only place
# looked (docs/running.md), so naming one that does not exist would refuse every download
ifneq ($(wildcard ../shared/data/.),)
export TURNBENCH_DATA_DIR ?= $(abspath ../shared/data)
endif
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
# mkdocs-material prints a banner about MkDocs 2.0 on every build; the site pins mkdocs<2
export NO_MKDOCS_2_WARNING ?= 1

.PHONY: demo test check docs lint bench clean

# `make test` runs the tests in two passes (benchmarks/README.md, the suite's time): those
# isolated by tmp_path and free ports on two pytest-xdist workers, then the embedded model's
# (llama.cpp takes every core; beside another worker it slows several-fold) and Chromium's
# alone. Every test runs in exactly one pass.
PARALLEL_TESTS := not integration and not browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# llama-cpp-python first, from source with portable flags (never -march=native), checked;
# then turnbench, which finds it already installed. See docs/embedded-model.md.
$(VENV)/.installed: pyproject.toml scripts/install-llama-cpp.sh src/turnbench/backends/llama_build.py | $(BIN)/python
	bash scripts/install-llama-cpp.sh $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[local,test,docs,agentdojo]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/turnbench run

test: $(VENV)/.installed
	$(BIN)/python src/turnbench/backends/llama_build.py check
	bash scripts/ensure-chromium.sh
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/lint-imports --no-cache
	$(BIN)/mkdocs build --strict --quiet
	$(BIN)/python -m pytest -q -n 2 -m "$(PARALLEL_TESTS)" --durations=15
	$(BIN)/python -m pytest -q -m "not ($(PARALLEL_TESTS))" --durations=10

check: $(VENV)/.installed
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q -n 2 tests/unit

docs: $(VENV)/.installed
	$(BIN)/mkdocs serve

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/lint-imports --no-cache
	$(BIN)/ruff format --check src tests benchmarks scripts

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/harness_overhead.py

clean:
	rm -rf $(VENV) build dist site *.egg-info src/*.egg-info
