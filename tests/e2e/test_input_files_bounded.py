"""Issue 38, class 11: /dev/zero as an input file (`-B reference_file=/dev/zero`,
`--planted-answers /dev/zero`) was read without a limit, to a MemoryError traceback. Every
file a user names goes through `textio.open_input`: a device, a pipe or a socket is refused
as no regular file, a regular file over MAX_INPUT_BYTES as too large, each with one message
naming the file and exit status 2, before anything is read or written.

The CLI runs in a child process with its address space capped (RLIMIT_AS): were a reader to
lose its limit again, the test fails with a MemoryError instead of eating the machine's
memory. Nothing is sent anywhere (the endpoints named are closed ports of 127.0.0.1; every
command stops at its input).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli_process, shared_data_dir
from turnbench.textio import MAX_INPUT_BYTES

NOWHERE = "http://127.0.0.1:9/v1"  # (never contacted: the input is refused first)
MEMORY_CAP = 3 << 30  # address space of the CLI's process: far above its needs


def bounded_cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli_process(args, env, timeout=120, cwd=cwd, memory_cap=MEMORY_CAP)


def answers_file(name: str = "vicuna-13b-v1.3") -> str:
    return str(shared_data_dir() / f"mt_bench/model_answer/{name}.jsonl")


def commands(path: str, out: Path) -> dict[str, list[str]]:
    """Each way a user names an input file, with `path` as that file."""
    judged = ["--judge", "openai/judge", "--judge-base-url", NOWHERE, "--no-progress"]
    model = ["--model", "openai/m", "--model-base-url", NOWHERE]
    return {
        "-B reference_file": [
            "judge", "--benchmark", "mt-bench", "-B", f"reference_file={path}",
            "--answers", answers_file(), "--out", str(out), "--limit", "1", *judged,
        ],
        "--planted-answers": [
            "run", "--benchmark", "mt-bench", "--perturb", "planted-error",
            "--planted-answers", path, *model, "--out", str(out), "--limit", "1", *judged,
        ],
        "--answers": [
            "judge", "--benchmark", "mt-bench", "--answers", path, "--out", str(out), *judged,
        ],
        "--prices": [
            "run", "--benchmark", "mt-bench", *model, "--prices", path, "--out", str(out),
            "--limit", "1", *judged,
        ],
        "agreement --votes": ["agreement", "--votes", path],
        "import tau-bench": [
            "import", "-f", "tau-bench", "-b", "tau-bench-airline", "-o", str(out), path,
        ],
        "import structflowbench": ["import", "-f", "structflowbench", "-o", str(out), path],
    }  # fmt: skip


FLAGS = list(commands("X", Path("out")))


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return cli_env(shared_data_dir(), tmp_path_factory.mktemp("bounded-env"))


def assert_refused(done: subprocess.CompletedProcess, named: str, words: str, out: Path) -> None:
    """Exit status 2, one message (on one line) naming the file and the rule, nothing
    written."""
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert named in lines[0] and words in lines[0], lines[0]
    assert not out.exists()


@pytest.mark.parametrize("flag", FLAGS)
def test_a_device_as_input_file_is_refused_by_name(flag, env, tmp_path):
    out = tmp_path / "out"
    done = bounded_cli(commands("/dev/zero", out)[flag], env, tmp_path)
    assert_refused(done, "/dev/zero", "not a regular file", out)


@pytest.mark.parametrize("flag", ["-B reference_file", "--planted-answers", "agreement --votes"])
def test_a_regular_file_over_the_size_limit_is_refused_by_its_size(flag, env, tmp_path):
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:
        os.truncate(handle.fileno(), MAX_INPUT_BYTES + (1 << 20))  # sparse: no disk used
    out = tmp_path / "out"
    done = bounded_cli(commands(str(big), out)[flag], env, tmp_path)
    assert_refused(done, str(big), "too large", out)
    assert "at most 512.0 MiB" in done.stderr


def test_an_input_files_hash_is_its_sha256_read_in_pieces(tmp_path):
    """What the up-to-date check hashes: the whole file, across the 1 MiB pieces it reads
    (no `hashlib.file_digest`, which Python 3.10 lacks)."""
    import hashlib

    from turnbench.textio import input_sha256

    data = os.urandom(3 << 20) + b"tail"
    path = tmp_path / "answers.jsonl"
    path.write_bytes(data)
    assert input_sha256(path) == hashlib.sha256(data).hexdigest()
