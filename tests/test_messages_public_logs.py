"""Public agent logs in shapes the messages reader was not built on, through the CLI a user runs.

Fixtures: tests/fixtures/public_logs/ (sources, licences and what was trimmed in
its README). Every expected figure was counted from the raw messages, by
message index (in the comments), not by running loopscope.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

PUBLIC = Path(__file__).resolve().parent / "fixtures" / "public_logs"
SWE_SIMPLE = PUBLIC / "swe-agent_function_calling_simple.traj"
SWE_REPLAY = PUBLIC / "swe-agent_marshmallow-1867_function_calling_replace.traj"
SWE_TEXT = PUBLIC / "swe-agent_pydicom-1458_text_actions.traj"
MINI_SWE = PUBLIC / "mini-swe-agent_github_issue.traj.json"
TOOLORCHESTRA = PUBLIC / "toolorchestra_retail_gpt-5_excerpt.json"

runner = CliRunner()


def run(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def load(path: Path, *options: str, code: int = 0) -> dict[str, Any]:
    return json.loads(run("load", "--db", "store.duckdb", "--format", "json", *options, str(path), code=code).stdout)


def metrics() -> dict[str, Any]:
    return json.loads(run("metrics", "--db", "store.duckdb", "--format", "json").stdout)


def calls() -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect("store.duckdb", read_only=True)
    try:
        return con.execute(
            "SELECT prompt_id, step, tool_name, tool_call_id, is_error FROM tool_calls ORDER BY ts, step, tool_call_id"
        ).fetchall()
    finally:
        con.close()


def test_swe_agent_function_calling_history_is_read_by_itself() -> None:
    # {"history": [...]}: system 0, the issue as user 1, then five action/observation pairs
    # (assistant tool_calls at 2, 4, 6, 8, 10; role "tool" observations naming them in
    # tool_call_ids at 3, 5, 7, 9, 11). The run ends on the submit call: no final text, and this
    # file stores no exit_status, so the prompt stays open.
    summary = load(SWE_SIMPLE)
    assert summary["details"][0]["input_format"] == "messages"
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"], summary["protocol_violations"]) == (5, 0, 0, 0)
    assert [(p, s, name) for p, s, name, _, _ in calls()] == [
        ("m1", 0, "find_file"), ("m1", 1, "open"), ("m1", 2, "edit"), ("m1", 3, "bash"), ("m1", 4, "submit"),
    ]
    m = metrics()
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"], m["replays"]) == (1, 1, 5, 0, 0)


def test_swe_agent_exit_status_closes_the_run_and_reused_ids_are_told_apart() -> None:
    # history 0..23: 11 calls at 2, 4, ..., 22. Ids: call_5iDd... at 6 (bash "python reproduce.py"),
    # 8 (bash "ls -F"), 18 (bash "python reproduce.py" again), 20 (bash "rm reproduce.py");
    # call_ahTo... at 10 (find_file) and 12 (open); call_q3Vs... at 4 (insert) and 14 (edit).
    # Same call again under its id (18 = 6): 1 replay. Another call under a used id (8, 12, 14,
    # 20): 4 id collisions. info.exit_status "submitted": the agent's own end, end_turn.
    summary = load(SWE_REPLAY)
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"]) == (11, 1, 0)
    m = metrics()
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"]) == (1, 0, 11, 0)
    assert (m["replays"], m["replay_rate"]) == (1, pytest.approx(1 / 11))
    assert [n["kind"] for n in summary["notices"]] .count("id_collisions") == 1
    assert next(n for n in summary["notices"] if n["kind"] == "id_collisions")["count"] == 4
    import duckdb

    con = duckdb.connect("store.duckdb", read_only=True)
    try:
        exit_row = con.execute("SELECT exit_reason, steps, tool_calls FROM loop_exits").fetchall()
    finally:
        con.close()
    assert exit_row == [("end_turn", 11, 11)]


@pytest.mark.parametrize(
    ("status", "exit_reason"),
    [("submitted", "end_turn"), ("exit_cost", "budget_exceeded"), ("submitted (exit_cost)", "budget_exceeded"),
     ("exit_format", "error"), ("exit_context", "max_tokens")],
)
def test_swe_agent_exit_status_values(tmp_path: Path, status: str, exit_reason: str) -> None:
    doc = json.loads(SWE_SIMPLE.read_text(encoding="utf-8"))
    doc["info"] = {"exit_status": status}
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc), encoding="utf-8")
    load(path)
    m = metrics()
    assert (m["prompts"], m["open_prompts"]) == (1, 0)
    import duckdb

    con = duckdb.connect("store.duckdb", read_only=True)
    try:
        assert con.execute("SELECT exit_reason FROM loop_exits").fetchall() == [(exit_reason,)]
    finally:
        con.close()


def test_swe_agent_text_actions_are_refused_by_name() -> None:
    # history: system, demonstration and issue as user messages, then 11 assistant messages whose
    # command is in the text ("action"), observations as user messages: no tool_calls at all.
    result = run("load", "--db", "store.duckdb", str(SWE_TEXT), code=1)
    assert "SWE-agent trajectory" in result.output and "actions as text" in result.output
    assert "Traceback" not in result.output
    summary = load(SWE_TEXT, code=1)
    detail = summary["details"][0]
    assert (detail["status"], summary["loaded"], summary["unreadable"]) == ("unreadable", 0, 1)
    assert "function calling" in detail["error"]


def test_mini_swe_agent_text_actions_in_a_bare_list_are_flagged() -> None:
    # A bare messages list (mini-swe-agent 1.x test data): system 0, the issue 1, then ten
    # assistant messages with a bash block (2, 4, ..., 20), each answered by a user message with
    # "<returncode>" (3, ..., 21). Nothing in the structure names the agent, so the list loads
    # (each observation is a "prompt": 10 of them, no tool call) and the load says why those
    # figures mean nothing.
    summary = load(MINI_SWE)
    assert (summary["tool_calls"], summary["loop_exits"]) == (0, 10)
    notice = next(n for n in summary["notices"] if n["kind"] == "no_tool_calls")
    assert notice["count"] == 10  # model responses seen, none calling a tool
    assert "text" in notice["message"]


def test_mini_swe_agent_v2_trajectory_without_tool_calls_is_refused(tmp_path: Path) -> None:
    messages = json.loads(MINI_SWE.read_text(encoding="utf-8"))
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"info": {"mini_version": "2.0.0"}, "messages": messages,
                                "trajectory_format": "mini-swe-agent-1.1"}), encoding="utf-8")
    summary = load(path, code=1)
    assert "mini-swe-agent trajectory" in summary["details"][0]["error"]


def test_toolbench_answer_tree_is_refused_with_the_way_to_its_final_chain(tmp_path: Path) -> None:
    # The documented ToolBench answer layout (data_example/answer/*.json), constructed: a DFS tree
    # of tries and answer_generation.train_messages, one training prefix per model call.
    chain = [
        {"role": "system", "content": "You are AutoGPT ..."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "function_call": {"name": "weather_for_x", "arguments": "{}"}},
        {"role": "function", "name": "weather_for_x", "content": "{\"error\": \"\", \"response\": \"sunny\"}"},
        {"role": "assistant", "content": None, "function_call": {"name": "Finish", "arguments": "{\"return_type\": \"give_answer\"}"}},
    ]
    doc = {
        "win": True,
        "tree": {"tree": {"node_type": "Action Input", "is_terminal": False, "children": []}},
        "answer_generation": {"valid_data": True, "train_messages": [chain[:3], chain], "finish_type": "give_answer"},
    }
    path = tmp_path / "10_ChatGPT_DFS_woFilter_w2.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    summary = load(path, code=1)
    detail = summary["details"][0]
    assert detail["input_format"] in ("auto", "messages") and detail["status"] == "unreadable"
    assert "ToolBench" in detail["error"] and "train_messages[-1]" in detail["error"]


def test_tau2_results_without_error_flags_say_so_then_read_the_text() -> None:
    # toolorchestra (tau2-bench submission): its tool messages carry no "error" key at all.
    # 367a3fb7: prompts m1 (0 calls), m3 (find_user_id_by_name_zip -> "Error: User not found" at
    # 5), m7 (3 calls, the lookup succeeds at 9); m15 "###STOP###" gets no response.
    # 67e18bd9: prompts m1 (0), m3 (error at 5), m7 (error at 9), m11 (3 calls, the lookup
    # succeeds at 13); m19 gets no response. 7 prompts, 9 calls, 3 "Error:" results, each the
    # last call of its prompt (gave_up) and each followed by a successful lookup in a later prompt.
    summary = load(TOOLORCHESTRA)
    assert (summary["tool_calls"], summary["loop_exits"]) == (9, 7)
    notice = next(n for n in summary["notices"] if n["kind"] == "unflagged_error_text")
    assert notice["count"] == 3
    assert metrics()["errors"] == 0
    load(TOOLORCHESTRA, "--error-when", "prefix")
    m = metrics()
    assert (m["prompts"], m["open_prompts"], m["tool_calls"]) == (7, 0, 9)
    assert m["median_tool_calls_per_prompt"] == 1
    assert m["p99_tool_calls_per_prompt"] == pytest.approx(3)  # [0,0,1,1,1,3,3]
    assert (m["errors"], m["recovered_errors"], m["resolved_later_errors"]) == (3, 0, 3)
    assert m["error_classes"] == {"recovered": 0, "open": 0, "aborted": 0, "gave_up": 3}
    assert m["conversation_recovery_rate"] == pytest.approx(1.0)
    assert m["replays"] == 0


INSPECT = PUBLIC / "inspect_browser_gpt-4o-mini.json"


def test_inspect_ai_eval_log_is_read_by_itself() -> None:
    # samples[0].messages: the task 0 (user), then web_browser_go at 1 (result 2),
    # web_browser_click at 3, 5, 7 (results 4, 6, 8), the answer at 9: 1 prompt, 4 calls in 4
    # steps, closed by the answer. The sample's uuid is the conversation (its id "1" repeats
    # across epochs and runs). "function" is the tool's name as a string, arguments an object.
    summary = load(INSPECT)
    assert summary["details"][0]["input_format"] == "messages"
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"]) == (4, 1, 0)
    assert [(p, s, name) for p, s, name, _, _ in calls()] == [
        ("m0", 0, "web_browser_go"), ("m0", 1, "web_browser_click"), ("m0", 2, "web_browser_click"),
        ("m0", 3, "web_browser_click"),
    ]
    m = metrics()
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"], m["replays"]) == (1, 0, 4, 0, 0)
    import duckdb

    con = duckdb.connect("store.duckdb", read_only=True)
    try:
        assert con.execute("SELECT DISTINCT conversation_id FROM tool_calls").fetchall() == [("ATYFNjyWUz4mZ5Dgj6yd4f",)]
        # no time on Inspect messages: the eval's start, 2025-05-12T20:27:36-04:00
        assert con.execute("SELECT DISTINCT CAST(ts AS VARCHAR) FROM tool_calls").fetchall() == [("2025-05-13 00:27:36",)]
    finally:
        con.close()


def test_inspect_ai_tool_error_object_and_limits(tmp_path: Path) -> None:
    # Inspect's ChatMessageTool.error is {type, message} (its own test log
    # tests/log/test_eval_log/log_tool_call_error.json shows every type); the model is handed
    # the message. Put a "timeout" on the result at 6 (the click at 5): the clicks at 7 succeed
    # later in the same prompt, which ends with the answer at 9: 1 error, recovered.
    doc = json.loads(INSPECT.read_text(encoding="utf-8"))
    doc["samples"][0]["messages"][6]["error"] = {"type": "timeout", "message": "Command timed out before completing."}
    path = tmp_path / "errors.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    load(path)
    m = metrics()
    assert (m["tool_calls"], m["errors"], m["recovered_errors"]) == (4, 1, 1)
    import duckdb

    con = duckdb.connect("store.duckdb", read_only=True)
    try:
        row = con.execute("SELECT tool_name, error_type, error_message FROM tool_calls WHERE is_error").fetchall()
    finally:
        con.close()
    assert row == [("web_browser_click", "timeout", "Command timed out before completing.")]
    # A sample stopped by a message limit after the last tool result (no answer): its prompt is
    # closed as budget_exceeded, and the error counts as aborted.
    doc["samples"][0]["messages"] = doc["samples"][0]["messages"][:7]
    doc["samples"][0]["limit"] = {"type": "message", "limit": 7}
    path.write_text(json.dumps(doc), encoding="utf-8")
    load(path)
    m = metrics()
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"]) == (1, 0, 3, 1)
    assert m["error_classes"]["aborted"] == 1


def test_autogen_tool_responses_answer_each_parallel_call(tmp_path: Path) -> None:
    # AG2's documented tool message (its tests build them): role "tool", the results of one
    # response's calls in tool_responses. Constructed: two parallel calls at 1, both answered
    # by the message at 2 (the second an error text), then the answer at 3: 1 prompt, 2 calls in
    # step 0, 1 error with --error-when prefix, not recovered (no later call).
    messages = [
        {"role": "user", "name": "user_proxy", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "name": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Rome\"}"}},
        ]},
        {"role": "tool", "name": "user_proxy", "content": "sunny\n\nError: no station for Rome", "tool_responses": [
            {"tool_call_id": "call_a", "role": "tool", "content": "sunny"},
            {"tool_call_id": "call_b", "role": "tool", "content": "Error: no station for Rome"},
        ]},
        {"role": "assistant", "name": "assistant", "content": "Paris is sunny; Rome has no data."},
    ]
    path = tmp_path / "chat_history.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    summary = load(path, "--error-when", "prefix")
    assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (2, 1, 0)
    assert [(p, s, name, cid, err) for p, s, name, cid, err in calls()] == [
        ("m0", 0, "weather", "call_a", False), ("m0", 0, "weather", "call_b", True),
    ]
    m = metrics()
    assert (m["prompts"], m["errors"], m["recovered_errors"]) == (1, 1, 0)


def test_inspect_ai_log_without_samples_says_why(tmp_path: Path) -> None:
    doc = json.loads(INSPECT.read_text(encoding="utf-8"))
    del doc["samples"]  # what Inspect writes when samples are not logged
    path = tmp_path / "header.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    result = run("load", "--db", "store.duckdb", str(path), code=1)
    assert "Traceback" not in result.output
    bad = json.loads(run("quarantine", "--db", "store.duckdb", "--format", "json").stdout)
    assert len(bad) == 1 and "Inspect AI eval log with no samples" in json.dumps(bad)


def test_a_plain_history_chat_is_not_taken_for_swe_agent(tmp_path: Path) -> None:
    # {"history": [...]} without SWE-agent's trajectory or message_type: a chat without tools
    # loads (1 prompt answered) with the no_tool_calls notice, and is not refused.
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}))
    summary = load(path)
    assert (summary["loop_exits"], summary["unreadable"]) == (1, 0)
    assert [n["kind"] for n in summary["notices"] if n["kind"] == "no_tool_calls"] == ["no_tool_calls"]


def test_openhands_event_streams_are_named(tmp_path: Path) -> None:
    # OpenHands' documented event dicts (event_to_dict): {id, timestamp, source, action, args,
    # tool_call_metadata} and {id, source, observation, cause, extras}. Constructed, two events.
    # They used to be refused by name; the openhands reader reads them now (tests/test_transcripts_openhands.py),
    # and the messages reader, forced on them, still names them and points to it.
    events = [
        {"id": 1, "timestamp": "2025-01-01T00:00:00", "source": "agent", "action": "run",
         "args": {"command": "ls"}, "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_1"}},
        {"id": 2, "timestamp": "2025-01-01T00:00:01", "source": "agent", "observation": "run", "cause": 1,
         "content": "a.py", "extras": {"metadata": {"exit_code": 0}}},
    ]
    as_list = tmp_path / "trajectory.json"
    as_list.write_text(json.dumps(events, indent=1), encoding="utf-8")
    summary = load(as_list)
    assert (summary["details"][0]["input_format"], summary["tool_calls"]) == ("openhands", 1)
    forced = load(as_list, "--input-format", "messages", code=1)
    assert "OpenHands event stream" in forced["details"][0]["error"]
    assert "--input-format openhands" in forced["details"][0]["error"]
    as_lines = tmp_path / "events.jsonl"
    as_lines.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    run("load", "--db", "store.duckdb", "--input-format", "messages", str(as_lines), code=1)
    bad = json.loads(run("quarantine", "--db", "store.duckdb", "--format", "json").stdout)
    assert len(bad) == 2 and all("OpenHands event" in json.dumps(b) for b in bad)
    auto = run("load", "--db", "auto.duckdb", "--format", "json", str(as_lines))  # detected from its first line
    assert json.loads(auto.stdout)["details"][0]["input_format"] == "openhands" and "Traceback" not in auto.output


def test_pydantic_ai_history_of_a_published_run_is_read(tmp_path: Path) -> None:
    # pydantic-ai's ModelMessagesTypeAdapter dump (the shape of a published gpt-4o-mini run,
    # bdhammel/agent_sandbox test_msg_convert.py, which carries no licence: constructed here).
    # It used to end in "no conversation found ... pass --messages-key", then in a refusal by
    # name (the refusal's assertions are replaced: reading it is the fix). Counted by hand: one
    # prompt (0), one call c1 (1), answered by a retry-prompt naming the tool (2): an error the
    # model saw; the loop stops there, waiting for the model: open.
    history = [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "pw=42", "timestamp": "2025-10-24T02:46:38Z"}]},
        {"kind": "response", "parts": [{"part_kind": "tool-call", "tool_name": "secret_plan", "args": "{}", "tool_call_id": "c1"}],
         "model_name": "gpt-4o-mini-2024-07-18", "finish_reason": "tool_call"},
        {"kind": "request", "parts": [{"part_kind": "retry-prompt", "tool_name": "secret_plan", "content": "bad", "tool_call_id": "c1"}]},
    ]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    summary = load(path)
    assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (1, 0, 0)
    m = metrics()
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"]) == (1, 1, 1, 1)
    assert m["error_classes"]["open"] == 1


def test_ai_sdk_ui_messages_are_read(tmp_path: Path) -> None:
    # Vercel AI SDK UIMessages ({id, role, parts}) used to end in "0 records", which no key fixes,
    # then in a refusal by name (its assertions are replaced: reading them is the fix). One prompt
    # (a), one call t1 in state output-error: an error, and the loop went no further (open).
    ui = {"id": "chat-1", "messages": [
        {"id": "a", "role": "user", "parts": [{"type": "text", "text": "weather?"}]},
        {"id": "b", "role": "assistant", "parts": [{"type": "tool-weather", "toolCallId": "t1", "state": "output-error",
                                                    "input": {"city": "x"}, "errorText": "boom"}]},
    ]}
    for i, doc in enumerate((ui, [{**ui, "id": "chat-2"}])):  # one chat, a list of chats
        path = tmp_path / f"ui{i}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        summary = load(path)
        assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (1, 0, 0)
        m = metrics()
        assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"]) == (i + 1, i + 1, i + 1, i + 1)


def _langchain_history() -> list[dict[str, Any]]:
    # LangChain's serialization of a LangGraph ReAct run, as message.model_dump() writes it
    # (constructed): the question 0, two parallel calls at 1, their ToolMessages at 2 (status
    # "error": the model was told it failed) and 3, a retry of the failed call at 4 (result 5,
    # success), the answer at 6. 1 prompt, calls in steps 0, 0, 1; 1 error, recovered.
    return [
        {"type": "system", "content": "You are a weather bot."},
        {"type": "human", "content": "Weather in Paris and Rome?", "id": "h1"},
        {"type": "ai", "content": "", "id": "run-1", "tool_calls": [
            {"name": "weather", "args": {"city": "Paris"}, "id": "call_p", "type": "tool_call"},
            {"name": "weather", "args": {"city": "Rome"}, "id": "call_r", "type": "tool_call"}]},
        {"type": "tool", "content": "Error: TimeoutError('station')\n Please fix your mistakes.", "tool_call_id": "call_r",
         "name": "weather", "status": "error"},
        {"type": "tool", "content": "sunny", "tool_call_id": "call_p", "name": "weather", "status": "success"},
        {"type": "ai", "content": "", "id": "run-2", "tool_calls": [
            {"name": "weather", "args": {"city": "Rome"}, "id": "call_r2", "type": "tool_call"}]},
        {"type": "tool", "content": "rain", "tool_call_id": "call_r2", "name": "weather", "status": "success"},
        {"type": "ai", "content": "Paris: sunny. Rome: rain.", "id": "run-3"},
    ]


@pytest.mark.parametrize("wrapped", [False, True])
def test_langchain_serialized_messages(tmp_path: Path, wrapped: bool) -> None:
    history = _langchain_history()
    if wrapped:  # messages_to_dict: {"type": ..., "data": {...}}
        history = [{"type": m["type"], "data": m} for m in history]
    path = tmp_path / "thread.json"
    path.write_text(json.dumps({"thread_id": "t-1", "messages": history}), encoding="utf-8")
    summary = load(path)
    assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (3, 1, 0)
    assert calls() == [
        ("m1", 0, "weather", "call_r", True), ("m1", 0, "weather", "call_p", False), ("m1", 1, "weather", "call_r2", False),
    ]
    m = metrics()
    assert (m["prompts"], m["open_prompts"], m["errors"], m["recovered_errors"]) == (1, 0, 1, 1)


def test_inspect_ai_eval_zip_is_named_with_the_conversion(tmp_path: Path) -> None:
    # Inspect's binary log: a zip whose entries are _journal/..., header.json, samples/...
    import zipfile

    path = tmp_path / "2025-05-12_browser.eval"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("_journal/start.json", "{}")
        z.writestr("samples/1_epoch_1.json", "{}")
    result = run("load", "--db", "store.duckdb", str(path), code=1)
    flat = " ".join(result.output.split())
    assert "Inspect AI .eval log" in flat and "inspect log convert" in flat and "Traceback" not in flat


def test_autogen_history_from_the_user_proxys_side(tmp_path: Path) -> None:
    # chat_result.chat_history as AG2 stores it on the initiator's side (constructed, AG2's
    # documented roles): the task user_proxy sent is "assistant", the model's calls "assistant"
    # (tool calls always are), the results "tool", the model's answer "user". Read by sender:
    # 1 prompt (the task, 0), the call at 1 answered at 2, the answer at 3 closes it.
    messages = [
        {"role": "assistant", "name": "user_proxy", "content": "What is 6 times 7?"},
        {"role": "assistant", "name": "assistant", "content": None, "tool_calls": [
            {"id": "call_x", "type": "function", "function": {"name": "multiply", "arguments": "{\"a\": 6, \"b\": 7}"}}]},
        {"role": "tool", "name": "user_proxy", "content": "42",
         "tool_responses": [{"tool_call_id": "call_x", "role": "tool", "content": "42"}]},
        {"role": "user", "name": "assistant", "content": "6 times 7 is 42. TERMINATE"},
    ]
    path = tmp_path / "chat_history.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    summary = load(path)
    assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (1, 1, 0)
    m = metrics()
    assert (m["prompts"], m["open_prompts"], m["tool_calls"]) == (1, 0, 1)
    assert calls() == [("m0", 0, "multiply", "call_x", False)]


@pytest.mark.parametrize("command", [["metrics"], ["audit", "--format", "json"], ["lint"]])
def test_an_analysis_of_files_that_were_all_refused_exits_1_naming_the_file(command: list[str], tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [*command, str(SWE_TEXT), "--db", str(tmp_path / "s.duckdb")])
    assert res.exit_code == 1, res.output
    said = " ".join(res.output.replace("│", " ").split())  # the error panel wraps its lines
    assert "nothing to analyse" in said and "text_actions.tr" in said
    assert "function calling" in said  # the reader's own reason and what to do
    assert "Traceback" not in res.output


def test_a_refused_file_beside_a_readable_one_still_gives_the_readable_ones_figures(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["metrics", str(SWE_TEXT), str(SWE_REPLAY), "--db", str(tmp_path / "s.duckdb"),
                                   "--format", "json"])
    assert res.exit_code == 0, res.output
    figures = json.loads(res.stdout)
    assert figures["tool_calls"] == 11  # the marshmallow replay run alone (counted in the test above)


def test_a_folder_scan_picks_up_swe_agent_traj_files(tmp_path: Path) -> None:
    runs = tmp_path / "trajectories" / "marshmallow"
    runs.mkdir(parents=True)
    (runs / SWE_REPLAY.name).write_bytes(SWE_REPLAY.read_bytes())
    (runs / "notes.txt").write_text("not a log")
    res = CliRunner().invoke(app, ["metrics", str(tmp_path / "trajectories"), "--db", str(tmp_path / "s.duckdb"),
                                   "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tool_calls"] == 11
