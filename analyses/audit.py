"""The audit report: every figure loopscope computes, over one selection, in one document.

``audit(con, selection)`` returns a plain dict (the ``--format json``
document; the terminal and HTML renderers read only this dict):

- ``notices``: what makes the figures mislead if unsaid (``notices``);
- ``overall``: the four dashboard metrics with their counts (``cohorts``),
  named as everywhere (``metrics.METRIC_KEYS``);
- ``weeks``: the same per ISO week (of each prompt's first record), each
  with its **week-over-week change** against the previous week in the data:
  the difference and a significance test (``stats``: two-proportion z-test
  for the recovery and replay rates, Mann-Whitney U on the per-prompt tool
  calls for the median and p99), flagged when p < alpha;
- ``agents``: per agent type, its overall figures and its own weekly series
  with changes;
- ``groups``: with ``by`` (``tag:model``), the same per value of that tag
  (``{"by": "tag:model", "items": [{"group": ..., figures, "weeks"}]}``), else null;
- ``tools``: per-tool health, most-called tools first (``tools.tool_health``);
- ``error_classes_by_tool`` (``recovery.class_breakdown``);
- ``generic_templates``: the costliest error-message templates lint calls
  generic (``lint.ranking.rank_templates``), with the total;
- ``retry_loops``, ``no_progress_loops`` and ``cycles`` (``analyses.loops``),
  ``replays`` (short-circuited vs double executions),
  ``duplicate_executions``, ``budget_pressure`` (``incidents``);
- ``protocol_violations``: counts per kind and the first rows (table
  ``protocol_violations``, filled by the conversation-log readers);
- ``triage_first``: conversations with unrecovered errors, most unrecovered
  errors first, then most earlier attempts at the failing call, then newest
  (from ``recovery.first_unrecovered_all``);
- ``reviews``: reviewer verdicts beside the computed classes
  (``review.agreement``), limited to the selected conversations.

Lists are ordered and cut to ``limit`` rows in their queries; each section
keeps its full ``total``, counted by the query too, so the report's memory
does not grow with the data.
"""

from __future__ import annotations

import copy
from typing import Any

import duckdb

from loopscope.analyses import incidents, recovery, stats
from loopscope.analyses import loops as loop_kinds
from loopscope.analyses.cohorts import Figures, figures, figures_by
from loopscope.analyses.metrics import GROUP_KEYS, TIME_GROUPS, time_grouped
from loopscope.analyses.compare import compare_figures
from loopscope.analyses.store.relations import errors_computed_once, relations
from loopscope.analyses.notices import NO_TIMESTAMP, notices
from loopscope.analyses.review import agreement
from loopscope.analyses.selection import GroupBy, Selection
from loopscope.analyses.tools import tool_health

METRICS = (
    "median_tool_calls_per_prompt",
    "p99_tool_calls_per_prompt",
    "recovery_rate",
    "conversation_recovery_rate",
    "replay_rate",
)
TESTS = {
    "median_tool_calls_per_prompt": stats.MANN_WHITNEY,
    "p99_tool_calls_per_prompt": stats.MANN_WHITNEY,
    "recovery_rate": stats.TWO_PROPORTION,
    "conversation_recovery_rate": stats.TWO_PROPORTION,
    "replay_rate": stats.TWO_PROPORTION,
}

# What each test compares: the Mann-Whitney test ranks whole distributions, so a significant
# change of the median's row can come with a median that did not move; the mean tool calls
# per prompt (``means``) then shows what did.
DISTRIBUTION_TESTED = "distribution of tool calls per prompt"
TESTED = {
    "median_tool_calls_per_prompt": DISTRIBUTION_TESTED,
    "p99_tool_calls_per_prompt": DISTRIBUTION_TESTED,
    "recovery_rate": "recovered errors / errors",
    "conversation_recovery_rate": "recovered or resolved-later errors / errors",
    "replay_rate": "replays / tool calls",
}


def _mean_calls(fig: Figures) -> float | None:
    return round(fig.tool_calls / fig.prompts, 3) if fig.prompts else None


# Protocol violations of the selected prompts' conversations, computed once
# into a temporary table for the two queries below (the id collisions among
# them number the calls whose id repeats: a pass over the records).
SELECTED_VIOLATIONS_TABLE = "_ls_audit_violations"
SELECTED_VIOLATIONS_SQL = """
CREATE OR REPLACE TEMP TABLE """ + SELECTED_VIOLATIONS_TABLE + """ AS
SELECT v.source_id, v.conversation_id, v.prompt_id, v.tool_call_id, v.kind, v.detail
FROM {violations} v
WHERE v.conversation_id IS NULL
   OR v.conversation_id IN (SELECT p.conversation_id FROM {prompts} p WHERE {where})
"""
DROP_SELECTED_VIOLATIONS_SQL = "DROP TABLE IF EXISTS " + SELECTED_VIOLATIONS_TABLE
# Per kind.
PROTOCOL_VIOLATIONS_BY_KIND_SQL = """
SELECT v.kind, count(*) AS violations, count(DISTINCT v.conversation_id) AS conversations
FROM """ + SELECTED_VIOLATIONS_TABLE + """ v
GROUP BY v.kind
ORDER BY violations DESC, v.kind
"""
# The violations themselves, first ones by conversation.
PROTOCOL_VIOLATIONS_SQL = """
SELECT v.conversation_id, v.prompt_id, v.tool_call_id, v.kind, v.detail, s.path
FROM """ + SELECTED_VIOLATIONS_TABLE + """ v
LEFT JOIN sources s USING (source_id)
ORDER BY v.conversation_id NULLS LAST, v.prompt_id NULLS LAST, v.tool_call_id NULLS LAST, v.kind,
         v.detail NULLS LAST, s.path NULLS LAST  -- every column: the same order on every engine and run
LIMIT ?
"""
# Tool calls per selected prompt per ISO week, as (value, prompts) pairs: the
# sample of the week-over-week rank test, a few dozen rows per week instead of
# one per prompt (stats.Counts).
# {group_key}: the week, named per prompt (metrics.GROUP_KEYS) or, over prompt_facts, truncated
# and named once per group (metrics.time_grouped).
TOOL_CALL_COUNTS_BY_WEEK_SQL = """
SELECT {group_key} AS grp, p.n_tool_calls AS n, count(*) AS prompts
FROM {prompts} p
WHERE {where}
GROUP BY grp, n
ORDER BY grp, n
"""
# How many conversations the selection has, and those a reviewer judged (few: a weekly sample).
SELECTED_CONVERSATIONS_SQL = """
SELECT count(DISTINCT p.conversation_id),
       list(DISTINCT p.conversation_id) FILTER (WHERE p.conversation_id IN (SELECT conversation_id FROM reviews))
FROM {prompts} p
WHERE {where}
"""
# {prompts}: prompt_facts when it matches the records (one row per prompt, the
# columns of prompts_v, materialised by store.facts), else prompts_v itself;
# {violations}: protocol_violations_v's rows (store.relations).


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description or []]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _selection_dict(sel: Selection) -> dict[str, Any]:
    return {
        "since": sel.since,
        "until": sel.until,
        "agents": list(sel.agents),
        "tags": [f"{k}={v}" for k, v in sel.tags],
        "source_ids": list(sel.source_ids) if sel.source_ids is not None else None,
    }


def _figures(fig: Figures) -> dict[str, Any]:
    """A group's figures without its ``group`` key (the row names it as ``week`` or ``agent``)."""
    return {k: v for k, v in fig.to_dict().items() if k != "group"}


def _tool_call_counts_by_week(con: duckdb.DuckDBPyConnection, selection: Selection) -> dict[str, stats.Counts]:
    where, params = selection.where("p")
    prompts = relations(con).prompts
    if prompts == "prompt_facts":  # DuckDB's facts: each week named once (a ClickHouse store reads the views)
        sql = time_grouped(TOOL_CALL_COUNTS_BY_WEEK_SQL, *TIME_GROUPS["week"], prompts=prompts, where=where)
    else:
        sql = TOOL_CALL_COUNTS_BY_WEEK_SQL.format(group_key=GROUP_KEYS["week"], prompts=prompts, where=where)
    pairs: dict[str, list[tuple[float, int]]] = {}
    for week, n, count in con.execute(sql, params).fetchall():
        pairs.setdefault(str(week), []).append((int(n), int(count)))
    # ascending by value within each week (the named query orders by week only)
    return {week: stats.Counts(tuple(sorted(p))) for week, p in pairs.items()}


def weekly_series(con: duckdb.DuckDBPyConnection, selection: Selection, *, alpha: float = stats.ALPHA) -> list[dict[str, Any]]:
    """Figures per ISO week, each with its change against the previous week in the data."""
    series: list[dict[str, Any]] = []
    prev: tuple[str, Figures, stats.Counts] | None = None
    counts_by_week = _tool_call_counts_by_week(con, selection)
    for week, fig in figures_by(con, selection, "week"):
        if week == NO_TIMESTAMP:
            continue  # not a week: the notices say how many prompts have no time
        counts = counts_by_week.get(week, stats.Counts(()))
        row: dict[str, Any] = {"week": week, **_figures(fig), "previous_week": None, "changes": {}}
        if prev is not None:
            pweek, pfig, pcounts = prev
            row["previous_week"] = pweek
            for m in compare_figures(pfig, fig, pcounts, counts, alpha=alpha):
                if m.metric in METRICS:
                    row["changes"][m.metric] = {
                        "previous": m.a,
                        "difference": m.difference,
                        "p_value": m.test.p_value if m.test else None,
                        "significant": bool(m.test and m.test.significant),
                        "test": m.test.test if m.test else None,
                        "note": m.test.note if m.test else "",
                        "tested": TESTED[m.metric],
                        "means": (
                            {"previous": _mean_calls(pfig), "current": _mean_calls(fig)}
                            if TESTED[m.metric] == DISTRIBUTION_TESTED else None
                        ),
                    }
        series.append(row)
        prev = (week, fig, counts)
    return series


def audit(
    con: duckdb.DuckDBPyConnection,
    selection: Selection,
    *,
    limit: int = 10,
    alpha: float = stats.ALPHA,
    by: GroupBy | None = None,
    timelines: bool = False,
) -> dict[str, Any]:
    """Build the audit report over the selected prompts (see the module docstring).

    Args:
        con: an open store.
        selection: which prompts count.
        limit: rows kept per list section (totals are always complete).
        alpha: significance level of the week-over-week flags.
        by: also the figures and weekly series per value of a tag (``GroupBy("tag", "model")``);
            per agent is always there.
        timelines: also ``timelines``: the timeline of every conversation the lists name
            (``triage.timelines``; what the HTML page links each row to). At most a few
            times ``limit`` conversations, read together in one set of queries.
    """
    with errors_computed_once(con):
        report = _audit(con, selection, limit=limit, alpha=alpha, by=by)
        if timelines:
            from loopscope.analyses.triage import timelines as conversation_timelines

            report["timelines"] = conversation_timelines(con, listed_conversations(report))
        return report


# The list sections whose rows name a conversation: triage first, then the incident lists.
LISTED_SECTIONS = ("triage_first", "retry_loops", "no_progress_loops", "cycles", "replays", "duplicate_executions",
                   "protocol_violations")


def listed_conversations(report: dict[str, Any]) -> list[str]:
    """Every conversation a list of the report shows, once, in order (triage first, then the incident lists)."""
    ids: dict[str, None] = {}
    for section in LISTED_SECTIONS:
        for row in report[section]["items"]:
            if row.get("conversation_id") is not None:
                ids[str(row["conversation_id"])] = None
    for row in report["reviews"].get("disagreements") or []:
        if row.get("conversation_id") is not None:
            ids[str(row["conversation_id"])] = None
    return list(ids)


def group_series(con: duckdb.DuckDBPyConnection, selection: Selection, by: GroupBy, *, alpha: float,
                 whole: tuple[int, list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """Per group of ``by`` (agent or tag value): its figures and its own weekly series with changes.

    ``whole``: the selection's prompt count and weekly series. An agent that has every selected
    prompt (data from one agent) narrows the selection to the same prompts, so its series is a copy
    of that one rather than two more queries. (Not for tags: a tag's group and its narrowed
    selection differ where a value is spelled as ``UNTAGGED``.)
    """
    series = []
    for value, fig in figures_by(con, selection, by):
        if whole is not None and by.kind == "agent" and fig.prompts == whole[0]:
            weeks = copy.deepcopy(whole[1])
        else:
            weeks = weekly_series(con, by.narrow(selection, value), alpha=alpha)
        series.append({"group": value, **_figures(fig), "weeks": weeks})
    return series


def _audit(con: duckdb.DuckDBPyConnection, selection: Selection, *, limit: int, alpha: float,
           by: GroupBy | None) -> dict[str, Any]:
    from loopscope.analyses.lint.ranking import rank_templates

    where, params = selection.where("p")
    prompts = relations(con).prompts
    overall = figures(con, selection)
    row = con.execute(SELECTED_CONVERSATIONS_SQL.format(prompts=prompts, where=where), params).fetchone()
    conversations = int(row[0]) if row else 0
    reviewed = set(row[1] or ()) if row else set()

    weeks = weekly_series(con, selection, alpha=alpha)
    whole = (overall.prompts, weeks)
    agents = [{"agent": g.pop("group"), **g} for g in group_series(con, selection, GroupBy("agent"), alpha=alpha, whole=whole)]
    groups = None
    if by is not None and by.kind != "agent":
        groups = {"by": by.label, "items": group_series(con, selection, by, alpha=alpha)}

    templates = [t for t in rank_templates(con, selection) if t.generic]  # one row per template, not per call
    loops = incidents.retry_loops_page(con, selection, limit)
    no_progress = loop_kinds.no_progress_loops(con, selection)
    cycles = loop_kinds.cycles(con, selection)
    replays = incidents.replays_page(con, selection, limit)
    dups = incidents.duplicate_executions_page(con, selection, limit)
    unrecovered_total, unrecovered = recovery.triage_first(con, selection, limit=limit)
    kept = relations(con).violations
    con.execute(SELECTED_VIOLATIONS_SQL.format(prompts=prompts, where=where, violations=kept), params)
    try:
        violations_by_kind = _rows(con.execute(PROTOCOL_VIOLATIONS_BY_KIND_SQL))
        violations = _rows(con.execute(PROTOCOL_VIOLATIONS_SQL, [limit]))
    finally:
        con.execute(DROP_SELECTED_VIOLATIONS_SQL)
    reviews = agreement(con, conversation_ids=reviewed)

    return {
        "selection": _selection_dict(selection),
        "notices": [n.as_dict() for n in notices(con, selection)],
        "alpha": alpha,
        "tests": TESTS,
        "overall": {**overall.to_dict(), "conversations": conversations},
        "weeks": weeks,
        "agents": agents,
        "groups": groups,
        "tools": tool_health(con, selection, limit=limit).as_dict(),
        "error_classes_by_tool": [
            {"tool_name": b.key, **{k: v for k, v in b.to_dict().items() if k != "key"}}
            for b in recovery.class_breakdown(con, selection, by="tool")
        ],
        "generic_templates": {"total": len(templates), "items": [t.as_dict() for t in templates[:limit]]},
        "retry_loops": {
            "total": loops.totals["total"],
            "redundant_calls": loops.totals["redundant_calls"],
            "items": [r.to_dict() for r in loops.items],
        },
        "no_progress_loops": {
            "total": len(no_progress),
            "redundant_calls": sum(r.redundant_calls for r in no_progress),
            "items": [r.to_dict() for r in no_progress[:limit]],
        },
        "cycles": {
            "total": len(cycles),
            "redundant_calls": sum(c.redundant_calls for c in cycles),
            "items": [c.to_dict() for c in cycles[:limit]],
        },
        "replays": {
            "total": replays.totals["total"],
            "short_circuited": replays.totals["short_circuited"],
            "double_executions": replays.totals["total"] - replays.totals["short_circuited"],
            "items": [r.to_dict() for r in replays.items],
        },
        "duplicate_executions": {"total": dups.totals["total"], "items": [d.to_dict() for d in dups.items]},
        "budget_pressure": [b.to_dict() for b in incidents.budget_pressure(con, selection)],
        "protocol_violations": {
            "total": sum(int(v["violations"]) for v in violations_by_kind),
            "by_kind": violations_by_kind,
            "items": violations,
        },
        "triage_first": {"total": unrecovered_total, "items": [r.to_dict() for r in unrecovered]},
        "reviews": reviews,
    }
