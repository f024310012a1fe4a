"""How llama-cpp-python must be built for the embedded model, and a check of the build.

llama-cpp-python ships as a source distribution and compiles llama.cpp on install. Left to
its defaults, the compiler targets the build machine's own CPU (`GGML_NATIVE=ON`, i.e.
`-march=native`): on a machine with AVX-512 and AMX that build died with SIGSEGV in its
first `llama_decode` (issue 11), and a wheel built that way and cached by pip crashes on
any CPU that lacks those instructions. turnbench therefore builds for a fixed, widely
available instruction set (x86-64: AVX2 + FMA + F16C; arm64: ARMv8-A with NEON) and checks
what it got: the CMake settings recorded in the installed package
(`lib/cmake/ggml/ggml-config.cmake`) and llama.cpp's own system-info line.

This module uses the standard library only, so the Makefile can run it as a script before
turnbench's dependencies are installed:

    python src/turnbench/backends/llama_build.py cmake-args    # CMAKE_ARGS for this machine
    python src/turnbench/backends/llama_build.py requirement   # the pinned version
    python src/turnbench/backends/llama_build.py check         # exit 1 if the build is not portable
"""

from __future__ import annotations

import platform
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "llama-cpp-python"
VERIFIED_VERSION = "0.3.36"  # the version the grammar, logprobs and worker code were tested with
REQUIREMENT = f"{DISTRIBUTION}=={VERIFIED_VERSION}"

_X86_ON = ("AVX", "AVX2", "FMA", "F16C", "BMI2", "SSE42")
_X86_OFF = (
    "AVX512",
    "AVX512_VBMI",
    "AVX512_VNNI",
    "AVX512_BF16",
    "AVX_VNNI",
    "AMX_TILE",
    "AMX_INT8",
    "AMX_BF16",
)
PORTABLE_CMAKE_ARGS: dict[str, tuple[str, ...]] = {
    # any x86-64 CPU with AVX2 (Intel Haswell, 2013, and AMD Excavator/Zen, 2015, onwards)
    "x86_64": (
        "-DGGML_NATIVE=OFF",
        *(f"-DGGML_{name}=ON" for name in _X86_ON),
        *(f"-DGGML_{name}=OFF" for name in _X86_OFF),
    ),
    # any 64-bit ARM CPU (ARMv8-A baseline with NEON); see docs/embedded-model.md for the
    # faster armv8.2-a+dotprod+fp16 variant (Graviton2+, Apple M1+, Cortex-A76+)
    "aarch64": ("-DGGML_NATIVE=OFF", "-DGGML_CPU_ARM_ARCH=armv8-a"),
}
_MACHINES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}

# system-info features that tie a build to particular CPUs (x86 and arm64)
_SPECIFIC_FEATURE = re.compile(r"^(AVX512.*|AMX.*|AVX_VNNI|AVX10.*|SVE2?|SME2?)$")
# CMake settings that make a build machine-specific
_SPECIFIC_SETTINGS = ("GGML_NATIVE", *(f"GGML_{name}" for name in _X86_OFF))


def machine_key(machine: str | None = None) -> str | None:
    """ "x86_64", "aarch64" or None for an architecture we have no portable flags for."""
    return _MACHINES.get((machine or platform.machine()).lower())


def cmake_args(machine: str | None = None) -> str:
    """The CMAKE_ARGS value for a portable build on `machine` (default: this one)."""
    key = machine_key(machine)
    if key is None:
        return "-DGGML_NATIVE=OFF"
    return " ".join(PORTABLE_CMAKE_ARGS[key])


def rebuild_command(python: str | None = None, machine: str | None = None) -> str:
    """The exact shell command that reinstalls llama-cpp-python from source, portably."""
    python = python or sys.executable
    return (
        f'CMAKE_ARGS="{cmake_args(machine)}" {shlex.quote(python)} -m pip install '
        f"--force-reinstall --no-deps --no-cache-dir --no-binary {DISTRIBUTION} "
        f"'{REQUIREMENT}'"
    )


def parse_system_info(line: str) -> dict[str, str]:
    """llama.cpp's "CPU : SSE3 = 1 | AVX = 1 | ..." as {"SSE3": "1", "AVX": "1", ...}."""
    features: dict[str, str] = {}
    for part in line.replace("\n", "|").split("|"):
        if "=" not in part:
            continue
        name, _, value = part.rpartition("=")
        name = name.split(":")[-1].strip()
        if name:
            features[name] = value.strip()
    return features


_SET = re.compile(r'^set\((GGML_[A-Z0-9_]+) "([^"]*)"\)', re.MULTILINE)


def parse_cmake_config(text: str) -> dict[str, str]:
    """The `set(GGML_X "VALUE")` lines of ggml-config.cmake."""
    return dict(_SET.findall(text))


def installed_version() -> str | None:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def installed_cmake_config() -> dict[str, str]:
    """The CMake settings the installed llama-cpp-python was built with ({} if unknown)."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return {}
    for file in dist.files or []:
        if file.name == "ggml-config.cmake":
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return parse_cmake_config(path.read_text(encoding="utf-8", errors="replace"))
    return {}


@dataclass
class BuildReport:
    """What is known about the installed build, and why it may not be portable."""

    version: str | None
    system_info: str
    settings: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def portable(self) -> bool:
        return not self.problems


def build_problems(system_info: str, settings: dict[str, str]) -> list[str]:
    """Reasons the build is tied to particular CPUs; empty when it is portable.

    A build with runtime CPU dispatch (GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS) picks its
    kernels on the running machine, so what its system-info line shows is not a problem.
    """
    problems = [
        f"built with {name}=ON"
        for name in _SPECIFIC_SETTINGS
        if settings.get(name, "").upper() in ("ON", "1", "TRUE")
    ]
    dispatching = all(
        settings.get(name, "").upper() in ("ON", "1", "TRUE")
        for name in ("GGML_BACKEND_DL", "GGML_CPU_ALL_VARIANTS")
    )
    if not dispatching:
        features = parse_system_info(system_info)
        specific = [n for n, v in features.items() if v == "1" and _SPECIFIC_FEATURE.match(n)]
        if specific:
            problems.append("compiled-in CPU features " + ", ".join(sorted(specific)))
    return problems


def warning_text(report: BuildReport, python: str | None = None) -> str:
    return (
        f"llama-cpp-python {report.version or '?'} was built for a specific CPU "
        f"({'; '.join(report.problems)}): it may crash here or on other machines. "
        f"Rebuild it for any CPU of this architecture with:\n  {rebuild_command(python)}"
    )


def system_info_in_subprocess(python: str | None = None) -> tuple[int, str]:
    """(exit status, system-info line) from a fresh interpreter: a build that crashes on
    import (illegal instruction) fails this check instead of the caller."""
    code = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    done = subprocess.run(
        [python or sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout.strip()


def check(python: str | None = None) -> tuple[BuildReport, int]:
    status, info = system_info_in_subprocess(python)
    report = BuildReport(installed_version(), info, installed_cmake_config())
    if status != 0:
        report.problems.append(f"importing llama_cpp failed (exit status {status})")
    else:
        report.problems.extend(build_problems(info, report.settings))
    if report.version != VERIFIED_VERSION:
        report.problems.append(f"version {report.version}, expected {VERIFIED_VERSION}")
    return report, status


def _main(argv: list[str]) -> int:
    command = argv[0] if argv else "check"
    if command == "cmake-args":
        print(cmake_args())
        return 0
    if command == "requirement":
        print(REQUIREMENT)
        return 0
    if command == "rebuild-command":
        print(rebuild_command())
        return 0
    if command == "check":
        if installed_version() is None:
            print(f"{DISTRIBUTION} is not installed")
            return 1
        report, _ = check()
        shown = (*_SPECIFIC_SETTINGS, "GGML_AVX2")
        flags = {k: v for k, v in report.settings.items() if k in shown}
        print(f"{DISTRIBUTION} {report.version}")
        print(f"  build settings: {' '.join(f'{k}={v}' for k, v in sorted(flags.items()))}")
        print(f"  system info:    {report.system_info or '(none)'}")
        if report.problems:
            print("  NOT PORTABLE: " + "; ".join(report.problems))
            return 1
        print("  portable: no native, AVX-512 or AMX code in the build")
        return 0
    print(f"unknown command {command!r}: cmake-args | requirement | rebuild-command | check")
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
