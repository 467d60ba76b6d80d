"""Ordered, idempotent schema migrations for the loopscope DuckDB store.

Each migration is a function registered with ``@migration`` under a unique
name (``m001_…``, run in name order); keep them in this module (the views of
``model`` excepted) so that opening a store always knows all of them; applied names are kept in ``_loopscope_migrations``. ``migrate``
runs the ones not applied yet, each in its own transaction, so opening an old
database upgrades it and opening a new one creates it.

Table layout (record format v1 lives in docs/records.md):

- ``sources``: one row per loaded file (path, identity of its head, how many
  bytes and lines are already loaded) so a reload adds only new lines.
- ``tool_calls`` / ``loop_exits``: one row per v1 record. ``seq`` is the
  position in the input over all loads (file load order, then line), used to
  break ``ts`` ties. ``extra`` keeps unknown fields as JSON.
- ``quarantine``: lines that could not be loaded, with file, line, reason and
  the raw text (capped).
- ``protocol_violations``: problems readers found in conversation logs
  (tool_use without a result, result for an unknown id, ...).
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

MigrationFn = Callable[[duckdb.DuckDBPyConnection], None]
MIGRATIONS: list[tuple[str, MigrationFn]] = []

CREATE_MIGRATIONS_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS _loopscope_migrations (
    name VARCHAR PRIMARY KEY,
    applied_at TIMESTAMP DEFAULT current_timestamp
)
"""
APPLIED_SQL = "SELECT name FROM _loopscope_migrations"
RECORD_APPLIED_SQL = "INSERT INTO _loopscope_migrations (name) VALUES (?)"


def migration(fn: MigrationFn) -> MigrationFn:
    """Register ``fn`` as a migration; migrations run in the order of their names."""
    if any(name == fn.__name__ for name, _ in MIGRATIONS):
        raise ValueError(f"migration {fn.__name__} is registered twice")
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every migration not applied yet; return the names applied now."""
    con.execute(CREATE_MIGRATIONS_TABLE_SQL)
    applied = {row[0] for row in con.execute(APPLIED_SQL).fetchall()}
    done = []
    for name, fn in sorted(MIGRATIONS):
        if name in applied:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            fn(con)
            con.execute(RECORD_APPLIED_SQL, [name])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        done.append(name)
    return done


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
def m003_source_identity(con: duckdb.DuckDBPyConnection) -> None:
    # head_hash covers the first head_len bytes of a records file (or, with
    # head_len NULL, the whole content of a file read by another reader), so
    # a grown file resumes where it stopped and a rotated copy is recognised.
    con.execute("ALTER TABLE sources ADD COLUMN head_len INTEGER")


@migration
def m030_reviews(con: duckdb.DuckDBPyConnection) -> None:
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
def m004_prompt_facts(con: duckdb.DuckDBPyConnection) -> None:
    # The normative views materialised per prompt, so the dashboard metrics
    # over 10M records are an aggregation of ~2M rows instead of windows over
    # 10M. Rebuilt from the views after every load (loader_facts); the state
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
