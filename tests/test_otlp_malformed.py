"""A field of the wrong JSON type in an OTLP export is quarantined once, in plain words.

Regression (issue 22): ``spans`` given as a 200,000-character string was read character by
character: 200,000 quarantine rows in 192 s, each reason a raw Python error. Every field the
reader expects to be a list or an object is checked here, through ``loopscope load``, next to a
good line that must still load.
"""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

runner = CliRunner()
T0 = 1_790_000_000_000_000_000
TRACE = "5b8efff798038103d269b633813fc60c"


def kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def good_spans(conv: str) -> dict[str, Any]:
    p = "aa" if conv == "ok" else "bb"
    agent = {"traceId": TRACE, "spanId": f"{p}00000000000001", "name": "invoke_agent", "kind": 1,
             "startTimeUnixNano": str(T0), "endTimeUnixNano": str(T0 + 100),
             "attributes": [kv("gen_ai.operation.name", "invoke_agent"), kv("gen_ai.conversation.id", conv)],
             "events": [], "status": {"code": 0}}
    tool = {"traceId": TRACE, "spanId": f"{p}00000000000002", "parentSpanId": f"{p}00000000000001",
            "name": "execute_tool search", "startTimeUnixNano": str(T0 + 10), "endTimeUnixNano": str(T0 + 20),
            "attributes": [kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", "search"),
                           kv("gen_ai.tool.call.id", "call-1"),
                           {"key": "x", "value": {"arrayValue": {"values": [{"stringValue": "a"}]}}},
                           {"key": "y", "value": {"kvlistValue": {"values": [kv("a", "b")]}}}],
            "events": [{"name": "e", "timeUnixNano": str(T0 + 15), "attributes": []}], "status": {"code": 0}}
    return {"resourceSpans": [{"resource": {"attributes": [kv("service.name", "svc")]},
                               "scopeSpans": [{"scope": {"name": "s"}, "spans": [agent, tool]}]}]}


def good_logs(conv: str = "") -> dict[str, Any]:
    return {"resourceLogs": [{"resource": {"attributes": []}, "scopeLogs": [{"scope": {"name": "s"}, "logRecords": [
        {"timeUnixNano": str(T0), "eventName": "x", "attributes": [], "body": {"stringValue": "b"}}]}]}]}


BAD = "z" * 200_000  # the hostile value: a long string where a list or an object belongs

# (name, document maker, path to the field to break)
FIELDS = [
    ("resourceSpans", good_spans, ["resourceSpans"]),
    ("resourceSpans[0]", good_spans, ["resourceSpans", 0]),
    ("resource", good_spans, ["resourceSpans", 0, "resource"]),
    ("resource.attributes", good_spans, ["resourceSpans", 0, "resource", "attributes"]),
    ("scopeSpans", good_spans, ["resourceSpans", 0, "scopeSpans"]),
    ("scopeSpans[0]", good_spans, ["resourceSpans", 0, "scopeSpans", 0]),
    ("scope", good_spans, ["resourceSpans", 0, "scopeSpans", 0, "scope"]),
    ("spans", good_spans, ["resourceSpans", 0, "scopeSpans", 0, "spans"]),
    ("spans[1]", good_spans, ["resourceSpans", 0, "scopeSpans", 0, "spans", 1]),
    ("span attributes", good_spans, ["resourceSpans", 0, "scopeSpans", 0, "spans", 1, "attributes"]),
    ("span events", good_spans, ["resourceSpans", 0, "scopeSpans", 0, "spans", 1, "events"]),
    ("span status", good_spans, ["resourceSpans", 0, "scopeSpans", 0, "spans", 1, "status"]),
    ("event attributes", good_spans, ["resourceSpans", 0, "scopeSpans", 0, "spans", 1, "events", 0, "attributes"]),
    ("arrayValue", good_spans, ["resourceSpans", 0, "scopeSpans", 0, "spans", 1, "attributes", 3, "value", "arrayValue"]),
    ("arrayValue.values", good_spans,
     ["resourceSpans", 0, "scopeSpans", 0, "spans", 1, "attributes", 3, "value", "arrayValue", "values"]),
    ("kvlistValue.values", good_spans,
     ["resourceSpans", 0, "scopeSpans", 0, "spans", 1, "attributes", 4, "value", "kvlistValue", "values"]),
    ("resourceLogs", good_logs, ["resourceLogs"]),
    ("scopeLogs", good_logs, ["resourceLogs", 0, "scopeLogs"]),
    ("logRecords", good_logs, ["resourceLogs", 0, "scopeLogs", 0, "logRecords"]),
    ("log attributes", good_logs, ["resourceLogs", 0, "scopeLogs", 0, "logRecords", 0, "attributes"]),
]


def broken(make: Any, path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(make("bad"))
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return doc


def load(tmp_path: Path, *lines: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, str]]]:
    src = tmp_path / "spans.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    db = tmp_path / "t.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--format", "json", "--input-format", "otlp", str(src)])
    assert res.exit_code == 0, res.output
    q = runner.invoke(app, ["quarantine", "--db", str(db), "--format", "csv"])
    assert q.exit_code == 0, q.output
    return json.loads(res.stdout), list(csv.DictReader(io.StringIO(q.stdout)))


@pytest.mark.parametrize(("name", "make", "path"), FIELDS, ids=[f[0] for f in FIELDS])
@pytest.mark.parametrize("value", [BAD, 7, True], ids=["long-string", "number", "bool"])
def test_a_field_of_the_wrong_type_is_quarantined_once_in_plain_words(
    tmp_path: Path, name: str, make: Any, path: list[Any], value: Any
) -> None:
    out, rows = load(tmp_path, good_spans("ok"), broken(make, path, value))
    assert out["loaded"] >= 2  # the good line's tool call and loop exit
    assert len(rows) == 1, [r["reason"] for r in rows[:3]]
    reason = rows[0]["reason"]
    assert rows[0]["line_no"] == "2"
    assert ("not a list" in reason or "not an object" in reason), reason
    assert "object has no attribute" not in reason and "'str'" not in reason and "int()" not in reason
    assert len(reason) < 400


def test_the_200000_character_spans_string_is_one_row(tmp_path: Path) -> None:
    out, rows = load(tmp_path, good_spans("ok"), broken(good_spans, ["resourceSpans", 0, "scopeSpans", 0, "spans"], BAD))
    assert out["loaded"] == 2 and len(rows) == 1
    assert rows[0]["reason"].endswith("resourceSpans[0].scopeSpans[0].spans is a string, not a list")


def test_a_bad_whole_document_is_one_row_not_a_traceback(tmp_path: Path) -> None:
    src = tmp_path / "doc.json"
    doc = broken(good_spans, ["resourceSpans", 0, "scopeSpans", 0, "spans"], BAD)
    src.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    db = tmp_path / "t.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--input-format", "otlp", str(src)])
    assert res.exit_code == 1 and "yielded 0 records" in res.output, res.output  # a user error, not a crash
    q = runner.invoke(app, ["quarantine", "--db", str(db), "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(q.stdout)))
    assert len(rows) == 1 and "is a string, not a list" in rows[0]["reason"]


@pytest.mark.parametrize("fmt", ["otlp", "messages"])
def test_a_lone_surrogate_escape_is_replaced_not_an_internal_error(tmp_path: Path, fmt: str) -> None:
    """Regression (found by tests/test_fuzz_readers.py): ``"\\ud800"`` in a span name or a tool's
    error text stopped the load with "internal error: UnicodeEncodeError" (exit 2)."""
    if fmt == "otlp":
        doc = good_spans("ok")
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"][1] = kv("gen_ai.tool.name", "se\ud800arch")
    else:
        doc = {"conversation_id": "c", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "se\udc00arch", "input": {}}],
             "stop_reason": "tool_use"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                          "content": "Error: bad \ud800 value"}]},
            {"role": "assistant", "content": "ok", "stop_reason": "end_turn"}]}
    src = tmp_path / "s.jsonl"
    src.write_text(json.dumps(doc) + "\n", encoding="utf-8")  # ensure_ascii: the escape stays "\ud800"
    assert "\\ud800" in src.read_text() or "\\udc00" in src.read_text()
    db = tmp_path / "t.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--format", "json", "--input-format", fmt, str(src)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tool_calls"] == 1
    out = runner.invoke(app, ["unrecovered", "--db", str(db), "--format", "json"]) if fmt == "messages" else None
    assert out is None or out.exit_code == 0
