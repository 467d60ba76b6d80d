"""Collector records, field for field against the v1 spec (docs/records.md)."""

from __future__ import annotations

import hashlib
import json
from itertools import count

import pytest
from loopscope.collectors import (
    Collector,
    CollectorConfigError,
    MemorySink,
    args_fingerprint,
    canonical_json,
    format_ts,
    input_shape,
    openai_stop_reason,
)
from loopscope.collectors.records import LOOP_EXIT_FIELDS, TOOL_CALL_FIELDS

T0 = 1_795_305_600.0  # 2026-11-22T00:00:00Z


class Clocks:
    """Deterministic clocks: wall advances 1 s per read, perf 0.25 s per read."""

    def __init__(self) -> None:
        self.wall = count(0)
        self.perf = count(0)

    def wall_clock(self) -> float:
        return T0 + next(self.wall)

    def perf_clock(self) -> float:
        return next(self.perf) * 0.25


def make(**kw):
    sink = MemorySink()
    clocks = Clocks()
    ids = (f"p{i}" for i in count(1))
    col = Collector(sink, wall_clock=clocks.wall_clock, perf_clock=clocks.perf_clock, new_id=lambda: next(ids), **kw)
    return col, sink


def test_tool_call_and_loop_exit_records_field_for_field() -> None:
    col, sink = make()
    with col.prompt(conversation_id="c-1", agent="support", max_tool_calls=25, tags={"mode": "corrective"}) as loop:
        loop.model_response(stop_reason="tool_use", input_tokens=100, output_tokens=20)
        with loop.tool_call("toolu_1", "get_weather", {"city": "Paris", "days": 3}):
            pass
        loop.model_response(stop_reason="end_turn", input_tokens=150, output_tokens=30)
    fp = hashlib.sha256(b'{"city":"Paris","days":3}').hexdigest()
    # perf reads: prompt start 0, tool start 1, tool end 2 (0.25 s = 250 ms), exit 3 (750 ms).
    # wall reads: setup check 0, tool record 1, exit record 2.
    envelope = {
        "conversation_id": "c-1",
        "prompt_id": "p1",
        "agent": "support",
        "trace_id": None,
        "span_id": None,
        "tags": {"mode": "corrective"},
    }  # the same in both records
    assert sink.records == [
        {
            "v": 1,
            "kind": "tool_call",
            "ts": "2026-11-22T00:00:01.000000Z",
            **envelope,
            "tool_call_id": "toolu_1",
            "tool_name": "get_weather",
            "step": 0,
            "input_shape": {"city": "string", "days": "integer"},
            "args_fingerprint": fp,
            "outcome": "ok",
            "is_error": False,
            "attempts": 1,
            "latency_ms": 250.0,
            "error_type": None,
            "error_message": None,
            "replayed": False,
        },
        {
            "v": 1,
            "kind": "loop_exit",
            "ts": "2026-11-22T00:00:02.000000Z",
            **envelope,
            "exit_reason": "end_turn",
            "steps": 2,
            "tool_calls": 1,
            "tool_errors": 0,
            "max_tool_calls": 25,
            "input_tokens": 250,
            "output_tokens": 50,
            "duration_ms": 750.0,
            "error_type": None,
            "error_message": None,
        },
    ]
    assert tuple(sink.records[0]) == TOOL_CALL_FIELDS
    assert tuple(sink.records[1]) == LOOP_EXIT_FIELDS


def test_defaults_agent_default_no_tags_nulls() -> None:
    col, sink = make()
    loop = col.start_prompt(conversation_id="c-2", prompt_id="given")
    loop.close()
    (rec,) = sink.records
    assert "tags" not in rec
    assert rec["agent"] == "default"
    assert rec["prompt_id"] == "given"
    assert rec["exit_reason"] == "unknown"
    assert (rec["steps"], rec["input_tokens"], rec["output_tokens"], rec["max_tool_calls"]) == (0, None, None, None)


def test_generated_prompt_ids_are_short_and_readable_by_default() -> None:
    sink = MemorySink()
    col = Collector(sink)
    ids = {col.prompt(conversation_id="c").prompt_id for _ in range(1000)}
    assert len(ids) == 1000  # 40 random bits: no collision in a long conversation
    assert all(len(i) == 12 and i.startswith("p-") for i in ids)
    for i in ids:
        int(i[2:], 16)


def test_argument_values_are_never_written() -> None:
    col, sink = make()
    secret = "4111-1111-1111-1111"
    with col.prompt(conversation_id="c") as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("t1", "charge", {"card": secret, "amount_cents": 1999, "meta": {"note": "VALUE-X"}}):
            pass
        with loop.tool_call("t2", "charge", json.dumps({"card": secret, "items": ["VALUE-Y"]})):
            pass
    text = json.dumps(sink.records)
    for value in (secret, "1999", "VALUE-X", "VALUE-Y", "note"):
        assert value not in text
    assert sink.records[0]["input_shape"] == {"card": "string", "amount_cents": "integer", "meta": "object"}
    assert sink.records[1]["input_shape"] == {"card": "string", "items": "array"}


def test_shape_types_and_fingerprint_canonical() -> None:
    args = {"s": "x", "i": 1, "f": 1.5, "b": True, "a": [1], "o": {}, "n": None}
    assert input_shape(args) == {
        "s": "string",
        "i": "integer",
        "f": "number",
        "b": "boolean",
        "a": "array",
        "o": "object",
        "n": "null",
    }
    # Key order and whitespace do not matter; values do; non-ASCII is hashed as UTF-8, unescaped.
    assert args_fingerprint({"b": 1, "a": "é"}) == args_fingerprint('{ "a" : "é", "b" : 1 }')
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    assert args_fingerprint({"a": "é", "b": 1}) == hashlib.sha256('{"a":"é","b":1}'.encode()).hexdigest()
    assert args_fingerprint({"a": 1}) != args_fingerprint({"a": 2})
    assert args_fingerprint(None) is None
    assert args_fingerprint("not json {") is None and input_shape("not json {") == {}
    assert input_shape([1, 2]) == {} and args_fingerprint([1, 2]) == hashlib.sha256(b"[1,2]").hexdigest()


def test_arguments_are_copied_when_the_call_ends() -> None:
    col, sink = make()
    args = {"a": 1}
    with col.prompt(conversation_id="c") as loop, loop.tool_call("t", "x", args):
        pass
    args["b"] = "added later"
    assert sink.records[0]["input_shape"] == {"a": "integer"}


def test_outcomes_retried_transient_permanent_replayed() -> None:
    col, sink = make()
    with col.prompt(conversation_id="c") as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("ok", "t", {}) as call:
            pass
        with loop.tool_call("retried", "t", {}) as call:
            call.attempt_failed(ConnectionResetError("reset"))
            call.attempt_failed("503 Service Unavailable")
        with loop.tool_call("transient", "t", {}) as call:
            call.attempt_failed("503")
            call.attempt_failed("503")
            call.fail("Search is unavailable (503) after 3 attempts. Try again later.", "http_503", transient=True)
        with loop.tool_call("permanent", "t", {}) as call:
            call.fail("Invalid date format. Use YYYY-MM-DD.", "invalid_date_format")
        with loop.tool_call("raised", "t", {}, catch=True) as call:
            raise KeyError("room_type")
        with loop.tool_call("ok", "t", {}) as call:
            call.replayed(result="original")
        loop.model_response(stop_reason="end_turn")
    got = [
        (r["tool_call_id"], r["outcome"], r["is_error"], r["attempts"], r["error_type"], r["replayed"])
        for r in sink.records[:-1]
    ]
    assert got == [
        ("ok", "ok", False, 1, None, False),
        ("retried", "retried", False, 3, None, False),
        ("transient", "transient_fail", True, 3, "http_503", False),
        ("permanent", "permanent_fail", True, 1, "invalid_date_format", False),
        ("raised", "permanent_fail", True, 1, "KeyError", False),
        ("ok", "ok", False, 1, None, True),
    ]
    assert sink.records[4]["error_message"] == "'room_type'"
    assert sink.records[-1]["tool_errors"] == 3 and sink.records[-1]["tool_calls"] == 6


def test_exception_reraised_unchanged_by_default() -> None:
    col, sink = make()
    err = ValueError("boom")
    with pytest.raises(ValueError) as info, col.prompt(conversation_id="c") as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("t", "x", {}):
            raise err
    assert info.value is err
    tool, exit_ = sink.records
    assert (tool["outcome"], tool["is_error"], tool["error_type"], tool["error_message"]) == (
        "permanent_fail",
        True,
        "ValueError",
        "boom",
    )
    assert (exit_["exit_reason"], exit_["error_type"], exit_["error_message"]) == ("error", "ValueError", "boom")


def test_catch_true_swallows_and_exposes_error_text() -> None:
    col, sink = make()
    with col.prompt(conversation_id="c") as loop:
        with loop.tool_call("t", "x", {}, catch=True) as call:
            raise RuntimeError("password=hunter2 rejected")
        assert call.is_error and call.error_text == "password=[REDACTED] rejected"
    assert sink.records[-1]["exit_reason"] == "unknown"


def test_base_exceptions_are_recorded_but_never_caught() -> None:
    col, sink = make()
    with pytest.raises(KeyboardInterrupt), col.prompt(conversation_id="c") as loop:
        with loop.tool_call("t", "x", {}, catch=True):
            raise KeyboardInterrupt
    assert sink.records[0]["error_type"] == "KeyboardInterrupt"
    assert sink.records[1]["exit_reason"] == "error"


def test_parallel_calls_share_the_step_and_steps_advance() -> None:
    col, sink = make()
    with col.prompt(conversation_id="c") as loop:
        loop.model_response(stop_reason="tool_use")
        for i in range(3):
            with loop.tool_call(f"a{i}", "x", {}):
                pass
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("b", "x", {}):
            pass
        loop.model_response(stop_reason="end_turn")
    assert [r.get("step") for r in sink.records] == [0, 0, 0, 1, None]
    assert sink.records[-1]["steps"] == 3


def test_budget_helper_and_explicit_exit() -> None:
    col, sink = make()
    with col.prompt(conversation_id="c", max_tool_calls=2) as loop:
        loop.model_response(stop_reason="tool_use")
        assert not loop.over_budget() and loop.over_budget(3)
        for i in range(5):
            if loop.over_budget():
                loop.exit("budget_exceeded")
                break
            with loop.tool_call(f"t{i}", "x", {}):
                pass
        loop.close()  # no-op after exit
    assert [r["kind"] for r in sink.records] == ["tool_call", "tool_call", "loop_exit"]
    assert sink.records[-1]["exit_reason"] == "budget_exceeded"
    assert sink.records[-1]["max_tool_calls"] == 2


def test_explicit_exit_wins_over_a_later_exception() -> None:
    class BudgetExceeded(Exception):
        pass

    col, sink = make()
    with pytest.raises(BudgetExceeded), col.prompt(conversation_id="c", max_tool_calls=0) as loop:
        if loop.over_budget():
            loop.exit("budget_exceeded")
            raise BudgetExceeded
    assert [r["exit_reason"] for r in sink.records] == ["budget_exceeded"]


def test_last_stop_reason_is_the_exit_reason_kept_as_is() -> None:
    col, sink = make()
    with col.prompt(conversation_id="c") as loop:
        loop.model_response(stop_reason="tool_use")
        loop.model_response(stop_reason="pause_turn")
    assert sink.records[-1]["exit_reason"] == "pause_turn"
    assert openai_stop_reason("stop") == "end_turn" and openai_stop_reason("length") == "max_tokens"
    assert openai_stop_reason("weird") == "weird" and openai_stop_reason(None) is None


def test_exit_with_error_message_string() -> None:
    col, sink = make()
    loop = col.prompt(conversation_id="c")
    loop.exit("error", "upstream 500 from https://bob:s3cret@api.example.com/x", error_type="UpstreamError")
    rec = sink.records[0]
    assert rec["error_type"] == "UpstreamError"
    assert rec["error_message"] == "upstream 500 from https://bob:[REDACTED]@api.example.com/x"


def test_record_tool_call_for_frameworks() -> None:
    col, sink = make()
    loop = col.prompt(conversation_id="c")
    loop.model_response(stop_reason="tool_use")
    loop.record_tool_call(tool_call_id="t1", tool_name="x", arguments={"a": 1}, latency_ms=12.5)
    loop.record_tool_call(
        tool_call_id="t2",
        tool_name="x",
        is_error=True,
        error_message="Not found. Try search.",
        error_type="not_found",
        step=4,
    )
    loop.record_tool_call(tool_call_id="t3", tool_name="x", attempts=3)
    loop.record_tool_call(tool_call_id="t1", tool_name="x", replayed=True, outcome="ok")
    loop.close()
    got = [
        (r["tool_call_id"], r["step"], r["outcome"], r["is_error"], r["attempts"], r["latency_ms"], r["replayed"])
        for r in sink.records[:-1]
    ]
    assert got == [
        ("t1", 0, "ok", False, 1, 12.5, False),
        ("t2", 4, "permanent_fail", True, 1, 0.0, False),
        ("t3", 0, "retried", False, 3, 0.0, False),
        ("t1", 0, "ok", False, 1, 0.0, True),
    ]
    assert sink.records[1]["error_message"] == "Not found. Try search."
    assert sink.records[1]["args_fingerprint"] is None and sink.records[1]["input_shape"] == {}


def test_error_message_capped_at_2000_chars() -> None:
    col, sink = make()
    with col.prompt(conversation_id="c") as loop, loop.tool_call("t", "x", {}, catch=True):
        raise ValueError("x" * 10_000)
    msg = sink.records[0]["error_message"]
    assert len(msg) == 2000 and msg.endswith("[truncated]")


def test_redaction_can_be_turned_off_but_cap_stays() -> None:
    col, sink = make(redact=False)
    with col.prompt(conversation_id="c") as loop, loop.tool_call("t", "x", {}, catch=True):
        raise ValueError("token=abc123 " + "y" * 3000)
    msg = sink.records[0]["error_message"]
    assert msg.startswith("token=abc123 ") and len(msg) == 2000


@pytest.mark.parametrize(
    ("epoch", "text"),
    [
        (0.0, "1970-01-01T00:00:00.000000Z"),
        (T0 + 0.5, "2026-11-22T00:00:00.500000Z"),
        (T0 + 0.9999996, "2026-11-22T00:00:01.000000Z"),
        (T0 + 59.000001, "2026-11-22T00:00:59.000001Z"),
    ],
)
def test_timestamp_format(epoch: float, text: str) -> None:
    assert format_ts(epoch) == text


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"wall_clock": "now"}, "wall_clock must be callable"),
        ({"perf_clock": lambda: "x"}, "perf_clock"),
        ({"new_id": None}, "new_id must be callable"),
        ({"max_error_chars": 0}, "max_error_chars"),
    ],
)
def test_bad_configuration_fails_at_setup(kwargs: dict, match: str) -> None:
    with pytest.raises(CollectorConfigError, match=match):
        Collector(MemorySink(), **kwargs)


def test_sink_must_look_like_a_sink() -> None:
    with pytest.raises(CollectorConfigError, match="sink must have"):
        Collector(object())


def test_duck_typed_emit_only_sink_gets_completed_records() -> None:
    class Box:
        def __init__(self) -> None:
            self.got = []

        def emit(self, record: dict) -> None:
            self.got.append(record)

        def flush(self) -> None:
            pass

        def close(self) -> None:
            pass

        def stats(self) -> dict:
            return {"written": len(self.got)}

    box = Box()
    col = Collector(box)
    with col.prompt(conversation_id="c") as loop, loop.tool_call("t", "x", {"a": 1}):
        pass
    assert box.got[0]["input_shape"] == {"a": "integer"} and box.got[0]["ts"].endswith("Z")
    assert col.stats.emitted == 2 and col.stats["written"] == 2


def test_a_tool_that_edits_its_arguments_does_not_change_the_record() -> None:
    from loopscope.collectors import args_fingerprint

    sink = MemorySink()
    col = Collector(sink)
    args = {"city": "Paris", "date": "2026-11-02"}
    with col.prompt(conversation_id="c") as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("t1", "book", args):
            args.pop("date")  # the tool normalises its input in place
            args["nights"] = 2
    rec = sink.records[0]
    assert rec["input_shape"] == {"city": "string", "date": "string"}
    assert rec["args_fingerprint"] == args_fingerprint({"city": "Paris", "date": "2026-11-02"})


def test_unprintable_ids_never_raise_into_the_host() -> None:
    class NoStr:
        def __str__(self) -> str:
            raise RuntimeError("no str")

    sink = MemorySink()
    col = Collector(sink, strict=False)
    with col.prompt(conversation_id=NoStr(), agent=NoStr()) as loop:
        loop.model_response(stop_reason="end_turn")
    assert col.stats.internal_errors == 1
    (rec,) = sink.records
    assert rec["kind"] == "loop_exit" and rec["agent"] == "default" and rec["prompt_id"].startswith("p-")
