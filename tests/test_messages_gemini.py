"""Gemini API ``contents`` read by the messages reader, through the CLI (docs/inputs.md, "Message shapes").

Fixtures: ``gemini_contents_snake.json`` / ``gemini_contents_camel.json`` were written by the
google-genai SDK's own types (``make_gemini_contents.py``: ``model_dump(mode="json",
exclude_none=True)``, and with ``by_alias=True``). Counted by hand (the script's docstring):
2 prompts, 5 calls, 2 errors, 1 recovered (lookup_order), 1 gave up (notify). Before this
reader, both files loaded 0 records and the load exited 1 ("yielded 0 records").
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

MESSAGES = Path(__file__).resolve().parent / "fixtures" / "messages"
SDK_FILES = [MESSAGES / "gemini_contents_snake.json", MESSAGES / "gemini_contents_camel.json"]
runner = CliRunner()


def cli(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("path", SDK_FILES, ids=["snake_case", "camelCase"])
def test_sdk_history_through_load_metrics_and_unrecovered(path: Path) -> None:
    summary = cli("load", "--db", "g.duckdb", "--format", "json", str(path))  # auto-detected: no option
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"], summary["protocol_violations"]) == (5, 2, 0, 0)
    m = cli("metrics", "--db", "g.duckdb", "--format", "json")
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (2, 0, 5, 2, 1)
    assert m["error_classes"] == {"recovered": 1, "open": 0, "aborted": 0, "gave_up": 1}
    rows = cli("unrecovered", "--db", "g.duckdb", "--format", "json")
    # no ids in the SDK's history: the call in content 5 at position 1 (notify) is m5.1
    assert [(r["tool_call_id"], r["tool_name"], r["class"]) for r in rows] == [("m5.1", "notify", "gave_up")]


@pytest.mark.parametrize("path", SDK_FILES, ids=["snake_case", "camelCase"])
def test_sdk_history_records(path: Path) -> None:
    out = read(path, {})
    assert out.bad == [] and out.violations == []
    calls = {r["tool_call_id"]: r for r in out.records if r["kind"] == "tool_call"}
    assert {k: (r["prompt_id"], r["tool_name"], r["step"], r["is_error"], r["message_index"]) for k, r in calls.items()} == {
        "m1.0": ("m0", "lookup_order", 0, True, 2),
        "m3.0": ("m0", "lookup_order", 1, False, 4),
        # content 6 answers notify first: pairing is by name, not position
        "m5.0": ("m0", "refund", 2, False, 6),
        "m5.1": ("m0", "notify", 2, True, 6),
        "m9.0": ("m8", "lookup_order", 0, False, 10),
    }
    assert calls["m1.0"]["error_message"] == "no order A-17; ids have no dash"  # the error key's value
    assert calls["m5.1"]["error_message"] == "mailbox full"
    assert calls["m5.0"]["input_shape"] == {"amount": "integer", "id": "string"}
    exits = [(r["prompt_id"], r["exit_reason"], r["exit_source"], r["steps"], r["tool_calls"], r["tool_errors"])
             for r in out.records if r["kind"] == "loop_exit"]
    # the thought part of content 1 is no answer text; content 3 (text + call) does not end the loop
    assert exits == [("m0", "end_turn", "inferred", 4, 4, 2), ("m8", "end_turn", "inferred", 2, 1, 0)]


REST = {
    # the REST shape of the API docs: a generateContent request body, calls and responses with ids
    "contents": [
        {"role": "user", "parts": [{"text": "What is the weather in Boston and in Paris?"}]},
        {"role": "model", "parts": [
            {"functionCall": {"id": "c1", "name": "get_weather", "args": {"location": "Boston"}}},
            {"functionCall": {"id": "c2", "name": "get_weather", "args": {"location": "Paris"}}},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "c2", "name": "get_weather", "response": {"output": {"temp_c": 18}}}},
            {"functionResponse": {"id": "c1", "name": "get_weather", "response": {"error": "upstream timeout"}}},
        ]},
        {"role": "model", "parts": [{"functionCall": {"id": "c3", "name": "get_weather", "args": {"location": "Boston"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "c3", "name": "get_weather", "response": {"output": {"temp_c": 9}}}}]},
        {"role": "model", "parts": [{"text": "Boston 9C, Paris 18C."}]},
    ],
    "tools": [{"functionDeclarations": [{"name": "get_weather"}]}],
}


def test_rest_request_body_with_ids_is_detected_pretty_printed(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REST, indent=2))
    summary = cli("load", "--db", "g.duckdb", "--format", "json", str(path))
    assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (3, 1, 0)
    m = cli("metrics", "--db", "g.duckdb", "--format", "json")
    # c1 (Boston) fails, c3 (Boston again) succeeds a step later: recovered
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (1, 3, 1, 1)


def test_candidate_wrappers_give_the_stop_reason_and_tokens(tmp_path: Path) -> None:
    # a log that appends each GenerateContentResponse (or its candidate) after the request contents
    history = [
        {"role": "user", "parts": [{"text": "summarise the file"}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"p": "a"}}}]},
                         "finishReason": "STOP"}],
         "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 7}},
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"output": "x" * 50}}}]},
        {"content": {"role": "model", "parts": [{"text": "The file is a long"}]}, "finish_reason": "MAX_TOKENS"},
    ]
    path = tmp_path / "responses.json"
    path.write_text(json.dumps(history))
    out = read(path, {})
    assert out.violations == []
    (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
    # STOP on a response that calls a tool does not end the loop; MAX_TOKENS ends it abnormally
    assert (exit_["exit_reason"], exit_["exit_source"], exit_["stop_reason_stored"], exit_["steps"]) == \
        ("max_tokens", "stored", "MAX_TOKENS", 2)
    assert exit_["input_tokens"] == 100 and exit_["output_tokens"] == 7
    m = cli("metrics", "--format", "json", str(path))
    assert (m["prompts"], m["tool_calls"], m["errors"]) == (1, 1, 0)


def test_adversarial_parts_are_read_or_reported() -> None:
    messages = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [
            {"text": "two at once", "functionCall": {"name": "a", "args": {"x": 1}}},  # text and call in one part
            {"functionCall": {"name": "a", "args": {"x": 2}}},  # parallel, same name
            {"functionCall": {"name": "b"}},  # no args
            {"executableCode": {"language": "PYTHON", "code": "1+1"}},  # run by the provider
            {"hologram": {"k": 1}},  # a kind nobody knows
            "not a part",
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "a", "response": {"error": None, "output": "one"}}},
            {"functionResponse": {"name": "a", "response": {"error": ""}}},
            {"functionResponse": {"name": "nobody", "response": {"output": "?"}}},
            {"functionResponse": {"name": "b", "response": {"error": {"code": 3, "message": "bad"}}}},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2"}},
        ]},
        {"role": "model", "parts": [{"text": "done"}]},
    ]
    out = conversation_records(messages, conversation_id="c")
    calls = [(r["tool_call_id"], r["tool_name"], r["is_error"], r["error_message"], r["input_shape"])
             for r in out.records if r["kind"] == "tool_call"]
    assert calls == [
        ("m1.0", "a", False, None, {"x": "integer"}),  # error null: not an error, the text is the output
        ("m1.1", "a", False, None, {"x": "integer"}),  # error "": not an error either
        # a non-string error: the model was handed it as JSON, which is the error message
        ("m1.2", "b", True, '{"code": 3, "message": "bad"}', {}),
    ]
    assert [(v["kind"], v["detail"]) for v in out.violations] == [
        ("unread_part", "part 4 of message 1 is of a kind loopscope does not read ('hologram'): left out"),
        ("unread_part", "part 5 of message 1 is not an object: left out"),
        ("unknown_result_id", "message 2: the functionResponse 'nobody' (part 2, no id) answers no call of that "
                              "name in the model turn just before it: left out"),
    ]
    # the response turn is no new prompt; the last model turn ends the one prompt
    exits = [(r["prompt_id"], r["exit_reason"], r["steps"], r["tool_calls"]) for r in out.records if r["kind"] == "loop_exit"]
    assert exits == [("m0", "end_turn", 2, 3)]


def test_a_response_after_the_model_moved_on_pairs_with_nothing() -> None:
    # no id: a response answers only the model turn just before its own content
    messages = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "a"}}]},
        {"role": "user", "parts": [{"text": "hurry"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "a", "response": {"output": "late"}}}]},
        {"role": "function", "parts": [{"functionResponse": {"name": "a", "response": {"output": "later"}}}]},
    ]
    out = conversation_records(messages, conversation_id="c")
    assert [r for r in out.records if r["kind"] == "tool_call"] == []
    assert [v["kind"] for v in out.violations] == ["unknown_result_id", "unknown_result_id", "missing_result"]


def test_a_gemini_chat_without_tools_gets_the_no_tool_calls_notice(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    lines = [{"conversation_id": "s1", "role": "user", "parts": [{"text": "hi"}]},
             {"conversation_id": "s1", "role": "model", "parts": [{"text": "hello"}]}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = read(path, {})
    assert [v["kind"] for v in out.violations] == ["no_tool_calls"]
    assert "1 model response(s) and no tool call" in out.violations[0]["detail"]


def test_role_function_answers_like_a_user_turn() -> None:
    # older Vertex AI examples send function responses with role "function"
    messages = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"function_call": {"name": "a", "args": {}}}]},
        {"role": "function", "parts": [{"function_response": {"name": "a", "response": {"error": "denied"}}}]},
        {"role": "model", "parts": [{"text": "cannot"}]},
    ]
    out = conversation_records(messages, conversation_id="c")
    (call,) = [r for r in out.records if r["kind"] == "tool_call"]
    assert (call["tool_call_id"], call["is_error"], call["error_message"]) == ("m1.0", True, "denied")
    assert out.violations == []


def test_responses_without_ids_answer_calls_with_ids_by_name(tmp_path: Path) -> None:
    # the model sent ids, the code that ran the tools answered by name only (Part.from_function_response
    # takes no id): the k-th response named X answers the k-th call named X. Before: neither call
    # counted (two unknown_result_id and two missing_result violations), 0 tool calls.
    contents = [
        {"role": "user", "parts": [{"text": "weather in Paris and Rome?"}]},
        {"role": "model", "parts": [
            {"functionCall": {"id": "fc_1", "name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"id": "fc_2", "name": "get_weather", "args": {"city": "Rome"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": "18C"}}},
            {"functionResponse": {"name": "get_weather", "response": {"error": "no station"}}}]},
        {"role": "model", "parts": [{"text": "Paris 18C; Rome unknown."}]},
    ]
    path = tmp_path / "ids_by_name.json"
    path.write_text(json.dumps(contents))
    load = cli("load", "--db", "g.duckdb", "--format", "json", str(path))
    assert (load["tool_calls"], load["loop_exits"], load["protocol_violations"]) == (2, 1, 0)
    import duckdb

    con = duckdb.connect("g.duckdb", read_only=True)
    try:
        rows = con.execute("SELECT tool_call_id, is_error FROM tool_calls ORDER BY tool_call_id").fetchall()
    finally:
        con.close()
    assert rows == [("fc_1", False), ("fc_2", True)]
    # a response that names its id is not taken again by one without: fc_2 by id, fc_1 by name
    contents[2]["parts"] = [
        {"functionResponse": {"id": "fc_2", "name": "get_weather", "response": {"error": "no station"}}},
        {"functionResponse": {"name": "get_weather", "response": {"output": "18C"}}}]
    path.write_text(json.dumps(contents))
    load = cli("load", "--db", "h.duckdb", "--format", "json", str(path))
    assert (load["tool_calls"], load["protocol_violations"]) == (2, 0)
    con = duckdb.connect("h.duckdb", read_only=True)
    try:
        rows = con.execute("SELECT tool_call_id, is_error FROM tool_calls ORDER BY tool_call_id").fetchall()
    finally:
        con.close()
    assert rows == [("fc_1", False), ("fc_2", True)]
