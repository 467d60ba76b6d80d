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
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from loopscope.analyses.selection import Selection, parse_instant, parse_tag
from loopscope.cli.render.output import shown_path, stderr_console

if TYPE_CHECKING:
    from loopscope.analyses.ingest import LoadSummary
    from loopscope.analyses.store import Analysis


PROGRESS_DELAY_ENV = "LOOPSCOPE_PROGRESS_DELAY"
"""Seconds of work before a progress display appears (default 1; tests set 0)."""
PROGRESS_DELAY_S = 1.0


def show_progress() -> bool:
    """Progress displays are for a person at a terminal: stderr is a TTY, not dumb, not under CI."""
    if os.environ.get("CI") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return False


def _progress_delay() -> float:
    try:
        return max(0.0, float(os.environ.get(PROGRESS_DELAY_ENV, PROGRESS_DELAY_S)))
    except ValueError:
        return PROGRESS_DELAY_S


class _LoadBar:
    """The loading bar: ``update(done, total)`` from the loader; appears once loading has taken
    ``_progress_delay()`` seconds (a load of a few files never flickers), disappears when stopped."""

    def __init__(self) -> None:
        self._started_at = time.monotonic()
        self._delay = _progress_delay()
        self._bar: Any = None
        self._task: Any = None
        self._done = False

    def update(self, done: int, total: int) -> None:
        if self._done:
            return
        if self._bar is None:
            if time.monotonic() - self._started_at < self._delay:
                return
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("loading"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                                 console=stderr_console(), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("load", total=None)
        self._bar.update(self._task, completed=done, total=total or None)

    def stop(self) -> None:
        self._done = True
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


@contextmanager
def progress_bar() -> Iterator[_LoadBar | None]:
    """A context manager yielding the loading bar (its ``update(done, total)`` is the loader's callback), or None.

    The bar is drawn on stderr only for a person at a terminal (``show_progress``), once the
    load has run for about a second, and disappears when done: piped and captured output stay clean.
    """
    if not show_progress():
        yield None
        return
    bar = _LoadBar()
    try:
        yield bar
    finally:
        bar.stop()


@contextmanager
def working(label: str) -> Iterator[None]:
    """A transient spinner on stderr (``label``) while the body runs, if it runs longer than about a second.

    Only for a person at a terminal (``show_progress``): nothing at all on a pipe or under CI.
    The spinner is started by a timer thread, so a quick analysis never draws it.
    """
    if not show_progress():
        yield
        return
    import threading

    lock = threading.Lock()
    state: dict[str, Any] = {"started": False, "done": False, "status": None}

    def start() -> None:
        # rich's live display is imported and made only when the spinner shows (a quick run never does)
        from rich.status import Status

        with lock:
            if not state["done"]:
                state["status"] = Status(label, console=stderr_console(), spinner="dots")
                state["status"].start()
                state["started"] = True

    timer = threading.Timer(_progress_delay(), start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["started"]:
                state["status"].stop()


def _warn_unreadable(summary: LoadSummary) -> None:
    """Name on stderr each file the load had to skip because it could not be read, and each it replaced or left out as superseded."""
    from loopscope.cli.render.output import inert

    for d in summary.details:
        if d.status == "unreadable":
            stderr_console().print(f"[yellow]skipped[/yellow] {inert(shown_path(d.path))}: {inert(d.error)}")
        elif d.note:
            word = "not loaded" if d.status == "superseded" else d.status
            stderr_console().print(f"[yellow]{word}[/yellow] {inert(shown_path(d.path))}: {inert(d.note)}")


NameQuarantined = Literal["all", "none"]
"""Whether an analysis names on stderr the files of its PATHs with quarantined lines (``analysis_store``)."""
QUARANTINE_FILES_NAMED = 3
"""How many files with quarantined lines an analysis names on stderr (the rest as a count)."""
KEEP_QUARANTINE_HINT = "to list them, load into a file (--db loopscope.duckdb) and run loopscope quarantine"
"""Where quarantined lines can be seen when the store was ``:memory:`` (gone with the command)."""


def _warn_quarantined(summary: LoadSummary, db: str | None, con: Any) -> None:
    """Name on stderr each file of the PATHs with lines in quarantine: they are not in the figures that follow.

    On every run, not only the one that set them aside: an unchanged file is not read again, but
    its figures leave out the same lines (the count is the store's, so a grown file's earlier ones count).
    """
    from loopscope.analyses.quarantine import quarantined_per_source
    from loopscope.analyses.store import default_db_path
    from loopscope.cli.render.output import inert

    files = {d.source_id: d for d in summary.details if d.source_id is not None}  # a file given twice: once
    counts = quarantined_per_source(con, list(files))
    bad = [(d, counts[i]) for i, d in files.items() if counts.get(i)]
    if not bad:
        return
    store = db or default_db_path()
    err = stderr_console()
    for d, n in bad[:QUARANTINE_FILES_NAMED]:
        lines = f"{n} bad line{'s' if n != 1 else ''}"
        if store == ":memory:":
            where = KEEP_QUARANTINE_HINT
        else:
            where = f"see them with: loopscope quarantine --db {inert(store)} --file {inert(Path(d.path).name)}"
        err.print(f"[yellow]quarantined[/yellow] {inert(shown_path(d.path))}: {lines}, not in these figures; {where}")
    if len(bad) > QUARANTINE_FILES_NAMED:
        more = len(bad) - QUARANTINE_FILES_NAMED
        err.print(f"[yellow]quarantined[/yellow] lines in {more} more file{'s' if more != 1 else ''} "
                  "(loopscope quarantine lists them all)")


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


def print_notices(found: Sequence[Any], db: str | None = None) -> None:
    """Print each ``notices.Notice`` on stderr (stdout stays the figures, whatever the format).

    ``db``: the store the command ran on (``--db``), for the ``loopscope quarantine`` a
    ``quarantined_lines`` hint gives to reach the same store.
    """
    if not found:
        return
    from loopscope.cli.render.output import inert

    console = stderr_console()
    # Files inside the current folder as the user would type them (the JSON keeps the stored path).
    here = os.path.join(str(Path.cwd().resolve()), "")
    for n in found:
        message = n.message.replace(here, "") if len(here) > 1 else n.message
        console.print(f"[yellow]note:[/yellow] {inert(message)}\n  [dim]{inert(_hint_for_store(n, db))}[/dim]")


def selection_notices(con: Any, selection: Any, paths_given: bool) -> list[Any]:
    """The notices of ``metrics`` for a command whose result would mislead without them (``unrecovered``, ``check``).

    "No unrecovered error" or a passed gate over results whose error flag is missing, or over
    prompts without timestamps, says more than the data does. With PATHs the files with quarantined
    lines are named already (``analysis_store``), so that notice is left out. Print them with
    ``print_notices`` once the store's spinner is gone.
    """
    from loopscope.analyses.notices import notices

    return [n for n in notices(con, selection) if not (paths_given and n.kind == "quarantined_lines")]


def _hint_for_store(notice: Any, db: str | None) -> str:
    """A ``quarantined_lines`` hint's command, pointed at the store the command ran on."""
    from loopscope.analyses.store import default_db_path

    if notice.kind != "quarantined_lines" or db is None or db == default_db_path():
        return str(notice.hint)
    if db == ":memory:":
        return "the store is gone when the command ends: " + KEEP_QUARANTINE_HINT
    return str(notice.hint).replace("loopscope quarantine ", f"loopscope quarantine --db {db} ", 1)


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
    require_records: bool = True,
    name_quarantined: NameQuarantined = "all",
    require_store: bool = True,
) -> Iterator[Analysis]:
    """``open_for_analysis`` with the progress bar and a line per unreadable file: yields (con, selection, summary).

    ``name_quarantined``: a line on stderr per file of the PATHs with lines in quarantine, now or
    from an earlier load (``all``), or
    ``none``: ``load`` prints them in its own summary, ``metrics`` and ``audit`` in their
    ``quarantined_lines`` notice.

    The loading bar is gone before the body runs. Always closes the store. Without PATHs the
    selection covers the whole store.
    """
    from loopscope.analyses.store import open_for_analysis

    with progress_bar() as bar, newer_store_warnings(), open_for_analysis(
        db, list(paths or ()), selection=selection, input_format=input_format, reader_options=reader_options,
        progress=None if bar is None else bar.update, require_records=require_records, require_store=require_store,
    ) as opened:
        if bar is not None:
            bar.stop()  # loading is over: the analysis may show its own spinner
        if opened.summary is not None:
            _warn_unreadable(opened.summary)
            if name_quarantined != "none":
                _warn_quarantined(opened.summary, None if db is None else str(db), opened.con)
        yield opened
