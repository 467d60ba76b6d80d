"""Incremental ``prompt_facts``: after a load, only the touched conversations are recomputed.

Every check compares the incrementally maintained table with a full rebuild
from the views, and the CLI's metrics with a fresh in-memory load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from typer.testing import CliRunner

from loopscope.analyses.store.facts import REFRESH_FACTS_SQL, _loop_queries, facts_fresh
from loopscope.analyses.store.relations import FACTS_ERRORS, FACTS_PROTOCOL_VIOLATIONS, FACTS_TOOL_CALLS
from loopscope.cli.app import app

runner = CliRunner()
SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
DIFF_SQL = """
SELECT (SELECT count(*) FROM (SELECT * FROM prompt_facts EXCEPT ALL SELECT * FROM _ls_prompt_facts)),
       (SELECT count(*) FROM (SELECT * FROM _ls_prompt_facts EXCEPT ALL SELECT * FROM prompt_facts)),
       (SELECT count(*) FROM prompt_facts)
"""
# The kept per-error and per-call facts against the views, both ways.
VIEWS_DIFF_SQL = """
SELECT (SELECT count(*) FROM (SELECT * FROM {kept} EXCEPT ALL SELECT * FROM {view})),
       (SELECT count(*) FROM (SELECT * FROM {view} EXCEPT ALL SELECT * FROM {kept}))
"""


def assert_facts_match_a_full_rebuild(db: Path) -> int:
    con = duckdb.connect(str(db))
    try:
        assert facts_fresh(con)
        con.execute(REFRESH_FACTS_SQL)
        only_kept, only_full, n = con.execute(DIFF_SQL).fetchone()  # type: ignore[misc]
        errors_diff = con.execute(VIEWS_DIFF_SQL.format(kept=FACTS_ERRORS, view="errors_v")).fetchone()
        calls_diff = con.execute(VIEWS_DIFF_SQL.format(kept=FACTS_TOOL_CALLS, view="tool_calls_v")).fetchone()
        violations_diff = con.execute(
            VIEWS_DIFF_SQL.format(kept=FACTS_PROTOCOL_VIOLATIONS, view="protocol_violations_v")).fetchone()
        loops_diff = [
            con.execute(VIEWS_DIFF_SQL.format(kept=table, view="(" + query.format(calls="TRUE") + ")")).fetchone()
            for table, query in _loop_queries()
        ]
    finally:
        con.close()
    assert (only_kept, only_full) == (0, 0)
    assert errors_diff == (0, 0) and calls_diff == (0, 0) and violations_diff == (0, 0)
    assert loops_diff == [(0, 0)] * 4
    return int(n)


def metrics(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["metrics", "--format", "json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_growing_files_keep_facts_equal_to_a_full_rebuild(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    sources = {p.name: p.read_text().splitlines(keepends=True) for p in sorted(SAMPLE_LOGS.glob("*.jsonl"))}
    db = tmp_path / "t.duckdb"
    for part in range(1, 5):  # each load appends the next quarter of every file (status grown)
        for name, lines in sources.items():
            (logs / name).write_text("".join(lines[: len(lines) * part // 4]))
        result = runner.invoke(app, ["load", "--db", str(db), str(logs)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert assert_facts_match_a_full_rebuild(db) > 0
    assert metrics("--db", str(db)) == metrics("--db", ":memory:", str(logs))


def test_a_late_record_turns_an_older_one_into_a_replay_and_recovers_an_error(tmp_path: Path, monkeypatch: Any) -> None:
    from loopscope.analyses.ingest import load as loader
    from loopscope.analyses.store import facts as loader_facts

    calls: list[int | None] = []

    def spy(con: Any, since_seq: int | None = None) -> None:
        calls.append(since_seq)
        loader_facts.refresh_facts(con, since_seq)

    monkeypatch.setattr(loader, "refresh_facts", spy)
    def rec(kind: str, conv: str, ts: str, **fields: Any) -> str:
        base = {"v": 1, "kind": kind, "ts": ts, "conversation_id": conv, "prompt_id": "p1"}
        if kind == "tool_call":
            base.update(tool_name="search", outcome="ok", is_error=False, step=0)
        else:
            base.update(exit_reason="end_turn")
        base.update(fields)
        return json.dumps(base) + "\n"

    first = tmp_path / "a.jsonl"
    first.write_text(
        rec("tool_call", "c1", "2026-11-20T10:00:05Z", tool_call_id="t1", is_error=True, outcome="permanent_fail")
        + rec("tool_call", "c2", "2026-11-20T11:00:00Z", tool_call_id="t1")
        + rec("loop_exit", "c2", "2026-11-20T11:00:01Z")
    )
    second = tmp_path / "b.jsonl"
    second.write_text(
        rec("tool_call", "c1", "2026-11-20T10:00:01Z", tool_call_id="t1", is_error=True, outcome="permanent_fail")
        + rec("tool_call", "c1", "2026-11-20T10:00:06Z", tool_call_id="t2", step=1)
        + rec("loop_exit", "c1", "2026-11-20T10:00:07Z")
    )
    db = tmp_path / "t.duckdb"
    assert runner.invoke(app, ["load", "--db", str(db), str(first)]).exit_code == 0
    assert_facts_match_a_full_rebuild(db)
    assert runner.invoke(app, ["load", "--db", str(db), str(second)]).exit_code == 0
    assert calls == [None, 3]  # a full build of the new store, then only c1 (records after seq 3)
    assert_facts_match_a_full_rebuild(db)
    m = metrics("--db", str(db))
    assert m == metrics("--db", ":memory:", str(first), str(second))
    # c1's t1 at 10:00:05 is now the replay of the one at 10:00:01; that earlier error is recovered at step 1.
    assert (m["replays"], m["errors"], m["recovered_errors"], m["open_prompts"]) == (1, 1, 1, 0)


def test_facts_match_the_views_for_infinite_timestamps_in_an_older_store(tmp_path: Path) -> None:
    """The load now refuses ts 'infinity', but a store loaded before may hold it: facts still equal the views."""
    from loopscope.analyses.store.facts import VIEWS_FACTS_SQL, refresh_facts
    from loopscope.analyses.store import connect

    con = connect(str(tmp_path / "old.duckdb"))
    call = "INSERT INTO tool_calls (seq, v, ts, conversation_id, prompt_id, agent, tool_call_id, tool_name, step, outcome, is_error, attempts, replayed) VALUES (?, 1, ?::TIMESTAMP, 'c', 'p', 'a', ?, 'n', ?, 'ok', ?, 1, false)"  # noqa: E501
    for seq, ts, call_id, step, is_error in [
        (1, "2026-11-20 10:00:00", "t1", 0, True),
        (2, "infinity", "t2", 1, False),
        (3, "infinity", "t2", 2, False),  # same id, same ts: the later seq is the replay
        (4, "-infinity", "t3", 0, True),
    ]:
        con.execute(call, [seq, ts, call_id, step, is_error])
    con.execute(
        "INSERT INTO loop_exits (seq, v, ts, conversation_id, prompt_id, agent, exit_reason) "
        "VALUES (5, 1, 'infinity'::TIMESTAMP, 'c', 'p', 'a', 'end_turn')"
    )
    refresh_facts(con)
    con.execute(VIEWS_FACTS_SQL)
    only_kept, only_views, n = con.execute(DIFF_SQL).fetchone()  # type: ignore[misc]
    assert (only_kept, only_views, n) == (0, 0, 1)
    row = con.execute("SELECT n_replays, n_errors, n_recovered, exit_reason FROM prompt_facts").fetchone()
    assert row == (1, 2, 2, "end_turn")


def _loop_rich_records(seed: int, conversations: int) -> list[str]:
    """Prompts that repeat a few calls (some errors, some flagged replays, some null fingerprints and
    result fingerprints), so every kind of loop and duplicate occurs, and some conversations span files."""
    import datetime as dt
    import random

    rng = random.Random(seed)
    base = dt.datetime(2026, 11, 1)
    calls = [("a", "f1"), ("b", "f2"), ("a", None), ("c", "f3"), ("b", "f1")]
    lines = []
    for c in range(conversations):
        for p in range(rng.randint(1, 3)):
            t = base + dt.timedelta(seconds=c * 100 + p * 20)
            for step in range(rng.randint(1, 12)):
                tool, fp = rng.choice(calls[: rng.randint(1, 5)])
                err = rng.random() < 0.35
                t += dt.timedelta(milliseconds=rng.randint(0, 900))
                rec: dict[str, Any] = {
                    "v": 1, "kind": "tool_call", "ts": t.isoformat() + "Z", "conversation_id": f"c{c}",
                    "prompt_id": f"p{p}", "tool_call_id": f"id{rng.randint(0, 30)}" if rng.random() < 0.2 else f"u{len(lines)}",
                    "tool_name": tool, "step": step, "args_fingerprint": fp, "outcome": "permanent_fail" if err else "ok",
                    "is_error": err, "error_message": rng.choice(["boom", "bang", None]) if err else None,
                    "replayed": rng.random() < 0.05,
                }
                if not err and rng.random() < 0.5:
                    rec["result_fingerprint"] = rng.choice(["r1", "r2"])
                lines.append(json.dumps(rec) + "\n")
            if rng.random() < 0.85:
                exit_ts = (t + dt.timedelta(seconds=1)).isoformat() + "Z"
                lines.append(json.dumps({"v": 1, "kind": "loop_exit", "ts": exit_ts, "conversation_id": f"c{c}",
                                         "prompt_id": f"p{p}", "exit_reason": rng.choice(["end_turn", "error"])}) + "\n")
    return lines


def test_loop_facts_built_from_repeated_calls_only_equal_the_plain_queries(tmp_path: Path) -> None:
    """The loop and duplicate facts are built from the calls that repeat only (store.facts: _narrowed,
    _ls_repeated_calls); on records full of loops they equal the per-prompt queries over every call,
    after a fresh load (full build) and after loads that touch a few conversations (filtered build)."""
    lines = _loop_rich_records(seed=7, conversations=300)
    log = tmp_path / "loops.jsonl"
    db = tmp_path / "t.duckdb"
    for part in (3, 4, 5):  # 60%, then grown twice
        log.write_text("".join(lines[: len(lines) * part // 5]))
        result = runner.invoke(app, ["load", "--db", str(db), str(log)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert_facts_match_a_full_rebuild(db)
        con = duckdb.connect(str(db), read_only=True)
        try:
            counts = {table: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
                      for table, _query in _loop_queries()}
        finally:
            con.close()
        assert all(n > 0 for n in counts.values()), counts  # every kind occurs, so the comparison means something
