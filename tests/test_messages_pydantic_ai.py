"""pydantic-ai message histories (``all_messages_json()``) through ``loopscope load`` and the analyses.

The fixture tests/fixtures/messages/pydantic_ai_refund.json was written by a real pydantic-ai
Agent (make_pydantic_ai_history.py: ``FunctionModel`` scripts the model, pydantic-ai runs the
tools, validates arguments and writes the history). Expected figures are counted by hand from
the script, by message index, not by running loopscope:

- run 1, prompt m0 (message 0 "refund order A-17"): response 1 calls lookup_order (call_1),
  which raises ModelRetry (2: tool-return outcome retried, cause model_retry): error at step 0;
  response 3 calls lookup_order (call_2), success (4): recovers call_1; response 5 calls refund
  with amount "lots" (call_3): argument validation fails (6: retried, validation_error): error at
  step 2; response 7 calls refund (call_4, ok) and notify (call_5, ModelRetry) in parallel (8):
  step 3, call_4 recovers call_3; response 9 is text: end_turn. notify never succeeds: gave_up.
  5 calls, 3 errors, 5 steps.
- run 2, prompt m10: lookup_order (call_6, ok), then text: 1 call, 2 steps.
- run 3, prompt m14 (structured output): final_result (call_7) fails validation (16), then
  final_result (call_8, "Final result processed.") beside lookup_order (call_9, "Tool not
  executed - a final result was already processed."): the output tool is the answer, not a tool
  the harness ran, and call_9 never ran: 0 calls, 2 steps, end_turn.

Totals: 3 prompts, 0 open, 6 calls (per prompt 5, 1, 0: median 1, p99 1 + 0.98 * 4), 3 errors,
2 recovered, 1 gave_up (call_5).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.analyses.ingest.messages import read
from loopscope.analyses.ingest.messages.records import conversation_records
from loopscope.cli.app import app

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "messages" / "pydantic_ai_refund.json"
runner = CliRunner()


def run(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def load(path: Path, *options: str) -> dict[str, Any]:
    return json.loads(run("load", "--db", "store.duckdb", "--format", "json", *options, str(path)).stdout)


def test_history_written_by_pydantic_ai_through_the_cli() -> None:
    summary = load(FIXTURE)
    assert summary["details"][0]["input_format"] == "messages"  # found by itself (auto)
    assert (summary["loaded"], summary["tool_calls"], summary["loop_exits"]) == (9, 6, 3)
    assert (summary["quarantined"], summary["protocol_violations"], summary["notices"]) == (0, 0, [])
    m = json.loads(run("metrics", "--db", "store.duckdb", "--format", "json").stdout)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"]) == (3, 0, 6)
    assert m["median_tool_calls_per_prompt"] == 1
    assert m["p99_tool_calls_per_prompt"] == pytest.approx(1 + 0.98 * 4)
    assert (m["errors"], m["recovered_errors"], m["replays"]) == (3, 2, 0)
    assert m["error_classes"] == {"recovered": 2, "open": 0, "aborted": 0, "gave_up": 1}
    rows = json.loads(run("unrecovered", "--db", "store.duckdb", "--format", "json").stdout)
    assert [(r["tool_call_id"], r["tool_name"], r["class"]) for r in rows] == [("call_5", "notify", "gave_up")]
    # the conversation is the id pydantic-ai stores on every message, not the file name
    cid = json.loads(FIXTURE.read_text(encoding="utf-8"))[0]["conversation_id"]
    assert rows[0]["conversation_id"] == cid


def test_history_records() -> None:
    out = read(FIXTURE, {})
    assert out.bad == [] and out.violations == []
    calls = {r["tool_call_id"]: r for r in out.records if r["kind"] == "tool_call"}
    assert {k: (r["prompt_id"], r["tool_name"], r["step"], r["is_error"], r["error_type"]) for k, r in calls.items()} == {
        "call_1": ("m0", "lookup_order", 0, True, "model_retry"),
        "call_2": ("m0", "lookup_order", 1, False, None),
        "call_3": ("m0", "refund", 2, True, "validation_error"),
        "call_4": ("m0", "refund", 3, False, None),
        "call_5": ("m0", "notify", 3, True, "model_retry"),
        "call_6": ("m10", "lookup_order", 0, False, None),
    }
    assert calls["call_1"]["error_message"] == "no order A-17; ids have no dash"
    # a validation failure is shown to the model as the JSON list of its errors
    errors = json.loads(calls["call_3"]["error_message"])
    assert [(e["loc"], e["type"]) for e in errors] == [(["amount"], "int_parsing")]
    assert calls["call_3"]["input_shape"] == {"amount": "string", "order_id": "string"}
    # times are pydantic-ai's own (response received, tool returned): real latencies
    assert all(r["latency_ms"] is not None and r["latency_ms"] >= 0 and "ts_synthetic" not in r for r in calls.values())
    exits = [(r["prompt_id"], r["exit_reason"], r["steps"], r["tool_calls"], r["tool_errors"], r["input_tokens"])
             for r in out.records if r["kind"] == "loop_exit"]
    # input tokens: 100 + 10 n for the n-th response (the script's usage)
    assert exits == [("m0", "end_turn", 5, 5, 3, 600), ("m10", "end_turn", 2, 1, 0, 310), ("m14", "end_turn", 2, 0, 0, 350)]


def _legacy_history() -> list[dict[str, Any]]:
    # pydantic-ai before the retry split (RetryPromptPart): a retry answering a tool call is a
    # retry-prompt naming the tool; requests carry no timestamp of their own (only their parts).
    return [
        {"kind": "request", "parts": [
            {"part_kind": "system-prompt", "content": "be brief", "timestamp": "2025-03-01T10:00:00Z"},
            {"part_kind": "user-prompt", "content": "book a table", "timestamp": "2025-03-01T10:00:00Z"}]},
        {"kind": "response", "timestamp": "2025-03-01T10:00:02Z", "finish_reason": "tool_call",
         "usage": {"input_tokens": 50, "output_tokens": 9}, "parts": [
             {"part_kind": "thinking", "content": "need a date"},
             {"part_kind": "builtin-tool-call", "tool_name": "web_search", "args": {"q": "x"}, "tool_call_id": "srv1"},
             {"part_kind": "builtin-tool-return", "tool_name": "web_search", "content": [], "tool_call_id": "srv1"},
             {"part_kind": "tool-call", "tool_name": "book", "args": "{\"seats\": \"two\"}", "tool_call_id": "b1"},
             {"part_kind": "tool-call", "tool_name": "hours", "args": None, "tool_call_id": "h1"}]},
        {"kind": "request", "parts": [
            {"part_kind": "retry-prompt", "tool_name": "book", "tool_call_id": "b1", "timestamp": "2025-03-01T10:00:03Z",
             "content": [{"type": "int_parsing", "loc": ["seats"], "msg": "Input should be a valid integer",
                          "input": "two", "ctx": {"secret": "dropped"}}]},
            {"part_kind": "retry-prompt", "tool_name": "hours", "tool_call_id": "h1", "timestamp": "2025-03-01T10:00:04Z",
             "content": "closed on Mondays, ask for another day"}]},
        {"kind": "response", "timestamp": "2025-03-01T10:00:06Z", "parts": [
            {"part_kind": "tool-call", "tool_name": "book", "args": {"seats": 2}, "tool_call_id": "b2"}]},
        {"kind": "request", "parts": [
            {"part_kind": "tool-return", "tool_name": "book", "content": {"ok": True, "table": 7}, "tool_call_id": "b2",
             "timestamp": "2025-03-01T10:00:07Z"}]},
        {"kind": "response", "timestamp": "2025-03-01T10:00:08Z", "parts": [{"part_kind": "text", "content": "{bad json"}]},
        # output validation failed: a retry-prompt with no tool is not a tool result
        {"kind": "request", "parts": [{"part_kind": "retry-prompt", "tool_name": None, "content": "not JSON",
                                       "tool_call_id": "x", "timestamp": "2025-03-01T10:00:09Z"}]},
        {"kind": "response", "timestamp": "2025-03-01T10:00:10Z", "finish_reason": "length",
         "parts": [{"part_kind": "text", "content": "Booked table 7 for"}]},
    ]


def test_legacy_retry_prompts_finish_reasons_and_skipped_parts() -> None:
    out = conversation_records(_legacy_history(), conversation_id="c")
    assert out.violations == []
    calls = [(r["tool_call_id"], r["step"], r["is_error"], r["error_type"]) for r in out.records if r["kind"] == "tool_call"]
    # the provider-side web_search is not the agent's; b1 and h1 are one response (step 0)
    assert calls == [("b1", 0, True, "validation_error"), ("h1", 0, True, None), ("b2", 1, False, None)]
    found = {r["tool_call_id"]: r for r in out.records if r["kind"] == "tool_call"}
    # the text RetryPromptPart.model_response() gives the model: ctx left out, the closing line added
    assert found["b1"]["error_message"].startswith("1 validation error:\n```json\n[\n  {\n")
    assert found["b1"]["error_message"].endswith("```\n\nFix the errors and try again.")
    assert "dropped" not in found["b1"]["error_message"] and '"input": "two"' in found["b1"]["error_message"]
    assert found["h1"]["error_message"] == "closed on Mondays, ask for another day\n\nFix the errors and try again."
    assert found["h1"]["input_shape"] == {}  # args null: no arguments
    # a request without its own timestamp takes its parts' (not a synthetic time)
    assert found["b1"]["ts"].startswith("2025-03-01T10:00:04") and found["b1"]["latency_ms"] == 1000.0
    (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
    # finish_reason "length" as OpenAI's: max_tokens, an abnormal exit; 4 responses, tokens of the one that stored them
    assert (exit_["exit_reason"], exit_["stop_reason_stored"], exit_["steps"], exit_["input_tokens"]) == ("max_tokens", "length", 4, 50)


def test_outcomes_failed_denied_interrupted() -> None:
    history = [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": [{"kind": "image-url", "url": "u"}]}]},
        {"kind": "response", "parts": [
            {"part_kind": "tool-call", "tool_name": "rm", "args": {"p": "/"}, "tool_call_id": "d1"},
            {"part_kind": "tool-call", "tool_name": "disk", "args": {}, "tool_call_id": "f1"},
            {"part_kind": "tool-call", "tool_name": "slow", "args": {}, "tool_call_id": "i1"}]},
        {"kind": "request", "parts": [
            {"part_kind": "tool-return", "tool_name": "rm", "tool_call_id": "d1", "outcome": "denied", "content": "The tool call was denied."},
            {"part_kind": "tool-return", "tool_name": "disk", "tool_call_id": "f1", "outcome": "failed", "content": "disk full"},
            {"part_kind": "tool-return", "tool_name": "slow", "tool_call_id": "i1", "outcome": "interrupted", "content": "interrupted"}]},
    ]
    out = conversation_records(history, conversation_id="c")  # an image alone starts the prompt
    calls = {r["tool_call_id"]: (r["is_error"], r["error_type"], r["error_message"]) for r in out.records if r["kind"] == "tool_call"}
    assert calls == {"d1": (True, "execution_denied", "The tool call was denied."), "f1": (True, None, "disk full")}
    # an interrupted call produced no result: the call with no result it is
    assert [(v["kind"], v["tool_call_id"]) for v in out.violations] == [("missing_result", "i1")]


def test_adversarial_history_gives_notices_and_loses_nothing(tmp_path: Path) -> None:
    history = [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi", "timestamp": "2025-10-24T02:46:38Z"}]},
        {"kind": "response", "timestamp": "2025-10-24T02:46:39Z", "finish_reason": "tool_call", "parts": [
            {"part_kind": "tool-call", "tool_name": "search", "args": "{\"q\": 1}", "tool_call_id": "c1"},
            {"part_kind": "hologram", "content": "?"}]},
        {"kind": "request", "parts": [
            {"part_kind": "tool-return", "tool_name": "search", "content": "ok", "tool_call_id": "c1", "timestamp": "2025-10-24T02:46:40Z"},
            {"part_kind": "tool-return", "tool_name": "search", "content": "stray", "tool_call_id": "zz", "timestamp": "2025-10-24T02:46:40Z"},
            {"part_kind": "retry-prompt", "tool_name": "search", "content": "no such call", "tool_call_id": "yy"},
            {"part_kind": "mystery-part", "x": 1}, "not a part", {"part_kind": ["not", "text"]},
            {"part_kind": "tool-return", "tool_name": {"odd": 1}, "content": "Final result processed.", "tool_call_id": {"id": 1}}]},
        {"kind": "response", "timestamp": "2025-10-24T02:46:41Z", "finish_reason": "stop", "parts": [{"part_kind": "text", "content": "done"}]},
    ]
    path = tmp_path / "adversarial.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    summary = load(path)
    # an output tool's return with odd ids is left out with its (absent) call: nothing to report
    assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (1, 1, 6)
    import duckdb

    con = duckdb.connect("store.duckdb", read_only=True)
    try:
        found = con.execute("SELECT kind, tool_call_id, detail FROM protocol_violations ORDER BY kind, tool_call_id NULLS LAST, detail").fetchall()
    finally:
        con.close()
    assert [(k, c) for k, c, _ in found] == [
        ("unknown_result_id", "yy"), ("unknown_result_id", "zz"),
        ("unread_part", None), ("unread_part", None), ("unread_part", None), ("unread_part", None),
    ]
    details = " | ".join(d for _, _, d in found)
    assert "'hologram'" in details and "'mystery-part'" in details and "a request part with no kind" in details


def test_conversation_id_only_when_every_message_names_the_same(tmp_path: Path) -> None:
    def history(*cids: Any) -> list[dict[str, Any]]:
        return [
            {"kind": "request", "conversation_id": cids[0], "parts": [{"part_kind": "user-prompt", "content": "hi"}]},
            {"kind": "response", "conversation_id": cids[1], "parts": [{"part_kind": "text", "content": "hello"}]},
        ]

    found = []
    for i, cids in enumerate((("c-1", "c-1"), ("c-1", "c-2"), ({"odd": 1}, {"odd": 1}))):
        path = tmp_path / f"h{i}.json"
        path.write_text(json.dumps(history(*cids)), encoding="utf-8")
        found.append({r["conversation_id"] for r in read(path, {}).records})
    assert found == [{"c-1"}, {f"{tmp_path.name}/h1.json#1"}, {f"{tmp_path.name}/h2.json#1"}]
