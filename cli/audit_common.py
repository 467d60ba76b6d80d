"""Store access shared by the audit-family commands (audit, sample, review, compare, check)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from loopscope.cli.common import open_store, selection_from_options

if TYPE_CHECKING:
    import duckdb

    from loopscope.analyses.selection import Selection


@contextmanager
def open_for_analysis(
    db: str | None, paths: list[Path] | None, input_format: str = "auto"
) -> Iterator[tuple[duckdb.DuckDBPyConnection, Selection]]:
    """Open the store, loading ``paths`` first; yield it and the base selection, then close it.

    The base selection is limited to the loaded files when PATHs are given
    (``cli.common.open_store``), else empty.
    """
    con, base, _summary = open_store(db, paths, input_format)
    try:
        yield con, base
    finally:
        con.close()


def window_selection(
    base: Selection,
    *,
    since: str | None = None,
    until: str | None = None,
    agent: list[str] | None = None,
    tag: list[str] | None = None,
    week: str | None = None,
) -> Selection:
    """The shared --since/--until/--agent/--tag options (and --week) over ``base``'s files.

    Raises:
        LoopscopeError: a bad date, week or tag, or --week given with --since/--until.
    """
    from dataclasses import replace

    from loopscope.analyses.errors import LoopscopeError
    from loopscope.analyses.selection import parse_iso_week

    sel = selection_from_options(since, until, agent, tag, base.source_ids)
    if week:
        if since or until:
            raise LoopscopeError("--week and --since/--until both set a window", hint="give --week, or --since/--until")
        start, end = parse_iso_week(week)
        sel = replace(sel, since=start, until=end)
    return sel
