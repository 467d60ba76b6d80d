"""The collector never raises into the host loop (strict mode off); strict mode re-raises."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from loopscope.collectors import Collector, MemorySink, Sink
from loopscope.collectors.guard import logger


class ExplodingSink(Sink):
    def submit(self, record):  # noqa: ANN001
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise RuntimeError("flush broke")

    def close(self) -> None:
        raise RuntimeError("close broke")

    def stats(self) -> dict:
        raise RuntimeError("stats broke")


class ExplodingTracer:
    def start_span(self, *a, **k):  # noqa: ANN002, ANN003
        raise RuntimeError("exporter broke")


class ExplodingProvider:
    def get_tracer(self, *a, **k):  # noqa: ANN002, ANN003
        return ExplodingTracer()


def drive(col: Collector) -> list[str]:
    """A host loop using every public entry point; returns what the host saw."""
    seen = []
    with col.prompt(conversation_id="c", agent="a", max_tool_calls=5, tags={"k": "v"}) as loop:
        loop.model_response(stop_reason="tool_use", input_tokens=1, output_tokens=1)
        with loop.tool_call("t1", "x", {"a": 1}) as call:
            call.attempt_failed("503")
        with loop.tool_call("t2", "x", {"a": 1}, catch=True) as call:
            raise ValueError("bad")
        seen.append(f"t2 is_error={call.is_error}")
        with loop.tool_call("t3", "x", {}) as call:
            call.fail("nope")
            call.replayed()
        loop.record_tool_call(tool_call_id="t4", tool_name="x", outcome="bogus")
        seen.append(f"budget={loop.over_budget()}")
        loop.model_response(stop_reason="end_turn")
    col.flush()
    seen.append(str(col.stats))
    col.close()
    return seen


def test_failing_sink_never_raises_and_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    col = Collector(ExplodingSink(), strict=False)
    with caplog.at_level(logging.ERROR, logger="loopscope"):
        seen = drive(col)
    assert seen[0] == "t2 is_error=True"
    assert col.stats.sink_errors == 5 and col.stats.emitted == 0
    assert col.stats.internal_errors == 7  # 5 records + flush + close
    sink_logs = [r for r in caplog.records if "internal error in sink" in r.getMessage()]
    assert len(sink_logs) == 1  # logged once, however many times it fails


def test_host_exceptions_still_propagate_unchanged_with_a_failing_sink() -> None:
    col = Collector(ExplodingSink(), strict=False)
    err = KeyError("host bug")
    with pytest.raises(KeyError) as info, col.prompt(conversation_id="c") as loop:
        with loop.tool_call("t", "x", {}):
            raise err
    assert info.value is err


def test_broken_tracer_never_raises_records_still_written() -> None:
    sink = MemorySink()
    col = Collector(sink, tracer_provider=ExplodingProvider(), strict=False)
    drive(col)
    assert [r["kind"] for r in sink.records] == ["tool_call"] * 4 + ["loop_exit"]
    assert all(r["trace_id"] is None for r in sink.records)
    assert col.stats.internal_errors == 1  # the prompt span


def test_unprintable_exception_in_a_tool_does_not_escape_with_catch() -> None:
    class Weird(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no str for you")

    col = Collector(MemorySink(), strict=False)
    with col.prompt(conversation_id="c") as loop, loop.tool_call("t", "x", {}, catch=True):
        raise Weird
    assert col.stats.internal_errors == 1


def test_strict_mode_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under pytest (PYTEST_CURRENT_TEST set) the default re-raises, so tests see collector bugs.
    with pytest.raises(OSError):
        Collector(ExplodingSink()).prompt(conversation_id="c").close()
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    monkeypatch.delenv("LOOPSCOPE_STRICT", raising=False)
    col = Collector(ExplodingSink())
    col.prompt(conversation_id="c").close()
    assert col.stats.internal_errors == 1
    monkeypatch.setenv("LOOPSCOPE_STRICT", "0")
    col.prompt(conversation_id="c").close()
    monkeypatch.setenv("LOOPSCOPE_STRICT", "1")
    with pytest.raises(OSError):
        col.prompt(conversation_id="c").close()


def test_logger_is_quiet_by_default() -> None:
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)


HOST = r"""
import json, sys
from loopscope.collectors import Collector, Sink
class Broken(Sink):
    def submit(self, record):
        raise OSError(28, "No space left on device")
col = Collector(Broken())
answers = []
for p in range(3):
    with col.prompt(conversation_id="c", prompt_id=str(p)) as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("t", "x", {}, catch=True) as call:
            raise ValueError("tool failed")
        answers.append(call.error_text)
        loop.model_response(stop_reason="end_turn")
print(json.dumps({"answers": answers, "internal_errors": col.stats.internal_errors}))
"""


def test_real_host_process_without_strict_mode_keeps_running(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "LOOPSCOPE_STRICT")}
    out = subprocess.run([sys.executable, "-c", HOST], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"answers": ["tool failed"] * 3, "internal_errors": 6}
    # The NullHandler keeps the host quiet: no traceback on its stderr.
    assert "Traceback" not in out.stderr


def test_bad_prompt_arguments_still_give_complete_records() -> None:
    def broken_id() -> str:
        raise RuntimeError("id service down")

    sink = MemorySink()
    col = Collector(sink, strict=False, new_id=broken_id)
    with col.prompt(conversation_id="c", max_tool_calls=-1, tags={"k": "v"}) as loop:
        with loop.tool_call("t", "x", {"a": 1}):
            pass
    tool, exit_ = sink.records
    assert tool["prompt_id"].startswith("p-") and tool["prompt_id"] == exit_["prompt_id"]
    assert tool["input_shape"] == {"a": "integer"} and tool["tags"] == {"k": "v"}
    assert exit_["max_tool_calls"] is None
    assert col.stats.internal_errors == 2


def test_failing_clocks_and_bad_arguments_never_raise() -> None:
    calls = {"n": 0}

    def flaky_perf() -> float:
        calls["n"] += 1
        if calls["n"] > 1:  # fine at setup, broken afterwards
            raise OSError("clock gone")
        return 0.0

    sink = MemorySink()
    col = Collector(sink, strict=False, perf_clock=flaky_perf)
    with col.prompt(conversation_id="c", prompt_id="p7", agent="a", max_tool_calls=3) as loop:
        assert loop.over_budget("two") is False  # type: ignore[arg-type]
        with loop.tool_call("t", "x", {}):
            pass
    assert [r["kind"] for r in sink.records] == ["tool_call", "loop_exit"]
    assert sink.records[0]["latency_ms"] == 0.0
    assert {(r["prompt_id"], r["agent"]) for r in sink.records} == {("p7", "a")}
    assert col.stats.internal_errors == 5  # prompt start, budget, call start, call end, exit
