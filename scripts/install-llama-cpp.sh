#!/usr/bin/env bash
# Install llama-cpp-python into a venv, built for any CPU of this architecture.
#
#   scripts/install-llama-cpp.sh VENV_PYTHON
#
# llama-cpp-python compiles llama.cpp on install and, by default, for the build machine's
# own CPU (-march=native): such a build crashed on a machine with AVX-512 and AMX, and a
# wheel built that way and cached by pip crashes on CPUs without them (issue 11). This
# script builds from the source distribution with the portable flags of
# src/turnbench/backends/llama_build.py, then proves what it installed: the CMake settings
# recorded in the package and llama.cpp's own system-info line. pip may reuse a wheel from
# its cache (it does not key its cache on CMAKE_ARGS); if that wheel is not portable, it is
# rebuilt from source with the cache disabled.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:?usage: scripts/install-llama-cpp.sh VENV_PYTHON}
BUILD="src/turnbench/backends/llama_build.py"
REQUIREMENT=$("$PY" "$BUILD" requirement)
CMAKE_ARGS=$("$PY" "$BUILD" cmake-args)
export CMAKE_ARGS
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"

if "$PY" "$BUILD" check >/dev/null 2>&1; then
    echo "llama-cpp-python: already installed and portable"
    "$PY" "$BUILD" check
    exit 0
fi
echo "llama-cpp-python: installing $REQUIREMENT from source (about 5 minutes on 2 cores)"
echo "  CMAKE_ARGS=$CMAKE_ARGS"
"$PY" -m pip install --quiet --no-binary llama-cpp-python "$REQUIREMENT"
if ! "$PY" "$BUILD" check; then
    echo "llama-cpp-python: the installed build is not portable (a wheel from pip's cache," \
        "built with other flags); rebuilding from source without the cache"
    "$PY" -m pip install --quiet --force-reinstall --no-deps --no-cache-dir \
        --no-binary llama-cpp-python "$REQUIREMENT"
    "$PY" "$BUILD" check
fi
