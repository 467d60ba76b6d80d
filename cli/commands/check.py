"""``loopscope check``: thresholds on the metrics, exit 3 when one is violated."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from loopscope.cli.app import EXIT_GATE_FAILED, command
from loopscope.cli.options import FormatOption, Scope, selection_options
from loopscope.cli.render.output import OutputFormat, write_csv, write_json


def _opt(flag: str, help_text: str, kind: type = float):  # noqa: ANN202 - Annotated alias factory
    return Annotated[Optional[kind], typer.Option(flag, help=help_text, show_default=False)]  # type: ignore[valid-type]


@command("check")
@selection_options()
def check_command(
    scope: Scope,
    min_recovery_rate: _opt("--min-recovery-rate", "Fail when recovered errors / errors is below this (0..1).") = None,
    min_conversation_recovery_rate: _opt(
        "--min-conversation-recovery-rate",
        "Fail when (recovered + resolved later in the conversation) / errors is below this (0..1).",
    ) = None,
    max_median_tool_calls: _opt("--max-median-tool-calls", "Fail when the median tool calls per prompt is above this.") = None,
    max_p99_tool_calls: _opt("--max-p99-tool-calls", "Fail when the p99 tool calls per prompt is above this.") = None,
    max_replay_rate: _opt("--max-replay-rate", "Fail when replays / tool calls is above this (0..1).") = None,
    max_open_prompts: _opt("--max-open-prompts", "Fail when more prompts than this have no loop_exit.", int) = None,
    max_generic_templates: _opt("--max-generic-templates", "Fail when more generic error-message templates than this are found (lint).", int) = None,
    max_retry_loops: _opt("--max-retry-loops", "Fail when there are more retry loops (spins) than this.", int) = None,
    max_no_progress_loops: _opt(
        "--max-no-progress-loops", "Fail when there are more no-progress loops (same call, same result, 3+ times) than this.", int
    ) = None,
    max_cycles: _opt("--max-cycles", "Fail when there are more A-B-A-B cycles than this.", int) = None,
    max_double_executions: _opt("--max-double-executions", "Fail when more replays than this really executed again.", int) = None,
    tool: Annotated[
        Optional[list[str]],
        typer.Option("--tool", help="The tool the tool thresholds below gate (repeat for several: one line per tool).",
                     show_default=False),
    ] = None,
    max_error_rate: _opt("--max-error-rate", "Fail when the --tool's errors / its tool calls is above this (0..1).") = None,
    max_p95_latency_ms: _opt("--max-p95-latency-ms", "Fail when the --tool's p95 latency_ms is above this.") = None,
    max_p99_latency_ms: _opt("--max-p99-latency-ms", "Fail when the --tool's p99 latency_ms is above this.") = None,
    by: Annotated[Optional[str], typer.Option(
        "--by", help="Check every threshold per [b]agent[/b] or per value of a tag ([b]tag:model[/b]): one line "
        "per threshold and group; any group over a limit fails the gate.", show_default=False)] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Gate CI or alerting on the metrics: exit 3 with one line per violated threshold, 0 otherwise.

    Each threshold you set prints one line: OK, VIOLATED, or SKIPPED when the
    figure has no value (no error to compute a recovery rate from: never a failure).
    Rates are fractions (0.8 = 80%). Tool thresholds (--max-error-rate,
    --max-p95-latency-ms, --max-p99-latency-ms) gate each --tool you name;
    a tool the store never saw is an error, not a pass.

    \b
    Exit codes:
      0  every threshold met (or skipped)
      1  a user error (no threshold, a rate above 1, an empty window, an unknown --tool, a mistyped option)
      2  an internal error (a bug in loopscope)
      3  a threshold violated

    \b
    Examples:
      loopscope check sample_logs/ --min-recovery-rate 0.5 --max-p99-tool-calls 25
      loopscope check --since 2026-11-16 --max-replay-rate 0.02 --max-double-executions 0 --format json
      loopscope check sample_logs/ --tool check_availability --max-error-rate 0.25 --max-p95-latency-ms 500
      loopscope check tau2/ --by tag:model --min-recovery-rate 0.5
    """
    from loopscope.analyses.check import Thresholds, check
    from loopscope.analyses.selection import parse_group_by

    grouping = parse_group_by(by, ("agent",)) if by is not None else None

    thresholds = Thresholds(
        min_recovery_rate=min_recovery_rate,
        min_conversation_recovery_rate=min_conversation_recovery_rate,
        max_median_tool_calls=max_median_tool_calls,
        max_p99_tool_calls=max_p99_tool_calls,
        max_replay_rate=max_replay_rate,
        max_open_prompts=max_open_prompts,
        max_generic_templates=max_generic_templates,
        max_retry_loops=max_retry_loops,
        max_no_progress_loops=max_no_progress_loops,
        max_cycles=max_cycles,
        max_double_executions=max_double_executions,
        max_error_rate=max_error_rate,
        max_p95_latency_ms=max_p95_latency_ms,
        max_p99_latency_ms=max_p99_latency_ms,
        tools=tuple(tool or ()),
    )
    from loopscope.cli.common import print_notices, selection_notices

    with scope.open() as (con, selection, summary):
        result = check(con, selection, thresholds, grouping)
        found = selection_notices(con, selection, summary is not None)
    print_notices(found, scope.db)
    if output is OutputFormat.json:
        write_json(result.to_dict())
    elif output is OutputFormat.csv:
        write_csv([o.to_dict() for o in result.outcomes], ("threshold", "figure", "value", "limit", "status", "reason",
                                                              "tool_name", "group"))
    else:
        from loopscope.cli.render.check import render

        render(result)
    if not result.passed:
        raise typer.Exit(EXIT_GATE_FAILED)
