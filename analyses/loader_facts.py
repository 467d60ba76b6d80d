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
"""

from __future__ import annotations

import duckdb

REFRESH_FACTS_SQL = """
CREATE OR REPLACE TEMP TABLE _ls_prompt_facts AS
WITH replays AS (
    SELECT conversation_id, prompt_id, count(*) AS n_replays
    FROM tool_calls_v WHERE is_replay GROUP BY conversation_id, prompt_id
),
errors AS (
    SELECT conversation_id, prompt_id, count(*) AS n_errors,
           count(*) FILTER (WHERE error_class = 'recovered') AS n_recovered
    FROM errors_v GROUP BY conversation_id, prompt_id
)
SELECT p.conversation_id, p.prompt_id, p.first_ts, p.last_ts, p.first_seq, p.agent, p.tags, p.n_tool_calls,
       p.is_open, p.exit_reason, p.normal_exit,
       coalesce(r.n_replays, 0) AS n_replays, coalesce(e.n_errors, 0) AS n_errors,
       coalesce(e.n_recovered, 0) AS n_recovered
FROM prompts_v p
LEFT JOIN replays r USING (conversation_id, prompt_id)
LEFT JOIN errors e USING (conversation_id, prompt_id)
"""
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


def refresh_facts(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild ``prompt_facts`` from the views (in the caller's transaction, if any)."""
    con.execute(REFRESH_FACTS_SQL)
    for statement in REPLACE_FACTS_SQL.split(";"):
        if statement.strip():
            con.execute(statement)
    con.execute(SAVE_STATE_SQL, list(_state(con)))


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
