"""Message shapes beyond the common ones, with known answers (tests/fixtures/messages/shapes.jsonl).

The fixture, written for these tests, holds one conversation per shape:

- ``legacy-1``: the legacy OpenAI pair (assistant ``function_call``, ``role: "function"``
  result, no ids), after a system message; the first call's text starts with ``Error:``,
  the second succeeds in the next step.
- ``blocks-1``: Anthropic blocks: a tool_result whose content is a list (text + image) with
  no ``is_error``; one with ``is_error: false`` on an ``Error:`` text; one with
  ``is_error: true`` and no content at all; assistant content as a list.
- ``42`` (an integer id): OpenAI messages with ``name`` fields, an integer tool call id,
  assistant content as a string, a JSON ``{"error": {"code": ...}}`` result.
- ``no-user-1``: a system message and no user message (a scheduled job that calls a tool).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.analyses.ingest.messages import read
from loopscope.cli.app import app

SHAPES = Path(__file__).resolve().parent / "fixtures" / "messages" / "shapes.jsonl"
runner = CliRunner()


def calls(options: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    out = read(SHAPES, options)
    assert out.bad == [] and all(v["kind"] == "unflagged_error_text" for v in out.violations)
    return {(r["conversation_id"], r["tool_call_id"]): r for r in out.records if r["kind"] == "tool_call"}


def exits(options: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {
        r["conversation_id"]: (r["prompt_id"], r["exit_reason"], r["exit_source"], r["steps"], r["tool_calls"], r["tool_errors"])
        for r in read(SHAPES, options).records
        if r["kind"] == "loop_exit"
    }


def test_legacy_function_call_pair() -> None:
    plain = calls({})
    first, second = plain[("legacy-1", "m2")], plain[("legacy-1", "m4")]
    # no ids in that API: each call takes its message's index; the system message starts no prompt
    assert (first["prompt_id"], first["step"], first["tool_name"], first["input_shape"]) == ("m1", 0, "get_weather", {"city": "string"})
    assert (second["prompt_id"], second["step"], second["call_message_index"], second["message_index"]) == ("m1", 1, 4, 5)
    # no flag: the default counts no error, but the text is kept for the lint
    assert (first["is_error"], first["text_reports_error"]) == (False, True)
    assert first["error_message"] == "Error: unknown city 'Rome'; use the local name"
    assert calls({"error_when": "prefix"})[("legacy-1", "m2")]["is_error"] is True
    assert exits({"error_when": "prefix"})["legacy-1"] == ("m1", "end_turn", "inferred", 3, 2, 1)


def test_legacy_function_result_without_a_call_is_a_violation() -> None:
    from loopscope.analyses.ingest.messages.records import conversation_records

    messages = [
        {"role": "user", "content": "hi"},
        {"role": "function", "name": "f", "content": "stray"},
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "function", "name": "f", "content": "ok"},
        {"role": "function", "name": "f", "content": "again"},
        {"role": "assistant", "content": "done"},
    ]
    out = conversation_records(messages, conversation_id="c")
    assert [(r["kind"], r.get("tool_call_id")) for r in out.records] == [("tool_call", "m2"), ("loop_exit", None)]
    assert [v["kind"] for v in out.violations] == ["unknown_result_id", "unknown_result_id"]


def test_anthropic_result_blocks_and_flags() -> None:
    found = calls({"error_when": "prefix"})
    image = found[("blocks-1", "a1")]
    # text + image content: the text is read, the image is not an error; no is_error -> the convention decides
    assert (image["is_error"], image["error_message"], image["step"]) == (False, None, 0)
    flagged_ok = found[("blocks-1", "a2")]
    # is_error: false wins over the Error: text, which stays visible to the lint
    assert (flagged_ok["is_error"], flagged_ok["step"], flagged_ok["text_reports_error"]) == (False, 0, True)
    assert flagged_ok["error_message"] == "Error: notes.txt not found"
    empty = found[("blocks-1", "a3")]
    # is_error: true with no content: an error with no text (null, not "")
    assert (empty["is_error"], empty["error_message"], empty["error_source"], empty["step"]) == (True, None, "flag", 1)
    assert exits({})["blocks-1"] == ("m0", "end_turn", "stored", 3, 3, 1)


def test_names_integer_ids_and_json_error_body() -> None:
    found = calls({"error_when": ["json-error-key"]})
    call = found[("42", "7")]  # integer conversation and call ids are read as text
    assert (call["tool_name"], call["is_error"], call["error_type"], call["error_source"]) == ("lookup_order", True, "not_found", "json-error-key")
    assert call["input_shape"] == {"order": "integer"}
    assert exits({})["42"] == ("m0", "end_turn", "stored", 2, 1, 0)


def test_conversation_without_a_user_message() -> None:
    found = calls({})
    assert found[("no-user-1", "n1")]["prompt_id"] == "m1"  # the first response that calls a tool
    assert exits({})["no-user-1"] == ("m1", "end_turn", "inferred", 2, 1, 0)


@pytest.mark.parametrize(
    ("options", "errors", "recovered", "violations"),
    # without a convention, m2 (Error: ...) and 7 ({"error": ...}) have no flag and read like errors:
    # one unflagged_error_text note for the file
    [([], 1, 0, 1), (["--error-when", "prefix", "--error-when", "json-error-key"], 3, 1, 0)],
)
def test_through_load_and_metrics(options: list[str], errors: int, recovered: int, violations: int) -> None:
    res = runner.invoke(app, ["load", "--db", "s.duckdb", "--format", "json", "--input-format", "messages", *options, str(SHAPES)])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"], summary["protocol_violations"]) == (7, 4, 0, violations)
    res = runner.invoke(app, ["metrics", "--db", "s.duckdb", "--format", "json"])
    assert res.exit_code == 0, res.output
    m = json.loads(res.stdout)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (4, 0, 7, errors, recovered)


def test_messages_key_and_id_key_example_of_the_docs() -> None:
    """docs/inputs.md's example: conversations under runs[].chat.history, ids in run_id."""
    runs = SHAPES.parent / "runs.json"
    res = runner.invoke(app, ["load", "--db", "r.duckdb", "--format", "json", "--input-format", "messages",
                              "--messages-key", "runs[].chat.history", "--id-key", "run_id", "--error-when", "prefix", str(runs)])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"]) == (3, 2, 0)
    m = json.loads(runner.invoke(app, ["metrics", "--db", "r.duckdb", "--format", "json"]).stdout)
    # run-1: refund fails, refund_gift_card succeeds next step (recovered); run-2: gives up
    assert (m["prompts"], m["errors"], m["recovered_errors"]) == (2, 2, 1)
    rows = json.loads(runner.invoke(app, ["unrecovered", "--db", "r.duckdb", "--format", "json"]).stdout)
    assert [(r["conversation_id"], r["tool_call_id"], r["class"]) for r in rows] == [("run-2", "call_r3", "gave_up")]


AISDK_V7 = Path(__file__).resolve().parent / "fixtures" / "messages" / "aisdk_v7_refund.json"


def test_vercel_ai_sdk_model_messages_as_the_sdk_writes_them() -> None:
    # Written by the AI SDK itself (make_aisdk_v7_refund.mjs): user 0; assistant 1 (text +
    # tool-call call_1 lookup_order); tool 2 (call_1: output error-text); assistant 3 (call_2);
    # tool 4 (call_2: json); assistant 5 (call_3 refund + call_4 notify, parallel); tool 6
    # (call_3: text, call_4: error-text); assistant 7 (text): one prompt, four calls, two errors.
    out = read(AISDK_V7, {})
    assert out.bad == [] and out.violations == []
    found = {r["tool_call_id"]: r for r in out.records if r["kind"] == "tool_call"}
    assert {k: (r["tool_name"], r["step"], r["is_error"]) for k, r in found.items()} == {
        "call_1": ("lookup_order", 0, True),
        "call_2": ("lookup_order", 1, False),
        "call_3": ("refund", 2, False),
        "call_4": ("notify", 2, True),
    }
    assert found["call_1"]["error_message"] == "Error: no order A-17; ids have no dash"
    assert found["call_1"]["input_shape"] == {"id": "string"}
    assert found["call_3"]["input_shape"] == {"amount": "integer", "id": "string"}
    assert exits_of(out) == [("m0", "end_turn", "inferred", 4, 4, 2)]


def test_vercel_ai_sdk_v4_core_messages() -> None:
    # AI SDK 4 (CoreMessage): tool-call parts carry `args`, tool-result parts `result` and an
    # optional `isError`; a provider-executed call (providerExecuted) is not the agent's.
    from loopscope.analyses.ingest.messages.records import conversation_records

    messages = [
        {"role": "user", "content": [{"type": "text", "text": "weather in Rome?"}]},
        {"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": "t1", "toolName": "weather", "args": {"city": "Roma"}},
            {"type": "tool-call", "toolCallId": "s1", "toolName": "web_search", "args": {}, "providerExecuted": True},
            {"type": "tool-result", "toolCallId": "s1", "toolName": "web_search", "result": [], "providerExecuted": True},
        ]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "t1", "toolName": "weather", "result": "unknown city", "isError": True},
        ]},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "t2", "toolName": "weather", "args": {"city": "Rome"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t2", "toolName": "weather", "result": {"c": 21}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t3", "toolName": "weather", "output": {"type": "execution-denied", "reason": "user said no"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "21C"}]},
    ]
    out = conversation_records(messages, conversation_id="c")
    calls = [(r["tool_call_id"], r["step"], r["is_error"], r["error_message"]) for r in out.records if r["kind"] == "tool_call"]
    assert calls == [("t1", 0, True, "unknown city"), ("t2", 1, False, None)]
    assert [v["kind"] for v in out.violations] == ["unknown_result_id"]  # t3: no call asked for it


def test_vercel_ai_sdk_denied_execution_is_an_error() -> None:
    from loopscope.analyses.ingest.messages.records import conversation_records

    messages = [
        {"role": "user", "content": "delete it"},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "d1", "toolName": "rm", "input": {"path": "/x"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "d1", "toolName": "rm",
                                      "output": {"type": "execution-denied", "reason": "not allowed"}}]},
        {"role": "assistant", "content": "I may not delete it."},
    ]
    out = conversation_records(messages, conversation_id="c")
    (call,) = [r for r in out.records if r["kind"] == "tool_call"]
    assert (call["is_error"], call["error_type"], call["error_message"]) == (True, "execution_denied", "not allowed")


def exits_of(out: Any) -> list[tuple[Any, ...]]:
    return [
        (r["prompt_id"], r["exit_reason"], r["exit_source"], r["steps"], r["tool_calls"], r["tool_errors"])
        for r in out.records
        if r["kind"] == "loop_exit"
    ]
