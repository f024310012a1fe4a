# The two set-up commands of the README:
#   make demo   installs turnbench with the embedded model and runs the demo
#   make test   installs the test dependencies and runs the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export TURNBENCH_DATA_DIR ?= $(abspath ../shared/data)
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# llama-cpp-python first, from source with portable flags (never -march=native), checked;
# then turnbench, which finds it already installed. See docs/embedded-model.md.
$(VENV)/.installed: pyproject.toml scripts/install-llama-cpp.sh src/turnbench/backends/llama_build.py | $(BIN)/python
	bash scripts/install-llama-cpp.sh $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[local,test]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/turnbench run

test: $(VENV)/.installed
	$(BIN)/python src/turnbench/backends/llama_build.py check
	bash scripts/ensure-chromium.sh
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports --no-cache
	$(BIN)/ruff format --check src tests benchmarks

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/harness_overhead.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
