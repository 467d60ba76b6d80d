"""JsonlSink: background writer, bounded queue, rotation, failures, SIGKILL durability."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from loopscope.collectors import Collector, CollectorConfigError, JsonlSink

# host-thread latency guards: never run alongside another timing test (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("timing")


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def record_calls(col: Collector, n: int, conversation_id: str = "c") -> None:
    with col.prompt(conversation_id=conversation_id, prompt_id="p") as loop:
        loop.model_response(stop_reason="tool_use")
        for i in range(n):
            with loop.tool_call(f"t{i}", "search", {"q": "x"}):
                pass
        loop.model_response(stop_reason="end_turn")


def test_writes_whole_json_lines_and_flushes_on_close(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "nested" / "loopscope.jsonl"
    col = Collector(JsonlSink(path))
    record_calls(col, 3)
    col.close()
    recs = lines_of(path)
    assert [r["kind"] for r in recs] == ["tool_call"] * 3 + ["loop_exit"]
    assert path.read_bytes().endswith(b"\n")
    assert col.stats.written == 4 and col.stats.dropped == 0 and col.stats.queued == 0
    # Appends, never truncates.
    col2 = Collector(JsonlSink(path))
    record_calls(col2, 1)
    col2.close()
    assert len(lines_of(path)) == 6


def test_writer_thread_flushes_within_the_interval_without_close(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    sink = JsonlSink(path, flush_interval=0.1)
    col = Collector(sink)
    record_calls(col, 2)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len(path.read_bytes().splitlines()) < 3:
        time.sleep(0.02)
    assert len(lines_of(path)) == 3
    col.close()


def test_non_ascii_is_written_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(path))
    with col.prompt(conversation_id="c-é") as loop, loop.tool_call("t", "réserver", {"ville": "Zürich"}, catch=True):
        raise ValueError("Chambre « suite » inconnue")
    col.close()
    raw = path.read_text(encoding="utf-8")
    assert "réserver" in raw and "« suite »" in raw and "Zürich" not in raw


def test_full_queue_drops_and_counts_never_blocks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(path, max_queue=5, flush_interval=60))
    with caplog.at_level(logging.WARNING, logger="loopscope"):
        t = time.perf_counter()
        record_calls(col, 20)
        assert time.perf_counter() - t < 2
    assert col.stats.dropped == 16  # 21 records, 5 fit
    assert col.stats.emitted == 21
    assert sum("queue full" in r.message for r in caplog.records) == 1
    col.close()
    assert len(lines_of(path)) == 5


def test_records_after_close_are_dropped_and_counted(tmp_path: Path) -> None:
    col = Collector(JsonlSink(tmp_path / "l.jsonl"))
    col.close()
    record_calls(col, 1)
    assert col.stats.dropped == 2 and col.stats.internal_errors == 0


def test_rotation_by_size_keeps_backups_and_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(path, max_bytes=4000, backups=2, flush_interval=0.05))
    with col.prompt(conversation_id="c", prompt_id="p") as loop:
        loop.model_response(stop_reason="tool_use")
        for i in range(60):
            with loop.tool_call(f"t{i:03d}", "search", {"q": "x"}):
                pass
            if i % 7 == 0:
                col.flush()
    col.close()
    files = [Path(f"{path}.2"), Path(f"{path}.1"), path]
    assert all(f.exists() for f in files) and not Path(f"{path}.3").exists()
    assert all(f.stat().st_size <= 4000 for f in files)
    recs = [r for f in files for r in lines_of(f)]
    ids = [r.get("tool_call_id") for r in recs]
    # The newest records survive, contiguous and in order; the oldest rotated away.
    assert ids[-1] is None and recs[-1]["kind"] == "loop_exit"
    tail = ids[:-1]
    assert tail == [f"t{i:03d}" for i in range(60 - len(tail), 60)] and len(tail) < 60


def test_full_disk_is_logged_once_counted_loop_unaffected(caplog: pytest.LogCaptureFixture) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    col = Collector(JsonlSink("/dev/full", flush_interval=0.05))
    with caplog.at_level(logging.ERROR, logger="loopscope"):
        for _ in range(3):
            record_calls(col, 2)
            col.flush()
    st = col.stats
    assert st.sink_errors == 3 and st.dropped == 9 and st.written == 0 and st.internal_errors == 0
    assert sum("cannot write /dev/full" in r.getMessage() for r in caplog.records) == 1
    col.close()


def test_unwritable_path_fails_at_setup_with_a_clear_message(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    with pytest.raises(CollectorConfigError, match="cannot open the loopscope log .*not_a_dir"):
        JsonlSink(blocker / "l.jsonl")
    with pytest.raises(CollectorConfigError, match="cannot open"):
        Collector(str(blocker / "l.jsonl"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"flush_interval": 0}, "flush_interval must be > 0"),
        ({"flush_interval": -1.0}, "flush_interval must be > 0"),
        ({"flush_interval": float("nan")}, "flush_interval must be a finite"),
        ({"max_queue": 0}, "max_queue must be > 0"),
        ({"max_queue": 1.5}, "max_queue must be a whole"),
        ({"max_bytes": 0}, "max_bytes must be > 0"),
        ({"backups": -1}, "backups must be >= 0"),
    ],
)
def test_bad_sink_configuration(tmp_path: Path, kwargs: dict, match: str) -> None:
    with pytest.raises(CollectorConfigError, match=match):
        JsonlSink(tmp_path / "l.jsonl", **kwargs)


def test_concurrent_threads_produce_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(path, flush_interval=0.02))

    def work(k: int) -> None:
        record_calls(col, 200, conversation_id=f"c{k}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    col.close()
    recs = lines_of(path)
    assert len(recs) == 4 * 201
    for k in range(4):
        mine = [r["tool_call_id"] for r in recs if r["conversation_id"] == f"c{k}" and r["kind"] == "tool_call"]
        assert mine == [f"t{i}" for i in range(200)]


CHILD_EXIT = r"""
import sys
from loopscope.collectors import Collector, JsonlSink
col = Collector(JsonlSink(sys.argv[1], flush_interval=30))
with col.prompt(conversation_id="c", prompt_id="p") as loop:
    for i in range(50):
        with loop.tool_call(f"t{i}", "x", {}):
            pass
# no close(): the atexit hook must flush
"""


def test_interpreter_exit_flushes(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    subprocess.run([sys.executable, "-c", CHILD_EXIT, str(path)], check=True, timeout=60)
    assert len(lines_of(path)) == 51


CHILD_KILL = r"""
import sys, time
from loopscope.collectors import Collector, JsonlSink
col = Collector(JsonlSink(sys.argv[1], flush_interval=float(sys.argv[2])))
i = 0
while True:
    with col.prompt(conversation_id="c", prompt_id=f"p{i}") as loop:
        loop.model_response(stop_reason="tool_use")
        for _ in range(20):
            with loop.tool_call(f"t{i}", "search", {"q": "x" * 200}, catch=True) as call:
                if i % 3 == 0:
                    raise ValueError("Not found. Try search_users first." * 5)
            i += 1
            if i % 10 == 0:
                time.sleep(0.001)  # a fast but real loop: the writer must keep up (no queue drops)
        loop.model_response(stop_reason="end_turn")
    print(i, col.stats.dropped, flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_loses_at_most_the_last_flush_interval(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    interval = 0.2
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD_KILL, str(path), str(interval)], stdout=subprocess.PIPE, text=True, env=env
    )
    reported: list[tuple[float, int, int]] = []

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            fields = line.split()
            if len(fields) != 2:
                continue  # the last line, cut by the SIGKILL mid-write
            n, dropped = map(int, fields)
            reported.append((time.monotonic(), n, dropped))

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    # Let the child record for a while (many flush intervals) before killing it mid-stream.
    while time.monotonic() < deadline and (not reported or time.monotonic() - reported[0][0] < 1.5):
        time.sleep(0.05)
    killed_at = time.monotonic()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    t.join(timeout=5)
    assert proc.returncode == -signal.SIGKILL
    assert reported, "child recorded nothing"

    data = path.read_bytes()
    lines = data.split(b"\n")
    last = lines.pop()  # b"" when the file ends with a newline, else the one partial line
    recs = [json.loads(line) for line in lines]  # every earlier line is whole, valid JSON
    if last:
        with pytest.raises(ValueError):
            json.loads(last)
    on_disk = {r["tool_call_id"] for r in recs if r["kind"] == "tool_call"}
    # Everything reported (i.e. recorded) more than one flush interval before the kill is on disk.
    # 0.3 s of extra slack for a loaded CI machine's scheduler.
    assert reported[-1][2] == 0, "the writer fell behind and dropped records (machine overloaded?)"
    safe = [n for when, n, _ in reported if when < killed_at - interval - 0.3]
    assert safe, "the child ran too briefly to check anything"
    must = safe[-1]
    missing = [i for i in range(must) if f"t{i}" not in on_disk]
    assert missing == []


CHILD_FORK = r"""
import os, sys
from loopscope.collectors import Collector, JsonlSink
col = Collector(JsonlSink(sys.argv[1], flush_interval=0.05))
with col.prompt(conversation_id="parent", prompt_id="p") as loop, loop.tool_call("before-fork", "x", {}):
    pass
pid = os.fork()
who = "child" if pid == 0 else "parent"
with col.prompt(conversation_id=who, prompt_id="p") as loop, loop.tool_call(who, "x", {}):
    pass
if pid == 0:
    import time; time.sleep(0.3)   # the child's own writer thread flushes (no close, no atexit)
    os._exit(0)
os.waitpid(pid, 0)
col.close()
"""


def test_forked_child_gets_its_own_writer(tmp_path: Path) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    path = tmp_path / "l.jsonl"
    subprocess.run([sys.executable, "-c", CHILD_FORK, str(path)], check=True, timeout=60)
    calls = sorted(r["tool_call_id"] for r in lines_of(path) if r["kind"] == "tool_call")
    assert calls == ["before-fork", "child", "parent"]


def test_failed_rotation_is_counted_and_writing_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from loopscope.collectors import sinks

    path = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(path, max_bytes=600, backups=1, flush_interval=60))
    real_replace = os.replace

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied", src)

    monkeypatch.setattr(sinks.os, "replace", refuse)
    with caplog.at_level(logging.ERROR, logger="loopscope"):
        for _ in range(3):
            record_calls(col, 2)
            col.flush()
    failed = col.stats
    assert failed.sink_errors >= 1 and failed.dropped >= 1 and failed.internal_errors == 0
    assert sum("cannot write" in r.getMessage() for r in caplog.records) == 1
    monkeypatch.setattr(sinks.os, "replace", real_replace)
    record_calls(col, 2)
    col.close()
    assert col.stats.written > failed.written
    files = [Path(f"{path}.1"), path]
    recs = [r for f in files if f.exists() for r in lines_of(f)]
    assert recs[-1]["kind"] == "loop_exit"
    assert col.stats.written + col.stats.dropped == col.stats.emitted
