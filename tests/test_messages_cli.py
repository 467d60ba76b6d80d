"""``loopscope load --input-format messages`` end to end: load, then metrics / unrecovered / triage.

Fixtures: tests/fixtures/messages/ (written for these tests; the expected
numbers are worked out in the comments) and tests/fixtures/tau2/ (real
tau2-bench conversations, see its README).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

HERE = Path(__file__).resolve().parent
MESSAGES = HERE / "fixtures" / "messages"
TAU2 = HERE / "fixtures" / "tau2"
LANGCHAIN = TAU2 / "langchain_agent_airline_2025-11-26_00-37-06.json"
MEDICAL = TAU2 / "adaptive_agent_medical_triage_opus46_cascata.json"

runner = CliRunner()


def invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def load(path: Path, *options: str) -> dict[str, Any]:
    result = invoke("load", "--db", "store.duckdb", "--format", "json", *options, str(path))
    return json.loads(result.stdout)


def metrics() -> dict[str, Any]:
    return json.loads(invoke("metrics", "--db", "store.duckdb", "--format", "json").stdout)


def unrecovered() -> list[dict[str, Any]]:
    rows = json.loads(invoke("unrecovered", "--db", "store.duckdb", "--format", "json").stdout)
    return sorted(rows, key=lambda r: r["conversation_id"])


def test_anthropic_fixture() -> None:
    summary = load(MESSAGES / "anthropic.jsonl", "--input-format", "messages")
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"]) == (6, 4, 0)
    assert summary["protocol_violations"] == 2  # toolu_11 never answered, toolu_99 unknown
    m = metrics()
    # prompts a-1/m1 (3 calls), a-1/m7 (1), a-2/m0 (1, open), a-3/m0 (1), a-3/m4 (0)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"]) == (5, 1, 6)
    assert m["median_tool_calls_per_prompt"] == 1
    assert m["p99_tool_calls_per_prompt"] == pytest.approx(1 + 0.96 * 2)  # [0,1,1,1,3] at 0.99 * 4
    # toolu_02 recovered by toolu_03 (step 1, end_turn); toolu_04 aborted (max_tokens)
    assert (m["errors"], m["recovered_errors"], m["recovery_rate"]) == (2, 1, 0.5)
    assert [(r["conversation_id"], r["tool_call_id"], r["class"]) for r in unrecovered()] == [("a-1", "toolu_04", "aborted")]


def test_openai_fixture_auto_detected() -> None:
    summary = load(MESSAGES / "openai.json")  # --input-format auto
    assert (summary["tool_calls"], summary["loop_exits"], summary["protocol_violations"]) == (5, 2, 2)
    m = metrics()
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"]) == (3, 1, 5, 0)
    assert m["median_tool_calls_per_prompt"] == 2
    assert m["recovery_rate"] is None


def test_text_errors_need_error_when() -> None:
    summary = load(MESSAGES / "openai_text_errors.jsonl", "--input-format", "messages")
    assert metrics()["errors"] == 0  # no flag, default convention: no errors ...
    # ... which the load points out, once for the file
    assert summary["protocol_violations"] == 1
    audit = json.loads(invoke("audit", "--db", "store.duckdb", "--format", "json").stdout)
    assert "unflagged_error_text" in json.dumps(audit["protocol_violations"])
    assert "3 tool result(s) carry no error flag" in json.dumps(audit["protocol_violations"])
    # ... but the texts are kept, and the lint's silent-error rule sees them
    rows = json.loads(invoke("lint", "--db", "store.duckdb", "--format", "json").stdout)
    silent = sorted((r["tool_name"], r["occurrences"]) for r in rows if r["kind"] == "silent" and "LS130" in r["rules"])
    assert silent == [("delete_file", 2), ("find_contact", 1)]


def test_text_errors_with_prefix() -> None:
    load(MESSAGES / "openai_text_errors.jsonl", "--input-format", "messages", "--error-when", "prefix")
    m = metrics()
    # t-1: call_1 fails at step 0, call_2 succeeds at step 1, end_turn -> recovered; t-2: two failures, gave up
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (2, 5, 3, 1)
    assert m["median_tool_calls_per_prompt"] == 2.5
    rows = unrecovered()
    assert [(r["conversation_id"], r["tool_call_id"], r["class"], r["error_message"]) for r in rows] == [
        ("t-2", "call_4", "gave_up", "Error: permission denied")
    ]


def test_reloading_with_other_options_replaces_the_records() -> None:
    load(MESSAGES / "openai_text_errors.jsonl", "--input-format", "messages")
    assert metrics()["errors"] == 0
    summary = load(MESSAGES / "openai_text_errors.jsonl", "--input-format", "messages", "--error-when", "prefix")
    assert [f["status"] for f in summary["details"]] == ["replaced"]
    m = metrics()
    assert (m["tool_calls"], m["errors"], m["recovered_errors"]) == (5, 3, 1)  # replaced, not added twice
    again = load(MESSAGES / "openai_text_errors.jsonl", "--input-format", "messages", "--error-when", "prefix")
    assert [f["status"] for f in again["details"]] == ["unchanged"]


def test_openai_responses_items() -> None:
    load(MESSAGES / "openai_responses.json", "--error-when", "prefix")  # detected as messages
    m = metrics()
    # m0: refund_order fails at step 0, refund_to_gift_card succeeds at step 1 -> recovered; m9: gave up
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (2, 4, 2, 1)
    assert [(r["tool_call_id"], r["class"]) for r in unrecovered()] == [("call_r4", "gave_up")]


def test_per_turn_log_with_json_errors() -> None:
    summary = load(MESSAGES / "per_turn.jsonl", "--error-when", "json-error-key")
    assert summary["quarantined"] == 0
    m = metrics()
    # s-1/m0 (2 calls), s-1/m6 (1), s-2/m0 (1), s-2/m4 (1, open: the log ends on its result)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (4, 1, 5, 3, 1)
    assert [(r["conversation_id"], r["tool_call_id"], r["class"]) for r in unrecovered()] == [
        ("s-1", "call_p3", "gave_up"),
        ("s-2", "call_q2", "open"),
    ]


def test_id_key_messages_key_and_agent_name(tmp_path: Path) -> None:
    doc = {"export": {"runs": [
        {"meta": {"run": "r-1"}, "chat": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ping", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "pong"}]},
            {"role": "assistant", "content": "done", "stop_reason": "end_turn"},
        ]},
    ]}}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    load(path, "--input-format", "messages", "--messages-key", "export.runs[].chat", "--id-key", "meta.run", "--agent-name", "pinger")
    rows = json.loads(invoke("metrics", "--db", "store.duckdb", "--format", "json", "--by", "agent").stdout)
    assert [(r["group"], r["prompts"], r["tool_calls"]) for r in rows] == [("pinger", 1, 1)]
    triage = json.loads(invoke("triage", "r-1", "--db", "store.duckdb", "--format", "json").stdout)
    assert triage["conversation_id"] == "r-1"


def test_bad_options_are_user_errors(tmp_path: Path) -> None:
    for options, word in ((["--error-when", "sometimes"], "sometimes"), (["--messages-key", "a[0].b"], "a[0]")):
        result = runner.invoke(app, ["load", "--db", "store.duckdb", "--input-format", "messages", *options, str(MESSAGES / "openai.json")])
        assert result.exit_code == 1, result.output
        assert word in result.output
        assert "Traceback" not in result.output


def test_unreadable_lines_go_to_the_quarantine(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    good = {"id": "c", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    path.write_text(json.dumps(good) + "\n{oops\n")
    summary = load(path, "--input-format", "messages")
    assert (summary["loop_exits"], summary["quarantined"]) == (1, 1)
    rows = json.loads(invoke("quarantine", "--db", "store.duckdb", "--format", "json").stdout)
    assert [(r["line_no"], r["reason"].startswith("not JSON")) for r in rows] == [(2, True)]


class TestTau2:
    """The real tau2-bench excerpts, auto-detected, through the same analyses as collector logs."""

    def test_langchain_counts_match_a_plain_count(self) -> None:
        doc = json.loads(LANGCHAIN.read_text())
        tool_messages = sum(1 for s in doc["simulations"] for m in s["messages"] if m["role"] == "tool")
        reused = 0
        for s in doc["simulations"]:
            ids = Counter(c["id"] for m in s["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or [])
            reused += sum(n - 1 for n in ids.values())
        load(LANGCHAIN)
        m = metrics()
        assert m["tool_calls"] == tool_messages
        assert m["replays"] == reused == 7  # 6 in 1717074d, 1 in d36cb662

    def test_first_unrecovered_errors(self) -> None:
        load(LANGCHAIN)
        load(MEDICAL)
        rows = {r["conversation_id"][:8]: r for r in unrecovered()}
        # langchain 1717074d: message 22's book_reservation fails (23), the answer at 25 gives up
        first = rows["1717074d"]
        assert (first["prompt_id"], first["step"], first["tool_name"], first["class"]) == ("m21", 0, "book_reservation", "gave_up")
        assert first["error_message"] == "Error: Flight HAT902 not found"
        # medical a2bc35d4: the wrong patient id at message 6 comes first
        first = rows["a2bc35d4"]
        assert (first["prompt_id"], first["step"], first["tool_name"]) == ("m5", 0, "get_patient_details")
        assert first["error_message"] == "Error: Patient PC-20160314-ECW not found"
        first = rows["90a5aaf4"]
        assert (first["prompt_id"], first["tool_name"], first["error_message"]) == (
            "m3", "find_patient_by_name_dob", "Error: Patient not found with provided name and date of birth"
        )

    def test_medical_template_is_the_top_unrecovered_error(self) -> None:
        load(MEDICAL)
        m = metrics()
        assert (m["errors"], m["recovered_errors"]) == (26, 0)  # every tool call of the excerpt fails
        import duckdb

        con = duckdb.connect("store.duckdb", read_only=True)
        top = con.execute(
            "SELECT error_message, count(*) FROM errors_v WHERE error_class <> 'recovered' "
            "GROUP BY 1 ORDER BY 2 DESC LIMIT 1"
        ).fetchone()
        assert top == ("Error: Patient not found with provided name and date of birth", 20)
