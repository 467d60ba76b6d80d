"""Gemini CLI saved chats (``--input-format gemini-cli``, auto-detected), through the CLI.

Fixtures (tests/fixtures/gemini_cli/), written for these tests in the shape of Gemini CLI's
chat recording (packages/core/src/services/chatRecordingService.ts and chatRecordingTypes.ts of
google-gemini/gemini-cli): no real session with tool errors was found to commit.

``session-2026-05-02T10-00-3f2a9c1e.jsonl`` (the JSON Lines form), counted by hand:

- prompt u1: g1 read_file c1 ok (g1 is written three times: text, then its tool call, then its
  tokens); g2 run_shell_command c2 **error** + glob c3 ok (parallel); g3 run_shell_command c4 ok
  (c2 recovered: a later ok call, normal exit); g4 the answer: ``end_turn`` inferred, 4 steps;
- prompt u2: g5 replace c5 **cancelled** (the user declined): an error, ``error_type``
  ``cancelled``, the prompt ends ``interrupted`` (so c5 is ``aborted``);
- prompt u3: g6 web_fetch c6 ok, then an ``error`` message (API quota) while the loop runs:
  ``error`` / ``cli_error``;
- u4 and g7 (c7) are dropped by a ``$rewindTo`` (as the CLI drops them), and counted;
- the user messages made of functionResponse parts (r1, r2, r3, r6) are the CLI's record of the
  results it sent: not prompts; one line of no known kind is counted.

Totals: 3 prompts, 0 open, 6 calls, 2 errors, 1 recovered, 1 aborted. Before this reader the
file was auto-detected as loopscope records: 24 lines quarantined, exit 1.

``session-2026-04-30T09-12-7c1d0e2f.json`` is the older one-JSON-document form holding prompt
u1 only (4 calls, 1 error, recovered); before, it loaded 0 records as messages, exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.analyses.ingest.transcripts.gemini_cli import read
from loopscope.cli.app import app

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gemini_cli"
JSONL = FIXTURES / "session-2026-05-02T10-00-3f2a9c1e.jsonl"
LEGACY = FIXTURES / "session-2026-04-30T09-12-7c1d0e2f.json"
runner = CliRunner()


def cli(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_jsonl_session_through_load_metrics_and_unrecovered() -> None:
    summary = cli("load", "--db", "g.duckdb", "--format", "json", str(JSONL))
    (detail,) = summary["details"]
    assert detail["input_format"] == "gemini-cli"  # auto-detected
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"], summary["protocol_violations"]) == (6, 3, 0, 0)
    assert summary["skipped_types"] == {"(line of no known kind)": 1, "messages dropped by /rewind ($rewindTo)": 2}
    m = cli("metrics", "--db", "g.duckdb", "--format", "json")
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (3, 0, 6, 2, 1)
    assert m["error_classes"] == {"recovered": 1, "open": 0, "aborted": 1, "gave_up": 0}
    rows = cli("unrecovered", "--db", "g.duckdb", "--format", "json")
    assert [(r["tool_call_id"], r["tool_name"], r["class"]) for r in rows] == [("c5", "replace", "aborted")]


def test_jsonl_session_records() -> None:
    out = read(JSONL, {})
    assert out.bad == [] and out.violations == []
    calls = {r["tool_call_id"]: r for r in out.records if r["kind"] == "tool_call"}
    assert {k: (r["prompt_id"], r["tool_name"], r["step"], r["is_error"], r["error_type"]) for k, r in calls.items()} == {
        "c1": ("u1", "read_file", 0, False, None),
        "c2": ("u1", "run_shell_command", 1, True, None),
        "c3": ("u1", "glob", 1, False, None),
        "c4": ("u1", "run_shell_command", 2, False, None),
        "c5": ("u2", "replace", 0, True, "cancelled"),
        "c6": ("u3", "web_fetch", 0, False, None),
    }
    assert calls["c2"]["error_message"] == "Command exited with code 2: undefined: foo"
    assert calls["c2"]["latency_ms"] == 3000.0  # the tool call's time minus its response's
    assert calls["c1"]["input_shape"] == {"absolute_path": "string"}
    assert all(r["agent"] == "gemini-cli" and r["conversation_id"] == "3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b"
               for r in out.records)
    exits = [(r["prompt_id"], r["exit_reason"], r["exit_source"], r["error_type"], r["steps"], r["tool_calls"], r["tool_errors"])
             for r in out.records if r["kind"] == "loop_exit"]
    assert exits == [
        ("u1", "end_turn", "inferred", None, 4, 4, 1),
        ("u2", "interrupted", "cancelled", "cancelled", 1, 1, 1),
        ("u3", "error", "cli_error", "cli_error", 1, 1, 0),
    ]
    (first,) = [r for r in out.records if r["kind"] == "loop_exit" and r["prompt_id"] == "u1"]
    # g1's tokens come from its last write (1200) and g4's (1900)
    assert (first["input_tokens"], first["output_tokens"]) == (3100, 100)


def test_legacy_json_session() -> None:
    summary = cli("load", "--db", "g.duckdb", "--format", "json", str(LEGACY))
    assert summary["details"][0]["input_format"] == "gemini-cli"
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"]) == (4, 1, 0)
    m = cli("metrics", "--db", "g.duckdb", "--format", "json")
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (1, 4, 1, 1)


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


META = {"sessionId": "s-1", "projectHash": "p", "startTime": "2026-05-02T10:00:00Z", "lastUpdated": "2026-05-02T10:00:00Z"}


def test_unfinished_calls_a_later_answer_and_a_ui_error_after_the_loop(tmp_path: Path) -> None:
    lines = [
        META,
        {"id": "u1", "timestamp": "2026-05-02T10:00:01Z", "type": "user", "content": "go"},
        {"id": "g1", "timestamp": "2026-05-02T10:00:02Z", "type": "gemini", "content": "", "toolCalls": [
            {"id": "a", "name": "edit", "args": {}, "status": "cancelled", "result": None, "timestamp": "2026-05-02T10:00:03Z"},
            {"id": "b", "name": "shell", "args": {}, "status": "executing", "timestamp": "2026-05-02T10:00:03Z"},
        ]},
        # the model answers after the cancellation: the loop went on, it was not interrupted
        {"id": "g2", "timestamp": "2026-05-02T10:00:05Z", "type": "gemini", "content": "Skipped the edit."},
        # an error the CLI showed after the loop had ended is not the loop's
        {"id": "e1", "timestamp": "2026-05-02T10:00:06Z", "type": "error", "content": "Unknown command: /foo"},
        {"id": "x1", "timestamp": "2026-05-02T10:00:07Z", "type": "hologram", "content": ""},
    ]
    out = read(_write(tmp_path / "session-x.jsonl", lines), {})
    (call,) = [r for r in out.records if r["kind"] == "tool_call"]
    assert (call["tool_call_id"], call["is_error"], call["error_type"], call["error_message"]) == ("a", True, "cancelled", None)
    (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
    assert (exit_["exit_reason"], exit_["exit_source"], exit_["steps"]) == ("end_turn", "inferred", 2)
    assert [(v["kind"], v["tool_call_id"]) for v in out.violations] == [("missing_result", "b")]
    assert out.skipped_types == {"hologram": 1}


def test_a_cancel_notice_interrupts_a_running_loop_and_a_subagent_names_its_parent(tmp_path: Path) -> None:
    folder = tmp_path / "parent-session"
    folder.mkdir()
    lines = [
        {**META, "kind": "subagent"},
        {"id": "u1", "timestamp": "2026-05-02T10:00:01Z", "type": "user", "content": [{"text": "look"}]},
        {"id": "g1", "timestamp": "2026-05-02T10:00:02Z", "type": "gemini", "content": "", "toolCalls": [
            {"id": "a", "name": "ls", "args": {}, "status": "success", "timestamp": "2026-05-02T10:00:03Z",
             "result": [{"functionResponse": {"id": "a", "name": "ls", "response": {"output": "x"}}}]},
        ]},
        {"id": "i1", "timestamp": "2026-05-02T10:00:04Z", "type": "info", "content": "Request cancelled."},
    ]
    out = read(_write(folder / "s-1.jsonl", lines), {})
    assert {r["agent"] for r in out.records} == {"gemini-cli/subagent"}
    assert {r["parent_conversation_id"] for r in out.records} == {"parent-session"}
    (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
    assert (exit_["exit_reason"], exit_["error_type"]) == ("interrupted", "cancelled")


def test_a_bad_line_is_quarantined_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "session-y.jsonl"
    path.write_text(json.dumps(META) + "\n{not json\n" + json.dumps(
        {"id": "u1", "timestamp": "2026-05-02T10:00:01Z", "type": "user", "content": "hi"}) + "\n" + json.dumps(
        {"id": "g1", "timestamp": "2026-05-02T10:00:02Z", "type": "gemini", "content": "hello"}) + "\n")
    result = runner.invoke(app, ["load", "--db", "g.duckdb", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["details"][0]["input_format"], summary["quarantined"], summary["loop_exits"]) == ("gemini-cli", 1, 1)
    rows = json.loads(runner.invoke(app, ["quarantine", "--db", "g.duckdb", "--format", "json"]).stdout)
    assert [(r["line_no"], r["reason"].startswith("not JSON")) for r in rows] == [(2, True)]


def test_a_folder_scan_leaves_out_checkpoints_of_the_chats_it_reads(tmp_path: Path) -> None:
    # ~/.gemini/tmp/<hash>/checkpoint-<tag>.json (/chat save) holds Gemini contents of a conversation
    # chats/ records too: loading the whole tmp folder must not count it twice
    project = tmp_path / ".gemini" / "tmp" / "abc123"
    (project / "chats").mkdir(parents=True)
    session = FIXTURES / "session-2026-05-02T10-00-3f2a9c1e.jsonl"
    (project / "chats" / session.name).write_bytes(session.read_bytes())
    checkpoint = project / "checkpoint-mytag.json"
    checkpoint.write_text(json.dumps([
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"p": "a"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"output": "x"}}}]},
        {"role": "model", "parts": [{"text": "done"}]},
    ]))
    chats_only = cli("load", "--db", "c.duckdb", "--format", "json", str(project / "chats"))
    scanned = cli("load", "--db", "t.duckdb", "--format", "json", str(tmp_path / ".gemini" / "tmp"))
    assert scanned["tool_calls"] == chats_only["tool_calls"] == 6
    (project / "logs.json").write_text(json.dumps([{"sessionId": "s", "type": "user", "message": "hi"}]))
    scanned = cli("load", "--db", "t2.duckdb", "--format", "json", str(tmp_path / ".gemini" / "tmp"))
    assert sorted(Path(p).name for p in scanned["ignored"]) == ["checkpoint-mytag.json", "logs.json"]
    assert scanned["quarantined"] == 0
    result = runner.invoke(app, ["load", "--db", "u.duckdb", str(tmp_path / ".gemini" / "tmp")])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Gemini CLI checkpoints and prompt logs left out: 2 files" in " ".join(text.split())
    # named on its own, a checkpoint loads (its one call)
    alone = cli("load", "--db", "k.duckdb", "--format", "json", str(checkpoint))
    assert alone["tool_calls"] == 1


def test_a_folder_scan_leaves_out_the_file_checkpoints_of_the_chats_it_reads(tmp_path: Path) -> None:
    # with checkpointing on, the CLI writes ~/.gemini/tmp/<hash>/checkpoints/<time>-<file>-<tool>.json
    # before each file edit ({history, clientHistory, toolCall, commitHash, filePath}, for /restore):
    # the conversation so far again. Each was one quarantined line and a "0 records" warning.
    project = tmp_path / ".gemini" / "tmp" / "abc123"
    (project / "chats").mkdir(parents=True)
    (project / "checkpoints").mkdir()
    session = FIXTURES / "session-2026-05-02T10-00-3f2a9c1e.jsonl"
    (project / "chats" / session.name).write_bytes(session.read_bytes())
    restore = project / "checkpoints" / "2026-05-02T10-00-05_000Z-app.py-replace.json"
    restore.write_text(json.dumps({
        "history": [{"type": "user", "text": "fix app.py"}],
        "clientHistory": [{"role": "user", "parts": [{"text": "fix app.py"}]}],
        "toolCall": {"name": "replace", "args": {"file_path": "app.py"}},
        "commitHash": "0123abc", "filePath": "app.py",
    }))
    result = runner.invoke(app, ["load", "--db", "t.duckdb", "--format", "json", str(tmp_path / ".gemini" / "tmp")])
    assert result.exit_code == 0, result.output
    scanned = json.loads(result.stdout)
    assert (scanned["tool_calls"], scanned["quarantined"]) == (6, 0)
    assert [Path(p).name for p in scanned["ignored"]] == [restore.name]
    assert "yielded 0 records" not in " ".join(result.output.split())


def test_a_cut_legacy_json_chat_is_one_bad_line_where_it_broke(tmp_path: Path) -> None:
    # the legacy .json form is one pretty-printed document: cut short (a copy stopped, a full disk),
    # it was read line by line instead, every line of it "not JSON": 219 quarantined lines
    whole = (FIXTURES / "session-2026-04-30T09-12-7c1d0e2f.json").read_text()
    path = tmp_path / "session-2026-04-30T09-12-cut.json"
    path.write_text(whole[: len(whole) - 40])
    result = runner.invoke(app, ["load", "--db", "g.duckdb", "--format", "json", str(path)])
    assert result.exit_code == 1  # nothing read: said, as for any file that yields no records
    summary = json.loads(result.stdout)
    assert (summary["details"][0]["input_format"], summary["quarantined"]) == ("gemini-cli", 1)
    rows = json.loads(runner.invoke(app, ["quarantine", "--db", "g.duckdb", "--format", "json"]).stdout)
    last = whole[: len(whole) - 40].count("\n") + 1
    assert [r["line_no"] for r in rows] == [last]
    assert "cut or damaged" in rows[0]["reason"] and str(path.name) in rows[0]["path"]
