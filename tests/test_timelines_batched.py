"""The audit page's timelines: one set of queries for every listed conversation gives what triage gives for each.

``triage.timelines`` reads every listed conversation's records once, into
temporary tables (``store.relations.conversation_set_relations``), and builds
the same plain data as ``triage.timelines_one_by_one`` (the first unrecovered
error with its previous attempts, and the prompts with their calls, from
``triage``'s own per-conversation queries). Compared on hand-written
conversations with known answers (open prompts, no unrecovered error, replays,
previous attempts, parallel errors, hostile text), on ``sample_logs/``, on
random stores, and through ``audit``.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from loopscope.analyses.audit import audit, listed_conversations
from loopscope.analyses.ingest.load import load_paths
from loopscope.analyses.selection import Selection
from loopscope.analyses.store import connect
from loopscope.analyses.triage import timelines, timelines_one_by_one
from loopscope.cli.app import app

HERE = Path(__file__).parent
SAMPLE_LOGS = HERE.parent / "sample_logs"


def _module(name: str, file: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


hand = _module("loopscope_test_triage_records", "test_triage.py")
prop = _module("loopscope_test_triage_property_records", "test_triage_property.py")
_RUNS = itertools.count()


def _store(records: list[dict[str, Any]]) -> duckdb.DuckDBPyConnection:
    n = next(_RUNS)
    path = Path(f"records-{n}.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    con = prop.new_store(Path(f"store-{n}.duckdb"))
    load_paths(con, [path])
    return con


def _conversations(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("SELECT DISTINCT conversation_id FROM tool_calls UNION "
                                      "SELECT DISTINCT conversation_id FROM loop_exits ORDER BY 1").fetchall()]


def test_hand_written_conversations() -> None:
    con = _store(hand.RECORDS)
    try:
        ids = _conversations(con)
        asked = [*reversed(ids), "no-such-conversation", ids[0]]  # any order, an unknown id, a repeat
        got = timelines(con, asked)
        assert got == timelines_one_by_one(con, asked)
        assert list(got) == [*reversed(ids), "no-such-conversation"]  # the given order, once each
    finally:
        con.close()

    assert got["no-such-conversation"] == {"first_unrecovered": None, "prompts": []}
    for conv, want in hand.EXPECTED_FIRST.items():
        first = got[conv]["first_unrecovered"]
        if want is None:
            assert first is None, conv
        else:
            assert (first["prompt_id"], first["step"], first["tool_call_id"], first["tool_name"], first["class"],
                    first["error_message"]) == want
            marked = [c["tool_call_id"] for p in got[conv]["prompts"] for s in p["steps"] for c in s["tool_calls"]
                      if c["first_unrecovered"]]
            assert marked == [want[2]]
    # an open prompt: no loop_exit
    assert [p["is_open"] for p in got["open"]["prompts"]] == [True]
    assert got["open"]["prompts"][0]["loop_exit"] is None
    assert got["aborted"]["prompts"][0]["loop_exit"]["exit_reason"] == "budget_exceeded"
    # previous attempts at the failing call: same tool and fingerprint, earlier, in order
    assert [(a["tool_call_id"], a["is_error"]) for a in got["prev"]["first_unrecovered"]["previous_attempts"]] == [
        ("pv-1", True), ("pv-2", False)]
    # replays: the unflagged second run and the flagged third are replays, their error no error class
    calls = [c for p in got["replay"]["prompts"] for s in p["steps"] for c in s["tool_calls"]]
    assert [(c["tool_call_id"], c["is_replay"], c["class"]) for c in calls] == [
        ("charge-1", False, None), ("charge-1", True, None), ("charge-1", True, None)]
    # steps in order, parallel calls by time
    steps = got["order"]["prompts"][0]["steps"]
    assert [(s["step"], [c["tool_call_id"] for c in s["tool_calls"]]) for s in steps] == [(0, ["o-1"]), (2, ["o-2", "o-3"])]
    assert [p["prompt_id"] for p in got["order"]["prompts"]] == ["pA", "pB"]


def test_sample_logs_and_the_audit(loaded_store: Any) -> None:
    con = connect(loaded_store(SAMPLE_LOGS))
    try:
        ids = _conversations(con)
        assert len(ids) > 5
        got = timelines(con, ids)
        assert got == timelines_one_by_one(con, ids)
        assert any(t["first_unrecovered"] for t in got.values())
        assert any(t["first_unrecovered"] is None for t in got.values())
        report = audit(con, Selection(), timelines=True)
        listed = listed_conversations(report)
        assert listed and list(report["timelines"]) == listed
        assert report["timelines"] == timelines_one_by_one(con, listed)
    finally:
        con.close()


@pytest.mark.parametrize("source", ["sample_logs", "hand-written"])
def test_facts_and_views_give_the_same_timelines(loaded_store: Any, source: str) -> None:
    """With fresh facts the set's calls and errors are their rows of the facts; with stale ones (a
    read-only store: the facts cannot be rebuilt) they are computed from the copied records."""
    from loopscope.analyses.store.facts import facts_fresh

    records = SAMPLE_LOGS
    if source == "hand-written":  # replays, parallel errors, previous attempts, hostile text
        records = Path("hand.jsonl").resolve()
        records.write_text("".join(json.dumps(r) + "\n" for r in hand.RECORDS), encoding="utf-8")
    db = loaded_store(records)
    con = connect(db)
    try:
        ids = _conversations(con)
        with_facts = timelines(con, ids)
        assert facts_fresh(con)
        con.execute("UPDATE prompt_facts_state SET tool_calls = tool_calls + 1")  # as if records changed behind it
    finally:
        con.close()
    ro = duckdb.connect(str(db), read_only=True)
    try:
        ro.execute("SET TimeZone = 'UTC'")
        assert not facts_fresh(ro)
        assert timelines(ro, ids) == with_facts
        assert any(t["first_unrecovered"] for t in with_facts.values())
    finally:
        ro.close()


def test_no_temporary_table_is_left(loaded_store: Any) -> None:
    con = connect(loaded_store(SAMPLE_LOGS))
    try:
        before = con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()
        timelines(con, _conversations(con))
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone() == before
        assert timelines(con, []) == {}
    finally:
        con.close()


# Generated examples per run: 15 (30 with LOOPSCOPE_PROPERTY_EXAMPLES=full, as before 2026-11-27;
# tests/conftest.py says why).
PROPERTY_EXAMPLES = 30 if os.environ.get("LOOPSCOPE_PROPERTY_EXAMPLES") == "full" else 15


@settings(max_examples=PROPERTY_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(prop.record_sets())
def test_random_stores(records: list[dict[str, Any]]) -> None:
    """Several conversations with prompts at the same instant, parallel calls, replays (flagged or not,
    some earlier than the first run), open prompts and abnormal exits, records in any order."""
    con = _store(records)
    try:
        ids = _conversations(con)
        assert timelines(con, ids) == timelines_one_by_one(con, ids)
    finally:
        con.close()


def test_audit_html_embeds_every_listed_conversation(tmp_path: Path) -> None:
    page = tmp_path / "audit.html"
    result = CliRunner().invoke(app, ["audit", str(SAMPLE_LOGS), "--db", "t.duckdb", "--html", str(page)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    con = connect("t.duckdb", read_only=True)
    try:
        listed = listed_conversations(audit(con, Selection()))
    finally:
        con.close()
    text = page.read_text(encoding="utf-8")
    assert listed
    assert text.count('class="timeline"><h3>') == len(listed)
    assert "first unrecovered" in text
