"""``loopscope compare``: two cohorts side by side, with significance."""

from __future__ import annotations

from typing import Annotated

import typer

from loopscope.cli.app import command
from loopscope.cli.options import FormatOption, Scope, selection_options
from loopscope.cli.render.output import (
    OutputFormat,
    stderr_console,
    write_csv,
    write_json,
)

CohortA = Annotated[
    list[str],
    typer.Option("--a", help="Cohort A as KEY:VALUE terms, comma-separated or repeated: "
                 "tag:K=V, agent:NAME, week:2026-W47, since:DATE, until:DATE, conversation:ID, file:PATH.",
                 show_default=False),
]
CohortB = Annotated[list[str], typer.Option("--b", help="Cohort B, same syntax as --a.", show_default=False)]

CSV_COLUMNS = ("metric", "a", "b", "difference", "test", "p_value", "significant")


@command("compare")
@selection_options()
def compare_command(
    scope: Scope,
    a: CohortA = ...,  # type: ignore[assignment]
    b: CohortB = ...,  # type: ignore[assignment]
    output: FormatOption = OutputFormat.table,
) -> None:
    """Compare two cohorts: every metric, B minus A, and whether the difference is significant.

    A cohort is KEY:VALUE terms that must all hold, within the window
    (--since/--until/--week/--agent/--tag narrow both cohorts). Rates are compared with a
    two-proportion z-test, tool calls per prompt with Mann-Whitney U, at alpha 0.05.

    \b
    Examples:
      loopscope compare sample_logs/ --a tag:mode=blind --b tag:mode=corrective
      loopscope compare --a week:2026-W46 --b week:2026-W47 --format json
      loopscope compare --a agent:concierge,since:2026-11-01 --b agent:back_office,since:2026-11-01
      loopscope compare --a file:logs/before.jsonl --b file:logs/after.jsonl
    """
    from loopscope.analyses.compare import compare, parse_cohort

    parse_cohort(a, option="--a", resolve_files=False)  # syntax first: a typo fails before any loading
    parse_cohort(b, option="--b", resolve_files=False)
    with scope.open() as (con, base, _summary):
        sel_a = parse_cohort(a, con, option="--a", within=base)
        sel_b = parse_cohort(b, con, option="--b", within=base)
        result = compare(con, sel_a, sel_b, label_a=sel_a.extra["spec"], label_b=sel_b.extra["spec"])
    if result.overlap:
        stderr_console().print(
            f"[yellow]warning:[/yellow] {result.overlap} prompt(s) are in both cohorts; "
            "the significance tests assume two separate samples"
        )
    if output is OutputFormat.json:
        write_json(result.to_dict())
        return
    rows = [
        {
            "metric": m.metric, "a": m.a, "b": m.b, "difference": m.difference,
            "test": m.test.test if m.test else None,
            "p_value": m.test.p_value if m.test else None,
            "significant": m.test.significant if m.test else None,
        }
        for m in result.metrics
    ]
    if output is OutputFormat.csv:
        write_csv(rows, CSV_COLUMNS)
        return
    from loopscope.cli.render.compare import render

    render(result, rows)
