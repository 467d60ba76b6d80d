"""``loopscope lint``: rank error-message templates by cost, or lint messages before they ship."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from loopscope.cli.app import command
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
from loopscope.cli.output import OutputFormat, fmt_number, fmt_rate, inert, one_line, stdout_console, write_csv, write_json

if TYPE_CHECKING:
    from rich.console import Console

# The ranking table needs about this many columns; narrower terminals get one block per template.
RANKING_TABLE_MIN_WIDTH = 110

_RANK_COLUMNS = (
    "tool_name", "template", "kind", "occurrences", "unrecovered", "recovered", "recovery_rate", "conversations",
    "variants", "generic", "rules", "severity", "rewrite", "example", "error_type", "outcome",
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
      1  a rule of severity error fired (with --strict: or a message is
         generic), or the input is unreadable

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
    from loopscope.cli.common import open_store, selection_from_options

    selection = selection_from_options(since, until, agent, tag)
    con, loaded, _ = open_store(db, paths, input_format)
    selection = dataclasses.replace(selection, source_ids=loaded.source_ids)
    ranked = rank_templates(con, selection, tool=tool, min_count=min_count)
    if limit is not None:
        ranked = ranked[:limit]
    if fmt is OutputFormat.json:
        write_json([r.as_dict() for r in ranked])
    elif fmt is OutputFormat.csv:
        write_csv([{**r.as_dict(), "rules": " ".join(r.rules)} for r in ranked], _RANK_COLUMNS)
    else:
        _render_ranking(ranked)


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
        _render_findings(results)
    if any(r.has_error or (strict and r.generic) for _, r in results):
        raise typer.Exit(1)


def _rule_labels(row: Any) -> str:
    from loopscope.analyses.lint import RULES_BY_ID

    # the rules behind the verdict in red, the count of the others; JSON/CSV list every rule
    generic = [r for r in row.rules if RULES_BY_ID[r].generic or r == "LS130"]
    others = len(row.rules) - len(generic)
    rules = " ".join(f"[red]{r}[/red]" for r in generic) + (f" [dim]+{others}[/dim]" if others else "")
    return rules.strip() or "-"


def _template_label(row: Any, width: int) -> str:
    template = inert(one_line(row.template, width))
    return "[yellow](silent)[/yellow] " + template if row.kind == "silent" else template


def _checklist_line(items: dict[str, bool]) -> str:
    from loopscope.analyses.lint.engine import CHECKLIST_ITEMS

    return " · ".join(
        f"[green]✓[/green] {label}" if items.get(key) else f"[red]✗[/red] {label}" for key, label in CHECKLIST_ITEMS.items()
    )


def _render_ranking(ranked: list[Any]) -> None:
    console = stdout_console()
    if not ranked:
        console.print("No tool errors in the selection.")
        return
    if console.width < RANKING_TABLE_MIN_WIDTH:
        _ranking_stacked(console, ranked)
    else:
        _ranking_table(console, ranked)
    top = next((row for row in ranked if row.generic), None)
    if top is not None and top.rewrite:
        console.print(f"\n[b]Fix first:[/b] {inert(top.tool_name)}: {inert(one_line(top.example, 100))}")
        console.print(f"[dim]rewrite:[/dim] {inert(top.rewrite)}")
        console.print(f"[dim]this message:[/dim] {_checklist_line(top.checklist)}")
    console.print("[dim]Check a rewrite before it ships: loopscope lint --message 'TEXT'. Rules: loopscope lint --rules[/dim]")


def _ranking_table(console: Console, ranked: list[Any]) -> None:
    from rich import box
    from rich.table import Table

    table = Table(
        title="Error-message templates, costliest first", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1)
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("tool", min_width=10, max_width=26, overflow="fold")
    table.add_column("errors", justify="right", no_wrap=True)
    table.add_column("unrec", justify="right", no_wrap=True)
    table.add_column("recov", justify="right", no_wrap=True)
    table.add_column("convs", justify="right", no_wrap=True)
    table.add_column("rules", no_wrap=True)
    table.add_column("template", ratio=1, min_width=20)
    for i, row in enumerate(ranked, 1):
        table.add_row(
            str(i),
            inert(row.tool_name),
            fmt_number(row.occurrences),
            fmt_number(row.unrecovered),
            fmt_rate(row.recovery_rate),
            fmt_number(row.conversations),
            _rule_labels(row),
            _template_label(row, 160),
        )
    console.print(table)


def _ranking_stacked(console: Console, ranked: list[Any]) -> None:
    # A narrow terminal squeezes the template column of the table into a sliver:
    # one block per template instead, counts on the first line, template below.
    from rich.padding import Padding
    from rich.text import Text

    console.print("[b]Error-message templates, costliest first[/b]")
    for i, row in enumerate(ranked, 1):
        counts = (
            f"{fmt_number(row.unrecovered)} of {fmt_number(row.occurrences)} unrecovered"
            f" · {fmt_rate(row.recovery_rate)} recovered · {fmt_number(row.conversations)}"
            f" conversation{'s' if row.conversations != 1 else ''}"
        )
        console.print()
        console.print(f"{i:>2}. [b]{inert(row.tool_name)}[/b] · {_rule_labels(row)}")
        console.print(Padding(Text.from_markup(f"[dim]{counts}[/dim]"), (0, 0, 0, 4), expand=False))
        console.print(Padding(Text.from_markup(_template_label(row, 240)), (0, 0, 0, 4), expand=False))


def _render_findings(results: list[tuple[str | None, Any]]) -> None:
    from rich.padding import Padding
    from rich.text import Text

    # One block per message (not a table), so long reasons and rewrites read as
    # prose at any width and the message itself is never squeezed.
    console = stdout_console()
    for i, (tool_name, result) in enumerate(results):
        if i:
            console.print()
        verdict = "[red]generic[/red]" if result.generic else "[green]ok[/green]"
        label = (f"[b]{inert(tool_name)}[/b]: " if tool_name else "") + inert(one_line(result.message, 200))
        console.print(Text.from_markup(f"{verdict}  {label}"))
        for f in result.findings:
            color = "red" if f.severity == "error" else "yellow" if f.severity == "warning" else "dim"
            console.print(
                Padding(Text.from_markup(f"[{color}]{f.rule_id} {f.severity}[/]: {inert(f.reason)}"), (0, 0, 0, 2), expand=False)
            )
            if f.evidence:
                console.print(Padding(Text.from_markup(f"[dim]because:[/dim] {inert(f.evidence)}"), (0, 0, 0, 4), expand=False))
            console.print(Padding(Text.from_markup(f"[dim]rewrite:[/dim] {inert(f.rewrite)}"), (0, 0, 0, 4), expand=False))
            if f.suggestion and f.suggestion != f.rewrite:
                console.print(Padding(Text.from_markup(f"[dim]this one:[/dim] {inert(f.suggestion)}"), (0, 0, 0, 4), expand=False))
        for note in result.notes:
            console.print(Padding(Text.from_markup(f"[dim]note: {inert(note)}[/dim]"), (0, 0, 0, 2), expand=False))
    generic = sum(r.generic for _, r in results)
    failing = sum(r.has_error for _, r in results)
    console.print(f"\n{generic} of {len(results)} messages generic; {failing} with error-severity findings.")


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
    from rich.table import Table

    table = Table(title="loopscope lint rules", title_justify="left")
    for name in ("id", "name", "severity", "generic", "reason"):
        # ids and names stay whole (no ellipsis); the reason wraps
        table.add_column(name, no_wrap=name != "reason", overflow="fold", ratio=1 if name == "reason" else None)
    for r in RULES:
        table.add_row(r.id, r.name, r.severity, "yes" if r.generic else "no", inert(r.reason))
    stdout_console().print(table)
