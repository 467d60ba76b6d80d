"""Terminal rendering of ``loopscope triage``: the timeline tree, incidents and the first-unrecovered panel.

Reads only the library's ``Triage`` result; every text from the logs goes through ``inert``.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from loopscope.analyses.notices import NO_TIMESTAMP, SYNTHETIC_BEFORE
from loopscope.cli.render.output import fmt_number, inert, one_line
from loopscope.cli.render.styles import CLASS_STYLE

if TYPE_CHECKING:
    from rich.console import RenderableType

    from loopscope.analyses.incidents import RetryLoop
    from loopscope.analyses.loops import Cycle, NoProgressLoop
    from loopscope.analyses.triage import PromptEntry, ToolCallEntry, Triage

TIMELINE_MESSAGE_CHARS = 100
# The replay table needs about this many columns; narrower terminals get one line per incident.
INCIDENT_TABLE_MIN_WIDTH = 120
CSV_COLUMNS = (
    "prompt_id", "step", "tool_call_id", "tool_name", "ts", "outcome", "is_error", "attempts",
    "latency_ms", "class", "is_replay", "replayed", "first_unrecovered", "error_type", "error_message",
)


def csv_rows(result: Triage) -> list[dict[str, Any]]:
    rows = []
    for prompt in result.prompts:
        for call in prompt.tool_calls:
            row = call.to_dict()
            row["prompt_id"] = prompt.prompt_id
            rows.append(row)
    return rows


UNDATED_BEFORE = dt.datetime.fromisoformat(SYNTHETIC_BEFORE)


def _ts(value: dt.datetime | None) -> str:
    # Store timestamps are naive UTC.
    if value is not None and value.replace(tzinfo=None) < UNDATED_BEFORE:  # the readers' stand-in time for a message without one
        return NO_TIMESTAMP
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{fmt_number(value, 1)} ms"


def _plural(n: int | None, noun: str) -> str:
    if n is None:
        return f"- {noun}s"
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _short(text: str | None, limit: int = TIMELINE_MESSAGE_CHARS) -> str:
    return one_line(text, limit)


def _call_label(call: ToolCallEntry) -> str:
    if call.is_error:
        mark = "[red]✗[/red]"
    elif call.outcome == "ok":
        mark = "[green]✓[/green]"
    else:
        mark = "[yellow]✓[/yellow]"
    parts = [
        mark,
        f"[b]{inert(call.tool_name)}[/b]",
        inert(call.outcome),
        f"{call.attempts} attempt{'s' if call.attempts != 1 else ''}",
        _ms(call.latency_ms),
        f"[dim]{inert(call.tool_call_id)}[/dim]",
    ]
    if call.is_replay:
        parts.append(
            "[cyan]replay (short-circuited)[/cyan]" if call.replayed else "[bold red]replay: EXECUTED AGAIN[/bold red]"
        )
    if call.is_id_collision:
        parts.append("[yellow]reused id: a new call (not a replay)[/yellow]")
    if call.error_class:
        style = CLASS_STYLE.get(call.error_class, "white")
        parts.append(f"[{style}]\\[{call.error_class}][/{style}]")
        if call.resolved_in_prompt:
            parts.append(f"[green]resolved later in {inert(call.resolved_in_prompt)}[/green]")
    elif call.is_error:
        parts.append("[dim]\\[error, replay: not counted][/dim]")
    if call.first_unrecovered:
        parts.append("[bold reverse red] ◀ first unrecovered [/bold reverse red]")
    if call.is_error and call.error_message:
        parts.append(inert(_short(call.error_message)))
    return " ".join(parts)


def _exit_label(prompt: PromptEntry) -> str:
    x = prompt.loop_exit
    if x is None:
        return "[magenta]no loop_exit: the prompt is open (process died or still running)[/magenta]"
    style = "green" if x.normal else "red"
    kind = "normal" if x.normal else "abnormal"
    budget = f" / budget {x.max_tool_calls}" if x.max_tool_calls is not None else ""
    parts = [
        f"exit [{style}]{inert(x.exit_reason)}[/{style}] ({kind})",
        f"{_plural(x.tool_calls, 'tool call')}{budget}",
        _plural(x.steps, "step"),
        _ms(x.duration_ms),
    ]
    if x.error_type or x.error_message:
        parts.append(inert(_short(" ".join(p for p in (x.error_type, x.error_message) if p))))
    return " · ".join(parts)


def _prompt_tree(prompt: PromptEntry) -> RenderableType:
    from rich.tree import Tree

    tags = ""
    if prompt.tags:
        tags = " · " + " ".join(f"{inert(k)}={inert(v)}" for k, v in sorted(prompt.tags.items()))
    tree = Tree(
        f"[b]prompt {inert(prompt.prompt_id)}[/b] · {_ts(prompt.first_ts)} · agent {inert(prompt.agent)}"
        f" · {_plural(prompt.n_tool_calls, 'tool call')}{tags}",
        guide_style="dim",
    )
    for step, calls in prompt.steps:
        node = tree.add(f"step {step}")
        for call in calls:
            node.add(_call_label(call))
    tree.add(_exit_label(prompt))
    return tree


def _incidents(result: Triage) -> list[RenderableType]:
    from rich.table import Table

    out: list[RenderableType] = []
    if result.retry_loops:
        table = Table(title="Retry loops (same failing call 3+ times in one prompt)", title_justify="left")
        for col in ("prompt", "tool", "calls", "redundant", "steps", "error message"):
            # ids fold rather than end in an ellipsis: they must stay copy-pasteable
            table.add_column(col, justify="right" if col in ("calls", "redundant") else "left", overflow="fold")
        for loop in result.retry_loops:
            table.add_row(
                inert(loop.prompt_id), inert(loop.tool_name), str(loop.calls), str(loop.redundant_calls),
                f"{loop.first_step}-{loop.last_step}", inert(_short(loop.error_message, 80)),
            )
        out.append(table)
    if result.no_progress_loops or result.cycles:
        table = Table(title="No-progress loops and cycles (same calls, no new result)", title_justify="left")
        for col in ("prompt", "kind", "tool", "calls", "redundant", "steps"):
            table.add_column(col, justify="right" if col in ("calls", "redundant") else "left", overflow="fold")
        for n in result.no_progress_loops:
            table.add_row(
                inert(n.prompt_id), "same result", inert(n.tool_name), str(n.calls), str(n.redundant_calls),
                f"{n.first_step}-{n.last_step}",
            )
        for c in result.cycles:
            table.add_row(
                inert(c.prompt_id), "A-B cycle", f"{inert(c.tool_name)} ⇄ {inert(c.other_tool_name)}", str(c.calls),
                str(c.redundant_calls), f"{c.first_step}-{c.last_step}",
            )
        out.append(table)
    if result.replays:
        table = Table(title="Replays (tool_call_id ran more than once)", title_justify="left")
        for col in ("tool_call_id", "tool", "run", "prompt", "step", "flagged replayed", "verdict"):
            # ids stay whole (copy-pasteable); the prompt id folds when space is short
            table.add_column(col, no_wrap=col in ("tool_call_id", "run", "verdict"), overflow="fold")
        for r in result.replays:
            verdict = "[cyan]short-circuited[/cyan]" if r.replayed else "[bold red]double execution[/bold red]"
            table.add_row(
                inert(r.tool_call_id), inert(r.tool_name), f"{r.run} of {r.runs}", inert(r.prompt_id),
                str(r.step), "yes" if r.replayed else "no", verdict,
            )
        out.append(table)
    if result.duplicate_executions:
        table = Table(title="Duplicate executions (same tool and arguments, new tool_call_id)", title_justify="left")
        for col in ("prompt", "tool", "first success", "repeated as", "outcomes"):
            table.add_column(col, overflow="fold")
        for d in result.duplicate_executions:
            table.add_row(
                inert(d.prompt_id), inert(d.tool_name), inert(d.original_tool_call_id),
                inert(", ".join(d.duplicate_tool_call_ids)), inert(", ".join(d.duplicate_outcomes)),
            )
        out.append(table)
    return out


def _incident_lines(result: Triage) -> list[RenderableType]:
    # The narrow-terminal form of _incidents: one wrapped line per item, so ids
    # stay whole and no column is squeezed to a sliver.
    from rich.padding import Padding
    from rich.text import Text

    def _item(markup: str) -> RenderableType:
        return Padding(Text.from_markup(markup), (0, 0, 0, 2), expand=False)

    def _where(found: RetryLoop | NoProgressLoop | Cycle) -> str:
        return f" [dim]· prompt[/dim] {inert(found.prompt_id)}[dim], steps {found.first_step}-{found.last_step}[/dim]"

    out: list[RenderableType] = []
    if result.retry_loops:
        out.append(Text("Retry loops (same failing call 3+ times in one prompt)", style="bold"))
        for loop in result.retry_loops:
            out.append(_item(
                f"{inert(loop.tool_name)} × {loop.calls} ({loop.redundant_calls} redundant){_where(loop)}"
                f" · {inert(_short(loop.error_message, 80))}"
            ))
    if result.no_progress_loops or result.cycles:
        out.append(Text("No-progress loops and cycles (same calls, no new result)", style="bold"))
        for n in result.no_progress_loops:
            out.append(_item(
                f"{inert(n.tool_name)} × {n.calls}, same result ({n.redundant_calls} redundant){_where(n)}"
            ))
        for c in result.cycles:
            out.append(_item(
                f"{inert(c.tool_name)} ⇄ {inert(c.other_tool_name)} × {c.calls} ({c.redundant_calls} redundant)"
                f"{_where(c)}"
            ))
    if result.replays:
        out.append(Text("Replays (tool_call_id ran more than once)", style="bold"))
        for r in result.replays:
            verdict = (
                "[cyan]short-circuited[/cyan] (flagged replayed)" if r.replayed
                else "[bold red]double execution[/bold red] (not flagged replayed)"
            )
            out.append(_item(
                f"{inert(r.tool_call_id)} {inert(r.tool_name)} [dim]· run {r.run} of {r.runs} · prompt[/dim]"
                f" {inert(r.prompt_id)}[dim], step {r.step}[/dim] · {verdict}"
            ))
    if result.duplicate_executions:
        out.append(Text("Duplicate executions (same tool and arguments, new tool_call_id)", style="bold"))
        for d in result.duplicate_executions:
            out.append(_item(
                f"{inert(d.tool_name)} [dim]· prompt[/dim] {inert(d.prompt_id)} [dim]· first success[/dim]"
                f" {inert(d.original_tool_call_id)} [dim]· repeated as[/dim] {inert(', '.join(d.duplicate_tool_call_ids))}"
                f" [dim]({inert(', '.join(d.duplicate_outcomes))})[/dim]"
            ))
    return out


def _first_unrecovered_panel(result: Triage) -> RenderableType:
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    first = result.first_unrecovered
    if first is None:
        return Panel(
            "[green]No unrecovered error: every tool error in this conversation was recovered (or there were none).[/green]",
            title="First unrecovered error",
            title_align="left",
            border_style="green",
        )
    style = CLASS_STYLE.get(first.error_class, "white")
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="dim")
    facts.add_column()
    facts.add_row("prompt", f"{inert(first.prompt_id)} (exit {inert(first.exit_reason or 'none: open')})")
    facts.add_row("step", str(first.step))
    facts.add_row("tool", inert(first.tool_name))
    facts.add_row("tool_call_id", inert(first.tool_call_id))
    facts.add_row("class", f"[{style}]{first.error_class}[/{style}]")
    facts.add_row("outcome", f"{inert(first.outcome)}, {first.attempts} attempt(s), {_ms(first.latency_ms)}")
    facts.add_row("error type", inert(first.error_type or "-"))
    facts.add_row("at", _ts(first.ts))
    parts: list[RenderableType] = [facts, Text(""), Text("Error message the model saw:", style="bold")]
    # The message exactly as logged (control characters made visible), not reflowed.
    parts.append(Text.from_markup(inert(first.error_message or "(no message)")))
    parts.append(Text(""))
    if first.previous_attempts:
        attempts = Table(
            title=f"Previous attempts at {inert(first.tool_name)} with the same arguments ({len(first.previous_attempts)})",
            title_justify="left",
        )
        for col in ("#", "prompt", "step", "tool_call_id", "outcome", "result"):
            attempts.add_column(col, overflow="fold")
        for i, a in enumerate(first.previous_attempts, 1):
            result_text = _short(a.error_message, 80) if a.is_error else "ok"
            attempts.add_row(
                str(i), inert(a.prompt_id), str(a.step), inert(a.tool_call_id),
                inert(a.outcome) + (" (replay)" if a.is_replay else ""),
                f"[red]{inert(result_text)}[/red]" if a.is_error else "[green]ok[/green]",
            )
        parts.append(attempts)
    else:
        parts.append(Text("No previous attempts at this tool with the same arguments in this conversation.", style="dim"))
    parts.append(Text(""))
    parts.append(Text.from_markup(f"[dim]{inert(result.recovery_context or '')}[/dim]"))
    return Panel(
        Group(*parts),
        title="[bold]First unrecovered error[/bold]",
        title_align="left",
        border_style=style,
    )


def _incident_summary(result: Triage) -> str:
    # One line so the worst news is visible before scrolling through the timeline.
    items = []
    if result.retry_loops:
        redundant = sum(loop.redundant_calls for loop in result.retry_loops)
        items.append(f"[yellow]{_plural(len(result.retry_loops), 'retry loop')} ({redundant} redundant calls)[/yellow]")
    if result.no_progress_loops:
        items.append(f"[yellow]{_plural(len(result.no_progress_loops), 'no-progress loop')}[/yellow]")
    if result.cycles:
        items.append(f"[yellow]{_plural(len(result.cycles), 'cycle')}[/yellow]")
    doubles = sum(1 for r in result.replays if r.double_execution)
    if doubles:
        items.append(f"[bold red]{_plural(doubles, 'double execution')}[/bold red]")
    if len(result.replays) > doubles:
        items.append(f"[cyan]{len(result.replays) - doubles} short-circuited replay{'s' if len(result.replays) - doubles != 1 else ''}[/cyan]")
    if result.duplicate_executions:
        n = sum(d.duplicates for d in result.duplicate_executions)
        items.append(f"[yellow]{_plural(n, 'duplicate execution')} by fingerprint[/yellow]")
    return " · ".join(items)


def render(result: Triage, width: int | None = None) -> RenderableType:
    """The whole triage as one rich renderable.

    Args:
        result: the triage to show.
        width: the terminal width; below INCIDENT_TABLE_MIN_WIDTH the incident
            tables are printed as wrapped lines instead.
    """
    from rich.console import Group
    from rich.text import Text

    counts = result.class_counts()
    n_errors = sum(counts.values())
    agents = sorted({p.agent for p in result.prompts})
    start = min(p.first_ts for p in result.prompts)
    header = (
        f"[b]Conversation {inert(result.conversation_id)}[/b] · {len(result.prompts)} prompt"
        f"{'s' if len(result.prompts) != 1 else ''} · agent {inert(', '.join(agents))} · from {_ts(start)}\n"
        f"{n_errors} tool error{'s' if n_errors != 1 else ''}: "
        + " · ".join(
            f"[{CLASS_STYLE[c]}]{c} {n}[/{CLASS_STYLE[c]}]" if n else f"{c} {n}" for c, n in counts.items()
        )
    )
    incidents = _incident_summary(result)
    if incidents:
        header += "\n" + incidents
    parts: list[RenderableType] = [Text.from_markup(header), Text("")]
    for i, prompt in enumerate(result.prompts):
        if i:
            parts.append(Text(""))
        parts.append(_prompt_tree(prompt))
    narrow = width is not None and width < INCIDENT_TABLE_MIN_WIDTH
    incident_tables = _incident_lines(result) if narrow else _incidents(result)
    if incident_tables:
        parts.append(Text(""))
        parts.extend(incident_tables)
    parts.append(Text(""))
    parts.append(_first_unrecovered_panel(result))
    return Group(*parts)
