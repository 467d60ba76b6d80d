"""Views that read what the OpenTelemetry Collector's ``clickhouse`` exporter writes, as loopscope's tables.

loopscope's collector emits one OpenTelemetry log record per tool call
(``loopscope.tool_call``) and per loop exit (``loopscope.agent_exit``); the
record's body is the v1 record without its envelope (time, trace and span ids
travel in the log record itself). The Collector's ``clickhouse`` exporter writes
them into ``otel_logs`` (exporter DDL: ``Timestamp DateTime64(9)``,
``TraceId``/``SpanId String`` (hex), ``Body String`` (a map body as JSON text),
``LogAttributes Map(LowCardinality(String), String)`` (every attribute as a
string), ``EventName String`` in recent exporters; older ones leave the event
name in the ``event.name`` attribute).

``create_otel_store`` gives the analyses ``tool_calls`` and ``loop_exits``
with the columns of loopscope's own tables: materialised views (``otel_log_*_mv``)
parse each new log record once, as ClickHouse inserts it, into tables
``otel_log_tool_calls`` / ``otel_log_loop_exits`` (``ReplacingMergeTree``,
ordered by conversation); the rows already in
``otel_logs`` are copied once, when loopscope first connects. Queries then read
typed columns, never JSON (reading the JSON at query time was about 10x
slower on chDB, and grows with every query over billions of rows). A log
record delivered twice (the exporter retries a batch) is one row: the tables
are deduplicated on the row's hash, and every query runs with ``final = 1``.
Each field is read the way the OTLP file reader does (``ingest/otlp/logs.py``): the body's value, else the alias
map's attribute (``gen_ai.conversation.id``, ``gen_ai.tool.call.id``...), else
the envelope; a prompt without a ``prompt_id`` is its trace
(``otlp-trace:<trace id>``). Records that lack a field the record format
requires (a tool call without id, name or step) are left out here, where the
file reader quarantines them.

``seq`` (the input position that breaks ``ts`` ties) has no equivalent in a
table filled by many collectors at once: it is a hash of the log record
(time, trace and span ids, body), unique in practice and stable.

Tool spans in ``otel_traces`` are read by the views of ``store.clickhouse_spans``;
``tool_calls`` / ``loop_exits`` are views over both (``create_otel_store``).
"""

from __future__ import annotations

from typing import Any

from loopscope.analyses.errors import DatabaseError
from loopscope.analyses.ingest.otlp.aliases import AGENT_NAME_KEYS, CONVERSATION_KEYS, TOOL_CALL_ID_KEYS, TOOL_NAME_KEYS

TOOL_CALL_EVENT = "loopscope.tool_call"
EXIT_EVENT = "loopscope.agent_exit"


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _body_str(key: str) -> str:
    # a string field of the body, NULL when absent, null or empty
    return f"nullIf(JSONExtract(Body, {_quote(key)}, 'Nullable(String)'), '')"


def _body_raw(key: str) -> str:
    # a structured field (tags, input_shape) as JSON text, NULL when absent or null
    return f"nullIf(nullIf(JSONExtractRaw(Body, {_quote(key)}), ''), 'null')"


def _body_num(key: str, ch_type: str) -> str:
    return f"JSONExtract(Body, {_quote(key)}, 'Nullable({ch_type})')"


def _attr(keys: tuple[str, ...]) -> str:
    return ", ".join(f"nullIf(LogAttributes[{_quote(k)}], '')" for k in keys)


def _first(*parts: str) -> str:
    return f"coalesce({', '.join(parts)})"


def _common(event_expr: str) -> str:
    trace = "concat('otlp-trace:', TraceId)"
    return f""",
        {_first(_body_num('v', 'Int32'), '1')} AS v,
        {_first("parseDateTime64BestEffortOrNull(JSONExtractString(Body, 'ts'), 6, 'UTC')",
                "toDateTime64(Timestamp, 6, 'UTC')")} AS ts,
        {_first(_body_str('conversation_id'), _attr(CONVERSATION_KEYS), trace)} AS conversation_id,
        {_first(_body_str('prompt_id'), trace)} AS prompt_id,
        {_first(_body_str('agent'), _attr(AGENT_NAME_KEYS), "'default'")} AS agent,
        {_first(_body_str('trace_id'), "nullIf(TraceId, '')")} AS trace_id,
        {_first(_body_str('span_id'), "nullIf(SpanId, '')")} AS span_id,
        {_body_raw('tags')} AS tags"""


def _seq() -> str:
    # a stable, practically unique position for rows that have no input order
    return "toInt64(bitAnd(cityHash64(Timestamp, TraceId, SpanId, Body), 9223372036854775807))"


def _event(columns: set[str]) -> str:
    if "EventName" in columns:
        return "if(EventName != '', EventName, LogAttributes['event.name'])"
    return "LogAttributes['event.name']"


def tool_calls_select_sql(columns: set[str]) -> str:
    """``tool_calls`` rows from ``otel_logs`` (``columns``: the table's columns, for the exporter version)."""
    outcome = _first(_body_str("outcome"), "'ok'")
    return f"""
SELECT seq, source_id, line_no, v, ts, conversation_id, prompt_id, agent, trace_id, span_id, tags,
       assumeNotNull(tool_call_id) AS tool_call_id, assumeNotNull(tool_name) AS tool_name,
       assumeNotNull(step) AS step, input_shape, args_fingerprint, outcome, is_error, attempts, latency_ms,
       error_type, error_message, replayed, extra
FROM (
    SELECT
        {_seq()} AS seq,
        CAST(NULL AS Nullable(Int32)) AS source_id,
        CAST(NULL AS Nullable(Int64)) AS line_no{_common(_event(columns))},
        {_first(_body_str('tool_call_id'), _attr(TOOL_CALL_ID_KEYS))} AS tool_call_id,
        {_first(_body_str('tool_name'), _attr(TOOL_NAME_KEYS))} AS tool_name,
        {_body_num('step', 'Int32')} AS step,
        {_body_raw('input_shape')} AS input_shape,
        {_body_str('args_fingerprint')} AS args_fingerprint,
        {outcome} AS outcome,
        {_first(_body_num('is_error', 'Bool'), f"{outcome} IN ('transient_fail', 'permanent_fail')")} AS is_error,
        toInt32({_first(_body_num('attempts', 'Int32'), '1')}) AS attempts,
        {_body_num('latency_ms', 'Float64')} AS latency_ms,
        {_body_str('error_type')} AS error_type,
        {_body_str('error_message')} AS error_message,
        {_first(_body_num('replayed', 'Bool'), 'false')} AS replayed,
        CAST(NULL AS Nullable(String)) AS extra
    FROM otel_logs
    WHERE {_event(columns)} = {_quote(TOOL_CALL_EVENT)}
)
WHERE tool_call_id IS NOT NULL AND tool_name IS NOT NULL AND step IS NOT NULL
"""


def loop_exits_select_sql(columns: set[str]) -> str:
    """``loop_exits`` rows from ``otel_logs``."""
    return f"""
SELECT seq, source_id, line_no, v, ts, conversation_id, prompt_id, agent, trace_id, span_id, tags,
       assumeNotNull(exit_reason) AS exit_reason, steps, tool_calls, tool_errors, max_tool_calls, input_tokens,
       output_tokens, duration_ms, error_type, error_message, extra
FROM (
    SELECT
        {_seq()} AS seq,
        CAST(NULL AS Nullable(Int32)) AS source_id,
        CAST(NULL AS Nullable(Int64)) AS line_no{_common(_event(columns))},
        {_body_str('exit_reason')} AS exit_reason,
        {_body_num('steps', 'Int32')} AS steps,
        {_body_num('tool_calls', 'Int32')} AS tool_calls,
        {_body_num('tool_errors', 'Int32')} AS tool_errors,
        {_body_num('max_tool_calls', 'Int32')} AS max_tool_calls,
        {_body_num('input_tokens', 'Int64')} AS input_tokens,
        {_body_num('output_tokens', 'Int64')} AS output_tokens,
        {_body_num('duration_ms', 'Float64')} AS duration_ms,
        {_body_str('error_type')} AS error_type,
        {_body_str('error_message')} AS error_message,
        CAST(NULL AS Nullable(String)) AS extra
    FROM otel_logs
    WHERE {_event(columns)} = {_quote(EXIT_EVENT)}
)
WHERE exit_reason IS NOT NULL
"""


LOG_TABLES = ("otel_log_tool_calls", "otel_log_loop_exits")
LOG_VIEWS = ("otel_log_tool_calls_mv", "otel_log_loop_exits_mv")
# what earlier versions created (materialised views into tool_calls / loop_exits themselves)
OLD_VIEWS = ("tool_calls_from_otel_logs", "loop_exits_from_otel_logs")


def _drop_derived(con: Any, present: dict[str, str]) -> None:
    """Drop what an earlier setup derived from the Collector's tables: it is all made again from them.

    ``tool_calls`` / ``loop_exits`` of an earlier version were tables filled by materialised views;
    rows loaded into them with ``loopscope load`` would be lost, so such a table is refused.
    """
    from loopscope.analyses.store import clickhouse_spans

    for name in ("tool_calls", "loop_exits"):
        if present.get(name, "View") != "View":
            loaded = con.execute_native(f"SELECT count() FROM {name} WHERE source_id IS NOT NULL").fetchone()
            if loaded and loaded[0]:
                raise DatabaseError(
                    f"{con.url}: {name} holds {loaded[0]} rows loaded with `loopscope load` next to the Collector's "
                    "records, which this version keeps apart",
                    hint=f"copy them to another database (INSERT INTO other.{name} SELECT * FROM {name} WHERE "
                    f"source_id IS NOT NULL), then drop {name} and connect again",
                )
    for name in (*OLD_VIEWS, *LOG_VIEWS, "tool_calls", "loop_exits", *reversed(clickhouse_spans.VIEWS)):
        if name in present:
            con.command(f"DROP {'VIEW' if present[name] in ('View', 'MaterializedView') else 'TABLE'} IF EXISTS {name}")
    for name in (*LOG_TABLES, *clickhouse_spans.SNAPSHOT_TABLES, clickhouse_spans.STATE_TABLE,
                 clickhouse_spans.CLEANED_TABLE):
        con.command(f"DROP TABLE IF EXISTS {name}")


def create_otel_store(con: Any, present: dict[str, str], tables: tuple[str, str]) -> None:
    """Make ``tool_calls`` / ``loop_exits`` views over what the Collector writes, and what they read.

    - ``otel_logs`` (loopscope's collector's log records): tables ``otel_log_tool_calls`` /
      ``otel_log_loop_exits`` (``ReplacingMergeTree``, by conversation), filled by materialised
      views that parse each new log record once, and once from the records already there;
    - ``otel_traces`` (tool, agent and model spans of any instrumentation): the views of
      ``store.clickhouse_spans``, which follow the span tree, kept in ``otel_span_tool_calls`` /
      ``otel_span_loop_exits`` (``clickhouse_spans.refresh_spans``, on connection);
    - ``tool_calls`` / ``loop_exits``: views, the union of the two.

    ``tables``: the DDL of loopscope's two tables (``store.clickhouse.TABLES_SQL``), given
    another name and engine here. Everything is derived from the Collector's tables, so a
    setup from an earlier version is dropped and made again.
    """
    from loopscope.analyses.store import clickhouse_spans

    _drop_derived(con, present)
    sources: dict[str, list[str]] = {"tool_calls": [], "loop_exits": []}
    if "otel_logs" in present:
        columns = {row[0] for row in con.execute_native(
            "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'otel_logs'"
        ).fetchall()}
        for target, table, view, ddl, select in (
            ("tool_calls", LOG_TABLES[0], LOG_VIEWS[0], tables[0], tool_calls_select_sql(columns)),
            ("loop_exits", LOG_TABLES[1], LOG_VIEWS[1], tables[1], loop_exits_select_sql(columns)),
        ):
            con.command(ddl.replace(f"EXISTS {target} (", f"EXISTS {table} (").replace(
                "ENGINE = MergeTree ORDER BY (conversation_id, prompt_id, ts, seq)",
                "ENGINE = ReplacingMergeTree ORDER BY (conversation_id, seq)"))
            # new log records from now on, parsed once on insert
            con.command(f"CREATE MATERIALIZED VIEW IF NOT EXISTS {view} TO {table} AS {select}")
            # the ones already there (a record the view also caught is deduplicated: same row, same seq)
            con.command(f"INSERT INTO {table} {select}")
            sources[target].append(table)
    if "otel_traces" in present:
        clickhouse_spans.create_span_views(con, tables, exclude_logged="otel_logs" in present)
        sources["tool_calls"].append(clickhouse_spans.SNAPSHOT_TABLES[0])
        sources["loop_exits"].append(clickhouse_spans.SNAPSHOT_TABLES[1])
    for target, ddl in (("tool_calls", tables[0]), ("loop_exits", tables[1])):
        names = ", ".join(_columns(ddl))
        union = " UNION ALL ".join(f"SELECT {names} FROM {source}" for source in sources[target])
        con.command(f"CREATE OR REPLACE VIEW {target} AS {union}")


def _columns(ddl: str) -> list[str]:
    """The column names of one of ``TABLES_SQL``'s CREATE TABLE statements, in order."""
    body = ddl[ddl.index("(") + 1:ddl.rindex(") ENGINE")]
    names, depth, start = [], 0, 0
    for i, ch in enumerate(body + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            names.append(body[start:i].split()[0])
            start = i + 1
    return names
