"""OTLP files through the user's path: ``loopscope load`` / ``quarantine`` / ``metrics``.

Uses the spans captured from the OpenAI Agents SDK under OpenInference
(tests/fixtures/otlp/README.md): two prompts, four tool calls, one recovered error.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from loopscope.cli.app import app

FIXTURES = Path(__file__).parent / "fixtures" / "otlp"
CAPTURED = FIXTURES / "openai_agents_openinference.jsonl"
runner = CliRunner()


def _invoke(*args: str):  # noqa: ANN202 - click's Result
    return runner.invoke(app, list(args), catch_exceptions=False)


def _metrics(db: str) -> dict:
    res = _invoke("metrics", "--db", db, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_auto_detected_load_with_bad_lines_quarantined(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    n = len(CAPTURED.read_text(encoding="utf-8").splitlines())
    path.write_text(CAPTURED.read_text(encoding="utf-8") + 'not json\n{"hello": 1}\n{"resourceMetrics": []}\n',
                    encoding="utf-8")
    res = _invoke("load", "--db", "t.duckdb", "--format", "json", str(path))
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert (summary["details"][0]["input_format"], summary["tool_calls"], summary["loop_exits"],
            summary["quarantined"]) == ("otlp", 4, 2, 2)
    bad = json.loads(_invoke("quarantine", "--db", "t.duckdb", "--format", "json").stdout)
    assert [(b["line_no"], b["reason"], b["raw"]) for b in bad] == [
        (n + 1, "not JSON: Expecting value at column 1", "not json"),
        (n + 2, "not an OTLP line: no resourceSpans/resourceLogs key (found: hello)", '{"hello": 1}'),
    ]
    m = _metrics("t.duckdb")
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"], m["recovery_rate"]) == (2, 4, 1, 1, 1.0)


def test_a_grown_file_is_read_again_whole(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(CAPTURED.read_text(encoding="utf-8"), encoding="utf-8")
    assert _invoke("load", "--db", "t.duckdb", str(path)).exit_code == 0
    with path.open("a", encoding="utf-8") as fh:
        fh.write((FIXTURES / "openai_agents_genai.jsonl").read_text(encoding="utf-8"))
    assert _invoke("load", "--db", "t.duckdb", str(path)).exit_code == 0
    m = _metrics("t.duckdb")
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (4, 8, 2, 2)


def test_proto_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "traces.binpb"
    path.write_bytes(b"\x00\x00\x01\x2a\x0a\xa7\x02\x0a\x12\x00binary protobuf")
    res = _invoke("load", "--db", "t.duckdb", str(path))
    assert res.exit_code == 1
    assert "traces.binpb: line 1: not OTLP JSON Lines" in " ".join(res.output.split())
    assert "format: json" in " ".join(res.output.split())
    assert "Traceback" not in res.output
    # the binary file is skipped and named; a good file of the same load still loads
    res = _invoke("load", "--db", "t2.duckdb", "--format", "json", str(path), str(CAPTURED))
    assert res.exit_code == 1
    summary = json.loads(res.stdout)
    assert (summary["unreadable"], summary["tool_calls"], summary["loop_exits"]) == (1, 4, 2)


def test_logs_file_of_loopscope_events_loads(tmp_path: Path) -> None:
    def kv(key: str, value: object) -> dict:
        v = {"intValue": str(value)} if isinstance(value, int) and not isinstance(value, bool) else (
            {"boolValue": value} if isinstance(value, bool) else {"stringValue": value})
        return {"key": key, "value": v}

    def event(name: str, t: int, **body: object) -> dict:
        return {"observedTimeUnixNano": str(1_790_000_000_000_000_000 + t), "eventName": name,
                "traceId": "AB" * 16, "spanId": "CD" * 8,
                "body": {"kvlistValue": {"values": [kv(k, v) for k, v in body.items()]}}}

    records = [
        event("loopscope.tool_call", 1, conversation_id="c1", prompt_id="p1", tool_call_id="t1", tool_name="search",
              step=0, outcome="permanent_fail", is_error=True, error_message="index offline"),
        event("loopscope.tool_call", 2, conversation_id="c1", prompt_id="p1", tool_call_id="t2", tool_name="search",
              step=1, outcome="ok", is_error=False),
        event("loopscope.agent_exit", 3, conversation_id="c1", prompt_id="p1", exit_reason="end_turn"),
    ]
    path = tmp_path / "logs.jsonl"
    path.write_text(json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}) + "\n", encoding="utf-8")
    res = _invoke("load", "--db", "t.duckdb", "--format", "json", str(path))
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["details"][0]["input_format"] == "otlp"
    m = _metrics("t.duckdb")
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (1, 2, 1, 1)


def test_chat_spans_only_say_so_not_unpaired_results(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """An export of model spans only gets the OTLP reason, not the message formats' "results that do
    not pair up" (which is what an OTLP file's no_agent_spans violation was reported as)."""
    monkeypatch.chdir(tmp_path)
    doc = json.loads((FIXTURES / "vercel_ai_sdk5_genai_interlingua.json").read_text(encoding="utf-8"))
    scope = doc["resourceSpans"][0]["scopeSpans"][0]
    scope["spans"] = [s for s in scope["spans"] if s["name"] == "ai.generateText.doGenerate"]  # the model call
    path = tmp_path / "chat_only.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    res = _invoke("load", "--db", "t.duckdb", str(path))
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "chat_only.json yielded 0 records" in text
    assert "none of them is a tool or agent span" in text and "pair up" not in text
    assert "Traceback" not in res.output
