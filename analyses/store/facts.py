"""Per-prompt facts materialised from the records, for fast metrics: a cache the analyses bring up to date.

``prompts_v`` / ``tool_calls_v`` / ``errors_v`` define replays, prompts and
error classes once (``model``); computing them means windows and joins over
every record, seconds at 10M records. ``refresh_facts`` stores their per-prompt
result in ``prompt_facts`` (one row per prompt: the prompt's columns plus its
replay, error and recovered-error counts, and ``max_ok_step``, so the error
classes can be computed from it: ``store.relations``), with ``repeat_facts``,
``error_facts`` and the loop tables beside it. It computes those rows with one
query of groupings instead of the views' windows (about 25% faster);
``VIEWS_FACTS_SQL`` computes them from the views, and
tests/test_metrics_property.py checks both give the same rows.

When they are built. The load writes records only; the facts are a cache that
the first analysis after a load brings up to date (``ensure_facts``, called by
``store.relations`` and every analysis that reads a facts table), so a user who
loads many files one after the other pays for the facts once. The state row
(``prompt_facts_state``) records what the facts were built from: the number of
records of each kind and the highest ``seq``. ``facts_fresh`` says whether the
table still matches the records; the analyses read the facts only then, and
fall back to the views otherwise (a read-only store that nobody brought up to
date). A load that deletes records (a replaced source) and a change of the
scratchpad tools clear the state (``INVALIDATE_FACTS_SQL``): the next analysis
rebuilds. A ``:memory:`` store opened for one analysis (``loops_on_demand``) leaves
its loop tables to the first analysis that reads them: nobody else will read that store.

Incremental refresh. Everything a prompt's facts depend on lies inside its
conversation (prompts are keyed by conversation and prompt id, replays by
conversation and tool_call id), so when every record the facts saw is still
there (as many records with ``seq`` up to the saved highest as were saved) and
only records were added after it, only the conversations of those added
records are recomputed: the records are filtered by a bound list of
conversation ids before any grouping. Many touched conversations rebuild all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import duckdb

# The meaning of every column, straight from the normative views. The refresh
# computes the same rows with _REFRESH_TEMPLATE below (no windows over all
# calls); tests/test_metrics_property.py checks the two agree on random stores.
_VIEWS_TEMPLATE = """
CREATE OR REPLACE TEMP TABLE _ls_prompt_facts AS
WITH replays AS (
    SELECT conversation_id, prompt_id, count(*) AS n_replays
    FROM tool_calls_v WHERE is_replay AND {scope} GROUP BY conversation_id, prompt_id
),
errors AS (
    SELECT conversation_id, prompt_id, count(*) AS n_errors,
           count(*) FILTER (WHERE error_class = 'recovered') AS n_recovered,
           count(*) FILTER (WHERE resolved_later) AS n_resolved_later
    FROM errors_v WHERE {scope} GROUP BY conversation_id, prompt_id
)
SELECT p.conversation_id, p.prompt_id, p.first_ts, p.last_ts, p.first_seq, p.agent, p.tags, p.n_tool_calls,
       p.is_open, p.exit_reason, p.normal_exit,
       coalesce(r.n_replays, 0) AS n_replays, coalesce(e.n_errors, 0) AS n_errors,
       coalesce(e.n_recovered, 0) AS n_recovered, coalesce(e.n_resolved_later, 0) AS n_resolved_later,
       p.max_ok_step, p.max_tool_calls, p.exit_ts
FROM (SELECT * FROM prompts_v WHERE {scope}) p
LEFT JOIN replays r USING (conversation_id, prompt_id)
LEFT JOIN errors e USING (conversation_id, prompt_id)
"""
VIEWS_FACTS_SQL = _VIEWS_TEMPLATE.replace("{scope}", "TRUE")

# The same rows without the views' windows over every call. ``pos`` orders
# records by (ts, seq) as one number (seq is unique and below 2^64), ``ppos``
# prompts by their first record's pos (so ``first_seq`` is ppos mod 2^64). A call can only be a replay when it has
# ``replayed: true`` or its tool_call_id is used more than once in its
# conversation; ids used once (nearly all) need no ordering, so only the
# repeated ones are ranked, once, into ``repeat_facts`` (refreshed first), which
# this query reads (``rep``: a later record of the same call, same tool and
# fingerprint, is a replay; another call under the id is a new call).
# A prompt's replays are its flagged calls plus the unflagged repeats; its
# errors (``errs``) are the non-replays with ``is_error``, recovered when the
# exit is normal and a later step has a success of a non-scratchpad tool, and
# resolved later when unrecovered and a later prompt of the conversation has a
# non-replay success of the same tool (``last_ok``, only for the conversation
# and tool pairs that have unrecovered errors, found by hash). Agent and tags are the last loop_exit's,
# else the earliest record's (tags: the earliest that has tags, as arg_min
# skips NULLs).
_FACTS_QUERY = """
WITH calls AS NOT MATERIALIZED (
    SELECT conversation_id, prompt_id, tool_name, ts, seq, step, is_error,
           replayed, agent, tags, {POS} AS pos
    FROM tool_calls WHERE {scope}
),
exits AS NOT MATERIALIZED (
    SELECT conversation_id, prompt_id, ts, seq, agent, tags, exit_reason, max_tool_calls,
           {POS} AS pos
    FROM loop_exits WHERE {scope}
),
rep AS (
    -- the calls whose id is used more than once in their conversation, numbered
    -- once by the refresh (repeat_facts, refreshed before this query for the same scope)
    SELECT c.conversation_id, c.prompt_id, c.tool_name, c.step, c.is_error, c.replayed, r.is_replay
    FROM calls c JOIN repeat_facts r ON r.seq = c.seq
),
clean AS NOT MATERIALIZED (
    SELECT conversation_id, prompt_id, tool_name, step, is_error
    FROM calls c ANTI JOIN repeat_facts r ON r.seq = c.seq WHERE NOT c.replayed
    UNION ALL
    SELECT conversation_id, prompt_id, tool_name, step, is_error FROM rep WHERE NOT is_replay
),
errs AS (
    SELECT conversation_id, prompt_id, tool_name, step FROM clean WHERE is_error
),
c AS (
    SELECT conversation_id, prompt_id, count(*) AS n_tool_calls,
           count(*) FILTER (WHERE replayed) AS n_flagged,
           max(step) FILTER (WHERE NOT is_error AND tool_name NOT IN (SELECT tool_name FROM scratchpad_tools))
               AS max_ok_step,
           min(ts) AS first_ts, max(ts) AS last_ts, min(pos) AS first_pos,
           arg_min(agent, pos) AS first_agent,
           min(pos) FILTER (WHERE tags IS NOT NULL) AS tags_pos, arg_min(tags, pos) AS first_tags
    FROM calls GROUP BY conversation_id, prompt_id
),
x AS (
    SELECT conversation_id, prompt_id, arg_max(struct_pack(agent, tags, exit_reason, max_tool_calls, ts), pos) AS last_exit,
           min(ts) AS first_ts, max(ts) AS last_ts, min(pos) AS first_pos,
           min(pos) FILTER (WHERE tags IS NOT NULL) AS tags_pos, arg_min(tags, pos) AS first_tags
    FROM exits GROUP BY conversation_id, prompt_id
),
p AS (
    SELECT conversation_id, prompt_id,
           least(c.first_ts, x.first_ts) AS first_ts, greatest(c.last_ts, x.last_ts) AS last_ts,
           least(c.first_pos, x.first_pos) AS ppos,  -- prompt order: its first record's (ts, seq)
           ((least(c.first_pos, x.first_pos) % 18446744073709551616 + 18446744073709551616)
               % 18446744073709551616)::BIGINT AS first_seq,
           coalesce(x.last_exit.agent, c.first_agent) AS agent,  -- agent is never NULL: an exit's wins
           coalesce(x.last_exit.tags,
                    CASE WHEN x.tags_pos IS NULL OR c.tags_pos < x.tags_pos THEN c.first_tags
                         ELSE x.first_tags END) AS tags,
           coalesce(c.n_tool_calls, 0) AS n_tool_calls, coalesce(c.n_flagged, 0) AS n_flagged, c.max_ok_step,
           x.conversation_id IS NULL AS is_open, x.last_exit.exit_reason AS exit_reason,
           coalesce(x.last_exit.exit_reason IN ('end_turn', 'stop_sequence'), false) AS normal_exit,
           x.last_exit.max_tool_calls AS max_tool_calls, x.last_exit.ts AS exit_ts
    FROM c FULL OUTER JOIN x USING (conversation_id, prompt_id)
),
e0 AS (
    SELECT errs.conversation_id, errs.prompt_id, errs.tool_name, p.ppos,
           coalesce(p.normal_exit AND errs.step < p.max_ok_step, false) AS recovered
    FROM errs JOIN p USING (conversation_id, prompt_id)
),
unrec_tools AS (
    -- by hash (one number to join on): a pair that shares another's hash only
    -- brings a few more successes to last_ok, which the exact pair joins
    SELECT DISTINCT hash(conversation_id, tool_name) AS h FROM e0 WHERE NOT recovered
),
ok_prompts AS (
    SELECT DISTINCT conversation_id, prompt_id, tool_name
    FROM clean SEMI JOIN unrec_tools u ON u.h = hash(clean.conversation_id, clean.tool_name)
    WHERE NOT is_error
),
last_ok AS (
    SELECT conversation_id, tool_name, max(p.ppos) AS last_ok_ppos
    FROM ok_prompts JOIN p USING (conversation_id, prompt_id)
    GROUP BY conversation_id, tool_name
),
e AS (
    SELECT conversation_id, prompt_id, count(*) AS n_errors,
           count(*) FILTER (WHERE recovered) AS n_recovered,
           count(*) FILTER (WHERE NOT recovered AND last_ok_ppos > ppos) AS n_resolved_later
    FROM e0 LEFT JOIN last_ok l USING (conversation_id, tool_name)
    GROUP BY conversation_id, prompt_id
),
r AS (
    SELECT conversation_id, prompt_id, count(*) AS n_repeats
    FROM rep WHERE is_replay AND NOT replayed GROUP BY conversation_id, prompt_id
)
SELECT p.conversation_id, p.prompt_id, p.first_ts, p.last_ts, p.first_seq, p.agent, p.tags, p.n_tool_calls,
       p.is_open, p.exit_reason, p.normal_exit,
       p.n_flagged + coalesce(r.n_repeats, 0) AS n_replays,
       coalesce(e.n_errors, 0) AS n_errors,
       coalesce(e.n_recovered, 0) AS n_recovered,
       coalesce(e.n_resolved_later, 0) AS n_resolved_later,
       p.max_ok_step, p.max_tool_calls, p.exit_ts
FROM p
LEFT JOIN e USING (conversation_id, prompt_id)
LEFT JOIN r USING (conversation_id, prompt_id)
"""
# (ts, seq) as one number. epoch_us of +-infinity is NULL (the load refuses
# such timestamps; a store loaded before it did may hold them): put them last / first.
_POS = (
    "coalesce(epoch_us(ts), CASE WHEN ts > TIMESTAMP 'epoch' THEN 9223372036854775807 ELSE -9223372036854775807 END)"
    "::HUGEINT * 18446744073709551616 + seq"
)
_FACTS_QUERY = _FACTS_QUERY.replace("{POS}", _POS)
_REFRESH_TEMPLATE = "CREATE OR REPLACE TEMP TABLE _ls_prompt_facts AS " + _FACTS_QUERY
REFRESH_FACTS_SQL = _REFRESH_TEMPLATE.replace("{scope}", "TRUE")
# $1: the conversation ids to recompute.
REFRESH_SOME_FACTS_SQL = _REFRESH_TEMPLATE.replace("{scope}", "list_contains($1::VARCHAR[], conversation_id)")
TOUCHED_SQL = """
SELECT DISTINCT conversation_id FROM (
    SELECT conversation_id FROM tool_calls WHERE seq > $1
    UNION ALL
    SELECT conversation_id FROM loop_exits WHERE seq > $1
)
"""
REPLACE_SOME_FACTS_SQL = "DELETE FROM prompt_facts WHERE list_contains($1::VARCHAR[], conversation_id)"
INSERT_SOME_FACTS_SQL = """
INSERT INTO prompt_facts SELECT * FROM _ls_prompt_facts;
DROP TABLE _ls_prompt_facts;
DELETE FROM prompt_facts_state;
"""

# Per-call replay facts, kept with the others (``repeat_facts``): one row per
# tool_call whose (conversation_id, tool_call_id) is used more than once
# (about 1% of the records), numbered exactly as ``model.TOOL_CALLS_QUERY``
# numbers them. Every other call is a replay exactly when it is flagged
# ``replayed`` and is never an id collision, so ``tool_calls_v``'s rows are
# ``tool_calls`` joined to this small table by ``seq`` (``store.relations``),
# without grouping and windowing every record at each analysis. Keyed by
# conversation (the numbering lies inside it), like the per-prompt facts.
_REPEATS_QUERY = """
WITH calls AS NOT MATERIALIZED (
    SELECT seq, conversation_id, tool_call_id, tool_name, args_fingerprint, ts, replayed,
           hash(conversation_id, tool_call_id) AS id_hash
    FROM tool_calls WHERE {scope}
),
repeated AS (SELECT id_hash FROM calls GROUP BY id_hash HAVING count(*) > 1)
SELECT
    t.seq,
    t.conversation_id,
    (t.replayed OR row_number() OVER same_call > 1) AS is_replay,
    (NOT t.replayed AND row_number() OVER same_call = 1 AND row_number() OVER same_id > 1) AS is_id_collision
FROM calls t SEMI JOIN repeated USING (id_hash)
WINDOW
    same_call AS (PARTITION BY t.conversation_id, t.tool_call_id, t.tool_name, t.args_fingerprint ORDER BY t.ts, t.seq),
    same_id AS (PARTITION BY t.conversation_id, t.tool_call_id ORDER BY t.ts, t.seq)
"""
# ``tool_calls_v``'s rows (same columns, same order) from the table and ``repeat_facts``;
# {scope}: a condition on the calls t.
FACTS_TOOL_CALLS_TEMPLATE = """
SELECT
    t.*,
    coalesce(r.is_replay, t.replayed) AS is_replay,
    coalesce(r.is_id_collision, false) AS is_id_collision,
    t.tool_name IN (SELECT tool_name FROM scratchpad_tools) AS is_scratchpad
FROM tool_calls t
LEFT JOIN repeat_facts r ON r.seq = t.seq
WHERE {scope}
"""
# Per-error facts (``error_facts``): ``errors_v``'s rows (every non-replay
# error with its class, resolved_later and resolved_in_prompt), computed once
# by the refresh from ``prompt_facts`` and ``repeat_facts``; the analyses that list,
# count or group errors (unrecovered, triage first, lint, class breakdowns)
# read this table (a tenth of the calls) instead of the records.
# The successes that may resolve an error later (``ok``) are narrowed (by a
# hash of the conversation and tool: ``resolved`` joins the exact pair, so a
# shared hash only brings a few more rows to it), then made distinct per
# (conversation, tool, prompt), before they meet the prompts: the view joins
# every success's full row to its prompt first. Same rows
# (tests/test_load_facts.py, tests/test_metrics_property.py).
_ERRORS_OK_CTE = """ok AS (
    SELECT o.conversation_id, o.tool_name, q.prompt_id, q.first_ts, q.first_seq
    FROM (
        SELECT DISTINCT o.conversation_id, o.tool_name, o.prompt_id
        FROM tool_calls o LEFT JOIN repeat_facts r ON r.seq = o.seq
        SEMI JOIN (SELECT DISTINCT hash(conversation_id, tool_name) AS h FROM unrecovered) u
            ON u.h = hash(o.conversation_id, o.tool_name)
        WHERE NOT o.is_error AND NOT coalesce(r.is_replay, o.replayed) AND {scope}
    ) o
    JOIN {prompts} q USING (conversation_id, prompt_id)
),
"""


# ``classed`` keeps the columns the other parts of the query read, not every
# column of every error (it is read twice, so DuckDB materialises it: at 10M
# records 820,000 wide rows, which spilled under a 1.5 GiB memory cap); the
# errors' own columns join back by ``seq`` (unique) at the end, from a scan
# that reads the error rows only. Same columns in the same order, same rows.
_CLASSED_ALL = """    SELECT
        t.*,
        CASE"""
_CLASSED_NARROW = """    SELECT
        t.seq, t.conversation_id, t.tool_name, t.is_replay, t.is_id_collision, t.is_scratchpad,
        CASE"""
_ERRORS_FINAL = """SELECT
    c.*,
    (c.error_class"""
_ERRORS_FINAL_JOINED = """SELECT
    w.*, c.is_replay, c.is_id_collision, c.is_scratchpad, c.error_class, c.prompt_first_ts, c.prompt_first_seq,
    c.exit_reason,
    (c.error_class"""
_ERRORS_FROM = """FROM classed c
LEFT JOIN resolved r"""
_ERRORS_FROM_JOINED = """FROM classed c
JOIN (SELECT * FROM tool_calls w WHERE w.is_error AND {scope}) w ON w.seq = c.seq
LEFT JOIN resolved r"""


def _errors_query(scope: str) -> str:
    from loopscope.analyses.model import ERRORS_QUERY

    calls = "(" + FACTS_TOOL_CALLS_TEMPLATE.replace("{scope}", scope.replace("conversation_id", "t.conversation_id")) + ")"
    prompts = "(SELECT * FROM prompt_facts WHERE " + scope + ")"
    query = ERRORS_QUERY.format(prompts=prompts, tool_calls_v=calls)
    start, end = query.index("ok AS ("), query.index("resolved AS (")
    ok = _ERRORS_OK_CTE.replace("{scope}", scope.replace("conversation_id", "o.conversation_id")).replace("{prompts}", prompts)
    query = query[:start] + ok + query[end:]
    for old, new in ((_CLASSED_ALL, _CLASSED_NARROW), (_ERRORS_FINAL, _ERRORS_FINAL_JOINED),
                     (_ERRORS_FROM, _ERRORS_FROM_JOINED.replace("{scope}", scope.replace("conversation_id", "w.conversation_id")))):
        assert query.count(old) == 1, "model.ERRORS_QUERY changed: update store.facts._errors_query"
        query = query.replace(old, new)
    return query


REPLACE_REPEATS_SQL = "DELETE FROM repeat_facts; INSERT INTO repeat_facts " + _REPEATS_QUERY.replace("{scope}", "TRUE")
REPLACE_SOME_REPEATS_SQL = (
    "DELETE FROM repeat_facts WHERE list_contains($1::VARCHAR[], conversation_id); INSERT INTO repeat_facts "
    + _REPEATS_QUERY.replace("{scope}", "list_contains($1::VARCHAR[], conversation_id)")
)
REPLACE_ERRORS_SQL = "DELETE FROM error_facts; INSERT INTO error_facts " + _errors_query("TRUE")
REPLACE_SOME_ERRORS_SQL = (
    "DELETE FROM error_facts WHERE list_contains($1::VARCHAR[], conversation_id); INSERT INTO error_facts "
    + _errors_query("list_contains($1::VARCHAR[], conversation_id)")
)

# The loops of every prompt (retry loops, no-progress loops, A-B-A-B cycles:
# incidents.py and loops.py define them, per prompt, from its records only)
# and its duplicate executions (incidents.py),
# kept in the store so the audit and triage read a few rows instead of
# grouping and windowing every record.
LOOP_FACT_TABLES = ("retry_loop_facts", "no_progress_facts", "cycle_facts", "duplicate_facts")


def _loop_queries() -> list[tuple[str, str]]:
    """Each table and its per-prompt query, with a ``{calls}`` slot (duplicates read the calls with
    their replay flags from ``repeat_facts``, refreshed first)."""
    from loopscope.analyses.incidents import DUPLICATES_PER_PROMPT_SQL, RETRY_LOOPS_PER_PROMPT_SQL
    from loopscope.analyses.loops import CYCLES_PER_PROMPT_SQL, NO_PROGRESS_PER_PROMPT_SQL

    calls = "(" + FACTS_TOOL_CALLS_TEMPLATE.replace("{scope}", "TRUE") + ")"
    queries = (RETRY_LOOPS_PER_PROMPT_SQL, NO_PROGRESS_PER_PROMPT_SQL, CYCLES_PER_PROMPT_SQL,
               DUPLICATES_PER_PROMPT_SQL.replace("{tool_calls_v}", calls))
    return list(zip(LOOP_FACT_TABLES, queries))


_GROUPS_WITH_A_MINIMUM = re.compile(
    r"\s*SELECT\b.*\bFROM tool_calls t\s+WHERE (?P<where>[^()]*\{calls\})\s+"
    r"GROUP BY\b(?P<keys>.*)\bHAVING count\(\*\) >= (?P<n>\d+)\s*",
    re.S,
)


def _narrowed(query: str, scope: str) -> str:
    """``query`` with ``{calls}`` set to ``scope``, its rows first narrowed to the groups that can pass its HAVING.

    For a query of the shape ``SELECT ... FROM tool_calls t WHERE ... {calls}
    GROUP BY keys HAVING count(*) >= n`` (the retry loops): one count per
    hash of the keys under the same WHERE finds the groups with n rows or
    more, and only their rows meet the query's aggregates (ordered lists,
    ``arg_min`` over structs) instead of every row's. Same rows: every row of
    a group that passes has that group's hash; rows of another group that
    shares the hash are grouped exactly by the query and its HAVING applies
    to them as before. Any other shape is returned as it is.
    """
    m = _GROUPS_WITH_A_MINIMUM.fullmatch(query)
    if m is None:
        return query.format(calls=scope)
    keys, n = m["keys"].strip(), int(m["n"])
    where = m["where"].replace("{calls}", scope)
    groups = f"SELECT hash({keys}) AS h FROM tool_calls t WHERE {where} GROUP BY h HAVING count(*) >= {n}"
    return query.format(calls=f"{scope} AND hash({keys}) IN ({groups})")


# The (prompt, call) pairs seen more than once in the scope, counted once for
# three builds that would each group every call by them: a cycle repeats a call
# (an A-B-A-B alternation of CYCLE_MIN_CALLS >= 4 calls has one at least twice,
# unflagged), a duplicate execution repeats a call with a fingerprint, and a
# no-progress loop is NO_PROGRESS_MIN_CALLS (>= 2) unflagged successes of one
# call. Each build then reads the calls of those prompts (cycles: every call of
# the prompt, its windows need them all) or of those calls only, and groups them
# exactly as before; a prompt or call left out can give no row. A hash that two
# prompts or calls share only keeps more rows, which the queries group exactly.
# {scope}: a condition on the calls t.
_REPEATED_CALLS_SQL = """
CREATE OR REPLACE TEMP TABLE _ls_repeated_calls AS
SELECT hash(t.conversation_id, t.prompt_id) AS ph,
       hash(t.conversation_id, t.prompt_id, t.tool_name, t.args_fingerprint) AS ch,
       count(*) FILTER (WHERE NOT t.replayed) AS unflagged,
       count(*) FILTER (WHERE t.args_fingerprint IS NOT NULL) AS fingerprinted,
       count(*) FILTER (WHERE NOT t.is_error AND NOT t.replayed) AS successes
FROM tool_calls t WHERE {scope}
GROUP BY ph, ch
HAVING count(*) > 1
"""
_ONLY_REPEATED = {
    "cycle_facts": "hash(t.conversation_id, t.prompt_id) IN (SELECT ph FROM _ls_repeated_calls WHERE unflagged > 1)",
    "duplicate_facts": (
        "hash(t.conversation_id, t.prompt_id, t.tool_name, t.args_fingerprint) "
        "IN (SELECT ch FROM _ls_repeated_calls WHERE fingerprinted > 1)"
    ),
}
DROP_REPEATED_CALLS_SQL = "DROP TABLE IF EXISTS _ls_repeated_calls"


def _only_repeated(table: str) -> str | None:
    """The narrowing of ``table``'s build to repeated calls, if it has one."""
    from loopscope.collectors.history import NO_PROGRESS_MIN_CALLS

    if table == "no_progress_facts":
        if NO_PROGRESS_MIN_CALLS < 2:
            return None  # one call would be a loop: the pairs seen once count too
        return (
            "hash(t.conversation_id, t.prompt_id, t.tool_name, t.args_fingerprint) "
            f"IN (SELECT ch FROM _ls_repeated_calls WHERE successes >= {int(NO_PROGRESS_MIN_CALLS)})"
        )
    return _ONLY_REPEATED.get(table)


_LOOPS_ON_DEMAND: dict[int, bool] = {}
"""Connections whose store lives only as long as they do (``:memory:``, opened by
``store.open_for_analysis``), and whether their loop facts are still to be built."""


@contextmanager
def loops_on_demand(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Inside this block a rebuild of ``con``'s facts leaves the loop tables to the first analysis that reads them.

    For a store no other connection will ever read (a ``:memory:`` database, closed with its
    connection): a command that reads no loop (``metrics``, ``unrecovered``, ``lint``, ...)
    does not pay for building them (about 25 ms of queries on ``sample_logs/``, and the import
    of the loop detectors). A store on disk always gets them with the other facts: the next
    process trusts the saved state. ``store.relations`` builds them (``ensure_loop_facts``)
    when an analysis reads ``relations(con).loops``.
    """
    key = id(con)
    _LOOPS_ON_DEMAND[key] = False
    try:
        yield
    finally:
        _LOOPS_ON_DEMAND.pop(key, None)


def loops_pending(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con``'s loop facts wait to be built (``loops_on_demand``)."""
    return _LOOPS_ON_DEMAND.get(id(con), False)


def ensure_loop_facts(con: duckdb.DuckDBPyConnection) -> bool:
    """Build the loop facts that ``loops_on_demand`` left pending (one transaction); whether they are built."""
    if not loops_pending(con):
        return True
    if not _in_transaction(con, lambda: _capped(con, lambda: _replace_loops(con, None))):
        return False
    _LOOPS_ON_DEMAND[id(con)] = False
    return True


def _replace_loops(con: duckdb.DuckDBPyConnection, touched: list[str] | None) -> None:
    scope = "TRUE" if touched is None else "list_contains($1::VARCHAR[], t.conversation_id)"
    params = None if touched is None else [touched]
    con.execute(_REPEATED_CALLS_SQL.format(scope=scope), params)
    for table, query in _loop_queries():
        if touched is None:
            con.execute(f"DELETE FROM {table}")
        else:
            con.execute(f"DELETE FROM {table} WHERE list_contains($1::VARCHAR[], conversation_id)", params)
        only = _only_repeated(table)
        narrowed = scope if only is None else f"{scope} AND {only}"
        con.execute(f"INSERT INTO {table} " + _narrowed(query, narrowed), params)
    con.execute(DROP_REPEATED_CALLS_SQL)


INCREMENTAL_MAX_CONVERSATIONS = 5000
"""Up to this many touched conversations, a filtered refresh whatever the store's size."""
INCREMENTAL_PROMPTS_PER_CONVERSATION = 20
"""In a larger store, up to one touched conversation per this many prompts in ``prompt_facts``.

A filtered refresh costs a scan of the records plus about 0.09 s of CPU per
thousand touched conversations (1M records, 69,299 conversations, 177,708
prompts: 5,159 touched 0.61 s, 10,301 1.00 s, 20,583 1.86 s, a full rebuild
1.8 s), so it pays up to about a fifth of the conversations; one per 20
prompts (8,885 there) keeps well inside that."""
INCREMENTAL_MAX_SQL = "SELECT count(*) FROM prompt_facts"
# A full rebuild writes the table straight from the query.
REPLACE_FACTS_SQL = """
DELETE FROM prompt_facts;
DELETE FROM prompt_facts_state;
INSERT INTO prompt_facts
""" + _FACTS_QUERY.replace("{scope}", "TRUE")
STATE_NOW_SQL = """
SELECT (SELECT count(*) FROM tool_calls), (SELECT count(*) FROM loop_exits),
       greatest((SELECT coalesce(max(seq), 0) FROM tool_calls), (SELECT coalesce(max(seq), 0) FROM loop_exits))
"""
SAVE_STATE_SQL = "INSERT INTO prompt_facts_state VALUES (?, ?, ?, current_timestamp)"
STATE_SAVED_SQL = "SELECT tool_calls, loop_exits, max_seq FROM prompt_facts_state"
# The records now against a saved state's highest seq ($1): those up to it, of each kind (the facts
# saw them all when the counts are the saved ones), and how many came after it.
STATE_SINCE_SQL = """
SELECT c.seen, x.seen, c.added + x.added
FROM (SELECT count(*) FILTER (WHERE seq <= $1) AS seen, count(*) FILTER (WHERE seq > $1) AS added FROM tool_calls) c,
     (SELECT count(*) FILTER (WHERE seq <= $1) AS seen, count(*) FILTER (WHERE seq > $1) AS added FROM loop_exits) x
"""
READ_AS_IS_SQL = "SELECT getvariable('loopscope_read_as_is')"
INVALIDATE_FACTS_SQL = "DELETE FROM prompt_facts_state"
"""Forget what the facts were built from (records deleted, scratchpad tools changed): the next analysis rebuilds."""


def _state(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int]:
    row = con.execute(STATE_NOW_SQL).fetchone()
    return (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)


def _prompts(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute(INCREMENTAL_MAX_SQL).fetchone()
    return int(row[0]) if row else 0


def refresh_facts(con: duckdb.DuckDBPyConnection, since_seq: int | None = None) -> None:
    """Bring ``prompt_facts`` up to date with the records (in the caller's transaction, if any).

    Args:
        con: the store.
        since_seq: if the facts were fresh when the records up to this ``seq``
            were all there, recompute only the conversations of the records
            added after it; None rebuilds everything.
    """
    if since_seq is not None:
        touched = [row[0] for row in con.execute(TOUCHED_SQL, [since_seq]).fetchall()]
        if len(touched) <= INCREMENTAL_MAX_CONVERSATIONS or len(touched) <= _prompts(con) // INCREMENTAL_PROMPTS_PER_CONVERSATION:
            _run_each(con, REPLACE_SOME_REPEATS_SQL, [touched])
            con.execute(REFRESH_SOME_FACTS_SQL, [touched])
            con.execute(REPLACE_SOME_FACTS_SQL, [touched])
            _run_each(con, INSERT_SOME_FACTS_SQL)
            _run_each(con, REPLACE_SOME_ERRORS_SQL, [touched])  # reads the two above
            if not loops_pending(con):  # pending ones are all rebuilt when read
                _replace_loops(con, touched)
            con.execute(SAVE_STATE_SQL, list(_state(con)))
            return
    _run_each(con, REPLACE_REPEATS_SQL)
    _run_each(con, REPLACE_FACTS_SQL)
    _run_each(con, REPLACE_ERRORS_SQL)  # reads the two above
    if id(con) in _LOOPS_ON_DEMAND:
        _LOOPS_ON_DEMAND[id(con)] = True  # built by the first analysis that reads them (ensure_loop_facts)
    else:
        _replace_loops(con, None)
    con.execute(SAVE_STATE_SQL, list(_state(con)))


def _run_each(con: duckdb.DuckDBPyConnection, script: str, params: list[object] | None = None) -> None:
    for statement in script.split(";"):
        if statement.strip():
            con.execute(statement, params if params and "$1" in statement else None)


def _saved_state(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int] | None:
    try:
        saved = con.execute(STATE_SAVED_SQL).fetchall()
    except duckdb.CatalogException:
        return None  # a database from before the facts table
    return tuple(int(x) for x in saved[0]) if len(saved) == 1 else None  # type: ignore[return-value]


def facts_behind(con: duckdb.DuckDBPyConnection) -> tuple[bool, int | None]:
    """How the facts stand against the records: ``(fresh, since_seq)``.

    ``fresh``: built from exactly the records now in the store. Otherwise
    ``since_seq`` is the saved highest ``seq`` when every record the facts saw
    is still there and the others came after it (``refresh_facts`` can then
    recompute the conversations of those only), else None (rebuild).
    """
    saved = _saved_state(con)
    if saved is None:
        return False, None
    n_calls, n_exits, max_seq = saved
    if _state(con) == saved:
        # The same counts and highest seq: the same records, as whatever deletes records clears the
        # state (a replaced source). A count and a max, 1 ms at 1M records: analyses ask often.
        return True, max_seq
    row = con.execute(STATE_SINCE_SQL, [max_seq]).fetchone()
    seen_calls, seen_exits, added = (int(x) for x in row) if row else (-1, -1, -1)
    if (seen_calls, seen_exits) != (n_calls, n_exits):
        return False, None  # records the facts saw are gone (or others took their seqs)
    return added == 0, max_seq


def facts_fresh(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``prompt_facts`` was built from the records now in the store."""
    return facts_behind(con)[0]


FACTS_MEMORY_LIMIT = 1536 << 20
"""DuckDB's memory cap while the facts are built (when the connection's is higher): at 10M records the
build's peak stays under 2 GiB, as it did inside the load (1,892-2,009 MB); under a quarter of this
machine's 23 GB it reached 2.8 GB. The cap makes DuckDB spill part of ``prompt_facts``' groupings."""
_MEMORY_SETTING_SQL = "SELECT current_setting('memory_limit')"
_SIZE = re.compile(r"\s*([0-9.]+)\s*([KMGTP]?i?B|bytes)\s*", re.I)
_UNITS = {"": 1, "bytes": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50}


def _memory_limit_bytes(con: duckdb.DuckDBPyConnection) -> int | None:
    row = con.execute(_MEMORY_SETTING_SQL).fetchone()
    m = _SIZE.fullmatch(str(row[0])) if row else None
    if m is None or m[2].lower() not in _UNITS:
        return None
    return int(float(m[1]) * _UNITS[m[2].lower()])


def _build_capped(con: duckdb.DuckDBPyConnection, since_seq: int | None) -> None:
    """``refresh_facts`` under ``FACTS_MEMORY_LIMIT`` (or the connection's lower limit), then the connection's limit again."""
    _capped(con, lambda: refresh_facts(con, since_seq=since_seq))


_SMALL: set[int] = set()
"""Connections to a store too small for its facts to come near ``FACTS_MEMORY_LIMIT`` (``small_store``)."""


@contextmanager
def small_store(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Inside this block ``con``'s facts are built without lowering its memory limit first.

    ``store.open_for_analysis`` enters it for the small data it runs on one thread (tables under
    a row group, PATHs under 4 MiB): their facts take a few MB, and reading, lowering and
    restoring the limit are three statements (about 3 ms on ``sample_logs/``) for nothing.
    """
    key = id(con)
    _SMALL.add(key)
    try:
        yield
    finally:
        _SMALL.discard(key)


def _capped(con: duckdb.DuckDBPyConnection, build: Callable[[], None]) -> None:
    """``build()`` under ``FACTS_MEMORY_LIMIT`` (or the connection's lower limit), then the connection's limit again."""
    if id(con) in _SMALL:
        build()
        return
    current = _memory_limit_bytes(con)
    if current is None or current <= FACTS_MEMORY_LIMIT:
        build()
        return
    from loopscope.analyses.store import SET_MEMORY_LIMIT_SQL, memory_limit

    con.execute(SET_MEMORY_LIMIT_SQL, [f"{FACTS_MEMORY_LIMIT >> 20}MiB"])
    try:
        build()
    finally:
        restore = memory_limit()  # what store.connect set
        if restore:
            con.execute(SET_MEMORY_LIMIT_SQL, [restore])
        else:
            con.execute("RESET memory_limit")


def ensure_facts(con: duckdb.DuckDBPyConnection) -> bool:
    """Bring the facts up to date if they are not and the store is writable; return whether they are fresh.

    The first analysis after a load pays here: the conversations the new
    records touch (``refresh_facts(since_seq=...)``), or a rebuild. One
    transaction (the caller's, if one is open), so an interrupted refresh
    leaves the facts as they were.
    """
    if not getattr(con, "materialises_facts", True):
        return False  # a ClickHouse store (store/clickhouse.py): the metrics run on the views
    fresh, since_seq = facts_behind(con)
    if fresh:
        return True
    row = con.execute(READ_AS_IS_SQL).fetchone()
    if row and row[0]:
        return False  # a store written by a newer loopscope (store.connect): read as it is, never written
    # (a rolled-back build may leave loops marked pending that were not: they are then rebuilt, the same rows)
    return _in_transaction(con, lambda: _build_capped(con, since_seq))  # False: read-only, the caller reads the views


def _in_transaction(con: duckdb.DuckDBPyConnection, build: Callable[[], None]) -> bool:
    """``build()`` in one transaction (the caller's, if one is open); False when the store cannot be written."""
    try:
        con.execute("BEGIN TRANSACTION")
    except duckdb.TransactionException:
        own = False  # inside the caller's transaction
    except (duckdb.InvalidInputException, duckdb.PermissionException):
        return False
    else:
        own = True
    try:
        build()
    except (duckdb.InvalidInputException, duckdb.PermissionException, duckdb.TransactionException):
        if own:
            con.execute("ROLLBACK")
        return False
    except BaseException:
        if own:
            con.execute("ROLLBACK")
        raise
    if own:
        con.execute("COMMIT")
    return True


def set_scratchpad_tools(con: duckdb.DuckDBPyConnection, names: list[str]) -> bool:
    """Make ``names`` the store's scratchpad tools (a success of theirs never recovers an error).

    Every command reads the same set from the store. The per-prompt facts are
    rebuilt by the next analysis when the set changes. Returns whether it changed.
    """
    from loopscope.analyses.model import CLEAR_SCRATCHPAD_TOOLS_SQL, SCRATCHPAD_DEFAULTS_SQL, scratchpad_tools
    from loopscope.analyses.store.transaction import transaction

    wanted = sorted({n for n in names if n})
    if scratchpad_tools(con) == wanted:
        return False
    with transaction(con):
        con.execute(CLEAR_SCRATCHPAD_TOOLS_SQL)
        con.execute(SCRATCHPAD_DEFAULTS_SQL, [wanted])
        con.execute(INVALIDATE_FACTS_SQL)
    return True
