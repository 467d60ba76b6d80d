"""Ordered, idempotent schema migrations for the loopscope DuckDB store.

Each migration is a function registered with ``@migration`` under a unique
name ``mNNN_…``; all of them live in this module, numbered without gaps in
the order they were written, and run in that order; applied names are kept in
``_loopscope_migrations``. ``migrate`` runs the ones not applied yet, each in
its own transaction, so opening an old database upgrades it and opening a new
one creates it. Two migrations were renumbered (``RENAMED``): a store that
applied them under their old names gets the new names too, and keeps the old
ones (so an older loopscope still recognises them).

A fresh (empty) store does not replay the chain: ``FRESH_SCHEMA_SQL`` creates the
tables as the chain leaves them at ``FRESH_SCHEMA_AT``, in one transaction with the
views, and records those migrations as applied; any later migration then runs as
usual. tests/test_store_schema.py proves both routes give the same schema.

``newer_store`` tells a store written by a newer loopscope apart: a migration
name this loopscope does not know, or a column its migrations do not create.

Table layout (record format v1 lives in docs/records.md):

- ``sources``: one row per loaded file (path, identity of its head, how many
  bytes and lines are already loaded) so a reload adds only new lines;
  ``superseded_by`` names the source that replaced an edited file's earlier
  version (whose rows are gone), NULL for a source in use.
- ``tool_calls`` / ``loop_exits``: one row per v1 record. ``seq`` is the
  position in the input over all loads (file load order, then line), used to
  break ``ts`` ties. ``extra`` keeps unknown fields as JSON.
- ``quarantine``: lines that could not be loaded, with file, line, reason and
  the raw text (capped).
- ``protocol_violations``: problems readers found in conversation logs
  (tool_use without a result, result for an unknown id, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

import duckdb

from loopscope.analyses import model
from loopscope.analyses.store.transaction import transaction

MigrationFn = Callable[[duckdb.DuckDBPyConnection], None]
MIGRATIONS: list[tuple[str, MigrationFn]] = []

CREATE_MIGRATIONS_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS _loopscope_migrations (
    name VARCHAR PRIMARY KEY,
    applied_at TIMESTAMP DEFAULT current_timestamp
)
"""
APPLIED_SQL = "SELECT name FROM _loopscope_migrations"
# DuckDB's own catalog functions rather than information_schema: the same rows, bound in a
# fraction of the time (every open of a store reads them; issue 14).
HAS_MIGRATIONS_TABLE_SQL = """
SELECT count(*) FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = current_schema() AND table_name = '_loopscope_migrations'
"""
COLUMNS_SQL = """
SELECT table_name, column_name FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = current_schema()
  AND table_oid IN (SELECT table_oid FROM duckdb_tables() WHERE database_name = current_database())
"""
RENAMED = {"m030_reviews": "m004_reviews", "m004_prompt_facts": "m005_prompt_facts"}
"""Old name -> new name of migrations renumbered so that the list runs without gaps, in the order written."""
RECORD_APPLIED_SQL = "INSERT INTO _loopscope_migrations (name) VALUES (?)"
RECORD_ALL_APPLIED_SQL = "INSERT INTO _loopscope_migrations (name) SELECT unnest($1::VARCHAR[])"
IS_EMPTY_SQL = """
SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND NOT temporary)
     + (SELECT count(*) FROM duckdb_views() WHERE database_name = current_database() AND NOT internal AND NOT temporary)
     + (SELECT count(*) FROM duckdb_sequences() WHERE database_name = current_database() AND NOT temporary)
"""


def migration(fn: MigrationFn) -> MigrationFn:
    """Register ``fn`` as the next migration; its name must carry the next number."""
    if any(name == fn.__name__ for name, _ in MIGRATIONS):
        raise ValueError(f"migration {fn.__name__} is registered twice")
    number = int(fn.__name__[1:4]) if fn.__name__[:1] == "m" and fn.__name__[1:4].isdigit() else -1
    if number != len(MIGRATIONS) + 1:
        raise ValueError(f"migration {fn.__name__} must be numbered m{len(MIGRATIONS) + 1:03d}: they run in order, without gaps")
    MIGRATIONS.append((fn.__name__, fn))
    return fn


_READ = frozenset({"(read from the store)"})


def applied_migrations(con: duckdb.DuckDBPyConnection) -> frozenset[str] | None:
    """The migration names the store records as applied; None when it has no migrations table."""
    if con.execute(HAS_MIGRATIONS_TABLE_SQL).fetchone() == (0,):
        return None
    return frozenset(row[0] for row in con.execute(APPLIED_SQL).fetchall())


def migrate(con: duckdb.DuckDBPyConnection, *, fresh_schema: bool = True,
            applied: frozenset[str] | None = _READ, empty: bool = False) -> list[str]:
    """Apply every migration not applied yet, in order; return the names applied now.

    Args:
        fresh_schema: on an empty store, create the schema at ``FRESH_SCHEMA_AT`` in one
            step instead of replaying the migrations up to it (False replays them: tests).
        applied: ``applied_migrations(con)`` when the caller has just read it (``connect``
            reads it once for this and ``newer_store``); read here when not given.
        empty: the caller knows the store holds nothing (a database ``connect`` has just created
            in memory), so it is not asked (a query of the catalog, about 5 ms).
    """
    recorded = applied_migrations(con) if applied is _READ else applied
    if recorded is not None:
        names = set(recorded)
    elif fresh_schema and (empty or _is_empty(con)):
        created = _create_fresh(con)
        return created + _run_pending(con, set(created))
    else:
        con.execute(CREATE_MIGRATIONS_TABLE_SQL)
        names = set()
    renamed = [new for old, new in RENAMED.items() if old in names and new not in names]
    if renamed:
        with transaction(con):
            for new in renamed:
                con.execute(RECORD_APPLIED_SQL, [new])
        names.update(renamed)
    return _run_pending(con, names)


def _run_pending(con: duckdb.DuckDBPyConnection, applied: set[str]) -> list[str]:
    done = []
    for name, fn in MIGRATIONS:
        if name in applied:
            continue
        with transaction(con):
            fn(con)
            con.execute(RECORD_APPLIED_SQL, [name])
        done.append(name)
    return done


def _is_empty(con: duckdb.DuckDBPyConnection) -> bool:
    return con.execute(IS_EMPTY_SQL).fetchone() == (0,)


def _create_fresh(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The schema at ``FRESH_SCHEMA_AT`` in one transaction; returns the migrations it stands for."""
    names = [name for name, _ in MIGRATIONS]
    covered = names[: names.index(FRESH_SCHEMA_AT) + 1]
    with transaction(con):
        # one batch: the tables, the scratchpad table and the views (model.create_model's, here
        # without its checks: the store is empty), then the two rows of values
        con.execute(";\n".join((FRESH_SCHEMA_SQL, model.SCRATCHPAD_TABLE_SQL, *model.MODEL_VIEWS)))
        con.execute(model.SCRATCHPAD_DEFAULTS_SQL, [list(model.DEFAULT_SCRATCHPAD_TOOLS)])
        con.execute(RECORD_ALL_APPLIED_SQL, [covered])
    return covered


def newer_store(con: duckdb.DuckDBPyConnection, applied: frozenset[str] | None = _READ) -> list[str]:
    """What in this store a newer loopscope wrote: unknown migration names, unknown columns (``table.column``).

    Empty for a store this loopscope knows (or an older one: missing migrations are not a sign).
    ``applied``: as for ``migrate``.
    """
    found: list[str] = []
    recorded = applied_migrations(con) if applied is _READ else applied
    if recorded is not None:
        known = {name for name, _ in MIGRATIONS} | set(RENAMED)
        found += sorted(name for name in recorded if name not in known)
    columns = con.execute(COLUMNS_SQL).fetchall()
    if not columns:  # an empty store (the usual first run): nothing to compare
        return found
    expected = _expected_columns()
    tables = {table for table, _ in expected}
    found += sorted(
        f"{table}.{column}" for table, column in columns if table in tables and (table, column) not in expected
    )
    return found


@cache
def _expected_columns() -> frozenset[tuple[str, str]]:
    """Every (table, column) this loopscope's migrations create.

    Read from the one-step schema's own text when it stands for the whole chain (no store to
    build: opening a store stays cheap), else from a throwaway in-memory store.
    """
    if FRESH_SCHEMA_AT == MIGRATIONS[-1][0]:
        return declared_columns(";\n".join((FRESH_SCHEMA_SQL, model.SCRATCHPAD_TABLE_SQL)))
    return _built_columns()


def _built_columns() -> frozenset[tuple[str, str]]:
    mem = duckdb.connect(":memory:")
    try:
        migrate(mem)
        return frozenset((t, c) for t, c in mem.execute(COLUMNS_SQL).fetchall())
    finally:
        mem.close()


_CREATE_TABLE_RE = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\(", re.IGNORECASE)
_NOT_A_COLUMN = ("PRIMARY", "UNIQUE", "CHECK", "FOREIGN", "CONSTRAINT")


def declared_columns(script: str) -> frozenset[tuple[str, str]]:
    """(table, column) of every ``CREATE TABLE`` in ``script``, this module's own DDL (no comments,
    plain names); tests/test_store_schema.py checks it against the chain's store."""
    found = set()
    for match in _CREATE_TABLE_RE.finditer(script):
        depth, start = 1, match.end()
        end = start
        while depth:
            depth += {"(": 1, ")": -1}.get(script[end], 0)
            end += 1
        parts, depth, current = [], 0, ""
        for ch in script[start : end - 1]:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts.append(current)
                current = ""
            else:
                current += ch
        parts.append(current)
        for part in parts:
            name = part.split()[0] if part.split() else ""
            if name and name.upper() not in _NOT_A_COLUMN:
                found.add((match.group(1), name))
    return frozenset(found)


@migration
def m001_records(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        """
        CREATE SEQUENCE IF NOT EXISTS record_seq START 1;
        CREATE TABLE sources (
            source_id INTEGER PRIMARY KEY,
            path VARCHAR NOT NULL,          -- absolute path (or a reader's name for it)
            input_format VARCHAR NOT NULL,  -- 'records', 'messages', 'otlp'
            head_hash VARCHAR,              -- hash of the first bytes: identity across rotation
            bytes_loaded BIGINT NOT NULL DEFAULT 0,
            lines_loaded BIGINT NOT NULL DEFAULT 0,
            first_loaded_at TIMESTAMP DEFAULT current_timestamp,
            last_loaded_at TIMESTAMP DEFAULT current_timestamp
        );
        CREATE TABLE tool_calls (
            seq BIGINT NOT NULL,            -- position in the input over all loads
            source_id INTEGER,
            line_no BIGINT,
            v INTEGER NOT NULL,
            ts TIMESTAMP NOT NULL,          -- UTC
            conversation_id VARCHAR NOT NULL,
            prompt_id VARCHAR NOT NULL,
            agent VARCHAR NOT NULL,
            trace_id VARCHAR,
            span_id VARCHAR,
            tags JSON,
            tool_call_id VARCHAR NOT NULL,
            tool_name VARCHAR NOT NULL,
            step INTEGER NOT NULL,
            input_shape JSON,
            args_fingerprint VARCHAR,
            outcome VARCHAR NOT NULL,
            is_error BOOLEAN NOT NULL,
            attempts INTEGER NOT NULL,
            latency_ms DOUBLE,
            error_type VARCHAR,
            error_message VARCHAR,
            replayed BOOLEAN NOT NULL,
            extra JSON                      -- unknown fields, kept as they came
        );
        CREATE TABLE loop_exits (
            seq BIGINT NOT NULL,
            source_id INTEGER,
            line_no BIGINT,
            v INTEGER NOT NULL,
            ts TIMESTAMP NOT NULL,
            conversation_id VARCHAR NOT NULL,
            prompt_id VARCHAR NOT NULL,
            agent VARCHAR NOT NULL,
            trace_id VARCHAR,
            span_id VARCHAR,
            tags JSON,
            exit_reason VARCHAR NOT NULL,
            steps INTEGER,
            tool_calls INTEGER,
            tool_errors INTEGER,
            max_tool_calls INTEGER,
            input_tokens BIGINT,
            output_tokens BIGINT,
            duration_ms DOUBLE,
            error_type VARCHAR,
            error_message VARCHAR,
            extra JSON
        );
        CREATE TABLE quarantine (
            source_id INTEGER,
            path VARCHAR NOT NULL,
            line_no BIGINT,
            reason VARCHAR NOT NULL,
            raw VARCHAR,                    -- the line as read, capped
            quarantined_at TIMESTAMP DEFAULT current_timestamp
        );
        CREATE TABLE protocol_violations (
            source_id INTEGER,
            conversation_id VARCHAR,
            prompt_id VARCHAR,
            tool_call_id VARCHAR,
            kind VARCHAR NOT NULL,          -- e.g. 'missing_result', 'unknown_result_id', 'result_out_of_order'
            detail VARCHAR
        );
        """
    )


@migration
def m002_model_views(con: duckdb.DuckDBPyConnection) -> None:
    # The normative views and the scratchpad tools (analyses/model.py holds their SQL).
    model.create_model(con)


@migration
def m003_source_identity(con: duckdb.DuckDBPyConnection) -> None:
    # head_hash covers the first head_len bytes of a records file (or, with
    # head_len NULL, the whole content of a file read by another reader), so
    # a grown file resumes where it stopped and a rotated copy is recognised.
    con.execute("ALTER TABLE sources ADD COLUMN head_len INTEGER")


@migration
def m004_reviews(con: duckdb.DuckDBPyConnection) -> None:
    # Reviewer verdicts from `loopscope review import`, one row per
    # conversation (a re-import replaces it). Verdicts are NULL when left blank.
    con.execute(
        """
        CREATE TABLE reviews (
            conversation_id VARCHAR PRIMARY KEY,
            stratum VARCHAR,                -- as written in the pack when drawn
            computed_class VARCHAR,         -- idem
            recovered_cleanly BOOLEAN,
            spun BOOLEAN,
            gave_up BOOLEAN,
            generic_apology BOOLEAN,
            notes VARCHAR,
            source_file VARCHAR NOT NULL,
            line_no BIGINT NOT NULL,
            imported_at TIMESTAMP DEFAULT current_timestamp
        )
        """
    )


@migration
def m005_prompt_facts(con: duckdb.DuckDBPyConnection) -> None:
    # The normative views materialised per prompt, so the dashboard metrics
    # over 10M records are an aggregation of ~2M rows instead of windows over
    # 10M. Rebuilt from the views after every load (store/facts.py); the state
    # row says which table contents it was built from, so a stale copy is
    # never read.
    con.execute(
        """
        CREATE TABLE prompt_facts (
            conversation_id VARCHAR, prompt_id VARCHAR, first_ts TIMESTAMP, last_ts TIMESTAMP,
            first_seq BIGINT, agent VARCHAR, tags JSON, n_tool_calls BIGINT, is_open BOOLEAN,
            exit_reason VARCHAR, normal_exit BOOLEAN, n_replays BIGINT, n_errors BIGINT, n_recovered BIGINT
        );
        CREATE TABLE prompt_facts_state (
            tool_calls BIGINT, loop_exits BIGINT, max_seq BIGINT, refreshed_at TIMESTAMP
        );
        """
    )


@migration
def m006_calls_not_ids(con: duckdb.DuckDBPyConnection) -> None:
    # Spec of 2026-11-24: replays are repeats of the same call (not of an id),
    # id collisions are new calls, scratchpad tools never recover an error,
    # resolved_later. The views anew, and the per-prompt facts with their new
    # column, rebuilt on next use.
    model.create_model(con)
    con.execute("ALTER TABLE prompt_facts ADD COLUMN IF NOT EXISTS n_resolved_later BIGINT")
    con.execute("DELETE FROM prompt_facts")
    con.execute("DELETE FROM prompt_facts_state")


@migration
def m007_views_without_full_sorts(con: duckdb.DuckDBPyConnection) -> None:
    # Issue 14: the same views (same rows), computed without numbering every
    # record (only the tool_call_ids used twice are windowed), without a
    # lateral lookup per error for resolved_later or per id collision for its
    # first use.
    model.create_model(con)


@migration
def m008_facts_max_ok_step(con: duckdb.DuckDBPyConnection) -> None:
    # Issue 14: the last step with a success of a non-scratchpad tool, per
    # prompt, so the error classes (errors_v) can be computed over prompt_facts
    # instead of grouping every record again. Rebuilt on next use.
    con.execute("ALTER TABLE prompt_facts ADD COLUMN IF NOT EXISTS max_ok_step INTEGER")
    con.execute("DELETE FROM prompt_facts")
    con.execute("DELETE FROM prompt_facts_state")


_M009_PROMPT_COLUMNS = """
ALTER TABLE prompt_facts ADD COLUMN max_tool_calls INTEGER;
ALTER TABLE prompt_facts ADD COLUMN exit_ts TIMESTAMP;
"""
_M009_TABLES = """
CREATE TABLE repeat_facts (seq BIGINT, conversation_id VARCHAR, is_replay BOOLEAN, is_id_collision BOOLEAN);
CREATE TABLE error_facts (
    seq BIGINT, source_id INTEGER, line_no BIGINT, v INTEGER, ts TIMESTAMP, conversation_id VARCHAR,
    prompt_id VARCHAR, agent VARCHAR, trace_id VARCHAR, span_id VARCHAR, tags JSON, tool_call_id VARCHAR,
    tool_name VARCHAR, step INTEGER, input_shape JSON, args_fingerprint VARCHAR, outcome VARCHAR,
    is_error BOOLEAN, attempts INTEGER, latency_ms DOUBLE, error_type VARCHAR, error_message VARCHAR,
    replayed BOOLEAN, extra JSON, is_replay BOOLEAN, is_id_collision BOOLEAN, is_scratchpad BOOLEAN,
    error_class VARCHAR, prompt_first_ts TIMESTAMP, prompt_first_seq BIGINT, exit_reason VARCHAR,
    resolved_later BOOLEAN, resolved_in_prompt VARCHAR
);
"""


@migration
def m009_repeat_and_error_facts(con: duckdb.DuckDBPyConnection) -> None:
    # Issue 14: the budget in force and the exit time per prompt (budget
    # pressure reads prompt_facts, not prompts_v); per-call replay facts (the calls whose tool_call_id repeats in
    # their conversation, numbered once) and per-error facts (errors_v's rows:
    # tool_calls' columns, then the view's), kept fresh by the load with
    # prompt_facts (store/facts.py), so the analyses stop grouping and
    # windowing every record. Rebuilt on next use. error_facts repeats
    # tool_calls' columns: a migration that adds one to tool_calls adds it here.
    con.execute(_M009_PROMPT_COLUMNS + _M009_TABLES)
    con.execute("DELETE FROM prompt_facts")
    con.execute("DELETE FROM prompt_facts_state")


_M010_TABLES = """
CREATE TABLE retry_loop_facts (
    conversation_id VARCHAR, prompt_id VARCHAR, tool_name VARCHAR, args_fingerprint VARCHAR, error_message VARCHAR,
    calls BIGINT, first_step INTEGER, last_step INTEGER, first_ts TIMESTAMP, last_ts TIMESTAMP,
    tool_call_ids VARCHAR[]
);
CREATE TABLE no_progress_facts (
    conversation_id VARCHAR, prompt_id VARCHAR, tool_name VARCHAR, args_fingerprint VARCHAR,
    result_fingerprint VARCHAR, calls BIGINT, first_step INTEGER, last_step INTEGER, first_ts TIMESTAMP,
    last_ts TIMESTAMP, tool_call_ids VARCHAR[]
);
CREATE TABLE cycle_facts (
    conversation_id VARCHAR, prompt_id VARCHAR, tool_name VARCHAR, args_fingerprint VARCHAR,
    other_tool_name VARCHAR, other_args_fingerprint VARCHAR, calls BIGINT, first_step INTEGER, last_step INTEGER,
    first_ts TIMESTAMP, last_ts TIMESTAMP
);
CREATE TABLE duplicate_facts (
    conversation_id VARCHAR, prompt_id VARCHAR, tool_name VARCHAR, args_fingerprint VARCHAR,
    original_tool_call_id VARCHAR, original_step INTEGER, duplicates BIGINT, duplicate_tool_call_ids VARCHAR[],
    duplicate_outcomes VARCHAR[], first_duplicate_ts TIMESTAMP
);
"""


@migration
def m010_loop_facts(con: duckdb.DuckDBPyConnection) -> None:
    # Issue 14: the retry loops, no-progress loops, cycles and duplicate
    # executions of every prompt (each lies inside one prompt), kept fresh by
    # the load (store/facts.py), so the audit stops grouping and windowing
    # every record for them.
    # Rebuilt on next use.
    con.execute(_M010_TABLES)
    con.execute("DELETE FROM prompt_facts")
    con.execute("DELETE FROM prompt_facts_state")


@migration
def m011_superseded_sources(con: duckdb.DuckDBPyConnection) -> None:
    # A records file edited in its first 4 KiB (a new head) whose records are mostly those of
    # the source loaded from the same path replaces that source (its rows go). The old row stays,
    # pointing at the source that replaced it, so an older copy of the file (a backup, the same
    # head) is known for what it is instead of bringing its records back (docs/loading.md).
    con.execute("ALTER TABLE sources ADD COLUMN superseded_by INTEGER")


# The tables as the chain leaves them at FRESH_SCHEMA_AT (m001's tables with m003's head_len and m011's superseded_by,
# m004's reviews, m005's prompt facts with m006's n_resolved_later and m008's max_ok_step, m009's budget columns and
# its repeat and error facts, m010's loop and duplicate facts: columns in the
# chain's order), created on an empty store in one step with the scratchpad tools and the views of
# analyses/model.py. A new migration that changes a table must change this too (or leave
# FRESH_SCHEMA_AT where it is: the new migration then runs after it, as on an old store); one
# that only recreates the views can move FRESH_SCHEMA_AT to itself. tests/test_store_schema.py
# compares the two routes.
FRESH_SCHEMA_AT = "m011_superseded_sources"
FRESH_SCHEMA_SQL = CREATE_MIGRATIONS_TABLE_SQL + """;
CREATE SEQUENCE IF NOT EXISTS record_seq START 1;
CREATE TABLE sources (
    source_id INTEGER PRIMARY KEY,
    path VARCHAR NOT NULL,
    input_format VARCHAR NOT NULL,
    head_hash VARCHAR,
    bytes_loaded BIGINT NOT NULL DEFAULT 0,
    lines_loaded BIGINT NOT NULL DEFAULT 0,
    first_loaded_at TIMESTAMP DEFAULT current_timestamp,
    last_loaded_at TIMESTAMP DEFAULT current_timestamp,
    head_len INTEGER,
    superseded_by INTEGER
);
CREATE TABLE tool_calls (
    seq BIGINT NOT NULL, source_id INTEGER, line_no BIGINT, v INTEGER NOT NULL, ts TIMESTAMP NOT NULL,
    conversation_id VARCHAR NOT NULL, prompt_id VARCHAR NOT NULL, agent VARCHAR NOT NULL, trace_id VARCHAR,
    span_id VARCHAR, tags JSON, tool_call_id VARCHAR NOT NULL, tool_name VARCHAR NOT NULL, step INTEGER NOT NULL,
    input_shape JSON, args_fingerprint VARCHAR, outcome VARCHAR NOT NULL, is_error BOOLEAN NOT NULL,
    attempts INTEGER NOT NULL, latency_ms DOUBLE, error_type VARCHAR, error_message VARCHAR,
    replayed BOOLEAN NOT NULL, extra JSON
);
CREATE TABLE loop_exits (
    seq BIGINT NOT NULL, source_id INTEGER, line_no BIGINT, v INTEGER NOT NULL, ts TIMESTAMP NOT NULL,
    conversation_id VARCHAR NOT NULL, prompt_id VARCHAR NOT NULL, agent VARCHAR NOT NULL, trace_id VARCHAR,
    span_id VARCHAR, tags JSON, exit_reason VARCHAR NOT NULL, steps INTEGER, tool_calls INTEGER,
    tool_errors INTEGER, max_tool_calls INTEGER, input_tokens BIGINT, output_tokens BIGINT, duration_ms DOUBLE,
    error_type VARCHAR, error_message VARCHAR, extra JSON
);
CREATE TABLE quarantine (
    source_id INTEGER, path VARCHAR NOT NULL, line_no BIGINT, reason VARCHAR NOT NULL, raw VARCHAR,
    quarantined_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE protocol_violations (
    source_id INTEGER, conversation_id VARCHAR, prompt_id VARCHAR, tool_call_id VARCHAR, kind VARCHAR NOT NULL,
    detail VARCHAR
);
CREATE TABLE reviews (
    conversation_id VARCHAR PRIMARY KEY, stratum VARCHAR, computed_class VARCHAR, recovered_cleanly BOOLEAN,
    spun BOOLEAN, gave_up BOOLEAN, generic_apology BOOLEAN, notes VARCHAR, source_file VARCHAR NOT NULL,
    line_no BIGINT NOT NULL, imported_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE prompt_facts (
    conversation_id VARCHAR, prompt_id VARCHAR, first_ts TIMESTAMP, last_ts TIMESTAMP, first_seq BIGINT,
    agent VARCHAR, tags JSON, n_tool_calls BIGINT, is_open BOOLEAN, exit_reason VARCHAR, normal_exit BOOLEAN,
    n_replays BIGINT, n_errors BIGINT, n_recovered BIGINT, n_resolved_later BIGINT, max_ok_step INTEGER,
    max_tool_calls INTEGER, exit_ts TIMESTAMP
);
CREATE TABLE prompt_facts_state (tool_calls BIGINT, loop_exits BIGINT, max_seq BIGINT, refreshed_at TIMESTAMP);
""" + _M009_TABLES + _M010_TABLES
