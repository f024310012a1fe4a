"""The console entry point ends the process without the interpreter's teardown only when
nothing is left for the teardown to do, and keeps the exit status and every byte of output."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _entry(argv: list[str], before: str = "") -> subprocess.CompletedProcess[str]:
    """Run turnbench's console entry point with `argv`, after the Python in `before`, with an
    exit handler that shows whether the ordinary teardown ran."""
    code = textwrap.dedent(
        f"""
        import atexit, sys, threading
        atexit.register(lambda: print("TEARDOWN", file=sys.stderr))
        {before}
        sys.argv = ["turnbench", *{argv!r}]
        from turnbench.cli.entry import main
        main()
        """
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_a_finished_command_skips_the_teardown_and_keeps_its_output():
    done = _entry(["--help"])
    assert done.returncode == 0
    assert "judge" in done.stdout and "report" in done.stdout  # all of the piped help
    assert "TEARDOWN" not in done.stderr


def test_the_exit_status_of_a_refused_command_is_kept():
    done = _entry(["judge", "--no-such-flag"])
    assert done.returncode == 2
    assert "TEARDOWN" not in done.stderr
    done = _entry(["report", "/nonexistent/run-dir"])
    assert done.returncode != 0 and "error" in done.stderr.lower()


def test_a_thread_still_running_gets_the_ordinary_exit():
    done = _entry(
        ["--help"],
        before="threading.Thread(target=__import__('time').sleep, args=(4,)).start()",
    )
    assert done.returncode == 0
    assert "TEARDOWN" in done.stderr
