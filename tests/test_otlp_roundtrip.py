"""Round trip: the collector's own spans, exported as OTLP JSON Lines, read back as its records.

One scripted run of the real collector writes its v1 JSONL records and, through
the OpenTelemetry SDK and ``opentelemetry-exporter-otlp-json-file``, its spans.
The OTLP reader must give back the same facts the metrics are computed from,
and ``loopscope metrics`` must print the same numbers for both files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopscope.analyses.ingest import otlp
from loopscope.collectors import Collector, MemorySink

pytest.importorskip("opentelemetry.sdk.trace", reason="the SDK exports the collector's spans")
# The 0.66b1 package __init__ exports nothing: import from the submodule.
file_exporter = pytest.importorskip(
    "opentelemetry.exporter.otlp.json.file.trace_exporter",
    reason="opentelemetry-exporter-otlp-json-file (test extra) writes the OTLP file",
)

# Fields the four metrics, triage and lint read; ids and times differ by design.
# args_fingerprint is compared apart: the collector's spans carry no argument values or digest.
TOOL_FIELDS = ("conversation_id", "prompt_id", "agent", "tool_call_id", "tool_name", "step", "outcome",
               "is_error", "attempts", "error_type", "error_message", "replayed", "input_shape",
               "tags", "trace_id", "span_id")
EXIT_FIELDS = ("conversation_id", "prompt_id", "agent", "exit_reason", "steps", "tool_calls", "tool_errors",
               "max_tool_calls", "input_tokens", "output_tokens", "error_type", "error_message", "tags",
               "trace_id", "span_id")


ERROR_CLASSES_SQL = "SELECT conversation_id, tool_call_id, error_class FROM errors_v"


class Flaky(Exception):
    """A tool failure the model sees."""


def run_scripted_agent(collector: Collector) -> None:
    """Five prompts over three conversations covering every outcome and exit the metrics classify."""
    # c1/p1: an error at step 0, recovered at step 1 (two parallel calls), normal exit.
    with collector.prompt("c1", "p1", agent="support", provider="anthropic", tags={"arm": "b"}) as loop:
        loop.model_response("tool_use", input_tokens=100, output_tokens=10)
        with loop.tool_call("t1", "get_order", {"order_id": "A1"}, catch=True):
            raise Flaky("order service timed out after 30s; retry with the same order_id")
        loop.model_response("tool_use", input_tokens=120, output_tokens=12)
        with loop.tool_call("t2", "get_order", {"order_id": "A1"}):
            pass
        with loop.tool_call("t3", "weather", {"city": "Paris", "days": 2}):
            pass
        loop.model_response("end_turn", input_tokens=150, output_tokens=40)
    # c1/p2: a transient error retried inside the tool, then a replay of t2; normal exit.
    with collector.prompt("c1", "p2", agent="support") as loop:
        loop.model_response("tool_use")
        with loop.tool_call("t4", "search", {"q": "refund policy"}) as call:
            call.attempt_failed(TimeoutError("slow index"))
        with loop.tool_call("t2", "get_order", {"order_id": "A1"}) as call:
            call.replayed()
        loop.model_response("end_turn")
    # c2/p1: an error the model gives up on (normal exit, no later success).
    with collector.prompt("c2", "p1", agent="billing") as loop:
        loop.model_response("tool_use")
        with loop.tool_call("u1", "refund", {"amount": 5}) as call:
            call.fail("refund declined: amount exceeds the order total; ask for a smaller amount")
        loop.model_response("end_turn")
    # c2/p2: budget exceeded after a transient failure (aborted).
    with collector.prompt("c2", "p2", agent="billing", max_tool_calls=1) as loop:
        loop.model_response("tool_use")
        with loop.tool_call("u2", "refund", {"amount": 1}) as call:
            call.fail("gateway 503", error_type="HTTPError", transient=True)
        loop.exit("budget_exceeded")
    # c3/p1: an error exit with an exception, after one ok call recorded by a framework.
    with collector.prompt("c3", "p1") as loop:
        loop.model_response("max_tokens")
        loop.record_tool_call(tool_call_id="v1", tool_name="lookup", arguments={"k": [1]}, latency_ms=4.0)
        loop.exit("error", error=RuntimeError("model API returned 500"))
    # c3/p2: never closed: the process "died" (open prompt; its agent span is never exported).
    loop = collector.start_prompt("c3", "p2")
    loop.model_response("tool_use")
    with loop.tool_call("v2", "lookup", {"k": [2]}, catch=True):
        raise KeyError("k")


def _export(tmp_path: Path) -> tuple[list[dict[str, Any]], Path]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    spans_path = tmp_path / "spans.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(file_exporter.FileSpanExporter(str(spans_path))))
    sink = MemorySink()
    collector = Collector(sink, tracer_provider=provider, strict=True)
    run_scripted_agent(collector)
    collector.close()
    provider.shutdown()
    return list(sink.records), spans_path


def _by_key(records: list[dict[str, Any]], kind: str, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = [{f: r.get(f) for f in fields} for r in records if r["kind"] == kind]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def test_collector_spans_read_back_as_its_records(tmp_path: Path) -> None:
    jsonl_records, spans_path = _export(tmp_path)
    out = otlp.read(spans_path, {})
    assert out.bad == [] and out.violations == []
    assert _by_key(out.records, "tool_call", TOOL_FIELDS) == _by_key(jsonl_records, "tool_call", TOOL_FIELDS)
    assert _by_key(out.records, "loop_exit", EXIT_FIELDS) == _by_key(jsonl_records, "loop_exit", EXIT_FIELDS)
    fingerprints = {(r["conversation_id"], r["tool_call_id"]): r["args_fingerprint"] for r in jsonl_records
                    if r["kind"] == "tool_call"}
    assert all(r["args_fingerprint"] in (None, fingerprints[(r["conversation_id"], r["tool_call_id"])])
               for r in out.records if r["kind"] == "tool_call")
    # The open prompt's tool call is there; its exit is not (the agent span never ended).
    assert [r["prompt_id_from"] for r in out.records if r["prompt_id"] == "p2" and r["conversation_id"] == "c3"] == [
        "missing_parent"]


def test_metrics_are_the_same_from_both_files(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from loopscope.cli.app import app

    jsonl_records, spans_path = _export(tmp_path)
    records_path = tmp_path / "records.jsonl"
    records_path.write_text("".join(json.dumps(r) + "\n" for r in jsonl_records), encoding="utf-8")
    runner = CliRunner()
    results = {}
    for name, path in (("records", records_path), ("otlp", spans_path)):
        db = str(tmp_path / f"{name}.duckdb")
        loaded = runner.invoke(app, ["load", "--db", db, str(path)], catch_exceptions=False)  # format auto-detected
        assert loaded.exit_code == 0, loaded.output
        res = runner.invoke(app, ["metrics", "--db", db, "--format", "json"], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        results[name] = json.loads(res.stdout)
    assert results["otlp"] == results["records"]
    # Every error gets the same class (recovered / open / aborted / gave_up) from both files.
    from loopscope.analyses.store import connect

    classes = {}
    for name in ("records", "otlp"):
        con = connect(str(tmp_path / f"{name}.duckdb"))
        classes[name] = sorted(con.execute(ERROR_CLASSES_SQL).fetchall())
        con.close()
    assert classes["otlp"] == classes["records"] == [
        ("c1", "t1", "recovered"), ("c2", "u1", "gave_up"), ("c2", "u2", "aborted"), ("c3", "v2", "open")]
    # The scripted run's known answers: 6 prompts (1 open), 9 calls, 4 errors (1 recovered), 1 replay.
    assert {k: results["otlp"][k] for k in ("prompts", "open_prompts", "tool_calls", "errors", "recovered_errors",
                                            "replays")} == {
        "prompts": 6, "open_prompts": 1, "tool_calls": 9, "errors": 4, "recovered_errors": 1, "replays": 1}
