"""Hostile and malformed OTLP exports through ``loopscope load --input-format otlp``.

One file mixes good export lines with garbage, spans with missing times, attribute values of
every AnyValue kind (and malformed ones), very long strings, nesting deeper than Python's JSON
decoder goes, and markup / escape bytes in tool names and errors. Good spans load, every bad
part is quarantined with its line number, and untrusted text reaches the terminal inert.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.analyses.ingest.otlp import any_value
from loopscope.cli.app import app

runner = CliRunner()
T0 = 1_790_000_000_000_000_000
TRACE = "5b8efff798038103d269b633813fc60c"
HOSTILE = "[bold red]x[/] \x1b[2J<b>hi</b>"
TOOL = {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}


def kv(key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "value": value}


def span(span_id: str, name: str, start: int | None, end: int | None, attrs: list[dict[str, Any]],
         status: dict[str, Any] | None = None, parent: str = "aa00000000000001") -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": TRACE, "spanId": span_id, "parentSpanId": parent, "name": name,
                           "attributes": attrs, "status": status or {}}
    if start is not None:
        out["startTimeUnixNano"] = str(T0 + start)
    if end is not None:
        out["endTimeUnixNano"] = str(T0 + end)
    return out


def line(*spans: dict[str, Any]) -> str:
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "s"}, "spans": list(spans)}]}]})


EVERY_KIND = [
    kv("s", {"stringValue": "a"}), kv("b", {"boolValue": True}), kv("i", {"intValue": "9007199254740993"}),
    kv("i2", {"intValue": 12}), kv("d", {"doubleValue": 1.5}), kv("dn", {"doubleValue": "NaN"}),
    kv("arr", {"arrayValue": {"values": [{"stringValue": "x"}, {"intValue": "1"}]}}),
    kv("kv", {"kvlistValue": {"values": [kv("a", {"boolValue": False})]}}), kv("by", {"bytesValue": "AAEC"}),
    kv("empty", {}), kv("badint", {"intValue": "abc"}), kv("baddouble", {"doubleValue": [1]}),
    kv("long", {"stringValue": "y" * 1_000_000}),
]


def test_any_value_every_kind_and_malformed_numbers() -> None:
    decoded = {item["key"]: any_value(item["value"]) for item in EVERY_KIND}
    assert decoded["i"] == 9007199254740993 and decoded["i2"] == 12 and decoded["d"] == 1.5
    assert math.isnan(decoded["dn"])
    assert (decoded["s"], decoded["b"], decoded["arr"], decoded["kv"], decoded["by"], decoded["empty"]) == (
        "a", True, ["x", 1], {"a": False}, "AAEC", None)
    # malformed numbers are kept as written rather than costing the span
    assert (decoded["badint"], decoded["baddouble"]) == ("abc", [1])


def write_mixed(path: Path) -> None:
    agent = span("aa00000000000001", "invoke_agent", 0, 100,
                 [kv("gen_ai.operation.name", {"stringValue": "invoke_agent"}), kv("gen_ai.conversation.id", {"intValue": "77"})],
                 parent="")
    failing = span("bb00000000000001", "execute_tool t", 1, 2, [
        TOOL, kv("gen_ai.tool.name", {"stringValue": HOSTILE}),
        kv("gen_ai.tool.call.result", {"stringValue": "Error: " + HOSTILE + " " + "z" * 5000}), *EVERY_KIND,
    ], status={"code": 2})
    no_times = span("bb00000000000002", "execute_tool u", None, None, [TOOL])
    start_only = span("bb00000000000003", "execute_tool v", 5, None, [TOOL, kv("gen_ai.tool.call.id", {"intValue": "5"})])
    deep = line(span("bb00000000000004", "execute_tool w", 3, 4, [TOOL, kv("deep", {"stringValue": "DEEP"})]))
    deep = deep.replace('{"stringValue": "DEEP"}', '{"kvlistValue": {"values": [{"key": "k", "value": ' * 400
                        + '{"stringValue": "leaf"}' + "}]}}" * 400)
    lines = ["garbage", line(failing, no_times), "\x1b[31m{}", line(start_only, agent), '{"resourceSpans": 5}', deep]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_mixed_file_keeps_the_good_spans_and_quarantines_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    write_mixed(path)
    res = runner.invoke(app, ["load", "--db", "o.duckdb", "--format", "json", "--input-format", "otlp", str(path)])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"]) == (2, 1, 5)
    bad = json.loads(runner.invoke(app, ["quarantine", "--db", "o.duckdb", "--format", "json"]).stdout)
    assert sorted((q["line_no"], q["reason"].split(":")[0]) for q in bad) == [
        (1, "not JSON"), (2, "spans[1] (scope 's')"), (3, "not JSON"), (5, "malformed OTLP structure"),
        (6, "JSON nested too deeply to read")]
    assert any("no startTimeUnixNano" in q["reason"] for q in bad)

    calls = json.loads(runner.invoke(app, ["unrecovered", "--db", "o.duckdb", "--format", "json"]).stdout)
    assert calls == []  # the failing call was followed by a success in a later step: recovered
    res = runner.invoke(app, ["triage", "77", "--db", "o.duckdb", "--format", "json"])
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert '"5"' in text  # an integer tool call id is text
    triage = runner.invoke(app, ["triage", "77", "--db", "o.duckdb"])
    assert triage.exit_code == 0, triage.output
    assert "[bold red]x[/]" in triage.output and "\x1b" not in triage.output
    lint = runner.invoke(app, ["lint", "--db", "o.duckdb"])
    assert lint.exit_code == 0, lint.output
    assert "[bold red]x[/]" in lint.output and "\x1b" not in lint.output


def test_long_result_is_capped_and_a_start_time_alone_places_the_span(tmp_path: Path) -> None:
    from loopscope.analyses.ingest import otlp

    path = tmp_path / "mixed.jsonl"
    write_mixed(path)
    out = otlp.read(path, {})
    calls = {r["tool_call_id"]: r for r in out.records if r["kind"] == "tool_call"}
    assert set(calls) == {"bb00000000000001", "5"}
    failing = calls["bb00000000000001"]
    assert failing["tool_name"] == HOSTILE and failing["is_error"] is True
    assert len(failing["error_message"]) == 2000 and failing["error_message"].endswith("... [truncated]")
    assert (calls["5"]["latency_ms"], calls["5"]["ts"]) == (0.0, "2026-09-21T14:13:20.000000Z")


def test_odd_numbers_in_times_enums_and_token_counts(tmp_path: Path) -> None:
    from loopscope.analyses.ingest import otlp

    agent = span("aa00000000000001", "invoke_agent", 0, 100, [
        kv("gen_ai.operation.name", {"stringValue": "invoke_agent"}),
        kv("gen_ai.usage.input_tokens", {"doubleValue": "Infinity"}),  # no token count, not a crash
    ], status={"code": "bogus"}, parent="")  # an unreadable status code counts as unset
    odd_kind = dict(span("bb00000000000001", "execute_tool a", 1, 2, [TOOL]), kind="SPAN_KIND_BOGUS",
                    events=[{"name": "exception", "timeUnixNano": "soon", "attributes": []}])
    far_future = span("bb00000000000002", "execute_tool b", 3, 4, [TOOL])
    far_future["endTimeUnixNano"] = "99999999999999999999999"
    path = tmp_path / "odd.jsonl"
    path.write_text(line(agent, odd_kind, far_future) + "\n", encoding="utf-8")
    out = otlp.read(path, {})
    kinds = [(r["kind"], r.get("tool_call_id")) for r in out.records]
    assert kinds == [("tool_call", "bb00000000000001"), ("loop_exit", None)]
    call, exit_ = out.records
    assert call["is_error"] is True  # the exception event still counts, whatever its time
    assert (exit_["exit_reason"], exit_["input_tokens"]) == ("end_turn", None)
    assert [(b.line_no, "not nanoseconds between 1970 and 9999" in b.reason) for b in out.bad] == [(1, True)]
