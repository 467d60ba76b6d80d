"""Incident analyses: retry loops, replays, duplicate executions, budget pressure.

All four read the normative views of ``model`` and take a ``Selection`` (which
prompts count; a replay counts when the replaying record's prompt is
selected). Each SQL constant has three slots: ``{calls}`` (a filter on the tool
calls ``t`` by conversation, or ``TRUE``), ``{prompts}`` (``prompt_facts``, the
per-prompt columns of ``prompts_v`` materialised by ``store.facts``, when it
matches the records, else ``prompts_v``) and ``{where}`` (the Selection's
condition on the prompts ``p``); the parameters are ``{calls}``'s, then
``{where}``'s, then the ``LIMIT`` (None: every row). The lists are ordered and
cut in the query, with their totals over every row as window columns
(``total``, ``total_<sum>``), so a caller that shows ten rows gets ten.

- **Retry loop** (spin, docs/records.md "Incident analysis"): within one
  prompt, three or more ``tool_call`` records with ``is_error: true`` and the
  same ``tool_name`` and the same ``args_fingerprint`` (when the fingerprint is
  null: the same ``error_message``; records with neither form one group). A
  loop of n calls cost n - 1 redundant calls.
- **Replay**: a record whose ``tool_call_id`` already ran earlier in the
  conversation, or that has ``replayed: true`` (``tool_calls_v.is_replay``).
  A replay flagged ``replayed`` was short-circuited by an idempotency layer; one
  that is not flagged actually executed again: a **double execution**.
- **Duplicate execution by fingerprint**: within a prompt, after a successful
  call (``is_error: false``, not a replay), the same tool with the same non-null
  fingerprint executed again (not short-circuited) under another
  ``tool_call_id``. Providers mint new ids on retries, so id-based replay
  checks miss these.
- **Budget pressure** per agent: p99 of tool calls per prompt (as in the
  dashboard metric) against the ``max_tool_calls`` in force (the value on the
  agent's latest exit that set one), and the share of exited prompts whose
  ``exit_reason`` is ``budget_exceeded``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any

import duckdb

from loopscope.analyses.rows import fetch_dicts as _rows
from loopscope.analyses.selection import Selection

# Retry loops, per prompt, over every prompt of the store: a fact of the
# prompt's records only, so the store keeps them (``retry_loop_facts``,
# store.facts) and RETRY_LOOPS_SQL reads them through store.relations; with
# stale facts it reads this query over the records (replays included, as
# flagged or not: the table, not tool_calls_v). {calls}: a filter on them t.
RETRY_LOOPS_PER_PROMPT_SQL = """
SELECT
    t.conversation_id,
    t.prompt_id,
    t.tool_name,
    t.args_fingerprint,
    arg_min(t.error_message, (t.ts, t.seq)) AS error_message,
    count(*) AS calls,
    min(t.step) AS first_step,
    max(t.step) AS last_step,
    min(t.ts) AS first_ts,
    max(t.ts) AS last_ts,
    list(t.tool_call_id ORDER BY t.ts, t.seq) AS tool_call_ids
FROM tool_calls t
WHERE t.is_error AND {calls}
GROUP BY
    t.conversation_id, t.prompt_id, t.tool_name, t.args_fingerprint,
    CASE WHEN t.args_fingerprint IS NULL THEN t.error_message END
HAVING count(*) >= 3
"""

# Retry loops among the selected prompts, longest first. {retry_loops}: the
# per-prompt loops (retry_loop_facts, or the query above), filtered by {calls}.
RETRY_LOOPS_SQL = """
SELECT
    t.conversation_id,
    t.prompt_id,
    p.agent,
    t.tool_name,
    t.args_fingerprint,
    t.error_message,
    t.calls,
    t.calls - 1 AS redundant_calls,
    t.first_step,
    t.last_step,
    t.first_ts,
    t.last_ts,
    t.tool_call_ids,
    p.exit_reason,
    p.is_open,
    count(*) OVER () AS total,
    sum(t.calls - 1) OVER () AS total_redundant_calls
FROM {retry_loops} t
JOIN {prompts} p USING (conversation_id, prompt_id)
WHERE {where}
ORDER BY t.calls DESC, p.first_ts, p.first_seq, t.conversation_id, t.first_step
LIMIT ?
"""

# Every replay record of the selected prompts, with the run it repeated. A
# replay is flagged ``replayed`` or repeats an id of its conversation, so only
# those records are numbered (an id used once is its own first and only run):
# {replay_candidates} (store.relations) is those rows of tool_calls_v, found
# through repeat_facts when the facts are fresh, filtered by {calls}.
REPLAYS_SQL = """
WITH runs AS (
    SELECT
        t.*,
        row_number() OVER (PARTITION BY t.conversation_id, t.tool_call_id ORDER BY t.ts, t.seq) AS run,
        first_value(t.ts) OVER (PARTITION BY t.conversation_id, t.tool_call_id ORDER BY t.ts, t.seq) AS first_run_ts,
        first_value(t.prompt_id) OVER (PARTITION BY t.conversation_id, t.tool_call_id ORDER BY t.ts, t.seq) AS first_run_prompt_id,
        count(*) OVER (PARTITION BY t.conversation_id, t.tool_call_id) AS runs
    FROM {replay_candidates} t
)
SELECT
    r.conversation_id,
    r.tool_call_id,
    r.tool_name,
    r.prompt_id,
    r.step,
    r.ts,
    r.run,
    r.runs,
    r.first_run_prompt_id,
    r.first_run_ts,
    r.replayed,
    CASE WHEN r.replayed THEN 'short_circuited' ELSE 'double_execution' END AS kind,
    r.outcome,
    r.is_error,
    p.agent,
    count(*) OVER () AS total,
    count(CASE WHEN r.replayed THEN 1 END) OVER () AS total_short_circuited
FROM runs r
JOIN {prompts} p USING (conversation_id, prompt_id)
WHERE r.is_replay AND {where}
ORDER BY p.first_ts, p.first_seq, r.conversation_id, r.ts, r.seq
LIMIT ?
"""

# Later executions of a tool+fingerprint that already succeeded in the prompt,
# per prompt, over every prompt of the store (a fact of the prompt's records:
# the store keeps them, ``duplicate_facts``, store.facts). Only a (prompt,
# tool, fingerprint) with two calls or more can hold one: those groups are
# found on the table first (by a hash of the four: a collision only keeps a
# few more rows, the join below is exact), so the rest is over a few rows.
# {tool_calls_v}: the calls (replays flagged); {calls}: a filter on them t.
DUPLICATES_PER_PROMPT_SQL = """
WITH repeated AS (
    SELECT hash(t.conversation_id, t.prompt_id, t.tool_name, t.args_fingerprint) AS h
    FROM tool_calls t
    WHERE t.args_fingerprint IS NOT NULL AND {calls}
    GROUP BY h
    HAVING count(*) > 1
),
calls AS (
    -- the columns named, not t.*: ClickHouse names a joined star's columns t.col
    SELECT t.conversation_id, t.prompt_id, t.tool_name, t.args_fingerprint, t.tool_call_id, t.ts, t.seq,
           t.step, t.is_error, t.is_replay, t.replayed, t.outcome
    FROM {tool_calls_v} t
    SEMI JOIN repeated r ON r.h = hash(t.conversation_id, t.prompt_id, t.tool_name, t.args_fingerprint)
    WHERE {calls}
),
firsts AS (
    -- the first success per (prompt, tool, fingerprint)
    SELECT conversation_id, prompt_id, tool_name, args_fingerprint,
           arg_min(tool_call_id, (ts, seq)) AS original_tool_call_id,
           min((ts, seq)) AS original_pos,
           arg_min(step, (ts, seq)) AS original_step
    FROM calls
    WHERE NOT is_error AND NOT is_replay
    GROUP BY ALL
)
SELECT
    c.conversation_id,
    c.prompt_id,
    c.tool_name,
    c.args_fingerprint,
    f.original_tool_call_id,
    f.original_step,
    count(*) AS duplicates,
    list(c.tool_call_id ORDER BY c.ts, c.seq) AS duplicate_tool_call_ids,
    list(c.outcome ORDER BY c.ts, c.seq) AS duplicate_outcomes,
    min(c.ts) AS first_duplicate_ts
FROM calls c
JOIN firsts f USING (conversation_id, prompt_id, tool_name, args_fingerprint)
WHERE (c.ts, c.seq) > f.original_pos
  AND c.tool_call_id <> f.original_tool_call_id
  AND NOT c.replayed
GROUP BY ALL
"""

# The duplicate executions of the selected prompts, largest first.
# {duplicates}: duplicate_facts, or the query above (store.relations).
DUPLICATE_EXECUTIONS_SQL = """
SELECT
    d.conversation_id,
    d.prompt_id,
    p.agent,
    d.tool_name,
    d.args_fingerprint,
    d.original_tool_call_id,
    d.original_step,
    d.duplicates,
    d.duplicate_tool_call_ids,
    d.duplicate_outcomes,
    d.first_duplicate_ts,
    count(*) OVER () AS total
FROM {duplicates} d
JOIN {prompts} p ON p.conversation_id = d.conversation_id AND p.prompt_id = d.prompt_id
WHERE {where}
ORDER BY d.duplicates DESC, p.first_ts, d.conversation_id, d.prompt_id, d.tool_name
LIMIT ?
"""

# Per agent: tool calls per prompt, budget in force and budget exits. {prompts}: prompt_facts
# (it keeps each prompt's max_tool_calls and exit time) or prompts_v.
BUDGET_PRESSURE_SQL = """
SELECT
    p.agent,
    count(*) AS prompts,
    count(*) FILTER (WHERE NOT p.is_open) AS exited_prompts,
    quantile_cont(p.n_tool_calls, 0.5) AS median_tool_calls_per_prompt,
    quantile_cont(p.n_tool_calls, 0.99) AS p99_tool_calls_per_prompt,
    max(p.n_tool_calls) AS max_tool_calls_seen,
    arg_max(p.max_tool_calls, p.exit_ts) FILTER (WHERE p.max_tool_calls IS NOT NULL) AS max_tool_calls,
    count(DISTINCT p.max_tool_calls) AS budgets_seen,
    count(*) FILTER (WHERE p.exit_reason = 'budget_exceeded') AS budget_exceeded
FROM {prompts} p
WHERE {where}
GROUP BY p.agent
ORDER BY p.agent
LIMIT ?
"""


def _run(
    con: duckdb.DuckDBPyConnection, sql: str, selection: Selection, limit: int | None = None
) -> list[dict[str, Any]]:
    where, params = selection.where("p")
    calls, calls_params = selection.calls_where("t")  # the tool calls pruned before the replay window
    from loopscope.analyses.store.relations import relations

    rel = relations(con)
    sql = (sql.replace("{retry_loops}", rel.loops.retry).replace("{replay_candidates}", rel.replay_candidates)
           .replace("{duplicates}", rel.loops.duplicates))
    query = sql.format(calls=calls, where=where, prompts=rel.prompts, tool_calls_v=rel.tool_calls)
    # every {calls} slot comes before {where} in the text: its parameters first, once per slot
    return _rows(con.execute(query, [*calls_params * sql.count("{calls}"), *params, limit]))


@dataclass(frozen=True)
class Page:
    """The first rows of a list ordered and cut in the query, with the totals over the whole list.

    ``totals``: ``total`` (rows in all) and the list's sums (e.g.
    ``redundant_calls``), each computed by the query over every row.
    """

    totals: dict[str, int]
    items: list[Any]


def _page(rows: list[dict[str, Any]], make: Any, totals: tuple[str, ...]) -> Page:
    """Split the ``total*`` columns (the same in every row) from the rows themselves."""
    found = {name: 0 for name in totals}
    for row in rows:
        for name in totals:
            column = "total" if name == "total" else f"total_{name}"
            found[name] = int(row.pop(column) or 0)
    return Page(found, [make(**r) for r in rows])


@dataclass(frozen=True)
class RetryLoop:
    """A spin: the same failing call at least three times in one prompt."""

    conversation_id: str
    prompt_id: str
    agent: str
    tool_name: str
    args_fingerprint: str | None
    error_message: str | None
    calls: int
    redundant_calls: int
    first_step: int
    last_step: int
    first_ts: dt.datetime
    last_ts: dt.datetime
    tool_call_ids: list[str]
    exit_reason: str | None
    is_open: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class Replay:
    """A later run of a ``tool_call_id`` (or a record flagged ``replayed``)."""

    conversation_id: str
    tool_call_id: str
    tool_name: str
    prompt_id: str
    step: int
    ts: dt.datetime
    run: int
    runs: int
    first_run_prompt_id: str
    first_run_ts: dt.datetime
    replayed: bool
    kind: str
    outcome: str
    is_error: bool
    agent: str

    @property
    def double_execution(self) -> bool:
        """The call really ran again (the dangerous case)."""
        return self.kind == "double_execution"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class DuplicateExecution:
    """A successful call executed again under new ids in the same prompt."""

    conversation_id: str
    prompt_id: str
    agent: str
    tool_name: str
    args_fingerprint: str
    original_tool_call_id: str
    original_step: int
    duplicates: int
    duplicate_tool_call_ids: list[str]
    duplicate_outcomes: list[str]
    first_duplicate_ts: dt.datetime

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class BudgetPressure:
    """How close one agent type runs to its tool-call budget."""

    agent: str
    prompts: int
    exited_prompts: int
    median_tool_calls_per_prompt: float | None
    p99_tool_calls_per_prompt: float | None
    max_tool_calls_seen: int | None
    max_tool_calls: int | None
    budgets_seen: int
    budget_exceeded: int

    @property
    def budget_exceeded_share(self) -> float | None:
        """Share of exited prompts that exited with ``budget_exceeded``."""
        return self.budget_exceeded / self.exited_prompts if self.exited_prompts else None

    @property
    def p99_budget_ratio(self) -> float | None:
        """p99 tool calls per prompt / the budget in force (1.0 = at the budget)."""
        if self.p99_tool_calls_per_prompt is None or not self.max_tool_calls:
            return None
        return self.p99_tool_calls_per_prompt / self.max_tool_calls

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON, with the derived share and ratio."""
        return {
            **asdict(self),
            "budget_exceeded_share": self.budget_exceeded_share,
            "p99_budget_ratio": self.p99_budget_ratio,
        }


def retry_loops(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[RetryLoop]:
    """Retry loops in the selected prompts, longest first."""
    return retry_loops_page(con, selection).items


def retry_loops_page(con: duckdb.DuckDBPyConnection, selection: Selection, limit: int | None = None) -> Page:
    """The ``limit`` longest retry loops; totals ``total`` and ``redundant_calls`` over all of them."""
    return _page(_run(con, RETRY_LOOPS_SQL, selection, limit), RetryLoop, ("total", "redundant_calls"))


def replays(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[Replay]:
    """Every replay record in the selected prompts, in conversation order."""
    return replays_page(con, selection).items


def replays_page(con: duckdb.DuckDBPyConnection, selection: Selection, limit: int | None = None) -> Page:
    """The first ``limit`` replays; totals ``total`` and ``short_circuited`` over all of them."""
    return _page(_run(con, REPLAYS_SQL, selection, limit), Replay, ("total", "short_circuited"))


def duplicate_executions(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[DuplicateExecution]:
    """Successful calls executed again under a new ``tool_call_id`` in the same prompt."""
    return duplicate_executions_page(con, selection).items


def duplicate_executions_page(
    con: duckdb.DuckDBPyConnection, selection: Selection, limit: int | None = None
) -> Page:
    """The ``limit`` largest duplicate executions; total ``total`` over all of them."""
    return _page(_run(con, DUPLICATE_EXECUTIONS_SQL, selection, limit), DuplicateExecution, ("total",))


def budget_pressure(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[BudgetPressure]:
    """Tool-call budget pressure per agent type over the selected prompts."""
    return [BudgetPressure(**r) for r in _run(con, BUDGET_PRESSURE_SQL, selection)]
