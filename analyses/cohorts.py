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
from loopscope.analyses.metrics import (
    FACTS_METRICS_SQL, Metrics, row_to_metrics, compute_metrics, group_key, metrics_by,
)
from loopscope.analyses.notices import NO_TIMESTAMP, SYNTHETIC_BEFORE
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

# Weeks and days grouped cheaply. metrics.GROUP_KEYS names each prompt's week with
# strftime, row by row: at 10M records (1.78M prompts) that formatting is most of a
# weekly query's cost (0.12 of 0.24 s CPU). Truncating the time to the week (Monday,
# as ISO weeks start) or day costs a fifth of it and gives one value per ISO week
# (day); the name is then formatted once per group. Undated prompts get a key no
# truncation gives (1970-01-01 plus 1 us: truncations are midnights) and are named
# NO_TIMESTAMP; infinite times (stores loaded before the load refused them) keep
# their value, as strftime names them. Same groups, same names, same figures.
_UNDATED = f"p.first_ts < TIMESTAMP '{SYNTHETIC_BEFORE}'"  # as metrics.GROUP_KEYS
_UNDATED_KEY = "TIMESTAMP '1970-01-01 00:00:00.000001'"
_TRUNCATED_KEY = (
    f"CASE WHEN {_UNDATED} THEN {_UNDATED_KEY} WHEN NOT isfinite(p.first_ts) THEN p.first_ts "
    "ELSE date_trunc('{unit}', p.first_ts) END"
)
_NAMED_KEY = f"CASE WHEN k.grp = {_UNDATED_KEY} THEN '{NO_TIMESTAMP}' ELSE strftime(k.grp, '{{fmt}}') END"
TIME_GROUPS = {"week": ("week", "%G-W%V"), "day": ("day", "%Y-%m-%d")}
"""The groupings by time: their truncation unit and the format of their names (metrics.GROUP_KEYS's)."""
# {query}: a grouped query whose first column is the truncated key, named grp; {named}: its name.
NAMED_TIME_GROUPS_SQL = """
SELECT {named} AS grp, k.* EXCLUDE (grp)
FROM ({query}) k
ORDER BY grp
"""


def _time_unit(by: str | GroupBy | None) -> tuple[str, str] | None:
    kind = by.kind if isinstance(by, GroupBy) else by
    return TIME_GROUPS.get(kind) if isinstance(kind, str) else None


def _time_grouped(query: str, unit: str, fmt: str, **slots: str) -> str:
    """``query`` (with ``{group_key}`` and ``slots``) grouped by truncated time, its groups then named."""
    inner = query.format(group_key=_TRUNCATED_KEY.replace("{unit}", unit), **slots)
    return NAMED_TIME_GROUPS_SQL.format(named=_NAMED_KEY.format(fmt=fmt), query=inner)


Figures = Metrics
"""A cohort's figures are the metrics module's result (one vocabulary: the spec's names)."""


def figures(con: duckdb.DuckDBPyConnection, selection: Selection) -> Figures:
    """The figures of the prompts ``selection`` picks."""
    return compute_metrics(con, selection)


def figures_by(con: duckdb.DuckDBPyConnection, selection: Selection, by: str | GroupBy) -> list[tuple[str, Figures]]:
    """The figures per ``week`` (ISO, of each prompt's first record), ``day``, ``agent`` or ``tag:KEY``, in key order."""
    time_unit = _time_unit(by)
    if time_unit is not None and facts_ready(con):
        where, params = selection.where("p")
        sql = _time_grouped(FACTS_METRICS_SQL, *time_unit, where=where)
        return sorted(((str(row[0]), row_to_metrics(row, True)) for row in con.execute(sql, params).fetchall()),
                      key=lambda kv: kv[0])
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
    time_unit = _time_unit(by)
    if time_unit is not None and table == "prompt_facts":  # DuckDB's facts (a ClickHouse store reads the views)
        key_params: list[object] = []
        sql = _time_grouped(TOOL_CALL_COUNTS_SQL, *time_unit, table=table, where=where)
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
