"""Terminal rendering of ``loopscope load``: one row per file, then the totals."""

from __future__ import annotations

import os
from pathlib import PurePath
from typing import TYPE_CHECKING

from loopscope.analyses.ingest.files import is_log_name
from loopscope.cli.render.output import fmt_number, inert, stdout_console

if TYPE_CHECKING:
    from loopscope.analyses.ingest import LoadSummary


FILE_COLUMN_MIN = 24


def _common_folder(paths: list[str]) -> str:
    """The deepest folder holding every path ("" when they share none but the root or the current folder)."""
    try:
        common = os.path.commonpath([os.path.dirname(p) or "." for p in paths])
    except ValueError:  # absolute and relative paths mixed
        return ""
    return "" if common in ("", ".", os.sep) else common


def middle_cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut in the middle (``…``): its start and its end stay."""
    if len(text) <= width:
        return text
    tail = (width - 1) * 2 // 3  # the end (the file name) matters most
    head = width - 1 - tail
    return text[:head] + "…" + text[len(text) - tail:]


def render(summary: LoadSummary, db: str | None) -> None:
    """Print a ``LoadSummary``; ``db`` is named in the quarantine hint when given."""
    from loopscope.cli.render.output import shown_path
    from rich.table import Table

    out = stdout_console()
    table = Table(title=None, box=None, pad_edge=False)
    columns = ("file", "format", "status", "loaded", "skipped", "quarantined")
    for col in columns:
        table.add_column(col, justify="right" if col in ("loaded", "skipped", "quarantined") else "left",
                         no_wrap=col == "file")
    shown = [shown_path(d.path) for d in summary.details]
    # Several files under one folder: the folder once above the table, each row its path under it.
    under = _common_folder(shown) if len(shown) > 1 else ""
    if under:
        out.print(f"files under {inert(under)}{'' if under.endswith(os.sep) else os.sep}")
        shown = [os.path.relpath(p, under) for p in shown]
    rows = [
        (path, d.input_format, d.status, fmt_number(d.loaded), fmt_number(d.skipped), fmt_number(d.quarantined))
        for path, d in zip(shown, summary.details)
    ]
    # The file column gets what the other columns leave of the terminal; a longer path is cut in
    # the middle, so the file names (the end), which tell the rows apart, stay whole.
    others = sum(max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns) if i) + 2 * (len(columns) - 1)
    room = max(FILE_COLUMN_MIN, out.width - others)
    for r in rows:
        table.add_row(inert(middle_cut(r[0], room)), *(inert(c) for c in r[1:3]), *r[3:])
    out.print(table)
    out.print(
        f"{summary.files} files: {summary.loaded} records loaded "
        f"({summary.tool_calls} tool calls, {summary.loop_exits} loop exits), "
        f"{summary.skipped} skipped as already loaded, {summary.quarantined} quarantined"
        + (f", {summary.protocol_violations} protocol violations" if summary.protocol_violations else "")
        + (f", {summary.unreadable} unreadable (not loaded)" if summary.unreadable else "")
    )
    if summary.skipped_types:
        counts = ", ".join(f"{inert(name)} {n}" for name, n in sorted(summary.skipped_types.items(), key=lambda kv: (-kv[1], kv[0])))
        total = sum(summary.skipped_types.values())
        out.print(f"Lines not read (not errors), per type: {total} ({counts})")
    checkpoints = [p for p in summary.ignored if is_log_name(PurePath(p).name)]  # see is_gemini_checkpoint
    others = [p for p in summary.ignored if not is_log_name(PurePath(p).name)]
    if checkpoints:
        n = len(checkpoints)
        out.print(f"Gemini CLI checkpoints and prompt logs left out: {n} file{'s' if n != 1 else ''} (copies of "
                  "conversations the chats/ folder beside them records, which was read; name a file to load it)")
    if others:
        names = ", ".join(inert(shown_path(p)) for p in others[:3]) + (", ..." if len(others) > 3 else "")
        n = len(others)
        out.print(f"Not log files (not *.jsonl, *.ndjson, *.json or .gz), left out: {n} file{'s' if n != 1 else ''}, {names}")
        evals = sum(1 for p in others if str(p).lower().endswith(".eval"))
        if evals:
            # Inspect AI writes its logs as .eval (zip) by default: a logs folder of them loads nothing.
            out.print(
                f"Inspect AI .eval logs (zip) among them: {evals}; loopscope does not read that format: convert them with "
                "[b]inspect log convert LOGS_DIR --to json --output-dir JSON_DIR[/b] and load JSON_DIR"
            )
    if summary.quarantined:
        if db == ":memory:":
            # The store dies with this command: a hint to list them from it would find nothing.
            out.print("The bad lines are kept only in this in-memory store, gone when the command ends: "
                      "load into a file (--db loopscope.duckdb) and see them with [b]loopscope quarantine[/b]")
        else:
            out.print("See the bad lines with: [b]loopscope quarantine[/b]" + (f" --db {inert(db)}" if db else ""))
