"""``loopscope.tool_call`` / ``loopscope.agent_exit`` log records through the OpenTelemetry Logs API,
each emitted in its span's context, checked with the SDK's in-memory log exporter."""

from __future__ import annotations

import json

import pytest
from loopscope.collectors import Collector, MemorySink
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor


@pytest.fixture
def logs():
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _records(exporter: InMemoryLogRecordExporter) -> list:
    return [r.log_record for r in exporter.get_finished_logs()]


def _run(col: Collector) -> None:
    with col.prompt(conversation_id="conv-1", prompt_id="p1", agent="support", max_tool_calls=9) as loop:
        loop.model_response(stop_reason="tool_use", input_tokens=100, output_tokens=10)
        with loop.tool_call("t-ok", "search", {"q": "secret-value-77", "n": 2}):
            pass
        with loop.tool_call("t-retry", "search", {"q": "x"}) as call:
            call.attempt_failed("503")
        with loop.tool_call("t-bad", "book", {"date": "tomorrow"}, catch=True):
            raise ValueError("Invalid date; api_key=sk-ant-api03-AAAA1111BBBB2222CCCC")
        loop.model_response(stop_reason="end_turn", input_tokens=50, output_tokens=5)


def test_log_records_in_span_context_with_bodies(logs, span_recorder) -> None:  # noqa: ANN001
    log_provider, log_exporter = logs
    tracer_provider, span_exporter = span_recorder
    sink = MemorySink()
    col = Collector(sink, tracer_provider=tracer_provider, logger_provider=log_provider, provider="anthropic")
    _run(col)
    recs = _records(log_exporter)
    assert [r.event_name for r in recs] == ["loopscope.tool_call"] * 3 + ["loopscope.agent_exit"]
    spans = {s.attributes.get("gen_ai.tool.call.id", s.name): s for s in span_exporter.get_finished_spans()}
    # Each log record carries its span's ids, so backends link them.
    for rec, key in zip(recs, ["t-ok", "t-retry", "t-bad", "invoke_agent support"]):
        assert (rec.trace_id, rec.span_id) == (spans[key].context.trace_id, spans[key].context.span_id)
    assert [r.severity_text for r in recs] == ["INFO", "WARN", "ERROR", "INFO"]
    ok, retried, bad, exit_ = recs
    assert dict(ok.body) == {
        "conversation_id": "conv-1",
        "prompt_id": "p1",
        "agent": "support",
        "tool_call_id": "t-ok",
        "tool_name": "search",
        "step": 0,
        "input_shape": {"n": "integer", "q": "string"},
        "outcome": "ok",
        "is_error": False,
        "attempts": 1,
        "latency_ms": sink.records[0]["latency_ms"],
        "replayed": False,
    }
    assert dict(ok.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "t-ok",
        "gen_ai.tool.type": "function",
        "gen_ai.conversation.id": "conv-1",
    }
    assert (retried.body["outcome"], retried.body["attempts"]) == ("retried", 2)
    assert bad.body["error_message"] == "Invalid date; api_key=[REDACTED]"
    assert bad.attributes["error.type"] == "ValueError"
    assert exit_.body["exit_reason"] == "end_turn" and exit_.body["tool_errors"] == 1
    assert exit_.body["input_tokens"] == 150 and "error_message" not in exit_.body
    assert exit_.attributes["gen_ai.provider.name"] == "anthropic"
    # The log record's timestamp is the record's ts.
    assert exit_.timestamp == round(_epoch(sink.records[-1]["ts"]) * 1e6) * 1000
    # No argument value anywhere.
    assert "secret-value-77" not in json.dumps([dict(r.body) for r in recs], default=str)
    tracer_provider.shutdown()


def _epoch(ts: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def test_logs_without_tracing_have_no_span_ids(logs) -> None:  # noqa: ANN001
    log_provider, log_exporter = logs
    col = Collector(MemorySink(), logger_provider=log_provider)
    _run(col)
    recs = _records(log_exporter)
    assert len(recs) == 4 and all(not r.trace_id for r in recs)
    with col.prompt(conversation_id="c2") as loop:
        loop.exit("budget_exceeded")
    with pytest.raises(KeyError), col.prompt(conversation_id="c3") as loop:
        raise KeyError("boom")
    budget, err = _records(log_exporter)[-2:]
    assert (budget.severity_text, budget.body["exit_reason"]) == ("WARN", "budget_exceeded")
    assert (err.severity_text, err.attributes["error.type"]) == ("ERROR", "KeyError")


def test_no_logs_sdk_means_the_plain_path(monkeypatch) -> None:  # noqa: ANN001
    # With neither SDK, tool calls take the inlined path: no span, no log record built.
    from loopscope.collectors import prompt as prompt_module

    called = []
    monkeypatch.setattr(prompt_module.PromptLoop, "_write_tool", lambda *a, **k: called.append(a))
    col = Collector(MemorySink())
    with col.prompt(conversation_id="c") as loop:
        assert loop._plain
        with loop.tool_call("t", "x", {}):
            pass
    assert called == []


def test_a_broken_logger_never_raises_and_records_are_still_written() -> None:
    class BrokenLogger:
        def enabled(self, **kw) -> bool:  # noqa: ANN003
            return True

        def emit(self, *a, **kw) -> None:  # noqa: ANN002, ANN003
            raise RuntimeError("log exporter broke")

    class BrokenProvider:
        def get_logger(self, *a, **kw) -> BrokenLogger:  # noqa: ANN002, ANN003
            return BrokenLogger()

    sink = MemorySink()
    col = Collector(sink, logger_provider=BrokenProvider(), strict=False)
    _run(col)
    assert [r["kind"] for r in sink.records] == ["tool_call"] * 3 + ["loop_exit"]
    assert col.stats.internal_errors == 4
