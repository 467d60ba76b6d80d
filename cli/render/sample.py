"""Terminal rendering of ``loopscope review sample``: the strata line and the drawn conversations."""

from __future__ import annotations

from typing import Any

from loopscope.cli.render.audit import new_table
from loopscope.cli.render.output import inert, stdout_console


def render(sample: Any, rows: list[dict[str, Any]]) -> None:
    """Print a drawn ``Sample`` and its rows."""
    console = stdout_console()
    strata = "; ".join(f"{s} {sample.available[s]} → {sample.allocation[s]}" for s in sample.available)
    console.print(f"{len(rows)} of {sum(sample.available.values())} conversations · seed {sample.seed} · "
                  f"strata (available → drawn): {strata}")
    table = new_table()
    # Ids and times stay whole; the stratum (class) wraps when the terminal is narrow.
    for col, justify in (("conversation", "left"), ("stratum (class)", "left"), ("agent", "left"),
                         ("started (UTC)", "left"), ("calls", "right"), ("errors", "right")):
        table.add_column(col, justify=justify, no_wrap=col != "stratum (class)")  # type: ignore[arg-type]
    for r in rows:
        stratum = r["stratum"] if r["computed_class"] == r["stratum"] else f"{r['stratum']} ({r['computed_class']})"
        table.add_row(inert(r["conversation_id"]), stratum, inert(r["agent"]), f"{r['first_ts']:%Y-%m-%d %H:%M}",
                      str(r["tool_calls"]), str(r["errors"]))
    console.print(table)
