"""Terminal rendering of ``loopscope lint``: the ranking (table or stacked), text findings, the rule catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopscope.cli.render.output import fmt_number, fmt_rate, inert, one_line, stdout_console

if TYPE_CHECKING:
    from rich.console import Console

# The ranking table needs about this many columns; narrower terminals get one block per template.
RANKING_TABLE_MIN_WIDTH = 110
# How many generic templates get their evidence and suggestion printed under the ranking.
TOP_EXPLAINED = 3


def _explain(console: Console, row: Any, indent: int) -> None:
    from rich.padding import Padding
    from rich.text import Text

    lines = [("because", row.evidence), ("rewrite", row.rewrite)]
    if row.suggestion and row.suggestion != row.rewrite:
        lines.append(("this one", row.suggestion))
    for label, text in lines:
        if text:
            console.print(Padding(Text.from_markup(f"[dim]{label}:[/dim] {inert(text)}"), (0, 0, 0, indent), expand=False))


def _rule_labels(row: Any) -> str:
    # the rules behind the verdict in red, the count of the others; JSON/CSV list every rule
    generic = row.verdict_rules
    others = len(row.rules) - len(generic)
    rules = " ".join(f"[red]{r}[/red]" for r in generic) + (f" [dim]+{others} more[/dim]" if others else "")
    return rules.strip() or "-"


def _template_label(row: Any, width: int) -> str:
    template = inert(one_line(row.template, width))
    return "[yellow](silent)[/yellow] " + template if row.kind == "silent" else template


def _checklist_line(items: dict[str, bool]) -> str:
    from loopscope.analyses.lint.engine import CHECKLIST_ITEMS

    return " · ".join(
        f"[green]✓[/green] {label}" if items.get(key) else f"[red]✗[/red] {label}" for key, label in CHECKLIST_ITEMS.items()
    )


def render_ranking(ranked: list[Any]) -> None:
    console = stdout_console()
    if not ranked:
        console.print("No tool errors in the selection.")
        return
    if console.width < RANKING_TABLE_MIN_WIDTH:
        _ranking_stacked(console, ranked)
    else:
        _ranking_table(console, ranked)
    if any(len(row.rules) > len(row.verdict_rules) for row in ranked):
        console.print(
            "\n[dim]rules: in red, those behind the verdict (they make the message generic); +N more: N other rules "
            "matched, advice for the rewrite that does not make the message generic (--format json lists every "
            "rule; loopscope lint rules)[/dim]"
        )
    generic = [row for row in ranked if row.generic]
    top = generic[0] if generic else None
    if top is not None and top.rewrite:
        console.print(f"\n[b]Fix first:[/b] {inert(top.tool_name)}: {inert(one_line(top.example, 100))}")
        _explain(console, top, indent=0)
        console.print(f"[dim]this message:[/dim] {_checklist_line(top.checklist)}")
    # the next generic templates explain themselves too, so a reader sees why each was flagged
    shown = generic[1:TOP_EXPLAINED]
    if shown:
        console.print("\n[b]Why the next generic templates were flagged[/b]")
        for row in shown:
            number = ranked.index(row) + 1
            console.print(f"{number:>2}. {inert(row.tool_name)}: {inert(one_line(row.example, 100))}")
            _explain(console, row, indent=4)
    not_english = sum(1 for row in ranked if row.notes)
    if not_english:
        console.print(
            f"[dim]note: {not_english} template{'s' if not_english != 1 else ''} not in English: the wording rules "
            "were not applied to them (structural rules were); see --format json 'notes'[/dim]"
        )
    console.print("[dim]Check a rewrite before it ships: loopscope lint check -m 'TEXT'. Rules: loopscope lint rules[/dim]")


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


def render_findings(results: list[tuple[str | None, Any]]) -> None:
    from rich.padding import Padding
    from rich.text import Text

    # One block per message (not a table), so long reasons and rewrites read as
    # prose at any width and the message itself is never squeezed.
    console = stdout_console()
    for i, (tool_name, result) in enumerate(results):
        if i:
            console.print()
        # a message whose wording was not judged (not English) is not shown as passing
        verdict = "[red]generic[/red]" if result.generic else "[yellow]not judged[/yellow]" if result.notes else "[green]ok[/green]"
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
    unjudged = sum(1 for _, r in results if r.notes and not r.generic)
    tail = f"; {unjudged} not judged (not English)" if unjudged else ""
    console.print(f"\n{generic} of {len(results)} messages generic; {failing} with error-severity findings{tail}.")


def render_rules(rules: Any) -> None:
    """The rule catalog as a table."""
    from rich.table import Table

    table = Table(title="loopscope lint rules", title_justify="left")
    for name in ("id", "name", "severity", "generic", "reason"):
        # ids and names stay whole (no ellipsis); the reason wraps
        table.add_column(name, no_wrap=name != "reason", overflow="fold", ratio=1 if name == "reason" else None)
    for r in rules:
        table.add_row(r.id, r.name, r.severity, "yes" if r.generic else "no", inert(r.reason))
    stdout_console().print(table)
