"""Rendering helpers shared by every command.

Untrusted text (tool error messages, ids, tool names from logs) goes through
``inert()`` before it reaches a rich console: ANSI escapes and other control
characters become visible ``\\x1b``-style escapes and rich markup is escaped,
so a hostile message can neither recolour the terminal nor inject markup.
JSON and CSV are written with the standard library, never through rich.
"""

from __future__ import annotations

import csv
import datetime as dt
import enum
import io
import json
import math
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopscope.analyses.untrusted import BIDI_AND_INVISIBLE, UNSAFE_RE, escape_char

if TYPE_CHECKING:  # rich is imported when a console is made: json and csv output never load it
    from rich.console import Console

# C0/C1 controls, bidirectional controls and invisible format characters: one definition for
# every output (loopscope.analyses.untrusted), so log text cannot act on a terminal or disguise
# itself ("Trojan Source").
_BIDI = BIDI_AND_INVISIBLE
_CONTROL_RE = UNSAFE_RE
# Leading characters a spreadsheet would run as a formula.
_CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class OutputFormat(str, enum.Enum):
    """How a command prints its result."""

    table = "table"
    json = "json"
    csv = "csv"


def stdout_console() -> Console:
    """Console for results (stdout). Created per call so tests can capture it."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


WHOLE_WIDTH = 10_000
"""Wider than any table: the width ``print_whole`` gives the console while it prints."""


def print_whole(out: Any, table: Any) -> None:
    """Print a table of figures at its natural width, even past a narrow terminal's.

    Rich fits a table to the terminal by cutting cells ("18…") and, with no-wrap columns, by
    dropping whole columns (replays): figures must not go missing, so the lines are left long
    (the terminal wraps them) instead.
    """
    width = out.width
    out.width = max(width, WHOLE_WIDTH)  # a table never expands: it is drawn at its natural width
    try:
        out.print(table)
    finally:
        out.width = width


FREE_TEXT_FLOOR = 16
"""The narrowest a free-text column gets (``print_fitted``) before a table goes past the terminal."""


def measured_narrowest_width(out: Any, table: Any, free: Sequence[Any]) -> int:
    """The width ``table`` needs with its free-text columns at their narrowest, as rich measures it.

    Every cell of every column is measured: ``_narrowest_width`` gives the same figure for less and
    falls back to this (tests/test_print_fitted_width.py holds the two equal).
    """
    from rich.measure import Measurement

    saved = [c.max_width for c in free]
    for c in free:  # measured at their narrowest: what the table needs at least
        c.max_width = c.min_width or 1
    try:
        return int(Measurement.get(out, out.options.update(max_width=10_000), table).maximum)
    finally:
        for c, width in zip(free, saved):
            c.max_width = width


def _narrowest_width(out: Any, table: Any, free: Sequence[Any]) -> int | None:
    """The width ``table`` needs with its free-text columns at their narrowest, measuring only the other columns.

    The same figure as rich's own measurement of the table with each free column's ``max_width``
    set to its ``min_width`` (what ``print_fitted`` asks), without its cost: rich measures every
    cell of every column twice for it (``Table.__rich_measure__``), and the drawing measures them
    again. A free column at its narrowest is its fixed ``width`` or its ``min_width`` plus padding
    whatever its cells hold, so only the ``no_wrap`` columns are measured, once. None (measure the
    rich way) for a table this does not cover: a set ``width`` or ``min_width``, a free column with
    neither a width nor a positive ``min_width``, or a rich without these internals.
    """
    measure = getattr(table, "_measure_column", None)
    padding_of = getattr(table, "_get_padding_width", None)
    extra = getattr(table, "_extra_width", None)
    if measure is None or padding_of is None or extra is None or table.width is not None or table.min_width is not None:
        return None
    if any(c.width is None and not c.min_width for c in free):
        return None
    options = out.options.update(max_width=10_000)
    total = int(extra)
    for column in table.columns:
        if column.no_wrap:
            total += int(measure(out, options, column).maximum)
        else:
            total += padding_of(column._index) + (column.width if column.width is not None else column.min_width)
    total = min(total, 10_000)
    return total if total >= 1 else 0


def print_fitted(out: Any, table: Any) -> None:
    """Print a table whose free-text columns wrap to the terminal and whose other columns stay whole.

    The table's columns that may wrap (``no_wrap`` off: error messages, templates, notes) take
    the width the terminal leaves; every other column (ids, tool names, classes, figures:
    ``no_wrap``) keeps its natural width. Rich alone would fold an id ("check_availabil / ity"),
    cut a header ("erro…") or drop a column on a narrow terminal. What gives way, in order,
    until the table fits: the free text down to its ``min_width``; the padding and the edges
    (one space between columns); the free text down to ``FREE_TEXT_FLOOR``. When even that does
    not fit (ids longer than the terminal), the lines are left long and the terminal wraps them,
    as ``print_whole`` does. A word of free text wider than its column is cut with "…" when the
    column says ``overflow="ellipsis"``.
    """
    free = [c for c in table.columns if not c.no_wrap]

    def needed() -> int:
        quick = _narrowest_width(out, table, free)
        return quick if quick is not None else measured_narrowest_width(out, table, free)

    def tight() -> None:
        table.padding, table.show_edge = (0, 0), False

    def floor() -> None:
        for c in free:
            c.min_width = min(c.min_width or FREE_TEXT_FLOOR, FREE_TEXT_FLOOR)

    width = out.width
    least = needed()
    for give_way in (tight, floor):
        if least <= width:
            break
        give_way()
        least = needed()
    out.width = max(width, least)
    try:
        out.print(table)
        if not table.show_edge:
            out.print()  # the blank line the bottom edge was
    finally:
        out.width = width


def stderr_console() -> Console:
    """Console for errors and progress (stderr), so piped output stays clean."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


_visible_control = escape_char


def plain(text: object) -> str:
    """Untrusted text with control characters made visible (no markup escaping)."""
    if text is None:
        return ""
    return _CONTROL_RE.sub(_visible_control, str(text))


def inert(text: object) -> str:
    """Untrusted text made safe to embed in rich markup."""
    from rich.markup import escape

    return escape(plain(text))


def one_line(text: object, limit: int) -> str:
    """Untrusted text on one line (whitespace runs collapsed, controls visible), cut to ``limit`` with "…".

    Not markup-safe on its own: pass the result through ``inert`` before rich.
    """
    flat = " ".join(plain(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def fmt_number(value: float | int | None, digits: int = 3) -> str:
    """A number for a table cell: ``-`` for null, ints as ints, floats rounded."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".")


def fmt_rate(value: float | None) -> str:
    """A rate as a percentage with one decimal, ``-`` for null."""
    if value is None:
        return "-"
    return f"{value * 100:.1f}%"


def _iso(value: Any) -> str:
    # The store keeps UTC as naive TIMESTAMPs; say so in the output.
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.isoformat() + "Z"
    return value.isoformat()


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return _iso(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"cannot serialise {type(value).__name__}")


_C1_OR_DEL_RE = re.compile(f"[\x7f-\x9f{_BIDI}]")


def _escape_c1(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def to_json(obj: Any) -> str:
    """Deterministic JSON text.

    The encoder escapes C0 controls (ESC included); DEL and C1 controls (a
    terminal may read U+009B as CSI) are escaped here, so no log text can act
    on the terminal a JSON report is printed to.
    """
    text = json.dumps(obj, default=_json_default, ensure_ascii=False, indent=2)
    return _C1_OR_DEL_RE.sub(_escape_c1, text)


def write_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout.

    A list (or any iterator, e.g. rows read from a cursor in batches) is
    written element by element, so a long list is never held as one text;
    the bytes are those of ``to_json(list(obj))``.
    """
    if isinstance(obj, (list, Iterator)):
        _write_json_list(iter(obj))
    else:
        sys.stdout.write(to_json(obj) + "\n")


def _write_json_list(items: Iterator[Any]) -> None:
    out = sys.stdout
    first = True
    for item in items:
        out.write("[\n" if first else ",\n")
        first = False
        out.write("\n".join("  " + line for line in to_json(item).split("\n")))
    out.write("[]\n" if first else "\n]\n")


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        value = json.dumps(value, ensure_ascii=False, default=_json_default)
    if isinstance(value, str):
        value = plain(value)
        if value.startswith(_CSV_FORMULA_START):
            value = "'" + value
    elif hasattr(value, "isoformat"):
        value = _iso(value)
    return value


def to_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """CSV text with a header; nested values as JSON, formulas defused."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_cell(row.get(col)) for col in columns])
    return buf.getvalue()


def write_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> None:
    """Print rows as CSV on stdout, row by row (the same text as ``to_csv``)."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_cell(row.get(col)) for col in columns])


def shown_path(path: str) -> str:
    """A stored absolute path as the user would type it: relative to the current folder when inside it."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd().resolve()) else path
    except (ValueError, OSError):
        return path
