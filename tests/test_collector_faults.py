"""Fault injection for the collector: a failing machine, in real loops.

Every test asserts the counters' invariant ``emitted = written + dropped + queued + in_flight``
(:func:`balanced`) and that the host loop neither raised nor waited: a tool call that took over
half a second on the host thread counts as blocked (the normal cost is about a microsecond, so
this checks for hangs, not speed).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from loopscope.collectors import Collector, JsonlSink
from loopscope.collectors import sinks as sinks_module
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

# host-thread latency guards: never run alongside another timing test (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("timing")

BLOCKED_S = 0.5


def balanced(st) -> bool:  # noqa: ANN001
    return st.emitted == st.written + st.dropped + st.queued + st.in_flight


def run_loop(col: Collector, n: int, prefix: str = "t", check_every: int = 0) -> float:
    """Record ``n`` tool calls in one prompt; return the slowest host-thread call (s)."""
    worst = 0.0
    with col.prompt(conversation_id="c", prompt_id=prefix) as loop:
        loop.model_response(stop_reason="tool_use")
        for i in range(n):
            t = time.perf_counter()
            with loop.tool_call(f"{prefix}{i}", "search", {"q": "x" * 40}):
                pass
            worst = max(worst, time.perf_counter() - t)
            if check_every and i % check_every == 0:
                assert balanced(col.stats), col.stats
        loop.model_response(stop_reason="end_turn")
    return worst


def whole_lines(path: Path) -> int:
    n = 0
    for line in path.read_bytes().split(b"\n"):
        try:
            json.loads(line)
        except ValueError:
            continue
        n += 1
    return n


def child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_disk_full_every_record_counted_dropped_loop_unaffected() -> None:
    col = Collector(JsonlSink("/dev/full", flush_interval=0.02), strict=False)
    worst = max(run_loop(col, 300, f"r{k}-", check_every=50) for k in range(5))
    col.close()
    st = col.stats
    assert worst < BLOCKED_S
    assert balanced(st) and st.written == 0 and st.dropped == st.emitted == 5 * 301 and st.in_flight == 0


CHILD_FSIZE = r"""
import json, resource, signal, sys, time
from loopscope.collectors import Collector, JsonlSink
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)      # writes past the limit fail with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
col = Collector(JsonlSink(sys.argv[1], flush_interval=0.05, max_bytes=None), strict=False)
worst = 0.0
ok = True
for k in range(4):
    with col.prompt(conversation_id="c", prompt_id=f"p{k}") as loop:
        for i in range(500):
            t = time.perf_counter()
            with loop.tool_call(f"t{k}-{i}", "search", {"q": "x" * 40}):
                pass
            worst = max(worst, time.perf_counter() - t)
            s = col.stats
            ok = ok and s.emitted == s.written + s.dropped + s.queued + s.in_flight
    col.flush()
col.close()
s = col.stats
print(json.dumps({"worst": worst, "ok": ok, "emitted": s.emitted, "written": s.written,
                  "dropped": s.dropped, "queued": s.queued, "in_flight": s.in_flight, "errors": s.sink_errors}))
"""


@pytest.mark.skipif(sys.platform == "win32" or not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE")
def test_file_size_limit_partial_write_counts_the_lines_that_reached_the_disk(tmp_path: Path) -> None:
    """Regression: a partial write (EFBIG after the limit) counted 0 written for 200+ whole lines on disk."""
    path = tmp_path / "l.jsonl"
    out = subprocess.run(
        [sys.executable, "-c", CHILD_FSIZE, str(path), "50000"],
        capture_output=True, text=True, timeout=60, env=child_env(), check=True,
    )
    st = json.loads(out.stdout.strip().splitlines()[-1])
    assert st["ok"] and st["worst"] < BLOCKED_S
    assert st["emitted"] == st["written"] + st["dropped"] and st["queued"] == st["in_flight"] == 0
    assert st["errors"] >= 1 and st["dropped"] > 0
    on_disk = whole_lines(path)
    assert on_disk > 0 and st["written"] == on_disk


class HungDisk:
    """The sink module's ``os`` with writes to one folder blocked until ``gate`` is set."""

    def __init__(self, folder: Path) -> None:
        self.folder = str(folder)
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.fds: set[int] = set()

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(os, name)

    def open(self, path, flags, mode=0o777):  # noqa: ANN001, ANN201
        fd = os.open(path, flags, mode)
        if str(path).startswith(self.folder):
            self.fds.add(fd)
        return fd

    def write(self, fd, data):  # noqa: ANN001, ANN201
        if fd in self.fds:
            self.entered.set()
            self.gate.wait(30)
        return os.write(fd, data)


def test_a_batch_stuck_in_a_hung_write_is_counted_in_flight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wait_for: Callable[..., None]) -> None:
    """Regression: the records of a write that hangs were counted nowhere (3,160 missing)."""
    disk = HungDisk(tmp_path)
    monkeypatch.setattr(sinks_module, "os", disk)
    col = Collector(JsonlSink(tmp_path / "l.jsonl", flush_interval=0.05, max_queue=500), strict=False)
    worst = run_loop(col, 200, "a")
    assert disk.entered.wait(10)
    worst = max(worst, run_loop(col, 1000, "b", check_every=25))
    st = col.stats
    assert worst < BLOCKED_S
    assert balanced(st), st
    assert st.in_flight > 0 and st.queued == 500 and st.written == 0
    disk.gate.set()
    wait_for(lambda: col.stats.queued == 0 and col.stats.in_flight == 0)
    col.close()
    st = col.stats
    assert balanced(st) and st.written == whole_lines(tmp_path / "l.jsonl") and st.dropped > 0


def test_a_sink_that_blocks_does_not_block_close_past_its_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wait_for: Callable[..., None]) -> None:
    disk = HungDisk(tmp_path)
    monkeypatch.setattr(sinks_module, "os", disk)
    sink = JsonlSink(tmp_path / "l.jsonl", flush_interval=0.05)
    col = Collector(sink, strict=False)
    run_loop(col, 50, "a")
    assert disk.entered.wait(10)
    run_loop(col, 50, "b")
    t = time.perf_counter()
    sink.close(timeout=0.2)
    assert time.perf_counter() - t < 1.5
    assert balanced(col.stats) and col.stats.queued == 0 and col.stats.in_flight > 0
    disk.gate.set()
    wait_for(lambda: col.stats.in_flight == 0)
    assert balanced(col.stats)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_with_no_reader_does_not_block_setup(tmp_path: Path) -> None:
    """Regression: JsonlSink(fifo) blocked its constructor forever in open() until a reader came."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    code = textwrap.dedent(
        """
        import sys, time
        from loopscope.collectors import Collector, JsonlSink
        t = time.perf_counter()
        col = Collector(JsonlSink(sys.argv[1], flush_interval=0.05), strict=False)
        with col.prompt(conversation_id="c") as loop, loop.tool_call("t", "x", {}):
            pass
        print("setup+call", round(time.perf_counter() - t, 3), flush=True)
        col.sink.close(timeout=0.2)
        s = col.stats
        print("stats", s.emitted, s.written, s.dropped, s.queued, s.in_flight, flush=True)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(fifo)], stdout=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("JsonlSink on a named pipe with no reader blocked the host")
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert float(lines["setup+call"]) < BLOCKED_S
    emitted, written, dropped, queued, in_flight = map(int, lines["stats"].split())
    assert emitted == written + dropped + queued + in_flight and emitted == 2 and written == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_gets_the_records_once_a_reader_comes(tmp_path: Path, wait_for: Callable[..., None]) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    col = Collector(JsonlSink(fifo, flush_interval=0.05), strict=False)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    run_loop(col, 20)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(Path(fifo).read_bytes()), daemon=True)
    reader.start()
    wait_for(lambda: col.stats.written == 21)
    col.close()
    reader.join(10)
    assert len(got[0].splitlines()) == 21 and balanced(col.stats)


CHILD_KILL = r"""
import sys, time
from loopscope.collectors import Collector, JsonlSink
col = Collector(JsonlSink(sys.argv[1], flush_interval=float(sys.argv[2])), strict=False)
i = 0
with col.prompt(conversation_id="c", prompt_id="p") as loop:
    while True:
        with loop.tool_call(f"t{i}", "search", {"q": "x"}):
            pass
        i += 1
        if i % 20 == 0:
            s = col.stats
            assert s.emitted == s.written + s.dropped + s.queued + s.in_flight
            print(i, s.dropped, flush=True)
            time.sleep(0.002)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_loses_only_the_last_flush_interval(tmp_path: Path, wait_for: Callable[..., None]) -> None:
    path = tmp_path / "l.jsonl"
    interval = 0.2
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD_KILL, str(path), str(interval)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
    )
    reported: list[tuple[float, int]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            reported.append((time.monotonic(), int(line.split()[0])))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    wait_for(lambda: reported and time.monotonic() - reported[0][0] > 1.0, timeout=30)
    killed_at = time.monotonic()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    t.join(5)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    ids = set()
    for line in path.read_bytes().split(b"\n")[:-1]:
        ids.add(json.loads(line)["tool_call_id"])  # every line but the last is whole
    safe = [n for when, n in reported if when < killed_at - interval - 0.3]
    assert safe and all(f"t{i}" in ids for i in range(safe[-1]))


CHILD_FORK = r"""
import json, os, sys
from loopscope.collectors import Collector, JsonlSink
col = Collector(JsonlSink(sys.argv[1], flush_interval=0.05), strict=False)
def loop(name, n):
    with col.prompt(conversation_id=name, prompt_id="p") as lp:
        for i in range(n):
            with lp.tool_call(f"{name}{i}", "x", {}):
                pass
loop("before", 300)      # some of these are still queued at the fork
pid = os.fork()
who = "child" if pid == 0 else "parent"
loop(who, 100)
col.flush()
s = col.stats
# each process writes its own file: two processes printing to one pipe may interleave their lines
with open(f"{sys.argv[1]}.{who}.json", "w") as out:
    json.dump({"who": who, "emitted": s.emitted, "written": s.written, "dropped": s.dropped,
               "queued": s.queued, "in_flight": s.in_flight}, out)
if pid == 0:
    col.close()
    os._exit(0)
os.waitpid(pid, 0)
col.close()
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_child_counts_its_own_records_parent_keeps_its_own(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    subprocess.run(
        [sys.executable, "-c", CHILD_FORK, str(path)], capture_output=True, text=True, timeout=60,
        env=child_env(), check=True,
    )
    stats = {who: json.loads(Path(f"{path}.{who}.json").read_text()) for who in ("child", "parent")}
    for s in stats.values():
        assert s["emitted"] == s["written"] + s["dropped"] + s["queued"] + s["in_flight"], s
    assert stats["child"]["emitted"] == stats["child"]["written"] == 101  # its own records only
    assert stats["parent"]["emitted"] == stats["parent"]["written"] == 301 + 101
    ids = [json.loads(x).get("tool_call_id") for x in path.read_text().splitlines()]
    calls = [i for i in ids if i]
    assert len(calls) == len(set(calls)) == 500  # nothing lost, nothing twice


class DownExporter(SpanExporter):
    """An exporter whose backend is unreachable: every export waits, then fails."""

    def __init__(self, wait: float) -> None:
        self.wait = wait
        self.calls = 0

    def export(self, spans):  # noqa: ANN001, ANN201
        self.calls += 1
        time.sleep(self.wait)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass


def test_exporter_down_with_the_batch_processor_leaves_the_loop_alone(tmp_path: Path) -> None:
    exporter = DownExporter(wait=0.3)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50, max_queue_size=256, max_export_batch_size=64))
    col = Collector(JsonlSink(tmp_path / "l.jsonl", flush_interval=0.05), tracer_provider=provider,
                    provider="openai", strict=False)
    worst = max(run_loop(col, 400, f"r{k}-", check_every=100) for k in range(3))
    col.close()
    assert worst < BLOCKED_S and exporter.calls >= 1
    st = col.stats
    assert balanced(st) and st.written == st.emitted == 3 * 401 and st.internal_errors == 0
    provider.shutdown()
