"""``loopscope lint``: a noun with three verbs.

``lint rank [PATH...]`` (the default verb: ``lint PATH...``) ranks the error-message templates in
the logs by cost; ``lint check -m TEXT / --messages FILE`` checks texts before they ship (a CI gate,
exit 3); ``lint rules`` lists the catalog. The spellings before the verbs (``lint --message``,
``lint --messages``, ``lint --rules``) still work, hidden, with a one-line notice on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from loopscope.cli.app import EXIT_GATE_FAILED, Command, deprecation_notice, handle_errors, noun_group
from loopscope.cli.options import FormatOption, Scope, selection_options
from loopscope.cli.render.output import OutputFormat, write_csv, write_json

_RANK_COLUMNS = (
    "tool_name", "template", "kind", "occurrences", "unrecovered", "recovered_errors", "recovery_rate", "conversations",
    "variants", "generic", "rules", "severity", "rewrite", "example", "error_type", "outcome", "evidence", "suggestion",
)


lint_app = noun_group(
    "lint",
    "Error messages the model reads: [b]rank[/b] the templates in your logs by what they cost "
    "(the default verb: [b]loopscope lint sample_logs/[/b]), [b]check[/b] texts before they ship "
    "(a CI gate), list the [b]rules[/b].\n\n"
    "\b\n"
    "Exit codes of lint check:\n"
    "  0  no rule of severity error fired\n"
    "  1  the input is unreadable, or a mistyped option\n"
    "  3  a rule of severity error fired (with --strict: or a message is generic)\n\n"
    "\b\n"
    "Examples:\n"
    "  loopscope lint sample_logs/\n"
    "  loopscope lint rank --db prod.duckdb --week 2026-W47 --min-count 5\n"
    "  loopscope lint check -m 'Failed' -m 'Invalid date. Use YYYY-MM-DD.'\n"
    "  loopscope lint check --messages errors.json --format json\n"
    "  loopscope lint rules",
    default_verb="rank",
)

MessageOption = Annotated[
    Optional[list[str]],
    typer.Option("--message", "-m", help="An error text to check (repeat for several).", show_default=False),
]
MessagesFileOption = Annotated[
    Optional[Path],
    typer.Option(
        "--messages",
        help="Check the error texts in FILE: one per line, a JSON list of strings, or a tool catalog "
        '([b]{"tools": [{"name": ..., "errors": [...]}]}[/b]). See docs/lint.md.',
        show_default=False,
    ),
]
StrictOption = Annotated[bool, typer.Option("--strict", help="Also fail (exit 3) when a message is generic.")]


@lint_app.command("rank", cls=Command)
@handle_errors
@selection_options()
def rank_command(
    scope: Scope,
    fmt: FormatOption = OutputFormat.table,
    tool: Annotated[Optional[str], typer.Option("--tool", help="Only this tool's messages.", show_default=False)] = None,
    min_count: Annotated[int, typer.Option("--min-count", min=1, help="Hide templates seen fewer times.")] = 1,
    limit: Annotated[
        Optional[int], typer.Option("--limit", min=1, help="Show only the first N templates.", show_default=False)
    ] = None,
    # the spellings before lint had verbs, kept for scripts (hidden; a notice on stderr)
    message: Annotated[Optional[list[str]], typer.Option("--message", "-m", hidden=True)] = None,
    messages: Annotated[Optional[Path], typer.Option("--messages", hidden=True)] = None,
    rules: Annotated[bool, typer.Option("--rules", hidden=True)] = False,
    strict: Annotated[bool, typer.Option("--strict", hidden=True)] = False,
) -> None:
    """Rank error-message templates by what they cost: unrecovered occurrences first.

    Reads the tool errors in the store (--db), after loading any PATHs given;
    groups them into templates per tool and ranks them by unrecovered
    occurrences, with the lint rules each one trips. The default verb of
    lint: [b]loopscope lint sample_logs/[/b] is [b]loopscope lint rank sample_logs/[/b].

    \b
    Examples:
      loopscope lint sample_logs/
      loopscope lint rank --db prod.duckdb --since 2026-11-01 --min-count 5
      loopscope lint rank --week 2026-W47 --tool book --format json
    """
    if rules:
        deprecation_notice("loopscope lint --rules", "loopscope lint rules")
        _print_rules(fmt)
        return
    if message or messages is not None:
        deprecation_notice("loopscope lint --message/--messages", "loopscope lint check --message/--messages")
        if scope.paths:
            from loopscope.analyses.errors import LoopscopeError

            raise LoopscopeError(
                "give either log PATHs (to rank their error messages) or --message/--messages (to lint texts), not both",
                hint="loopscope lint sample_logs/  or  loopscope lint check --message 'Failed'",
            )
        _lint_texts(message or [], messages, fmt, strict=strict)
        return
    from loopscope.analyses.lint.ranking import rank_templates

    with scope.open(status="ranking error messages") as (con, selection, _summary):
        ranked = rank_templates(con, selection, tool=tool, min_count=min_count, limit=limit)
    if fmt is OutputFormat.json:
        write_json([r.as_dict() for r in ranked])
    elif fmt is OutputFormat.csv:
        write_csv([{**r.as_dict(), "rules": " ".join(r.rules)} for r in ranked], _RANK_COLUMNS)
    else:
        from loopscope.cli.render.lint import render_ranking

        render_ranking(ranked)


@lint_app.command("check", cls=Command)
@handle_errors
def check_command(
    message: MessageOption = None,
    messages: MessagesFileOption = None,
    strict: StrictOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Check error texts before they ship, without any logs: a gate for CI (exit 3 on a finding of severity error).

    --message TEXT (repeatable) and --messages FILE (one message per line, a
    JSON list, or a tool catalog) give the texts. Each finding says what
    triggered the rule and suggests a rewrite.

    \b
    Exit codes:
      0  no rule of severity error fired
      1  the input is unreadable, or a mistyped option
      3  a rule of severity error fired (with --strict: or a message is generic)

    \b
    Examples:
      loopscope lint check -m 'Failed' -m 'Invalid date. Use YYYY-MM-DD.'
      loopscope lint check --messages errors.json --format json
      loopscope lint check --messages tools.json --strict
    """
    if not message and messages is None:
        from loopscope.analyses.errors import LoopscopeError

        raise LoopscopeError("nothing to check: give --message TEXT or --messages FILE",
                             hint="loopscope lint check -m 'Failed'  (to rank the messages in logs: loopscope lint PATH...)")
    _lint_texts(message or [], messages, fmt, strict=strict)


@lint_app.command("rules", cls=Command)
@handle_errors
def rules_command(fmt: FormatOption = OutputFormat.table) -> None:
    """List the rule catalog: id, name, severity, why it matters, the rewrite and an example.

    \b
    Examples:
      loopscope lint rules
      loopscope lint rules --format json
    """
    _print_rules(fmt)


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
