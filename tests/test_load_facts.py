"""Incremental ``prompt_facts``: the first analysis after a load recomputes only the touched conversations.

The load writes records only; the facts are a cache the first analysis brings
up to date (``store.facts.ensure_facts``). Every check compares the
incrementally maintained tables with a full rebuild from the views, and the
CLI's output with a fresh in-memory load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
from typer.testing import CliRunner

from loopscope.analyses.store.facts import LOOP_FACT_TABLES, REFRESH_FACTS_SQL, _loop_queries, facts_fresh
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
    """Run an analysis (it brings the facts up to date), then compare every facts table with a full rebuild."""
    analysed = runner.invoke(app, ["metrics", "--db", str(db), "--format", "json"], catch_exceptions=False)
    assert analysed.exit_code == 0, analysed.output
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
    refresh = loader_facts.refresh_facts

    def spy(con: Any, since_seq: int | None = None) -> None:
        calls.append(since_seq)
        refresh(con, since_seq)

    assert not hasattr(loader, "refresh_facts")  # the load builds no facts: the first analysis does
    monkeypatch.setattr(loader_facts, "refresh_facts", spy)
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
    assert calls == [None]  # the loads build nothing; the first analysis built the new store's facts in full
    assert_facts_match_a_full_rebuild(db)
    assert calls == [None, 3]  # then only c1 (records after seq 3)
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


def _loop_rich_records(seed: int, conversations: int, collisions: bool = True) -> list[str]:
    """Prompts that repeat a few calls (some errors, some flagged replays, some null fingerprints and
    result fingerprints), so every kind of loop and duplicate occurs, and some conversations span files.
    ``collisions=False``: a reused tool_call_id names the same tool and arguments (replays, no id collision)."""
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
                    "prompt_id": f"p{p}",
                    "tool_call_id": (f"id{rng.randint(0, 30)}" + ("" if collisions else f"-{tool}-{fp}"))
                    if rng.random() < 0.2 else f"u{len(lines)}",
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


# --- The facts are built by the first analysis, not by the load (docs/loading.md, fifth pass) ---

ALL_FACT_TABLES = ("prompt_facts", "repeat_facts", "error_facts", *LOOP_FACT_TABLES)
TAU2 = Path(__file__).resolve().parent / "fixtures" / "tau2"
# What a user sees, each as the CLI prints it (JSON where there is a JSON format).
OUTPUTS = (
    ("metrics", "--format", "json"),
    ("metrics", "--by", "week", "--format", "json"),
    ("metrics", "--by", "tool", "--format", "json"),
    ("audit", "--format", "json"),
    ("unrecovered", "--format", "json"),
    ("lint", "--format", "json"),
)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own, as a user runs it."""
    return subprocess.run([sys.executable, "-c", "from loopscope.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=300)


def _outputs(db: Path) -> dict[str, str]:
    shown = {}
    for args in OUTPUTS:
        result = runner.invoke(app, [*args, "--db", str(db)], catch_exceptions=False)
        assert result.exit_code in (0, 3), result.output  # lint exits 3 when it finds something
        shown[" ".join(args)] = result.stdout
    return shown


def _fact_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in ALL_FACT_TABLES}
    finally:
        con.close()


def _state(db: Path) -> tuple[bool, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        n = con.execute("SELECT count(*) FROM prompt_facts").fetchone()[0]  # type: ignore[index]
        return facts_fresh(con), int(n)
    finally:
        con.close()


def test_load_then_analyse_in_another_process(tmp_path: Path) -> None:
    """`loopscope load` writes the records only; `metrics` in another process builds the facts, and prints
    what a load and analysis in one process print."""
    db = tmp_path / "t.duckdb"
    loaded = _cli("load", "--db", str(db), str(SAMPLE_LOGS), "--format", "json")
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout)["loaded"] > 0
    assert _state(db) == (False, 0)  # no facts yet
    analysed = _cli("metrics", "--db", str(db), "--format", "json")
    assert analysed.returncode == 0, analysed.stderr
    fresh, prompts = _state(db)
    assert fresh and prompts > 0  # the first analysis built and kept them
    one_process = _cli("metrics", "--db", ":memory:", str(SAMPLE_LOGS), "--format", "json")
    assert analysed.stdout == one_process.stdout
    again = _cli("metrics", "--db", str(db), "--format", "json")  # reads the kept facts
    assert again.stdout == analysed.stdout
    assert_facts_match_a_full_rebuild(db)


def _split_by_conversation(lines: list[str], parts: int) -> list[list[str]]:
    """The lines dealt round-robin into ``parts`` files: every conversation spans several files."""
    return [lines[i::parts] for i in range(parts)]


def test_incremental_loads_give_what_one_load_gives(tmp_path: Path) -> None:
    """Load A, analyse, load B, analyse; and load A, load B, analyse: the facts and every output equal those of
    one fresh load of A and B, and the facts equal a full rebuild."""
    for collisions in (False, True):  # with id collisions, load's notice counts them (from the records)
        _incremental_loads_give_what_one_load_gives(tmp_path / f"collisions-{collisions}", collisions)


def _incremental_loads_give_what_one_load_gives(tmp_path: Path, collisions: bool) -> None:
    tmp_path.mkdir()
    lines = _loop_rich_records(seed=11, conversations=100, collisions=collisions)
    files = []
    for i, part in enumerate(_split_by_conversation(lines, 3)):
        path = tmp_path / f"part{i}.jsonl"
        path.write_text("".join(part))
        files.append(path)
    fresh_db = tmp_path / "fresh.duckdb"
    assert runner.invoke(app, ["load", "--db", str(fresh_db), *map(str, files)]).exit_code == 0
    expected_outputs, expected_facts = _outputs(fresh_db), _fact_rows(fresh_db)
    assert all(expected_facts[t] for t in ALL_FACT_TABLES), "every table has rows: the comparison means something"

    analysed_between = tmp_path / "between.duckdb"
    for path in files:  # load A, analyse, load B, analyse, ...
        assert runner.invoke(app, ["load", "--db", str(analysed_between), str(path)]).exit_code == 0
        assert _state(analysed_between)[0] is False  # the load left the facts behind
        assert_facts_match_a_full_rebuild(analysed_between)  # an analysis brought them up to date, incrementally
    loaded_first = tmp_path / "first.duckdb"
    for path in files:  # load A, load B, ..., then analyse
        assert runner.invoke(app, ["load", "--db", str(loaded_first), str(path)]).exit_code == 0
    for db in (analysed_between, loaded_first):
        assert _outputs(db) == expected_outputs
        assert _fact_rows(db) == expected_facts
        assert_facts_match_a_full_rebuild(db)


def test_the_first_analysis_refreshes_only_the_touched_conversations(tmp_path: Path, monkeypatch: Any) -> None:
    """After a load that adds records to a few conversations the analysis recomputes those (since the saved seq),
    after a load that replaced a source's records it rebuilds."""
    from loopscope.analyses.store import facts

    seen: list[int | None] = []
    touched: list[int] = []
    refresh, run_each = facts.refresh_facts, facts._run_each

    def spy(con: Any, since_seq: int | None = None) -> None:
        seen.append(since_seq)
        refresh(con, since_seq)

    def spy_each(con: Any, script: str, params: list[object] | None = None) -> None:
        if script == facts.REPLACE_SOME_REPEATS_SQL:
            touched.append(len(params[0]))  # type: ignore[index, arg-type]
        run_each(con, script, params)

    monkeypatch.setattr(facts, "refresh_facts", spy)
    monkeypatch.setattr(facts, "_run_each", spy_each)
    lines = _loop_rich_records(seed=5, conversations=120, collisions=False)
    log = tmp_path / "grows.jsonl"
    db = tmp_path / "t.duckdb"
    log.write_text("".join(lines[: len(lines) - 20]))
    assert runner.invoke(app, ["load", "--db", str(db), str(log)]).exit_code == 0
    assert_facts_match_a_full_rebuild(db)
    con = duckdb.connect(str(db), read_only=True)
    max_seq = con.execute("SELECT max_seq FROM prompt_facts_state").fetchone()[0]  # type: ignore[index]
    con.close()
    log.write_text("".join(lines))  # grown: the last 20 lines, a few conversations
    assert runner.invoke(app, ["load", "--db", str(db), str(log)]).exit_code == 0
    assert_facts_match_a_full_rebuild(db)
    last = {json.loads(line)["conversation_id"] for line in lines[-20:]}
    assert seen == [None, max_seq] and touched == [len(last)]

    # A messages file read again with other contents replaces its records (same count, so the seqs it gets
    # back are the very ones it had): the facts must not be refreshed from the saved seq, but rebuilt.
    messages = tmp_path / "chat.jsonl"
    chat = [{"conversation_id": "m1", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "assistant", "content": "done"}]}]
    messages.write_text(json.dumps(chat[0]) + "\n")
    assert runner.invoke(app, ["load", "--db", str(db), str(messages)]).exit_code == 0
    assert_facts_match_a_full_rebuild(db)
    chat[0]["messages"][1]["tool_calls"][0]["function"]["name"] = "lookup"  # type: ignore[index]
    messages.write_text(json.dumps(chat[0]) + "\n")
    seen.clear()
    result = runner.invoke(app, ["load", "--db", str(db), str(messages), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert [d["status"] for d in json.loads(result.stdout)["details"]] == ["replaced"]
    assert_facts_match_a_full_rebuild(db)
    assert seen == [None]  # (load's notice of messages without timestamps asked for the facts: a rebuild)
    assert metrics("--db", str(db), "--by", "tool") == metrics("--db", ":memory:", str(log), str(messages), "--by", "tool")


def test_a_read_only_store_after_a_load_answers_from_the_views(tmp_path: Path) -> None:
    """Nobody analysed the store since the load, and it is opened read-only: the same figures, from the views."""
    from loopscope.analyses.metrics import compute_metrics
    from loopscope.analyses.store import connect

    db = tmp_path / "t.duckdb"
    assert runner.invoke(app, ["load", "--db", str(db), str(SAMPLE_LOGS)]).exit_code == 0
    ro = connect(str(db), read_only=True)
    try:
        assert not facts_fresh(ro)
        from_views = compute_metrics(ro).as_dict()
        assert not facts_fresh(ro)  # nothing was written
    finally:
        ro.close()
    rw = connect(str(db))
    try:
        assert compute_metrics(rw).as_dict() == from_views
        assert facts_fresh(rw)
    finally:
        rw.close()


def test_load_notices_without_facts_equal_those_with_them(tmp_path: Path) -> None:
    """`load` looks at the records before building any facts for its notices: the same notices as an analysis
    prints, whether a notice has something to say (chat files without timestamps, error text without a flag,
    reused tool_call_ids: counted from the records, without facts) or not (sample_logs, the tau2 results)."""
    messages = Path(__file__).resolve().parent / "fixtures" / "messages"
    reused_ids = tmp_path / "reused_ids.jsonl"
    reused_ids.write_text("".join(_loop_rich_records(seed=3, conversations=60)))
    kinds: set[str] = set()
    for name, paths in (("sample", [SAMPLE_LOGS]), ("tau2", sorted(TAU2.glob("*.json"))),
                        ("messages", sorted(messages.glob("*.json*"))), ("reused_ids", [reused_ids])):
        db = tmp_path / f"{name}.duckdb"
        loaded = runner.invoke(app, ["load", "--db", str(db), *map(str, paths), "--format", "json"])
        assert loaded.exit_code == 0, loaded.output
        from_load = json.loads(loaded.stdout)["notices"]
        kinds.update(n["kind"] for n in from_load)
        fresh, _ = _state(db)
        # the facts were built only when an undated record or a file violation could make a notice
        assert fresh == any(n["kind"] != "id_collisions" for n in from_load)
        with_facts = json.loads(runner.invoke(app, ["audit", "--db", str(db), "--format", "json"]).stdout)["notices"]
        assert from_load == with_facts
    assert {"no_timestamps", "unflagged_error_text", "id_collisions"} <= kinds  # notices with something to say


def test_a_store_from_a_newer_loopscope_gets_no_facts_written(tmp_path: Path) -> None:
    """A store a newer loopscope wrote is read as it is (store.connect): the first analysis after the load
    computes from the views and writes nothing, not even the facts' cache."""
    db = tmp_path / "t.duckdb"
    assert runner.invoke(app, ["load", "--db", str(db), str(SAMPLE_LOGS)]).exit_code == 0
    expected = metrics("--db", ":memory:", str(SAMPLE_LOGS))
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO _loopscope_migrations (name) VALUES ('m999_from_the_future')")
    con.close()
    result = runner.invoke(app, ["metrics", "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == expected
    assert _state(db) == (False, 0)


def test_the_analysis_after_a_load_in_one_process_keeps_the_stores_memory_limit(tmp_path: Path) -> None:
    """A load caps DuckDB's memory, then gives the connection back the limit store.connect set (a RESET gave
    DuckDB's default, 80% of memory, to the analysis and its facts that follow in the same process)."""
    from loopscope.analyses.ingest import load_paths
    from loopscope.analyses.metrics import compute_metrics
    from loopscope.analyses.store import connect

    con = connect(str(tmp_path / "t.duckdb"))
    try:
        before = con.execute("SELECT current_setting('memory_limit')").fetchone()
        load_paths(con, [SAMPLE_LOGS])
        assert con.execute("SELECT current_setting('memory_limit')").fetchone() == before
        compute_metrics(con)  # builds the facts under their own cap, then the same limit again
        assert facts_fresh(con)
        assert con.execute("SELECT current_setting('memory_limit')").fetchone() == before
    finally:
        con.close()
