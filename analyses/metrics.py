"""The four dashboard metrics (docs/records.md, "The four dashboard metrics").

Over the selected prompts (``Selection``):

1. and 2. median and p99 of n = the number of ``tool_call`` records of each
   prompt (0 for a prompt with only a ``loop_exit``), with linear
   interpolation between closest ranks (``quantile_cont``). Open prompts (no
   ``loop_exit``) are in the population and also counted as ``open_prompts``.
   Quantiles are rounded to 9 decimals (float noise of the interpolation).
3. recovery rate = recovered errors / errors (``errors_v``), null without errors;
   beside it (never instead of it) the conversation-level figures:
   ``resolved_later_errors`` (unrecovered errors that a later prompt of the
   conversation resolved with a success of the same tool) and
   ``conversation_recovery_rate`` = (recovered + resolved later) / errors;
   and ``error_classes``, the errors per class (recovered, open, aborted, gave_up).
4. replay rate = replays / all ``tool_call`` records (``tool_calls_v``), null
   without tool calls.

Record-level facts (is this call a replay, is this error recovered) come from
the normative views over the whole store; the selection only picks which
prompts are counted. The views' per-prompt results are materialised in
``prompt_facts`` by the first analysis after a load (``store.facts``), which keeps the metrics
on 10M records an aggregation over prompts. ``--by`` splits the same figures by the day, ISO week or
agent of each prompt's first record, or by the value of one of its tags (``tag:model``).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.notices import NO_TIMESTAMP, SYNTHETIC_BEFORE
from loopscope.analyses.store.freshness import facts_ready
from loopscope.analyses.selection import GroupBy, Selection, parse_group_by

# Grouping keys over prompts_v (aliased p); only these fixed texts are formatted in.
# Prompts from messages without timestamps (the readers date them 1970-01-01
# plus their index) go under ``notices.NO_TIMESTAMP``, never under a 1970 week.
_UNDATED = f"p.first_ts < TIMESTAMP '{SYNTHETIC_BEFORE}'"
GROUP_KEYS = {
    None: "'all'",
    "day": f"CASE WHEN {_UNDATED} THEN '{NO_TIMESTAMP}' ELSE strftime(p.first_ts, '%Y-%m-%d') END",
    "week": f"CASE WHEN {_UNDATED} THEN '{NO_TIMESTAMP}' ELSE strftime(p.first_ts, '%G-W%V') END",
    "agent": "p.agent",
}

# Weeks and days grouped cheaply. GROUP_KEYS names each prompt's week with
# strftime, row by row: at 10M records (1.78M prompts) that formatting is most of a
# weekly query's cost (0.12 of 0.24 s CPU). Truncating the time to the week (Monday,
# as ISO weeks start) or day costs a fifth of it and gives one value per ISO week
# (day); the name is then formatted once per group. Undated prompts get a key no
# truncation gives (1970-01-01 plus 1 us: truncations are midnights) and are named
# NO_TIMESTAMP; infinite times (stores loaded before the load refused them) keep
# their value, as strftime names them. Same groups, same names, same figures.
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


def time_unit(by: str | GroupBy | None) -> tuple[str, str] | None:
    kind = by.kind if isinstance(by, GroupBy) else by
    return TIME_GROUPS.get(kind) if isinstance(kind, str) else None


def time_grouped(query: str, unit: str, fmt: str, **slots: str) -> str:
    """``query`` (with ``{group_key}`` and ``slots``) grouped by truncated time, its groups then named."""
    inner = query.format(group_key=_TRUNCATED_KEY.replace("{unit}", unit), **slots)
    return NAMED_TIME_GROUPS_SQL.format(named=_NAMED_KEY.format(fmt=fmt), query=inner)


# Over prompt_facts (the views materialised per prompt by store.facts).
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
    sum(p.n_resolved_later) AS resolved_later_errors,
    sum(p.n_replays) AS replays,
    sum(p.n_errors - p.n_recovered) FILTER (WHERE p.is_open) AS open_errors,
    sum(p.n_errors - p.n_recovered) FILTER (WHERE NOT p.is_open AND NOT p.normal_exit) AS aborted_errors,
    sum(p.n_errors - p.n_recovered) FILTER (WHERE p.normal_exit) AS gave_up_errors
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
    SELECT s.grp, count(*) AS errors, count(*) FILTER (WHERE e.error_class = 'recovered') AS recovered_errors,
           count(*) FILTER (WHERE e.resolved_later) AS resolved_later_errors,
           count(*) FILTER (WHERE e.error_class = 'open') AS open_errors,
           count(*) FILTER (WHERE e.error_class = 'aborted') AS aborted_errors,
           count(*) FILTER (WHERE e.error_class = 'gave_up') AS gave_up_errors
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
    coalesce(e.resolved_later_errors, 0) AS resolved_later_errors,
    coalesce(r.replays, 0) AS replays,
    e.open_errors,
    e.aborted_errors,
    e.gave_up_errors
FROM prompt_figures f
LEFT JOIN error_figures e USING (grp)
LEFT JOIN replay_figures r USING (grp)
ORDER BY f.grp
"""

# One vocabulary (spec, "Names in machine-readable output"): every JSON/CSV
# output names these figures exactly so, overall, per group, per week, per agent.
RECOVERY_KEYS = (
    "recovered_errors",
    "recovery_rate",
    "resolved_later_errors",
    "conversation_recovery_rate",
    "replays",
    "replay_rate",
)
"""The recovery and replay figures, after ``errors`` in ``METRIC_KEYS`` and ``TOOL_KEYS`` alike."""
METRIC_KEYS = (
    "prompts",
    "open_prompts",
    "tool_calls",
    "median_tool_calls_per_prompt",
    "p99_tool_calls_per_prompt",
    "errors",
    *RECOVERY_KEYS,
)
ERROR_CLASSES_KEY = "error_classes"
"""The per-class error counts, an object keyed by ``model.ERROR_CLASSES``."""
RATE_KEYS = ("recovery_rate", "conversation_recovery_rate", "replay_rate")
"""The figures that are rates (0..1, null when their denominator is 0)."""
# Per-tool health (``tools.tool_health``; ``metrics --by tool``, the audit's
# "Tools" section, ``check --tool``): the names above where they mean the same
# thing over one tool's calls, and these new figures, defined once here:
# ``error_rate`` = errors / tool_calls (null without calls);
# ``p50_latency_ms``, ``p95_latency_ms``, ``p99_latency_ms``: exact quantiles
# (``quantile_cont``) of ``latency_ms`` over the tool's calls that have one;
# ``tool_calls_without_latency``: the calls left out of them (no latency_ms);
# ``top_error_template``: the tool's most frequent error template (lint's
# masking), ``top_error_template_errors``: its errors; ``scratchpad``: a
# scratchpad tool (its successes never recover an error).
TOOL_KEYS = (
    "tool_name",
    "scratchpad",
    "tool_calls",
    "errors",
    "error_rate",
    *RECOVERY_KEYS,
    "p50_latency_ms",
    "p95_latency_ms",
    "p99_latency_ms",
    "tool_calls_without_latency",
    "top_error_template",
    "top_error_template_errors",
)
TOOL_RATE_KEYS = ("error_rate", "recovery_rate", "conversation_recovery_rate", "replay_rate")
"""The per-tool figures that are rates (0..1, null when their denominator is 0)."""
LATENCY_KEYS = ("p50_latency_ms", "p95_latency_ms", "p99_latency_ms")
LATENCY_QUANTILES = (0.5, 0.95, 0.99)
GROUP_BY_CHOICES = ("day", "week", "agent")
BY_TOOL = "tool"
"""Groupings of prompts; ``metrics --by tool`` groups calls instead (``tools.tool_health``, ``TOOL_KEYS``)."""
QUANTILE_DECIMALS = 9


class Rates:
    """The rates every figure set shares, each defined once: metric 3, the conversation recovery rate, metric 4.

    Mixed into ``Metrics`` (per group of prompts) and ``tools.ToolHealth`` (per
    tool), which both carry the counts ``errors``, ``recovered_errors``,
    ``resolved_later_errors``, ``replays`` and ``tool_calls``.
    """

    __slots__ = ()
    errors: int
    recovered_errors: int
    resolved_later_errors: int
    replays: int
    tool_calls: int
    open_errors: int
    aborted_errors: int
    gave_up_errors: int

    @property
    def recovery_rate(self) -> float | None:
        """Metric 3: recovered errors / errors, None without errors."""
        return self.recovered_errors / self.errors if self.errors else None

    @property
    def conversation_recovery_rate(self) -> float | None:
        """(recovered + unrecovered but resolved later) / errors, None without errors."""
        return (self.recovered_errors + self.resolved_later_errors) / self.errors if self.errors else None

    @property
    def replay_rate(self) -> float | None:
        """Metric 4: replays / tool calls, None without tool calls."""
        return self.replays / self.tool_calls if self.tool_calls else None


    @property
    def error_classes(self) -> dict[str, int]:
        """Errors per class, in ``ERROR_CLASSES`` order."""
        return {
            "recovered": self.recovered_errors,
            "open": self.open_errors,
            "aborted": self.aborted_errors,
            "gave_up": self.gave_up_errors,
        }


@dataclass(frozen=True)
class Metrics(Rates):
    """The four metrics and the counts behind them, for one group of prompts.

    Field names are the spec's names (``METRIC_KEYS``); ``as_dict`` is the
    JSON shape every command prints.
    """

    prompts: int
    open_prompts: int
    tool_calls: int
    median_tool_calls_per_prompt: float | None
    p99_tool_calls_per_prompt: float | None
    errors: int
    recovered_errors: int
    resolved_later_errors: int
    replays: int
    open_errors: int = 0
    aborted_errors: int = 0
    gave_up_errors: int = 0
    group: str | None = None

    def as_dict(self) -> dict[str, object]:
        """Plain data with the spec's keys (``group`` first, only when grouped)."""
        data: dict[str, object] = {key: getattr(self, key) for key in METRIC_KEYS}
        data[ERROR_CLASSES_KEY] = self.error_classes
        return ({"group": self.group} | data) if self.group is not None else data

    def to_dict(self) -> dict[str, object]:
        """The same as ``as_dict``."""
        return self.as_dict()


EMPTY = Metrics(0, 0, 0, None, None, 0, 0, 0, 0)


def flat_dict(data: dict[str, object]) -> dict[str, object]:
    """A metrics dict with ``error_classes`` spread into ``error_classes.<class>`` columns (CSV)."""
    out = {k: v for k, v in data.items() if k != ERROR_CLASSES_KEY}
    classes = data.get(ERROR_CLASSES_KEY)
    if isinstance(classes, dict):
        out.update({f"{ERROR_CLASSES_KEY}.{k}": v for k, v in classes.items()})
    return out


def _quantile(value: object) -> float | None:
    # Interpolation in binary floating point leaves noise (4 + 0.6 * 21 ->
    # 16.600000000000033); n is an integer count, so 9 decimals lose nothing.
    return None if value is None else round(float(value), QUANTILE_DECIMALS)  # type: ignore[arg-type]


def _int(value: object) -> int:
    return int(value or 0)  # type: ignore[call-overload]


def row_to_metrics(row: tuple[object, ...], grouped: bool) -> Metrics:
    """One row of ``FACTS_METRICS_SQL`` (its group first when ``grouped``) as Metrics; shared with cohorts."""
    # The counts only: the rates are the Metrics properties (one definition each).
    grp, prompts, open_p, calls, med, p99, errors, recovered, resolved_later, replays, open_e, aborted_e, gave_up_e = row
    return Metrics(
        prompts=_int(prompts),
        open_prompts=_int(open_p),
        tool_calls=_int(calls),
        median_tool_calls_per_prompt=_quantile(med),
        p99_tool_calls_per_prompt=_quantile(p99),
        errors=_int(errors),
        recovered_errors=_int(recovered),
        resolved_later_errors=_int(resolved_later),
        replays=_int(replays),
        open_errors=_int(open_e),
        aborted_errors=_int(aborted_e),
        gave_up_errors=_int(gave_up_e),
        group=str(grp) if grouped else None,
    )


def compute_metrics(
    con: duckdb.DuckDBPyConnection, selection: Selection | None = None, *, source: str = "auto"
) -> Metrics:
    """The four metrics over the prompts in ``selection`` (all prompts when None)."""
    rows = metrics_by(con, selection, None, source=source)
    return rows[0] if rows else EMPTY


def metrics_by(
    con: duckdb.DuckDBPyConnection, selection: Selection | None, by: str | GroupBy | None, *, source: str = "auto"
) -> list[Metrics]:
    """The metrics per group: ``by`` is None (one row), ``day``, ``week`` (ISO, 2026-W47), ``agent`` or ``tag:KEY``.

    ``tag:KEY`` groups prompts by the value of one tag (``selection.UNTAGGED``
    for prompts without it). ``source``: ``auto`` reads ``prompt_facts`` when
    it is (or can be made) fresh, else the views; ``views`` always computes
    from the views (tests compare both).

    Raises:
        LoopscopeError: ``by`` is not one of those.
    """
    key_sql, key_params = group_key(by)
    where, params = (selection or Selection()).where("p")
    template = FACTS_METRICS_SQL if source == "auto" and facts_ready(con) else METRICS_SQL
    unit = time_unit(by)
    if unit is not None and template is FACTS_METRICS_SQL:  # each week (day) named once, not per prompt
        query, key_params = time_grouped(template, *unit, where=where), []
    else:
        query = template.format(group_key=key_sql, where=where)
    rows = con.execute(query, [*key_params, *params]).fetchall()  # the group key comes before WHERE
    result = [row_to_metrics(row, by is not None) for row in rows]
    if by is None and not result:
        return [EMPTY]
    return result


def group_key(by: str | GroupBy | None) -> tuple[str, list[object]]:
    """The SQL grouping expression over prompts (aliased ``p``) of ``by`` and its bound parameters.

    Raises:
        LoopscopeError: ``by`` is not a grouping.
    """
    if by is None:
        return GROUP_KEYS[None], []
    grouping = by if isinstance(by, GroupBy) else parse_group_by(by, GROUP_BY_CHOICES)
    return grouping.key_sql(GROUP_KEYS)
