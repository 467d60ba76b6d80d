"""Whether the facts match the records, checked once per report instead of once per figure.

``facts.ensure_facts(con)`` compares the facts' saved state with the records
(two queries, about 1.3 ms on a small store) and rebuilds stale facts. One
report (``audit``) asks a dozen times, ``triage`` eight times, and nothing
they do between asks writes a record. Inside ``checked_once(con, fresh)``
(entered by ``relations.errors_computed_once``, after its own check, and by
every CLI command around its analysis, with ``fresh=None``: checked at the
first ask) ``facts_ready(con)`` and ``relations.relations(con)`` answer from
that one check without a query; elsewhere it is ``ensure_facts(con)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from loopscope.analyses.store.facts import ensure_facts

_CHECKED: dict[int, bool | None] = {}
"""Connections inside ``checked_once``: the answer of their one check (None: not asked yet)."""


def facts_ready(con: duckdb.DuckDBPyConnection) -> bool:
    """``ensure_facts(con)``, or inside ``checked_once`` the answer of its one check."""
    key = id(con)
    if key not in _CHECKED:
        return ensure_facts(con)
    known = _CHECKED[key]
    if known is None:
        known = _CHECKED[key] = ensure_facts(con)
    return known


@contextmanager
def checked_once(con: duckdb.DuckDBPyConnection, fresh: bool | None = None) -> Iterator[None]:
    """Inside this block ``facts_ready(con)`` is ``fresh`` (nothing in the block may write records).

    ``fresh=None``: the first ``facts_ready(con)`` in the block checks (and brings the facts up to
    date, as ``ensure_facts`` does), and the others reuse its answer; a block that never asks
    costs nothing. A block inside another keeps the outer one's answer.
    """
    key = id(con)
    if key in _CHECKED:
        if _CHECKED[key] is None and fresh is not None:
            _CHECKED[key] = fresh  # the outer block had not asked yet: this check is its answer
        yield
        return
    _CHECKED[key] = fresh
    try:
        yield
    finally:
        del _CHECKED[key]
