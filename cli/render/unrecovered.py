"""Terminal rendering of ``loopscope unrecovered``: a table, or one block per conversation when narrow."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from loopscope.analyses.notices import NO_TIMESTAMP, SYNTHETIC_BEFORE
from loopscope.cli.render.output import inert, one_line, stdout_console
from loopscope.cli.render.styles import CLASS_STYLE

if TYPE_CHECKING:
    from rich.console import Console

    from loopscope.analyses.recovery import UnrecoveredRow

MESSAGE_CHARS = 70
# The table needs about this many columns; narrower terminals get one block per row.
TABLE_MIN_WIDTH = 120


UNDATED_BEFORE = dt.datetime.fromisoformat(SYNTHETIC_BEFORE)


def _ts(value: dt.datetime) -> str:
    if value.replace(tzinfo=None) < UNDATED_BEFORE:  # the readers' stand-in time for a message without one
        return NO_TIMESTAMP
    return value.strftime("%Y-%m-%d %H:%M") + "Z"


def render(rows: list[UnrecoveredRow], total: int | None = None) -> None:
    """The list; ``total`` is how many there are without ``--limit`` (the heading says "2 of 7")."""
    console = stdout_console()
    if not rows:
        console.print("No conversation in the selection has an unrecovered tool error.")
        return
    total = len(rows) if total is None else total
    shown = f"{len(rows)} of {total}" if total > len(rows) else f"{total}"
    title = f"{shown} conversation{'s' if total != 1 else ''} with an unrecovered tool error"
    if console.width < TABLE_MIN_WIDTH:
        _render_stacked(console, title, rows)
    else:
        _render_table(console, title, rows)
    console.print("[dim]prev. = earlier calls at the same tool with the same arguments. "
                  "Next: loopscope triage CONVERSATION_ID[/dim]")


def _resolved(r: UnrecoveredRow) -> str:
    """Where a later prompt resolved the error (the same tool succeeded), if one did."""
    if not r.resolved_later:
        return ""
    return f"\n[green]resolved later[/green] [dim]in {inert(r.resolved_in_prompt or '')}[/dim]"


def _message(r: UnrecoveredRow, limit: int) -> str:
    return one_line(r.error_message, limit)


def _render_table(console: Console, title: str, rows: list[UnrecoveredRow]) -> None:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    # Two lines per row keep the table narrow; tool_call_id and the other fields
    # are in --format json/csv. Ids stay on one line (copy-pasteable), the message wraps.
    table.add_column("last active", no_wrap=True)
    table.add_column("conversation / prompt, step", no_wrap=True)
    table.add_column("tool / class", no_wrap=True)
    table.add_column("error message", ratio=1)
    for r in rows:
        style = CLASS_STYLE.get(r.error_class, "white")
        table.add_row(
            _ts(r.last_ts),
            f"{inert(r.conversation_id)}\n[dim]{inert(r.prompt_id)}, step {r.step}[/dim]",
            f"{inert(r.tool_name)}\n[{style}]{r.error_class}[/{style}] [dim]· prev. {r.previous_attempts}[/dim]",
            # Under the message, which wraps: in the tool column (never wrapped) a long prompt id
            # widened it and squeezed the message to a sliver.
            inert(_message(r, MESSAGE_CHARS)) + _resolved(r),
        )
    console.print(table)


def _render_stacked(console: Console, title: str, rows: list[UnrecoveredRow]) -> None:
    # Below TABLE_MIN_WIDTH columns a table would crop ids or squeeze the message
    # into a sliver: one block per conversation instead, ids whole on their own line.
    from rich.padding import Padding
    from rich.text import Text

    console.print(f"[b]{title}[/b]")
    for r in rows:
        style = CLASS_STYLE.get(r.error_class, "white")
        console.print()
        console.print(
            f"[b]{inert(r.conversation_id)}[/b]  [{style}]{r.error_class}[/{style}]"
            f" [dim]· last active {_ts(r.last_ts)}[/dim]"
        )
        details = Text.from_markup(
            f"{inert(r.tool_name)} [dim]· prompt[/dim] {inert(r.prompt_id)}[dim], step {r.step}"
            f" · prev. {r.previous_attempts}[/dim]" + _resolved(r)
        )
        console.print(Padding(details, (0, 0, 0, 2), expand=False))
        console.print(Padding(Text.from_markup(inert(_message(r, 2 * MESSAGE_CHARS))), (0, 0, 0, 2), expand=False))
