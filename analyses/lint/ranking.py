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

The SQL only aggregates: the calls are first grouped (per tool, text, type,
outcome, class and conversation, into a temporary table), the templates are
computed in Python once per distinct (tool, message) and joined back through
a second temporary table, and the counts per template are sums over the
groups, so the Python work is proportional to the number of distinct
messages, not of calls.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from loopscope.analyses.lint.engine import checklist_of, lint_view
from loopscope.analyses.lint.rules import RULES_BY_ID
from loopscope.analyses.lint.templates import template_of
from loopscope.analyses.lint.text import read_message
from loopscope.analyses.selection import Selection
from loopscope.analyses.store.relations import relations

# The selected errors (errors_v: non-replay is_error calls, with their class)
# and silent errors (non-replay calls with is_error false that failed or carry
# an error message), grouped by everything the ranking tells apart, down to
# the conversation: one row per distinct (tool, text, type, outcome, class,
# conversation) with its count, far fewer rows than calls. {errors} / {prompts}:
# the relations store.relations picks; {sel_e} / {sel_t} join the selected
# prompts to the errors e and the calls t, or are empty when every prompt is
# selected (every record's prompt is in {prompts}: the join would keep them all);
# {sel} is then the CTE of the selected prompts, else empty. Parameters: the
# Selection's, then tool four times.
CALL_GROUPS_SQL = """
CREATE TEMP TABLE {groups} AS
WITH {sel}calls AS (
    SELECT e.tool_name, e.conversation_id, e.error_message, e.error_type, e.outcome, true AS is_error, e.error_class
    FROM {errors} e
    {sel_e}
    WHERE (CAST(? AS VARCHAR) IS NULL OR e.tool_name = ?)
    UNION ALL
    SELECT t.tool_name, t.conversation_id, t.error_message, t.error_type, t.outcome, false AS is_error,
           CAST(NULL AS VARCHAR) AS error_class
    FROM {tool_calls_v} t
    {sel_t}
    WHERE NOT t.is_replay AND NOT t.is_error
      AND (t.error_message IS NOT NULL OR t.outcome IN ('transient_fail', 'permanent_fail'))
      AND (CAST(? AS VARCHAR) IS NULL OR t.tool_name = ?)
)
SELECT tool_name, is_error, coalesce(error_message, error_type, '') AS message, error_type, outcome, error_class,
       conversation_id, count(*) AS n
FROM calls
GROUP BY tool_name, is_error, coalesce(error_message, error_type, ''), error_type, outcome, error_class,
         conversation_id
"""
_SEL = "sel AS (SELECT p.conversation_id, p.prompt_id FROM {prompts} p WHERE {where}),\n"
_SEL_JOIN = "SEMI JOIN sel ON sel.conversation_id = {a}.conversation_id AND sel.prompt_id = {a}.prompt_id"

# Distinct (tool, message) pairs: the texts to turn into templates (in Python, once each).
DISTINCT_MESSAGES_SQL = "SELECT DISTINCT tool_name, message FROM {groups}"

# One row per (tool, template, kind): counts, classes and the most common
# message, error type and outcome (ties go to the smallest text, so the example
# is the same on every run). The groups are first summed over their
# conversations (``g``: a few rows per distinct text), and every figure but
# the conversations is summed from those; the conversations are counted once,
# over the groups themselves (a group per text and conversation).
# Parameter: min_count.
TEMPLATE_IMPACT_SQL = """
WITH g AS (
    SELECT c.tool_name, c.is_error, c.message, c.error_type, c.outcome, c.error_class, m.template, c.n
    FROM (
        SELECT tool_name, is_error, message, error_type, outcome, error_class, sum(n) AS n
        FROM {groups}
        GROUP BY tool_name, is_error, message, error_type, outcome, error_class
    ) c
    JOIN {table} m ON m.tool_name = c.tool_name AND m.message = c.message
),
conversations AS (
    SELECT c.tool_name, m.template, c.is_error, count(DISTINCT c.conversation_id) AS conversations
    FROM {groups} c
    JOIN {table} m ON m.tool_name = c.tool_name AND m.message = c.message
    GROUP BY c.tool_name, m.template, c.is_error
),
totals AS (
    SELECT
        tool_name, template, is_error,
        sum(n) AS occurrences,
        coalesce(sum(n) FILTER (WHERE error_class = 'recovered'), 0) AS recovered,
        coalesce(sum(n) FILTER (WHERE error_class = 'open'), 0) AS open,
        coalesce(sum(n) FILTER (WHERE error_class = 'aborted'), 0) AS aborted,
        coalesce(sum(n) FILTER (WHERE error_class = 'gave_up'), 0) AS gave_up,
        count(DISTINCT message) AS variants
    FROM g
    GROUP BY tool_name, template, is_error
    HAVING sum(n) >= ?
),
messages AS (
    SELECT tool_name, template, is_error, message, sum(n) AS n FROM g GROUP BY tool_name, template, is_error, message
),
types AS (
    SELECT tool_name, template, is_error, error_type, sum(n) AS n FROM g WHERE error_type IS NOT NULL
    GROUP BY tool_name, template, is_error, error_type
),
outcomes AS (
    SELECT tool_name, template, is_error, outcome, sum(n) AS n FROM g GROUP BY tool_name, template, is_error, outcome
),
example AS (
    SELECT tool_name, template, is_error, arg_min(message, (-n, message)) AS example
    FROM messages GROUP BY tool_name, template, is_error
),
example_type AS (
    SELECT tool_name, template, is_error, arg_min(error_type, (-n, error_type)) AS error_type
    FROM types GROUP BY tool_name, template, is_error
),
example_outcome AS (
    SELECT tool_name, template, is_error, arg_min(outcome, (-n, outcome)) AS outcome
    FROM outcomes GROUP BY tool_name, template, is_error
)
SELECT
    t.tool_name, t.template, t.is_error, t.occurrences, t.recovered, t.open, t.aborted, t.gave_up,
    v.conversations, t.variants, x.example, y.error_type, o.outcome
FROM totals t
JOIN conversations v USING (tool_name, template, is_error)
JOIN example x USING (tool_name, template, is_error)
LEFT JOIN example_type y USING (tool_name, template, is_error)
JOIN example_outcome o USING (tool_name, template, is_error)
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
    rel = relations(con)
    n = next(_COUNTER)
    groups, table = f"_lint_calls_{n}", f"_lint_templates_{n}"
    try:
        sel, sel_e, sel_t = ("", "", "") if where == "TRUE" else (
            _SEL.format(prompts=rel.prompts, where=where), _SEL_JOIN.format(a="e"), _SEL_JOIN.format(a="t"))
        con.execute(
            CALL_GROUPS_SQL.format(groups=groups, errors=rel.errors, tool_calls_v=rel.tool_calls, sel=sel, sel_e=sel_e,
                                   sel_t=sel_t),
            [*params, tool, tool, tool, tool],
        )
        pairs = con.execute(DISTINCT_MESSAGES_SQL.format(groups=groups)).fetchall()
        if not pairs:
            return []
        con.execute(f"CREATE TEMP TABLE {table} (tool_name VARCHAR, message VARCHAR, template VARCHAR)")
        # one round trip: three parallel lists unnested into rows (executemany is row by row)
        tools = [t for t, _ in pairs]
        texts = [m for _, m in pairs]
        templates = [template_of(m) for m in texts]
        con.execute(f"INSERT INTO {table} SELECT unnest(?), unnest(?), unnest(?)", [tools, texts, templates])
        rows = con.execute(TEMPLATE_IMPACT_SQL.format(groups=groups, table=table), [max(1, min_count)]).fetchall()
    finally:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        con.execute(f"DROP TABLE IF EXISTS {groups}")
    result = [_impact(row) for row in rows]
    result.sort(key=lambda r: (-r.unrecovered, -r.occurrences, -r.conversations, r.kind, r.tool_name, r.template))
    return result if limit is None else result[:limit]


def _impact(row: tuple[Any, ...]) -> TemplateImpact:
    (tool_name, template, is_error, occurrences, recovered, open_, aborted, gave_up, conversations, variants,
     example, error_type, outcome) = row
    view = read_message(example or "")  # read once for the verdict and the checklist
    lint = lint_view(view, example, is_error=bool(is_error), outcome=outcome)
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
        checklist=checklist_of(view),
        evidence=lead.evidence if lead else None,
        suggestion=lead.suggestion if lead else None,
        notes=list(lint.notes),
    )
