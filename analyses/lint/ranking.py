"""Rank error-message templates by what they cost.

Every error (``errors_v``: non-replay ``is_error`` calls with their class) is
grouped by tool and message template (``template_of``). A template's cost is
how often the model failed to recover from it: the ranking orders by
unrecovered occurrences, then occurrences, then conversations affected. Each
row carries the recovery rate, the unrecovered classes (open, aborted,
gave_up), the lint rules its most common message trips, and that message as
an example.

Silent errors are ranked too (``kind = "silent"``): calls handed back with
``is_error: false`` although the collector's ``outcome`` says the call failed
or an ``error_message`` was recorded. They cannot be recovered from in the
metric's sense (the model was never told), so their unrecovered count is 0
and they sort after the errors of the same size; their rule list starts with
LS130.

The SQL only aggregates; the templates are computed in Python once per
distinct (tool, message) and joined back through a temporary table, so the
work is proportional to the number of distinct messages, not of calls.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from loopscope.analyses.lint.engine import checklist, lint_message
from loopscope.analyses.lint.rules import RULES_BY_ID
from loopscope.analyses.lint.templates import template_of
from loopscope.analyses.selection import Selection

# Distinct (tool, message) pairs among the selected errors and silent errors.
DISTINCT_MESSAGES_SQL = """
SELECT DISTINCT t.tool_name, coalesce(t.error_message, t.error_type, '') AS message
FROM tool_calls_v t
JOIN prompts_v p USING (conversation_id, prompt_id)
WHERE NOT t.is_replay
  AND (t.is_error OR t.error_message IS NOT NULL OR t.outcome IN ('transient_fail', 'permanent_fail'))
  AND ({where})
  AND (CAST(? AS VARCHAR) IS NULL OR t.tool_name = ?)
"""

# One row per (tool, template): counts, classes and the most common message.
TEMPLATE_IMPACT_SQL = """
WITH calls AS (
    SELECT
        t.tool_name, t.conversation_id, t.error_message, t.error_type, t.outcome, t.is_error,
        coalesce(t.error_message, t.error_type, '') AS message,
        e.error_class
    FROM tool_calls_v t
    JOIN prompts_v p USING (conversation_id, prompt_id)
    LEFT JOIN errors_v e
        ON e.conversation_id = t.conversation_id AND e.prompt_id = t.prompt_id
        AND e.tool_call_id = t.tool_call_id AND e.seq = t.seq
    WHERE NOT t.is_replay
      AND (t.is_error OR t.error_message IS NOT NULL OR t.outcome IN ('transient_fail', 'permanent_fail'))
      AND ({where})
      AND (CAST(? AS VARCHAR) IS NULL OR t.tool_name = ?)
),
-- Ties between equally common texts (types, outcomes) go to the smallest, so
-- the example is the same on every run (mode() picks any of them).
counted AS (
    SELECT
        c.*,
        m.template,
        count(*) OVER (PARTITION BY c.tool_name, m.template, c.is_error, c.message) AS n_message,
        count(*) OVER (PARTITION BY c.tool_name, m.template, c.is_error, c.error_type) AS n_type,
        count(*) OVER (PARTITION BY c.tool_name, m.template, c.is_error, c.outcome) AS n_outcome
    FROM calls c
    JOIN {table} m ON m.tool_name = c.tool_name AND m.message = c.message
)
SELECT
    c.tool_name,
    c.template,
    c.is_error,
    count(*) AS occurrences,
    count(*) FILTER (WHERE c.error_class = 'recovered') AS recovered,
    count(*) FILTER (WHERE c.error_class = 'open') AS open,
    count(*) FILTER (WHERE c.error_class = 'aborted') AS aborted,
    count(*) FILTER (WHERE c.error_class = 'gave_up') AS gave_up,
    count(DISTINCT c.conversation_id) AS conversations,
    count(DISTINCT c.message) AS variants,
    arg_min(c.message, (-c.n_message, c.message)) AS example,
    arg_min(c.error_type, (-c.n_type, c.error_type)) FILTER (WHERE c.error_type IS NOT NULL) AS error_type,
    arg_min(c.outcome, (-c.n_outcome, c.outcome)) AS outcome
FROM counted c
GROUP BY c.tool_name, c.template, c.is_error
HAVING count(*) >= ?
"""

_COUNTER = itertools.count()
# The rule a silent error trips: it is behind a silent template's verdict although it is not "generic".
SILENT_ERROR_RULE = "LS130"


@dataclass(frozen=True)
class TemplateImpact:
    """One message template of one tool, with what it cost."""

    tool_name: str
    template: str
    kind: str  # "error" (is_error true) or "silent" (is_error false, but the call failed)
    occurrences: int
    unrecovered: int
    recovered: int
    recovery_rate: float | None
    classes: dict[str, int]
    conversations: int
    variants: int
    generic: bool
    rules: list[str]
    severity: str | None
    rewrite: str | None
    example: str
    error_type: str | None = None
    outcome: str | None = None
    checklist: dict[str, bool] = field(default_factory=dict)  # engine.checklist(example)
    # why the lead rule fired on the example (its triggering words, or what it looked for and did not find),
    # the example rewritten along that rule with its own nouns, and notes such as "not English"
    evidence: str | None = None
    suggestion: str | None = None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """Plain values for JSON/CSV output; the recovered errors under the spec's name ``recovered_errors``."""
        out = asdict(self)
        out.pop("extra")
        out["recovered_errors"] = out.pop("recovered")
        return out

    @property
    def verdict_rules(self) -> list[str]:
        """The rules behind the verdict: those that make a message generic, and the silent-error rule."""
        return [r for r in self.rules if RULES_BY_ID[r].generic or r == SILENT_ERROR_RULE]


def _severity_rank(severity: str | None) -> int:
    return {"error": 0, "warning": 1, "info": 2}.get(severity or "", 3)


def rank_templates(
    con: duckdb.DuckDBPyConnection,
    selection: Selection,
    *,
    tool: str | None = None,
    min_count: int = 1,
    limit: int | None = None,
) -> list[TemplateImpact]:
    """Error-message templates of the selected prompts, costliest first.

    Args:
        con: a migrated store.
        selection: which prompts count (``Selection()`` for all).
        tool: only this tool's messages.
        min_count: drop templates seen fewer times.
        limit: keep only the first ``limit`` templates (None: all).

    Returns:
        Templates ordered by unrecovered occurrences, occurrences,
        conversations affected, then tool and template.
    """
    where, params = selection.where("p")
    pairs = con.execute(DISTINCT_MESSAGES_SQL.format(where=where), [*params, tool, tool]).fetchall()
    if not pairs:
        return []
    table = f"_lint_templates_{next(_COUNTER)}"
    con.execute(f"CREATE TEMP TABLE {table} (tool_name VARCHAR, message VARCHAR, template VARCHAR)")
    try:
        # one round trip: three parallel lists unnested into rows (executemany is row by row)
        tools = [t for t, _ in pairs]
        texts = [m for _, m in pairs]
        templates = [template_of(m) for m in texts]
        con.execute(f"INSERT INTO {table} SELECT unnest(?), unnest(?), unnest(?)", [tools, texts, templates])
        rows = con.execute(
            TEMPLATE_IMPACT_SQL.format(where=where, table=table), [*params, tool, tool, max(1, min_count)]
        ).fetchall()
    finally:
        con.execute(f"DROP TABLE IF EXISTS {table}")
    result = [_impact(row) for row in rows]
    result.sort(key=lambda r: (-r.unrecovered, -r.occurrences, -r.conversations, r.kind, r.tool_name, r.template))
    return result if limit is None else result[:limit]


def _impact(row: tuple[Any, ...]) -> TemplateImpact:
    (tool_name, template, is_error, occurrences, recovered, open_, aborted, gave_up, conversations, variants,
     example, error_type, outcome) = row
    lint = lint_message(example, is_error=bool(is_error), outcome=outcome)
    severities = sorted((f.severity for f in lint.findings), key=_severity_rank)
    generic_findings = [f for f in lint.findings if RULES_BY_ID[f.rule_id].generic]
    lead = (generic_findings or lint.findings or [None])[0]
    unrecovered = (open_ + aborted + gave_up) if is_error else 0
    return TemplateImpact(
        tool_name=tool_name,
        template=template,
        kind="error" if is_error else "silent",
        occurrences=occurrences,
        unrecovered=unrecovered,
        recovered=recovered,
        recovery_rate=(recovered / occurrences) if is_error and occurrences else None,
        classes={"open": open_, "aborted": aborted, "gave_up": gave_up} if is_error else {},
        conversations=conversations,
        variants=variants,
        generic=lint.generic,
        rules=lint.rule_ids,
        severity=severities[0] if severities else None,
        rewrite=lead.rewrite if lead else None,
        example=example,
        error_type=error_type,
        outcome=outcome,
        checklist=checklist(example),
        evidence=lead.evidence if lead else None,
        suggestion=lead.suggestion if lead else None,
        notes=list(lint.notes),
    )
