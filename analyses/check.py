"""A gate for CI and alerting: thresholds on the dashboard metrics and the incident counts.

``check(con, selection, thresholds)`` computes the figures of the selection
and compares each threshold that is set; every violated threshold gives one
``Violation`` with a one-line reason. A threshold on a metric that has no
value (the recovery rate with no errors, say) is *skipped*, never violated,
and reported as such, so an empty window does not page anyone.

Thresholds (each ``None`` = not checked):

==========================  ==============================================
``min_recovery_rate``       recovered errors / errors, 0..1
``min_conversation_recovery_rate``  (recovered + resolved later) / errors, 0..1
``max_median_tool_calls``   median tool calls per prompt
``max_p99_tool_calls``      p99 tool calls per prompt
``max_replay_rate``         replays / tool calls, 0..1
``max_open_prompts``        prompts with no loop_exit
``max_generic_templates``   error-message templates lint calls generic
``max_retry_loops``         retry loops (spins)
``max_no_progress_loops``   no-progress loops (same call, same result; ``analyses.loops``)
``max_cycles``              A-B-A-B cycles (``analyses.loops``)
``max_double_executions``   replays that really executed again
==========================  ==============================================

Tool thresholds apply to each tool named in ``tools`` (``--tool NAME``,
repeatable), one outcome per tool, on that tool's health (``tools.tool_health``):

==========================  ==============================================
``max_error_rate``          the tool's errors / its tool calls, 0..1
``max_p95_latency_ms``      the tool's p95 latency_ms
``max_p99_latency_ms``      the tool's p99 latency_ms
==========================  ==============================================

A tool the store has never seen is a user error (a typo must not pass); a
known tool without calls in the selection is skipped, like any figure
without a value.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Callable

import duckdb

from loopscope.analyses.cohorts import Figures, figures, figures_by
from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.selection import GroupBy, Selection


@dataclass(frozen=True)
class Thresholds:
    """The limits to check; ``None`` leaves a figure unchecked."""

    min_recovery_rate: float | None = None
    min_conversation_recovery_rate: float | None = None
    max_median_tool_calls: float | None = None
    max_p99_tool_calls: float | None = None
    max_replay_rate: float | None = None
    max_open_prompts: int | None = None
    max_generic_templates: int | None = None
    max_retry_loops: int | None = None
    max_no_progress_loops: int | None = None
    max_cycles: int | None = None
    max_double_executions: int | None = None
    max_error_rate: float | None = None
    max_p95_latency_ms: float | None = None
    max_p99_latency_ms: float | None = None
    tools: tuple[str, ...] = ()

    def validate(self) -> None:
        """Raise ``LoopscopeError`` for a rate outside 0..1 or a negative limit."""
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or f.name == "tools":
                continue
            option = "--" + f.name.replace("_", "-")
            if not math.isfinite(value):  # nan compares false with everything: it would always pass
                raise LoopscopeError(f"{option} {value} is not a finite number", hint="give a finite value, e.g. 0.8 or 25")
            if value < 0:
                raise LoopscopeError(f"{option} {value} is negative", hint="thresholds are counts or rates >= 0")
            if f.name.endswith("_rate") and value > 1:
                raise LoopscopeError(f"{option} {value} is above 1", hint="rates are fractions: 0.8 means 80%")
        tool_limits = [n for n in TOOL_CHECKS if getattr(self, n) is not None]
        if tool_limits and not self.tools:
            option = "--" + tool_limits[0].replace("_", "-")
            raise LoopscopeError(f"{option} needs --tool NAME", hint=f"name the tool it gates, e.g. --tool search {option} 0.1")
        if self.tools and not tool_limits:
            raise LoopscopeError(
                "--tool needs a tool threshold",
                hint="add --max-error-rate, --max-p95-latency-ms or --max-p99-latency-ms",
            )

    def is_empty(self) -> bool:
        """True when no threshold is set."""
        return all(getattr(self, f.name) is None for f in fields(self) if f.name != "tools")


@dataclass(frozen=True)
class Outcome:
    """One threshold checked: its figure, the limit and the verdict."""

    threshold: str
    figure: str
    value: float | None
    limit: float
    status: str  # "ok", "violated" or "skipped"
    reason: str
    tool_name: str | None = None  # the tool a tool threshold was checked on
    group: str | None = None  # with --by: the group (agent, tag value) it was checked on

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class CheckResult:
    """Every checked threshold and the figures they were checked against."""

    outcomes: list[Outcome]
    figures: dict[str, Any]

    @property
    def violations(self) -> list[Outcome]:
        """The violated thresholds."""
        return [o for o in self.outcomes if o.status == "violated"]

    @property
    def passed(self) -> bool:
        """No threshold is violated."""
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {
            "passed": self.passed,
            "violations": len(self.violations),
            "outcomes": [o.to_dict() for o in self.outcomes],
            "figures": self.figures,
        }


def _fmt(figure: str, value: float) -> str:
    if figure.endswith("_rate"):
        return f"{value * 100:.1f}%"
    if figure.endswith("_ms"):
        return f"{value:g} ms"
    return f"{value:g}"


def _generic_templates(con: duckdb.DuckDBPyConnection, selection: Selection) -> int:
    # Generic-message templates come from lint (H3); imported lazily so check
    # works on stores without lint's tables.
    from loopscope.analyses.lint.ranking import rank_templates

    return sum(1 for t in rank_templates(con, selection) if t.generic)


def _retry_loops(con: duckdb.DuckDBPyConnection, selection: Selection) -> int:
    from loopscope.analyses.incidents import retry_loops

    return len(retry_loops(con, selection))


def _no_progress_loops(con: duckdb.DuckDBPyConnection, selection: Selection) -> int:
    from loopscope.analyses.loops import no_progress_loops

    return len(no_progress_loops(con, selection))


def _cycles(con: duckdb.DuckDBPyConnection, selection: Selection) -> int:
    from loopscope.analyses.loops import cycles

    return len(cycles(con, selection))


def _double_executions(con: duckdb.DuckDBPyConnection, selection: Selection) -> int:
    from loopscope.analyses.incidents import replays

    return sum(1 for r in replays(con, selection) if r.double_execution)


# threshold -> (figure name, "min"/"max", how to get the figure)
_CHECKS: dict[str, tuple[str, str, Callable[[duckdb.DuckDBPyConnection, Selection, Figures], float | None]]] = {
    "min_recovery_rate": ("recovery_rate", "min", lambda c, s, f: f.recovery_rate),
    "min_conversation_recovery_rate": (
        "conversation_recovery_rate", "min", lambda c, s, f: f.conversation_recovery_rate
    ),
    "max_median_tool_calls": (
        "median_tool_calls_per_prompt", "max", lambda c, s, f: f.median_tool_calls_per_prompt
    ),
    "max_p99_tool_calls": ("p99_tool_calls_per_prompt", "max", lambda c, s, f: f.p99_tool_calls_per_prompt),
    "max_replay_rate": ("replay_rate", "max", lambda c, s, f: f.replay_rate),
    "max_open_prompts": ("open_prompts", "max", lambda c, s, f: f.open_prompts),
    "max_generic_templates": ("generic_templates", "max", lambda c, s, f: _generic_templates(c, s)),
    "max_retry_loops": ("retry_loops", "max", lambda c, s, f: _retry_loops(c, s)),
    "max_no_progress_loops": ("no_progress_loops", "max", lambda c, s, f: _no_progress_loops(c, s)),
    "max_cycles": ("cycles", "max", lambda c, s, f: _cycles(c, s)),
    "max_double_executions": ("double_executions", "max", lambda c, s, f: _double_executions(c, s)),
}


# Tool threshold -> the figure of tools.ToolHealth it limits (always a maximum).
TOOL_CHECKS = {
    "max_error_rate": "error_rate",
    "max_p95_latency_ms": "p95_latency_ms",
    "max_p99_latency_ms": "p99_latency_ms",
}


def _verdict(name: str, figure: str, kind: str, value: float | None, limit: float, tool: str | None = None,
             why: str = "nothing to measure") -> Outcome:
    """One threshold against its figure's value; ``why`` says why a figure has no value (then: skipped)."""
    option = "--" + name.replace("_", "-")
    subject = f"{figure} of {tool}" if tool is not None else figure
    if value is None:
        return Outcome(name, figure, None, limit, "skipped", f"{subject} has no value ({why})", tool)
    bad = value < limit if kind == "min" else value > limit
    bound = "minimum" if kind == "min" else "maximum"
    relation = ("is below the" if kind == "min" else "is above the") if bad else "meets the"
    reason = f"{subject} {_fmt(figure, value)} {relation} {bound} {_fmt(figure, limit)} ({option})"
    return Outcome(name, figure, value, limit, "violated" if bad else "ok", reason, tool)


def _tool_outcomes(con: duckdb.DuckDBPyConnection, selection: Selection, thresholds: Thresholds,
                   figs: dict[str, Any]) -> list[Outcome]:
    from loopscope.analyses.tools import tool_health, unknown_tools

    names = list(dict.fromkeys(thresholds.tools))
    unknown, some = unknown_tools(con, names)
    if unknown:
        raise LoopscopeError(
            f"--tool {unknown[0]!r}: no record of the store calls it",
            hint=("tools in the store: " + ", ".join(some)) if some else "load logs first (pass PATHs)",
        )
    health = {t.tool_name: t for t in tool_health(con, selection, tools=tuple(names)).tools}
    figs["tools"] = {name: health[name].as_dict() if name in health else None for name in names}
    outcomes = []
    for name, figure in TOOL_CHECKS.items():
        limit = getattr(thresholds, name)
        if limit is None:
            continue
        for tool in names:
            if tool in health:
                value, why = getattr(health[tool], figure), "no call of it has a latency_ms"
            else:
                value, why = None, f"{tool} has no call in the selection"
            outcomes.append(_verdict(name, figure, "max", value, limit, tool, why))
    return outcomes


def check(con: duckdb.DuckDBPyConnection, selection: Selection, thresholds: Thresholds,
          by: GroupBy | None = None) -> CheckResult:
    """Check every set threshold against the selection's figures, or each group's with ``by``.

    With ``by`` (``agent`` or ``tag:KEY``) every threshold is checked on every group of the
    selection (one outcome per threshold and group, ``group`` set, the reason starting with
    the group); ``figures`` then also holds ``groups``: each group's figures.

    Raises:
        LoopscopeError: no threshold is set, a threshold is out of range, or
            the selection has no prompt (a gate over nothing would pass silently).
    """
    thresholds.validate()
    if thresholds.is_empty():
        raise LoopscopeError(
            "no threshold given",
            hint="for example: loopscope check --min-recovery-rate 0.8 --max-p99-tool-calls 20",
        )
    fig = figures(con, selection)
    if fig.prompts == 0:
        raise LoopscopeError(
            "the selection has no prompt to check",
            hint="load logs first (pass PATHs), or widen --since/--until/--agent/--tag",
        )
    if by is not None:
        return _check_groups(con, selection, thresholds, by, fig)
    return _check_one(con, selection, thresholds, fig)


def _check_groups(con: duckdb.DuckDBPyConnection, selection: Selection, thresholds: Thresholds, by: GroupBy,
                  overall: Figures) -> CheckResult:
    outcomes: list[Outcome] = []
    groups: dict[str, Any] = {}
    for value, fig in figures_by(con, selection, by):
        one = _check_one(con, by.narrow(selection, value), thresholds, fig)
        name = f"{by.tag}={value}" if by.kind == "tag" else f"{by.kind} {value}"
        outcomes.extend(replace(o, group=value, reason=f"{name}: {o.reason}") for o in one.outcomes)
        groups[value] = one.figures
    return CheckResult(outcomes, {**overall.to_dict(), "by": by.label, "groups": groups})


def _check_one(con: duckdb.DuckDBPyConnection, selection: Selection, thresholds: Thresholds, fig: Figures) -> CheckResult:
    outcomes: list[Outcome] = []
    figs: dict[str, Any] = fig.to_dict()
    for name, (figure, kind, get) in _CHECKS.items():
        limit = getattr(thresholds, name)
        if limit is None:
            continue
        value = get(con, selection, fig)
        figs[figure] = value
        outcomes.append(_verdict(name, figure, kind, value, limit))
    if thresholds.tools:
        outcomes.extend(_tool_outcomes(con, selection, thresholds, figs))
    return CheckResult(outcomes, figs)
