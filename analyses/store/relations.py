"""Which relations an analysis reads: the materialised per-prompt facts when they are fresh, else the views.

``prompts_v`` and ``errors_v`` (``model``) define prompts and error classes
once. Computing ``prompts_v`` groups every record, seconds at 10M records;
``prompt_facts`` (``store.facts``) holds the same per-prompt columns, kept
fresh by the load. ``relations(con)`` returns the SQL text an analysis
formats into its ``{prompts}`` and ``{errors}`` slots: ``prompt_facts`` and
``model.ERRORS_QUERY`` over it when the facts match the records (or can be
made to), else the views themselves. Both give the same rows
(tests/test_metrics_property.py checks it on random stores).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import duckdb

from loopscope.analyses.model import ERRORS_QUERY, TOOL_CALLS_QUERY
from loopscope.analyses.store.facts import ensure_facts

FACTS_ERRORS = "(" + ERRORS_QUERY.format(prompts="prompt_facts", tool_calls_v="tool_calls_v") + ")"
"""``errors_v``'s rows, computed over ``prompt_facts`` instead of ``prompts_v``."""


class Relations(NamedTuple):
    """SQL text for the prompts and the errors (each usable after FROM / JOIN)."""

    prompts: str
    errors: str


VIEWS = Relations("prompts_v", "errors_v")
FACTS = Relations("prompt_facts", FACTS_ERRORS)


# Connections inside ``errors_computed_once``: the relations to read there.
_SHARED: dict[int, Relations] = {}
SHARED_ERRORS_TABLE = "_ls_errors"
SHARE_ERRORS_SQL = "CREATE OR REPLACE TEMP TABLE " + SHARED_ERRORS_TABLE + " AS SELECT * FROM {errors}"
DROP_SHARED_ERRORS_SQL = "DROP TABLE IF EXISTS " + SHARED_ERRORS_TABLE


def relations(con: duckdb.DuckDBPyConnection) -> Relations:
    """``FACTS`` when ``prompt_facts`` matches the records (rebuilt if stale and writable), else ``VIEWS``.

    Inside ``errors_computed_once(con)``, the errors are that block's temporary table.
    """
    shared = _SHARED.get(id(con))
    if shared is not None:
        return shared
    return FACTS if ensure_facts(con) else VIEWS


@contextmanager
def errors_computed_once(con: duckdb.DuckDBPyConnection) -> Iterator[Relations]:
    """Compute the errors once, into a temporary table, for the several analyses of one report.

    The audit reads the errors (with their classes) in several sections; each
    would compute them again from the records. Inside this block
    ``relations(con).errors`` is the temporary table (one row per error: a
    tenth of the calls, spilled to the temp directory under memory pressure);
    it is dropped on the way out.
    """
    if id(con) in _SHARED:
        yield _SHARED[id(con)]
        return
    rel = relations(con)
    con.execute(SHARE_ERRORS_SQL.format(errors=rel.errors))
    _SHARED[id(con)] = shared = Relations(rel.prompts, SHARED_ERRORS_TABLE)
    try:
        yield shared
    finally:
        del _SHARED[id(con)]
        con.execute(DROP_SHARED_ERRORS_SQL)


class ConversationRelations(NamedTuple):
    """One conversation's rows of the views, computed from its records only (named parameter ``$conversation_id``).

    Replays, classes and ``resolved_later`` depend only on the records of the
    same conversation, so computing them over its records gives the views'
    rows for it, without a pass over the whole store (triage).
    """

    tool_calls: str
    prompts: str
    errors: str


_ONE_CALLS = "(SELECT * FROM tool_calls WHERE conversation_id = $conversation_id)"


def conversation_relations(con: duckdb.DuckDBPyConnection) -> ConversationRelations:
    """The relations for one conversation (bind ``$conversation_id``)."""
    table = relations(con).prompts
    prompts = f"(SELECT * FROM {'prompt_facts' if table == 'prompt_facts' else 'prompts_v'} " \
              "WHERE conversation_id = $conversation_id)"
    calls = "(" + TOOL_CALLS_QUERY.format(tool_calls=_ONE_CALLS) + ")"
    errors = "(" + ERRORS_QUERY.format(prompts=prompts, tool_calls_v=calls) + ")"
    return ConversationRelations(calls, prompts, errors)
