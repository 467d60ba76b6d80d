"""Vercel AI SDK UI messages (``UIMessage[]``, what ``useChat`` keeps) through ``loopscope load``.

tests/fixtures/messages/aisdk_v7_ui_refund.json was written by the AI SDK itself
(make_aisdk_v7_ui_refund.mjs: ai 7.0.173, streamText around a scripted model, the messages a
server persists from toUIMessageStream's onFinish). Counted by hand, by message index:

- 0 user "Refund order A-17 ...": prompt m0. 1 assistant, four steps split at step-start: step 0
  text + lookup_order call_1 (output-error "Error: no order A-17; ids have no dash"); step 1
  lookup_order call_2 (output-available); step 2 refund call_3 (ok) and notify call_4
  (output-error) in parallel; step 3 text: end_turn. call_1 is recovered by call_2 (step 1),
  call_4 gave up.
- 2 user "Now delete the order.": prompt m2. 3 assistant: delete_order call_5 in state
  approval-requested: asked for, never run: a call with no result (missing_result), so prompt
  m2 has no record (as for every shape).

Totals: 1 prompt with records, 4 calls, 2 errors, 1 recovered, 1 gave_up; 1 protocol violation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.analyses.ingest.messages import read
from loopscope.analyses.ingest.messages.records import conversation_records
from loopscope.cli.app import app

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "messages" / "aisdk_v7_ui_refund.json"
runner = CliRunner()


def run(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def test_ui_messages_written_by_the_sdk_through_the_cli() -> None:
    summary = json.loads(run("load", "--db", "store.duckdb", "--format", "json", str(FIXTURE)).stdout)
    assert summary["details"][0]["input_format"] == "messages"
    assert (summary["loaded"], summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (5, 4, 1, 1)
    m = json.loads(run("metrics", "--db", "store.duckdb", "--format", "json").stdout)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["median_tool_calls_per_prompt"]) == (1, 0, 4, 4)
    assert (m["errors"], m["recovered_errors"]) == (2, 1)
    assert m["error_classes"] == {"recovered": 1, "open": 0, "aborted": 0, "gave_up": 1}
    rows = json.loads(run("unrecovered", "--db", "store.duckdb", "--format", "json").stdout)
    assert [(r["conversation_id"], r["tool_call_id"], r["tool_name"], r["class"]) for r in rows] == [
        ("aisdk-ui-chat-1", "call_4", "notify", "gave_up")
    ]


def test_ui_message_records() -> None:
    out = read(FIXTURE, {})
    calls = {r["tool_call_id"]: r for r in out.records if r["kind"] == "tool_call"}
    assert {k: (r["prompt_id"], r["tool_name"], r["step"], r["is_error"]) for k, r in calls.items()} == {
        "call_1": ("m0", "lookup_order", 0, True),
        "call_2": ("m0", "lookup_order", 1, False),
        "call_3": ("m0", "refund", 2, False),
        "call_4": ("m0", "notify", 2, True),
    }
    assert calls["call_1"]["error_message"] == "Error: no order A-17; ids have no dash"
    assert calls["call_3"]["input_shape"] == {"amount": "integer", "id": "string"}
    (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
    assert (exit_["prompt_id"], exit_["exit_reason"], exit_["steps"], exit_["tool_calls"], exit_["tool_errors"]) == ("m0", "end_turn", 4, 4, 2)
    assert [(v["kind"], v["tool_call_id"], v["prompt_id"]) for v in out.violations] == [("missing_result", "call_5", "m2")]


def test_ui_states_dynamic_provider_and_unknown_parts() -> None:
    messages = [
        {"id": "u", "role": "user", "metadata": {"createdAt": 1764000000000}, "parts": [
            {"type": "file", "mediaType": "image/png", "url": "data:,"}, {"type": "data-weather", "data": {}}]},
        {"id": "a", "role": "assistant", "metadata": {"createdAt": 1764000005000}, "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "hm"},
            {"type": "dynamic-tool", "toolName": "mcp_delete", "toolCallId": "d1", "state": "output-denied",
             "input": {"p": "/"}, "approval": {"id": "ap", "approved": False, "reason": "not on prod"}},
            {"type": "dynamic-tool", "toolName": "mcp_rm", "toolCallId": "d2", "state": "output-denied",
             "input": {}, "approval": {"id": "ap2", "approved": False}},
            {"type": "tool-web_search", "toolCallId": "s1", "state": "output-available", "providerExecuted": True,
             "input": {}, "output": []},
            {"type": "tool-stream", "toolCallId": "p1", "state": "output-available", "preliminary": True,
             "input": {}, "output": "half"},
            {"type": "tool-typing", "toolCallId": "i1", "state": "input-streaming", "input": {"q": "wea"}},
            {"type": "hologram"},
            {"type": "step-start"},
            {"type": "tool-look", "toolCallId": "l1", "state": "output-available", "input": {"q": 1}, "output": {"ok": True}},
            {"type": "step-start"},
            {"type": "text", "text": "done"},
        ]},
    ]
    out = conversation_records(messages, conversation_id="c")
    calls = [(r["tool_call_id"], r["tool_name"], r["step"], r["is_error"], r["error_type"], r["error_message"])
             for r in out.records if r["kind"] == "tool_call"]
    # a file alone starts the prompt; web_search ran on the provider's side
    assert calls == [
        ("d1", "mcp_delete", 0, True, "execution_denied", "not on prod"),
        ("d2", "mcp_rm", 0, True, "execution_denied", "Tool execution denied."),
        ("l1", "look", 1, False, None, None),
    ]
    # the times in the app's metadata (epoch milliseconds), not synthetic ones
    assert all(r["ts"].startswith("2025-11-24T16:00:05") and "ts_synthetic" not in r for r in out.records)
    assert sorted((v["kind"], v["tool_call_id"]) for v in out.violations) == [
        ("missing_result", "i1"), ("missing_result", "p1"), ("unread_part", None),
    ]
    (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
    assert (exit_["exit_reason"], exit_["steps"]) == ("end_turn", 3)


def test_gemini_parts_are_not_ui_messages() -> None:
    # Gemini's {role, parts: [{text}]} has no part type: not read as UI messages (whose parts without a
    # type would be unread_part violations) but as Gemini contents: one prompt answered in text
    messages = [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"text": "hello"}]}]
    out = conversation_records(messages, conversation_id="g")
    assert out.violations == []
    assert [(r["kind"], r.get("exit_reason")) for r in out.records] == [("loop_exit", "end_turn")]
