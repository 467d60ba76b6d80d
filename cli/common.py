"""Helpers shared by the analysis commands: open the store, load PATHs, build the selection.

Every command that accepts PATHs opens the store with ``analysis_store``: it opens ``--db``
(default ./loopscope.duckdb, ``:memory:`` for a throwaway store), loads the
PATHs first (with a progress bar on a terminal), yields a ``Selection``
limited to the prompts of those files, so ``loopscope metrics sample_logs/``
reports on exactly those logs even when the database holds more, and always
closes the store (``loopscope.analyses.store.open_for_analysis``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopscope.analyses.selection import Selection, parse_instant, parse_tag
from loopscope.cli.render.output import shown_path, stderr_console

if TYPE_CHECKING:
    from loopscope.analyses.ingest import LoadSummary
    from loopscope.analyses.store import Analysis


def progress_bar():  # type: ignore[no-untyped-def]
    """A context manager yielding a ``progress(done, total)`` callback.

    The bar is drawn on stderr only when it is a terminal, and disappears when
    done, so piped and captured output stay clean.
    """
    from contextlib import contextmanager

    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    @contextmanager
    def _bar():  # type: ignore[no-untyped-def]
        console = stderr_console()
        if not console.is_terminal:
            yield None
            return
        with Progress(
            TextColumn("loading"),
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task("load", total=None)

            def update(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total or None)

            yield update

    return _bar()


def _warn_unreadable(summary: LoadSummary) -> None:
    """Name on stderr each file the load had to skip because it could not be read."""
    from loopscope.cli.render.output import inert

    for d in summary.details:
        if d.status == "unreadable":
            stderr_console().print(f"[yellow]skipped[/yellow] {inert(shown_path(d.path))}: {inert(d.error)}")


def selection_from_options(
    since: str | None = None,
    until: str | None = None,
    agents: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    source_ids: tuple[int, ...] | None = None,
) -> Selection:
    """A ``Selection`` from the shared --since/--until/--agent/--tag options.

    Raises:
        LoopscopeError: a date or tag that does not parse.
    """
    return Selection(
        since=parse_instant(since, option="--since") if since else None,
        until=parse_instant(until, option="--until") if until else None,
        agents=tuple(agents or ()),
        tags=tuple(parse_tag(t) for t in (tags or ())),
        source_ids=source_ids,
    )


def window_selection(
    since: str | None = None,
    until: str | None = None,
    agents: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    week: str | None = None,
) -> Selection:
    """``selection_from_options`` plus ``--week`` (an ISO week as the window).

    Call it before loading anything, so a typo fails fast.

    Raises:
        LoopscopeError: a bad date, week or tag, or --week given with --since/--until.
    """
    from loopscope.analyses.errors import LoopscopeError
    from loopscope.analyses.selection import parse_iso_week

    selection = selection_from_options(since, until, agents, tags)
    if week:
        if since or until:
            raise LoopscopeError("--week and --since/--until both set a window", hint="give --week, or --since/--until")
        start, end = parse_iso_week(week)
        selection = replace(selection, since=start, until=end)
    return selection


def print_notices(found: Sequence[Any]) -> None:
    """Print each ``notices.Notice`` on stderr (stdout stays the figures, whatever the format)."""
    from loopscope.cli.render.output import inert

    console = stderr_console()
    for n in found:
        console.print(f"[yellow]note:[/yellow] {inert(n.message)}\n  [dim]{inert(n.hint)}[/dim]")


@contextmanager
def newer_store_warnings() -> Iterator[None]:
    """Print a ``NewerStoreWarning`` (a store written by a newer loopscope, opened to read) on stderr."""
    import warnings

    from loopscope.analyses.store import NewerStoreWarning
    from loopscope.cli.render.output import inert

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NewerStoreWarning)
        yield
    for w in caught:
        if issubclass(w.category, NewerStoreWarning):
            stderr_console().print(f"[yellow]warning:[/yellow] {inert(str(w.message))}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


@contextmanager
def analysis_store(
    db: str | None,
    paths: Sequence[str | os.PathLike[str] | Path] | None,
    input_format: str = "auto",
    selection: Selection | None = None,
    reader_options: Mapping[str, Any] | None = None,
) -> Iterator[Analysis]:
    """``open_for_analysis`` with the progress bar and a line per unreadable file: yields (con, selection, summary).

    Always closes the store. Without PATHs the selection covers the whole store.
    """
    from loopscope.analyses.store import open_for_analysis

    with progress_bar() as update, newer_store_warnings(), open_for_analysis(
        db, list(paths or ()), selection=selection, input_format=input_format, reader_options=reader_options,
        progress=update,
    ) as opened:
        if opened.summary is not None:
            _warn_unreadable(opened.summary)
        yield opened
