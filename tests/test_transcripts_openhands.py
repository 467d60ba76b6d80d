"""OpenHands event streams (``--input-format openhands``), through the CLI.

The real streams are OpenHands' own replay trajectories (tests/fixtures/public_logs/README.md,
MIT): every expected figure on them was counted from the raw JSON by a separate script
(in the README), not by running loopscope. They hold no failed call, so the error cases
change one published event (said where) or are built from OpenHands' event_to_dict shape.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.cli.app import app

PUBLIC = Path(__file__).resolve().parent / "fixtures" / "public_logs"
GUI = PUBLIC / "openhands_basic_gui_mode.json"
WRONG_STATE = PUBLIC / "openhands_wrong_initial_state.json"
INTERACTIONS = PUBLIC / "openhands_basic_interactions.json"

runner = CliRunner()


def run(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def load(*paths: Path, db: str = "store.duckdb", code: int = 0) -> dict[str, Any]:
    return json.loads(run("load", "--db", db, "--format", "json", *map(str, paths), code=code).stdout)


def query(sql: str, db: str = "store.duckdb") -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def events(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


def write(tmp_path: Path, name: str, value: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return path


def test_published_trajectories_load_with_the_hand_counts(tmp_path: Path) -> None:
    # Hand counts (README): gui mode 18 events, 4 calls (execute_bash 2, str_replace_editor 2),
    # all answered, run exit codes 0 and -1 (a server still running), 1 user message, no finish,
    # ends with agent_state_changed -> awaiting_user_input; 8 events of bookkeeping (4 state
    # changes, of which 3 before the work, 1 change_agent_state action, 3 null observations).
    # wrong_initial_state: 8 events, 3 calls (str_replace_editor 2, execute_bash 1), 1 prompt,
    # finish. basic_interactions: 3 user messages, 2 agent messages, finish: 0 calls, 3 prompts.
    summary = load(GUI, WRONG_STATE, INTERACTIONS)
    assert {d["input_format"] for d in summary["details"]} == {"openhands"}
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"], summary["protocol_violations"]) == (7, 5, 0, 0)
    assert summary["skipped_types"] == {
        "openhands observation null": 3,
        "openhands action change_agent_state from environment": 1,
        "openhands agent_state_changed to loading": 1,
        "openhands agent_state_changed to init": 1,
        "openhands agent_state_changed to running": 1,
    }
    names = query("SELECT tool_name, count(*) FROM tool_calls GROUP BY 1 ORDER BY 1")
    assert names == [("execute_bash", 3), ("str_replace_editor", 4)]
    ids = {r[0] for r in query("SELECT tool_call_id FROM tool_calls")}
    raw_ids = {e["tool_call_metadata"]["tool_call_id"] for p in (GUI, WRONG_STATE) for e in events(p)
               if "action" in e and e.get("tool_call_metadata") and e["action"] != "finish"}
    assert ids == raw_ids and len(ids) == 7
    exits = query("SELECT prompt_id, exit_reason, steps, tool_calls, json_extract_string(extra, '$.exit_source') "
                  "FROM loop_exits ORDER BY conversation_id, ts")
    assert exits == [
        ("event-4", "end_turn", 5, 4, "agent_state_changed:awaiting_user_input"),
        ("event-0", "end_turn", 1, 0, "inferred"),
        ("event-6", "end_turn", 1, 0, "inferred"),
        ("event-12", "end_turn", 1, 0, "finish"),
        ("event-0", "end_turn", 4, 3, "finish"),
    ]
    # The server started with `python3 -m http.server` had not ended (exit code -1): not an error.
    assert query("SELECT count(*) FROM tool_calls WHERE is_error") == [(0,)]
    assert query("SELECT count(*) FROM tool_calls WHERE json_extract(extra, '$.exit_code') IS NOT NULL") == [(2,)]

    figures = json.loads(run("metrics", "--db", "store.duckdb", "--format", "json").stdout)
    assert (figures["prompts"], figures["open_prompts"], figures["tool_calls"], figures["errors"]) == (5, 0, 7, 0)
    assert figures["median_tool_calls_per_prompt"] == 0.0  # 4, 3, 0, 0, 0
    listed = run("unrecovered", "--db", "store.duckdb")
    assert "No conversation in the selection has an unrecovered tool error" in listed.output


def test_a_failed_command_is_an_error_and_a_later_call_recovers_it(tmp_path: Path) -> None:
    # The published wrong_initial_state stream with one change: its `run` observation (id 6)
    # says exit code 2 instead of 0. The next call (a read, id 7) succeeds and the agent
    # finishes: a recovered error, as the Codex reader treats a non-zero exit code.
    stream = events(WRONG_STATE)
    observation = next(e for e in stream if e.get("observation") == "run")
    observation["extras"]["metadata"]["exit_code"] = 2
    path = write(tmp_path, "failed_command.json", stream)
    load(path)
    assert query("SELECT tool_name, step, is_error, error_type, json_extract(extra, '$.exit_code')::INT FROM tool_calls ORDER BY step") == [
        ("str_replace_editor", 0, False, None, None),
        ("execute_bash", 1, True, "exit_code", 2),
        ("str_replace_editor", 2, False, None, None),
    ]
    figures = json.loads(run("metrics", "--db", "store.duckdb", "--format", "json").stdout)
    assert (figures["errors"], figures["recovered_errors"], figures["recovery_rate"]) == (1, 1, 1.0)


def _event(eid: int, ts: int, **fields: Any) -> dict[str, Any]:
    return {"id": eid, "timestamp": f"2025-03-01T10:00:{ts:02d}.000000", **fields}


def _call(eid: int, ts: int, action: str, name: str, call_id: str, response: str, args: dict[str, Any]) -> dict[str, Any]:
    return _event(eid, ts, source="agent", message="", action=action, args={**args, "thought": ""}, timeout=120,
                  tool_call_metadata={"function_name": name, "tool_call_id": call_id, "total_calls_in_response": 1,
                                      "model_response": {"id": response, "choices": [{"message": {"tool_calls": [
                                          {"id": call_id, "type": "function",
                                           "function": {"name": name, "arguments": json.dumps(args)}}]}}],
                                          "usage": {"prompt_tokens": 100, "completion_tokens": 10}}})


def _observation(eid: int, ts: int, kind: str, cause: int | None, call: dict[str, Any] | None, content: str,
                 extras: dict[str, Any] | None = None) -> dict[str, Any]:
    event = _event(eid, ts, source="agent", message="", observation=kind, content=content, extras=extras or {})
    if cause is not None:
        event["cause"] = cause
    if call is not None:
        event["tool_call_metadata"] = call["tool_call_metadata"]
    return event


def _user(eid: int, ts: int, text: str) -> dict[str, Any]:
    return _event(eid, ts, source="user", message=text, action="message",
                  args={"content": text, "image_urls": None, "wait_for_response": False})


def _state(eid: int, ts: int, state: str, reason: str = "") -> dict[str, Any]:
    return _event(eid, ts, source="environment", message="", observation="agent_state_changed", content="",
                  extras={"agent_state": state, "reason": reason})


def test_errors_think_and_agent_states_map_to_the_spec(tmp_path: Path) -> None:
    # Built from OpenHands' event_to_dict shape (the published streams have no failure).
    run1 = _call(1, 1, "run", "execute_bash", "c1", "r1", {"command": "pytest"})
    think = _call(3, 3, "think", "think", "c2", "r2", {"thought": "the tests fail"})
    edit = _call(5, 5, "edit", "str_replace_editor", "c3", "r3", {"command": "str_replace", "path": "/w/a.py"})
    run2 = _call(8, 8, "run", "execute_bash", "c4", "r4", {"command": "rm -rf /"})
    stream = [
        _user(0, 0, "fix the tests"),
        run1, _observation(2, 2, "run", 1, run1, "1 failed", {"metadata": {"exit_code": 1}}),
        think, _observation(4, 4, "think", 3, think, "Your thought has been logged."),
        edit, _observation(6, 6, "error", 5, edit, "ERROR:\nNo replacement was performed"),
        _state(7, 7, "error", "RuntimeError: Agent reached maximum iteration. Current iteration: 3, max iteration: 3"),
        _user(10, 10, "try again, carefully"),
        run2, _observation(9, 11, "user_rejected", 8, run2, "Action has been rejected by the user!"),
        _state(12, 12, "stopped"),
    ]
    load(write(tmp_path, "errors.json", stream))
    assert query("SELECT prompt_id, tool_name, step, is_error, error_type FROM tool_calls ORDER BY ts") == [
        ("event-0", "execute_bash", 0, True, "exit_code"),
        ("event-0", "think", 1, False, None),
        ("event-0", "str_replace_editor", 2, True, "error"),
        ("event-10", "execute_bash", 0, True, "rejected_by_user"),
    ]
    assert query("SELECT prompt_id, exit_reason, error_type, tool_errors FROM loop_exits ORDER BY ts") == [
        ("event-0", "budget_exceeded", "budget_exceeded", 2),
        ("event-10", "interrupted", "stopped", 1),
    ]
    figures = json.loads(run("metrics", "--db", "store.duckdb", "--format", "json").stdout)
    # think after the failed command does not recover it (a scratchpad tool); both prompts ended abnormally
    assert (figures["errors"], figures["recovered_errors"], figures["error_classes"]["aborted"]) == (3, 0, 3)
    listed = json.loads(run("unrecovered", "--db", "store.duckdb", "--format", "json").stdout)
    assert len(listed) == 1 and listed[0]["tool_name"] == "execute_bash"


def test_observation_with_no_action_and_unknown_kinds_are_said(tmp_path: Path) -> None:
    run1 = _call(1, 1, "run", "execute_bash", "c1", "r1", {"command": "ls"})
    orphan = _observation(5, 5, "run", 99, None, "x", {"metadata": {"exit_code": 0}})
    stream = [
        _user(0, 0, "list"),
        run1, _observation(2, 2, "run", 1, run1, "a.py", {"metadata": {"exit_code": 0}}),
        _event(3, 3, source="agent", action="frobnicate", args={}),
        _event(4, 4, source="environment", observation="teleport", content="", extras={}),
        orphan,
        _event(6, 6, source="agent", message="done", action="message", args={"content": "done"}),
    ]
    summary = load(write(tmp_path, "odd.json", stream))
    assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (1, 1, 1)
    assert summary["skipped_types"] == {"openhands action frobnicate": 1, "openhands observation teleport": 1}
    kinds = query("SELECT kind, detail FROM protocol_violations")
    assert [k for k, _ in kinds] == ["unknown_result_id"] and "event-99" in kinds[0][1]


def test_a_truncated_stream_keeps_the_events_before_the_cut(tmp_path: Path) -> None:
    text = WRONG_STATE.read_text(encoding="utf-8")
    # cut inside the last event (the finish action, id 9): 3 calls answered before it
    cut = text.rindex('"action": "finish"')
    path = tmp_path / "cut.json"
    path.write_text(text[:cut], encoding="utf-8")
    summary = load(path)
    assert (summary["tool_calls"], summary["quarantined"]) == (3, 1)
    assert summary["details"][0]["input_format"] == "openhands"
    bad = json.loads(run("quarantine", "--db", "store.duckdb", "--format", "json").stdout)
    finish_line = text[:cut].count("\n") + 1
    start_line = text[:text.rindex("{", 0, cut)].count("\n") + 1
    assert len(bad) == 1 and bad[0]["line_no"] == start_line < finish_line
    assert "rest of the file were not read" in bad[0]["reason"]
    # nothing said the loop ended: the prompt stays open rather than inventing an exit
    figures = json.loads(run("metrics", "--db", "store.duckdb", "--format", "json").stdout)
    assert (figures["prompts"], figures["open_prompts"], figures["tool_calls"]) == (1, 1, 3)


def test_a_run_observation_without_exit_code_is_a_notice(tmp_path: Path) -> None:
    stream = events(WRONG_STATE)
    observation = next(e for e in stream if e.get("observation") == "run")
    del observation["extras"]["metadata"]  # an edited log: the exit code is gone
    summary = load(write(tmp_path, "no_code.json", copy.deepcopy(stream)))
    notice = next(n for n in summary["notices"] if n["kind"] == "unread_exit_status")
    assert notice["count"] == 1 and "OpenHands" in notice["hint"]
    metrics = run("metrics", "--db", "store.duckdb", "--format", "json")
    assert "1 output(s) of command tools" in metrics.stderr


def test_events_one_per_line_and_forced_messages_format(tmp_path: Path) -> None:
    lines = tmp_path / "events.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in events(WRONG_STATE)), encoding="utf-8")
    summary = load(lines)
    assert (summary["details"][0]["input_format"], summary["tool_calls"], summary["loop_exits"]) == ("openhands", 3, 1)
    # the messages reader, forced on it, names the format and points to the reader
    forced = run("load", "--db", "m.duckdb", "--input-format", "messages", str(WRONG_STATE), code=1)
    assert "--input-format openhands" in " ".join(forced.output.split())


def test_non_event_elements_and_a_loose_error_are_not_lost(tmp_path: Path) -> None:
    # A list element that is not an object goes to the quarantine with its line; an error
    # observation tied to no action (no cause, no tool call id) is counted, not dropped; a JSON
    # Lines stream whose last line was cut keeps the lines before it.
    run1 = _call(1, 1, "run", "execute_bash", "c1", "r1", {"command": "ls"})
    stream: list[Any] = [
        _user(0, 0, "list"), 42,
        run1, _observation(2, 2, "run", 1, run1, "a.py", {"metadata": {"exit_code": 0}}),
        _event(3, 3, source="environment", observation="error", content="The agent got stuck", extras={}),
    ]
    summary = load(write(tmp_path, "mixed.json", stream))
    assert (summary["tool_calls"], summary["quarantined"]) == (1, 1)
    assert summary["skipped_types"] == {"openhands observation error (answers no call)": 1}
    bad = json.loads(run("quarantine", "--db", "store.duckdb", "--format", "json").stdout)
    line_of_42 = [x.strip() for x in json.dumps(stream, indent=2).splitlines()].index("42,") + 1
    assert bad[0]["line_no"] == line_of_42 and "not an event object" in bad[0]["reason"]

    lines = [json.dumps(e) for e in stream if isinstance(e, dict)]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20], encoding="utf-8")
    summary = load(cut, db="cut.duckdb")
    assert (summary["details"][0]["input_format"], summary["tool_calls"], summary["quarantined"]) == ("openhands", 1, 1)


def test_a_session_folder_of_one_event_per_file_is_refused_with_how_to_join_it(tmp_path: Path) -> None:
    # OpenHands' file store keeps a session as sessions/<id>/events/<n>.json, one event per file.
    # Loading that folder read each file as a conversation of its own: the first (the user's
    # message) as a prompt with nothing after it, silently 0 records, the others quarantined with
    # a hint to load them as OpenHands, which is what had just been done.
    events = json.loads((PUBLIC / "openhands_wrong_initial_state.json").read_text())
    folder = tmp_path / "sessions" / "abc" / "events"
    folder.mkdir(parents=True)
    for event in events:
        (folder / f"{event['id']}.json").write_text(json.dumps(event))
    result = runner.invoke(app, ["load", "--db", "s.duckdb", "--format", "json", str(folder)])
    assert result.exit_code == 1, result.output  # nothing read: said
    summary = json.loads(result.stdout)
    assert (summary["loaded"], summary["quarantined"]) == (0, len(events))
    rows = json.loads(runner.invoke(app, ["quarantine", "--db", "s.duckdb", "--format", "json"]).stdout)
    assert len(rows) == len(events)
    assert all(r["reason"].startswith("one OpenHands event, not an event stream") and "jq -s" in r["reason"]
               for r in rows)
    # what the reason says to do gives the figures of the trajectory itself
    joined = tmp_path / "abc.json"
    joined.write_text(json.dumps(sorted((json.loads(p.read_text()) for p in folder.iterdir()), key=lambda e: e["id"])))
    load = json.loads(runner.invoke(app, ["load", "--db", "j.duckdb", "--format", "json", str(joined)]).stdout)
    whole = json.loads(runner.invoke(app, ["load", "--db", "w.duckdb", "--format", "json",
                                           str(PUBLIC / "openhands_wrong_initial_state.json")]).stdout)
    assert (load["tool_calls"], load["loop_exits"]) == (whole["tool_calls"], whole["loop_exits"]) == (3, 1)
