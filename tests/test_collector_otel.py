"""OpenTelemetry spans from the collector, checked with the SDK's in-memory exporter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from loopscope.collectors import Collector, MemorySink
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind, StatusCode


@pytest.fixture
def otel(span_recorder):
    provider, exporter = span_recorder
    sink = MemorySink()
    return Collector(sink, tracer_provider=provider), sink, exporter, provider


def run_prompt(col: Collector) -> None:
    with col.prompt(
        conversation_id="conv-9",
        prompt_id="p1",
        agent="support",
        max_tool_calls=10,
        provider="anthropic",
        model="claude-x",
        tags={"mode": "corrective"},
    ) as loop:
        loop.model_response(stop_reason="tool_use", input_tokens=100, output_tokens=10)
        with loop.tool_call("toolu_ok", "search", {"q": "x", "n": 2}):
            pass
        with loop.tool_call("toolu_retry", "search", {"q": "x"}) as call:
            call.attempt_failed("503")
        with loop.tool_call("toolu_bad", "book", {"date": "tomorrow"}) as call:
            call.fail("Invalid date format. Use YYYY-MM-DD. token=abc123", "invalid_date_format")
        loop.model_response(stop_reason="end_turn", input_tokens=50, output_tokens=5)


def test_span_tree_names_kinds_attributes_status(otel) -> None:  # noqa: ANN001
    col, sink, exporter, _ = otel
    run_prompt(col)
    spans = exporter.get_finished_spans()
    by_name = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    (agent,) = by_name["invoke_agent support"]
    ok, retried = by_name["execute_tool search"]
    (bad,) = by_name["execute_tool book"]
    assert {s.kind for s in spans} == {SpanKind.INTERNAL}
    for tool in (ok, retried, bad):
        assert tool.parent.span_id == agent.context.span_id
        assert tool.context.trace_id == agent.context.trace_id

    assert dict(agent.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support",
        "gen_ai.conversation.id": "conv-9",
        "loopscope.prompt.id": "p1",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-x",
        "loopscope.agent.max_tool_calls": 10,
        "loopscope.tag.mode": "corrective",
        "loopscope.agent.exit_reason": "end_turn",
        "loopscope.agent.turns": 2,
        "loopscope.agent.tool_calls": 3,
        "loopscope.agent.tool_failures": 1,
        "gen_ai.response.finish_reasons": ("end_turn",),
        "gen_ai.usage.input_tokens": 150,
        "gen_ai.usage.output_tokens": 15,
    }
    assert agent.status.status_code == StatusCode.UNSET

    assert dict(ok.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "toolu_ok",
        "gen_ai.tool.type": "function",
        "gen_ai.conversation.id": "conv-9",
        "loopscope.prompt.id": "p1",
        "loopscope.tool.step": 0,
        "loopscope.tool.input_shape": '{"n":"integer","q":"string"}',
        "loopscope.tool.outcome": "ok",
        "loopscope.tool.attempts": 1,
    }
    assert ok.status.status_code == StatusCode.UNSET
    # Retried to success: the model never saw an error, so the status stays UNSET.
    assert retried.attributes["loopscope.tool.outcome"] == "retried"
    assert retried.attributes["loopscope.tool.attempts"] == 2
    assert retried.status.status_code == StatusCode.UNSET and "error.type" not in retried.attributes
    assert bad.status.status_code == StatusCode.ERROR
    assert bad.status.description == "Invalid date format. Use YYYY-MM-DD. token=[REDACTED]"
    assert bad.attributes["error.type"] == "invalid_date_format"
    assert bad.attributes["loopscope.tool.outcome"] == "permanent_fail"
    # Values never reach span attributes either.
    assert "tomorrow" not in json.dumps({k: str(v) for s in spans for k, v in s.attributes.items()})

    # Records carry their span's ids as 32/16 lowercase hex.
    recs = {r.get("tool_call_id", "exit"): r for r in sink.records}
    for rec, span in ((recs["toolu_ok"], ok), (recs["toolu_bad"], bad), (recs["exit"], agent)):
        assert rec["trace_id"] == format(span.context.trace_id, "032x")
        assert rec["span_id"] == format(span.context.span_id, "016x")
        assert len(rec["trace_id"]) == 32 and len(rec["span_id"]) == 16 and rec["trace_id"].islower()


def test_error_exit_sets_error_status_and_spans_nest_under_current(otel) -> None:  # noqa: ANN001
    col, sink, exporter, provider = otel
    host_tracer = provider.get_tracer("host")
    with pytest.raises(TimeoutError):
        with host_tracer.start_as_current_span("request") as request:
            with col.prompt(conversation_id="c") as loop:
                loop.model_response(stop_reason="tool_use")
                with loop.tool_call("t", "fetch", {}):
                    with host_tracer.start_as_current_span("http GET"):
                        pass
                raise TimeoutError("model call timed out")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    agent = spans["invoke_agent"]  # no agent name given
    assert agent.parent.span_id == request.get_span_context().span_id
    assert spans["http GET"].parent.span_id == spans["execute_tool fetch"].context.span_id
    assert agent.status.status_code == StatusCode.ERROR
    assert agent.status.description == "model call timed out"
    assert agent.attributes["error.type"] == "TimeoutError"
    assert agent.attributes["loopscope.agent.exit_reason"] == "error"
    assert "gen_ai.provider.name" not in agent.attributes
    assert "gen_ai.agent.name" not in agent.attributes  # not invented; the record says "default"
    assert [r["agent"] for r in sink.records] == ["default", "default"]


def test_tool_exception_is_error_status_with_class_name(otel) -> None:  # noqa: ANN001
    col, _, exporter, _ = otel
    with col.prompt(conversation_id="c") as loop, loop.tool_call("t", "x", {}, catch=True):
        raise ConnectionError("refused")
    tool = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool x")
    assert tool.status.status_code == StatusCode.ERROR and tool.attributes["error.type"] == "ConnectionError"


def test_record_tool_call_span_has_the_given_latency(otel) -> None:  # noqa: ANN001
    col, _, exporter, _ = otel
    loop = col.prompt(conversation_id="c")
    loop.record_tool_call(tool_call_id="t", tool_name="x", latency_ms=250.0, replayed=True)
    loop.close()
    tool = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool x")
    assert abs((tool.end_time - tool.start_time) / 1e6 - 250.0) < 1.0
    assert tool.attributes["loopscope.tool.replayed"] is True


def test_unsampled_prompt_makes_no_spans_and_null_ids() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = MemorySink()
    col = Collector(sink, tracer_provider=provider)
    run_prompt(col)
    assert exporter.get_finished_spans() == ()
    assert all(r["trace_id"] is None and r["span_id"] is None for r in sink.records)


def test_noop_provider_gives_null_ids() -> None:
    sink = MemorySink()
    run_prompt(Collector(sink, tracer_provider=trace.NoOpTracerProvider()))
    assert len(sink.records) == 4 and all(r["trace_id"] is None for r in sink.records)


GLOBAL = r"""
import json
from loopscope.collectors import Collector, MemorySink
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
sink = MemorySink()
col = Collector(sink)                      # created before any SDK: global proxy provider
loop = col.prompt(conversation_id="c"); loop.close()
exporter = InMemorySpanExporter()
provider = TracerProvider(); provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)        # the app installs the SDK later
loop = col.prompt(conversation_id="c"); loop.close()
print(json.dumps([sink.records[0]["trace_id"], sink.records[1]["trace_id"] is not None,
                  [s.name for s in exporter.get_finished_spans()]]))
"""


def test_global_provider_is_used_when_installed_later() -> None:
    out = subprocess.run([sys.executable, "-c", GLOBAL], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == [None, True, ["invoke_agent"]]


def test_provider_name_default_override_and_missing(caplog: pytest.LogCaptureFixture, span_recorder) -> None:  # noqa: ANN001
    import logging

    provider, exporter = span_recorder
    col = Collector(MemorySink(), tracer_provider=provider, provider="openai")
    col.prompt(conversation_id="c", agent="a").close()
    col.prompt(conversation_id="c", agent="b", provider="anthropic").close()
    bare = Collector(MemorySink(), tracer_provider=provider)
    with caplog.at_level(logging.WARNING, logger="loopscope"):
        bare.prompt(conversation_id="c", agent="c").close()
        bare.prompt(conversation_id="c", agent="d").close()
    got = {s.name: s.attributes.get("gen_ai.provider.name") for s in exporter.get_finished_spans()}
    assert got == {
        "invoke_agent a": "openai",
        "invoke_agent b": "anthropic",
        "invoke_agent c": None,  # never invented: a warning says how to set it
        "invoke_agent d": None,
    }
    assert sum("gen_ai.provider.name" in r.getMessage() for r in caplog.records) == 1
    provider.shutdown()
