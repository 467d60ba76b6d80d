"""The SQL that turns lines of loopscope JSONL into rows, or quarantines them.

The record validator: every line the fast path (``fast_sql``: lines
exactly as the collector writes them) did not take goes through it, and it
alone says why a line is refused. DuckDB parses each
line once into the list of its known fields' values as JSON fragments (``json_extract`` with a
list of paths); a cheap test on the fragments accepts the good lines, a key
count (``json_keys``) against the known keys present sends lines with
unknown or repeated keys to a closer look, and for the bad lines a ``CASE``
names the first thing wrong (malformed JSON, not an object, a repeated key,
missing required field, wrong type, value out of range or not in the spec's
set, unknown ``v`` / ``kind``, unparseable timestamp). Good lines are cast
and inserted into ``tool_calls`` / ``loop_exits`` (unknown fields into
``extra``); the others go to ``quarantine`` with their reason and the raw
text, capped.

Strict JSON (RFC 8259). DuckDB's parser is lenient in two ways JSON is not:
it reads ``NaN`` and ``Infinity`` (refused here anywhere outside a string) and trailing commas
(``{"a": 1,}``, ``[1, 2,]``), refused by ``TRAILING_COMMA``: a comma followed
by a closing bracket once the strings are taken out.

Lines come either straight from the file (``read_csv`` with one VARCHAR
column, no quoting: DuckDB's CSV reader) or, for compressed files,
resumed files and files the fast reader cannot number exactly, from blocks
of whole lines sent from Python. The line number is the row's position.

The SQL text is built once, at import, from the fixed field table below
(record format v1, docs/records.md); no value is ever formatted into it.
"""

from __future__ import annotations


RAW_CAP = 2000
"""Characters of a bad line kept in ``quarantine.raw``."""
MAX_LINE_BYTES = 1024 * 1024
"""Lines longer than this are quarantined as over-long (records are small)."""

# (field, type class, required, kinds it belongs to, extra check or None, what the check wants).
# Checks: TS_OK (parses as a timestamp), RANGE (INT_RANGE), SET (VALUE_SETS).
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
    ("step", "int", True, _TC, "RANGE", "an integer >= 0"),
    ("input_shape", "obj", False, _TC, None, None),
    ("args_fingerprint", "str", False, _TC, None, None),
    (
        "outcome",
        "str",
        True,
        _TC,
        "SET",
        "one of ok, retried, transient_fail, permanent_fail",
    ),
    ("is_error", "bool", True, _TC, None, None),
    ("attempts", "int", False, _TC, "RANGE", "an integer >= 1"),
    ("latency_ms", "num", False, _TC, None, None),
    ("error_type", "str", False, _COMMON, None, None),
    ("error_message", "str", False, _COMMON, None, None),
    ("replayed", "bool", False, _TC, None, None),
    ("exit_reason", "str", True, _LE, None, None),
    ("steps", "int", False, _LE, "RANGE", "an integer >= 0"),
    ("tool_calls", "int", False, _LE, "RANGE", "an integer >= 0"),
    ("tool_errors", "int", False, _LE, "RANGE", "an integer >= 0"),
    (
        "max_tool_calls",
        "int",
        False,
        _LE,
        "RANGE",
        "an integer >= 0",
    ),
    ("input_tokens", "int", False, _LE, "RANGE", "an integer >= 0"),
    ("output_tokens", "int", False, _LE, "RANGE", "an integer >= 0"),
    ("duration_ms", "num", False, _LE, None, None),
)
KNOWN_FIELDS: tuple[str, ...] = ("v", "kind") + tuple(f[0] for f in FIELDS)
TOOL_CALL_FIELDS: tuple[str, ...] = ("v", "kind") + tuple(f[0] for f in FIELDS if "tool_call" in f[3])
LOOP_EXIT_FIELDS: tuple[str, ...] = ("v", "kind") + tuple(f[0] for f in FIELDS if "loop_exit" in f[3])

_TYPE_TEST = {
    "str": "= 'VARCHAR'",
    "int": "IN ('UBIGINT', 'BIGINT')",
    "num": "IN ('UBIGINT', 'BIGINT', 'DOUBLE')",
    "bool": "= 'BOOLEAN'",
    "obj": "= 'OBJECT'",
}
_TYPE_WORD = {"str": "a string", "int": "an integer", "num": "a number", "bool": "true or false", "obj": "an object"}

# json_transform structure: every known field as a raw JSON fragment. The
# fragments are kept as VARCHAR columns named after the field: the JSON type
# of a value shows in its first character, so the common case is checked with
# cheap string tests and no second parse.
# One parse per line: json_extract with the list of every known field's path
# gives each value as a JSON fragment, 'null' for a JSON null and SQL NULL
# for an absent key (json_transform cannot tell those two apart, which the
# key count below needs).
_PATHS = "[" + ", ".join(f"'$.\"{k}\"'" for k in KNOWN_FIELDS) + "]"
# A field of the other kind present (a tool_call with exit_reason, ...): an unknown field here.
_TC_FOREIGN = " OR ".join(f"f[{i}] IS NOT NULL" for i, k in enumerate(KNOWN_FIELDS, 1) if k not in TOOL_CALL_FIELDS)
_LE_FOREIGN = " OR ".join(f"f[{i}] IS NOT NULL" for i, k in enumerate(KNOWN_FIELDS, 1) if k not in LOOP_EXIT_FIELDS)
_LIST = "[" + ", ".join(f"'{k}'" for k in KNOWN_FIELDS) + "]"
_TC_LIST = "[" + ", ".join(f"'{k}'" for k in TOOL_CALL_FIELDS) + "]"
_LE_LIST = "[" + ", ".join(f"'{k}'" for k in LOOP_EXIT_FIELDS) + "]"

# An RFC 3339 timestamp: 'T', 't' or ' ' between date and time, 'Z'/'z' or an
# offset; DuckDB's cast needs upper case. Timestamps without an offset are read as UTC.
_TS_STR = "CASE WHEN contains(ts, chr(92)) THEN json_extract_string(ts, '$') ELSE ts[2:-2] END"
# A trailing comma: ',' then only whitespace before '}' or ']', outside strings.
# The cheap search on the raw line comes first; strings (which may hold ",}")
# are blanked only for the rare lines it finds.
TRAILING_COMMA_RE = r",[ \t\n\r]*[\]}]"
_JSON_STRING_RE = r'"([^"\\]|\\.)*"'


def trailing_comma_sql(text: str) -> str:
    """SQL: whether the JSON text ``text`` (which DuckDB parsed) has a trailing comma outside its strings."""
    return (
        f"(regexp_matches({text}, '{TRAILING_COMMA_RE}') AND "
        f"regexp_matches(regexp_replace({text}, '{_JSON_STRING_RE}', '\"\"', 'g'), '{TRAILING_COMMA_RE}'))"
    )


TRAILING_COMMA_REASON = "malformed JSON (a trailing comma: JSON allows none)"

# NaN and Infinity (any case, DuckDB's parser takes them): outside strings the
# only letters JSON has are those of true, false, null and the exponent e/E,
# none of which spell "nan" or "inf".
NON_JSON_NUMBER_RE = "(?i)(nan|inf)"


def non_json_number_sql(text: str) -> str:
    """SQL: whether the JSON text ``text`` (which DuckDB parsed) has NaN or Infinity outside its strings."""
    return (
        f"(regexp_matches({text}, '{NON_JSON_NUMBER_RE}') AND "
        f"regexp_matches(regexp_replace({text}, '{_JSON_STRING_RE}', '\"\"', 'g'), '{NON_JSON_NUMBER_RE}'))"
    )


NON_JSON_NUMBER_REASON = "malformed JSON (NaN or Infinity: JSON numbers are finite)"

# Only the RFC 3339 shape is cast (DuckDB's cast would also take 'epoch',
# 'infinity', a bare date or single-digit fields).
TS_PATTERN = r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})?"


def ts_value_sql(ts: str) -> str:
    """SQL for the timestamp string ``ts`` as a UTC TIMESTAMP, NULL unless it is an RFC 3339 timestamp.

    The TIMESTAMPTZ's microseconds since the epoch (UTC) become the TIMESTAMP
    directly (``make_timestamp(epoch_us(...))``): the same value as a cast to
    TIMESTAMP in the store's UTC session, without the time-zone conversion the
    cast makes per value (0.06 s of CPU per million). Checked equal on 337K
    spellings: years 0000-9999, 1582's calendar change, leap days, 24:00,
    second 60, offsets up to +-23:59, up to nine fractional digits.
    """
    return (
        f"CASE WHEN regexp_full_match({ts}, '{TS_PATTERN}') THEN make_timestamp(epoch_us(try_cast("
        f"CASE WHEN contains({ts}, 't') OR contains({ts}, 'z') THEN upper({ts}) ELSE {ts} END "
        f"AS TIMESTAMPTZ))) END"
    )


_TS_VALUE = ts_value_sql(f"({_TS_STR})")

INT_RANGE = {
    "step": (0, 2147483647),
    "attempts": (1, 2147483647),
    "steps": (0, 2147483647),
    "tool_calls": (0, 2147483647),
    "tool_errors": (0, 2147483647),
    "max_tool_calls": (0, 2147483647),
    "input_tokens": (0, 9223372036854775807),
    "output_tokens": (0, 9223372036854775807),
}
VALUE_SETS = {"outcome": ("ok", "retried", "transient_fail", "permanent_fail")}


def fast_check(name: str, tclass: str, required: bool) -> str:
    """A cheap test that the fragment ``name`` has the right type (and value)."""
    if tclass == "str":
        test = f"{name}[1] = '\"'"
        if name in VALUE_SETS:
            test = f"{name} IN (" + ", ".join(f"'\"{v}\"'" for v in VALUE_SETS[name]) + ")"
    elif tclass == "int":
        lo, hi = INT_RANGE[name]
        # try_cast accepts 1.0 and 1e2 as integers: refuse '.', 'e', 'E'.
        test = (
            f"(try_cast({name} AS HUGEINT) BETWEEN {lo} AND {hi} AND NOT contains({name}, '.') "
            f"AND NOT contains({name}, 'e') AND NOT contains({name}, 'E'))"
        )
    elif tclass == "num":
        # try_cast reads NaN, Infinity and 1e400 (DuckDB's parser accepts the
        # first two, JSON does not); none of them is a usable measurement.
        test = f"coalesce(isfinite(try_cast({name} AS DOUBLE)), false)"
    elif tclass == "bool":
        test = f"{name} IN ('true', 'false')"
    else:
        test = f"{name}[1] = '{{'"
    return test if required else f"({name} IS NULL OR {test})"


def _ok_sql() -> str:
    common = ["v = '1'", "kind IN ('\"tool_call\"', '\"loop_exit\"')", "ts_value IS NOT NULL"]
    tc: list[str] = []
    le: list[str] = []
    for name, tclass, required, kinds, _check, _wants in FIELDS:
        test = fast_check(name, tclass, required)
        if len(kinds) == 2:
            common.append(test)
        elif kinds == ("tool_call",):
            tc.append(test)
        else:
            le.append(test)
    per_kind = f"CASE WHEN kind = '\"tool_call\"' THEN {' AND '.join(tc)} ELSE {' AND '.join(le)} END"
    return "coalesce(" + " AND ".join(common + [per_kind]) + ", false)"


def _reason_sql() -> str:
    """The first thing wrong with a line that failed the fast check, in words."""
    kind_text = "json_extract_string(kind, '$')"
    whens = [
        # Too long first, even when blank: the readers that never hold such a line whole cannot tell.
        f"WHEN strlen(line) > {MAX_LINE_BYTES} THEN 'line too long (over {MAX_LINE_BYTES} bytes)'",
        "WHEN unparsed AND trim(line, ' ' || chr(9) || chr(13)) = '' THEN NULL",  # blank line (JSON whitespace): nothing to keep
        f"WHEN trailing_comma THEN '{TRAILING_COMMA_REASON}'",
        "WHEN unparsed AND is_last_unterminated THEN 'truncated last line (no newline at the end, not valid JSON)'",
        "WHEN unparsed THEN 'malformed JSON'",
        "WHEN ltrim(line)[1] <> '{' THEN 'not a JSON object'",
        # Which of two values would be meant is anyone's guess: keep neither.
        "WHEN dup_key IS NOT NULL THEN 'duplicate key ' || left(to_json(dup_key)::VARCHAR, 60) || ' in the object'",
        "WHEN v IS NULL THEN 'missing required field v'",
        "WHEN v <> '1' THEN 'unknown schema version v=' || left(v, 40) || ' (this loopscope reads v=1)'",
        "WHEN kind IS NULL THEN 'missing required field kind'",
        "WHEN kind NOT IN ('\"tool_call\"', '\"loop_exit\"') "
        "THEN 'unknown kind ' || left(kind, 60) || ' (expected tool_call or loop_exit)'",
    ]
    for name, tclass, required, kinds, check, wants in FIELDS:
        applies = "TRUE" if len(kinds) == 2 else f"{kind_text} = '{kinds[0]}'"
        if required:
            whens.append(f"WHEN {applies} AND {name} IS NULL THEN 'missing required field {name}'")
        if tclass in ("int", "num"):
            # Parsed as doubles, so they would read as a wrong type: say what they are.
            whens.append(
                f"WHEN {applies} AND lower(ltrim({name}, '-')) IN ('nan', 'inf', 'infinity') "
                f"THEN 'bad value for {name}: ' || {name} || ' is not a JSON number (NaN and Infinity are not JSON)'"
            )
        if tclass == "int":
            whens.append(
                f"WHEN {applies} AND regexp_full_match({name}, '-?[0-9]+') AND NOT {fast_check(name, tclass, True)} "
                f"THEN 'bad value for {name}: ' || left({name}, 60) || ', expected {wants or 'an integer'}'"
            )
        whens.append(
            f"WHEN {applies} AND {name} IS NOT NULL AND NOT (json_type({name}::JSON) {_TYPE_TEST[tclass]}) "
            f"THEN 'wrong type for {name}: expected {_TYPE_WORD[tclass]}, got ' || lower(json_type({name}::JSON))"
        )
        if check == "TS_OK":
            whens.append(
                f"WHEN {applies} AND ts_value IS NULL THEN 'bad timestamp ts: ' || left(ts, 60) || ' is not RFC 3339'"
            )
        elif check:
            whens.append(
                f"WHEN {applies} AND {name} IS NOT NULL AND NOT {fast_check(name, tclass, True)} "
                f"THEN 'bad value for {name}: ' || left({name}, 60) || ', expected {wants}'"
            )
        elif tclass == "num":
            whens.append(
                f"WHEN {applies} AND {name} IS NOT NULL AND NOT {fast_check(name, tclass, True)} "
                f"THEN 'bad value for {name}: ' || left({name}, 60) || ', expected a finite number'"
            )
    # NaN / Infinity in a known field has its own reason above; anywhere else (an unknown field):
    whens.append(f"WHEN non_json_number THEN '{NON_JSON_NUMBER_REASON}'")
    # Never drop a line silently, even if the two checks ever disagree.
    whens.append("ELSE 'invalid record'")
    return "CASE\n        " + "\n        ".join(whens) + "\n        END"


# Lines of the current block with their numbers.
CREATE_LINES_SQL = "CREATE OR REPLACE TEMP TABLE _ls_lines (line_no BIGINT, line VARCHAR)"
# ?1 first line number, ?2 the block text (complete lines, '\n' separated).
INSERT_CHUNK_SQL = """
INSERT INTO _ls_lines
SELECT ? + generate_subscripts(s, 1) - 1 AS line_no, unnest(s) AS line
FROM (SELECT string_split(?, chr(10)) AS s)
"""
# ?1 a plain (not compressed) file. One row per line, blank lines as NULL;
# the caller checks the rows' bytes against the file's size. Run outside a
# transaction: committed rows have rowids 0..n-1 in file order (the line
# number is rowid + 1); rows of an open transaction do not.
_READ_CSV = """read_csv(
    ?, columns = {'line': 'VARCHAR'}, delim = chr(1), quote = '', escape = '', header = false,
    auto_detect = false, strict_mode = false, max_line_size = 1048577
)"""
READ_LINES_SQL = f"CREATE OR REPLACE TEMP TABLE _ls_raw AS SELECT line FROM {_READ_CSV}"
# The loader's read-ahead (``ingest.readahead``): the next file's lines, read by
# a second connection while the current file finishes on one thread, go to an
# in-memory database that every connection of the store's DuckDB instance sees
# (a TEMP table is its own connection's only). ``next`` is being read or ready;
# ``lines`` the file being loaded. DROP and RENAME run between the files'
# transactions (one transaction writes to one database only).
READ_AHEAD_DB = "loopscope_read_ahead"
ATTACH_READ_AHEAD_SQL = f"ATTACH IF NOT EXISTS ':memory:' AS {READ_AHEAD_DB}"
DETACH_READ_AHEAD_SQL = f"DETACH DATABASE IF EXISTS {READ_AHEAD_DB}"
READ_AHEAD_LINES_SQL = f"CREATE OR REPLACE TABLE {READ_AHEAD_DB}.next AS SELECT line FROM {_READ_CSV}"
PROMOTE_READ_AHEAD_SQL = f"""
DROP TABLE IF EXISTS {READ_AHEAD_DB}.lines;
ALTER TABLE {READ_AHEAD_DB}.next RENAME TO lines;
"""
DROP_READ_AHEAD_SQL = f"""
DROP TABLE IF EXISTS {READ_AHEAD_DB}.lines;
DROP TABLE IF EXISTS {READ_AHEAD_DB}.next;
"""
# The read runs on one thread: DuckDB's parallel CSV reader, which keeps the
# rows in file order, spent a third more CPU at 1M for about the same wall
# time (docs/loading.md, sixth pass); so does the fast path's loop_exit insert
# (seventh pass). THREADS_SQL reads the connection's setting, restored after
# (``jsonl.one_thread``).
THREADS_SQL = "SELECT current_setting('threads')"
ONE_THREAD_SQL = "SET threads = 1"
SET_THREADS_SQL = "SET threads = ?"
# Rows, their bytes (blank lines are NULL: 0), and the bytes of the last row.
_COUNT_LINES = "SELECT count(*), sum(coalesce(strlen(line), 0)), arg_max(coalesce(strlen(line), 0), rowid) FROM "
COUNT_LINES_SQL = _COUNT_LINES + "_ls_raw"
COUNT_READ_AHEAD_SQL = _COUNT_LINES + f"{READ_AHEAD_DB}.next"
# Where a whole file's lines are (``jsonl.WholeFile.lines_from``): read by this
# connection, or read ahead by the loader's second one. Line number = rowid + 1.
WHOLE_FILE_LINES = {
    "file": "SELECT rowid + 1 AS line_no, line FROM _ls_raw",
    "read_ahead": f"SELECT rowid + 1 AS line_no, line FROM {READ_AHEAD_DB}.lines",
}
_LINE_SOURCES = {
    "block": "SELECT line_no, line FROM _ls_lines",
    **WHOLE_FILE_LINES,
    # the lines the fast path (fast_sql) left over
    "rest": "SELECT line_no, line FROM _ls_rest",
}

_FRAGMENTS = ",\n        ".join(f"nullif(f[{i}], 'null')::VARCHAR AS {name}" for i, name in enumerate(KNOWN_FIELDS, 1))

# ?1 line number of an unterminated last line (or -1).
_CHECK_TEMPLATE = f"""
CREATE OR REPLACE TEMP TABLE _ls_checked AS
WITH lines AS ({{lines}}),
lenient AS (
    SELECT line_no, line,
           CASE WHEN strlen(line) <= {MAX_LINE_BYTES} THEN try(json_extract(line, {_PATHS})) END AS f
    FROM lines
    WHERE line IS NOT NULL AND line <> ''
),
strict AS (
    SELECT *, coalesce(f IS NOT NULL AND {trailing_comma_sql('line')}, false) AS trailing_comma FROM lenient
),
parsed AS (
    -- what DuckDB parsed, unless it is not strict JSON
    SELECT line_no, line, trailing_comma, CASE WHEN NOT trailing_comma THEN f END AS f FROM strict
),
flat AS (
    SELECT line_no, line, f IS NULL AND NOT trailing_comma AS unparsed, trailing_comma, line_no = ? AS is_last_unterminated,
        -- known keys present (a JSON null included), and whether one belongs to the other kind
        list_count(f) AS n_known,
        CASE WHEN f[2] = '"tool_call"' THEN {_TC_FOREIGN} ELSE {_LE_FOREIGN} END AS foreign_key,
        {_FRAGMENTS}
    FROM parsed
),
typed AS (
    SELECT *, {_TS_VALUE} AS ts_value FROM flat
),
checked AS (
    -- NaN / Infinity outside strings: looked for only in lines that pass every other check
    SELECT * EXCLUDE (ok0), ok0 AND NOT non_json_number AS ok
    FROM (
        SELECT *, CASE WHEN ok0 THEN coalesce({non_json_number_sql('line')}, false) ELSE false END AS non_json_number
        FROM (SELECT *, {_ok_sql()} AS ok0 FROM typed)
    )
)
-- The line itself is kept only where it is still needed: bad lines (for the
-- quarantine) and lines with unknown fields (for extra).
-- A line with a key twice fails (dup_key): JSON parsers disagree on which
-- value wins, so loading either would be a guess.
-- Fast path: a good line whose key count equals the number of known keys
-- present, none of them of the other kind, has neither unknown nor repeated
-- keys. Only the others (usually a few percent) have their key list examined.
SELECT * EXCLUDE (line, keys, ok, n_known, foreign_key), ok AND dup_key IS NULL AS ok,
       CASE WHEN NOT ok OR dup_key IS NOT NULL OR has_extra THEN line END AS line
FROM (
    SELECT *,
        -- CASE guards: the kind's key list is built only for the lines examined.
        CASE WHEN keys IS NOT NULL AND len(keys) > len(list_distinct(keys))
             THEN list_filter(keys, lambda k, i: list_position(keys, k) < i)[1] END AS dup_key,
        CASE WHEN keys IS NOT NULL
             THEN CASE WHEN kind = '"tool_call"' THEN NOT list_has_all({_TC_LIST}, keys)
                       ELSE NOT list_has_all({_LE_LIST}, keys) END
             ELSE false END AS has_extra
    FROM (
        SELECT *, CASE WHEN ok AND (foreign_key OR len(json_keys(line)) <> n_known) THEN json_keys(line) END AS keys
        FROM checked
    )
)
"""
CHECK_SQL = {name: _CHECK_TEMPLATE.replace("{lines}", lines) for name, lines in _LINE_SOURCES.items()}

QUARANTINE_CHECKED_SQL = f"""
INSERT INTO quarantine (source_id, path, line_no, reason, raw)
SELECT ?, ?, line_no, reason, left(CASE WHEN suffix(line, chr(13)) THEN line[:-2] ELSE line END, {RAW_CAP})
FROM (SELECT line_no, line, {_reason_sql()} AS reason FROM _ls_checked WHERE NOT ok)
WHERE reason IS NOT NULL
ORDER BY line_no
"""
QUARANTINE_ONE_SQL = "INSERT INTO quarantine (source_id, path, line_no, reason, raw) VALUES (?, ?, ?, ?, ?)"
TOO_LONG_REASON = f"line too long (over {MAX_LINE_BYTES} bytes)"


def raw_text(raw: bytes) -> str:
    """A bad line's bytes as the quarantine keeps them: invalid bytes as ``\\xNN``, at most ``RAW_CAP`` characters."""
    return raw[: RAW_CAP * 4].decode("utf-8", errors="backslashreplace")[:RAW_CAP]


def not_utf8_reason(raw: bytes, exc: UnicodeDecodeError) -> str:
    """The quarantine reason for a line that is not UTF-8."""
    return f"not UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line)"

# Unknown fields: the line with its kind's known keys removed. A JSON merge
# patch (RFC 7396) that sets a key to null deletes it and leaves everything
# else as it is (nested values and unknown fields that are null included).
EXTRA_PATCH = {
    kind: "{" + ",".join(f'"{k}":null' for k in fields) + "}"
    for kind, fields in (("tool_call", TOOL_CALL_FIELDS), ("loop_exit", LOOP_EXIT_FIELDS))
}
"""Per kind, the JSON merge patch that removes the known keys from a record, leaving its unknown fields."""
_TC_PATCH, _LE_PATCH = EXTRA_PATCH["tool_call"], EXTRA_PATCH["loop_exit"]
EXTRA_SQL = f"""
CREATE OR REPLACE TEMP TABLE _ls_extra AS
SELECT line_no,
       json_merge_patch(line, CASE WHEN kind = '"tool_call"' THEN '{_TC_PATCH}' ELSE '{_LE_PATCH}' END) AS extra
FROM _ls_checked
WHERE ok AND has_extra
"""


def _s(name: str) -> str:
    # A string fragment without escapes is its text between the quotes; only
    # strings with a backslash need the JSON parser.
    return f"CASE WHEN contains(c.{name}, chr(92)) THEN json_extract_string(c.{name}, '$') ELSE c.{name}[2:-2] END"


def _common_cols() -> str:
    return f"""
    ?::BIGINT + c.line_no AS seq, ?::INTEGER AS source_id, c.line_no, 1 AS v,
    c.ts_value AS ts,
    {_s('conversation_id')} AS conversation_id,
    {_s('prompt_id')} AS prompt_id,
    coalesce({_s('agent')}, 'default') AS agent,
    {_s('trace_id')} AS trace_id,
    {_s('span_id')} AS span_id,
    c.tags::JSON AS tags"""


# ?1 seq base, ?2 source_id. try_cast: DuckDB may evaluate the projection on
# rows the WHERE drops (bad lines); the values of good lines always cast.
INSERT_TOOL_CALLS_SQL = f"""
INSERT INTO tool_calls
SELECT {_common_cols()},
    {_s('tool_call_id')} AS tool_call_id,
    {_s('tool_name')} AS tool_name,
    try_cast(c.step AS INTEGER) AS step,
    c.input_shape::JSON AS input_shape,
    {_s('args_fingerprint')} AS args_fingerprint,
    {_s('outcome')} AS outcome,
    c.is_error = 'true' AS is_error,
    coalesce(try_cast(c.attempts AS INTEGER), 1) AS attempts,
    try_cast(c.latency_ms AS DOUBLE) AS latency_ms,
    {_s('error_type')} AS error_type,
    {_s('error_message')} AS error_message,
    coalesce(c.replayed = 'true', false) AS replayed,
    x.extra
FROM _ls_checked c LEFT JOIN _ls_extra x USING (line_no)
WHERE c.ok AND c.kind = '"tool_call"'
"""

INSERT_LOOP_EXITS_SQL = f"""
INSERT INTO loop_exits
SELECT {_common_cols()},
    {_s('exit_reason')} AS exit_reason,
    try_cast(c.steps AS INTEGER) AS steps,
    try_cast(c.tool_calls AS INTEGER) AS tool_calls,
    try_cast(c.tool_errors AS INTEGER) AS tool_errors,
    try_cast(c.max_tool_calls AS INTEGER) AS max_tool_calls,
    try_cast(c.input_tokens AS BIGINT) AS input_tokens,
    try_cast(c.output_tokens AS BIGINT) AS output_tokens,
    try_cast(c.duration_ms AS DOUBLE) AS duration_ms,
    {_s('error_type')} AS error_type,
    {_s('error_message')} AS error_message,
    x.extra
FROM _ls_checked c LEFT JOIN _ls_extra x USING (line_no)
WHERE c.ok AND c.kind = '"loop_exit"'
"""

COUNT_CHECKED_SQL = """
SELECT
    count(*) FILTER (WHERE ok AND kind = '"tool_call"'),
    count(*) FILTER (WHERE ok AND kind = '"loop_exit"'),
    (SELECT count(*) FROM quarantine WHERE source_id = ? AND line_no BETWEEN ? AND ?)
FROM _ls_checked
"""
LAST_LINE_TRUNCATED_SQL = "SELECT unparsed FROM _ls_checked WHERE line_no = ?"
DROP_TEMP_SQL = """
DROP TABLE IF EXISTS _ls_lines;
DROP TABLE IF EXISTS _ls_raw;
DROP TABLE IF EXISTS _ls_checked;
DROP TABLE IF EXISTS _ls_extra;
DROP TABLE IF EXISTS _ls_rest;
"""

MAX_SEQ_SQL = """
SELECT greatest(
    (SELECT coalesce(max(seq), 0) FROM tool_calls),
    (SELECT coalesce(max(seq), 0) FROM loop_exits)
)
"""
