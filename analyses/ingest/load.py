"""Load log files into the store: idempotent, nothing lost, parsed by DuckDB.

``load_paths(con, paths)`` expands PATHs (files, directories, globs), picks a
reader per file and loads each file in its own transaction:

- loopscope records (JSONL, optionally gzipped) are read by DuckDB, a whole
  new file at once or blocks of whole lines (``jsonl``). Lines exactly as the
  collector writes them go straight in (``fast_sql``); the rest through the
  record validator (``records``). Bad lines go to ``quarantine`` with file,
  line number, reason and the raw text; unknown fields are kept in ``extra``.
- other formats (``messages``, ``otlp``) are read by their reader
  (``messages``, ``otlp``); the records it returns are written to a temporary JSONL file
  and loaded through the very same SQL, so every record meets one validator.

Idempotency. A records file is known by the hash of its first bytes
(``sources.head_hash`` over ``head_len`` bytes) and how far it was loaded
(``bytes_loaded``): loading it again reads only what was appended since; a
renamed (rotated) copy has the same head, so it resumes the same source
instead of counting its lines twice. A file edited in its first 4 KiB (a new head)
at a path the store loaded a records source from replaces that source when most
of the records are the same (``_replace_earlier_versions``); the replaced source's
row stays, ``superseded_by`` the new one, so an older copy of the file is not
loaded again (``superseded``). A file read by another reader is known by
the hash of its whole content: unchanged -> skipped, changed -> that source's
rows are replaced.

``seq`` numbers records in input order over all loads (file order, then line),
which breaks ``ts`` ties in the replay definition.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from loopscope.analyses.ingest import records as sql
from loopscope.analyses.ingest.readahead import ReadAhead
from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.store import SMALL_LOAD_BYTES, transaction
from loopscope.collectors.redact import clean_error_text
from loopscope.analyses.store.facts import INVALIDATE_FACTS_SQL
from loopscope.analyses.ingest.files import (
    HEAD_BYTES,
    OverlongLine,
    StreamBreak,
    UnreadableFile,
    content_hash,
    expand_paths,
    is_gzip,
    iter_chunks,
    read_head,
    ends_before,
    resume_point,
    sha256,
)
from loopscope.analyses.ingest.jsonl import (
    Counts,
    LineSpan,
    MalformedLine,
    Target,
    WholeFile,
    check_and_insert,
    ingest_chunk,
    quietly,
    read_in_blocks,
    read_whole_file,
    threads_known,
)
from loopscope.analyses.ingest.formats import INPUT_FORMATS, ReaderOutput, detect_format, reader_module

LOAD_MEMORY_LIMIT = "1536MB"
"""DuckDB's memory cap during a load: with the rest of the process on top (about 130 MiB) a 10M load peaks at 1.6 GB, under the 2 GiB target."""
SET_MEMORY_LIMIT_SQL = f"SET memory_limit = '{LOAD_MEMORY_LIMIT}'"
RESET_MEMORY_LIMIT_SQL = "RESET memory_limit"
"""After a load, when ``store.memory_limit`` gives no limit (DuckDB's default); otherwise that limit is set again."""
KEEP_BLOCK_MEMORY_SQL = f"SET block_allocator_memory = '{LOAD_MEMORY_LIMIT}'"
"""DuckDB keeps the memory of the blocks it frees (up to the load's cap) and hands it out again.

Each file's tables of lines and the inserts' buffers are fresh memory otherwise: freed after one
file, faulted in page by page for the next (about 320,000 page faults per million records). Keeping
the blocks saves 13% of those faults and about 3.5% of the 10M load's CPU (docs/loading.md, the
tenth pass). DuckDB cannot lower this setting again: the instance holds up to that memory until
its connections close (a command's process ends; a notebook that loaded keeps it, beside the
buffer pool DuckDB keeps anyway). A larger value set by the caller stays (the statement is refused,
quietly).
"""
# Each file's inserts end in partly filled row groups; DuckDB's checkpoint
# merges them ("vacuum"), on one core, 0.2 s every second 1M-record file. The
# load checkpoints once at its end without merging: the row groups stay as
# written (a few partly filled ones per file; scans do not care).
NO_VACUUM_SQL = "SET max_vacuum_tasks = 0"
RESET_VACUUM_SQL = "RESET max_vacuum_tasks"
CHECKPOINT_SQL = "CHECKPOINT"
# load --tag K=V: the tags merged over the tags each new record of one source carries (the user's win).
ADD_TAGS_SQL = """
UPDATE tool_calls SET tags = json_merge_patch(coalesce(tags, '{}'::JSON), ?::JSON) WHERE source_id = ? AND seq > ?;
UPDATE loop_exits SET tags = json_merge_patch(coalesce(tags, '{}'::JSON), ?::JSON) WHERE source_id = ? AND seq > ?
"""

ProgressFn = Callable[[int, int], None]
"""Called as ``progress(bytes_done, bytes_total)`` while loading."""

SOURCES_SQL = """
SELECT source_id, path, head_hash, head_len, bytes_loaded, lines_loaded, superseded_by
FROM sources WHERE input_format = ?
"""
NEXT_SOURCE_ID_SQL = "SELECT coalesce(max(source_id), 0) + 1 FROM sources"
INSERT_SOURCE_SQL = """
INSERT INTO sources (source_id, path, input_format, head_hash, head_len, bytes_loaded, lines_loaded)
VALUES (?, ?, ?, ?, ?, 0, 0)
"""
UPDATE_SOURCE_SQL = """
UPDATE sources
SET path = ?, head_hash = ?, head_len = ?, bytes_loaded = ?, lines_loaded = ?, last_loaded_at = current_timestamp
WHERE source_id = ?
"""
SOURCE_ROWS_SQL = """
SELECT (SELECT count(*) FROM tool_calls WHERE source_id = ?) + (SELECT count(*) FROM loop_exits WHERE source_id = ?)
"""
CLEAR_QUARANTINE_FROM_SQL = "DELETE FROM quarantine WHERE source_id = ? AND line_no >= ?"
DELETE_SOURCE_ROWS_SQL = """
DELETE FROM tool_calls WHERE source_id = $1;
DELETE FROM loop_exits WHERE source_id = $1;
DELETE FROM quarantine WHERE source_id = $1;
DELETE FROM protocol_violations WHERE source_id = $1;
"""
# The records two sources share ($1, $2), by an identity that does not depend on the line number
# (an edit may add or remove lines): kind, conversation, prompt, tool call id and step (tool calls),
# timestamp. INTERSECT ALL counts each shared record once per copy both sides hold. Then each side's records.
SHARED_RECORDS_SQL = """
SELECT
    (SELECT count(*) FROM (
        SELECT conversation_id, prompt_id, tool_call_id, step, ts FROM tool_calls WHERE source_id = $1
        INTERSECT ALL
        SELECT conversation_id, prompt_id, tool_call_id, step, ts FROM tool_calls WHERE source_id = $2))
    + (SELECT count(*) FROM (
        SELECT conversation_id, prompt_id, ts FROM loop_exits WHERE source_id = $1
        INTERSECT ALL
        SELECT conversation_id, prompt_id, ts FROM loop_exits WHERE source_id = $2)),
    (SELECT count(*) FROM tool_calls WHERE source_id = $1) + (SELECT count(*) FROM loop_exits WHERE source_id = $1),
    (SELECT count(*) FROM tool_calls WHERE source_id = $2) + (SELECT count(*) FROM loop_exits WHERE source_id = $2)
"""
SUPERSEDE_SOURCE_SQL = "UPDATE sources SET superseded_by = ? WHERE source_id = ?"
INSERT_VIOLATION_SQL = """
INSERT INTO protocol_violations (source_id, conversation_id, prompt_id, tool_call_id, kind, detail)
VALUES (?, ?, ?, ?, ?, ?)
"""
# Error text of the rows a load just stored (seq above the load's base), each distinct text once.
NEW_ERROR_TEXTS_SQL = """
SELECT DISTINCT error_message FROM (
    SELECT error_message FROM tool_calls WHERE source_id = $1 AND seq > $2 AND error_message IS NOT NULL
    UNION ALL
    SELECT error_message FROM loop_exits WHERE source_id = $1 AND seq > $2 AND error_message IS NOT NULL
)
"""
# ?1 the texts as stored, ?2 the same texts redacted.
CREATE_REDACTED_SQL = """
CREATE OR REPLACE TEMP TABLE _ls_redacted AS
SELECT unnest(?::VARCHAR[]) AS stored, unnest(?::VARCHAR[]) AS redacted
"""
APPLY_REDACTED_SQL = """
UPDATE tool_calls SET error_message = r.redacted FROM _ls_redacted r
WHERE tool_calls.source_id = $1 AND tool_calls.seq > $2 AND tool_calls.error_message = r.stored;
UPDATE loop_exits SET error_message = r.redacted FROM _ls_redacted r
WHERE loop_exits.source_id = $1 AND loop_exits.seq > $2 AND loop_exits.error_message = r.stored;
"""
DROP_REDACTED_SQL = "DROP TABLE IF EXISTS _ls_redacted"
READER_QUARANTINE_SQL = """
UPDATE quarantine SET reason = ? || reason, line_no = NULL WHERE source_id = ?
"""
READER_LINES_SQL = """
UPDATE tool_calls SET line_no = NULL WHERE source_id = $1;
UPDATE loop_exits SET line_no = NULL WHERE source_id = $1;
"""


@dataclass
class FileResult:
    """What happened to one file.

    ``status``: ``new`` (first load), ``grown`` (appended lines loaded),
    ``rotated`` (a renamed copy of a known file; only its new lines loaded),
    ``unchanged`` (nothing new), ``replaced`` (content changed: a non-records
    file, a records file cut shorter, or one edited in its first 4 KiB, is
    re-read and its earlier rows go; ``note`` says which), ``superseded`` (an
    earlier version of a records file whose edited version replaced it: not
    loaded again; ``source_id`` is the source that holds the file now),
    ``empty``, ``unreadable`` (the operating system refused to read it;
    ``error`` says why; nothing of it is loaded).
    """

    path: str
    input_format: str
    status: str
    source_id: int | None = None
    loaded: int = 0
    skipped: int = 0
    quarantined: int = 0
    tool_calls: int = 0
    loop_exits: int = 0
    protocol_violations: int = 0
    error: str | None = None
    skipped_types: dict[str, int] = field(default_factory=dict)
    """Lines of types the reader does not know, skipped (not errors), per type."""
    note: str | None = None
    """What the user should know about a ``replaced`` or ``superseded`` file, in words."""


@dataclass
class LoadSummary:
    """Totals of one ``load_paths`` call; ``details`` has one entry per file."""

    files: int = 0
    loaded: int = 0
    skipped: int = 0
    quarantined: int = 0
    tool_calls: int = 0
    loop_exits: int = 0
    protocol_violations: int = 0
    unreadable: int = 0
    skipped_types: dict[str, int] = field(default_factory=dict)
    """Lines of types a reader does not know, skipped and counted per type (all files)."""
    ignored: list[str] = field(default_factory=list)
    """Files inside the named folders not loaded because their names are not log names (README.md, ...)."""
    source_ids: tuple[int, ...] = ()
    details: list[FileResult] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The summary as plain data (``--format json``)."""
        return {
            "files": self.files,
            "loaded": self.loaded,
            "skipped": self.skipped,
            "quarantined": self.quarantined,
            "tool_calls": self.tool_calls,
            "loop_exits": self.loop_exits,
            "protocol_violations": self.protocol_violations,
            "unreadable": self.unreadable,
            "skipped_types": dict(self.skipped_types),
            "ignored": list(self.ignored),
            "source_ids": list(self.source_ids),
            "details": [vars(d) for d in self.details],
        }


def load_paths(
    con: duckdb.DuckDBPyConnection,
    paths: list[str | os.PathLike[str]] | tuple[str | os.PathLike[str], ...],
    *,
    input_format: str = "auto",
    reader_options: Mapping[str, Any] | None = None,
    progress: ProgressFn | None = None,
) -> LoadSummary:
    """Load every file named by ``paths`` into the store behind ``con``.

    Args:
        con: a connection from ``store.connect`` (migrated, TimeZone UTC).
        paths: files, directories (searched recursively for ``*.jsonl``,
            ``*.jsonl.gz``, ``*.json``, ``*.ndjson`` and rotated ``*.jsonl.1``)
            and glob patterns.
        input_format: ``auto`` (detect per file), ``records``, ``messages``,
            ``otlp``, ``claude-code``, ``codex`` or ``openhands``.
        reader_options: passed to the reader of non-records formats; ``tags``
            (a dict, ``load --tag``) is also set on every record loaded now, of
            any format, over the tags the records carry.
        progress: called with (bytes done, bytes total) as files are read.

    Returns:
        The totals and a ``FileResult`` per file. ``source_ids`` are the
        sources of every named file, loaded now or before.

    Raises:
        LoopscopeError: a path does not exist or a format's reader is
            missing. Bad lines never raise, and neither does a file the
            operating system will not read: it gets status ``unreadable``
            (counted in ``summary.unreadable``) and the other files load.
    """
    if input_format not in INPUT_FORMATS:
        raise LoopscopeError(f"unknown input format {input_format!r}", hint="use auto, records, messages, otlp, claude-code, codex, gemini-cli, openhands or smolagents")
    ignored: list[Path] = []
    files = expand_paths(list(paths), ignored)
    summary = _unchanged(con, files, input_format, progress)
    if summary is not None:  # nothing to read: the store holds every file to its end
        summary.ignored = [_display(p) for p in ignored]
        return summary
    small = _small_input(files)
    # DuckDB would use up to 80% of RAM before spilling to disk; a load keeps
    # its working set under LOAD_MEMORY_LIMIT instead (small input needs no cap:
    # the connection's own limit stays).
    if not small:
        con.execute(SET_MEMORY_LIMIT_SQL)
        quietly(con, KEEP_BLOCK_MEMORY_SQL)
    # A store in memory is never checkpointed: nothing to write, no row groups to keep from merging.
    on_disk = not (small and _in_memory(con))
    no_vacuum = on_disk and quietly(con, NO_VACUUM_SQL)  # (a setting older DuckDB versions lack)
    try:
        with threads_known(con):
            # Several large files: the next one is read while the current one finishes on one thread.
            ahead = None if small else ReadAhead.open(con, files, _wants_whole_file(input_format))
            try:
                summary = _load_files(con, files, input_format, dict(reader_options or {}), progress, ahead)
            finally:
                if ahead is not None:
                    ahead.close()
        if no_vacuum and (summary.loaded or summary.quarantined):
            quietly(con, CHECKPOINT_SQL)  # refused while another connection writes: then the close checkpoints
    finally:
        if not small:
            _restore_memory_limit(con)
        if no_vacuum:
            con.execute(RESET_VACUUM_SQL)
    summary.ignored = [_display(p) for p in ignored]
    return summary


SMALL_INPUT_BYTES = SMALL_LOAD_BYTES
"""Input of at most this many bytes (plain files; some 6,000 records) loads under the connection's own memory limit.

Its working set is a few MB: lowering the limit to ``LOAD_MEMORY_LIMIT`` and restoring it are two
statements for nothing (``store.open_for_analysis`` runs such data on one thread). A gzip file
counts as large whatever its size (it may decompress to 1 GiB).
"""
IN_MEMORY_SQL = "SELECT path IS NULL FROM duckdb_databases() WHERE database_name = current_database()"


def _small_input(files: list[Path]) -> bool:
    """Whether ``files`` add up to at most ``SMALL_INPUT_BYTES``, none of them gzip."""
    budget = SMALL_INPUT_BYTES
    for path in files:
        budget -= _size(path)
        if budget < 0:
            return False
        try:
            if is_gzip(path):
                return False
        except UnreadableFile:
            continue  # the load reports it and reads nothing of it
    return True


def _in_memory(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con``'s database lives in memory (``:memory:``): it dies with its connections."""
    try:
        row = con.execute(IN_MEMORY_SQL).fetchone()
    except duckdb.Error:
        return False
    return bool(row and row[0])


def _restore_memory_limit(con: duckdb.DuckDBPyConnection) -> None:
    """The limit ``store.connect`` sets (a RESET would give DuckDB's default, 80% of memory, to what follows)."""
    from loopscope.analyses.store import SET_MEMORY_LIMIT_SQL as SET_LIMIT_SQL, memory_limit

    limit = memory_limit()
    if limit:
        con.execute(SET_LIMIT_SQL, [limit])
    else:
        con.execute(RESET_MEMORY_LIMIT_SQL)


def _load_files(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    input_format: str,
    reader_options: dict[str, Any],
    progress: ProgressFn | None,
    ahead: ReadAhead | None,
) -> LoadSummary:
    """Load ``files`` one by one (``ahead``: reading each while the one before finishes)."""
    total = sum(_size(p) for p in files)
    done = 0
    if progress is not None:
        progress(0, total)
    summary = LoadSummary()
    ids: list[int] = []
    for index, path in enumerate(files):
        if ahead is not None:
            ahead.arrive(index)

        def tick(n: int, _base: int = done) -> None:
            if progress is not None:
                progress(min(_base + n, total), total)

        try:
            result = _load_one(con, path, input_format, reader_options, tick, ahead)
        except UnreadableFile as exc:
            # One file the system will not read does not stop the others.
            result = FileResult(path=_display(path), input_format=input_format, status="unreadable", error=exc.message)
            summary.unreadable += 1
        done += _size(path)
        if progress is not None:
            progress(done, total)
        summary.details.append(result)
        summary.files += 1
        for name in ("loaded", "skipped", "quarantined", "tool_calls", "loop_exits", "protocol_violations"):
            setattr(summary, name, getattr(summary, name) + getattr(result, name))
        for type_name, count in result.skipped_types.items():
            summary.skipped_types[type_name] = summary.skipped_types.get(type_name, 0) + count
        if result.source_id is not None and result.source_id not in ids:
            ids.append(result.source_id)
    summary.source_ids = tuple(ids)
    # The facts (store.facts) are not built here: the first analysis brings them up to date,
    # for the conversations the new records touch only when it can (docs/loading.md, fifth pass).
    return summary


def _load_one(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    input_format: str,
    reader_options: dict[str, Any],
    tick: Callable[[int], None],
    ahead: ReadAhead | None = None,
) -> FileResult:
    """Load one file in its own transaction."""
    head = read_head(path)
    fmt = detect_format(path, head) if input_format == "auto" else input_format
    known, fast, lineage = None, None, Lineage(None)
    if fmt == "records":
        lineage = _lineage(con, path, head)
        known = lineage.known
        if lineage.superseded is not None and lineage.superseded.path != _display(path) and head.lstrip(b"\xef\xbb\xbf"):
            return _superseded(path, lineage)
        # The fast reader runs before the transaction: a file it cannot
        # read fails its statement only, and the block path takes over.
        if known is None and head.lstrip(b"\xef\xbb\xbf"):
            fast = ahead.take(path) if ahead is not None else None
            if fast is None:
                fast = read_whole_file(con, path)
    # A whole file is parsed strictly first; if a line of it is no JSON at all, that parse fails and
    # the file's transaction rolls back, and the file loads again with the tolerant parse, which
    # leaves that line to the validator (jsonl.Target.tolerant).
    for tolerant in (False, True):
        try:
            with transaction(con):
                # seq_base: the highest seq before this file's rows (theirs are above it)
                if fmt == "records":
                    result, seq_base = _load_records_file(
                        con, path, head, known, fast, tick, ahead, lineage.earlier, tolerant
                    )
                else:
                    result, seq_base = _load_reader_file(con, path, fmt, reader_options)
                tags = reader_options.get("tags")
                if tags and result.loaded and result.source_id is not None:
                    patch = json.dumps({str(k): str(v) for k, v in tags.items()}, ensure_ascii=False)
                    _execute_each(con, ADD_TAGS_SQL, [patch, result.source_id, seq_base])
                return result
        except MalformedLine:
            continue
    raise AssertionError("the tolerant parse raises no MalformedLine")


def _wants_whole_file(input_format: str) -> Callable[[duckdb.DuckDBPyConnection, Path], bool]:
    """Whether ``_load_one`` will read this file whole (asked ahead of it, on the read-ahead's connection)."""

    def wanted(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
        head = read_head(path)
        fmt = detect_format(path, head) if input_format == "auto" else input_format
        return fmt == "records" and bool(head.lstrip(b"\xef\xbb\xbf")) and _find_source(con, path, head) is None

    return wanted


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _display(path: Path) -> str:
    return str(path.resolve())


def _new_source(con: duckdb.DuckDBPyConnection, path: Path, fmt: str, head_hash: str, head_len: int | None) -> int:
    row = con.execute(NEXT_SOURCE_ID_SQL).fetchone()
    source_id = int(row[0]) if row else 1
    con.execute(INSERT_SOURCE_SQL, [source_id, _display(path), fmt, head_hash, head_len])
    return source_id


@dataclass(frozen=True)
class KnownSource:
    """A records source already in the store that a file continues (same head bytes)."""

    source_id: int
    path: str
    bytes_loaded: int
    lines_loaded: int


@dataclass(frozen=True)
class Lineage:
    """What the store knows of a records file, from one read of ``sources``.

    ``known``: the source it continues (same head bytes). Else ``earlier``: the sources in use
    loaded from this very path (another head: the file may have been edited in its first 4 KiB,
    or rotated), and ``superseded``: a source with this head that an edited version of the file
    replaced, with ``successor``, the source in use that holds that file now.
    """

    known: KnownSource | None
    earlier: tuple[int, ...] = ()
    superseded: KnownSource | None = None
    successor: int | None = None


def _find_source(con: duckdb.DuckDBPyConnection, path: Path, head: bytes) -> KnownSource | None:
    """The known records source this file continues, if any (same head bytes)."""
    return _match_source(con.execute(SOURCES_SQL, ["records"]).fetchall(), path, head)


def _lineage(con: duckdb.DuckDBPyConnection, path: Path, head: bytes) -> Lineage:
    """``Lineage`` of a records file: the same one query as ``_find_source``, nothing more."""
    rows = con.execute(SOURCES_SQL, ["records"]).fetchall()
    known = _match_source(rows, path, head)
    if known is not None or not rows:
        return Lineage(known)
    here = _display(path)
    earlier = tuple(int(r[0]) for r in rows if r[1] == here and r[6] is None)
    old = _match_source(rows, path, head, superseded=True)
    if old is None:
        return Lineage(None, earlier)
    successor_of = {int(r[0]): r[6] for r in rows}
    successor, seen = old.source_id, set()
    while successor_of.get(successor) is not None and successor not in seen:
        seen.add(successor)
        successor = int(successor_of[successor])
    if old.path == here and successor not in earlier and successor_of.get(successor) is None:
        earlier += (successor,)  # restored at its path after it moved on (rotated): still the file's latest
    return Lineage(None, earlier, old, successor)


def _match_source(rows: list[Any], path: Path, head: bytes, *, superseded: bool = False) -> KnownSource | None:
    """The source among ``rows`` (``SOURCES_SQL``'s) this file continues, if any (same head bytes).

    Only sources in use, or with ``superseded`` only those an edited version replaced.
    """
    hashes: dict[int, str] = {}
    matches = []
    for row in rows:
        if (row[6] is not None) != superseded:
            continue
        head_len = row[3]
        if head_len is None or head_len <= 0 or head_len > len(head):
            continue
        if head_len not in hashes:
            hashes[head_len] = sha256(head[:head_len])
        if hashes[head_len] == row[2]:
            matches.append(row)
    if not matches:
        return None
    here = _display(path)
    # Prefer the source at this very path, then the one loaded furthest.
    matches.sort(key=lambda r: (r[1] != here, -r[4]))
    source_id, known_path, _hash, _len, bytes_loaded, lines_loaded = matches[0][:6]
    return KnownSource(int(source_id), known_path, int(bytes_loaded), int(lines_loaded))


# Rows per source, for sources known unchanged (``FileResult.skipped``); ?1 the source ids.
ROWS_PER_SOURCE_SQL = """
SELECT source_id, count(*) FROM (
    SELECT source_id FROM tool_calls WHERE list_contains(?1, source_id)
    UNION ALL
    SELECT source_id FROM loop_exits WHERE list_contains(?1, source_id)
) GROUP BY source_id
"""


def _unchanged(
    con: duckdb.DuckDBPyConnection, files: list[Path], input_format: str, progress: ProgressFn | None
) -> LoadSummary | None:
    """The summary of loading ``files`` when each is a plain records file the store holds to its end, else None.

    What every analysis with PATHs meets on its second run: the per-file path
    would find each file's source, check there is nothing after its end in a
    transaction, and rewrite its ``sources`` row unchanged (a dozen statements
    and a commit per file, about 30 ms on sample_logs/). Here: the file's size
    and head against one read of ``sources`` and the rows per source in one query.
    Nothing is written: facts that are stale (not built from these records) are
    left to the first analysis, which brings them up to date (``facts.ensure_facts``),
    and ``last_loaded_at`` keeps the time of the last load that read something. Anything else (gzip, whose offsets count decompressed
    bytes; another format; a new, grown, rotated, empty or unreadable file)
    takes the per-file path.
    """
    if not files or input_format not in ("auto", "records"):
        return None
    known: list[tuple[Path, int, KnownSource]] = []
    rows: list[Any] | None = None
    for path in files:
        try:
            size = path.stat().st_size
            if is_gzip(path):
                return None
            head = read_head(path)
        except (OSError, UnreadableFile):
            return None
        if not head.lstrip(b"\xef\xbb\xbf"):
            return None
        if input_format == "auto" and detect_format(path, head) != "records":
            return None
        if rows is None:
            rows = con.execute(SOURCES_SQL, ["records"]).fetchall()
        source = _match_source(rows, path, head)
        if source is None or source.path != _display(path) or source.bytes_loaded != size:
            return None
        known.append((path, size, source))
    ids = list(dict.fromkeys(s.source_id for _p, _size, s in known))
    counted = dict(con.execute(ROWS_PER_SOURCE_SQL, [ids]).fetchall())
    total = sum(size for _p, size, _s in known)
    if progress is not None:
        progress(0, total)
    summary = LoadSummary(source_ids=tuple(ids))
    done = 0
    for path, size, source in known:
        skipped = int(counted.get(source.source_id, 0))
        summary.details.append(FileResult(path=source.path, input_format="records", status="unchanged",
                                          source_id=source.source_id, skipped=skipped))
        summary.files += 1
        summary.skipped += skipped
        done += size
        if progress is not None:
            progress(done, total)
    return summary


def _load_records_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    head: bytes,
    known: KnownSource | None,
    fast: WholeFile | None,
    tick: Callable[[int], None],
    ahead: ReadAhead | None = None,
    earlier: tuple[int, ...] = (),
    tolerant: bool = False,
) -> tuple[FileResult, int]:
    """Load a records file (in the caller's transaction); also returns the seq its rows are numbered above.

    ``earlier``: for a file the store does not know (``known`` None), the sources in use loaded from
    its path; one whose records are mostly this file's is an earlier version of it, replaced.
    ``tolerant``: read whole, the file is parsed so that a line which is no JSON cannot fail the
    statement (``jsonl.Target.tolerant``); else such a line raises ``MalformedLine``.
    """
    display = _display(path)
    result = FileResult(path=display, input_format="records", status="new")
    body = head.lstrip(b"\xef\xbb\xbf")
    if not body:
        result.status = "empty"
        return result, 0
    if known is None:
        source_id = _new_source(con, path, "records", "", None)
        start_offset, lines_before = 0, 0
    elif known.path == display and ends_before(path, known.bytes_loaded):
        # Shorter than what was loaded from it: cut or rewritten in place (lines deleted, a bad
        # line fixed by hand), not appended to. Its rows are replaced, as another format's are;
        # the facts are rebuilt (records they saw are gone, and their seqs may be given again).
        source_id, start_offset, lines_before = known.source_id, 0, 0
        _execute_each(con, DELETE_SOURCE_ROWS_SQL, [source_id])
        con.execute(INVALIDATE_FACTS_SQL)
        result.status = "replaced"
        result.note = "shorter than what was loaded from it (lines deleted or rewritten): its earlier records were " \
                      "replaced by the file as it is now"
    else:
        source_id, start_offset, lines_before = known.source_id, known.bytes_loaded, known.lines_loaded
        result.status = "grown" if known.path == display else "rotated"
        counted = con.execute(SOURCE_ROWS_SQL, [source_id, source_id]).fetchone()
        result.skipped = int(counted[0]) if counted else 0
        at_line_start, more = resume_point(path, start_offset) if start_offset else (True, True)
        if more:  # nothing new: the file is left as it is (numbers and quarantine too)
            # A complete last record written without its newline was loaded;
            # the newline the writer appends later ends that same line, so
            # numbering resumes on it rather than after it.
            if not at_line_start:
                lines_before -= 1
            # Lines after the resume point are read again: drop what an earlier
            # load quarantined there (a truncated last line that may be whole now).
            con.execute(CLEAR_QUARANTINE_FROM_SQL, [source_id, lines_before + 1])
    result.source_id = source_id
    seq_row = con.execute(sql.MAX_SEQ_SQL).fetchone()
    seq_base = int(seq_row[0]) if seq_row else 0
    if fast is not None:
        target = Target(source_id, display, seq_base, ahead.read_next if ahead is not None else None, tolerant)
        counts = check_and_insert(con, fast.lines_from, LineSpan(1, fast.lines, fast.unterminated), target)
        _add_counts(result, counts)
        # Offsets count content bytes (decompressed for .gz), as the block path does.
        end_offset, last_line = fast.content_bytes, fast.lines
        if fast.unterminated and not counts.last_line_whole:
            end_offset, last_line = end_offset - fast.tail_bytes, fast.lines - 1
        tick(end_offset)
    else:
        target = Target(source_id, display, seq_base)
        read = read_in_blocks(con, path, start_offset, lines_before, target, tick)
        end_offset, last_line = read.end_offset, read.last_line
        _add_counts(result, read.counts)
    redact_new_rows(con, source_id, seq_base)
    con.execute(sql.DROP_TEMP_SQL)
    result.loaded = result.tool_calls + result.loop_exits
    if known is None and earlier:
        _replace_earlier_versions(con, result, earlier)
    if result.status in ("grown", "rotated") and end_offset == start_offset:
        result.status = "unchanged"  # nothing new (a pending truncated last line is only re-checked)
    new_len = min(len(head), HEAD_BYTES)
    con.execute(UPDATE_SOURCE_SQL, [display, sha256(head[:new_len]), new_len, end_offset, last_line, source_id])
    return result, seq_base


def _replace_earlier_versions(con: duckdb.DuckDBPyConnection, result: FileResult, earlier: tuple[int, ...]) -> None:
    """Replace each source in ``earlier`` whose records are mostly those just loaded as ``result``'s source.

    Mostly: the records both hold (``SHARED_RECORDS_SQL``) are at least half of the smaller
    source's, and some. A new file started at the path after a rotation shares none and
    replaces nothing. A replaced source's rows go, as a shorter file's do; its ``sources`` row
    stays, ``superseded_by`` this source, so a copy of that older version is known later.
    """
    assert result.source_id is not None
    gone = 0
    for old in earlier:
        row = con.execute(SHARED_RECORDS_SQL, [result.source_id, old]).fetchone()
        shared, mine, theirs = (int(v) for v in row) if row else (0, 0, 0)
        if shared <= 0 or 2 * shared < min(mine, theirs):
            continue
        gone += theirs
        _execute_each(con, DELETE_SOURCE_ROWS_SQL, [old])
        con.execute(SUPERSEDE_SOURCE_SQL, [result.source_id, old])
    if not gone:
        return
    # Records the facts saw are gone: the next analysis rebuilds them.
    con.execute(INVALIDATE_FACTS_SQL)
    result.status = "replaced"
    result.note = (
        f"changed in its first 4 KiB since it was loaded (edited, or written again): the {gone} record(s) "
        "loaded from it before were replaced by the file as it is now"
    )


def _superseded(path: Path, lineage: Lineage) -> FileResult:
    """The result for an earlier version of a file whose edited version replaced it: nothing is loaded."""
    assert lineage.superseded is not None
    was = lineage.superseded.path
    return FileResult(
        path=_display(path), input_format="records", status="superseded", source_id=lineage.successor,
        note=f"an earlier version of {was}, which was edited and loaded again since: not loaded, so its records "
             f"do not come back beside the edited ones (the store keeps {was} as it was last loaded; "
             "load this copy into another --db to see it as it was)",
    )


def redact_new_rows(con: duckdb.DuckDBPyConnection, source_id: int, seq_base: int) -> None:
    """Redact secrets in the error text of the rows just stored, as the other readers do when they read.

    The collector redacts before it writes; a records file from any other
    writer may not have. ``clean_error_text`` (collectors/redact.py) runs once
    per distinct text; only the texts it changes are rewritten.
    """
    texts = [row[0] for row in con.execute(NEW_ERROR_TEXTS_SQL, [source_id, seq_base]).fetchall()]
    changed = [(text, clean) for text in texts if (clean := clean_error_text(text)) != text]
    if not changed:
        return
    con.execute(CREATE_REDACTED_SQL, [[c[0] for c in changed], [c[1] for c in changed]])
    _execute_each(con, APPLY_REDACTED_SQL, [source_id, seq_base])
    con.execute(DROP_REDACTED_SQL)


def _add_counts(result: FileResult, counts: Counts) -> None:
    result.tool_calls += counts.tool_calls
    result.loop_exits += counts.loop_exits
    result.quarantined += counts.quarantined


def _execute_each(con: duckdb.DuckDBPyConnection, script: str, params: list[Any]) -> None:
    """Run each statement of ``script`` with ``params``: DuckDB binds parameters of the last statement only."""
    for statement in script.split(";"):
        if statement.strip():
            con.execute(statement, params)


def _load_reader_file(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: str, options: dict[str, Any]
) -> tuple[FileResult, int]:
    """Load a file of another format (in the caller's transaction); also returns the seq its rows are numbered above.

    That seq is read after a replaced file's old rows are deleted: the new rows may reuse their seqs.
    """
    display = _display(path)
    result = FileResult(path=display, input_format=fmt, status="new")
    digest, _ = content_hash(path)
    if options:
        # The same bytes read with other options (--error-when, --messages-key...)
        # are other records: the file is replaced, not skipped as unchanged.
        digest += "+options:" + sha256(json.dumps(options, sort_keys=True, default=str).encode("utf-8"))[:16]
    known = con.execute(SOURCES_SQL, [fmt]).fetchall()
    same = [r for r in known if r[2] == digest]
    if same:
        source_id = next((r[0] for r in same if r[1] == display), same[0][0])
        counted = con.execute(SOURCE_ROWS_SQL, [source_id, source_id]).fetchone()
        result.status, result.source_id = "unchanged", source_id
        result.skipped = int(counted[0]) if counted else 0
        return result, 0
    at_path = [r for r in known if r[1] == display]
    if at_path:
        source_id = at_path[0][0]
        _execute_each(con, DELETE_SOURCE_ROWS_SQL, [source_id])
        # Records the facts may have seen are gone (and their seqs may be given again):
        # the next analysis rebuilds the facts rather than refreshing the new records' conversations.
        con.execute(INVALIDATE_FACTS_SQL)
        result.status = "replaced"
    else:
        source_id = _new_source(con, path, fmt, digest, None)
    result.source_id = source_id
    module = reader_module(fmt)
    output: ReaderOutput = module.read(path, options)
    seq_row = con.execute(sql.MAX_SEQ_SQL).fetchone()
    seq_base = int(seq_row[0]) if seq_row else 0
    if output.records:
        text = "\n".join(json.dumps(r, ensure_ascii=False, default=str) for r in output.records) + "\n"
        with tempfile.TemporaryDirectory(prefix="loopscope-") as tmp:
            staged = Path(tmp) / "records.jsonl"
            staged.write_text(text, encoding="utf-8")
            for piece in iter_chunks(staged, 0, 1):
                if isinstance(piece, StreamBreak):  # a plain temporary file does not break
                    raise LoopscopeError(f"cannot read back the staged records of {path}", hint="this is a bug in loopscope")
                if isinstance(piece, OverlongLine):
                    con.execute(
                        sql.QUARANTINE_ONE_SQL,
                        [source_id, display, piece.line_no, "record too long", piece.head[: sql.RAW_CAP].decode("utf-8", "replace")],
                    )
                    result.quarantined += 1
                    continue
                _add_counts(result, ingest_chunk(con, piece, Target(source_id, display, seq_base)))
        con.execute(READER_QUARANTINE_SQL, [f"the {fmt} reader produced an invalid record: ", source_id])
        _execute_each(con, READER_LINES_SQL, [source_id])
    con.execute(sql.DROP_TEMP_SQL)
    for bad in output.bad:
        con.execute(sql.QUARANTINE_ONE_SQL, [source_id, display, bad.line_no, bad.reason, (bad.raw or "")[: sql.RAW_CAP]])
        result.quarantined += 1
    for v in output.violations:
        con.execute(
            INSERT_VIOLATION_SQL,
            [source_id, v.get("conversation_id"), v.get("prompt_id"), v.get("tool_call_id"), v.get("kind") or "unknown", v.get("detail")],
        )
    result.protocol_violations = len(output.violations)
    result.skipped_types = dict(output.skipped_types)
    result.loaded = result.tool_calls + result.loop_exits
    con.execute(UPDATE_SOURCE_SQL, [display, digest, None, _size(path), len(output.records), source_id])
    return result, seq_base
