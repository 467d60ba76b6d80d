"""The one table of labels, styles and figure formats every renderer (terminal and HTML) uses.

A figure is shown with the same label and the same number format in every output; a recovery
class has the same colour wherever it appears. Renderers wrap these plain strings in their own
markup (rich markup in the terminal, HTML in the audit page).
"""

from __future__ import annotations

import math
from typing import Any

# The label of each figure, keyed by its machine-readable name (spec: "Names in machine-readable output").
FIGURE_LABELS = {
    "prompts": "prompts",
    "open_prompts": "open prompts (no loop_exit)",
    "tool_calls": "tool calls",
    "median_tool_calls_per_prompt": "median tool calls / prompt",
    "p99_tool_calls_per_prompt": "p99 tool calls / prompt",
    "errors": "tool errors",
    "recovered_errors": "recovered errors",
    "recovery_rate": "recovery rate",
    "resolved_later_errors": "errors resolved later",
    "conversation_recovery_rate": "conversation recovery rate",
    "replays": "replayed tool calls",
    "replay_rate": "replay rate",
    # per tool (metrics --by tool, the audit's Tools section)
    "tool_name": "tool",
    "scratchpad": "scratchpad tool",
    "error_rate": "error rate",
    "p50_latency_ms": "p50 latency (ms)",
    "p95_latency_ms": "p95 latency (ms)",
    "p99_latency_ms": "p99 latency (ms)",
    "tool_calls_without_latency": "calls without latency",
    "top_error_template": "most frequent error template",
    "top_error_template_errors": "its errors",
}
# Per-tool health in a table, in order: (figure, short header) for the terminal's 100 columns;
# the HTML report heads its columns with the same short texts and the labels above as tooltips.
TOOL_COLUMNS = (
    ("tool_name", "tool"),
    ("tool_calls", "calls"),
    ("errors", "errors"),
    ("error_rate", "err %"),
    ("recovery_rate", "recov %"),
    ("conversation_recovery_rate", "conv %"),
    ("replays", "replays"),
    ("p50_latency_ms", "p50 ms"),
    ("p95_latency_ms", "p95 ms"),
    ("p99_latency_ms", "p99 ms"),
)
# The second table: each tool's most frequent error template.
TOOL_TEMPLATE_COLUMNS = (
    ("tool_name", "tool"),
    ("top_error_template_errors", "errors"),
    ("top_error_template", "most frequent error template"),
)
# The four dashboard metrics and, beside metric 3, the conversation recovery rate, in the order shown.
AUDIT_METRICS = (
    "median_tool_calls_per_prompt",
    "p99_tool_calls_per_prompt",
    "recovery_rate",
    "conversation_recovery_rate",
    "replay_rate",
)

# The audit metrics in a narrow column (the weekly table's headers).
SHORT_LABELS = {
    "median_tool_calls_per_prompt": "median",
    "p99_tool_calls_per_prompt": "p99",
    "recovery_rate": "recov",
    "conversation_recovery_rate": "conv",
    "replay_rate": "replay",
}

# The y-axis caption of each audit chart.
AXIS_LABELS = {
    "median_tool_calls_per_prompt": "tool calls",
    "p99_tool_calls_per_prompt": "tool calls",
    "recovery_rate": "% of errors",
    "conversation_recovery_rate": "% of errors",
    "replay_rate": "% of tool calls",
}

# The audit charts' series: "all prompts" is the near-black thick line; the groups (agents, tag
# values) take the Okabe-Ito colours, chosen to stay apart for colour-blind readers (its yellow is
# too pale on white and its black is the all-prompts line), each with its own marker; past seven
# groups the colours repeat with another dash pattern, so 8+ series stay distinct.
SERIES_ALL_COLOR = "#1b1f24"
SERIES_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#8C6D1F")
SERIES_DASHES = ("6 3", "2 3", "10 3 2 3")
SERIES_MARKERS = ("circle", "square", "triangle", "diamond")
# A weekly value resting on fewer trials than this (errors for the recovery rates, tool calls for
# the replay rate, prompts for tool calls per prompt) is drawn hollow and faded: low confidence.
LOW_CONFIDENCE_N = 10

# Recovery classes of a tool error (spec: error_classes); rich style names, mapped to CSS classes in HTML.
CLASS_STYLE = {"recovered": "green", "gave_up": "yellow", "aborted": "red", "open": "magenta"}
# check: one line per threshold.
STATUS_STYLE = {"violated": "red", "ok": "green", "skipped": "yellow"}
SIGNIFICANT_MARK = "◆"


def label(figure: str) -> str:
    """The label of a figure (its name when it has none)."""
    return FIGURE_LABELS.get(figure, figure)


def is_rate(figure: str) -> bool:
    """Whether a figure is a fraction shown as a percentage."""
    return figure.endswith(("_rate", "_share")) or figure == "agreement"


def figure_text(figure: str, value: float | int | None, digits: int = 2, null: str = "-") -> str:
    """A figure for a cell: rates as percentages with one decimal, counts as integers, others rounded."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return null
    if is_rate(figure):
        return f"{value * 100:.1f}%"
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".")


def difference_text(figure: str, difference: float) -> str:
    """A signed difference: percentage points for rates, the figure's unit otherwise."""
    if is_rate(figure):
        return f"{difference * 100:+.1f}pt"
    return f"{difference:+.2f}".rstrip("0").rstrip(".")


def p_text(p_value: float | None) -> str:
    """A p-value, short: ``p<.001`` or ``p=.04``; empty when there is none."""
    if p_value is None:
        return ""
    if p_value < 0.001:
        return "p<.001"
    # two decimals hide p = 0.004 as "p=.00": three below 0.01
    return f"p={p_value:.3f}".replace("0.", ".", 1) if p_value < 0.01 else f"p={p_value:.2f}".replace("0.", ".", 1)


def change_parts(figure: str, change: dict[str, Any] | None, *, always_mean: bool = False) -> tuple[str, str, bool] | None:
    """A week-over-week change as (difference, p-value, significant) texts; None when there is no change.

    For the distribution test (tool calls per prompt) the difference is followed by the change of
    the mean when the shift is flagged (or ``always_mean``): "+0, mean +1.2".
    """
    if not change or change.get("difference") is None:
        return None
    text = difference_text(figure, change["difference"])
    significant = bool(change.get("significant"))
    # a flagged distribution shift always says how the mean moved (the median may not have)
    moved = mean_shift_text(change) if significant or always_mean else ""
    return (f"{text}, {moved}" if moved else text), p_text(change.get("p_value")), significant


def mean_shift_text(change: dict[str, Any]) -> str:
    """For a distribution test (tool calls per prompt): how the mean moved, "mean +1.2"; else ""."""
    means = change.get("means")
    if not means or means.get("previous") is None or means.get("current") is None:
        return ""
    return "mean " + difference_text("mean", means["current"] - means["previous"])


def unflagged_note(change: dict[str, Any] | None, alpha: float) -> str:
    """Why a change with p < alpha carries no flag (too few observations in a cohort); "" otherwise."""
    if not change or change.get("significant") or change.get("p_value") is None or change["p_value"] >= alpha:
        return ""
    return str(change.get("note") or "")


def significant_weeks(weeks: list[dict[str, Any]], last: int = 2) -> str:
    """Where a series changed significantly, short: "3 weeks; last: 2026-W30 median; 2026-W31 recov, replay"."""
    flagged = [(w["week"], [SHORT_LABELS.get(m, m) for m, ch in w["changes"].items() if ch.get("significant")])
               for w in weeks]
    flagged = [(week, names) for week, names in flagged if names]
    if not flagged:
        return ""
    shown = "; ".join(f"{week} {', '.join(names)}" for week, names in flagged[-last:])
    if len(flagged) <= last:
        return shown
    return f"{len(flagged)} weeks; last: {shown}"


def shown_of(section: dict) -> str:
    """A list section's count for its heading: "7", or "10 of 20" when the list shown was cut."""
    total, shown = section["total"], len(section["items"])
    return f"{shown} of {total}" if shown < total else f"{total}"
