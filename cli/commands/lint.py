"""``loopscope lint``: rank error-message templates by cost, or lint messages before they ship."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from loopscope.cli.app import EXIT_GATE_FAILED, command
from loopscope.cli.options import (
    AgentOption,
    DbOption,
    FormatOption,
    InputFormatOption,
    PathsArgument,
    SinceOption,
    TagOption,
    UntilOption,
)
from loopscope.cli.render.output import OutputFormat, write_csv, write_json

_RANK_COLUMNS = (
    "tool_name", "template", "kind", "occurrences", "unrecovered", "recovered_errors", "recovery_rate", "conversations",
    "variants", "generic", "rules", "severity", "rewrite", "example", "error_type", "outcome", "evidence", "suggestion",
)


@command("lint")
def lint(
    paths: PathsArgument = None,
    db: DbOption = None,
    fmt: FormatOption = OutputFormat.table,
    since: SinceOption = None,
    until: UntilOption = None,
    agent: AgentOption = None,
    tag: TagOption = None,
    input_format: InputFormatOption = "auto",
    tool: Annotated[Optional[str], typer.Option("--tool", help="Only this tool's messages.", show_default=False)] = None,
    min_count: Annotated[int, typer.Option("--min-count", min=1, help="Hide templates seen fewer times.")] = 1,
    limit: Annotated[
        Optional[int], typer.Option("--limit", min=1, help="Show only the first N templates.", show_default=False)
    ] = None,
    message: Annotated[
        Optional[list[str]],
        typer.Option("--message", "-m", help="Lint this error text instead of logs (repeat for several).", show_default=False),
    ] = None,
    messages: Annotated[
        Optional[Path],
        typer.Option(
            "--messages",
            help="Lint the error texts in FILE: one per line, a JSON list of strings, or a tool catalog "
            '([b]{"tools": [{"name": ..., "errors": [...]}]}[/b]). See docs/lint.md.',
            show_default=False,
        ),
    ] = None,
    rules: Annotated[bool, typer.Option("--rules", help="List the rule catalog and exit.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="With --message/--messages: also exit 1 when a message is generic.")
    ] = False,
) -> None:
    """Rank error-message templates by cost, or lint error texts before they ship.

    [b]Ranking[/b] (default): reads the tool errors in the store (--db), after
    loading any PATHs given; groups them into templates per tool and ranks
    them by unrecovered occurrences, with the lint rules each one trips.

    [b]Linting texts[/b]: --message TEXT (repeatable) and --messages FILE (one
    message per line, a JSON list, or a tool catalog) lint error texts without
    any logs, so a team can gate its error strings in CI.

    \b
    Exit codes with --message/--messages:
      0  no rule of severity error fired
      1  the input is unreadable, or a mistyped option
      3  a rule of severity error fired (with --strict: or a message is generic)

    \b
    Examples:
      loopscope lint sample_logs/
      loopscope lint --db prod.duckdb --since 2026-11-01 --min-count 5
      loopscope lint -m 'Failed' -m 'Invalid date. Use YYYY-MM-DD.'
      loopscope lint --messages errors.json --format json
      loopscope lint --rules
    """
    if rules:
        _print_rules(fmt)
        return
    if message or messages is not None:
        if paths:
            from loopscope.analyses.errors import LoopscopeError

            raise LoopscopeError(
                "give either log PATHs (to rank their error messages) or --message/--messages (to lint texts), not both",
                hint="loopscope lint sample_logs/  or  loopscope lint --message 'Failed'",
            )
        _lint_texts(message or [], messages, fmt, strict=strict)
        return
    from loopscope.analyses.lint.ranking import rank_templates
    from loopscope.cli.common import analysis_store, selection_from_options

    window = selection_from_options(since, until, agent, tag)
    with analysis_store(db, paths, input_format, window) as (con, selection, _summary):
        ranked = rank_templates(con, selection, tool=tool, min_count=min_count, limit=limit)
    if fmt is OutputFormat.json:
        write_json([r.as_dict() for r in ranked])
    elif fmt is OutputFormat.csv:
        write_csv([{**r.as_dict(), "rules": " ".join(r.rules)} for r in ranked], _RANK_COLUMNS)
    else:
        from loopscope.cli.render.lint import render_ranking

        render_ranking(ranked)


def _lint_texts(texts: list[str], file: Path | None, fmt: OutputFormat, *, strict: bool = False) -> None:
    from loopscope.analyses.lint import lint_message
    from loopscope.analyses.lint.inputs import read_messages_file

    items: list[tuple[str | None, str]] = [(None, text) for text in texts]
    if file is not None:
        items += read_messages_file(file)
    results = [(tool_name, lint_message(text)) for tool_name, text in items]
    if fmt is OutputFormat.json:
        write_json([{**({"tool": t} if t else {}), **r.to_dict()} for t, r in results])
    elif fmt is OutputFormat.csv:
        write_csv(
            [
                {
                    "tool": t,
                    "message": r.message,
                    "generic": r.generic,
                    "rules": " ".join(r.rule_ids),
                    "severities": " ".join(f.severity for f in r.findings),
                    "evidence": " | ".join(f"{f.rule_id}: {f.evidence}" for f in r.findings),
                    "notes": " | ".join(r.notes),
                }
                for t, r in results
            ],
            ("tool", "message", "generic", "rules", "severities", "evidence", "notes"),
        )
    else:
        from loopscope.cli.render.lint import render_findings

        render_findings(results)
    if any(r.has_error or (strict and r.generic) for _, r in results):
        raise typer.Exit(EXIT_GATE_FAILED)


def _print_rules(fmt: OutputFormat) -> None:
    from loopscope.analyses.lint import RULES

    rows = [
        {
            "rule_id": r.id, "name": r.name, "severity": r.severity, "generic": r.generic, "reason": r.reason,
            "rewrite": r.rewrite, "example": r.example,
        }
        for r in RULES
    ]
    if fmt is OutputFormat.json:
        write_json(rows)
        return
    if fmt is OutputFormat.csv:
        write_csv(rows, ("rule_id", "name", "severity", "generic", "reason", "rewrite", "example"))
        return
    from loopscope.cli.render.lint import render_rules

    render_rules(RULES)
