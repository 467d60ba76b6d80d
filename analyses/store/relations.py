"""Which relations an analysis reads: the materialised facts when they are fresh, else the views.

``tool_calls_v``, ``prompts_v`` and ``errors_v`` (``model``) define replays,
prompts and error classes once. Computing them groups and windows every
record, seconds at 10M records; the store keeps the same rows as facts, brought
up to date by the first analysis after a load
(``store.facts``): ``prompt_facts`` (per prompt), ``repeat_facts`` (the
calls whose id repeats, numbered) and ``error_facts`` (per error).
``relations(con)`` returns the SQL text an analysis formats into its
``{prompts}``, ``{errors}``, ``{tool_calls_v}`` and ``{violations}`` slots: the facts (the
records joined by ``seq`` to ``repeat_facts`` for the calls) when they match
the records (or can be made to), else the views themselves. Both give the
same rows (tests/test_metrics_property.py checks it on random stores).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import duckdb

from loopscope.analyses.model import (
    ERRORS_QUERY, ID_COLLISIONS_VIEW_SQL, PROMPTS_VIEW_SQL, PROTOCOL_VIOLATIONS_VIEW_SQL, TOOL_CALLS_QUERY,
)
from loopscope.analyses.store.facts import (
    FACTS_TOOL_CALLS_TEMPLATE, LOOP_FACT_TABLES, ensure_loop_facts, loops_pending,
)
from loopscope.analyses.store.freshness import checked_once, facts_ready

FACTS_TOOL_CALLS = "(" + FACTS_TOOL_CALLS_TEMPLATE.replace("{scope}", "TRUE") + ")"
"""``tool_calls_v``'s rows: the records joined by ``seq`` to the few that ``repeat_facts`` numbers."""
FACTS_ERRORS = "error_facts"
"""``errors_v``'s rows, materialised in the store (``store.facts``)."""


def _replaced(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:  # the view changed: this derived text must change with it
        raise AssertionError(f"expected once in the view's SQL: {old!r}")
    return text.replace(old, new)


# id_collisions_v's rows: only calls whose id repeats in their conversation
# can collide, and repeat_facts names exactly those (the view finds them by
# grouping every record), so the windows number the same calls.
FACTS_ID_COLLISIONS = "(" + _replaced(
    _replaced(
        ID_COLLISIONS_VIEW_SQL,
        """CREATE OR REPLACE VIEW id_collisions_v AS
WITH repeated AS NOT MATERIALIZED (
    SELECT hash(conversation_id, tool_call_id) AS h FROM tool_calls GROUP BY h HAVING count(*) > 1
),
numbered AS (""",
        "WITH numbered AS (",
    ),
    "SEMI JOIN repeated r ON r.h = hash(t.conversation_id, t.tool_call_id)",
    "SEMI JOIN repeat_facts r ON r.seq = t.seq",
) + ")"
FACTS_PROTOCOL_VIOLATIONS = "(" + _replaced(
    _replaced(PROTOCOL_VIOLATIONS_VIEW_SQL, "CREATE OR REPLACE VIEW protocol_violations_v AS", ""),
    "FROM id_collisions_v c", "FROM " + FACTS_ID_COLLISIONS + " c",
) + ")"
"""``protocol_violations_v``'s rows, its id collisions found through ``repeat_facts``."""


class Loops(NamedTuple):
    """SQL text for each kind of loop, and the duplicate executions, per prompt (usable after FROM), with a
    ``{calls}`` slot (a filter on t)."""

    retry: str
    no_progress: str
    cycles: str
    duplicates: str


def _loops_from_records() -> Loops:
    from loopscope.analyses.incidents import DUPLICATES_PER_PROMPT_SQL, RETRY_LOOPS_PER_PROMPT_SQL
    from loopscope.analyses.loops import CYCLES_PER_PROMPT_SQL, NO_PROGRESS_PER_PROMPT_SQL

    queries = (RETRY_LOOPS_PER_PROMPT_SQL, NO_PROGRESS_PER_PROMPT_SQL, CYCLES_PER_PROMPT_SQL,
               DUPLICATES_PER_PROMPT_SQL.replace("{tool_calls_v}", "tool_calls_v"))
    return Loops(*("(" + q + ")" for q in queries))


FACTS_LOOPS = Loops(*(f"(SELECT * FROM {table} t WHERE {{calls}})" for table in LOOP_FACT_TABLES))
"""The loops the store keeps (``store.facts``): the same rows as the per-prompt queries."""


class Relations(NamedTuple):
    """SQL text for the prompts, errors, tool calls, protocol violations and loops (each usable after FROM / JOIN)."""

    prompts: str
    errors: str
    tool_calls: str
    violations: str
    loops: Loops
    replay_candidates: str


# The rows of tool_calls_v that can be replays (flagged, or their id repeats in
# the conversation), with a {calls} slot (a filter on t): grouped by id over
# the records, or straight from repeat_facts.
VIEWS_REPLAY_CANDIDATES = """(
    SELECT t.* FROM tool_calls_v t
    WHERE {calls} AND (t.replayed OR hash(t.conversation_id, t.tool_call_id) IN (
        SELECT hash(t.conversation_id, t.tool_call_id) AS h FROM tool_calls t WHERE {calls} GROUP BY h HAVING count(*) > 1
    ))
)"""
FACTS_REPLAY_CANDIDATES = "(" + FACTS_TOOL_CALLS_TEMPLATE.replace(
    "{scope}", "{calls} AND (t.replayed OR r.seq IS NOT NULL)") + ")"



@functools.cache
def _views() -> Relations:
    # Made on first use: its loop queries import incidents and loops (and the collector's thresholds and
    # hints), which a store with fresh facts never reads. ``VIEWS`` (module attribute) is the same object.
    return Relations("prompts_v", "errors_v", "tool_calls_v", "protocol_violations_v", _loops_from_records(),
                     VIEWS_REPLAY_CANDIDATES)


def __getattr__(name: str) -> Relations:
    if name == "VIEWS":
        return _views()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


FACTS = Relations("prompt_facts", FACTS_ERRORS, FACTS_TOOL_CALLS, FACTS_PROTOCOL_VIOLATIONS, FACTS_LOOPS,
                  FACTS_REPLAY_CANDIDATES)


# Connections inside ``errors_computed_once``: the relations to read there.
_SHARED: dict[int, Relations] = {}
SHARED_ERRORS_TABLE = "_ls_errors"
SHARE_ERRORS_SQL = "CREATE OR REPLACE TEMP TABLE " + SHARED_ERRORS_TABLE + " AS SELECT * FROM {errors}"
DROP_SHARED_ERRORS_SQL = "DROP TABLE IF EXISTS " + SHARED_ERRORS_TABLE


def relations(con: duckdb.DuckDBPyConnection) -> Relations:
    """``FACTS`` when ``prompt_facts`` matches the records (rebuilt if stale and writable), else ``VIEWS``.

    Inside ``errors_computed_once(con)``, the errors are that block's temporary table; inside
    ``freshness.checked_once(con)`` the facts are checked once for the block.
    """
    shared = _SHARED.get(id(con))
    if shared is not None:
        return shared
    if not facts_ready(con):
        return _views()
    return FACTS._replace(loops=_LoopsOnDemand(con)) if loops_pending(con) else FACTS


class _LoopsOnDemand:
    """``FACTS_LOOPS`` for a store whose loop facts are built when first read (``facts.loops_on_demand``)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def __getattr__(self, kind: str) -> str:
        if kind not in Loops._fields:
            raise AttributeError(kind)
        built = ensure_loop_facts(self._con)
        return getattr(FACTS_LOOPS if built else _views().loops, kind)


@contextmanager
def errors_computed_once(con: duckdb.DuckDBPyConnection) -> Iterator[Relations]:
    """Compute the errors once, into a temporary table, for the several analyses of one report.

    The facts' freshness is checked once too: inside the block ``freshness.facts_ready`` answers
    without a query (the metrics, cohorts and tools modules ask it).

    The audit reads the errors (with their classes) in several sections; each
    would compute them again from the views. With fresh facts they are a table
    already (``error_facts``) and nothing is computed. Otherwise, inside this block
    ``relations(con).errors`` is the temporary table (one row per error: a
    tenth of the calls, spilled to the temp directory under memory pressure);
    it is dropped on the way out.
    """
    if id(con) in _SHARED:
        yield _SHARED[id(con)]
        return
    rel = relations(con)
    # The facts were just checked (and rebuilt if stale): the block's analyses ask no more (freshness).
    with checked_once(con, rel.prompts == FACTS.prompts):
        if rel.errors == FACTS_ERRORS:  # already a table
            _SHARED[id(con)] = rel
            try:
                yield rel
            finally:
                del _SHARED[id(con)]
            return
        con.execute(SHARE_ERRORS_SQL.format(errors=rel.errors))
        _SHARED[id(con)] = shared = rel._replace(errors=SHARED_ERRORS_TABLE)
        try:
            yield shared
        finally:
            del _SHARED[id(con)]
            con.execute(DROP_SHARED_ERRORS_SQL)


class ConversationRelations(NamedTuple):
    """One conversation's rows of the views (named parameter ``$conversation_id``): the facts' rows
    for it when they are fresh, else computed from its records only.

    Replays, classes and ``resolved_later`` depend only on the records of the
    same conversation, so computing them over its records gives the views'
    rows for it, without a pass over the whole store (triage).
    """

    tool_calls: str
    prompts: str
    errors: str


_ONE_CALLS = "(SELECT * FROM tool_calls WHERE conversation_id = $conversation_id)"


_ONE_FACTS_CALLS = "(" + FACTS_TOOL_CALLS_TEMPLATE.replace("{scope}", "t.conversation_id = $conversation_id") + ")"


def conversation_relations(con: duckdb.DuckDBPyConnection) -> ConversationRelations:
    """The relations for one conversation (bind ``$conversation_id``).

    With fresh facts (``relations(con)``), its rows of them (the calls joined by ``seq`` to
    ``repeat_facts``, its ``error_facts``); otherwise computed from its records.
    """
    rel = relations(con)
    facts = rel.prompts == FACTS.prompts
    prompts = f"(SELECT * FROM {'prompt_facts' if facts else 'prompts_v'} WHERE conversation_id = $conversation_id)"
    if facts and rel.tool_calls == FACTS_TOOL_CALLS and rel.errors == FACTS_ERRORS:
        errors = f"(SELECT * FROM {FACTS_ERRORS} WHERE conversation_id = $conversation_id)"
        return ConversationRelations(_ONE_FACTS_CALLS, prompts, errors)
    calls = "(" + TOOL_CALLS_QUERY.format(tool_calls=_ONE_CALLS) + ")"
    errors = "(" + ERRORS_QUERY.format(prompts=prompts, tool_calls_v=calls) + ")"
    return ConversationRelations(calls, prompts, errors)


# Several conversations at once (the audit page's timelines): their records are
# copied into temporary tables and the views' rows computed over those copies,
# with the same queries as for one conversation. The copy finds the records'
# seqs first (a scan of two narrow columns), as a list, then reads the whole
# rows of those seqs (unique per record): a constant list lets the scan skip
# the row groups outside it, where a join with the ids (or with the seqs as a
# subquery) decompresses every column of every row group a listed
# conversation touches (at 10M records, 0.04 s of CPU against 0.1-0.4 s).
_SET_RECORDS_SQL = """
CREATE TEMP TABLE {name} AS
SELECT * FROM {table}
WHERE seq IN (SELECT unnest((
    SELECT list(seq) FROM {table}
    WHERE conversation_id IN (SELECT unnest($conversation_ids::VARCHAR[]))  -- a hash join, whatever their number
)))
"""
_SET_COUNTER = itertools.count()
# With fresh facts, the conversations' error_facts rows (errors_v's), found by the seqs of their
# copied calls as a list, as above.
_SET_FACTS_ERRORS_SQL = """
CREATE TEMP TABLE {name} AS
SELECT * FROM """ + FACTS_ERRORS + """
WHERE seq IN (SELECT unnest((SELECT list(seq) FROM {calls})))
"""


def _records_replaced(view_sql: str, tables: dict[str, str]) -> str:
    """A view's query (without its CREATE line) reading other relations than the record tables."""
    head, text = view_sql.split(" AS\n", 1)
    if not head.strip().startswith("CREATE OR REPLACE VIEW"):
        raise AssertionError(f"not a view's SQL: {head!r}")
    for table, name in tables.items():
        pattern = r"\bFROM " + table + r"\b"
        if len(re.findall(pattern, text)) != 2:  # prompts_v reads each table twice: change this with the view
            raise AssertionError(f"expected twice in the view's SQL: FROM {table}")
        text = re.sub(pattern, "FROM " + name, text)
    return text


@contextmanager
def conversation_set_relations(
    con: duckdb.DuckDBPyConnection, conversation_ids: Sequence[str]
) -> Iterator[ConversationRelations]:
    """Several conversations' rows of the views, computed from their records only, as temporary tables.

    The tables hold ``tool_calls_v``'s, ``prompts_v``'s (every column) and
    ``errors_v``'s rows of these conversations (the same rows the views give
    for them, as ``conversation_relations`` does for one); they are dropped on
    the way out. With fresh facts (``relations(con)``), the calls and errors are
    their rows of the facts, as ``conversation_relations`` reads them. DuckDB stores only.
    """
    n = next(_SET_COUNTER)
    names = {k: f"_ls_set_{k}_{n}" for k in ("calls", "exits", "tool_calls_v", "prompts", "errors")}
    ids = {"conversation_ids": list(conversation_ids)}
    rel = relations(con)
    facts = rel.prompts == FACTS.prompts and rel.tool_calls == FACTS_TOOL_CALLS and rel.errors == FACTS_ERRORS
    try:
        con.execute(_SET_RECORDS_SQL.format(name=names["calls"], table="tool_calls"), ids)
        con.execute(_SET_RECORDS_SQL.format(name=names["exits"], table="loop_exits"), ids)
        if facts:  # their rows of the facts: simpler statements than the views' classification
            con.execute(f"CREATE TEMP TABLE {names['tool_calls_v']} AS "
                        + _replaced(FACTS_TOOL_CALLS_TEMPLATE, "FROM tool_calls t", f"FROM {names['calls']} t")
                        .replace("{scope}", "TRUE"))
            con.execute(_SET_FACTS_ERRORS_SQL.format(name=names["errors"], calls=names["calls"]))
        else:
            con.execute(f"CREATE TEMP TABLE {names['tool_calls_v']} AS "
                        + TOOL_CALLS_QUERY.format(tool_calls=names["calls"]))
        con.execute(f"CREATE TEMP TABLE {names['prompts']} AS "
                    + _records_replaced(PROMPTS_VIEW_SQL, {"tool_calls": names["calls"], "loop_exits": names["exits"]}))
        if not facts:
            con.execute(f"CREATE TEMP TABLE {names['errors']} AS "
                        + ERRORS_QUERY.format(prompts=names["prompts"], tool_calls_v=names["tool_calls_v"]))
        yield ConversationRelations(names["tool_calls_v"], names["prompts"], names["errors"])
    finally:
        for name in reversed(names.values()):
            con.execute(f"DROP TABLE IF EXISTS {name}")
