"""A fresh store's one-step schema equals what the migration chain builds (issue 14: a fresh store
opens fast; issue 20: the chain stays the way old stores upgrade)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from loopscope.analyses.store import connect
from loopscope.analyses.store.migrations import FRESH_SCHEMA_AT, MIGRATIONS, migrate, newer_store

SAMPLE = Path(__file__).resolve().parent.parent / "sample_logs"

# Everything a store's schema is made of, from DuckDB's own catalog.
CATALOG = {
    "columns": """SELECT table_name, column_index, column_name, data_type, column_default, is_nullable,
                         numeric_precision, numeric_scale
                  FROM duckdb_columns() WHERE database_name = current_database() AND NOT internal
                  ORDER BY table_name, column_index""",
    "constraints": """SELECT table_name, constraint_type, constraint_text, constraint_column_names
                      FROM duckdb_constraints() WHERE database_name = current_database()
                      ORDER BY ALL""",
    "views": """SELECT view_name, sql FROM duckdb_views()
                WHERE database_name = current_database() AND NOT internal ORDER BY view_name""",
    "sequences": """SELECT sequence_name, start_value, min_value, max_value, increment_by, cycle
                    FROM duckdb_sequences() WHERE database_name = current_database() ORDER BY ALL""",
    "indexes": "SELECT table_name, index_name, sql FROM duckdb_indexes() ORDER BY ALL",
    "tables": """SELECT table_name, has_primary_key, column_count FROM duckdb_tables()
                 WHERE database_name = current_database() ORDER BY table_name""",
    "scratchpad_tools": "SELECT tool_name FROM scratchpad_tools ORDER BY ALL",
    "migrations": "SELECT name FROM _loopscope_migrations ORDER BY rowid",
}


def _schema(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {name: con.execute(sql).fetchall() for name, sql in CATALOG.items()}


@pytest.mark.parametrize("where", ["memory", "file"])
def test_fresh_schema_equals_the_migration_chain(tmp_path: Path, where: str) -> None:
    def store(name: str) -> duckdb.DuckDBPyConnection:
        return duckdb.connect(":memory:" if where == "memory" else str(tmp_path / f"{name}.duckdb"))

    chain, fresh = store("chain"), store("fresh")
    assert migrate(chain, fresh_schema=False) == [name for name, _ in MIGRATIONS]
    assert migrate(fresh) == [name for name, _ in MIGRATIONS]
    a, b = _schema(chain), _schema(fresh)
    assert a["columns"] and a["views"] and a["scratchpad_tools"] == [("think",)]  # the catalog queries see it
    for part in CATALOG:
        assert a[part] == b[part], part
    assert migrate(chain) == migrate(fresh) == []  # nothing left to apply on either


def test_an_empty_store_takes_the_one_step_route_and_a_non_empty_one_the_chain() -> None:
    names = [name for name, _ in MIGRATIONS]
    assert FRESH_SCHEMA_AT in names
    con = duckdb.connect(":memory:")
    migrate(con)
    # one transaction (DuckDB's current_timestamp is the transaction's start) recorded what it covers
    stamps = con.execute("SELECT DISTINCT applied_at FROM _loopscope_migrations WHERE name <= ?", [FRESH_SCHEMA_AT])
    assert len(stamps.fetchall()) == 1
    con2 = duckdb.connect(":memory:")
    con2.execute("CREATE TABLE unrelated (x INTEGER)")  # not empty: the chain runs (and works around it)
    assert migrate(con2) == names
    assert _schema(con)["columns"] == [r for r in _schema(con2)["columns"] if r[0] != "unrelated"]


def test_an_upgraded_store_equals_a_fresh_one(tmp_path: Path) -> None:
    """A store left at an older migration (as an older loopscope wrote it) upgrades to the same schema."""
    old = duckdb.connect(str(tmp_path / "old.duckdb"))
    migrate(old, fresh_schema=False)
    # roll the store back to m003: what m004.. create is dropped, their names forgotten
    old.execute("DROP TABLE reviews; DROP TABLE prompt_facts; DROP TABLE prompt_facts_state; "
                "DROP TABLE repeat_facts; DROP TABLE error_facts; DROP TABLE retry_loop_facts; "
                "DROP TABLE no_progress_facts; DROP TABLE cycle_facts; DROP TABLE duplicate_facts; "
                "ALTER TABLE sources DROP COLUMN superseded_by")
    old.execute("DELETE FROM _loopscope_migrations WHERE name > 'm004'")
    old.close()
    upgraded = connect(tmp_path / "old.duckdb")
    fresh = connect(":memory:")
    a, b = _schema(upgraded), _schema(fresh)
    for part in CATALOG:
        assert a[part] == b[part], part


def test_the_expected_columns_read_from_the_schema_text_are_the_chains() -> None:
    from loopscope.analyses.store.migrations import COLUMNS_SQL, _built_columns, _expected_columns

    chain = duckdb.connect(":memory:")
    migrate(chain, fresh_schema=False)
    built = frozenset(chain.execute(COLUMNS_SQL).fetchall())
    assert len(built) > 60 and ("prompt_facts", "n_resolved_later") in built and ("sources", "head_len") in built
    assert _expected_columns() == built == _built_columns()


def test_the_newer_store_check_still_sees_an_unknown_column(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    assert newer_store(con) == []
    con.execute("ALTER TABLE tool_calls ADD COLUMN from_the_future VARCHAR")
    assert newer_store(con) == ["tool_calls.from_the_future"]
    con.close()


def test_a_fresh_store_loads_and_answers_like_a_chain_built_one(tmp_path: Path) -> None:
    from loopscope.analyses.ingest import load_paths
    from loopscope.analyses.metrics import metrics_by
    from loopscope.analyses.selection import Selection

    chain = duckdb.connect(str(tmp_path / "chain.duckdb"))
    chain.execute("SET TimeZone = 'UTC'")
    migrate(chain, fresh_schema=False)
    fresh = connect(tmp_path / "fresh.duckdb")
    figures = []
    for con in (chain, fresh):
        load_paths(con, [SAMPLE])
        figures.append([m.as_dict() for m in metrics_by(con, Selection(), "week")])
    assert figures[0] == figures[1] and figures[0]
