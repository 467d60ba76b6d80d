"""The native fast path of the records loader (``_linescan``, a small C extension).

The C scanner (analyses/native/linescan.c) splits a buffer into lines,
numbers them and recognises plain loopscope records: valid JSON objects with
``"v":1``, a known ``kind``, each known field at most once and of its JSON
type, in any order and spacing, unknown fields allowed. It also applies the
spec's value checks and types the values (``ts`` to UTC microseconds, integers
within their ranges, finite numbers, required fields present), and hands the
rows to DuckDB through the Arrow C stream interface: no copy through Python,
no text table, no second parse, no casts. The INSERT here adds what is left:
the ``outcome`` set, objects as DuckDB's canonical JSON text, defaults, and
unknown fields to ``extra``. Every line the scanner or the INSERT refuses
goes through the full validation (``loader_sql``), which stores it or
quarantines it with a reason, so a line is stored the same whichever path it
takes (tests/test_loader_fast_path.py and tests/test_loader_native.py compare
them).

The extension is optional: without a C compiler at install time
``SCANNER`` is None and the loader uses the SQL fast path.
"""

from __future__ import annotations

import os

import duckdb
from loopscope.analyses.ingest import records as sql
from loopscope.analyses.ingest.fast_sql import LOOP_EXIT_ORDER, TOOL_CALL_ORDER
from loopscope.analyses.ingest.records import EXTRA_PATCH, FIELDS, INT_RANGE, MAX_LINE_BYTES, VALUE_SETS

try:
    from loopscope.analyses import _linescan
except ImportError:  # built without a C compiler: the SQL fast path takes over
    _linescan = None  # type: ignore[assignment]

KINDS = ("tool_call", "loop_exit")
_ORDERS = {"tool_call": TOOL_CALL_ORDER, "loop_exit": LOOP_EXIT_ORDER}
_INT32_MAX = 2**31 - 1


def _field_spec(name: str, tclass: str, required: bool) -> tuple[str, str, bool, int, int]:
    """(name, class, required, lo, hi) for the scanner; the class says how the value is checked and typed:
    s string, o object (JSON text), t timestamp, i / I integer in [lo, hi] (32 / 64 bit), n double, b boolean."""
    if name == "ts":
        return name, "t", required, 0, 0
    if tclass == "int":
        lo, hi = INT_RANGE[name]
        return name, "i" if hi <= _INT32_MAX else "I", required, lo, hi
    return name, {"str": "s", "num": "n", "bool": "b", "obj": "o"}[tclass], required, 0, 0


_FIELD_SPECS = tuple(_field_spec(name, tclass, required) for name, tclass, required, *_ in FIELDS)
_INDEX = {spec[0]: i for i, spec in enumerate(_FIELD_SPECS)}

SCANNER = (
    _linescan.Scanner(
        _FIELD_SPECS,
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

# The scanner checked the values and typed them (timestamps in UTC, integers
# in range, finite numbers, required fields present); what is left for SQL:
# the string value sets, objects as DuckDB's canonical JSON text, defaults.
_COMMON = "ts, conversation_id, prompt_id, coalesce(agent, 'default') AS agent, trace_id, span_id, json(tags) AS tags"
_COLUMNS = {
    "tool_call": _COMMON
    + ", tool_call_id, tool_name, step, json(input_shape) AS input_shape, args_fingerprint, outcome, is_error, "
    "coalesce(attempts, 1) AS attempts, latency_ms, error_type, error_message, coalesce(replayed, false) AS replayed",
    "loop_exit": _COMMON
    + ", exit_reason, steps, tool_calls, tool_errors, max_tool_calls, input_tokens, output_tokens, duration_ms, "
    "error_type, error_message",
}


def _checked(kind: str) -> str:
    tests = [
        f"{name} IN ({', '.join(repr(v) for v in values)})"
        for name, values in VALUE_SETS.items()
        if name in _ORDERS[kind]
    ]
    return " AND ".join(tests) or "true"


# ?1 seq base (seq = base + line_no), ?2 source_id. Returns the rows inserted.
INSERT_SQL = {
    kind: f"""
INSERT INTO {kind}s
SELECT $1::BIGINT + line_no AS seq, $2::INTEGER AS source_id, line_no, 1 AS v, {_COLUMNS[kind]},
       CASE WHEN _line IS NOT NULL THEN json_merge_patch(_line, '{EXTRA_PATCH[kind]}') END AS extra
FROM {VIEW}
WHERE {_checked(kind)}
"""
    for kind in KINDS
}

# The scanned lines the value checks refused (for the full validation to name the problem).
REFUSED_SQL = {kind: f"SELECT line_no FROM {VIEW} WHERE NOT ({_checked(kind)}) ORDER BY line_no" for kind in KINDS}

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

    __slots__ = ("lines", "loop_exits", "rest", "tool_calls")

    def __init__(self) -> None:
        self.tool_calls = 0
        self.loop_exits = 0
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
    (anything left in ``_ls_rest``, the last line is whole): an over-long or
    not-UTF-8 unterminated last line is not whole (the writer may have been
    cut off inside a character), so a later load reads it again.
    """
    line_nos: list[int] = []
    texts: list[str] = []
    last_ok = True
    for line_no, start, end in rest:
        raw = bytes(buf[start:end])
        if end - start > MAX_LINE_BYTES:
            con.execute(sql.QUARANTINE_ONE_SQL, [source_id, display, line_no, sql.TOO_LONG_REASON, sql.raw_text(raw)])
            if unterminated and line_no == last_line:
                last_ok = False
            continue
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            if unterminated and line_no == last_line:
                last_ok = False  # cut off inside a character, maybe: read it again when it is whole
            con.execute(
                sql.QUARANTINE_ONE_SQL, [source_id, display, line_no, sql.not_utf8_reason(raw, exc), sql.raw_text(raw)]
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
