"""Vercel AI SDK 4 UI messages (``Message[]``: what ``useChat`` kept before v5) through ``loopscope load``.

tests/fixtures/messages/aisdk_v4_ui_refund.json was written by the AI SDK itself
(make_aisdk_v4_ui_refund.mjs: ai 4.3.19, generateText around a scripted model, the messages a
server persists with appendResponseMessages). Each message has ``content``, ``createdAt``,
``toolInvocations`` (with ``step``) and ``parts``. Counted by hand, by message index:

- 0 user "Refund order A-17 ..." (10:00:01): prompt m0. 1 assistant (10:00:02), four steps:
  step 0 text + lookup_order call_1, result ``{"error": "no order A-17; ..."}`` (AI SDK 4 has no
  error flag: a success unless ``--error-when json-error-key``); step 1 lookup_order call_2;
  step 2 refund call_3 and notify call_4 in parallel; step 3 text: end_turn.
- 2 user "Now delete the order.": prompt m2. 3 assistant: delete_order call_5 in state ``call``
  (no execute: asked for, never answered): missing_result, so prompt m2 has no record.

Totals: 1 prompt with records, 4 calls, 0 errors (1 with ``--error-when json-error-key``,
recovered by call_2); 1 protocol violation. Before this reader: 2 prompts, 0 tool calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.analyses.ingest.messages import read
from loopscope.cli.app import app

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "messages" / "aisdk_v4_ui_refund.json"
runner = CliRunner()


def run(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def test_v4_messages_written_by_the_sdk_through_the_cli() -> None:
    summary = json.loads(run("load", "--db", "store.duckdb", "--format", "json", str(FIXTURE)).stdout)
    assert summary["details"][0]["input_format"] == "messages"
    assert (summary["loaded"], summary["tool_calls"], summary["loop_exits"]) == (5, 4, 1)
    m = json.loads(run("metrics", "--db", "store.duckdb", "--format", "json").stdout)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["median_tool_calls_per_prompt"]) == (1, 0, 4, 4)
    assert (m["errors"], m["recovered_errors"]) == (0, 0)


def test_v4_error_results_with_error_when() -> None:
    summary = json.loads(run("load", "--db", "store.duckdb", "--format", "json", "--error-when", "json-error-key",
                             str(FIXTURE)).stdout)
    assert (summary["tool_calls"], summary["protocol_violations"]) == (4, 1)
    m = json.loads(run("metrics", "--db", "store.duckdb", "--format", "json").stdout)
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (1, 4, 1, 1)
    assert m["error_classes"] == {"recovered": 1, "open": 0, "aborted": 0, "gave_up": 0}


def test_v4_records_steps_times_and_the_unanswered_call() -> None:
    out = read(FIXTURE, {})
    calls = {r["tool_call_id"]: r for r in out.records if r["kind"] == "tool_call"}
    assert {k: (r["prompt_id"], r["tool_name"], r["step"], r["is_error"]) for k, r in calls.items()} == {
        "call_1": ("m0", "lookup_order", 0, False),
        "call_2": ("m0", "lookup_order", 1, False),
        "call_3": ("m0", "refund", 2, False),
        "call_4": ("m0", "notify", 2, False),
    }
    assert calls["call_3"]["input_shape"] == {"amount": "integer", "id": "string"}
    assert calls["call_1"]["ts"] == "2025-03-04T10:00:02.000000Z"  # createdAt
    (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
    assert (exit_["prompt_id"], exit_["exit_reason"], exit_["steps"], exit_["tool_calls"]) == ("m0", "end_turn", 4, 4)
    assert [(v["kind"], v["tool_call_id"], v["prompt_id"]) for v in out.violations if v["tool_call_id"]] == [
        ("missing_result", "call_5", "m2")
    ]


def _without_parts(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "parts"}


def test_v4_tool_invocations_without_parts_read_the_same(tmp_path: Path) -> None:
    """Before AI SDK 4.2 a Message had no ``parts``: ``toolInvocations`` grouped by ``step``, ``content`` the text."""
    doc = json.loads(FIXTURE.read_text())
    doc["messages"] = [_without_parts(m) for m in doc["messages"]]
    path = tmp_path / "v4_no_parts.json"
    path.write_text(json.dumps(doc))
    out = read(path, {})
    calls = {r["tool_call_id"]: (r["prompt_id"], r["step"], r["ts"]) for r in out.records if r["kind"] == "tool_call"}
    at = "2025-03-04T10:00:02.000000Z"  # createdAt, also on a message with no parts
    assert calls == {"call_1": ("m0", 0, at), "call_2": ("m0", 1, at), "call_3": ("m0", 2, at), "call_4": ("m0", 2, at)}
    (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
    assert (exit_["exit_reason"], exit_["steps"], exit_["tool_calls"]) == ("end_turn", 4, 4)
    assert [v["tool_call_id"] for v in out.violations if v["tool_call_id"]] == ["call_5"]


def test_v4_partial_call_unknown_part_and_no_step(tmp_path: Path) -> None:
    """``partial-call`` is a call with no result; parts with no ``step`` split at ``step-start`` and at
    text after a call; an unknown part is reported, not dropped."""
    messages = [
        {"id": "u1", "role": "user", "content": "go", "createdAt": "2025-01-01T00:00:00Z"},
        {"id": "a1", "role": "assistant", "content": "", "createdAt": "2025-01-01T00:00:05Z", "parts": [
            {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "t1", "toolName": "ls",
                                                            "args": {}, "result": "a b"}},
            {"type": "text", "text": "now reading"},
            {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "t2", "toolName": "cat",
                                                            "args": {"f": "a"}, "result": "x"}},
            {"type": "step-start"},
            {"type": "widget", "x": 1},
            {"type": "tool-invocation", "toolInvocation": {"state": "partial-call", "toolCallId": "t3", "toolName": "rm",
                                                            "args": {"f": "a"}}},
        ]},
    ]
    path = tmp_path / "v4.json"
    path.write_text(json.dumps({"id": "c", "messages": messages}))
    out = read(path, {})
    calls = {r["tool_call_id"]: r["step"] for r in out.records if r["kind"] == "tool_call"}
    assert calls == {"t1": 0, "t2": 1}
    assert sorted((v["kind"], v["tool_call_id"]) for v in out.violations) == [
        ("missing_result", "t3"), ("unread_part", None)
    ]
