"""The background import loads what it is given in another thread, skips what is loaded
already, and swallows a failure (the real import reports it where it is needed)."""

from __future__ import annotations

import sys
import threading

import pytest

from turnbench.engine.preload import call_in_background, import_in_background


def test_imports_in_another_thread_and_only_what_is_missing(tmp_path, monkeypatch):
    (tmp_path / "tb_preload_probe.py").write_text(
        "import threading\nIMPORTED_BY = threading.current_thread().name\n", "utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tb_preload_probe", raising=False)
    thread = import_in_background(("tb_preload_probe",))
    assert thread is not None and thread.daemon
    thread.join(10)
    assert sys.modules["tb_preload_probe"].IMPORTED_BY == "turnbench-preload"
    assert import_in_background(("tb_preload_probe",)) is None  # loaded: no thread at all


def test_a_module_that_cannot_be_imported_is_left_to_the_real_import(monkeypatch):
    escaped = []
    monkeypatch.setattr(threading, "excepthook", escaped.append)
    thread = import_in_background(("tb_no_such_module_anywhere",))
    assert thread is not None
    thread.join(10)
    assert escaped == []  # the failure stayed inside the thread
    assert "tb_no_such_module_anywhere" not in sys.modules


def test_a_background_call_returns_its_result_or_raises_its_error_where_it_is_read():
    caller = threading.current_thread()
    ran_in = call_in_background(lambda: threading.current_thread())
    assert ran_in.result(10) is not caller and ran_in.result().daemon

    def broken() -> None:
        raise ValueError("unreadable input")

    failed = call_in_background(broken)
    with pytest.raises(ValueError, match="unreadable input"):
        failed.result(10)
