"""Model-call logs (a gateway's or proxy's line per model call: history sent + reply) through the CLI.

tests/fixtures/calllog/litellm_calls.jsonl is LiteLLM 1.110.2's own StandardLoggingPayload of a
scripted loop (make_litellm_log.py says what the loop did; the counts below are from it, by hand).
Before this reader, the same file gave 4 prompts (3 open), 7 tool calls and 2 replays: every
line read as its own conversation, each tool call counted once per later line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.cli.app import app

HERE = Path(__file__).resolve().parent
LITELLM = HERE / "fixtures" / "calllog" / "litellm_calls.jsonl"

runner = CliRunner()


def run(*args: str) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def figures(path: Path, *options: str) -> dict[str, Any]:
    m = run("metrics", "--db", ":memory:", "--format", "json", *options, str(path))
    return {k: m[k] for k in ("prompts", "open_prompts", "tool_calls", "errors", "recovered_errors", "replays")}


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_litellm_log_counts_each_call_once(tmp_path: Path) -> None:
    # s-refund: lookup_order (Error), lookup_order (ok), answer; refund (ok), answer -> 2 prompts, 3 calls.
    # no session: get_weather x2 in one reply (ok, Error), answer -> 1 prompt, 2 calls; its second model
    # call is logged twice (same history): not two more prompts, no call counted twice.
    assert figures(LITELLM, "--error-when", "prefix") == {
        "prompts": 3, "open_prompts": 0, "tool_calls": 5, "errors": 2, "recovered_errors": 1, "replays": 0,
    }
    load = run("load", "--db", "s.duckdb", "--format", "json", "--error-when", "prefix", str(LITELLM))
    assert (load["tool_calls"], load["loop_exits"], load["quarantined"]) == (5, 3, 0)
    rows = run("unrecovered", "--db", "s.duckdb", "--format", "json")
    # the conversation is named by LiteLLM's trace id (the session id the loop sent, or its own)
    assert [(r["tool_name"], r["error_message"], r["class"]) for r in rows] == [
        ("get_weather", "Error: rate limited", "gave_up")]
    import duckdb

    con = duckdb.connect("s.duckdb", read_only=True)
    try:
        kinds = sorted(con.execute("SELECT kind FROM protocol_violations").fetchall())
        conversations = con.execute("SELECT DISTINCT conversation_id FROM tool_calls ORDER BY 1").fetchall()
        synthetic = con.execute("SELECT count(*) FROM tool_calls WHERE ts < TIMESTAMP '1971-01-01'").fetchone()[0]
    finally:
        con.close()
    # the retried call (a branch: read from its branch point, where it adds no call) and the failed one
    assert ("call_log_branch",) in kinds and ("call_log_no_reply",) in kinds
    assert ("s-refund",) in conversations and len(conversations) == 2
    assert synthetic == 0  # times from startTime / endTime


def _exit_reasons(db: str) -> list[Any]:
    """The stored loop exits' (exit_reason, error_type)."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        return con.execute("SELECT exit_reason, error_type FROM loop_exits").fetchall()
    finally:
        con.close()


def _exits_and_calls(db: str) -> tuple[list[Any], int]:
    """The stored loop exits' reasons and the number of stored tool calls."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        return (con.execute("SELECT exit_reason FROM loop_exits").fetchall(),
                con.execute("SELECT count(*) FROM tool_calls").fetchone()[0])
    finally:
        con.close()


def _openai_call(history: list[dict[str, Any]], reply: dict[str, Any], finish: str, **extra: Any) -> dict[str, Any]:
    return {"request": {"model": "gpt-4o", "messages": history},
            "response": {"choices": [{"index": 0, "message": reply, "finish_reason": finish}]}, **extra}


def _tc(call_id: str, name: str, args: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


USER = {"role": "user", "content": "book it"}


def test_reply_reserialized_by_the_client_still_threads(tmp_path: Path) -> None:
    # The reply comes back with content null and compact arguments; the client re-sends it with
    # content "" and spaced arguments, and drops `refusal`: the same message.
    a1 = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [_tc("c1", "search", '{"q":"x"}')]}
    a1_sent = {"role": "assistant", "content": "", "tool_calls": [_tc("c1", "search", '{"q": "x"}')]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": "Error: timeout"}
    a2 = {"role": "assistant", "content": None, "tool_calls": [_tc("c2", "search", '{"q":"y"}')]}
    t2 = {"role": "tool", "tool_call_id": "c2", "content": "3 flights"}
    done = {"role": "assistant", "content": "Booked."}
    path = _write(tmp_path / "proxy.jsonl", [
        _openai_call([USER], a1, "tool_calls", timestamp="2026-11-20T10:00:00Z"),
        _openai_call([USER, a1_sent, t1], a2, "tool_calls", timestamp="2026-11-20T10:00:02Z"),
        _openai_call([USER, a1_sent, t1, a2, t2], done, "stop", timestamp="2026-11-20T10:00:04Z"),
    ])
    assert figures(path, "--error-when", "prefix") == {
        "prompts": 1, "open_prompts": 0, "tool_calls": 2, "errors": 1, "recovered_errors": 1, "replays": 0,
    }


def test_anthropic_responses_and_a_second_prompt(tmp_path: Path) -> None:
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "tu1", "name": "refund", "input": {"o": 1}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "is_error": True,
                                           "content": "order 1 is not refundable"}]}
    answer = {"role": "assistant", "content": [{"type": "text", "text": "I cannot refund it."}]}
    again = {"role": "user", "content": "try order 2"}
    use2 = {"role": "assistant", "content": [{"type": "tool_use", "id": "tu2", "name": "refund", "input": {"o": 2}}]}
    ok2 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu2", "content": "refunded"}]}

    def call(history: list[dict[str, Any]], reply: dict[str, Any], stop: str) -> dict[str, Any]:
        return {"request_body": {"model": "claude", "messages": history},
                "response_body": {"type": "message", **reply, "stop_reason": stop}, "session_id": "sess-9"}

    path = _write(tmp_path / "anthropic.jsonl", [
        call([USER], use, "tool_use"),
        call([USER, use, result], answer, "end_turn"),
        call([USER, use, result, answer, again], use2, "tool_use"),
        call([USER, use, result, answer, again, use2, ok2], {"role": "assistant", "content": "Done."}, "end_turn"),
    ])
    # prompt 1: refund (error, never recovered: the model gave up); prompt 2: refund (ok)
    assert figures(path) == {
        "prompts": 2, "open_prompts": 0, "tool_calls": 2, "errors": 1, "recovered_errors": 0, "replays": 0,
    }
    rows = run("unrecovered", "--db", ":memory:", "--format", "json", str(path))
    assert [(r["conversation_id"], r["class"]) for r in rows] == [("sess-9", "gave_up")]


def test_conversations_that_open_alike_stay_apart(tmp_path: Path) -> None:
    # Two runs of the same scheduled prompt, no session ids: the second's first call re-sends what the
    # first's did. Nothing of the first has a tool call yet, so it is another conversation, read whole.
    a = {"role": "assistant", "content": None, "tool_calls": [_tc("r1", "report")]}
    b = {"role": "assistant", "content": None, "tool_calls": [_tc("r2", "report")]}
    path = _write(tmp_path / "cron.jsonl", [
        _openai_call([USER], a, "tool_calls"),
        _openai_call([USER, a, {"role": "tool", "tool_call_id": "r1", "content": "ok"}], {"role": "assistant", "content": "sent"}, "stop"),
        _openai_call([USER], b, "tool_calls"),
        _openai_call([USER, b, {"role": "tool", "tool_call_id": "r2", "content": "ok"}], {"role": "assistant", "content": "sent"}, "stop"),
    ])
    assert figures(path) == {
        "prompts": 2, "open_prompts": 0, "tool_calls": 2, "errors": 0, "recovered_errors": 0, "replays": 0,
    }


def test_a_branch_after_tool_calls_counts_them_once(tmp_path: Path) -> None:
    # call 2 is sent twice (a regenerate); the conversation goes on from the second reply
    a1 = {"role": "assistant", "content": None, "tool_calls": [_tc("c1", "search")]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": "found"}
    first = {"role": "assistant", "content": None, "tool_calls": [_tc("c2", "book")]}
    second = {"role": "assistant", "content": None, "tool_calls": [_tc("c3", "book")]}
    t3 = {"role": "tool", "tool_call_id": "c3", "content": "booked"}
    path = _write(tmp_path / "branch.jsonl", [
        _openai_call([USER], a1, "tool_calls"),
        _openai_call([USER, a1, t1], first, "tool_calls"),
        _openai_call([USER, a1, t1], second, "tool_calls"),
        _openai_call([USER, a1, t1, second, t3], {"role": "assistant", "content": "done"}, "stop"),
    ])
    m = figures(path)
    # search once (not once per branch); book c3 once, as the branch's own conversation from the
    # branch point; c2 was never run (no result): no record
    assert (m["tool_calls"], m["replays"]) == (2, 0)
    load = run("load", "--db", "b.duckdb", "--format", "json", str(path))
    assert load["protocol_violations"] >= 1


def test_a_failed_model_call_ends_the_loop_and_keeps_its_results(tmp_path: Path) -> None:
    # the tool ran and its result was sent, but the model call carrying it failed: the call counts,
    # and the loop ended on an error. A retry of the failed call that succeeds would go on instead.
    a1 = {"role": "assistant", "content": None, "tool_calls": [_tc("c1", "deploy")]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": "deployed"}
    failed = {"request": {"messages": [USER, a1, t1]}, "response": {"error": {"message": "overloaded"}},
              "status": "failure"}
    path = _write(tmp_path / "failed.jsonl", [_openai_call([USER], a1, "tool_calls"), failed])
    assert figures(path) == {
        "prompts": 1, "open_prompts": 0, "tool_calls": 1, "errors": 0, "recovered_errors": 0, "replays": 0,
    }
    run("load", "--db", "f.duckdb", "--format", "json", str(path))
    assert _exit_reasons("f.duckdb") == [("error", "model_call_failed")]
    retried = _write(tmp_path / "retried.jsonl", [
        _openai_call([USER], a1, "tool_calls"), failed,
        _openai_call([USER, a1, t1], {"role": "assistant", "content": "Deployed."}, "stop"),
    ])
    run("load", "--db", "r.duckdb", "--format", "json", str(retried))
    assert _exits_and_calls("r.duckdb") == ([("end_turn",)], 1)


def test_a_conversation_with_a_final_response_field_is_still_a_conversation(tmp_path: Path) -> None:
    # {"messages": [...], "response": "text"}: not a model-call line (the response is no reply the
    # reader knows, nor a failure): read as a conversation, as before
    a1 = {"role": "assistant", "content": None, "tool_calls": [_tc("c1", "search")]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": "found"}
    path = _write(tmp_path / "conv.jsonl", [
        {"id": "k1", "messages": [USER, a1, t1, {"role": "assistant", "content": "ok"}], "response": "ok"}])
    assert figures(path)["tool_calls"] == 1


# -- OpenAI Responses API calls ---------------------------------------------------------------------
# tests/fixtures/calllog/responses_full.jsonl and responses_chained.jsonl: the real openai SDK's
# request and response bodies of one scripted loop (make_responses_log.py says what it did), every
# call sending the whole input, or only its new items with previous_response_id. By hand, conversation
# "s-refund": prompt 1 lookup_order call_1 ("Error: no order A-17 ..."), lookup_order call_2 (ok),
# refund call_3 (ok) + notify call_4 ("Error: mail server ...") in one response, a text answer;
# prompt 2 delete_order call_5 (ok), a text answer: 2 prompts, 5 calls, 2 errors (call_1 recovered by
# call_2, notify gave up), 6 model calls. Before this reader: 0 records, all 6 lines quarantined.

RESPONSES_FULL = HERE / "fixtures" / "calllog" / "responses_full.jsonl"
RESPONSES_CHAINED = HERE / "fixtures" / "calllog" / "responses_chained.jsonl"
RESPONSES_FIGURES = {"prompts": 2, "open_prompts": 0, "tool_calls": 5, "errors": 2, "recovered_errors": 1, "replays": 0}


def _loaded(db: Path, path: Path) -> tuple[dict[str, Any], list[Any], list[Any], list[Any]]:
    load = run("load", "--db", str(db), "--format", "json", "--error-when", "prefix", str(path))
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        calls = con.execute("SELECT conversation_id, prompt_id, tool_call_id, step, is_error FROM tool_calls "
                            "ORDER BY tool_call_id").fetchall()
        exits = con.execute("SELECT prompt_id, exit_reason, steps FROM loop_exits ORDER BY prompt_id").fetchall()
        kinds = sorted(k for (k,) in con.execute("SELECT kind FROM protocol_violations").fetchall())
        synthetic = con.execute("SELECT count(*) FROM tool_calls WHERE ts < TIMESTAMP '1971-01-01'").fetchone()[0]
    finally:
        con.close()
    assert synthetic == 0  # times from startTime / endTime
    return load, calls, exits, kinds


def test_responses_api_log_with_the_whole_input_each_call(tmp_path: Path) -> None:
    assert figures(RESPONSES_FULL, "--error-when", "prefix") == RESPONSES_FIGURES
    load, calls, exits, kinds = _loaded(tmp_path / "s.duckdb", RESPONSES_FULL)
    assert (load["tool_calls"], load["loop_exits"], load["quarantined"]) == (5, 2, 0)
    # the system message (instructions) is message 0, the first user message 1; the second, 10 (after
    # 4 model responses, each its reasoning + function_call items folded into one, and 4 results)
    assert [(c[1], c[2], c[3], c[4]) for c in calls] == [
        ("m1", "call_1", 0, True), ("m1", "call_2", 1, False), ("m1", "call_3", 2, False),
        ("m1", "call_4", 2, True), ("m10", "call_5", 0, False),
    ]
    assert {c[0] for c in calls} == {"s-refund"}  # the request's metadata.session_id
    assert [(e[1], e[2]) for e in exits] == [("end_turn", 4), ("end_turn", 2)]
    assert kinds == []


def test_responses_api_log_chained_by_previous_response_id(tmp_path: Path) -> None:
    # each call sends only its new items: threaded by previous_response_id, each call counted once
    assert figures(RESPONSES_CHAINED, "--error-when", "prefix") == RESPONSES_FIGURES
    load, calls, exits, kinds = _loaded(tmp_path / "s.duckdb", RESPONSES_CHAINED)
    assert (load["tool_calls"], load["loop_exits"], load["quarantined"]) == (5, 2, 0)
    assert [(c[2], c[3], c[4]) for c in calls] == [
        ("call_1", 0, True), ("call_2", 1, False), ("call_3", 2, False), ("call_4", 2, True), ("call_5", 0, False),
    ]
    assert {c[0] for c in calls} == {"s-refund"} and len({c[1] for c in calls}) == 2
    assert [(e[1], e[2]) for e in exits] == [("end_turn", 4), ("end_turn", 2)]
    assert kinds == []


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_responses_chained_without_its_first_call_says_so(tmp_path: Path) -> None:
    # the first call (which asked for call_1) is not in the file: call_1's result answers nothing
    # here, the other 4 calls count once, and the load says the start is missing
    path = _write(tmp_path / "tail.jsonl", _lines(RESPONSES_CHAINED)[1:])
    load, calls, _, kinds = _loaded(tmp_path / "t.duckdb", path)
    assert [c[2] for c in calls] == ["call_2", "call_3", "call_4", "call_5"]
    assert "call_log_no_previous" in kinds and "unknown_result_id" in kinds
    # said out loud where the figures are read, not only counted among the violations
    assert [(n["kind"], n["count"]) for n in load["notices"]] == [("call_log_no_previous", 1)]


def test_responses_chained_regenerate_is_a_branch_and_a_failed_call_retried_goes_on(tmp_path: Path) -> None:
    lines = _lines(RESPONSES_CHAINED)
    # line 3 (refund + notify) is sent a second time from the same previous response, after the
    # conversation went on: a branch; the failed try of line 2 before its retry adds nothing twice
    failed = json.loads(json.dumps(lines[1]))
    failed["response"] = {**failed["response"], "id": "resp_failed", "status": "failed", "output": [],
                          "error": {"code": "server_error", "message": "overloaded"}}
    regenerated = json.loads(json.dumps(lines[2]))
    regenerated["response"]["id"] = "resp_regen"
    path = _write(tmp_path / "mixed.jsonl", [lines[0], failed, *lines[1:], regenerated])
    load, calls, _, kinds = _loaded(tmp_path / "m.duckdb", path)
    # the branch re-asks refund + notify (same ids, never answered there): no record; the main
    # conversation keeps its 5 calls, each once
    assert [(c[0], c[2]) for c in calls] == [("s-refund", f"call_{n}") for n in range(1, 6)]
    assert "call_log_branch" in kinds and "call_log_no_reply" in kinds
    assert figures(path, "--error-when", "prefix")["replays"] == 0


def test_responses_api_string_input_and_an_incomplete_response(tmp_path: Path) -> None:
    # input as a string; the first response asks for search (a web_search_call the provider ran is
    # no agent call), the second is cut at max_output_tokens: 1 prompt, 1 call, the loop exit "length"
    first = {"request": {"model": "gpt-5", "input": "find it"},
             "response": {"id": "r1", "object": "response", "status": "completed", "created_at": 1764240000, "output": [
                 {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                 {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "search", "arguments": "{}"}]}}
    second = {"request": {"model": "gpt-5", "previous_response_id": "r1",
                          "input": [{"type": "function_call_output", "call_id": "c1", "output": "found"}]},
              "response": {"id": "r2", "object": "response", "status": "incomplete", "created_at": 1764240005,
                           "incomplete_details": {"reason": "max_output_tokens"},
                           "output": [{"type": "message", "role": "assistant", "id": "m2",
                                       "content": [{"type": "output_text", "text": "It is"}]}]}}
    path = _write(tmp_path / "r.jsonl", [first, second])
    load, calls, exits, kinds = _loaded(tmp_path / "r.duckdb", path)
    assert [(c[1], c[2]) for c in calls] == [("m0", "c1")]
    assert [(e[0], e[2]) for e in exits] == [("m0", 2)] and kinds == []
    import duckdb

    con = duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT exit_reason FROM loop_exits").fetchall() == [("max_tokens",)]
    finally:
        con.close()


def test_a_conversation_with_an_empty_response_or_a_failure_status_is_still_a_conversation(tmp_path: Path) -> None:
    # {"messages": [... a finished conversation], "response": null} (or "", or "status": "error"): no
    # model call (a request ends with what the model is to answer, not with its response): read as a
    # conversation, as before the call-log reader. It read none of them: 0 records, a "failed call".
    a1 = {"role": "assistant", "content": None, "tool_calls": [_tc("c1", "search")]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": "found"}
    conv = [USER, a1, t1, {"role": "assistant", "content": "ok"}]
    path = _write(tmp_path / "conv.jsonl", [
        {"id": "k1", "messages": conv, "response": None},
        {"id": "k2", "messages": conv, "response": ""},
        {"id": "k3", "messages": conv, "response": "ok", "status": "error"},
    ])
    assert figures(path) == {
        "prompts": 3, "open_prompts": 0, "tool_calls": 3, "errors": 0, "recovered_errors": 0, "replays": 0,
    }
    load = run("load", "--db", "c.duckdb", "--format", "json", str(path))
    assert (load["tool_calls"], load["loop_exits"], load["protocol_violations"]) == (3, 3, 0)


def test_a_failed_call_that_continues_nothing_in_the_file_is_read_from_its_history(tmp_path: Path) -> None:
    # the log rotated between the loop's calls: this file holds only the failed call, whose history
    # shows the tool the loop ran. Read as a call with a reply would be (its history is the
    # conversation), and the loop ended on the failure; it read nothing of it (the call was lost).
    a1 = {"role": "assistant", "content": None, "tool_calls": [_tc("c1", "deploy")]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": "deployed"}
    failed = {"request": {"messages": [USER, a1, t1]}, "response": {"error": {"message": "overloaded"}},
              "status": "failure"}
    path = _write(tmp_path / "rotated.jsonl", [failed])
    assert figures(path) == {
        "prompts": 1, "open_prompts": 0, "tool_calls": 1, "errors": 0, "recovered_errors": 0, "replays": 0,
    }
    load = run("load", "--db", "f.duckdb", "--format", "json", str(path))
    assert load["protocol_violations"] == 1  # call_log_no_reply
    assert _exit_reasons("f.duckdb") == [("error", "model_call_failed")]
    # retried with success: the retry continues it (no call twice), and the loop went on
    retried = _write(tmp_path / "retried.jsonl", [
        failed, _openai_call([USER, a1, t1], {"role": "assistant", "content": "Deployed."}, "stop")])
    assert figures(retried)["tool_calls"] == 1
    run("load", "--db", "r.duckdb", "--format", "json", str(retried))
    assert _exits_and_calls("r.duckdb") == ([("end_turn",)], 1)


def test_a_failed_retry_of_an_earlier_point_adds_nothing(tmp_path: Path) -> None:
    # a call re-sends the first call's point after the loop went on, and fails: nothing in it is new
    a1 = {"role": "assistant", "content": None, "tool_calls": [_tc("c1", "search")]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": "found"}
    a2 = {"role": "assistant", "content": "done"}
    path = _write(tmp_path / "late.jsonl", [
        _openai_call([USER], a1, "tool_calls"), _openai_call([USER, a1, t1], a2, "stop"),
        {"request": {"messages": [USER, a1, t1]}, "response": None, "status": "failure"},
    ])
    assert figures(path) == {
        "prompts": 1, "open_prompts": 0, "tool_calls": 1, "errors": 0, "recovered_errors": 0, "replays": 0,
    }


def test_a_response_with_a_null_error_key_is_no_failed_call(tmp_path: Path) -> None:
    # an OpenAI Responses API object always carries "error": null; a gateway line with one as its
    # response was read as a failed call (no reply): both lines dropped, 0 records and exit 1. Its
    # input items logged as "messages" (LiteLLM's responses calls) thread as a Responses call log.
    user = {"role": "user", "content": "weather in Paris?"}
    call = {"type": "function_call", "call_id": "fc_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    output = {"type": "function_call_output", "call_id": "fc_1", "output": "18C"}

    def responses(out: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": "resp_1", "object": "response", "status": "completed", "error": None, "output": out}

    path = _write(tmp_path / "responses.jsonl", [
        {"status": "success", "messages": [user], "response": responses([call])},
        {"status": "success", "messages": [user, call, output], "response": responses([
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "18C."}]}])},
    ])
    m = figures(path)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"]) == (1, 0, 1)
    load = run("load", "--db", "n.duckdb", "--format", "json", str(path))
    import duckdb

    con = duckdb.connect("n.duckdb", read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM protocol_violations WHERE kind = 'call_log_no_reply'").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM loop_exits WHERE error_type = 'model_call_failed'").fetchone()[0] == 0
    finally:
        con.close()
    assert load["tool_calls"] == 1


def test_embedding_calls_in_a_gateway_log_are_left_out_and_counted(tmp_path: Path) -> None:
    # LiteLLM logs every call it proxies; an embedding's "messages" is the text embedded, its response
    # vectors. It was one quarantined line with a --messages-key hint no key could satisfy.
    a1 = {"role": "assistant", "content": None, "tool_calls": [_tc("c1", "search")]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": "found"}
    embedding = {"call_type": "aembedding", "messages": "refund policy", "response": {"data": [{"embedding": [0.1]}]},
                 "status": "success"}
    path = _write(tmp_path / "gateway.jsonl", [
        {**_openai_call([USER], a1, "tool_calls"), "call_type": "acompletion"},
        embedding,
        {**_openai_call([USER, a1, t1], {"role": "assistant", "content": "done"}, "stop"), "call_type": "acompletion"},
    ])
    assert figures(path) == {
        "prompts": 1, "open_prompts": 0, "tool_calls": 1, "errors": 0, "recovered_errors": 0, "replays": 0,
    }
    load = run("load", "--db", "e.duckdb", "--format", "json", str(path))
    assert (load["quarantined"], load["protocol_violations"]) == (0, 1)  # call_log_not_chat, with the count
    import duckdb

    con = duckdb.connect("e.duckdb", read_only=True)
    try:
        (detail,) = con.execute("SELECT detail FROM protocol_violations WHERE kind = 'call_log_not_chat'").fetchone()
    finally:
        con.close()
    assert "1 logged call(s) that are no chat (aembedding 1)" in detail


def test_a_session_whose_opening_call_was_sent_twice_keeps_two_conversations_apart(tmp_path: Path) -> None:
    # the same session id, the first call sent twice (a retry before any tool call): two conversations,
    # the second named <session>#2 so their prompts do not merge into one conversation
    a = {"role": "assistant", "content": None, "tool_calls": [_tc("r1", "report")]}
    b = {"role": "assistant", "content": None, "tool_calls": [_tc("r2", "report")]}
    ok = {"role": "assistant", "content": "sent"}
    path = _write(tmp_path / "twice.jsonl", [
        {**_openai_call([USER], a, "tool_calls"), "session_id": "s-1"},
        {**_openai_call([USER, a, {"role": "tool", "tool_call_id": "r1", "content": "ok"}], ok, "stop"), "session_id": "s-1"},
        {**_openai_call([USER], b, "tool_calls"), "session_id": "s-1"},
        {**_openai_call([USER, b, {"role": "tool", "tool_call_id": "r2", "content": "ok"}], ok, "stop"), "session_id": "s-1"},
    ])
    assert figures(path) == {
        "prompts": 2, "open_prompts": 0, "tool_calls": 2, "errors": 0, "recovered_errors": 0, "replays": 0,
    }
    run("load", "--db", "t.duckdb", "--format", "json", str(path))
    import duckdb

    con = duckdb.connect("t.duckdb", read_only=True)
    try:
        names = con.execute("SELECT DISTINCT conversation_id FROM tool_calls ORDER BY 1").fetchall()
    finally:
        con.close()
    assert names == [("s-1",), ("s-1#2",)]
