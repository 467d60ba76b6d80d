"""OTLP JSON Lines reader: encoding rules, the alias map, and bad input.

Lines here are written by hand the way the OTLP/JSON encoding allows (upper-case
hex ids, int64 as strings, unknown fields), so each rule is pinned down.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.ingest import otlp
from loopscope.analyses.ingest.otlp import any_value, binary_reason, hex_id, sniff

TRACE = "5B8EFFF798038103D269B633813FC60C"
T0 = 1_790_000_000_000_000_000  # 2026-09-21T14:13:20Z in ns


def kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        v: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    elif isinstance(value, list):
        v = {"arrayValue": {"values": [{"stringValue": x} for x in value]}}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def span(span_id: str, parent: str, name: str, start_ms: int, end_ms: int, attrs: dict[str, Any],
         status: dict[str, Any] | None = None, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "traceId": TRACE, "spanId": span_id, "parentSpanId": parent, "name": name, "kind": 1,
        "startTimeUnixNano": str(T0 + start_ms * 1_000_000), "endTimeUnixNano": str(T0 + end_ms * 1_000_000),
        "attributes": [kv(k, v) for k, v in attrs.items()], "status": status or {},
        "events": events or [], "droppedLinksCount": 0, "someFutureField": {"x": 1},
    }


def traces_line(*spans: dict[str, Any], scope: str = "test.scope") -> str:
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [kv("service.name", "shop-agent")]},
        "scopeSpans": [{"scope": {"name": scope, "version": "1"}, "spans": list(spans)}],
        "schemaUrl": "",
    }]})


def read(path: Path) -> Any:
    return otlp.read(path, {})


def write(tmp: Path, *lines: str, name: str = "spans.jsonl") -> Path:
    p = tmp / name
    p.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return p


# A GenAI-convention loop: one agent span, a failing call, then two parallel calls (one step).
AGENT = span("AA00000000000001", "", "invoke_agent support", 0, 100, {
    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
    "gen_ai.conversation.id": "conv-7", "gen_ai.response.finish_reasons": ["stop"],
    "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30,
})
CHAT = [span(f"CC0000000000000{i}", "AA00000000000001", "chat m", 10 * i, 10 * i + 5,
             {"gen_ai.operation.name": "chat"}) for i in range(3)]
FAIL = span("BB00000000000001", "AA00000000000001", "execute_tool get_order", 6, 9, {
    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_order",
    "gen_ai.tool.call.id": "toolu_01", "gen_ai.tool.call.arguments": '{"id": 7}', "error.type": "TimeoutError",
}, status={"code": 2, "message": "orders backend timed out after 30s; retry"})
OK1 = span("BB00000000000002", "AA00000000000001", "execute_tool get_order", 16, 19, {
    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_order", "gen_ai.tool.call.id": "toolu_02",
})
OK2 = span("BB00000000000003", "AA00000000000001", "execute_tool weather", 16, 18, {
    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
})


class TestEncoding:
    """OTLP/JSON value and id rules."""

    def test_any_value_decodes_every_kind(self) -> None:
        assert any_value({"intValue": "9007199254740993"}) == 9007199254740993
        assert any_value({"intValue": 3}) == 3
        assert any_value({"doubleValue": 0.5}) == 0.5
        assert any_value({"boolValue": True}) is True
        assert any_value({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}]}}) == ["a", 1]
        assert any_value({"kvlistValue": {"values": [kv("k", "v"), kv("n", 2)]}}) == {"k": "v", "n": 2}
        assert any_value({}) is None
        assert any_value(None) is None

    def test_ids_are_lowercased_and_empty_means_none(self) -> None:
        assert hex_id("5B8EFFF798038103") == "5b8efff798038103"
        assert hex_id("") is None
        assert hex_id("0000000000000000") is None
        assert hex_id(None) is None
        assert hex_id("W47/95gDgQM=") == "5b8efff798038103"  # proto3 JSON base64 spelling

    def test_sniff_recognises_all_three_signals_and_binary(self) -> None:
        assert sniff(b'{"resourceSpans":[{"resource"')
        assert sniff(b'  {"resourceLogs": [')
        assert sniff(b'{"resourceMetrics":[')
        assert not sniff(b'{"v":1,"kind":"tool_call"')
        assert not sniff(b'[{"role":"user"}]')
        assert sniff(b"\x00\x00\x01\x2a\x0a\xa7\x02\x0a")  # Collector proto: length prefix + field 1
        assert binary_reason(b'{"resourceSpans":[]}') is None
        assert "protobuf" in (binary_reason(b"\x00\x00\x01\x2a\x0a\xa7\x02\x0a") or "")
        # Text whose first line has four characters (a newline where a proto's field tag would be) is text.
        for text in (b"oops\noops\n", b"\n\n\n\n\n{}", b"TODO\nmore notes\n"):
            assert binary_reason(text) is None and not sniff(text), text


class TestOtherSpellings:
    """Older and non-OTLP/JSON spellings of the same data still load."""

    def test_snake_case_proto3_json_with_base64_ids_and_enum_names(self, tmp_path: Path) -> None:
        def snake_kv(key: str, value: str) -> dict[str, Any]:
            return {"key": key, "value": {"string_value": value}}

        base = {"trace_id": "W47/95gDgQPSabYzgT/GDA==", "start_time_unix_nano": str(T0),
                "end_time_unix_nano": str(T0 + 5_000_000), "kind": "SPAN_KIND_INTERNAL"}
        agent = base | {"span_id": "qgAAAAAAAAE=", "name": "invoke_agent a",
                        "attributes": [snake_kv("gen_ai.operation.name", "invoke_agent")]}
        tool = base | {"span_id": "uwAAAAAAAAE=", "parent_span_id": "qgAAAAAAAAE=", "name": "execute_tool t",
                       "attributes": [snake_kv("gen_ai.operation.name", "execute_tool"), snake_kv("gen_ai.tool.name", "t")],
                       "status": {"code": "STATUS_CODE_ERROR", "message": "bad input"}}
        line = json.dumps({"resource_spans": [{"scope_spans": [{"scope": {"name": "s"}, "spans": [agent, tool]}]}]})
        assert sniff(line.encode())
        call, exit_ = read(write(tmp_path, line)).records
        assert (call["trace_id"], call["span_id"], call["prompt_id"], call["is_error"], call["error_message"]) == (
            TRACE.lower(), "bb00000000000001", "aa00000000000001", True, "bad input")
        assert exit_["exit_reason"] == "end_turn"

    def test_one_pretty_printed_document(self, tmp_path: Path) -> None:
        doc = json.loads(traces_line(AGENT, FAIL))
        out = read(write(tmp_path, json.dumps(doc, indent=2)))
        assert out.bad == [] and [r["kind"] for r in out.records] == ["tool_call", "loop_exit"]

    def test_console_exporter_output_is_refused_with_a_hint(self, tmp_path: Path) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

        path = tmp_path / "console.txt"
        with path.open("w") as fh:
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=fh)))
            with provider.get_tracer("t").start_as_current_span("execute_tool x"):
                pass
            provider.shutdown()
        with pytest.raises(LoopscopeError) as info:
            read(path)
        assert "console exporter" in info.value.message and str(path) in info.value.message

    def test_instrumentation_library_spans_of_old_exports(self, tmp_path: Path) -> None:
        line = json.dumps({"resourceSpans": [{"resource": {}, "instrumentationLibrarySpans": [
            {"instrumentationLibrary": {"name": "old.lib"}, "spans": [AGENT, FAIL]}]}]})
        out = read(write(tmp_path, line))
        assert [(r["kind"], r["instrumentation"]) for r in out.records] == [("tool_call", "old.lib"), ("loop_exit", "old.lib")]


class TestSpansToRecords:
    """A gen_ai.* loop becomes tool_call and loop_exit records, field by field."""

    def test_records_field_by_field(self, tmp_path: Path) -> None:
        path = write(tmp_path, traces_line(FAIL, OK1, OK2, *CHAT), traces_line(AGENT))
        out = read(path)
        assert out.bad == [] and out.violations == []
        fail, ok1, ok2, exit_ = out.records
        assert fail == {
            "v": 1, "kind": "tool_call", "ts": "2026-09-21T14:13:20.009000Z",
            "conversation_id": "conv-7", "prompt_id": "aa00000000000001", "agent": "support",
            "trace_id": TRACE.lower(), "span_id": "bb00000000000001",
            "tool_call_id": "toolu_01", "tool_name": "get_order", "step": 0,
            "input_shape": {"id": "integer"},
            # sha256 of the canonical JSON {"id":7}: the collector's fingerprint (see the next test)
            "args_fingerprint": "a3c90e3b7448d23d9eacebd0ebf15cae100e21f9b2c688f3f9d238edcd26d67f",
            "outcome": "permanent_fail", "is_error": True, "attempts": 1, "latency_ms": 3.0,
            "error_type": "TimeoutError", "error_message": "orders backend timed out after 30s; retry",
            "replayed": False, "source_format": "otlp", "instrumentation": "test.scope",
            "service_name": "shop-agent",
        }
        assert (ok1["tool_call_id"], ok1["step"], ok1["is_error"], ok1["error_message"]) == ("toolu_02", 1, False, None)
        # No call id anywhere: the span id stands in, and the record says so.
        assert (ok2["tool_call_id"], ok2["step"], ok2.get("tool_call_id_from_span")) == ("bb00000000000003", 1, True)
        assert exit_ == {
            "v": 1, "kind": "loop_exit", "ts": "2026-09-21T14:13:20.100000Z",
            "conversation_id": "conv-7", "prompt_id": "aa00000000000001", "agent": "support",
            "trace_id": TRACE.lower(), "span_id": "aa00000000000001",
            "finish_reason_raw": "stop", "exit_reason": "end_turn", "steps": 3, "tool_calls": 3,
            "tool_errors": 1, "max_tool_calls": None, "input_tokens": 120, "output_tokens": 30,
            "duration_ms": 100.0, "error_type": None, "error_message": None,
            "source_format": "otlp", "instrumentation": "test.scope", "service_name": "shop-agent",
        }

    def test_fingerprint_matches_the_collector(self, tmp_path: Path) -> None:
        from loopscope.collectors.shape import args_fingerprint

        out = read(write(tmp_path, traces_line(FAIL, AGENT)))
        assert out.records[0]["args_fingerprint"] == args_fingerprint({"id": 7})

    def test_without_llm_spans_overlapping_calls_share_a_step(self, tmp_path: Path) -> None:
        out = read(write(tmp_path, traces_line(AGENT, FAIL, OK1, OK2)))
        assert [(r["tool_name"], r["step"]) for r in out.records if r["kind"] == "tool_call"] == [
            ("get_order", 0), ("get_order", 1), ("weather", 1)]
        assert out.records[-1]["steps"] is None  # no model spans: the number of model calls is unknown

    def test_agent_span_never_exported_leaves_the_prompt_open(self, tmp_path: Path) -> None:
        out = read(write(tmp_path, traces_line(FAIL, OK1)))
        assert [r["kind"] for r in out.records] == ["tool_call", "tool_call"]
        assert {r["prompt_id"] for r in out.records} == {"aa00000000000001"}
        assert all(r["prompt_id_from"] == "missing_parent" for r in out.records)
        # No conversation id on the tool spans themselves here: the trace stands in, marked.
        assert out.records[0]["conversation_id"] == "otlp-trace:" + TRACE.lower()
        assert out.records[0]["conversation_id_from_trace"] is True

    def test_agent_error_status_is_an_error_exit(self, tmp_path: Path) -> None:
        failed = span("AA00000000000001", "", "invoke_agent support", 0, 100,
                      {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"},
                      events=[{"name": "exception", "timeUnixNano": str(T0), "attributes": [
                          kv("exception.type", "MaxTurnsExceeded"), kv("exception.message", "Max turns (10) exceeded")]}])
        exit_ = read(write(tmp_path, traces_line(failed))).records[0]
        assert (exit_["exit_reason"], exit_["error_type"], exit_["error_message"], exit_["tool_calls"]) == (
            "error", "MaxTurnsExceeded", "Max turns (10) exceeded", 0)

    def test_provider_finish_reasons_are_normalised_and_kept_raw(self, tmp_path: Path) -> None:
        for raw, expected in (("length", "max_tokens"), ("content_filter", "refusal"), ("tool_calls", "tool_calls")):
            agent = span("AA00000000000001", "", "invoke_agent", 0, 5, {
                "gen_ai.operation.name": "invoke_agent", "gen_ai.response.finish_reasons": [raw]})
            exit_ = read(write(tmp_path, traces_line(agent))).records[0]
            assert (exit_["exit_reason"], exit_["finish_reason_raw"], exit_["agent"]) == (expected, raw, "default")

    def test_loopscope_keys_win(self, tmp_path: Path) -> None:
        agent = span("AA00000000000001", "", "invoke_agent support", 0, 50, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
            "gen_ai.conversation.id": "c1", "loopscope.prompt.id": "p-1", "loopscope.agent.exit_reason": "budget_exceeded",
            "gen_ai.response.finish_reasons": ["tool_use"], "loopscope.agent.turns": 4,
            "loopscope.agent.max_tool_calls": 2, "loopscope.tag.mode": "corrective"})
        tool = span("BB00000000000001", "AA00000000000001", "execute_tool t", 1, 2, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.id": "x",
            "loopscope.tool.step": 3, "loopscope.tool.outcome": "retried", "loopscope.tool.attempts": 2,
            "loopscope.tool.input_shape": '{"q":"string"}', "loopscope.tool.replayed": True})
        call, exit_ = read(write(tmp_path, traces_line(agent, tool))).records
        assert (call["prompt_id"], call["step"], call["outcome"], call["attempts"], call["input_shape"],
                call["replayed"], call["tags"]) == ("p-1", 3, "retried", 2, {"q": "string"}, True, {"mode": "corrective"})
        assert (exit_["prompt_id"], exit_["exit_reason"], exit_["steps"], exit_["max_tool_calls"]) == (
            "p-1", "budget_exceeded", 4, 2)


    def test_the_result_the_model_saw_is_the_message_and_secrets_are_redacted(self, tmp_path: Path) -> None:
        tool = span("BB00000000000001", "AA00000000000001", "execute_tool t", 1, 2, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
            "gen_ai.tool.call.result": "login failed for token sk-abcdefghijklmnopqrstuvwxyz0123456789; try later"},
            status={"code": 2, "message": "HTTP 401"},
            events=[{"name": "exception", "attributes": [kv("exception.type", "AuthError"),
                                                         kv("exception.message", "401 from auth service")]}])
        call = read(write(tmp_path, traces_line(tool))).records[0]
        assert call["error_type"] == "AuthError"
        assert call["error_message"].startswith("login failed for token ") and "sk-abc" not in call["error_message"]
        assert call["error_detail"] == "401 from auth service"

    def test_a_span_exported_twice_counts_once(self, tmp_path: Path) -> None:
        out = read(write(tmp_path, traces_line(FAIL, AGENT), traces_line(FAIL, AGENT)))
        assert [r["kind"] for r in out.records] == ["tool_call", "loop_exit"]

    def test_odd_attribute_values_do_not_stop_the_load(self, tmp_path: Path) -> None:
        tool = span("BB00000000000001", "AA00000000000001", "execute_tool t", 1, 2, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "loopscope.tool.attempts": "many",
            "loopscope.tool.step": -1, "loopscope.tool.outcome": "exploded", "gen_ai.tool.call.arguments": "[1, 2"})
        agent = span("AA00000000000001", "", "invoke_agent", 0, 3, {
            "gen_ai.operation.name": "invoke_agent", "loopscope.agent.turns": "two", "gen_ai.usage.input_tokens": "n/a"})
        call, exit_ = read(write(tmp_path, traces_line(tool, agent))).records
        assert (call["attempts"], call["step"], call["outcome"], call["input_shape"], call["args_fingerprint"]) == (
            1, 0, "ok", {}, None)
        assert (exit_["steps"], exit_["input_tokens"]) == (None, None)


class TestLogs:
    """loopscope's own log events."""

    def test_tool_call_event_uses_observed_time_when_time_is_absent(self, tmp_path: Path) -> None:
        body = {"kvlistValue": {"values": [kv("tool_name", "search"), kv("tool_call_id", "t1"), kv("step", 0),
                                           kv("outcome", "permanent_fail"), kv("error_message", "no index")]}}
        line = json.dumps({"resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {"name": "loopscope"}, "logRecords": [
            {"observedTimeUnixNano": str(T0), "eventName": "loopscope.tool_call", "severityNumber": 17,
             "traceId": TRACE, "spanId": "BB00000000000001", "body": body,
             "attributes": [kv("gen_ai.conversation.id", "c9")]},
            {"timeUnixNano": str(T0), "eventName": "gen_ai.client.operation.exception", "body": {}},
        ]}]}]})
        (rec,) = read(write(tmp_path, line)).records
        assert rec["ts"] == "2026-09-21T14:13:20.000000Z"
        assert (rec["conversation_id"], rec["tool_name"], rec["is_error"], rec["step"]) == ("c9", "search", True, 0)
        assert rec["prompt_id"] == "otlp-trace:" + TRACE.lower()


class TestBadInput:
    """Bad lines are reported with their number; binary files are refused by name."""

    def test_bad_lines_are_reported_and_the_rest_loads(self, tmp_path: Path) -> None:
        broken = traces_line(span("", "", "x", 0, 1, {}))
        path = write(tmp_path, '{"resourceMetrics": []}', "not json", '{"hello": 1}', "[1, 2]",
                     traces_line(AGENT), broken, "")
        out = read(path)
        assert [(b.line_no, b.reason.split(":")[0]) for b in out.bad] == [
            (2, "not JSON"), (3, "not an OTLP line"), (4, "not an OTLP line"), (6, "spans[0] (scope 'test.scope')")]
        assert "no spanId" in out.bad[3].reason
        assert out.bad[1].raw == '{"hello": 1}'
        assert [r["kind"] for r in out.records] == ["loop_exit"]

    def test_proto_file_is_refused_naming_file_and_line(self, tmp_path: Path) -> None:
        path = tmp_path / "traces.proto"
        path.write_bytes(b"\x00\x00\x00\x2a\x0a\x28\x0a\x26" + bytes(range(40)))
        with pytest.raises(LoopscopeError) as info:
            read(path)
        assert str(path) in info.value.message and "line 1" in info.value.message
        assert "format: json" in (info.value.hint or "")

    def test_spans_without_tool_or_agent_spans_are_explained(self, tmp_path: Path) -> None:
        out = read(write(tmp_path, traces_line(*CHAT)))
        assert out.records == []
        assert [v["kind"] for v in out.violations] == ["no_agent_spans"]
        assert "3 spans" in out.violations[0]["detail"]

    def test_gzip_files_are_read(self, tmp_path: Path) -> None:
        path = tmp_path / "spans.jsonl.gz"
        path.write_bytes(gzip.compress((traces_line(AGENT, FAIL) + "\n").encode()))
        assert [r["kind"] for r in read(path).records] == ["tool_call", "loop_exit"]


FIXTURES = Path(__file__).parent / "fixtures" / "otlp"


def _summary(out: Any) -> dict[str, Any]:
    calls = [r for r in out.records if r["kind"] == "tool_call"]
    exits = [r for r in out.records if r["kind"] == "loop_exit"]
    return {
        "calls": [(c["tool_name"], c["tool_call_id"], c["step"], c["is_error"]) for c in calls],
        "exits": [(e["agent"], e["exit_reason"], e["tool_calls"], e["tool_errors"]) for e in exits],
        "conversations": sorted({r["conversation_id"] for r in out.records}),
    }


class TestOtherInstrumentations:
    """Spans of instrumentations other than the OpenAI Agents SDK's (tests/fixtures/otlp/README.md).

    The expected figures are counted by hand from the spans (listed in the README), not from the reader.
    """

    def test_vercel_ai_sdk_tool_call_span_is_a_tool_call(self) -> None:
        # ai 5.0.26: ai.generateText (the loop) > ai.generateText.doGenerate (the model) + ai.toolCall
        out = read(FIXTURES / "vercel_ai_sdk5_genai_interlingua.json")
        assert out.bad == [] and out.violations == []
        assert _summary(out) == {
            "calls": [("lookup_order", "call_9RtYbK2mXqLp", 0, False)],
            "exits": [("summarize_ticket", "tool-calls", 1, 0)],  # stopped with the tool's result unread
            "conversations": ["otlp-trace:c4a1f7e29b0d3856a1f2c3d4e5f60718"],
        }
        (call,) = [r for r in out.records if r["kind"] == "tool_call"]
        assert call["input_shape"] == {"order_id": "string"} and "result_fingerprint" in call
        (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
        assert (exit_["steps"], exit_["input_tokens"], exit_["output_tokens"]) == (1, 412, 27)

    def test_strands_tool_status_error_is_an_error(self) -> None:
        # Strands ends a failed tool's span with status OK and gen_ai.tool.status "error"
        out = read(FIXTURES / "strands_constructed.jsonl")
        assert _summary(out) == {
            "calls": [("lookup_order", "tooluse_k1", 0, True), ("lookup_order", "tooluse_k2", 1, False)],
            "exits": [("shop", "end_turn", 2, 1)],
            "conversations": ["sess-strands-1"],
        }

    def test_google_adk_merged_span_is_not_a_call_and_call_llm_is_a_step(self) -> None:
        out = read(FIXTURES / "google_adk_constructed.jsonl")
        assert _summary(out) == {
            "calls": [("get_weather", "adk-1f2e-0001", 0, False), ("get_current_time", "adk-1f2e-0002", 0, False),
                      ("cancel_order", "2d00000000000001", 0, True)],
            "exits": [("weather_agent", "end_turn", 2, 0), ("weather_agent", "error", 1, 1)],
            "conversations": ["sess-adk-1"],
        }
        exits = [r for r in out.records if r["kind"] == "loop_exit"]
        assert [(e["steps"], e["input_tokens"], e["output_tokens"]) for e in exits] == [(2, 460, 50), (1, 300, 25)]
        failed = next(r for r in out.records if r["kind"] == "tool_call" and r["is_error"])
        assert (failed["error_type"], failed["error_message"]) == ("ConnectionError", "booking service unreachable")

    def test_pydantic_ai_running_tool_spans_without_operation_name(self) -> None:
        # pydantic-ai's earlier instrumentation: "agent run" > "running tools" > "running tool"
        # (gen_ai.tool.name + gen_ai.tool.call.id, no gen_ai.operation.name); a ModelRetry is Logfire level warn
        out = read(FIXTURES / "pydantic_ai_logfire_era_constructed.jsonl")
        assert _summary(out) == {
            "calls": [("lookup_order", "call_Aa1", 0, True), ("lookup_order", "call_Aa2", 1, False)],
            "exits": [("shop", "end_turn", 2, 1)],
            "conversations": ["otlp-trace:9a1000000000000000000000000000a1"],
        }
        failed = next(r for r in out.records if r["kind"] == "tool_call" and r["is_error"])
        assert failed["error_message"] == "order service timed out\n\nFix the errors and try again."

    def test_pydantic_ai_current_instrumentation(self) -> None:
        # captured from pydantic-ai 2.68 (instrumentation version 5): already read; kept so it stays so
        out = read(FIXTURES / "pydantic_ai_v5.jsonl")
        summary = _summary(out)
        assert [c[0::3] for c in summary["calls"]] == [
            ("lookup_order", True), ("get_weather", False), ("lookup_order", False), ("get_weather", False),
            ("cancel_order", True)]
        assert [e[1:] for e in summary["exits"]] == [("end_turn", 2, 1), ("end_turn", 2, 0), ("error", 1, 1)]
        assert len(summary["conversations"]) == 2  # P1 and P2 share gen_ai.conversation.id

    def test_semantic_kernel_chat_completions_spans_are_model_steps(self, tmp_path: Path) -> None:
        # Semantic Kernel names its model spans' operation "chat.completions" (its model_diagnostics
        # constants); two calls of one response, run one after the other, are one step, and the
        # prompt's tokens are the model spans' sum
        agent = span("a" * 16, "", "invoke_agent shop", 0, 100, {"gen_ai.operation.name": "invoke_agent"})
        model = [span(f"{i:016x}", "a" * 16, "chat.completions gpt-4o", s, s + 9,
                      {"gen_ai.operation.name": "chat.completions", "gen_ai.request.model": "gpt-4o",
                       "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10})
                 for i, s in ((1, 1), (2, 50))]
        tools = [span(f"{i:016x}", "a" * 16, f"execute_tool shop-{name}", s, s + 5,
                      {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"shop-{name}",
                       "gen_ai.tool.call.id": f"call_{i}"}) for i, name, s in ((11, "a", 20), (12, "b", 30))]
        out = read(write(tmp_path, traces_line(agent, *model, *tools)))
        assert [r["step"] for r in out.records if r["kind"] == "tool_call"] == [0, 0]
        (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
        assert (exit_["steps"], exit_["input_tokens"], exit_["output_tokens"]) == (2, 200, 20)

    def test_placeholder_tool_call_id_is_not_an_id(self, tmp_path: Path) -> None:
        # Google ADK writes gen_ai.tool.call.id "<not specified>" when a call has no response event:
        # taken as an id, every such call of a conversation would be one call re-executed (a replay)
        tools = [span(f"{i:016x}", "a" * 16, "execute_tool t", 10 * i, 10 * i + 5,
                      {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                       "gen_ai.tool.call.id": "<not specified>"}) for i in (1, 2)]
        agent = span("a" * 16, "", "invoke_agent a", 0, 100, {"gen_ai.operation.name": "invoke_agent"})
        out = read(write(tmp_path, traces_line(agent, *tools)))
        ids = [r["tool_call_id"] for r in out.records if r["kind"] == "tool_call"]
        assert ids == [f"{i:016x}" for i in (1, 2)]

    def test_a_span_with_another_operation_is_not_a_tool_call(self, tmp_path: Path) -> None:
        # the no-operation rule is for spans with no gen_ai.operation.name at all
        chat = span("c" * 16, "a" * 16, "chat m", 1, 5, {"gen_ai.operation.name": "chat", "gen_ai.tool.name": "t",
                                                          "gen_ai.tool.call.id": "call_1"})
        agent = span("a" * 16, "", "invoke_agent a", 0, 100, {"gen_ai.operation.name": "invoke_agent"})
        out = read(write(tmp_path, traces_line(agent, chat)))
        assert [r["kind"] for r in out.records] == ["loop_exit"]


class TestCapturedThirdParty:
    """Spans captured from real instrumentations of the OpenAI Agents SDK (tests/fixtures/otlp/README.md)."""

    @pytest.mark.parametrize("name", ["openinference", "openllmetry", "genai"])
    def test_tool_calls_error_and_recovery(self, name: str) -> None:
        out = read(Path(__file__).parent / "fixtures" / "otlp" / f"openai_agents_{name}.jsonl")
        assert out.bad == []
        calls = [r for r in out.records if r["kind"] == "tool_call"]
        assert [(c["tool_name"], c["step"], c["is_error"], c["outcome"]) for c in calls] == [
            ("lookup_order", 0, True, "permanent_fail"), ("lookup_order", 1, False, "ok"),
            ("get_weather", 1, False, "ok"), ("get_weather", 0, False, "ok")]
        assert [(r["exit_reason"], r["tool_calls"], r["tool_errors"]) for r in out.records if r["kind"] == "loop_exit"] == [
            ("end_turn", 3, 1), ("end_turn", 1, 0)]
        seen = "An error occurred while running the tool. Please try again."  # the tool result the model got
        assert (calls[0]["error_message"] == seen) is (name != "genai")
        expected_ids = ["call_1", "call_2", "call_3", "call_4"] if name != "genai" else [c["span_id"] for c in calls]
        assert [c["tool_call_id"] for c in calls] == expected_ids
