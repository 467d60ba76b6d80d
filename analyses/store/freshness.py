"""Whether the facts match the records, checked once per report instead of once per figure.

``facts.ensure_facts(con)`` compares the facts' saved state with the records
(two queries, about 1.3 ms on a small store) and rebuilds stale facts. One
report (``audit``) asks a dozen times, and nothing it does between asks
writes a record. Inside ``checked_once(con, fresh)`` (entered by
``relations.errors_computed_once``, after its own check) ``facts_ready(con)``
returns that answer without a query; elsewhere it is ``ensure_facts(con)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from loopscope.analyses.store.facts import ensure_facts

_CHECKED: dict[int, bool] = {}


def facts_ready(con: duckdb.DuckDBPyConnection) -> bool:
    """``ensure_facts(con)``, or inside ``checked_once`` the answer of its one check."""
    known = _CHECKED.get(id(con))
    return ensure_facts(con) if known is None else known


@contextmanager
def checked_once(con: duckdb.DuckDBPyConnection, fresh: bool) -> Iterator[None]:
    """Inside this block ``facts_ready(con)`` is ``fresh`` (nothing in the block may write records)."""
    if id(con) in _CHECKED:
        yield
        return
    _CHECKED[id(con)] = fresh
    try:
        yield
    finally:
        del _CHECKED[id(con)]
