"""Per-prompt facts materialised from the normative views, for fast metrics.

``prompts_v`` / ``tool_calls_v`` / ``errors_v`` define replays, prompts and
error classes once (``model``); computing them means windows and joins over
every record, seconds at 10M records. ``refresh_facts`` stores their per-prompt
result in ``prompt_facts`` (one row per prompt: the prompt's columns plus its
replay, error and recovered-error counts), and the load calls it after every
load. ``facts_fresh`` says whether the table still matches the records (same
row counts and highest ``seq``); the metrics read ``prompt_facts`` only then,
and fall back to the views otherwise (e.g. a read-only database changed by
something other than the loader).

Incremental refresh. Everything a prompt's facts depend on lies inside its
conversation (prompts are keyed by conversation and prompt id, replays by
conversation and tool_call id), so after a load that added records to a few
conversations only those conversations' facts are recomputed: the views are
filtered by a bound list of conversation ids, which DuckDB pushes below their
windows and groupings. A load that touches many conversations rebuilds all.
"""

from __future__ import annotations

import duckdb

_REFRESH_TEMPLATE = """
CREATE OR REPLACE TEMP TABLE _ls_prompt_facts AS
WITH replays AS (
    SELECT conversation_id, prompt_id, count(*) AS n_replays
    FROM tool_calls_v WHERE is_replay AND {scope} GROUP BY conversation_id, prompt_id
),
errors AS (
    SELECT conversation_id, prompt_id, count(*) AS n_errors,
           count(*) FILTER (WHERE error_class = 'recovered') AS n_recovered
    FROM errors_v WHERE {scope} GROUP BY conversation_id, prompt_id
)
SELECT p.conversation_id, p.prompt_id, p.first_ts, p.last_ts, p.first_seq, p.agent, p.tags, p.n_tool_calls,
       p.is_open, p.exit_reason, p.normal_exit,
       coalesce(r.n_replays, 0) AS n_replays, coalesce(e.n_errors, 0) AS n_errors,
       coalesce(e.n_recovered, 0) AS n_recovered
FROM (SELECT * FROM prompts_v WHERE {scope}) p
LEFT JOIN replays r USING (conversation_id, prompt_id)
LEFT JOIN errors e USING (conversation_id, prompt_id)
"""
REFRESH_FACTS_SQL = _REFRESH_TEMPLATE.replace("{scope}", "TRUE")
# $1: the conversation ids to recompute.
REFRESH_SOME_FACTS_SQL = _REFRESH_TEMPLATE.replace("{scope}", "list_contains($1::VARCHAR[], conversation_id)")
TOUCHED_SQL = """
SELECT DISTINCT conversation_id FROM (
    SELECT conversation_id FROM tool_calls WHERE seq > $1
    UNION ALL
    SELECT conversation_id FROM loop_exits WHERE seq > $1
)
"""
REPLACE_SOME_FACTS_SQL = "DELETE FROM prompt_facts WHERE list_contains($1::VARCHAR[], conversation_id)"
INSERT_SOME_FACTS_SQL = """
INSERT INTO prompt_facts SELECT * FROM _ls_prompt_facts;
DROP TABLE _ls_prompt_facts;
DELETE FROM prompt_facts_state;
"""
INCREMENTAL_MAX_CONVERSATIONS = 5000
"""Above this many touched conversations, one full rebuild is cheaper than a filtered one."""
REPLACE_FACTS_SQL = """
DELETE FROM prompt_facts;
INSERT INTO prompt_facts SELECT * FROM _ls_prompt_facts;
DROP TABLE _ls_prompt_facts;
DELETE FROM prompt_facts_state;
"""
STATE_NOW_SQL = """
SELECT (SELECT count(*) FROM tool_calls), (SELECT count(*) FROM loop_exits),
       greatest((SELECT coalesce(max(seq), 0) FROM tool_calls), (SELECT coalesce(max(seq), 0) FROM loop_exits))
"""
SAVE_STATE_SQL = "INSERT INTO prompt_facts_state VALUES (?, ?, ?, current_timestamp)"
STATE_SAVED_SQL = "SELECT tool_calls, loop_exits, max_seq FROM prompt_facts_state"


def _state(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int]:
    row = con.execute(STATE_NOW_SQL).fetchone()
    return (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)


def refresh_facts(con: duckdb.DuckDBPyConnection, since_seq: int | None = None) -> None:
    """Bring ``prompt_facts`` up to date from the views (in the caller's transaction, if any).

    Args:
        con: the store.
        since_seq: if the facts were fresh when the records up to this ``seq``
            were all there, recompute only the conversations of the records
            added after it; None rebuilds everything.
    """
    if since_seq is not None:
        touched = [row[0] for row in con.execute(TOUCHED_SQL, [since_seq]).fetchall()]
        if len(touched) <= INCREMENTAL_MAX_CONVERSATIONS:
            con.execute(REFRESH_SOME_FACTS_SQL, [touched])
            con.execute(REPLACE_SOME_FACTS_SQL, [touched])
            _run_each(con, INSERT_SOME_FACTS_SQL)
            con.execute(SAVE_STATE_SQL, list(_state(con)))
            return
    con.execute(REFRESH_FACTS_SQL)
    _run_each(con, REPLACE_FACTS_SQL)
    con.execute(SAVE_STATE_SQL, list(_state(con)))


def _run_each(con: duckdb.DuckDBPyConnection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            con.execute(statement)


def facts_fresh(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``prompt_facts`` was built from the records now in the store."""
    try:
        saved = con.execute(STATE_SAVED_SQL).fetchall()
    except duckdb.CatalogException:
        return False  # a database from before the facts table
    return len(saved) == 1 and tuple(int(x) for x in saved[0]) == _state(con)


def ensure_facts(con: duckdb.DuckDBPyConnection) -> bool:
    """Make ``prompt_facts`` fresh if it is not and the store is writable; return whether it is fresh."""
    if facts_fresh(con):
        return True
    try:
        refresh_facts(con)
    except (duckdb.InvalidInputException, duckdb.PermissionException, duckdb.TransactionException):
        return False  # read-only: the caller reads the views instead
    return True
