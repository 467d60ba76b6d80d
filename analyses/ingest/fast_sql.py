"""The fast path of the records loader: lines that are exactly what the collector writes.

The collector (``collectors/sinks.py``) writes every record the same way:
compact JSON, every field of its kind present (``null`` when it has no
value; ``tags`` only when set), in the field order of docs/records.md. For such a line one typed
parse is enough, and a single comparison proves it valid:

1. ``from_json`` parses the line once into the kind's fields: integers to
   BIGINT and booleans to BOOLEAN, strings decoded, numbers (``latency_ms``,
   ``duration_ms``) as written, objects as compact JSON. A whole file is parsed
   strictly (a line that is no JSON fails the statement, and the loader loads
   the file again with the tolerant parse, ``try()``); blocks tolerantly.
2. The fields are rendered back into the canonical line: keys in order,
   strings quoted (re-escaped with ``to_json`` when the line has a
   backslash), integers and booleans as their canonical text, numbers and
   objects as their text, ``null`` for no value (``tags`` left out instead,
   as the collector does).
3. The line is accepted only if it is byte for byte that rendering (and its
   closing brace: same length, the rendering as its start, '}' as its end), and
   the values pass the spec's checks (types of the non-string fields,
   ranges, the outcome set, a parseable ``ts``, required fields present).
   Unknown fields written after the known ones (a newer writer's) are
   accepted too when their keys are neither known keys nor repeated; they
   go to ``extra`` exactly as the full validation puts them there.

Equality with the rendering is the proof: a line that equals the canonical
text of its own values has exactly the known keys, once each, in order,
with strings where strings belong and integers and booleans spelled as JSON
spells them (a ``"1"``, ``1.0`` or ``1`` where a boolean belongs parses to a
value whose text differs), so there is nothing the full validation
(``records``) could find. Everything else (unknown fields among the
known ones, other key orders, whitespace, missing keys, wrong types, bad
JSON) is left for that full validation, which names the problem; the two
paths store the same row for any line (tests/test_loader_fast_path.py
checks it).

Accepted lines are inserted straight into ``tool_calls`` / ``loop_exits``;
the lines left over are collected by line number for the full validation.
The SQL is built once, at import, from the fixed field table of
``records``; no value is ever formatted into it.
"""

from __future__ import annotations

import json

from loopscope.analyses.ingest.records import (
    FIELDS,
    INT_RANGE,
    LOOP_EXIT_FIELDS,
    MAX_LINE_BYTES,
    TOOL_CALL_FIELDS,
    TRAILING_COMMA_RE,
    NON_JSON_NUMBER_RE,
    EXTRA_PATCH,
    VALUE_SETS,
    WHOLE_FILE_LINES,
    fast_check,
    ts_value_sql,
)

# The order the collector writes each kind's fields in (docs/records.md's
# tables); tests/test_loader_fast_path.py checks it against a real collector.
_COMMON_ORDER = ("v", "kind", "ts", "conversation_id", "prompt_id", "agent", "trace_id", "span_id", "tags")
TOOL_CALL_ORDER: tuple[str, ...] = _COMMON_ORDER + (
    "tool_call_id", "tool_name", "step", "input_shape", "args_fingerprint", "outcome", "is_error", "attempts",
    "latency_ms", "error_type", "error_message", "replayed",
)
LOOP_EXIT_ORDER: tuple[str, ...] = _COMMON_ORDER + (
    "exit_reason", "steps", "tool_calls", "tool_errors", "max_tool_calls", "input_tokens", "output_tokens",
    "duration_ms", "error_type", "error_message",
)
assert sorted(TOOL_CALL_ORDER) == sorted(TOOL_CALL_FIELDS) and sorted(LOOP_EXIT_ORDER) == sorted(LOOP_EXIT_FIELDS)
OMITTED_WHEN_NULL = frozenset({"tags"})
"""Fields the collector leaves out when they have no value (every other field is written, ``null`` if empty)."""

_CLASS = {name: tclass for name, tclass, *_ in FIELDS} | {"v": "int", "kind": "str"}
_REQUIRED = frozenset(name for name, _tclass, required, *_ in FIELDS if required)

# Where a chunk's lines come from: the file read by DuckDB's CSV reader (line
# number = rowid + 1) or a block of lines sent from Python.
_LINE_SOURCES = {
    **WHOLE_FILE_LINES,
    "block": "SELECT line_no, line FROM _ls_lines",
}

# An RFC 3339 timestamp to UTC, as the validator (records) reads it.
_TS_VALUE = ts_value_sql("ts")


# How ``from_json`` types each class of field: integers and booleans straight
# to their SQL type (no text to make and cast back), objects as compact JSON,
# strings and numbers as text (a number's text keeps the spelling the line
# has: ``5`` and ``5.0`` both render back as written).
_PARSED_AS = {"str": "VARCHAR", "num": "VARCHAR", "obj": "JSON", "int": "BIGINT", "bool": "BOOLEAN"}


def _structure(fields: tuple[str, ...]) -> str:
    return json.dumps({k: _PARSED_AS[_CLASS[k]] for k in fields})


def _rendering(head: str, fields: tuple[str, ...], escaped: bool) -> str:
    # ``head``: the line's fixed start ('{"v":1,"kind":"tool_call"'), checked
    # with starts_with before the parse; ``fields``: the fields after it.
    # Pieces: constant text (str) or an SQL expression (tuple); adjacent
    # constants are joined, so the concat has as few arguments as it can.
    pieces: list[str | tuple[str]] = [head]
    for name in fields:
        key = "," + json.dumps(name) + ":"
        if name in OMITTED_WHEN_NULL:
            # The key only with a value: concat skips the NULL value itself.
            pieces += [(f"CASE WHEN {name} IS NULL THEN '' ELSE '{key}' END",), (f"{name}::VARCHAR",)]
            continue
        if _CLASS[name] != "str":
            pieces.append(key)
            # An integer or boolean renders as its canonical text (``1``, ``true``):
            # a line that spells it otherwise (``1.0``, ``"1"``, ``1e0``) differs.
            pieces.append((f"coalesce({name}::VARCHAR, 'null')",))
        elif escaped:
            pieces += [key, (f"coalesce(to_json({name})::VARCHAR, 'null')",)]
        elif name in _REQUIRED:
            # No backslash in the line: no string in it has an escape, so its
            # text is its value between quotes. A required field is checked
            # non-null, so its quotes are constant text (were it NULL, concat
            # would skip it and render '""', which that line cannot be: it
            # would then hold an empty string there, not a null).
            pieces += [key + '"', (name,), '"']
        else:
            # ``null``, or the value between quotes. Constant pieces around the
            # value (concat skips a NULL): no string is made per field and line
            # (an inner concat made one: about 0.1 s of CPU per million lines).
            pieces += [
                (f"""CASE WHEN {name} IS NULL THEN '{key}null' ELSE '{key}"' END""",),
                (name,),
                (f"""CASE WHEN {name} IS NULL THEN '' ELSE '"' END""",),
            ]
    args: list[str] = []
    for piece in pieces:
        if isinstance(piece, str) and args and args[-1].startswith("'"):
            args[-1] = args[-1][:-1] + piece + "'"
        else:
            args.append(f"'{piece}'" if isinstance(piece, str) else piece[0])
    # No closing brace: the line is this and '}', or this, ',' and unknown fields.
    return "concat(" + ", ".join(args) + ")"


def value_checks(fields: tuple[str, ...], line_length: bool = True) -> str:
    """The spec's value checks on the text of each field (``ts_value`` the parsed ``ts``), as one SQL condition.

    ``line_length``: also check ``_line`` against ``MAX_LINE_BYTES``.
    """
    tests = ["ts_value IS NOT NULL"] + ([f"strlen(_line) <= {MAX_LINE_BYTES}"] if line_length else [])
    for name, tclass, required, _kinds, _check, _wants in FIELDS:
        if name not in fields:
            continue
        if tclass == "str":
            if name in VALUE_SETS:
                values = ", ".join(f"'{v}'" for v in VALUE_SETS[name])
                tests.append(f"{name} IN ({values})" if required else f"({name} IS NULL OR {name} IN ({values}))")
            elif required:
                tests.append(f"{name} IS NOT NULL")
        elif tclass == "obj":
            test = f"starts_with({name}::VARCHAR, '{{')"
            tests.append(test if required else f"({name} IS NULL OR {test})")
        elif tclass == "num":
            # The validator's check reads the JSON fragment; a number's text here is the same fragment.
            tests.append(fast_check(name, tclass, required))
        else:
            # Parsed to BIGINT / BOOLEAN: the rendering proved the text is the
            # canonical spelling of this value, so the range is checked on the value.
            test = f"{name} BETWEEN {INT_RANGE[name][0]} AND {INT_RANGE[name][1]}" if tclass == "int" else f"{name} IS NOT NULL"
            tests.append(test if required else f"({name} IS NULL OR {test})")
    return " AND ".join(tests)


def _insert_sql(kind: str, order: tuple[str, ...], lines: str, columns: str, tolerant: bool) -> str:
    # ``tolerant``: a line that is no JSON at all parses to NULL (try()) and is left for
    # the validator; else it fails the statement (the loader then loads the file again,
    # tolerant: ``jsonl.MalformedLine``), for a fifth less CPU in the parse.
    head = '{"v":1,"kind":"' + kind + '"'
    assert order[:2] == ("v", "kind")
    fields = order[2:]  # v and kind are the fixed start
    parse = f"from_json(line, '{_structure(fields)}')"
    known = "[" + ", ".join(f"'{k}'" for k in order) + "]"
    patch = EXTRA_PATCH[kind]
    # Unknown fields after the known ones: at least one, their keys unknown
    # (not a known key again) and distinct. try(): on a line that does not parse,
    # the tail may be no JSON at all (the line is refused anyway).
    tail_keys = "try(json_keys(concat('{', substr(_line, length(_body) + 2))))"
    # A trailing comma in the unknown fields (DuckDB's parser allows it, JSON
    # does not), even one inside a string: left for the validator to decide.
    tail_ok = (
        f"starts_with(_line, concat(_body, ',')) AND NOT list_has_any({tail_keys}, {known}) "
        f"AND len({tail_keys}) = len(list_distinct({tail_keys})) AND len({tail_keys}) > 0 "
        f"AND NOT regexp_matches(substr(_line, length(_body) + 2), '{TRAILING_COMMA_RE}') "
        f"AND NOT regexp_matches(substr(_line, length(_body) + 2), '{NON_JSON_NUMBER_RE}')"
    )
    return f"""
INSERT INTO {kind}s
SELECT $1::BIGINT + line_no AS seq, $2::INTEGER AS source_id, line_no, 1 AS v, ts_value AS ts, {columns},
       CASE WHEN strlen(_line) > strlen(_body) + 1 THEN json_merge_patch(_line, '{patch}') END AS extra
FROM (
    SELECT *, {_TS_VALUE} AS ts_value,
           CASE WHEN contains(_line, chr(92)) THEN {_rendering(head, fields, True)}
                ELSE {_rendering(head, fields, False)} END AS _body
    FROM (
        SELECT line_no, line AS _line, unnest({f"try({parse})" if tolerant else parse})
        FROM ({lines}) WHERE starts_with(line, '{head},') AND line_no <> $3
    )
)
-- One CASE: DuckDB keeps one copy of the parsed fields for a single
-- expression, where separate conditions would each parse again. The line is
-- the rendering and '}}' (compared in place, without making that string).
WHERE CASE WHEN ((strlen(_line) = strlen(_body) + 1 AND starts_with(_line, _body) AND ends_with(_line, '}}'))
                 OR ({tail_ok})) AND {value_checks(fields)}
      THEN true ELSE false END
"""


_COMMON_COLUMNS = "conversation_id, prompt_id, coalesce(agent, 'default') AS agent, trace_id, span_id, tags"
_TOOL_CALL_COLUMNS = (
    _COMMON_COLUMNS
    + ", tool_call_id, tool_name, step::INTEGER AS step, input_shape, args_fingerprint, outcome, "
    "is_error, coalesce(attempts::INTEGER, 1) AS attempts, latency_ms::DOUBLE AS latency_ms, "
    "error_type, error_message, coalesce(replayed, false) AS replayed"
)
_LOOP_EXIT_COLUMNS = (
    _COMMON_COLUMNS
    + ", exit_reason, steps::INTEGER AS steps, tool_calls::INTEGER AS tool_calls, tool_errors::INTEGER AS tool_errors, "
    "max_tool_calls::INTEGER AS max_tool_calls, input_tokens::BIGINT AS input_tokens, "
    "output_tokens::BIGINT AS output_tokens, duration_ms::DOUBLE AS duration_ms, error_type, error_message"
)

# ?1 seq base (seq = base + line_no), ?2 source_id, ?3 a line left out (an
# unterminated last line, so a file still being written parses strictly; 0 for
# none). Returns the rows inserted. Keyed by line source and ``tolerant``.
FAST_INSERT_SQL: dict[tuple[str, bool], tuple[str, str]] = {
    (name, tolerant): (
        _insert_sql("tool_call", TOOL_CALL_ORDER, lines, _TOOL_CALL_COLUMNS, tolerant),
        _insert_sql("loop_exit", LOOP_EXIT_ORDER, lines, _LOOP_EXIT_COLUMNS, tolerant),
    )
    for name, lines in _LINE_SOURCES.items()
    for tolerant in (True, False)
}

# The lines the fast path did not take, for the full validation.
# ?1 source_id, ?2 first line number, ?3 last line number of the chunk, ?4
# the seq just below this chunk's (seq base + first line - 1): rows of earlier
# loads can share a line number with this chunk's first line (a record
# completed on the line an earlier load read up to), and must not hide it.
REST_SQL: dict[str, str] = {
    name: f"""
CREATE OR REPLACE TEMP TABLE _ls_rest AS
SELECT l.line_no, l.line FROM ({lines}) l
ANTI JOIN (
    SELECT line_no FROM tool_calls WHERE source_id = $1 AND line_no BETWEEN $2 AND $3 AND seq > $4
    UNION ALL
    SELECT line_no FROM loop_exits WHERE source_id = $1 AND line_no BETWEEN $2 AND $3 AND seq > $4
) done ON l.line_no = done.line_no
"""
    for name, lines in _LINE_SOURCES.items()
}

EMPTY_REST_SQL = "CREATE OR REPLACE TEMP TABLE _ls_rest (line_no BIGINT, line VARCHAR)"
"""Nothing left over (the fast path took every line): REST_SQL's table, empty, without the anti join."""

# DuckDB keeps the rows of an INSERT in input order unless told not to; the
# fast inserts carry their own seq and line_no, so order costs time for nothing.
UNORDERED_SQL = "SET preserve_insertion_order = false"
ORDERED_SQL = "RESET preserve_insertion_order"
