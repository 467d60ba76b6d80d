"""Conversation message arrays -> v1 records: the derivation rules, on fixtures with known answers.

The fixtures in tests/fixtures/messages/ were written for these tests; the
expected values below were worked out by reading their messages (the comments
say which message is which).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.ingest.messages.errors import classify, parse_error_when
from loopscope.analyses.ingest.messages.records import conversation_records
from loopscope.collectors import shape
from loopscope.collectors.redact import clean_error_text
from loopscope.analyses.ingest.messages import parse_selector, read

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "messages"


def calls(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(conversation, prompt, id, name, step, is_error) of each tool_call record, in order."""
    return [
        (r["conversation_id"], r["prompt_id"], r["tool_call_id"], r["tool_name"], r["step"], r["is_error"])
        for r in records
        if r["kind"] == "tool_call"
    ]


def exits(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(conversation, prompt, exit_reason, exit_source, steps, tool_calls, tool_errors) of each loop_exit."""
    return [
        (r["conversation_id"], r["prompt_id"], r["exit_reason"], r["exit_source"], r["steps"], r["tool_calls"], r["tool_errors"])
        for r in records
        if r["kind"] == "loop_exit"
    ]


def violations(out: Any) -> list[tuple[Any, ...]]:
    return [(v["conversation_id"], v["prompt_id"], v["tool_call_id"], v["kind"]) for v in out.violations]


class TestAnthropicShape:
    """tool_use blocks, tool_result blocks with is_error, stored stop_reason, no timestamps."""

    def test_records(self) -> None:
        out = read(FIXTURES / "anthropic.jsonl", {})
        assert calls(out.records) == [
            ("a-1", "m1", "toolu_01", "get_weather", 0, False),
            ("a-1", "m1", "toolu_02", "get_weather", 0, True),  # parallel with toolu_01: same step
            ("a-1", "m1", "toolu_03", "get_weather", 1, False),
            ("a-1", "m7", "toolu_04", "book_table", 0, True),
            ("a-2", "m0", "toolu_10", "charge_card", 0, False),
            ("a-3", "m0", "toolu_20", "search_docs", 0, False),
        ]
        assert exits(out.records) == [
            ("a-1", "m1", "end_turn", "stored", 3, 3, 1),
            ("a-1", "m7", "max_tokens", "stored", 2, 1, 1),
            # a-2 m0 ends on a pending call: open, no loop_exit
            ("a-3", "m0", "end_turn", "inferred", 2, 1, 0),
            ("a-3", "m4", "end_turn", "inferred", 1, 0, 0),  # an image-only user message is a prompt
        ]
        assert all(r["exit_inferred"] == (r["exit_source"] == "inferred") for r in out.records if r["kind"] == "loop_exit")
        assert violations(out) == [
            ("a-2", "m0", "toolu_11", "missing_result"),  # seed 001's half-executed parallel batch
            ("a-3", "m0", "toolu_99", "unknown_result_id"),
        ]
        assert out.bad == []

    def test_fields_of_an_error(self) -> None:
        out = read(FIXTURES / "anthropic.jsonl", {})
        rome = next(r for r in out.records if r.get("tool_call_id") == "toolu_02")
        assert rome["outcome"] == "permanent_fail"
        assert rome["attempts"] == 1
        assert rome["replayed"] is False
        assert rome["error_message"] == "Error: city 'Rome' is ambiguous; pass an ISO 3166-2 code such as IT-RM"
        assert rome["error_source"] == "flag"
        assert rome["input_shape"] == {"city": "string", "units": "string"}
        canonical = json.dumps({"units": "C", "city": "Rome"}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert rome["args_fingerprint"] == hashlib.sha256(canonical.encode()).hexdigest()
        # no stored times: 1970-01-01 + message index seconds, marked synthetic (the result is message 3)
        assert rome["ts"] == "1970-01-01T00:00:03.000000Z"
        assert rome["ts_synthetic"] is True
        assert rome["latency_ms"] is None
        ok = next(r for r in out.records if r.get("tool_call_id") == "toolu_01")
        assert ok["error_message"] is None and ok["outcome"] == "ok"


class TestOpenAIShape:
    """tool_calls with JSON-string arguments, role tool results, finish_reason, epoch timestamps."""

    def test_records(self) -> None:
        out = read(FIXTURES / "openai.json", {})
        assert calls(out.records) == [
            ("o-1", "m1", "call_b", "get_order", 0, False),  # results may come in any order within a batch
            ("o-1", "m1", "call_a", "get_order", 0, False),
            ("o-1", "m6", "call_d", "get_order", 1, False),
            ("o-1", "m6", "call_c", "cancel_order", 0, False),
            ("o-2", "m0", "call_e", "list_tickets", 0, False),
        ]
        assert exits(out.records) == [
            ("o-1", "m1", "end_turn", "stored", 2, 2, 0),  # finish_reason "stop"
            ("o-1", "m6", "max_tokens", "stored", 3, 2, 0),  # finish_reason "length"
        ]
        assert violations(out) == [
            ("o-1", "m6", "call_d", "invalid_arguments"),
            ("o-1", "m6", "call_c", "result_out_of_order"),
        ]

    def test_times_and_tokens(self) -> None:
        out = read(FIXTURES / "openai.json", {})
        first = out.records[0]
        assert first["ts"] == "2025-11-21T00:00:03.000000Z"  # created: 1763683200 + 3
        assert "ts_synthetic" not in first
        assert first["latency_ms"] == 1000.0  # result time - time of the response that asked
        exit_m1 = next(r for r in out.records if r["kind"] == "loop_exit")
        assert exit_m1["duration_ms"] == 6000.0
        assert exit_m1["stop_reason_stored"] == "stop"
        bad_args = next(r for r in out.records if r.get("tool_call_id") == "call_d")
        assert bad_args["args_fingerprint"] is None and bad_args["input_shape"] == {}


class TestOpenAIResponsesItems:
    """An OpenAI Responses API item list (an OpenAI Agents SDK session): model items folded into responses."""

    def test_records(self) -> None:
        out = read(FIXTURES / "openai_responses.json", {"error_when": "prefix"})
        conv = "messages/openai_responses.json#1"
        assert calls(out.records) == [
            (conv, "m0", "call_r1", "refund_order", 0, True),  # items 1-3: one response, two parallel calls
            (conv, "m0", "call_r2", "get_balance", 0, False),
            (conv, "m0", "call_r3", "refund_to_gift_card", 1, False),  # item 6: the next response
            (conv, "m9", "call_r4", "close_account", 0, True),
        ]
        assert exits(out.records) == [(conv, "m0", "end_turn", "inferred", 3, 3, 1), (conv, "m9", "end_turn", "inferred", 2, 1, 1)]
        assert out.violations == [] and out.bad == []


class TestErrorsMarkedInText:
    """--error-when conventions on logs with no error flag."""

    def test_flag_default_counts_no_error_but_keeps_the_text(self) -> None:
        out = read(FIXTURES / "openai_text_errors.jsonl", {})
        assert not any(r.get("is_error") for r in out.records)
        texty = [r["tool_call_id"] for r in out.records if r.get("text_reports_error")]
        assert texty == ["call_1", "call_4", "call_5"]
        first = next(r for r in out.records if r.get("tool_call_id") == "call_1")
        assert first["error_message"] == "Error: 2 contacts named Bob; pass the email address"

    def test_prefix(self) -> None:
        out = read(FIXTURES / "openai_text_errors.jsonl", {"error_when": "prefix"})
        assert calls(out.records) == [
            ("t-1", "m0", "call_1", "find_contact", 0, True),
            ("t-1", "m0", "call_2", "find_contact", 1, False),
            ("t-1", "m0", "call_3", "transfer", 2, False),  # "ok: ..." is not an error
            ("t-2", "m0", "call_4", "delete_file", 0, True),
            ("t-2", "m0", "call_5", "delete_file", 1, True),
        ]
        assert {r["error_source"] for r in out.records if r.get("is_error")} == {"prefix"}

    def test_json_error_key_on_a_per_turn_log(self) -> None:
        out = read(FIXTURES / "per_turn.jsonl", {"error_when": ["json-error-key"]})
        assert calls(out.records) == [
            ("s-1", "m0", "call_p1", "search_flights", 0, True),
            ("s-1", "m0", "call_p2", "search_flights", 1, False),  # "error": null is no error
            ("s-1", "m6", "call_p3", "book_flight", 0, True),  # turn 2 of s-1 appended after turn 1
            ("s-2", "m0", "call_q1", "get_balance", 0, False),  # the snapshot of turn 2 replaced turn 1
            ("s-2", "m4", "call_q2", "get_balance", 0, True),
        ]
        assert [(c, p) for c, p, *_ in exits(out.records)] == [("s-1", "m0"), ("s-1", "m6"), ("s-2", "m0")]
        types = {r["tool_call_id"]: r["error_type"] for r in out.records if r.get("is_error")}
        assert types == {"call_p1": "invalid_date", "call_p3": None, "call_q2": "not_available"}
        # s-1's lines carry a time, its messages none: each message takes its line's time
        s1 = [(r["ts"], r.get("ts_from_line"), r.get("latency_ms"), r.get("duration_ms")) for r in out.records if r["conversation_id"] == "s-1"]
        assert s1 == [("2025-11-20T10:01:00.000000Z", True, None, None)] * 3 + [("2025-11-20T10:02:00.000000Z", True, None, None)] * 2

    def test_regex_and_flag_wins(self) -> None:
        rules = parse_error_when(["regex:^FAILED\\b"])
        assert classify("FAILED to connect", None, rules).is_error
        assert not classify("Error: x", None, rules).is_error
        verdict = classify("Error: shown as success", False, parse_error_when("prefix"))
        assert (verdict.is_error, verdict.text_reports_error) == (False, True)  # the record keeps the flag
        assert classify("all good", True, rules).is_error

    @pytest.mark.parametrize("value", ["nope", "regex:(unclosed"])
    def test_bad_convention_is_a_user_error(self, value: str) -> None:
        with pytest.raises(LoopscopeError) as exc:
            parse_error_when(value)
        assert exc.value.hint


def tau2_message(role: str, **fields: Any) -> dict[str, Any]:
    return {"role": role, "content": fields.pop("content", None), **fields}


class TestTau2Rules:
    """Simulated-user tools, greetings, termination_reason."""

    def conversation(self, termination: str) -> Any:
        call = {"id": "c1", "name": "book", "arguments": {"n": 1}, "requestor": "assistant"}
        user_tool = {"id": "u1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}
        messages = [
            tau2_message("assistant", content="Hi! How can I help you today?", timestamp="2025-01-01T00:00:00"),  # 0 greeting
            tau2_message("user", content="Book it", timestamp="2025-01-01T00:00:01"),  # 1 prompt m1
            tau2_message("user", tool_calls=[user_tool], timestamp="2025-01-01T00:00:02"),  # 2 the user's own tool
            tau2_message("tool", id="u1", content="ok", requestor="user", error=False, timestamp="2025-01-01T00:00:03"),  # 3
            tau2_message("assistant", tool_calls=[call], timestamp="2025-01-01T00:00:04"),  # 4 step 0
            tau2_message("tool", id="c1", content="Error: Too many reservations", requestor="assistant", error=True,
                         timestamp="2025-01-01T00:00:05.5"),  # 5
            tau2_message("assistant", tool_calls=[dict(call, id="c2")], timestamp="2025-01-01T00:00:06"),  # 6 step 1
            tau2_message("tool", id="c2", content="Error: Too many reservations", requestor="assistant", error=True,
                         timestamp="2025-01-01T00:00:07"),  # 7: the harness stops here
        ]
        return conversation_records(messages, conversation_id="sim-1", agent="llm_agent", termination_reason=termination)

    def test_too_many_errors_closes_the_last_prompt(self) -> None:
        out = self.conversation("too_many_errors")
        assert calls(out.records) == [("sim-1", "m1", "c1", "book", 0, True), ("sim-1", "m1", "c2", "book", 1, True)]
        assert exits(out.records) == [("sim-1", "m1", "error", "termination_reason", 2, 2, 2)]
        exit_record = out.records[-1]
        assert exit_record["error_type"] == "too_many_errors"
        assert exit_record["ts"] == "2025-01-01T00:00:07.000000Z"  # its last message
        assert exit_record["duration_ms"] == 6000.0
        assert out.records[0]["ts"] == "2025-01-01T00:00:05.500000Z"  # naive times are UTC
        assert out.records[0]["latency_ms"] == 1500.0
        assert out.violations == []

    def test_max_steps_is_a_budget_exit_and_user_stop_leaves_it_open(self) -> None:
        assert exits(self.conversation("max_steps").records)[0][2] == "budget_exceeded"
        assert exits(self.conversation("user_stop").records) == []

    def test_greeting_that_calls_tools_is_a_prompt(self) -> None:
        messages = [
            {"role": "assistant", "tool_calls": [{"id": "g1", "name": "whoami", "arguments": {}}]},
            {"role": "tool", "id": "g1", "content": "guest", "error": False},
            {"role": "assistant", "content": "Hello guest!"},
        ]
        out = conversation_records(messages, conversation_id="c")
        assert calls(out.records) == [("c", "m0", "g1", "whoami", 0, False)]
        assert exits(out.records) == [("c", "m0", "end_turn", "inferred", 2, 1, 0)]

    def test_stop_reported_with_tool_calls_does_not_end_the_loop(self) -> None:
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
             "finish_reason": "stop"},
            {"role": "tool", "tool_call_id": "x", "content": "Error: boom"},
        ]
        out = conversation_records(messages, conversation_id="c", rules=parse_error_when("prefix"))
        assert exits(out.records) == []  # open: the error is 'open', not 'gave_up'
        cut = [dict(messages[1], finish_reason="length")]
        out = conversation_records(messages[:1] + cut, conversation_id="c")
        assert exits(out.records) == [("c", "m0", "max_tokens", "stored", 1, 0, 0)]

    def test_error_message_is_capped_and_redacted_like_the_collectors(self) -> None:
        long_text = "Error: token=abc123secret " + "x" * 5000
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": long_text, "is_error": True}]},
        ]
        record = conversation_records(messages, conversation_id="c").records[0]
        assert record["error_message"] == clean_error_text(long_text)
        assert len(record["error_message"]) == 2000
        assert record["error_message"].startswith("Error: token=[REDACTED] xxx")
        assert record["error_message"].endswith("... [truncated]")

    def test_refusal_and_pause_turn(self) -> None:
        refused = [
            {"role": "user", "content": "do it"},
            {"role": "assistant", "content": None, "refusal": "I can't help with that.", "finish_reason": "stop"},
        ]
        assert exits(conversation_records(refused, conversation_id="c").records) == [("c", "m0", "refusal", "stored", 1, 0, 0)]
        paused = [{"role": "user", "content": "search"}, {"role": "assistant", "content": [{"type": "text", "text": "..."}], "stop_reason": "pause_turn"}]
        assert exits(conversation_records(paused, conversation_id="c").records) == []  # paused, never resumed: open

    def test_reused_id_is_kept_for_the_store_to_judge(self) -> None:
        call = {"id": "same", "name": "transfer_to_human_agents", "arguments": {"summary": "x"}}
        messages = [{"role": "user", "content": "help"}]
        for _ in range(3):
            messages += [{"role": "assistant", "tool_calls": [call]}, {"role": "tool", "id": "same", "content": "Transfer successful"}]
        out = conversation_records(messages, conversation_id="c")
        assert [r["tool_call_id"] for r in out.records] == ["same"] * 3
        assert [r["step"] for r in out.records] == [0, 1, 2]
        assert out.violations == []  # the store counts these repeats of one call as replays


def _one_call(arguments: object, shape_key: str = "tau2") -> dict:
    call = (
        {"id": "t", "name": "f", "arguments": arguments}
        if shape_key == "tau2"
        else {"id": "t", "type": "function", "function": {"name": "f", "arguments": arguments}}
    )
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "t", "content": "ok"},
    ]
    return conversation_records(messages, conversation_id="c").records[0]


class TestFingerprint:
    """The reader uses the collector's shape and digest (loopscope.collectors.shape), not a copy."""

    @pytest.mark.parametrize(
        "args",
        [
            {"b": [1, 2.5, None], "a": "é"},
            {"city": "Zürich", "days": 3, "opts": {"z": True, "a": None}},
            {},
            {"deep": [[[[{"x": 1}]]]]},
        ],
    )
    def test_object_and_json_string_arguments_match_the_collector(self, args: dict) -> None:
        expected = shape.shape_and_fingerprint(args)
        as_object = _one_call(args)
        as_string = _one_call(json.dumps(args), shape_key="openai")
        assert (as_object["input_shape"], as_object["args_fingerprint"]) == expected
        assert (as_string["input_shape"], as_string["args_fingerprint"]) == expected

    def test_digest_is_the_canonical_json(self) -> None:
        record = _one_call({"b": [1, 2.5, None], "a": "é"})
        assert record["args_fingerprint"] == hashlib.sha256('{"a":"é","b":[1,2.5,null]}'.encode()).hexdigest()
        assert record["input_shape"] == {"a": "string", "b": "array"}


class TestFileShapes:
    """Selectors, auto-detection, bad input."""

    def test_selector(self) -> None:
        assert parse_selector("simulations[].messages") == ([("simulations", True)], ["messages"])
        assert parse_selector("messages") == ([], ["messages"])
        assert parse_selector("data.runs[].chat.history") == ([("data", False), ("runs", True)], ["chat", "history"])
        with pytest.raises(LoopscopeError):
            parse_selector("runs[0].messages")

    def test_messages_key_and_id_key(self, tmp_path: Path) -> None:
        doc = {"runs": [{"meta": {"run": "r-9"}, "chat": {"history": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello", "stop_reason": "end_turn"},
        ]}}]}
        path = tmp_path / "runs.json"
        path.write_text(json.dumps(doc))
        out = read(path, {"messages_key": "runs[].chat.history", "id_key": "meta.run", "agent_name": "helper"})
        assert [(r["conversation_id"], r["prompt_id"], r["agent"], r["exit_reason"]) for r in out.records] == [
            ("r-9", "m0", "helper", "end_turn")
        ]
        missing = read(path, {"messages_key": "runs[].nothing"})
        assert missing.records == [] and "selects no messages" in missing.bad[0].reason

    def test_bare_list_and_per_message_log(self, tmp_path: Path) -> None:
        bare = tmp_path / "bare.json"
        bare.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]))
        assert [r["conversation_id"] for r in read(bare, {}).records] == [f"{tmp_path.name}/bare.json#1"]
        log = tmp_path / "log.jsonl"
        lines = [
            {"session_id": "x", "role": "user", "content": "q"},
            {"session_id": "y", "role": "user", "content": "q"},
            {"session_id": "x", "role": "assistant", "content": "a"},
            {"session_id": "y", "role": "assistant", "content": "a"},
        ]
        log.write_text("".join(json.dumps(line) + "\n" for line in lines))
        assert [r["conversation_id"] for r in read(log, {}).records] == ["x", "y"]

    def test_gzip_separators_and_bad_bytes(self, tmp_path: Path) -> None:
        import gzip

        conv = {"id": "c", "messages": [{"role": "user", "content": "line\u2028sep\u0085x"}, {"role": "assistant", "content": "a"}]}
        text = json.dumps(conv, ensure_ascii=False) + "\n"
        path = tmp_path / "conv.jsonl.gz"
        path.write_bytes(gzip.compress((text + text.replace('"c"', '"d"')).encode()))
        out = read(path, {})
        assert [r["conversation_id"] for r in out.records] == ["c", "d"] and out.bad == []
        mixed = tmp_path / "mixed.jsonl"
        mixed.write_bytes(text.encode() + b'{"id": "e", "messages": ["\xff"]}\n')
        out = read(mixed, {})
        assert [r["conversation_id"] for r in out.records] == ["c"]
        assert [(b.line_no, b.reason) for b in out.bad] == [(2, "not UTF-8 (byte 0xff at byte 27 of the line)")]

    def test_bad_lines_are_reported_with_their_number(self, tmp_path: Path) -> None:
        path = tmp_path / "mixed.jsonl"
        good = {"id": "c", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
        path.write_text(json.dumps(good) + "\n{not json\n" + json.dumps({"foo": 1}) + "\n")
        out = read(path, {})
        assert len(out.records) == 1
        assert [(b.line_no, b.reason.split(":")[0]) for b in out.bad] == [(2, "not JSON"), (3, "no conversation found (no messages list at a known place); pass --messages-key, e.g. simulations[].messages")]
        records = tmp_path / "records.jsonl"
        records.write_text(json.dumps({"v": 1, "kind": "loop_exit", "ts": "2026-01-01T00:00:00Z"}) + "\n")
        assert "--input-format records" in read(records, {}).bad[0].reason
        broken = tmp_path / "broken.json"
        broken.write_text('{\n  "messages": [\n    {"role": "user",\n')
        out = read(broken, {})
        assert out.records == [] and len(out.bad) == 1 and out.bad[0].reason.startswith("not JSON")
