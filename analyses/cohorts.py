"""The figures of one cohort: the four dashboard metrics with the counts behind them.

``compare``, ``check`` and ``audit`` need, for a ``Selection``, the four
metrics of docs/records.md *and* their numerators and denominators (the
significance tests work on counts), plus the per-prompt tool-call counts
(the sample the Mann-Whitney test ranks). The metric values and their counts
come from ``loopscope.analyses.metrics``; the per-prompt sample is read from
the normative view ``prompts_v``, so nothing here redefines a metric.
"""

from __future__ import annotations

from dataclasses import replace

import duckdb

from loopscope.analyses.store.freshness import facts_ready
from loopscope.analyses.metrics import Metrics, compute_metrics, group_key, metrics_by, time_grouped, time_unit
from loopscope.analyses.selection import GroupBy, Selection, parse_iso_week

# The sample for the rank test: tool calls of every selected prompt, per group.
# {table} is prompt_facts (the per-prompt materialisation of prompts_v, when
# fresh) or prompts_v itself; {group_key} is metrics.group_key's expression.
TOOL_CALL_COUNTS_SQL = """
SELECT {group_key} AS grp, list(p.n_tool_calls ORDER BY p.n_tool_calls) AS counts
FROM {table} p
WHERE {where}
GROUP BY grp
ORDER BY grp
"""

Figures = Metrics
"""A cohort's figures are the metrics module's result (one vocabulary: the spec's names)."""


def figures(con: duckdb.DuckDBPyConnection, selection: Selection) -> Figures:
    """The figures of the prompts ``selection`` picks."""
    return compute_metrics(con, selection)


def figures_by(con: duckdb.DuckDBPyConnection, selection: Selection, by: str | GroupBy) -> list[tuple[str, Figures]]:
    """The figures per ``week`` (ISO, of each prompt's first record), ``day``, ``agent`` or ``tag:KEY``, in key order."""
    return sorted(((str(m.group), m) for m in metrics_by(con, selection, by)), key=lambda kv: kv[0])


def tool_call_counts_by(
    con: duckdb.DuckDBPyConnection, selection: Selection, by: str | GroupBy | None
) -> dict[str, list[int]]:
    """Tool calls per selected prompt, ascending (the rank test's sample), per ``week``/``day``/``agent`` group.

    One query for every group; it reads ``prompt_facts`` when it matches the
    records (``store.facts``), else the view ``prompts_v`` (same rows).
    """
    where, params = selection.where("p")
    table = "prompt_facts" if facts_ready(con) else "prompts_v"
    unit = time_unit(by)
    if unit is not None and table == "prompt_facts":  # DuckDB's facts (a ClickHouse store reads the views)
        key_params: list[object] = []
        sql = time_grouped(TOOL_CALL_COUNTS_SQL, *unit, table=table, where=where)
    else:
        key_sql, key_params = group_key(by)
        sql = TOOL_CALL_COUNTS_SQL.format(group_key=key_sql, table=table, where=where)
    rows = con.execute(sql, [*key_params, *params]).fetchall()  # the group key comes before WHERE
    return {str(grp): [int(v) for v in counts] for grp, counts in rows}


def tool_call_counts(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[int]:
    """Tool calls per selected prompt, ascending (the rank test's sample)."""
    return tool_call_counts_by(con, selection, None).get("all", [])


def week_selection(selection: Selection, week: str) -> Selection:
    """``selection`` narrowed to one ISO week (intersected with its own window)."""
    start, end = parse_iso_week(week)
    since = max(start, selection.since) if selection.since else start
    until = min(end, selection.until) if selection.until else end
    return replace(selection, since=since, until=until)
