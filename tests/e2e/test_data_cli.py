"""`turnbench data download` and a run that needs missing data, against 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.unit.test_data import serve_upstream


def no_data_env(env: dict[str, str], **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in env.items() if k != "TURNBENCH_DATA_DIR"}
    clean.update(extra)
    return clean


def test_data_download_fetches_and_verifies(env, data_dir, tmp_path):
    with serve_upstream(data_dir) as server:
        environment = no_data_env(
            env, TURNBENCH_DOWNLOAD_BASE_URL=f"http://127.0.0.1:{server.port}"
        )
        done = run_cli(["data", "download", "--benchmark", "mt-bench"], environment)
        assert done.returncode == 0, done.stderr
        assert "3 file(s) downloaded and verified" in done.stdout
        cache = Path(environment["XDG_CACHE_HOME"]) / "turnbench" / "data"
        assert (cache / "mt_bench/judge_prompts.jsonl").read_bytes() == (
            data_dir / "mt_bench/judge_prompts.jsonl"
        ).read_bytes()
        status = run_cli(["data", "status"], environment)
        assert status.returncode == 0 and "ok" in status.stdout


def test_a_run_downloads_what_it_needs(env, data_dir, tmp_path):
    with serve_upstream(data_dir) as server:
        environment = no_data_env(
            env, TURNBENCH_DOWNLOAD_BASE_URL=f"http://127.0.0.1:{server.port}"
        )
        done = run_cli(
            [
                "run",
                "--model",
                "openai/m",
                "--model-base-url",
                "http://127.0.0.1:9/v1",
                "--judge",
                "openai/j",
                "--judge-base-url",
                "http://127.0.0.1:9/v1",
                "--out",
                str(tmp_path / "run"),
                "--dry-run",
            ],
            environment,
        )
        assert done.returncode == 0, done.stderr
        assert server.counts["file"] == 3


def test_missing_data_offline_is_one_clear_error(env, tmp_path):
    environment = no_data_env(env, TURNBENCH_DOWNLOAD_BASE_URL="http://127.0.0.1:9")
    done = run_cli(
        [
            "run",
            "--model",
            "openai/m",
            "--model-base-url",
            "http://127.0.0.1:9/v1",
            "--judge",
            "openai/j",
            "--judge-base-url",
            "http://127.0.0.1:9/v1",
            "--out",
            str(tmp_path / "run"),
        ],
        environment,
    )
    assert done.returncode == 2
    assert "turnbench data download" in done.stderr and "--data-dir" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "run").exists()
