"""What the host thread does and keeps: no file I/O (even with a hung disk or at rotation),
bounded waits at flush/close, no state kept for prompts that are never closed, and no argument
values in records, spans or span status."""

from __future__ import annotations

import gc
import json
import os
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from loopscope.collectors import Collector, JsonlSink, MemorySink
from loopscope.collectors import sinks as sinks_module

# host-thread latency guards: never run alongside another timing test (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("timing")


class SlowDisk:
    """Wraps the sink module's ``os`` so writes to one folder block until released, and logs
    which thread made every write, open, rename and truncate there."""

    def __init__(self, folder: Path) -> None:
        self.folder = str(folder)
        self.gate = threading.Event()
        self.calls: list[tuple[str, int]] = []
        self.fds: set[int] = set()
        self.real = os

    def __getattr__(self, name: str):  # noqa: ANN204 - everything else is the real os
        return getattr(self.real, name)

    def _log(self, op: str) -> None:
        self.calls.append((op, threading.get_ident()))

    def open(self, path, flags, mode=0o777):  # noqa: ANN001, ANN201
        fd = self.real.open(path, flags, mode)
        if str(path).startswith(self.folder):
            self._log("open")
            self.fds.add(fd)
        return fd

    def write(self, fd, data):  # noqa: ANN001, ANN201
        if fd in self.fds:
            self._log("write")
            self.gate.wait(20)
        return self.real.write(fd, data)

    def replace(self, src, dst):  # noqa: ANN001, ANN201
        self._log("replace")
        return self.real.replace(src, dst)

    def truncate(self, path, length):  # noqa: ANN001, ANN201
        self._log("truncate")
        return self.real.truncate(path, length)


def _calls(col: Collector, n: int, start: int = 0) -> list[float]:
    times = []
    with col.prompt(conversation_id="c", prompt_id=f"p{start}") as loop:
        loop.model_response(stop_reason="tool_use")
        for i in range(start, start + n):
            t = time.perf_counter()
            with loop.tool_call(f"t{i}", "search", {"q": "x" * 50}):
                pass
            times.append(time.perf_counter() - t)
        loop.model_response(stop_reason="end_turn")
    return times


def test_host_never_writes_even_when_the_disk_hangs_and_at_rotation(tmp_path: Path, monkeypatch, wait_for: Callable[..., None]) -> None:  # noqa: ANN001
    disk = SlowDisk(tmp_path)
    monkeypatch.setattr(sinks_module, "os", disk)
    host = threading.get_ident()
    sink = JsonlSink(tmp_path / "l.jsonl", flush_interval=0.02, max_queue=100, max_bytes=3000, backups=2)
    col = Collector(sink)
    _calls(col, 1)
    wait_for(lambda: any(op == "write" for op, _ in disk.calls))  # the writer is now stuck in a write
    held = col.stats.emitted - col.stats.queued  # records in the writer's stuck batch (1 or 2)
    times = _calls(col, 500, start=1)
    # The host thread went on at memory speed while the disk hung: no call waited for it.
    assert max(times) < 0.05 and sum(times) < 1.0
    st = col.stats
    assert st.emitted == 503 and st.queued == 100 and st.dropped == 503 - 100 - held
    disk.gate.set()
    wait_for(lambda: col.stats.queued == 0)
    wait_for(lambda: col.stats.written == 100 + held)
    before_close = list(disk.calls)
    col.close()
    # Every open, write and rename of the log (rotation included) came from the writer thread.
    assert {op for op, _ in before_close} >= {"open", "write", "replace"}
    # (except the first open: JsonlSink() opens the file at setup, to fail early on a bad path)
    assert before_close[0][0] == "open" and all(tid != host for _, tid in before_close[1:])
    assert col.stats.written + col.stats.dropped == col.stats.emitted
    lines = [json.loads(x) for f in (f"{tmp_path}/l.jsonl.2", f"{tmp_path}/l.jsonl.1", f"{tmp_path}/l.jsonl")
             if os.path.exists(f) for x in Path(f).read_text().splitlines()]
    assert lines and all(set(r) >= {"kind", "ts"} for r in lines)


def test_close_and_flush_give_up_on_a_hung_disk_and_count_the_rest(tmp_path: Path, monkeypatch, wait_for: Callable[..., None]) -> None:  # noqa: ANN001
    disk = SlowDisk(tmp_path)
    monkeypatch.setattr(sinks_module, "os", disk)
    sink = JsonlSink(tmp_path / "l.jsonl", flush_interval=0.02)
    col = Collector(sink)
    _calls(col, 1)
    wait_for(lambda: any(op == "write" for op, _ in disk.calls))
    held = col.stats.emitted - col.stats.queued
    _calls(col, 10, start=1)
    t = time.perf_counter()
    assert sink.flush(timeout=0.1) is False
    sink.close(timeout=0.3)
    assert time.perf_counter() - t < 2.0
    # The records queued behind the stuck write were dropped and counted.
    assert col.stats.emitted == 13 and col.stats.dropped == 13 - held and col.stats.queued == 0
    disk.gate.set()
    wait_for(lambda: col.stats.written == held)
    wait_for(lambda: sink._fd < 0)  # the writer closed the descriptor once its write returned
    assert len(Path(tmp_path / "l.jsonl").read_text().splitlines()) == held


def test_never_closed_prompts_keep_no_state_in_the_collector(span_recorder: tuple[Any, Any]) -> None:
    provider, exporter = span_recorder
    for tp in (None, provider):
        col = Collector(MemorySink(), tracer_provider=tp)
        refs = []
        for i in range(1000):
            loop = col.prompt(conversation_id=f"c{i}")
            loop.model_response(stop_reason="tool_use")
            with loop.tool_call("t", "x", {"i": i}):
                pass
            refs.append(weakref.ref(loop))
        del loop
        gc.collect()
        # A long-running process that abandons prompts (crashed tasks) does not accumulate them.
        assert sum(r() is not None for r in refs) == 0


def test_argument_values_reach_no_record_span_or_status(span_recorder: tuple[Any, Any]) -> None:
    provider, exporter = span_recorder
    sink = MemorySink()
    col = Collector(sink, tracer_provider=provider)
    marker = "VALUE-4f1c9e"
    with col.prompt(conversation_id="c", prompt_id="p", provider="anthropic") as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("t1", "login", {"user": marker, "n": [marker]}, catch=True):
            raise PermissionError("login refused; password=hunter2-" + marker)
        with loop.tool_call("t2", "echo", json.dumps({"text": marker})):
            pass
        loop.record_tool_call(tool_call_id="t3", tool_name="x", arguments={"k": marker}, is_error=True,
                              error_message="api_key=" + marker)
        loop.model_response(stop_reason="end_turn")
    dumped = json.dumps(sink.records)
    for s in exporter.get_finished_spans():
        dumped += json.dumps(dict(s.attributes)) + str(s.status.description) + str(list(s.events))
    assert marker not in dumped and "hunter2" not in dumped
    assert "login refused; password=[REDACTED]" in dumped
    provider.shutdown()


class Blob(list):
    """A list that can be weakly referenced (a plain list cannot)."""


def test_huge_arguments_are_not_copied_and_not_kept_after_writing(tmp_path: Path, wait_for: Callable[..., None]) -> None:
    big = {"blob": Blob(["x" * (20 * 2**20)]), "n": 1}
    ref = weakref.ref(big["blob"])
    col = Collector(JsonlSink(tmp_path / "l.jsonl", flush_interval=0.02))
    with col.prompt(conversation_id="c") as loop:
        loop.model_response(stop_reason="tool_use")
        t = time.perf_counter()
        with loop.tool_call("t", "upload", big):
            pass
        host_s = time.perf_counter() - t
    # The host pays a shallow copy (values shared, not copied): microseconds; hashing 20 MB on
    # the host thread would take tens of milliseconds.
    assert host_s < 0.01
    del big
    wait_for(lambda: col.stats.written == 2)
    gc.collect()
    # Once written, nothing in the collector holds the arguments any more.
    assert ref() is None
    col.close()
    rec = json.loads((tmp_path / "l.jsonl").read_text().splitlines()[0])
    assert rec["input_shape"] == {"blob": "array", "n": "integer"} and len(rec["args_fingerprint"]) == 64


def test_every_record_is_written_or_counted_as_dropped(tmp_path: Path) -> None:
    class BadKey:
        def __hash__(self) -> int:
            return 1

        def __str__(self) -> str:
            raise RuntimeError("no str")

    col = Collector(JsonlSink(tmp_path / "l.jsonl", flush_interval=0.02))
    with col.prompt(conversation_id="c") as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("t1", "x", {BadKey(): 1}):  # cannot be shaped: the writer drops it
            pass
        with loop.tool_call("t2", "x", {"a": 1}):
            pass
    col.close()
    st = col.stats
    assert (st.emitted, st.written, st.dropped, st.sink_errors) == (3, 2, 1, 1)
    assert st.written + st.dropped == st.emitted


def test_huge_json_text_arguments_are_not_parsed_on_the_host_thread_for_spans(tmp_path: Path, span_recorder: tuple[Any, Any]) -> None:
    provider, exporter = span_recorder
    col = Collector(JsonlSink(tmp_path / "l.jsonl", flush_interval=0.02), tracer_provider=provider)
    huge = json.dumps({"blob": "x" * (20 * 2**20), "n": 1})  # OpenAI-style arguments: JSON text
    small = json.dumps({"q": "paris"})
    with col.prompt(conversation_id="c", provider="openai") as loop:
        loop.model_response(stop_reason="tool_calls")
        t = time.perf_counter()
        with loop.tool_call("big", "upload", huge):
            pass
        host_s = time.perf_counter() - t
        with loop.tool_call("small", "search", small):
            pass
    col.close()
    # Parsing 20 MB of JSON takes well over 50 ms; the host skipped it.
    assert host_s < 0.05
    spans = {s.attributes.get("gen_ai.tool.call.id"): s for s in exporter.get_finished_spans()}
    assert "loopscope.tool.input_shape" not in spans["big"].attributes
    assert spans["small"].attributes["loopscope.tool.input_shape"] == '{"q":"string"}'
    recs = {r.get("tool_call_id"): r for r in map(json.loads, (tmp_path / "l.jsonl").read_text().splitlines())}
    assert recs["big"]["input_shape"] == {"blob": "string", "n": "integer"}  # the writer parsed it
    provider.shutdown()
