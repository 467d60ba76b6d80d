"""Read a transcript file one JSON line at a time (bounded memory), quarantining bad lines."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

RAW_CAP = 2000
# A single line above this is not decoded (a pasted image can make a line of a few MiB;
# this is far above that): it is quarantined with its start.
MAX_LINE_BYTES = 256 * 2**20
GZIP_MAGIC = b"\x1f\x8b"


def _open(path: Path) -> IO[bytes]:
    with open(path, "rb") as f:
        gz = f.read(2) == GZIP_MAGIC
    return gzip.open(path, "rb") if gz else open(path, "rb")


def json_lines(path: Path, bad: list[Any], bad_line: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each line of ``path`` that is a JSON object.

    A line that is not UTF-8, not JSON, or JSON but not an object is appended to ``bad``
    as ``bad_line(line_no, reason, raw)``; blank lines are skipped. A last line without
    its newline is read like the others (a session file is appended to while the agent
    runs; the next load re-reads the file, see the loader).
    """
    try:
        yield from _objects(path, bad, bad_line)
    except (OSError, EOFError, zlib.error) as exc:  # a cut or corrupt .gz: keep what was read
        bad.append(bad_line(None, f"the file could not be read to its end ({type(exc).__name__}: {exc}); the lines before were loaded", ""))


def _objects(path: Path, bad: list[Any], bad_line: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open(path) as f:
        for line_no, raw in enumerate(f, start=1):
            if len(raw) > MAX_LINE_BYTES:
                bad.append(bad_line(line_no, f"line longer than {MAX_LINE_BYTES // 2**20} MiB, not read", raw[:RAW_CAP].decode("utf-8", "replace")))
                continue
            if not raw.strip():
                continue
            try:
                text = raw.rstrip(b"\r\n").decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                bad.append(bad_line(line_no, f"not UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line)", raw[:RAW_CAP].decode("utf-8", "replace")))
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                bad.append(bad_line(line_no, f"not JSON: {exc.msg} (column {exc.colno})", text[:RAW_CAP]))
                continue
            except RecursionError:
                bad.append(bad_line(line_no, "JSON nested too deeply to read", text[:RAW_CAP]))
                continue
            if not isinstance(value, dict):
                bad.append(bad_line(line_no, f"a JSON {type(value).__name__}, not an object: not a transcript line", text[:RAW_CAP]))
                continue
            yield line_no, value


def first_object(head: bytes) -> dict[str, Any] | None:
    """The first line of ``head`` (the start of a file) as a JSON object, if it is one."""
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    line = text.split(b"\n", 1)[0]
    try:
        value = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def head_objects(head: bytes, limit: int = 20) -> list[dict[str, Any]]:
    """The complete lines of ``head`` that are JSON objects (at most ``limit``)."""
    out: list[dict[str, Any]] = []
    lines = head.lstrip(b"\xef\xbb\xbf").split(b"\n")
    for raw in lines[:-1] if len(lines) > 1 else lines:
        if len(out) >= limit:
            break
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def text_of(content: Any) -> str:
    """The text of a message or tool-result ``content``: a string, or the ``text`` of its blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return ""
