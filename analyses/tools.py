"""Per-tool health: the figures every observability platform shows, per tool.

``tool_health(con, selection)`` returns one ``ToolHealth`` per tool called in
the selected prompts, from one query (``TOOL_HEALTH_SQL``) that counts,
orders and cuts in the engine. The figures follow docs/records.md (the spec)
and keep its names (``metrics.TOOL_KEYS``):

- ``tool_calls``: the tool's ``tool_call`` records (replays and id collisions
  included, as in ``metrics``);
- ``errors``: ``is_error`` calls that are not replays, with their classes,
  ``recovered_errors`` and ``resolved_later_errors`` as ``errors_v`` defines
  them (a later success of a scratchpad tool such as ``think`` never
  recovers, an id collision is a new call);
  ``error_rate`` = errors / tool_calls; ``recovery_rate``,
  ``conversation_recovery_rate`` and ``replay_rate`` are ``metrics.Rates``;
- ``replays``: as ``tool_calls_v.is_replay`` defines them.

The query reads the facts the store keeps (``store.facts``: ``prompt_facts``,
``repeat_facts``, ``error_facts``) instead of the views (seconds at 1M records);
with stale facts on a read-only store it reads the views
(``TOOL_HEALTH_VIEWS_SQL``), and tests/test_tools_property.py checks both
against a plain-Python reference. Also per tool:

- ``p50_latency_ms``, ``p95_latency_ms``, ``p99_latency_ms``: exact quantiles
  of ``latency_ms`` with linear interpolation between closest ranks
  (``quantile_cont``, numpy's default, the same as the spec's metrics 1 and
  2), over every call of the tool that has a latency (a replay's latency is
  the time the loop waited for it, so it is in); calls without one are left
  out and counted as ``tool_calls_without_latency``; null when no call has one;
- ``top_error_template``: the tool's most frequent error template
  (``lint.templates.template_of`` of the text the model saw, its
  ``error_message``, else its ``error_type``), ties to the smallest template,
  and ``top_error_template_errors``, its errors. The distinct texts are
  grouped in SQL first (``ERROR_TEXTS_SQL``) and each is masked once, so the
  Python work follows the number of distinct texts, not of errors; the query
  joins them from a temporary table.

Undated records (messages without timestamps) count like any other: nothing
here groups by time. Tools come most-called first (then by name), cut to
``limit`` in the query; every row carries ``tools``, the number of tools
before the cut.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import duckdb

from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.lint.templates import template_of
from loopscope.analyses.metrics import ERROR_CLASSES_KEY, QUANTILE_DECIMALS, TOOL_KEYS, Rates
from loopscope.analyses.selection import Selection
from loopscope.analyses.store.freshness import facts_ready

# The texts to mask: the distinct error texts (what the model saw) of the
# selected prompts' calls with is_error (replays' too: a superset costs a few
# masks and spares the replay ranking). {prompts}: prompt_facts when it matches
# the records (store.facts), else prompts_v (same columns); {where} a
# Selection condition. Parameters: the selection's, the tool filter twice.
ERROR_TEXTS_SQL = """
WITH sel AS (SELECT p.conversation_id, p.prompt_id FROM {prompts} p WHERE {where})
SELECT DISTINCT coalesce(t.error_message, t.error_type, '') AS message
FROM tool_calls t
JOIN sel USING (conversation_id, prompt_id)
WHERE t.is_error
  AND (CAST(? AS VARCHAR[]) IS NULL OR list_contains(?, t.tool_name))
"""
# The same texts from error_facts (the errors themselves: no replay among them).
# Parameters: the selection's, the tool filter twice.
ERROR_TEXTS_FACTS_SQL = """
WITH sel AS (SELECT p.conversation_id, p.prompt_id FROM prompt_facts p WHERE {where})
SELECT DISTINCT coalesce(e.error_message, e.error_type, '') AS message
FROM error_facts e
{sel_join_e}
WHERE CAST(? AS VARCHAR[]) IS NULL OR list_contains(?, e.tool_name)
"""

# The two inputs of the per-tool figures, from the normative views (model.py):
# ``calls``, every selected tool call with is_replay and is_scratchpad; ``errs``,
# every selected error (errors_v) with its class, resolved_later and text.
# Used when prompt_facts is stale (a read-only store), and by the tests as the
# definition the fast inputs below must match.
_VIEWS_INPUTS = """
sel AS (SELECT p.conversation_id, p.prompt_id FROM prompts_v p WHERE {where}),
calls AS (
    SELECT t.tool_name, t.is_replay, t.is_scratchpad, t.latency_ms
    FROM tool_calls_v t
    JOIN sel USING (conversation_id, prompt_id)
    WHERE CAST(? AS VARCHAR[]) IS NULL OR list_contains(?, t.tool_name)
),
errs AS (
    SELECT e.tool_name, e.error_class, e.resolved_later, coalesce(e.error_message, e.error_type, '') AS message
    FROM errors_v e
    JOIN sel USING (conversation_id, prompt_id)
    WHERE e.tool_name IN (SELECT tool_name FROM calls)
),"""

# The same two inputs from the facts the load keeps (store.facts): the
# selection from prompt_facts, each call's replay flag from repeat_facts (the
# few calls whose id repeats in their conversation; every other call is a
# replay exactly when flagged ``replayed``), and the errors with their
# classes and resolved_later from error_facts (errors_v's rows). No window and
# no grouping of every record. {sel_join} joins the selection to the calls t
# and the errors e, or is empty when the selection is every prompt (a join of
# every call with every prompt would select them all anyway). Parameters: the
# selection's, the tool filter once (``wanted``), the limit.
_FAST_INPUTS = """
sel AS (SELECT p.conversation_id, p.prompt_id FROM prompt_facts p WHERE {where}),
wanted AS (SELECT CAST(? AS VARCHAR[]) AS names),
calls AS (
    SELECT t.tool_name, coalesce(r.is_replay, t.replayed) AS is_replay,
           t.tool_name IN (SELECT tool_name FROM scratchpad_tools) AS is_scratchpad, t.latency_ms
    FROM tool_calls t
    {sel_join_t}
    LEFT JOIN repeat_facts r ON r.seq = t.seq
    {wanted_t}
),
errs AS (
    SELECT e.tool_name, e.error_class, e.resolved_later, coalesce(e.error_message, e.error_type, '') AS message
    FROM error_facts e
    {sel_join_e}
    {wanted_e}
),"""
_SEL_JOIN = "SEMI JOIN sel ON sel.conversation_id = {a}.conversation_id AND sel.prompt_id = {a}.prompt_id"
# {wanted_t} / {wanted_e}: the tool filter on t / e, or nothing for every tool (a
# condition per call less: at 10M calls about 0.1 s of CPU).
_WANTED = "WHERE list_contains((SELECT names FROM wanted), {a}.tool_name)"

# One row per tool from ``calls`` and ``errs``; {templates} is the temporary
# table of the masked texts (message, template). Parameters: the selection's,
# the tool filter twice (a list or NULL), the limit (NULL: every tool).
_FIGURES = """
call_figures AS (
    SELECT
        tool_name,
        bool_or(is_scratchpad) AS scratchpad,
        count(*) AS tool_calls,
        count(*) FILTER (WHERE is_replay) AS replays,
        {latency_quantiles},
        count(*) FILTER (WHERE latency_ms IS NULL) AS tool_calls_without_latency
    FROM calls
    GROUP BY tool_name
),
error_figures AS (
    SELECT
        tool_name,
        count(*) AS errors,
        count(*) FILTER (WHERE error_class = 'recovered') AS recovered_errors,
        count(*) FILTER (WHERE resolved_later) AS resolved_later_errors,
        count(*) FILTER (WHERE error_class = 'open') AS open_errors,
        count(*) FILTER (WHERE error_class = 'aborted') AS aborted_errors,
        count(*) FILTER (WHERE error_class = 'gave_up') AS gave_up_errors
    FROM errs
    GROUP BY tool_name
),
template_counts AS (
    SELECT
        e.tool_name,
        m.template,
        count(*) AS n,
        row_number() OVER (PARTITION BY e.tool_name ORDER BY count(*) DESC, m.template) AS rank
    FROM errs e
    JOIN {templates} m ON m.message = e.message
    GROUP BY e.tool_name, m.template
)
SELECT
    c.tool_name,
    c.scratchpad,
    c.tool_calls,
    coalesce(e.errors, 0) AS errors,
    coalesce(e.recovered_errors, 0) AS recovered_errors,
    coalesce(e.resolved_later_errors, 0) AS resolved_later_errors,
    c.replays,
    coalesce(e.open_errors, 0) AS open_errors,
    coalesce(e.aborted_errors, 0) AS aborted_errors,
    coalesce(e.gave_up_errors, 0) AS gave_up_errors,
    c.p50_latency_ms,
    c.p95_latency_ms,
    c.p99_latency_ms,
    c.tool_calls_without_latency,
    tc.template AS top_error_template,
    coalesce(tc.n, 0) AS top_error_template_errors,
    count(*) OVER () AS tools
FROM call_figures c
LEFT JOIN error_figures e ON e.tool_name = c.tool_name
LEFT JOIN template_counts tc ON tc.tool_name = c.tool_name AND tc.rank = 1
ORDER BY c.tool_calls DESC, c.tool_name
LIMIT ?
"""
# The three latency quantiles: one call with a list of fractions on DuckDB (the
# latencies are gathered and ordered once, not three times: at 10M calls 1.0 ->
# 0.4 s of CPU; the same interpolation, so the same values); three calls on the
# views' path, which ClickHouse stores also run.
_QUANTILES_ONE_LIST = """quantile_cont(latency_ms, [0.5, 0.95, 0.99]) AS latency_quantiles,
        latency_quantiles[1] AS p50_latency_ms,
        latency_quantiles[2] AS p95_latency_ms,
        latency_quantiles[3] AS p99_latency_ms"""
_QUANTILES_EACH = """quantile_cont(latency_ms, 0.5) AS p50_latency_ms,
        quantile_cont(latency_ms, 0.95) AS p95_latency_ms,
        quantile_cont(latency_ms, 0.99) AS p99_latency_ms"""
TOOL_HEALTH_SQL = "WITH" + _FAST_INPUTS + _FIGURES.replace("{latency_quantiles}", _QUANTILES_ONE_LIST)
"""Per-tool health over prompt_facts and the tables (the store's facts are fresh)."""
TOOL_HEALTH_VIEWS_SQL = "WITH" + _VIEWS_INPUTS + _FIGURES.replace("{latency_quantiles}", _QUANTILES_EACH)
"""The same rows from the normative views (a stale, read-only store; the tests' yardstick)."""

# The masked texts, one row each, for the query to join (a table rather than
# two parallel lists in the query, which not every engine unnests in step).
CREATE_TEMPLATES_SQL = "CREATE TEMPORARY TABLE {templates} (message VARCHAR, template VARCHAR)"
FILL_TEMPLATES_SQL = "INSERT INTO {templates} SELECT unnest(CAST(? AS VARCHAR[])), unnest(CAST(? AS VARCHAR[]))"
DROP_TEMPLATES_SQL = "DROP TABLE IF EXISTS {templates}"
_COUNTER = itertools.count()

# Of some tool names, those the store has a call of (check --tool: a typo is an error, not a pass).
SEEN_TOOLS_SQL = "SELECT DISTINCT tool_name FROM tool_calls WHERE list_contains(?, tool_name)"
# Some tool names of the store, for a hint.
SOME_TOOLS_SQL = "SELECT DISTINCT tool_name FROM tool_calls ORDER BY tool_name LIMIT ?"


@dataclass(frozen=True)
class ToolHealth(Rates):
    """One tool's health over the selected prompts (names: ``metrics.TOOL_KEYS``)."""

    tool_name: str
    scratchpad: bool
    tool_calls: int
    errors: int
    recovered_errors: int
    resolved_later_errors: int
    replays: int
    open_errors: int
    aborted_errors: int
    gave_up_errors: int
    p50_latency_ms: float | None
    p95_latency_ms: float | None
    p99_latency_ms: float | None
    tool_calls_without_latency: int
    top_error_template: str | None
    top_error_template_errors: int

    @property
    def error_rate(self) -> float | None:
        """errors / tool_calls, None without calls."""
        return self.errors / self.tool_calls if self.tool_calls else None

    def as_dict(self) -> dict[str, object]:
        """Plain data with the figure names of ``metrics.TOOL_KEYS``, then ``error_classes``."""
        data: dict[str, object] = {key: getattr(self, key) for key in TOOL_KEYS}
        data[ERROR_CLASSES_KEY] = self.error_classes
        return data

    def to_dict(self) -> dict[str, object]:
        """The same as ``as_dict``."""
        return self.as_dict()


@dataclass(frozen=True)
class ToolHealthReport:
    """The tools shown (``limit`` of them, most called first) and how many the selection has."""

    tools: list[ToolHealth]
    total: int

    def as_dict(self) -> dict[str, object]:
        """``{"total": n, "items": [...]}``, the shape of every audit list section."""
        return {"total": self.total, "items": [t.as_dict() for t in self.tools]}


def _latency(value: object) -> float | None:
    # Interpolation noise only (as metrics' quantiles): 9 decimals of a millisecond lose nothing.
    return None if value is None else round(float(value), QUANTILE_DECIMALS)  # type: ignore[arg-type]


def tool_health(
    con: duckdb.DuckDBPyConnection,
    selection: Selection | None = None,
    *,
    tools: tuple[str, ...] | None = None,
    limit: int | None = None,
    source: str = "auto",
) -> ToolHealthReport:
    """Per-tool health of the selected prompts, most-called tool first.

    Args:
        con: a migrated store.
        selection: which prompts count (all when None).
        tools: only these tools (None: every tool).
        limit: keep the first ``limit`` tools (None: all); ``total`` counts them all.
        source: ``auto`` reads ``prompt_facts`` and the tables when the facts
            are (or can be made) fresh, else the views; ``views`` always reads
            the views (the tests compare both).
    """
    if limit is not None and limit < 1:
        raise LoopscopeError(f"limit {limit} must be at least 1", hint="for example --limit 20")
    where, params = (selection or Selection()).where("p")
    fast = source == "auto" and facts_ready(con)
    wanted = list(tools) if tools is not None else None
    joins = {"sel_join_t": "" if where == "TRUE" else _SEL_JOIN.format(a="t"),
             "sel_join_e": "" if where == "TRUE" else _SEL_JOIN.format(a="e")}
    filters = {"wanted_t": "" if wanted is None else _WANTED.format(a="t"),
               "wanted_e": "" if wanted is None else _WANTED.format(a="e")}
    texts_sql = (ERROR_TEXTS_FACTS_SQL.format(where=where, **joins) if fast
                 else ERROR_TEXTS_SQL.format(prompts="prompts_v", where=where))
    texts = [row[0] for row in con.execute(texts_sql, [*params, wanted, wanted]).fetchall()]
    table = f"_ls_tool_templates_{next(_COUNTER)}"
    con.execute(CREATE_TEMPLATES_SQL.format(templates=table))
    try:
        # one round trip for every text (executemany inserts row by row); masked once per distinct text
        con.execute(FILL_TEMPLATES_SQL.format(templates=table), [texts, [template_of(text) for text in texts]])
        if fast:
            query = TOOL_HEALTH_SQL.format(where=where, templates=table, **joins, **filters)
            rows = con.execute(query, [*params, wanted, limit]).fetchall()
        else:
            query = TOOL_HEALTH_VIEWS_SQL.format(where=where, templates=table)
            rows = con.execute(query, [*params, wanted, wanted, limit]).fetchall()
    finally:
        con.execute(DROP_TEMPLATES_SQL.format(templates=table))
    total = int(rows[0][-1]) if rows else 0
    return ToolHealthReport([_row(row) for row in rows], total)


def _row(row: tuple[object, ...]) -> ToolHealth:
    (name, scratchpad, calls, errors, recovered, resolved_later, replays, open_e, aborted_e, gave_up_e,
     p50, p95, p99, without_latency, template, template_errors, _tools) = row
    return ToolHealth(
        tool_name=str(name),
        scratchpad=bool(scratchpad),
        tool_calls=int(calls),  # type: ignore[call-overload]
        errors=int(errors),  # type: ignore[call-overload]
        recovered_errors=int(recovered),  # type: ignore[call-overload]
        resolved_later_errors=int(resolved_later),  # type: ignore[call-overload]
        replays=int(replays),  # type: ignore[call-overload]
        open_errors=int(open_e),  # type: ignore[call-overload]
        aborted_errors=int(aborted_e),  # type: ignore[call-overload]
        gave_up_errors=int(gave_up_e),  # type: ignore[call-overload]
        p50_latency_ms=_latency(p50),
        p95_latency_ms=_latency(p95),
        p99_latency_ms=_latency(p99),
        tool_calls_without_latency=int(without_latency),  # type: ignore[call-overload]
        top_error_template=None if template is None else str(template),
        top_error_template_errors=int(template_errors),  # type: ignore[call-overload]
    )


def unknown_tools(con: duckdb.DuckDBPyConnection, names: list[str], *, hint_limit: int = 8) -> tuple[list[str], list[str]]:
    """Of ``names``, those no record of the store calls; and up to ``hint_limit`` tool names it has."""
    seen = {row[0] for row in con.execute(SEEN_TOOLS_SQL, [names]).fetchall()}
    unknown = [n for n in names if n not in seen]
    some = [row[0] for row in con.execute(SOME_TOOLS_SQL, [hint_limit]).fetchall()] if unknown else []
    return unknown, some
