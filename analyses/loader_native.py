"""The native fast path of the records loader (``_linescan``, a small C extension).

The C scanner (analyses/native/linescan.c) splits a buffer into lines,
numbers them and recognises plain loopscope records: valid JSON objects with
``"v":1``, a known ``kind``, each known field at most once and of its JSON
type, in any order and spacing, unknown fields allowed. It hands their values
to DuckDB through the Arrow C stream interface (no copy through Python, no
text table, no second parse); the INSERT here applies the spec's value checks
(``loader_fast_sql.value_checks``: timestamps, integer ranges, the outcome
set, required fields) exactly as the SQL fast path does. Every line the
scanner or the value checks refuse goes through the full validation
(``loader_sql``), which stores it or quarantines it with a reason, so the
result is the same row for row whichever path a line takes
(tests/test_loader_fast_path.py compares them).

The extension is optional: without a C compiler at install time
``SCANNER`` is None and the loader uses the SQL fast path.
"""

from __future__ import annotations

import os

import duckdb

from loopscope.analyses import loader_sql as sql
from loopscope.analyses.loader_fast_sql import LOOP_EXIT_ORDER, TOOL_CALL_ORDER, value_checks
from loopscope.analyses.loader_sql import EXTRA_PATCH, FIELDS, MAX_LINE_BYTES, RAW_CAP, ts_value_sql

try:
    from loopscope.analyses import _linescan
except ImportError:  # built without a C compiler: the SQL fast path takes over
    _linescan = None  # type: ignore[assignment]

KINDS = ("tool_call", "loop_exit")
_ORDERS = {"tool_call": TOOL_CALL_ORDER, "loop_exit": LOOP_EXIT_ORDER}
_CLASS_CODE = {"str": "s", "int": "i", "num": "n", "bool": "b", "obj": "o"}
_FIELD_CODES = tuple((name, _CLASS_CODE[tclass]) for name, tclass, *_ in FIELDS)
_INDEX = {name: i for i, (name, _) in enumerate(_FIELD_CODES)}

SCANNER = (
    _linescan.Scanner(
        _FIELD_CODES,
        tuple((kind, tuple(_INDEX[f] for f in _ORDERS[kind][2:])) for kind in KINDS),
        MAX_LINE_BYTES,
    )
    if _linescan is not None
    else None
)
"""The configured scanner, or None when the extension is not built."""

THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)))
"""Threads the scanner splits a buffer over (it runs without the GIL); the C side caps it at 8."""

VIEW = "_ls_scan"
"""The name the scanned rows are registered under while a statement reads them."""

_COMMON = (
    "conversation_id, prompt_id, coalesce(agent, 'default') AS agent, trace_id, span_id, json(tags) AS tags"
)
_COLUMNS = {
    "tool_call": _COMMON
    + ", tool_call_id, tool_name, try_cast(step AS INTEGER) AS step, json(input_shape) AS input_shape, "
    "args_fingerprint, outcome, is_error = 'true' AS is_error, coalesce(try_cast(attempts AS INTEGER), 1) AS attempts, "
    "try_cast(latency_ms AS DOUBLE) AS latency_ms, error_type, error_message, coalesce(replayed = 'true', false) AS replayed",
    "loop_exit": _COMMON
    + ", exit_reason, try_cast(steps AS INTEGER) AS steps, try_cast(tool_calls AS INTEGER) AS tool_calls, "
    "try_cast(tool_errors AS INTEGER) AS tool_errors, try_cast(max_tool_calls AS INTEGER) AS max_tool_calls, "
    "try_cast(input_tokens AS BIGINT) AS input_tokens, try_cast(output_tokens AS BIGINT) AS output_tokens, "
    "try_cast(duration_ms AS DOUBLE) AS duration_ms, error_type, error_message",
}


def _checked(kind: str) -> str:
    # One CASE so the conditions are evaluated once per row.
    return f"CASE WHEN {value_checks(_ORDERS[kind][2:], line_length=False)} THEN true ELSE false END"


_TYPED = f"SELECT *, {ts_value_sql('ts')} AS ts_value FROM {VIEW}"

# ?1 seq base (seq = base + line_no), ?2 source_id. Returns the rows inserted.
INSERT_SQL = {
    kind: f"""
INSERT INTO {kind}s
SELECT $1::BIGINT + line_no AS seq, $2::INTEGER AS source_id, line_no, 1 AS v, ts_value AS ts, {_COLUMNS[kind]},
       CASE WHEN _line IS NOT NULL THEN json_merge_patch(_line, '{EXTRA_PATCH[kind]}') END AS extra
FROM ({_TYPED})
WHERE {_checked(kind)}
"""
    for kind in KINDS
}

# The scanned lines the value checks refused (for the full validation to name the problem).
REFUSED_SQL = {kind: f"SELECT line_no FROM ({_TYPED}) WHERE NOT {_checked(kind)} ORDER BY line_no" for kind in KINDS}

REST_FROM_LISTS_SQL = """
CREATE OR REPLACE TEMP TABLE _ls_rest AS
SELECT unnest($1::BIGINT[]) AS line_no, unnest($2::VARCHAR[]) AS line
"""
COUNT_QUARANTINED_SQL = "SELECT count(*) FROM quarantine WHERE source_id = ? AND line_no BETWEEN ? AND ?"

UNORDERED_SQL = "SET preserve_insertion_order = false"
ORDERED_SQL = "RESET preserve_insertion_order"

REST_LIST_MAX = 20_000
"""More lines than this left to the full validation go to it as one text block instead of one Python string each."""


def available() -> bool:
    """Whether the native scanner is built."""
    return SCANNER is not None


class Outcome:
    """What ``scan_and_insert`` did with a buffer."""

    __slots__ = ("tool_calls", "loop_exits", "quarantined", "last_ok", "lines", "rest")

    def __init__(self) -> None:
        self.tool_calls = 0
        self.loop_exits = 0
        self.quarantined = 0
        self.last_ok = True
        self.lines = 0
        self.rest: list[tuple[int, int, int]] = []
        """(line_no, start, end) of the lines left to the full validation."""


def scan_and_insert(
    con: duckdb.DuckDBPyConnection, buf: bytes | memoryview, first_line: int, source_id: int, seq_base: int
) -> Outcome:
    """Scan ``buf`` (whole lines; the last may lack its newline) and insert its plain records.

    The lines it did not insert are in ``outcome.rest``, for the caller to
    give to the full validation.
    """
    assert SCANNER is not None
    scan = SCANNER.scan(buf, first_line, THREADS)
    out = Outcome()
    out.lines = scan.lines
    rest = list(scan.rejected)
    inserted = [0, 0]
    con.execute(UNORDERED_SQL)
    try:
        for k, kind in enumerate(KINDS):
            if not scan.accepted[k]:
                continue
            con.register(VIEW, scan.rows(k))
            try:
                row = con.execute(INSERT_SQL[kind], [seq_base, source_id]).fetchone()
                inserted[k] = int(row[0]) if row else 0
                if inserted[k] < scan.accepted[k]:
                    for (line_no,) in con.execute(REFUSED_SQL[kind]).fetchall():
                        rest.append((line_no, *scan.span(line_no)))
            finally:
                con.unregister(VIEW)
    finally:
        con.execute(ORDERED_SQL)
    out.tool_calls, out.loop_exits = inserted
    rest.sort()
    out.rest = rest
    return out


def rest_to_table(
    con: duckdb.DuckDBPyConnection,
    buf: bytes | memoryview,
    rest: list[tuple[int, int, int]],
    last_line: int,
    unterminated: bool,
    source_id: int,
    display: str,
) -> tuple[bool, bool]:
    """Put the left-over lines in ``_ls_rest`` for the full validation.

    Lines over ``MAX_LINE_BYTES`` and lines that are not UTF-8 are
    quarantined here (their text cannot go to DuckDB whole). Returns
    (anything left in ``_ls_rest``, the last line is whole): an over-long
    unterminated last line is not whole, so a later load reads it again.
    """
    line_nos: list[int] = []
    texts: list[str] = []
    last_ok = True
    for line_no, start, end in rest:
        raw = bytes(buf[start:end])
        if end - start > MAX_LINE_BYTES:
            text = raw[: RAW_CAP * 4].decode("utf-8", errors="backslashreplace")[:RAW_CAP]
            con.execute(
                sql.QUARANTINE_ONE_SQL,
                [source_id, display, line_no, f"line too long (over {MAX_LINE_BYTES} bytes)", text],
            )
            if unterminated and line_no == last_line:
                last_ok = False
            continue
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            con.execute(
                sql.QUARANTINE_ONE_SQL,
                [
                    source_id,
                    display,
                    line_no,
                    f"not UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line)",
                    raw.decode("utf-8", errors="backslashreplace")[:RAW_CAP],
                ],
            )
            continue
        line_nos.append(line_no)
    if texts:
        con.execute(REST_FROM_LISTS_SQL, [line_nos, texts])
    return bool(texts), last_ok


def count_quarantined(con: duckdb.DuckDBPyConnection, source_id: int, first_line: int, last_line: int) -> int:
    """Quarantine rows of this source within the lines."""
    row = con.execute(COUNT_QUARANTINED_SQL, [source_id, first_line, last_line]).fetchone()
    return int(row[0]) if row else 0
