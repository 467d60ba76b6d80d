"""Property test: the audit's "triage first" list is ``unrecovered``'s list in the triage order, cut.

``recovery.triage_first`` counts the unrecovered errors per conversation first
and computes the first error, the figures and the previous attempts only for
the conversations at or above the ``limit``-th largest count. The reference
here is ``first_unrecovered_all`` with no limit (every conversation, its own
query), sorted in Python by the documented order (most unrecovered errors,
most previous attempts, newest, id) and cut: the same rows and the same total,
on random stores, over every prompt and over a time selection.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopscope.analyses import recovery
from loopscope.analyses.ingest.load import load_paths
from loopscope.analyses.selection import Selection

_spec = importlib.util.spec_from_file_location("loopscope_test_triage_first_records", Path(__file__).parent / "test_triage_property.py")
assert _spec and _spec.loader
prop = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = prop
_spec.loader.exec_module(prop)
_RUNS = itertools.count()


def _expected(con: Any, selection: Selection, limit: int) -> tuple[int, list[recovery.UnrecoveredRow]]:
    rows = recovery.first_unrecovered_all(con, selection)
    ordered = sorted(rows, key=lambda r: (-r.n_unrecovered, -r.previous_attempts, -r.last_ts.timestamp(), r.conversation_id))
    return len(rows), ordered[:limit]


# Generated examples per run: 20 (40 with LOOPSCOPE_PROPERTY_EXAMPLES=full, as before 2026-11-27;
# tests/conftest.py says why).
PROPERTY_EXAMPLES = 40 if os.environ.get("LOOPSCOPE_PROPERTY_EXAMPLES") == "full" else 20


@settings(max_examples=PROPERTY_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(prop.record_sets(), st.integers(1, 4), st.integers(0, 3000))
def test_triage_first_is_the_unrecovered_list_in_triage_order(records: list[dict[str, Any]], limit: int, since_ms: int) -> None:
    n = next(_RUNS)
    path = Path(f"records-{n}.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    con = prop.new_store(Path(f"store-{n}.duckdb"))
    try:
        load_paths(con, [path])
        for selection in (Selection(), Selection(since=prop.BASE + dt.timedelta(milliseconds=since_ms))):
            assert recovery.triage_first(con, selection, limit=limit) == _expected(con, selection, limit)
    finally:
        con.close()
