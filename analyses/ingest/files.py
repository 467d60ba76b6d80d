"""Finding input files and cutting them into chunks of whole lines.

``expand_paths`` turns the user's PATHs (files, directories searched
recursively, globs) into a sorted, de-duplicated list of files. ``iter_chunks``
reads a file (``.gz`` transparently) from a byte offset in large blocks and
yields whole lines only, so DuckDB can split and parse each block at once; it
never builds a Python object per line on the normal path.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from loopscope.analyses.errors import InputNotFound, LoopscopeError
from loopscope.analyses.ingest.records import MAX_LINE_BYTES

CHUNK_BYTES = 64 * 1024 * 1024
GZIP_PIECE_BYTES = 1024 * 1024
"""A gzip file is decompressed in pieces of at most this size (``read1``), so a corrupt stream loses only its last piece."""
HEAD_BYTES = 4096
"""How much of a file's start identifies it across renames (rotation)."""

# What a directory scan picks up: JSON Lines, JSON, NDJSON, SWE-agent's .traj (JSON), optionally
# gzipped, and rotated copies (app.jsonl.1, app.jsonl.2.gz).
_LOG_NAME_RE = re.compile(r"\.(jsonl|ndjson|json|traj)(\.\d+)?(\.gz)?$", re.IGNORECASE)
_GLOB_CHARS = set("*?[")


class UnreadableFile(LoopscopeError):
    """A file the operating system will not let us read (permissions, I/O error, a broken gzip header).

    The load skips the file, loads the others and reports it.
    """


def is_log_name(name: str) -> bool:
    """Whether a directory scan should load a file with this name."""
    return bool(_LOG_NAME_RE.search(name))


def is_gzip(path: Path) -> bool:
    """Whether ``path`` is gzip-compressed (by its magic bytes)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError as exc:
        raise UnreadableFile(f"cannot read {path}: {exc.strerror or exc}", hint="check the file's permissions") from None


_GEMINI_SIDECAR_RE = re.compile(r"^(checkpoint(-.+)?|logs)\.json$")


def is_gemini_checkpoint(path: Path) -> bool:
    """A Gemini CLI checkpoint or prompt log beside a project's ``chats/`` folder (``~/.gemini/tmp/<project_hash>/``).

    A checkpoint (``/chat save``, ``checkpoint-<tag>.json``) holds the Gemini contents of a
    conversation ``chats/`` records too (read as a Gemini CLI chat), so a folder scan that found
    both would count that conversation twice; ``logs.json`` lists the user's prompts only, no
    conversation. A scan leaves both out when the ``chats/`` folder is beside them; named on its
    own, a file loads. Likewise the files of its ``checkpoints/`` folder (written before each file
    edit when checkpointing is on, for ``/restore``: ``{history, clientHistory, toolCall, ...}``,
    the conversation so far again, and no conversation this reader finds: each was one quarantined
    line and a warning).
    """
    if path.suffix == ".json" and path.parent.name == "checkpoints" and (path.parent.parent / "chats").is_dir():
        return True
    return bool(_GEMINI_SIDECAR_RE.match(path.name)) and (path.parent / "chats").is_dir()


def _scan(folder: Path, ignored: list[Path] | None) -> list[Path]:
    """Log files under ``folder`` (recursively, not following links to folders); others go to ``ignored``."""
    files = []
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        if is_log_name(p.name) and not is_gemini_checkpoint(p):
            files.append(p)
        elif ignored is not None:
            ignored.append(p)
    return files


def expand_paths(paths: list[str | os.PathLike[str]], ignored: list[Path] | None = None) -> list[Path]:
    """Files named by ``paths``, in a stable order, each once.

    Args:
        paths: files, directories and glob patterns.
        ignored: if given, receives the files inside scanned directories that
            were left out because their names are not log names.

    Raises:
        InputNotFound: a path does not exist or a glob matches nothing.
    """
    found: list[Path] = []
    for item in paths:
        text = os.fspath(item)
        path = Path(text).expanduser()
        if path.is_dir():
            found.extend(_scan(path, ignored))
        elif path.is_file():
            found.append(path)
        elif _GLOB_CHARS & set(text):
            matches = sorted(Path(m) for m in glob.glob(os.path.expanduser(text), recursive=True))
            files = [m for m in matches if m.is_file()]
            for m in matches:
                if m.is_dir():
                    files.extend(_scan(m, ignored))
            if not files:
                raise InputNotFound(f"no file matches {text}", hint="check the pattern; quote it so the shell leaves it to loopscope")
            found.extend(files)
        else:
            raise InputNotFound(f"no such file or directory: {text}", hint="check the path, or run loopscope from the folder that holds your logs")
    seen: set[Path] = set()
    result = []
    for p in found:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            result.append(p)
    return result


def open_bytes(path: Path):  # type: ignore[no-untyped-def]
    """Open ``path`` for binary reading, decompressing gzip."""
    try:
        return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")
    except OSError as exc:
        raise UnreadableFile(f"cannot read {path}: {exc.strerror or exc}", hint="check the file's permissions") from None


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of the (decompressed) content."""
    try:
        with open_bytes(path) as f:
            return f.read(size)
    except (OSError, EOFError) as exc:
        raise UnreadableFile(f"cannot read {path}: {exc}", hint="is the file complete and readable?") from None


def resume_point(path: Path, offset: int) -> tuple[bool, bool]:
    """Where a load that stopped at ``offset`` (decompressed) resumes: (at a line's start, more content after it).

    At a line's start: the byte before is a newline, or only a byte-order mark
    comes before. Otherwise a complete last record was loaded without its
    newline, and what follows continues that line.
    """
    try:
        with open_bytes(path) as f:
            if offset == 3:
                before = f.read(3)
                if before == b"\xef\xbb\xbf":
                    return True, f.read(1) != b""
                return before[-1:] == b"\n", f.read(1) != b""
            f.seek(offset - 1)
            pair = f.read(2)
            return pair[:1] == b"\n", len(pair) == 2
    except (OSError, EOFError) as exc:
        raise UnreadableFile(f"cannot read {path}: {exc}", hint="is the file complete and readable?") from None


def ends_before(path: Path, offset: int) -> bool:
    """Whether the file's (decompressed) content is shorter than ``offset`` bytes: it was cut or rewritten."""
    if offset <= 0:
        return False
    try:
        with open_bytes(path) as f:
            f.seek(offset - 1)
            return f.read(1) == b""
    except (OSError, EOFError) as exc:
        raise UnreadableFile(f"cannot read {path}: {exc}", hint="is the file complete and readable?") from None


def sha256(data: bytes) -> str:
    """Hex digest used for file identity."""
    return hashlib.sha256(data).hexdigest()


def content_hash(path: Path) -> tuple[str, bytes]:
    """Hash of the whole (decompressed) content, and the content."""
    try:
        with open_bytes(path) as f:
            data = f.read()
    except (OSError, EOFError) as exc:
        raise UnreadableFile(f"cannot read {path}: {exc}", hint="is the file complete and readable?") from None
    return "sha256:" + sha256(data), data


@dataclass
class Chunk:
    """Whole lines from a file.

    ``data`` holds complete lines; ``first_line`` is the 1-based number of
    its first line; ``unterminated`` says the last line had no newline (end
    of file); ``end_offset`` is the byte offset just after ``data``.
    """

    data: bytes
    first_line: int
    unterminated: bool
    end_offset: int


@dataclass
class OverlongLine:
    """A line longer than ``MAX_LINE_BYTES``: only its start is kept."""

    line_no: int
    head: bytes
    end_offset: int
    unterminated: bool


@dataclass
class StreamBreak:
    """The file cannot be read past this line (a truncated or corrupt gzip stream).

    ``line_no`` is the first line not read whole, ``partial`` the start of it
    (if any), ``end_offset`` the byte offset just after the last whole line.
    """

    line_no: int
    reason: str
    partial: bytes
    end_offset: int


def read_some(f, size: int, gz: bool) -> tuple[bytes, Exception | None]:  # type: ignore[no-untyped-def]
    """Up to ``size`` bytes, and the error that ended a gzip stream early (the bytes before it are kept)."""
    if not gz:
        return f.read(size), None
    parts: list[bytes] = []
    got = 0
    try:
        while got < size:
            piece = f.read1(min(GZIP_PIECE_BYTES, size - got))
            if not piece:
                break
            parts.append(piece)
            got += len(piece)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        return b"".join(parts), exc
    return b"".join(parts), None


def iter_chunks(
    path: Path, start_offset: int, first_line: int, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[Chunk | OverlongLine | StreamBreak]:
    """Yield the file from ``start_offset`` as chunks of whole lines.

    Over-long lines are yielded separately (their start only) so a runaway
    line never sits in memory whole. A UTF-8 byte-order mark at the start of
    the file is dropped. A gzip stream that ends early or is corrupt yields
    the whole lines before the break, then a ``StreamBreak``.

    Raises:
        UnreadableFile: the file cannot be opened or read at all.
    """
    line_no = first_line
    offset = start_offset
    try:
        gz = is_gzip(path)
        f = open_bytes(path)
        with f:
            broken: Exception | None = None
            if start_offset:
                try:
                    f.seek(start_offset)
                except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                    broken = exc
            carry = b""
            skipping: OverlongLine | None = None
            while broken is None:
                block, broken = read_some(f, chunk_bytes, gz)
                if not block:
                    break
                if offset == 0 and not carry and skipping is None and block.startswith(b"\xef\xbb\xbf"):
                    block = block[3:]
                    offset = 3
                if skipping is not None:
                    nl = block.find(b"\n")
                    if nl == -1:
                        skipping.end_offset += len(block)
                        continue
                    skipping.end_offset += nl + 1
                    yield skipping
                    offset = skipping.end_offset
                    line_no += 1
                    skipping = None
                    block = block[nl + 1 :]
                buf = carry + block if carry else block
                cut = buf.rfind(b"\n")
                if cut == -1:
                    carry = buf
                else:
                    data = buf[: cut + 1]
                    carry = buf[cut + 1 :]
                    # Lines over the limit inside a block are caught in SQL.
                    yield Chunk(data, line_no, False, offset + len(data))
                    line_no += data.count(b"\n")
                    offset += len(data)
                if len(carry) > MAX_LINE_BYTES:
                    skipping = OverlongLine(line_no, carry[:MAX_LINE_BYTES], offset + len(carry), False)
                    carry = b""
            if broken is not None:
                # Whatever follows the last whole line is cut off: not consumed,
                # so a later load reads it again if the file is completed.
                partial = skipping.head if skipping is not None else carry
                why = str(broken) or type(broken).__name__
                yield StreamBreak(line_no, f"file cut off at this line: the gzip stream ends early or is corrupt ({why})", partial, offset)
            elif skipping is not None:
                skipping.unterminated = True
                yield skipping
            elif carry:
                yield Chunk(carry, line_no, True, offset + len(carry))
    except OSError as exc:
        raise UnreadableFile(f"cannot read {path} past byte {offset}: {exc.strerror or exc}", hint="check the file and the disk") from None
