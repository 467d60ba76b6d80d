"""The figures of one cohort: the four dashboard metrics with the counts behind them.

``compare``, ``check`` and ``audit`` need, for a ``Selection``, the four
metrics of docs/records.md *and* their numerators and denominators (the
significance tests work on counts), plus the per-prompt tool-call counts
(the sample the Mann-Whitney test ranks). The metric values themselves come
from ``loopscope.analyses.metrics`` when it provides them; the counts are read
from the normative views (``prompts_v``, ``errors_v``, ``tool_calls_v``), so
nothing here redefines a metric.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import duckdb

from loopscope.analyses.selection import Selection, parse_iso_week

# Prompt-level figures: counts and the per-prompt tool-call quantiles
# (quantile_cont = linear interpolation, as the metric definition requires).
PROMPT_FIGURES_SQL = """
SELECT
    count(*) AS prompts,
    count(*) FILTER (WHERE p.is_open) AS open_prompts,
    quantile_cont(p.n_tool_calls, 0.5) AS median_tool_calls,
    quantile_cont(p.n_tool_calls, 0.99) AS p99_tool_calls,
    count(DISTINCT p.conversation_id) AS conversations
FROM prompts_v p
WHERE {where}
"""

# Errors (non-replay is_error calls) of the selected prompts, by class.
ERROR_COUNTS_SQL = """
SELECT
    count(*) AS errors,
    count(*) FILTER (WHERE e.error_class = 'recovered') AS recovered
FROM errors_v e
JOIN prompts_v p USING (conversation_id, prompt_id)
WHERE {where}
"""

# Tool calls and replays of the selected prompts.
CALL_COUNTS_SQL = """
SELECT
    count(*) AS tool_calls,
    count(*) FILTER (WHERE t.is_replay) AS replays
FROM tool_calls_v t
JOIN prompts_v p USING (conversation_id, prompt_id)
WHERE {where}
"""

# The sample for the rank test: tool calls of every selected prompt.
TOOL_CALL_COUNTS_SQL = """
SELECT p.n_tool_calls FROM prompts_v p WHERE {where} ORDER BY p.n_tool_calls
"""

# ISO weeks (of the prompts' first ts) present in the selection.
WEEKS_SQL = """
SELECT DISTINCT strftime(p.first_ts, '%G-W%V') AS week FROM prompts_v p WHERE {where} ORDER BY week
"""

# Agents present in the selection.
AGENTS_SQL = """
SELECT DISTINCT p.agent FROM prompts_v p WHERE {where} ORDER BY p.agent
"""


@dataclass(frozen=True)
class Figures:
    """The four dashboard metrics of a cohort and the counts they come from.

    Attributes:
        prompts: prompts in the cohort (open ones included).
        open_prompts: prompts with no ``loop_exit``.
        conversations: distinct conversations.
        median_tool_calls: metric 1, None when there is no prompt.
        p99_tool_calls: metric 2, None when there is no prompt.
        errors: non-replay ``is_error`` calls.
        recovered: of those, recovered.
        tool_calls: every ``tool_call`` record.
        replays: of those, replays.
    """

    prompts: int
    open_prompts: int
    conversations: int
    median_tool_calls: float | None
    p99_tool_calls: float | None
    errors: int
    recovered: int
    tool_calls: int
    replays: int

    @property
    def recovery_rate(self) -> float | None:
        """Metric 3: recovered / errors, None without errors."""
        return self.recovered / self.errors if self.errors else None

    @property
    def replay_rate(self) -> float | None:
        """Metric 4: replays / tool calls, None without tool calls."""
        return self.replays / self.tool_calls if self.tool_calls else None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON, rates included."""
        return {**asdict(self), "recovery_rate": self.recovery_rate, "replay_rate": self.replay_rate}


def _one(con: duckdb.DuckDBPyConnection, sql: str, selection: Selection) -> dict[str, Any]:
    where, params = selection.where("p")
    cur = con.execute(sql.format(where=where), params)
    names = [d[0] for d in cur.description or []]
    row = cur.fetchone()
    return dict(zip(names, row)) if row else {}


def _column(con: duckdb.DuckDBPyConnection, sql: str, selection: Selection) -> list[Any]:
    where, params = selection.where("p")
    return [r[0] for r in con.execute(sql.format(where=where), params).fetchall()]


def figures(con: duckdb.DuckDBPyConnection, selection: Selection) -> Figures:
    """The figures of the prompts ``selection`` picks."""
    prompts = _one(con, PROMPT_FIGURES_SQL, selection)
    errors = _one(con, ERROR_COUNTS_SQL, selection)
    calls = _one(con, CALL_COUNTS_SQL, selection)
    return Figures(
        prompts=int(prompts["prompts"]),
        open_prompts=int(prompts["open_prompts"]),
        conversations=int(prompts["conversations"]),
        median_tool_calls=_float(prompts["median_tool_calls"]),
        p99_tool_calls=_float(prompts["p99_tool_calls"]),
        errors=int(errors["errors"]),
        recovered=int(errors["recovered"]),
        tool_calls=int(calls["tool_calls"]),
        replays=int(calls["replays"]),
    )


def tool_call_counts(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[int]:
    """Tool calls per selected prompt, ascending (the rank test's sample)."""
    return [int(v) for v in _column(con, TOOL_CALL_COUNTS_SQL, selection)]


def weeks(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[str]:
    """ISO weeks (``2026-W47``) in which selected prompts started, in order."""
    return [str(v) for v in _column(con, WEEKS_SQL, selection)]


def agents(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[str]:
    """Agent types of the selected prompts, sorted."""
    return [str(v) for v in _column(con, AGENTS_SQL, selection)]


def week_selection(selection: Selection, week: str) -> Selection:
    """``selection`` narrowed to one ISO week (intersected with its own window)."""
    start, end = parse_iso_week(week)
    since = max(start, selection.since) if selection.since else start
    until = min(end, selection.until) if selection.until else end
    return replace(selection, since=since, until=until)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)

