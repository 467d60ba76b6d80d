"""Hostile and malformed conversation logs through ``loopscope load --input-format messages``.

Each case: the load finishes (or stops with a clear error naming the file), bad parts are
reported with their line, good conversations are kept, and untrusted text reaches the terminal
inert (rich markup shown literally, no raw escape bytes).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.analyses.ingest import messages
from loopscope.cli.app import app

runner = CliRunner()
HOSTILE = "[bold red]boom[/] \x1b[31mRED\x1b[0m <script>alert(1)</script>"
GOOD = {
    "conversation_id": "good",
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "g1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "g1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ],
}


def run(*args: str) -> Any:
    return runner.invoke(app, list(args))


def load(path: Path, *options: str) -> dict[str, Any]:
    res = run("load", "--db", "s.duckdb", "--format", "json", "--input-format", "messages", *options, str(path))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def quarantine() -> list[dict[str, Any]]:
    res = run("quarantine", "--db", "s.duckdb", "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_deep_and_invalid_arguments_and_hostile_text(tmp_path: Path) -> None:
    deep = "{}"
    for _ in range(5000):  # deeper than Python's JSON decoder goes
        deep = '{"a":' + deep + "}"
    conv = {
        "conversation_id": "h-1",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "deep", "arguments": deep}},
                {"id": "c2", "type": "function", "function": {"name": "notjson", "arguments": "{oops"}},
                {"id": "c3", "type": "function", "function": {"name": HOSTILE, "arguments": "{}"}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "tool", "tool_call_id": "c2", "content": "Error: " + HOSTILE},
            {"role": "tool", "tool_call_id": "c3", "content": "Error: " + HOSTILE},
            {"role": "assistant", "content": "stopped"},
        ],
    }
    path = tmp_path / "hostile.jsonl"
    path.write_text(json.dumps(conv) + "\n", encoding="utf-8")
    summary = load(path, "--error-when", "prefix")
    # the too-deep and the broken arguments are violations (no fingerprint), never a crash
    assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (3, 1, 2)
    for command in (["unrecovered"], ["triage", "h-1"], ["lint"]):
        res = run(*command, "--db", "s.duckdb")
        assert res.exit_code == 0, res.output
        assert "[bold red]boom[/]" in res.output, command  # markup shown, not applied
        assert "\x1b" not in res.output, command  # escape bytes never reach the terminal
    rows = json.loads(run("unrecovered", "--db", "s.duckdb", "--format", "json").stdout)
    # one row per conversation: its first unrecovered error; JSON keeps the text exact
    assert [(r["tool_call_id"], r["error_message"]) for r in rows] == [("c2", "Error: " + HOSTILE)]


def test_document_nested_too_deeply_is_quarantined_and_other_lines_load(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    nested = '{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_text(json.dumps(GOOD) + "\n" + nested + "\n" + "{not json\n", encoding="utf-8")
    summary = load(path)
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"]) == (1, 1, 2)
    bad = sorted((q["line_no"], q["reason"].split(" (")[0].split(":")[0]) for q in quarantine())
    assert bad == [(2, "JSON nested too deeply to read"), (3, "not JSON")]


def test_single_document_nested_too_deeply(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    res = run("load", "--db", "s.duckdb", "--format", "json", "--input-format", "messages", str(path))
    # nothing loadable: a user error (exit 1, no traceback), the summary still printed, the line quarantined
    assert res.exit_code == 1 and "Traceback" not in res.output and "yielded 0 records" in res.output
    summary = json.loads(res.stdout)
    assert (summary["loaded"], summary["quarantined"]) == (0, 1)
    assert quarantine()[0]["reason"].startswith("JSON nested too deeply to read")


@pytest.mark.parametrize("compressed", [False, True])
def test_file_above_the_size_bound_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compressed: bool) -> None:
    text = "".join(json.dumps({**GOOD, "conversation_id": f"c{i}"}) + "\n" for i in range(50))
    path = tmp_path / ("big.jsonl.gz" if compressed else "big.jsonl")
    if compressed:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    other = tmp_path / "small.jsonl"
    other.write_text(json.dumps(GOOD) + "\n", encoding="utf-8")
    monkeypatch.setattr(messages, "MAX_FILE_BYTES", len(text) - 1)
    res = run("load", "--db", "s.duckdb", "--format", "json", "--input-format", "messages", str(path), str(other))
    assert res.exit_code == 1  # the big file is skipped and named, the other one loads
    assert "big.jsonl" in res.stderr and "split it" in res.stderr and "Traceback" not in res.output
    summary = json.loads(res.stdout)
    assert (summary["unreadable"], summary["tool_calls"]) == (1, 1)
    monkeypatch.setattr(messages, "MAX_FILE_BYTES", len(text))
    assert load(path)["tool_calls"] == 50


def test_the_same_conversation_id_in_two_files_is_one_conversation(tmp_path: Path) -> None:
    """Documented: conversation ids are global. Snapshots of one conversation saved to two files
    (the second one a turn longer) count the first turn's calls twice, as re-executions of the
    same ids: load a snapshot log's latest file only. (Identical files are skipped as unchanged.)"""
    later = dict(GOOD, messages=GOOD["messages"] + [
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "g2", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "g2", "content": "ok"},
        {"role": "assistant", "content": "done again"},
    ])
    (tmp_path / "a.jsonl").write_text(json.dumps(GOOD) + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(json.dumps(later) + "\n", encoding="utf-8")
    res = run("load", "--db", "s.duckdb", "--format", "json", "--input-format", "messages", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert res.exit_code == 0, res.output
    m = json.loads(run("metrics", "--db", "s.duckdb", "--format", "json").stdout)
    assert (m["prompts"], m["tool_calls"], m["replays"]) == (2, 3, 1)
    run("load", "--db", "latest.duckdb", "--input-format", "messages", str(tmp_path / "b.jsonl"))
    m = json.loads(run("metrics", "--db", "latest.duckdb", "--format", "json").stdout)
    assert (m["prompts"], m["tool_calls"], m["replays"]) == (2, 2, 0)


def test_non_object_messages_and_odd_values_are_skipped(tmp_path: Path) -> None:
    conv = {
        "id": 12345,  # an integer conversation id
        "messages": [
            None, 7, "text", [], {"role": None}, {"role": "user", "content": {"unexpected": "object"}},
            {"role": "assistant", "content": 3, "tool_calls": [None, {"id": 1.5, "function": None}, {"id": True, "name": ["x"]}]},
            {"role": "tool", "tool_call_id": 1.5, "content": {"error": "as an object"}},
            {"role": "tool", "tool_call_id": True, "content": None},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ],
    }
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(conv), encoding="utf-8")
    summary = load(path, "--error-when", "json-error-key")
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"]) == (2, 1, 0)
    rows = json.loads(run("unrecovered", "--db", "s.duckdb", "--format", "json").stdout)
    assert [(r["conversation_id"], r["tool_call_id"]) for r in rows] == [("12345", "1.5")]


def test_per_message_lines_group_by_text_or_integer_ids_not_booleans(tmp_path: Path) -> None:
    lines = [
        {"session_id": 5, "role": "user", "content": "hi"},
        {"session_id": True, "role": "user", "content": "no id: a boolean is not one"},
        {"session_id": 5, "role": "assistant", "content": "hello"},
        {"session_id": "", "role": "assistant", "content": "no id either"},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = messages.read(path, {})
    assert sorted({r["conversation_id"] for r in out.records}) == ["5", f"{tmp_path.name}/log.jsonl#2"]


def test_a_file_with_results_and_no_calls_says_why_not_to_look_in_the_quarantine(tmp_path: Path) -> None:
    # The shape of Inspect AI's own test log log_tool_call_error.json: a sample whose messages are
    # 11 tool results and no call. Nothing is quarantined, so "see why with loopscope quarantine"
    # pointed at an empty list.
    messages = [{"role": "tool", "tool_call_id": f"bash_{i}", "function": "bash", "content": "...",
                 "error": {"type": "timeout", "message": "..."}} for i in range(1, 12)]
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"version": 2, "eval": {"task": "t"}, "samples": [{"id": 1, "epoch": 1, "messages": messages}]}))
    res = CliRunner().invoke(app, ["load", "--db", str(tmp_path / "t.duckdb"), str(path)])
    flat = " ".join(res.output.split())
    assert res.exit_code == 1 and "0 lines quarantined, 11 protocol violations" in flat
    assert "none was bad" in flat and "see why with loopscope quarantine" not in flat
