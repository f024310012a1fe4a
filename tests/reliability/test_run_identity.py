"""Issue 10 item 8: a run whose config record cannot be read is not resumed (nor reported).

The config record is the run's identity: the drift guard compares it with the new command's
settings. When it is unreadable (a byte order mark an editor added, a damaged first line, a
damaged config further down) a resume with other settings used to be accepted, and
results.json claimed settings that were never used.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.reliability.helpers import assert_clean_error, invoke, run_args
from turnbench.errors import UserError
from turnbench.journal.runlog import LOG_NAME, RunLog, read_records
from turnbench.testing.fake_server import FakeServer
from turnbench.types import AnswerRecord, ConfigRecord


def _line(record) -> bytes:
    return (record.model_dump_json(exclude_none=True) + "\n").encode()


def _config(temperature: float = 0.0) -> bytes:
    return _line(ConfigRecord(turnbench_version="t", config={"temperature": temperature}))


def _answer(key: str) -> bytes:
    return _line(AnswerRecord(key=key, model="m", sample_id=1, turn=1, text=key))


BOM = b"\xef\xbb\xbf"

# name -> (log content, line number named in the refusal, text of the refusal)
UNREADABLE: dict[str, tuple[bytes, int, str]] = {
    "byte order mark": (BOM + _config() + _answer("a"), 1, "byte order mark"),
    "corrupt first line": (_config()[:30] + b"\n" + _answer("a"), 1, "not a valid config"),
    "first line not json": (b"config?\n" + _config() + _answer("a"), 1, "not a valid config"),
    "corrupt config in the middle": (
        _config() + _answer("a") + _config(0.7)[:-12] + b"\n" + _answer("b"),
        3,
        "not a valid config",
    ),
    "config missing a field in the middle": (
        _config() + _answer("a") + b'{"kind": "config", "config": {}}\n' + _answer("b"),
        3,
        "not a valid config",
    ),
    "work before any config": (_answer("a") + _config(), 1, "comes before any config record"),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_unreadable_identity_refuses_to_open_and_leaves_the_log_alone(case, tmp_path):
    content, number, why = UNREADABLE[case]
    (tmp_path / LOG_NAME).write_bytes(content)
    with pytest.raises(UserError, match=f"{LOG_NAME}:{number}: .*{why}"):
        RunLog(tmp_path).open()
    assert (tmp_path / LOG_NAME).read_bytes() == content
    with pytest.raises(UserError, match=why):  # readers (report, compare, rank) refuse too
        read_records(tmp_path / LOG_NAME)


@pytest.mark.parametrize(
    "content",
    [
        _config() + _answer("a") + _config(0.7)[:25],  # a resume killed writing its config
        _config()[:25],  # the first invocation killed writing its config: nothing depends on it
        _config() + _answer("a") + _answer("b")[:25],  # a torn answer, as before
    ],
    ids=["second config", "only line", "answer"],
)
def test_a_torn_last_line_is_still_repairable(content, tmp_path):
    """A torn last line has nothing after it made under its settings: it is cut off."""
    (tmp_path / LOG_NAME).write_bytes(content)
    warnings: list[str] = []
    with RunLog(tmp_path, warn=warnings.append) as log:
        assert len(warnings) == 1 and "last line is incomplete" in warnings[0]
        records = log.records
    assert [r.kind for r in records] == (["config", "answer"] if len(content) > 30 else [])
    assert (tmp_path / LOG_NAME).read_bytes() == content[: content.rfind(b"\n") + 1]


def test_an_unreadable_record_that_is_not_a_config_is_still_skipped(tmp_path):
    content = _config() + _answer("a") + b'{"kind": "answer", oops\n' + _answer("b")
    (tmp_path / LOG_NAME).write_bytes(content)
    warnings: list[str] = []
    with RunLog(tmp_path, warn=warnings.append) as log:
        assert [r.kind for r in log.records] == ["config", "answer", "answer"]
    assert warnings == [
        f"{tmp_path / LOG_NAME}:3: unreadable record skipped; its work will be redone."
    ]


def test_a_text_mentioning_kind_config_is_not_taken_for_a_config(tmp_path):
    """Inside a JSON string the quotes are escaped: an answer quoting `"kind": "config"` that is
    damaged is skipped like any other record."""
    quoting = _line(
        AnswerRecord(key="q", model="m", sample_id=1, turn=1, text='{"kind": "config"}')
    )
    content = _config() + quoting[:-5] + b"\n" + _answer("b")
    (tmp_path / LOG_NAME).write_bytes(content)
    with RunLog(tmp_path, warn=lambda message: None) as log:
        assert [r.kind for r in log.records] == ["config", "answer"]


# -- end to end: a resume with another temperature ---------------------------------------------
def _damage(kind: str, log: Path) -> None:
    data = log.read_bytes()
    first, rest = data.split(b"\n", 1)
    if kind == "byte order mark":
        log.write_bytes(BOM + data)
    elif kind == "corrupt first line":  # cut short, the rest intact
        log.write_bytes(first[: len(first) // 2] + b"\n" + rest)
    else:  # a config record, but not one of a run
        log.write_bytes(b'{"kind": "config", "turnbench_version": "0", "config": {}}\n' + rest)


DAMAGES = {
    "byte order mark": ":1: the run's config record cannot be read: it starts with a UTF-8 byte",
    "corrupt first line": ":1: the run's config record cannot be read: the line is not a valid",
    "config without settings": ": the run's config record cannot be read (invalid: benchmark,",
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_cli_refuses_to_resume_a_run_whose_config_cannot_be_read(
    damage, reference, env, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "run"
    shutil.copytree(reference.out, out)
    log = out / LOG_NAME
    assert json.loads(log.read_bytes().split(b"\n", 1)[0])["kind"] == "config"
    _damage(damage, log)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with FakeServer() as server:
        done = invoke(
            run_args(server.base_url, out, "--temperature", "0.9"), env, capsys, monkeypatch
        )
        assert server.requests == []
    assert_clean_error(done, f"{log}{DAMAGES[damage]}", code=7)
    # nothing rewritten: neither the log nor results.json claims the new temperature
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".lock"} == {
        name: data for name, data in before.items() if name != ".lock"
    }
