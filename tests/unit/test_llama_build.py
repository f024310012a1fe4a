"""The portable llama.cpp build: its flags, and the check that reads what a build holds."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from turnbench.backends import llama_build
from turnbench.backends.llama_build import (
    build_problems,
    cmake_args,
    parse_cmake_config,
    parse_system_info,
    rebuild_command,
)

REPO = Path(__file__).resolve().parents[2]
PORTABLE_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |"
)
NATIVE_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
    "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | "
    "AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |"
)


def test_system_info_line_is_parsed_into_features():
    features = parse_system_info(PORTABLE_INFO)
    assert features["SSE3"] == "1" and features["AVX2"] == "1" and features["REPACK"] == "1"
    assert "AVX512" not in features and len(features) == 10
    assert parse_system_info("") == {}


def test_cmake_config_lines_are_parsed():
    text = 'set(GGML_NATIVE "OFF")\nset(GGML_AVX2 "ON")\n# set(GGML_X "Y")\nset(OTHER "1")\n'
    assert parse_cmake_config(text) == {"GGML_NATIVE": "OFF", "GGML_AVX2": "ON"}


@pytest.mark.parametrize(
    ("info", "settings", "expected"),
    [
        (PORTABLE_INFO, {"GGML_NATIVE": "OFF", "GGML_AVX512": "OFF"}, []),
        (PORTABLE_INFO, {}, []),  # settings unknown: the system-info line still checks
        (
            NATIVE_INFO,
            {"GGML_NATIVE": "ON"},
            [
                "built with GGML_NATIVE=ON",
                "compiled-in CPU features AMX_INT8, AVX512, AVX512_BF16, AVX512_VBMI, "
                "AVX512_VNNI, AVX_VNNI",
            ],
        ),
        # native on a plain AVX2 machine: the line looks portable, the setting does not
        (PORTABLE_INFO, {"GGML_NATIVE": "ON"}, ["built with GGML_NATIVE=ON"]),
        (PORTABLE_INFO, {"GGML_AMX_INT8": "ON"}, ["built with GGML_AMX_INT8=ON"]),
        # runtime dispatch picks kernels on the running CPU: its line is not a problem
        (NATIVE_INFO, {"GGML_BACKEND_DL": "ON", "GGML_CPU_ALL_VARIANTS": "ON"}, []),
        # arm64: SVE / SME tie a build to some CPUs
        (
            "CPU : NEON = 1 | ARM_FMA = 1 | SVE = 1 | OPENMP = 1 |",
            {},
            ["compiled-in CPU features SVE"],
        ),
        ("CPU : NEON = 1 | ARM_FMA = 1 | DOTPROD = 1 | OPENMP = 1 |", {}, []),
    ],
)
def test_build_problems(info, settings, expected):
    assert build_problems(info, settings) == expected


def test_portable_flags_per_architecture():
    x86 = cmake_args("x86_64").split()
    assert "-DGGML_NATIVE=OFF" in x86 and "-DGGML_AVX2=ON" in x86 and "-DGGML_FMA=ON" in x86
    assert "-DGGML_AVX512=OFF" in x86 and "-DGGML_AMX_INT8=OFF" in x86
    assert not [flag for flag in x86 if re.match(r"-DGGML_(AVX512|AMX).*=ON", flag)]
    assert cmake_args("AMD64") == cmake_args("x86_64")
    arm = cmake_args("aarch64").split()
    assert arm == ["-DGGML_NATIVE=OFF", "-DGGML_CPU_ARM_ARCH=armv8-a"]
    assert cmake_args("arm64") == cmake_args("aarch64")
    assert cmake_args("riscv64") == "-DGGML_NATIVE=OFF"


def test_rebuild_command_is_one_exact_shell_command():
    command = rebuild_command("/opt/my env/bin/python", "x86_64")
    words = shlex.split(command)
    assert words[0] == f"CMAKE_ARGS={cmake_args('x86_64')}"
    assert words[1:4] == ["/opt/my env/bin/python", "-m", "pip"]
    for flag in ("--force-reinstall", "--no-deps", "--no-cache-dir"):
        assert flag in words
    assert words[words.index("--no-binary") + 1] == "llama-cpp-python"
    assert words[-1] == llama_build.REQUIREMENT


def test_pyproject_pins_the_verified_version():
    text = (REPO / "pyproject.toml").read_text()
    assert f'"{llama_build.REQUIREMENT}"' in text


def test_script_mode_needs_only_the_standard_library():
    """The Makefile runs the module as a script before turnbench's dependencies exist."""
    script = REPO / "src" / "turnbench" / "backends" / "llama_build.py"
    code = (
        "import sys, runpy; sys.modules['pydantic'] = None; sys.argv = ['x', 'cmake-args']; "
        f"runpy.run_path({str(script)!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == cmake_args()
