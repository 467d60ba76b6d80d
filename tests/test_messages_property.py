"""The messages reader never crashes, and its records always hold together, on any message list."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from loopscope.analyses.ingest.messages.records import conversation_records
from loopscope.analyses.ingest.messages import read

_spec = importlib.util.spec_from_file_location("loopscope_test_json_mutation", Path(__file__).parent / "json_mutation.py")
assert _spec and _spec.loader
mutation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation)

IDS = st.sampled_from(["a", "b", "c", "d"])
TEXT = st.sampled_from(["", "ok", "Error: no", '{"error": "x"}', "  "])
ARGS = st.one_of(st.dictionaries(st.sampled_from(["x", "y"]), st.integers() | st.none() | st.text(max_size=3), max_size=2), st.just("{bad"))

anthropic_assistant = st.builds(
    lambda blocks, stop: {"role": "assistant", "content": blocks, **({"stop_reason": stop} if stop else {})},
    st.lists(
        st.one_of(
            st.builds(lambda t: {"type": "text", "text": t}, TEXT),
            st.builds(lambda i, a: {"type": "tool_use", "id": i, "name": "t", "input": a}, IDS, ARGS),
        ),
        max_size=3,
    ),
    st.sampled_from([None, "end_turn", "tool_use", "max_tokens"]),
)
anthropic_user = st.builds(
    lambda blocks: {"role": "user", "content": blocks},
    st.lists(
        st.one_of(
            st.builds(lambda t: {"type": "text", "text": t}, TEXT),
            st.builds(lambda i, t, e: {"type": "tool_result", "tool_use_id": i, "content": t, "is_error": e}, IDS, TEXT, st.none() | st.booleans()),
        ),
        max_size=3,
    ),
)
openai_assistant = st.builds(
    lambda calls, text, finish: {
        "role": "assistant",
        "content": text,
        "tool_calls": [{"id": i, "type": "function", "function": {"name": "f", "arguments": json.dumps(a) if isinstance(a, dict) else a}} for i, a in calls],
        **({"finish_reason": finish} if finish else {}),
    },
    st.lists(st.tuples(IDS, ARGS), max_size=3),
    st.none() | TEXT,
    st.sampled_from([None, "stop", "tool_calls", "length"]),
)
openai_tool = st.builds(lambda i, t: {"role": "tool", "tool_call_id": i, "content": t}, IDS | st.none(), TEXT)
plain_user = st.builds(lambda t: {"role": "user", "content": t}, TEXT)
junk = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.just({"role": "system", "content": "s"}), st.just({"no": "role"}))
responses_call = st.builds(lambda i, a: {"type": "function_call", "call_id": i, "name": "g", "arguments": json.dumps(a) if isinstance(a, dict) else a}, IDS, ARGS)
responses_output = st.builds(lambda i, t: {"type": "function_call_output", "call_id": i, "output": t}, IDS, TEXT)
responses_other = st.sampled_from([{"type": "reasoning", "summary": []}, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}])
MESSAGES = st.lists(
    st.one_of(anthropic_assistant, anthropic_user, openai_assistant, openai_tool, plain_user, junk, responses_call, responses_output, responses_other),
    max_size=14,
)


def result_count(m: Any) -> int:
    """How many tool results a message holds."""
    if not isinstance(m, dict):
        return 0
    if m.get("role") == "tool" or m.get("type") == "function_call_output":
        return 1
    if m.get("role") == "user" and isinstance(m.get("content"), list):
        return sum(1 for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
    return 0


@settings(max_examples=150, deadline=None)
@given(MESSAGES, st.sampled_from([None, "too_many_errors", "max_steps", "user_stop"]))
def test_records_hold_together(messages: list[Any], termination: Any) -> None:
    out = conversation_records(messages, conversation_id="c", termination_reason=termination)
    calls = [r for r in out.records if r["kind"] == "tool_call"]
    exits = [r for r in out.records if r["kind"] == "loop_exit"]
    assert len({r["prompt_id"] for r in exits}) == len(exits)  # at most one exit per prompt
    per_prompt = Counter(r["prompt_id"] for r in calls)
    for e in exits:
        assert e["tool_calls"] == per_prompt[e["prompt_id"]]
        assert e["tool_errors"] == sum(1 for r in calls if r["prompt_id"] == e["prompt_id"] and r["is_error"])
        assert all(r["step"] < e["steps"] for r in calls if r["prompt_id"] == e["prompt_id"])
    for r in calls:
        assert r["step"] >= 0 and r["attempts"] == 1
        assert r["outcome"] == ("permanent_fail" if r["is_error"] else "ok")
        assert r["error_message"] is None or len(r["error_message"]) <= 2000
    # every result either became a record or was reported
    results = sum(result_count(m) for m in messages)
    reported = sum(1 for v in out.violations if v["kind"] in ("unknown_result_id", "duplicate_result"))
    assert len(calls) + reported == results
    json.dumps(out.records)  # records are plain JSON


@settings(max_examples=60, deadline=None)
@example([{"role": []}])  # an unhashable role where smolagents' roles are looked up (found by this test)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["messages", "role", "id", "simulations", "content"]), c, max_size=3), max_leaves=12))
def test_any_json_document_loads_or_is_reported(tmp_path_factory: Any, value: Any) -> None:
    path: Path = tmp_path_factory.mktemp("doc") / "doc.json"
    path.write_text(json.dumps(value))
    out = read(path, {})  # never raises
    if not isinstance(value, (list, dict)):
        assert out.bad and out.records == []
    elif isinstance(value, dict) and not any(isinstance(value.get(k), list) for k in ("messages", "simulations")):
        assert [b.reason for b in out.bad] == [
            "no conversation found (no messages list at a known place); pass --messages-key, e.g. simulations[].messages"
        ]


# --- any value anywhere in real fixtures -------------------------------------------------------
FIXTURES = Path(__file__).parent / "fixtures" / "messages"
DOCS = [
    json.loads(line)
    for name in ("anthropic.jsonl", "per_turn.jsonl", "shapes.jsonl")
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    if line.strip()
] + [json.loads((FIXTURES / "openai_responses.json").read_text(encoding="utf-8"))]
ANY_JSON = mutation.json_values(
    ["", "Error: x", '{"error": 1}', "tool_use", "tool_result", "assistant", "user", "tool", "function"],
    ["role", "content", "type", "id", "tool_use_id", "tool_call_id", "tool_calls", "function_call",
     "name", "arguments", "input", "is_error", "messages", "timestamp", "stop_reason"],
)


PLACES = mutation.places(DOCS)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PLACES), ANY_JSON), min_size=1, max_size=4), st.sampled_from([None, "prefix", "json-error-key"]))
def test_any_value_anywhere_in_real_fixtures(tmp_path_factory: Any, edits: list[Any], error_when: Any) -> None:
    """Found 'tool_calls': true crashing the reader (8,000 examples pass locally now)."""
    docs = mutation.edited(DOCS, edits)
    path = tmp_path_factory.mktemp("fuzz") / "log.jsonl"
    path.write_text("".join(json.dumps(doc) + "\n" for doc in docs), encoding="utf-8")
    out = read(path, {"error_when": error_when} if error_when else {})  # never raises
    json.dumps(out.records)
    for record in out.records:  # whatever survives is a well-formed v1 record
        assert record["v"] == 1 and record["kind"] in ("tool_call", "loop_exit")
        assert isinstance(record["conversation_id"], str) and isinstance(record["prompt_id"], str)
    assert all(bad.line_no is None or bad.line_no >= 1 for bad in out.bad)


def test_tool_calls_that_are_not_a_list_are_ignored() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello", "tool_calls": True}]
    out = conversation_records(messages, conversation_id="c")
    assert [(r["kind"], r["exit_reason"]) for r in out.records] == [("loop_exit", "end_turn")]
