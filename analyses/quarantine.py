"""Reading the quarantine back: the bad lines of loaded files, with a hint each.

Every line ``load`` could not use is kept in ``quarantine`` (file, line
number, reason, raw text capped at 2,000 characters). ``list_quarantine``
returns them in file and line order, each with a hint saying how to fix the
writer or the file.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

LIST_QUARANTINE_SQL = """
SELECT path, line_no, reason, raw
FROM quarantine
WHERE (? IS NULL OR path = ? OR suffix(path, '/' || ?))
ORDER BY path, line_no NULLS FIRST
LIMIT ?
"""
COUNT_QUARANTINE_SQL = """
SELECT count(*) FROM quarantine WHERE (? IS NULL OR path = ? OR suffix(path, '/' || ?))
"""
# The quarantined lines of each of the given sources, whichever load set them aside.
QUARANTINED_PER_SOURCE_SQL = """
SELECT source_id, count(*) FROM quarantine WHERE list_contains(?, source_id) GROUP BY source_id
"""

# (reason prefix, hint); the first match wins.
_HINTS: tuple[tuple[str, str], ...] = (
    ("truncated last line", "the writer was cut off mid-line (crash or a file still being written); "
     "load again once the line is complete: it is re-read then"),
    ("file cut off", "the .gz file is incomplete (an interrupted copy, or still being written); the lines before "
     "it are loaded, and a later load reads on from here once the file is complete"),
    ("malformed JSON", "each line must be one complete JSON object; look for unescaped quotes, "
     "a missing brace, or two records on one line"),
    ("not a JSON object", "each line must be a JSON object {...}, not an array or a bare value"),
    ("not UTF-8", "the file must be UTF-8; re-encode it (iconv -f latin1 -t utf-8) or fix the writer"),
    ("line too long", "records are small; a line this long is usually binary data or two files glued together"),
    ("duplicate key", "a key appears twice in the record and loopscope will not guess which value is meant; "
     "fix the writer so each key is written once"),
    ("unknown schema version", "this loopscope reads record format v1; upgrade loopscope to read newer records"),
    ("missing required field v", "this is not a loopscope record; "
     "use --input-format messages or otlp for other logs"),
    ("missing required field kind", "records need kind tool_call or loop_exit"),
    ("unknown kind", "records need kind tool_call or loop_exit"),
    ("missing required field", "the collector always writes this field; the record was written by hand "
     "or by another tool: add the field (docs/records.md lists them)"),
    ("wrong type", "the field has the wrong JSON type; docs/records.md gives each field's type"),
    ("bad timestamp", "ts must be RFC 3339 with an offset, e.g. 2026-11-21T08:00:00.123Z"),
    ("bad value", "the value is outside the set docs/records.md allows"),
    ("the messages reader", "the conversation log gave a record loopscope cannot use; see the reason"),
    ("the otlp reader", "the span gave a record loopscope cannot use; see the reason"),
)


def quarantined_per_source(con: duckdb.DuckDBPyConnection, source_ids: list[int]) -> dict[int, int]:
    """How many lines of each of ``source_ids`` the store holds in quarantine (sources with none left out).

    Counted from the store, not from one load: a file loaded before (unchanged, or grown since)
    still has the lines an earlier load set aside, and they are still in none of the figures.
    """
    if not source_ids:
        return {}
    return {int(s): int(n) for s, n in con.execute(QUARANTINED_PER_SOURCE_SQL, [source_ids]).fetchall()}


def hint_for(reason: str) -> str:
    """A fix suggestion for a quarantine reason."""
    for prefix, hint in _HINTS:
        if reason.startswith(prefix) or prefix in reason:
            return hint
    return "see docs/loading.md for what loopscope accepts"


@dataclass(frozen=True)
class QuarantinedLine:
    """One bad line: where it is, why it was set aside, and what to do."""

    path: str
    line_no: int | None
    reason: str
    raw: str
    hint: str


def list_quarantine(
    con: duckdb.DuckDBPyConnection, *, file: str | None = None, limit: int | None = None
) -> tuple[list[QuarantinedLine], int]:
    """Quarantined lines (optionally of one file), and how many there are in all.

    Args:
        con: an open store.
        file: a path as loaded (absolute) or its trailing part, e.g. ``app.jsonl``.
        limit: at most this many lines (None: all).
    """
    name = None if file is None else str(file)
    bound = [name, name, name]
    rows = con.execute(LIST_QUARANTINE_SQL, bound + [limit if limit is not None else 2**62]).fetchall()
    row = con.execute(COUNT_QUARANTINE_SQL, bound).fetchone()
    total = int(row[0]) if row else 0
    return [QuarantinedLine(p, n, r, raw or "", hint_for(r)) for p, n, r, raw in rows], total
