"""The SQL that turns lines of loopscope JSONL into rows, or quarantines them.

One validation path for every input: a chunk of lines goes into the temp
table ``_ls_lines`` (line number + text), DuckDB parses each line once into a
struct whose fields are JSON fragments (``json_transform`` with ``JSON``
types), and a single ``CASE`` names the first thing wrong with the line
(malformed JSON, not an object, missing required field, wrong type, value not
in the spec's set, unknown ``v`` / ``kind``, unparseable timestamp). Good
lines are cast and inserted into ``tool_calls`` / ``loop_exits``; the others
go to ``quarantine`` with their reason and the raw text, capped.

The SQL text is built once, at import, from the fixed field table below
(record format v1, docs/records.md); no value is ever formatted into it.
"""

from __future__ import annotations

import json

RAW_CAP = 2000
"""Characters of a bad line kept in ``quarantine.raw``."""
MAX_LINE_BYTES = 1024 * 1024
"""Lines longer than this are quarantined as over-long (records are small)."""

# (field, type class, required, kinds it belongs to, extra check or None, what the check wants)
# Type classes: str, int, num, bool, obj. A JSON null counts as absent.
_COMMON = ("tool_call", "loop_exit")
_TC = ("tool_call",)
_LE = ("loop_exit",)
FIELDS: tuple[tuple[str, str, bool, tuple[str, ...], str | None, str | None], ...] = (
    ("ts", "str", True, _COMMON, "TS_OK", "an RFC 3339 timestamp"),
    ("conversation_id", "str", True, _COMMON, None, None),
    ("prompt_id", "str", True, _COMMON, None, None),
    ("agent", "str", False, _COMMON, None, None),
    ("trace_id", "str", False, _COMMON, None, None),
    ("span_id", "str", False, _COMMON, None, None),
    ("tags", "obj", False, _COMMON, None, None),
    ("tool_call_id", "str", True, _TC, None, None),
    ("tool_name", "str", True, _TC, None, None),
    ("step", "int", True, _TC, "try_cast(j.step AS HUGEINT) BETWEEN 0 AND 2147483647", "an integer >= 0"),
    ("input_shape", "obj", False, _TC, None, None),
    ("args_fingerprint", "str", False, _TC, None, None),
    (
        "outcome",
        "str",
        True,
        _TC,
        "json_extract_string(j.outcome, '$') IN ('ok', 'retried', 'transient_fail', 'permanent_fail')",
        "one of ok, retried, transient_fail, permanent_fail",
    ),
    ("is_error", "bool", True, _TC, None, None),
    ("attempts", "int", False, _TC, "try_cast(j.attempts AS HUGEINT) BETWEEN 1 AND 2147483647", "an integer >= 1"),
    ("latency_ms", "num", False, _TC, None, None),
    ("error_type", "str", False, _COMMON, None, None),
    ("error_message", "str", False, _COMMON, None, None),
    ("replayed", "bool", False, _TC, None, None),
    ("exit_reason", "str", True, _LE, None, None),
    ("steps", "int", False, _LE, "try_cast(j.steps AS HUGEINT) BETWEEN 0 AND 2147483647", "an integer >= 0"),
    ("tool_calls", "int", False, _LE, "try_cast(j.tool_calls AS HUGEINT) BETWEEN 0 AND 2147483647", "an integer >= 0"),
    ("tool_errors", "int", False, _LE, "try_cast(j.tool_errors AS HUGEINT) BETWEEN 0 AND 2147483647", "an integer >= 0"),
    (
        "max_tool_calls",
        "int",
        False,
        _LE,
        "try_cast(j.max_tool_calls AS HUGEINT) BETWEEN 0 AND 2147483647",
        "an integer >= 0",
    ),
    ("input_tokens", "int", False, _LE, "try_cast(j.input_tokens AS HUGEINT) BETWEEN 0 AND 9223372036854775807", "an integer >= 0"),
    ("output_tokens", "int", False, _LE, "try_cast(j.output_tokens AS HUGEINT) BETWEEN 0 AND 9223372036854775807", "an integer >= 0"),
    ("duration_ms", "num", False, _LE, None, None),
)
KNOWN_FIELDS: tuple[str, ...] = ("v", "kind") + tuple(f[0] for f in FIELDS)

_TYPE_TEST = {
    "str": "= 'VARCHAR'",
    "int": "IN ('UBIGINT', 'BIGINT')",
    "num": "IN ('UBIGINT', 'BIGINT', 'DOUBLE')",
    "bool": "= 'BOOLEAN'",
    "obj": "= 'OBJECT'",
}
_TYPE_WORD = {"str": "a string", "int": "an integer", "num": "a number", "bool": "true or false", "obj": "an object"}

# json_transform structure: every known field as a raw JSON fragment.
_STRUCTURE = json.dumps({name: "JSON" for name in KNOWN_FIELDS})

# An RFC 3339 timestamp: 'T', 't' or ' ' between date and time, 'Z'/'z' or an
# offset; DuckDB's cast needs upper case. Timestamps without an offset are read as UTC.
_TS_TEXT = "upper(json_extract_string(j.ts, '$'))"
_TS_VALUE = f"CAST(try_cast({_TS_TEXT} AS TIMESTAMPTZ) AS TIMESTAMP)"
_LIST = "[" + ", ".join(f"'{k}'" for k in KNOWN_FIELDS) + "]"


def _kind_cond(kinds: tuple[str, ...]) -> str:
    if len(kinds) == 2:
        return "TRUE"
    return f"kind_text = '{kinds[0]}'"


def _reason_sql() -> str:
    whens = [
        f"WHEN strlen(line) > {MAX_LINE_BYTES} THEN 'line too long (over {MAX_LINE_BYTES} bytes)'",
        "WHEN j IS NULL AND is_last_unterminated THEN 'truncated last line (no newline at the end, not valid JSON)'",
        "WHEN j IS NULL THEN 'malformed JSON'",
        "WHEN ltrim(line)[1] <> '{' THEN 'not a JSON object'",
        "WHEN j.v IS NULL THEN 'missing required field v'",
        "WHEN json_type(j.v) NOT IN ('UBIGINT', 'BIGINT') OR try_cast(j.v AS HUGEINT) <> 1 "
        "THEN 'unknown schema version v=' || left(CAST(j.v AS VARCHAR), 40) || ' (this loopscope reads v=1)'",
        "WHEN j.kind IS NULL THEN 'missing required field kind'",
        "WHEN json_type(j.kind) <> 'VARCHAR' OR kind_text NOT IN ('tool_call', 'loop_exit') "
        "THEN 'unknown kind ' || left(CAST(j.kind AS VARCHAR), 60) || ' (expected tool_call or loop_exit)'",
    ]
    for name, tclass, required, kinds, check, wants in FIELDS:
        applies = _kind_cond(kinds)
        if required:
            whens.append(f"WHEN {applies} AND j.{name} IS NULL THEN 'missing required field {name}'")
        whens.append(
            f"WHEN {applies} AND j.{name} IS NOT NULL AND NOT (json_type(j.{name}) {_TYPE_TEST[tclass]}) "
            f"THEN 'wrong type for {name}: expected {_TYPE_WORD[tclass]}, got ' || lower(json_type(j.{name}))"
        )
        if check == "TS_OK":
            whens.append(
                f"WHEN {applies} AND {_TS_VALUE} IS NULL "
                f"THEN 'bad timestamp ts: ' || left(CAST(j.ts AS VARCHAR), 60) || ' is not RFC 3339'"
            )
        elif check:
            whens.append(
                f"WHEN {applies} AND j.{name} IS NOT NULL AND NOT ({check}) "
                f"THEN 'bad value for {name}: ' || left(CAST(j.{name} AS VARCHAR), 60) || ', expected {wants}'"
            )
    return "CASE\n        " + "\n        ".join(whens) + "\n        END"


CREATE_LINES_SQL = """
CREATE OR REPLACE TEMP TABLE _ls_lines (line_no BIGINT, line VARCHAR)
"""
CLEAR_LINES_SQL = "DELETE FROM _ls_lines"
# ?1 first line number, ?2 the chunk text (complete lines, '\n' separated).
INSERT_CHUNK_SQL = """
INSERT INTO _ls_lines
SELECT ? + generate_subscripts(s, 1) - 1 AS line_no, unnest(s) AS line
FROM (SELECT string_split(?, chr(10)) AS s)
"""
INSERT_LINE_SQL = "INSERT INTO _ls_lines VALUES (?, ?)"

# ?1 line number of an unterminated last line (or -1).
CHECK_SQL = f"""
CREATE OR REPLACE TEMP TABLE _ls_checked AS
WITH parsed AS (
    SELECT line_no, line, line_no = ? AS is_last_unterminated,
           CASE WHEN strlen(line) <= {MAX_LINE_BYTES} THEN try(json_transform(line, '{_STRUCTURE}')) END AS j
    FROM _ls_lines
    WHERE trim(line) <> ''
),
typed AS (
    SELECT *, json_extract_string(j.kind, '$') AS kind_text FROM parsed
),
checked AS (
    SELECT line_no, line, j, kind_text, {_reason_sql()} AS reason
    FROM typed
)
SELECT *, CASE WHEN reason IS NULL
    THEN len(list_filter(json_keys(line), lambda k: NOT list_contains({_LIST}, k))) > 0 ELSE false END AS has_extra
FROM checked
"""

QUARANTINE_CHECKED_SQL = f"""
INSERT INTO quarantine (source_id, path, line_no, reason, raw)
SELECT ?, ?, line_no, reason, left(line, {RAW_CAP}) FROM _ls_checked WHERE reason IS NOT NULL
"""
QUARANTINE_ONE_SQL = "INSERT INTO quarantine (source_id, path, line_no, reason, raw) VALUES (?, ?, ?, ?, ?)"

EXTRA_SQL = f"""
CREATE OR REPLACE TEMP TABLE _ls_extra AS
SELECT c.line_no, json_group_object(e.key, e.value) AS extra
FROM _ls_checked c, json_each(c.line) e
WHERE c.reason IS NULL AND c.has_extra AND NOT list_contains({_LIST}, e.key)
GROUP BY c.line_no
"""


def _s(name: str) -> str:
    return f"json_extract_string(j.{name}, '$')"


def _common_cols() -> str:
    return f"""
    ?::BIGINT + c.line_no AS seq, ?::INTEGER AS source_id, c.line_no, 1 AS v,
    {_TS_VALUE} AS ts,
    {_s('conversation_id')} AS conversation_id,
    {_s('prompt_id')} AS prompt_id,
    coalesce({_s('agent')}, 'default') AS agent,
    {_s('trace_id')} AS trace_id,
    {_s('span_id')} AS span_id,
    CAST(j.tags AS JSON) AS tags"""


# ?1 seq base, ?2 source_id. try_cast: DuckDB may evaluate the projection on
# rows the WHERE drops (bad lines); the values of good lines always cast.
INSERT_TOOL_CALLS_SQL = f"""
INSERT INTO tool_calls
SELECT {_common_cols()},
    {_s('tool_call_id')} AS tool_call_id,
    {_s('tool_name')} AS tool_name,
    try_cast(j.step AS INTEGER) AS step,
    CAST(j.input_shape AS JSON) AS input_shape,
    {_s('args_fingerprint')} AS args_fingerprint,
    {_s('outcome')} AS outcome,
    try_cast(j.is_error AS BOOLEAN) AS is_error,
    coalesce(try_cast(j.attempts AS INTEGER), 1) AS attempts,
    try_cast(j.latency_ms AS DOUBLE) AS latency_ms,
    {_s('error_type')} AS error_type,
    {_s('error_message')} AS error_message,
    coalesce(try_cast(j.replayed AS BOOLEAN), false) AS replayed,
    x.extra
FROM _ls_checked c LEFT JOIN _ls_extra x USING (line_no)
WHERE c.reason IS NULL AND c.kind_text = 'tool_call'
ORDER BY c.line_no
"""

INSERT_LOOP_EXITS_SQL = f"""
INSERT INTO loop_exits
SELECT {_common_cols()},
    {_s('exit_reason')} AS exit_reason,
    try_cast(j.steps AS INTEGER) AS steps,
    try_cast(j.tool_calls AS INTEGER) AS tool_calls,
    try_cast(j.tool_errors AS INTEGER) AS tool_errors,
    try_cast(j.max_tool_calls AS INTEGER) AS max_tool_calls,
    try_cast(j.input_tokens AS BIGINT) AS input_tokens,
    try_cast(j.output_tokens AS BIGINT) AS output_tokens,
    try_cast(j.duration_ms AS DOUBLE) AS duration_ms,
    {_s('error_type')} AS error_type,
    {_s('error_message')} AS error_message,
    x.extra
FROM _ls_checked c LEFT JOIN _ls_extra x USING (line_no)
WHERE c.reason IS NULL AND c.kind_text = 'loop_exit'
ORDER BY c.line_no
"""

COUNT_CHECKED_SQL = """
SELECT
    count(*) FILTER (WHERE reason IS NULL AND kind_text = 'tool_call'),
    count(*) FILTER (WHERE reason IS NULL AND kind_text = 'loop_exit'),
    count(*) FILTER (WHERE reason IS NOT NULL)
FROM _ls_checked
"""
DROP_TEMP_SQL = """
DROP TABLE IF EXISTS _ls_lines;
DROP TABLE IF EXISTS _ls_checked;
DROP TABLE IF EXISTS _ls_extra;
"""

MAX_SEQ_SQL = """
SELECT greatest(
    (SELECT coalesce(max(seq), 0) FROM tool_calls),
    (SELECT coalesce(max(seq), 0) FROM loop_exits)
)
"""
