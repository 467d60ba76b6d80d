"""A ``:memory:`` store builds its loop facts when an analysis first reads them (issue 14).

``store.open_for_analysis`` opens a ``--db :memory:`` store inside ``facts.loops_on_demand``: the
store dies with the connection, so a command that reads no loop (``metrics``, ``unrecovered``,
``lint``, ...) skips building ``retry_loop_facts``, ``no_progress_facts``, ``cycle_facts`` and
``duplicate_facts``. These check that such a command leaves them unbuilt, that the first read
builds them with the same rows a store on disk holds, also after a second load on the same
connection (an incremental refresh while they wait), and that a store on disk still gets them with
the other facts.
"""

from __future__ import annotations

from pathlib import Path

from loopscope.analyses import incidents, loops
from loopscope.analyses.ingest import load_paths
from loopscope.analyses.metrics import compute_metrics
from loopscope.analyses.store import open_for_analysis
from loopscope.analyses.store.facts import LOOP_FACT_TABLES, loops_pending

SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"


def _rows(con, table: str) -> list[tuple]:
    return sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=repr)


def _loops(con, selection) -> tuple:
    return (incidents.retry_loops(con, selection), incidents.duplicate_executions(con, selection),
            loops.no_progress_loops(con, selection), loops.cycles(con, selection))


def _on_disk(tmp_path: Path) -> tuple[dict[str, list[tuple]], tuple]:
    with open_for_analysis(str(tmp_path / "disk.duckdb"), [str(SAMPLE_LOGS)]) as (con, selection, _):
        compute_metrics(con, selection)
        assert not loops_pending(con)
        tables = {t: _rows(con, t) for t in LOOP_FACT_TABLES}
        return tables, _loops(con, selection)


def test_a_memory_store_builds_its_loop_facts_only_when_read(tmp_path: Path) -> None:
    expected_tables, expected_loops = _on_disk(tmp_path)
    assert sum(map(bool, expected_tables.values())) >= 2, "sample_logs/ has loops: the comparison means something"
    with open_for_analysis(":memory:", [str(SAMPLE_LOGS)]) as (con, selection, _):
        compute_metrics(con, selection)  # builds the other facts
        assert loops_pending(con)
        assert all(not _rows(con, t) for t in LOOP_FACT_TABLES)
        assert _loops(con, selection) == expected_loops
        assert not loops_pending(con)
        assert {t: _rows(con, t) for t in LOOP_FACT_TABLES} == expected_tables


def test_a_second_load_while_the_loops_wait_gives_the_same_loops(tmp_path: Path) -> None:
    expected_tables, expected_loops = _on_disk(tmp_path)
    first, second = sorted(str(p) for p in SAMPLE_LOGS.glob("*.jsonl"))
    with open_for_analysis(":memory:", [first]) as (con, _selection, _):
        compute_metrics(con, _selection)
        assert loops_pending(con)
        summary = load_paths(con, [second])
        compute_metrics(con, _selection)  # an incremental refresh: the loops still wait, whole
        assert loops_pending(con)
        from loopscope.analyses.selection import Selection

        everything = Selection()
        assert summary.source_ids
        assert _loops(con, everything) == expected_loops
        assert {t: _rows(con, t) for t in LOOP_FACT_TABLES} == expected_tables


def test_a_store_on_disk_gets_its_loop_facts_with_the_others(tmp_path: Path) -> None:
    tables, found = _on_disk(tmp_path)
    assert sum(map(bool, tables.values())) >= 2 and any(found)
