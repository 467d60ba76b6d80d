"""The four dashboard metrics (docs/records.md, "The four dashboard metrics").

Over the selected prompts (``Selection``):

1. and 2. median and p99 of n = the number of ``tool_call`` records of each
   prompt (0 for a prompt with only a ``loop_exit``), with linear
   interpolation between closest ranks (``quantile_cont``). Open prompts (no
   ``loop_exit``) are in the population and also counted as ``open_prompts``.
   Quantiles are rounded to 9 decimals (float noise of the interpolation).
3. recovery rate = recovered errors / errors (``errors_v``), null without errors.
4. replay rate = replays / all ``tool_call`` records (``tool_calls_v``), null
   without tool calls.

Record-level facts (is this call a replay, is this error recovered) come from
the normative views over the whole store; the selection only picks which
prompts are counted. The views' per-prompt results are materialised in
``prompt_facts`` after each load (``loader_facts``), which keeps the metrics
on 10M records an aggregation over prompts. ``--by`` splits the same figures by the day, ISO week or
agent of each prompt's first record.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import duckdb

from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.store.facts import ensure_facts
from loopscope.analyses.selection import Selection

# Grouping keys over prompts_v (aliased p); only these fixed texts are formatted in.
GROUP_KEYS = {
    None: "'all'",
    "day": "strftime(p.first_ts, '%Y-%m-%d')",
    "week": "strftime(p.first_ts, '%G-W%V')",
    "agent": "p.agent",
}

# Over prompt_facts (the views materialised per prompt by loader_facts).
FACTS_METRICS_SQL = """
SELECT
    {group_key} AS grp,
    count(*) AS prompts,
    count(*) FILTER (WHERE p.is_open) AS open_prompts,
    sum(p.n_tool_calls) AS tool_calls,
    quantile_cont(p.n_tool_calls, 0.5) AS median_tool_calls_per_prompt,
    quantile_cont(p.n_tool_calls, 0.99) AS p99_tool_calls_per_prompt,
    sum(p.n_errors) AS errors,
    sum(p.n_recovered) AS recovered_errors,
    sum(p.n_recovered) / nullif(sum(p.n_errors), 0) AS recovery_rate,
    sum(p.n_replays) AS replays,
    sum(p.n_replays) / nullif(sum(p.n_tool_calls), 0) AS replay_rate
FROM prompt_facts p
WHERE {where}
GROUP BY grp
ORDER BY grp
"""

# The same figures straight from the views (used when prompt_facts is stale
# and cannot be rebuilt, e.g. on a read-only database).
METRICS_SQL = """
WITH sel AS (
    SELECT p.conversation_id, p.prompt_id, p.is_open, p.n_tool_calls, {group_key} AS grp
    FROM prompts_v p
    WHERE {where}
),
prompt_figures AS (
    SELECT
        grp,
        count(*) AS prompts,
        count(*) FILTER (WHERE is_open) AS open_prompts,
        sum(n_tool_calls) AS tool_calls,
        quantile_cont(n_tool_calls, 0.5) AS median_tool_calls_per_prompt,
        quantile_cont(n_tool_calls, 0.99) AS p99_tool_calls_per_prompt
    FROM sel
    GROUP BY grp
),
error_figures AS (
    SELECT s.grp, count(*) AS errors, count(*) FILTER (WHERE e.error_class = 'recovered') AS recovered_errors
    FROM errors_v e
    JOIN sel s USING (conversation_id, prompt_id)
    GROUP BY s.grp
),
replay_figures AS (
    SELECT s.grp, count(*) AS replays
    FROM tool_calls_v t
    JOIN sel s USING (conversation_id, prompt_id)
    WHERE t.is_replay
    GROUP BY s.grp
)
SELECT
    f.grp,
    f.prompts,
    f.open_prompts,
    f.tool_calls,
    f.median_tool_calls_per_prompt,
    f.p99_tool_calls_per_prompt,
    coalesce(e.errors, 0) AS errors,
    coalesce(e.recovered_errors, 0) AS recovered_errors,
    coalesce(e.recovered_errors, 0) / nullif(coalesce(e.errors, 0), 0) AS recovery_rate,
    coalesce(r.replays, 0) AS replays,
    coalesce(r.replays, 0) / nullif(f.tool_calls, 0) AS replay_rate
FROM prompt_figures f
LEFT JOIN error_figures e USING (grp)
LEFT JOIN replay_figures r USING (grp)
ORDER BY f.grp
"""

METRIC_KEYS = (
    "prompts",
    "open_prompts",
    "tool_calls",
    "median_tool_calls_per_prompt",
    "p99_tool_calls_per_prompt",
    "errors",
    "recovered_errors",
    "recovery_rate",
    "replays",
    "replay_rate",
)
GROUP_BY_CHOICES = ("day", "week", "agent")
QUANTILE_DECIMALS = 9


@dataclass(frozen=True)
class Metrics:
    """The four metrics and the counts behind them, for one group of prompts."""

    prompts: int
    open_prompts: int
    tool_calls: int
    median_tool_calls_per_prompt: float | None
    p99_tool_calls_per_prompt: float | None
    errors: int
    recovered_errors: int
    recovery_rate: float | None
    replays: int
    replay_rate: float | None
    group: str | None = None

    def as_dict(self) -> dict[str, object]:
        """Plain data with the JSON keys (``group`` only when grouped)."""
        data = asdict(self)
        group = data.pop("group")
        return ({"group": group} | data) if group is not None else data


EMPTY = Metrics(0, 0, 0, None, None, 0, 0, None, 0, None)


def _quantile(value: object) -> float | None:
    # Interpolation in binary floating point leaves noise (4 + 0.6 * 21 ->
    # 16.600000000000033); n is an integer count, so 9 decimals lose nothing.
    return None if value is None else round(float(value), QUANTILE_DECIMALS)  # type: ignore[arg-type]


def _row_to_metrics(row: tuple[object, ...], grouped: bool) -> Metrics:
    grp, prompts, open_p, calls, med, p99, errors, recovered, rec_rate, replays, rep_rate = row
    return Metrics(
        prompts=int(prompts),  # type: ignore[arg-type]
        open_prompts=int(open_p),  # type: ignore[arg-type]
        tool_calls=int(calls or 0),  # type: ignore[arg-type]
        median_tool_calls_per_prompt=_quantile(med),
        p99_tool_calls_per_prompt=_quantile(p99),
        errors=int(errors),  # type: ignore[arg-type]
        recovered_errors=int(recovered),  # type: ignore[arg-type]
        recovery_rate=None if rec_rate is None else float(rec_rate),  # type: ignore[arg-type]
        replays=int(replays),  # type: ignore[arg-type]
        replay_rate=None if rep_rate is None else float(rep_rate),  # type: ignore[arg-type]
        group=str(grp) if grouped else None,
    )


def compute_metrics(
    con: duckdb.DuckDBPyConnection, selection: Selection | None = None, *, source: str = "auto"
) -> Metrics:
    """The four metrics over the prompts in ``selection`` (all prompts when None)."""
    rows = metrics_by(con, selection, None, source=source)
    return rows[0] if rows else EMPTY


def metrics_by(
    con: duckdb.DuckDBPyConnection, selection: Selection | None, by: str | None, *, source: str = "auto"
) -> list[Metrics]:
    """The metrics per group: ``by`` is None (one row), ``day``, ``week`` (ISO, 2026-W47) or ``agent``.

    ``source``: ``auto`` reads ``prompt_facts`` when it is (or can be made)
    fresh, else the views; ``views`` always computes from the views (tests
    compare both).

    Raises:
        LoopscopeError: ``by`` is not one of those.
    """
    if by not in GROUP_KEYS:
        raise LoopscopeError(f"--by {by!r} is not a grouping", hint="use --by day, --by week or --by agent")
    where, params = (selection or Selection()).where("p")
    template = FACTS_METRICS_SQL if source == "auto" and ensure_facts(con) else METRICS_SQL
    query = template.format(group_key=GROUP_KEYS[by], where=where)
    rows = con.execute(query, params).fetchall()
    result = [_row_to_metrics(row, by is not None) for row in rows]
    if by is None and not result:
        return [EMPTY]
    return result
