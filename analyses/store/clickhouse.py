"""A loopscope store on ClickHouse (a server, or chDB embedded in this process).

``--db`` takes, next to a DuckDB file:

- ``clickhouse://[user@]host[:port]/database`` (HTTP, default port 8123),
- ``clickhouses://[user@]host[:port]/database`` (HTTPS, default port 8443),
- ``chdb:///absolute/path`` (embedded ClickHouse in a folder; ``chdb://memory``: throwaway).

The password comes from ``$LOOPSCOPE_CLICKHOUSE_PASSWORD`` (else
``$CLICKHOUSE_PASSWORD``), the user from the URL, else
``$LOOPSCOPE_CLICKHOUSE_USER`` / ``$CLICKHOUSE_USER``, else ``default``. A URL
that carries a password is refused (it would end up in shell history and
process lists), and the password is never part of a message.

All three go through ``clickhouse-connect``'s client (``get_client``), so
chDB exercises the same code path as a server. ``ClickHouseConnection``
gives the analyses the small part of DuckDB's connection API they use
(``execute(sql, params)`` then ``fetchall`` / ``fetchone`` / ``description``,
``close``); every statement is DuckDB SQL translated by
``store.clickhouse_sql``. The analyses never branch on the engine.

Where the records come from (``ensure_schema``), in this order:

1. loopscope's own tables ``tool_calls`` / ``loop_exits`` (the DuckDB
   layout, loaded by ``loopscope load --db clickhouse://...``);
2. what the OpenTelemetry Collector's ``clickhouse`` exporter writes
   (``otel_logs``, ``otel_traces``): ``tool_calls`` / ``loop_exits`` are views
   over tables fed by materialised views that parse each log record once
   (``store.clickhouse_otel``) and tables of the records derived from the tool
   spans' trees (``store.clickhouse_spans``, made again on connection when
   ``otel_traces`` changed);
3. neither: loopscope's tables are created, empty.

Then the normative views of ``model`` are created over them: ``tool_calls_v``
and ``prompts_v`` translated from ``model``'s SQL, ``errors_v`` and
``id_collisions_v`` from the portable forms below (``model``'s use ``LATERAL``,
which ClickHouse lacks; tests/test_clickhouse_conformance.py checks that on
DuckDB the portable forms give exactly ``model``'s rows).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from loopscope.analyses.errors import DatabaseError, LoopscopeError
from loopscope.analyses.model import ERRORS_CLASSED_CTE
from loopscope.analyses.store.clickhouse_sql import SETTINGS, bind, translate

__all__ = [
    "PASSWORD_ENVS", "SCHEMES", "USER_ENVS", "ClickHouseConnection", "connect_clickhouse", "is_clickhouse_url",
    "redact_url",
]

SCHEMES = ("clickhouse", "clickhouses", "chdb")
PASSWORD_ENVS = ("LOOPSCOPE_CLICKHOUSE_PASSWORD", "CLICKHOUSE_PASSWORD")
USER_ENVS = ("LOOPSCOPE_CLICKHOUSE_USER", "CLICKHOUSE_USER")
DEFAULT_PORTS = {"clickhouse": 8123, "clickhouses": 8443}
INSTALL_HINT = "install the ClickHouse extra: pip install 'loopscope[clickhouse]'"

# --- loopscope's tables (the DuckDB store's columns, in the same order) ---------------------
# ORDER BY / sharding key: conversation_id first, since every per-conversation figure
# (replays, error classes, resolved later) is computed inside one conversation.
TABLES_SQL = (
    """
    CREATE TABLE IF NOT EXISTS tool_calls (
        seq Int64, source_id Nullable(Int32), line_no Nullable(Int64), v Int32, ts DateTime64(6, 'UTC'),
        conversation_id String, prompt_id String, agent String, trace_id Nullable(String),
        span_id Nullable(String), tags Nullable(String), tool_call_id String, tool_name String, step Int32,
        input_shape Nullable(String), args_fingerprint Nullable(String), outcome String, is_error Bool,
        attempts Int32, latency_ms Nullable(Float64), error_type Nullable(String),
        error_message Nullable(String), replayed Bool, extra Nullable(String)
    ) ENGINE = MergeTree ORDER BY (conversation_id, prompt_id, ts, seq)
    """,
    """
    CREATE TABLE IF NOT EXISTS loop_exits (
        seq Int64, source_id Nullable(Int32), line_no Nullable(Int64), v Int32, ts DateTime64(6, 'UTC'),
        conversation_id String, prompt_id String, agent String, trace_id Nullable(String),
        span_id Nullable(String), tags Nullable(String), exit_reason String, steps Nullable(Int32),
        tool_calls Nullable(Int32), tool_errors Nullable(Int32), max_tool_calls Nullable(Int32),
        input_tokens Nullable(Int64), output_tokens Nullable(Int64), duration_ms Nullable(Float64),
        error_type Nullable(String), error_message Nullable(String), extra Nullable(String)
    ) ENGINE = MergeTree ORDER BY (conversation_id, prompt_id, ts, seq)
    """,
)
SUPPORT_TABLES_SQL = (
    """
    CREATE TABLE IF NOT EXISTS sources (
        source_id Int32, path String, input_format String, head_hash Nullable(String), bytes_loaded Int64,
        lines_loaded Int64, first_loaded_at DateTime64(6, 'UTC'), last_loaded_at DateTime64(6, 'UTC'),
        head_len Nullable(Int32), superseded_by Nullable(Int32)
    ) ENGINE = MergeTree ORDER BY source_id
    """,
    # a store made before the column (the DuckDB store's m011_superseded_sources)
    "ALTER TABLE sources ADD COLUMN IF NOT EXISTS superseded_by Nullable(Int32)",
    """
    CREATE TABLE IF NOT EXISTS protocol_violations (
        source_id Nullable(Int32), conversation_id Nullable(String), prompt_id Nullable(String),
        tool_call_id Nullable(String), kind String, detail Nullable(String)
    ) ENGINE = MergeTree ORDER BY kind
    """,
    """
    CREATE TABLE IF NOT EXISTS quarantine (
        source_id Nullable(Int32), path String, line_no Nullable(Int64), reason String, raw Nullable(String),
        quarantined_at DateTime64(6, 'UTC')
    ) ENGINE = MergeTree ORDER BY path
    """,
    # the weekly review's verdicts (`review import`); the audit reads which conversations were reviewed
    """
    CREATE TABLE IF NOT EXISTS reviews (
        conversation_id String, stratum Nullable(String), computed_class Nullable(String),
        recovered_cleanly Nullable(Bool), spun Nullable(Bool), gave_up Nullable(Bool),
        generic_apology Nullable(Bool), notes Nullable(String), source_file String, line_no Int64,
        imported_at DateTime64(6, 'UTC') DEFAULT now64(6)
    ) ENGINE = ReplacingMergeTree ORDER BY conversation_id
    """,
)
SCRATCHPAD_TABLE_SQL = "CREATE TABLE IF NOT EXISTS scratchpad_tools (tool_name String) ENGINE = MergeTree ORDER BY tool_name"

# --- portable forms of the views model.py writes with LATERAL -------------------------------
# DuckDB SQL that both engines run; on DuckDB they give model's rows exactly (tested).
ERRORS_VIEW_PORTABLE_SQL = """
CREATE OR REPLACE VIEW errors_v AS
WITH """ + ERRORS_CLASSED_CTE.format(tool_calls_v="tool_calls_v", prompts="prompts_v") + """,
later AS (
    -- per unrecovered error (seq is unique per record): the first later prompt of its
    -- conversation with a successful, non-replay call of the same tool
    SELECT seq, prompt_id FROM (
        SELECT
            c.seq AS seq,
            q.prompt_id AS prompt_id,
            row_number() OVER (PARTITION BY c.seq ORDER BY q.first_ts, q.first_seq) AS rn
        FROM classed c
        JOIN tool_calls_v o ON o.conversation_id = c.conversation_id AND o.tool_name = c.tool_name
        JOIN prompts_v q ON q.conversation_id = o.conversation_id AND q.prompt_id = o.prompt_id
        WHERE c.error_class <> 'recovered'
          AND NOT o.is_error
          AND NOT o.is_replay
          AND (q.first_ts > c.prompt_first_ts OR (q.first_ts = c.prompt_first_ts AND q.first_seq > c.prompt_first_seq))
    ) ranked
    WHERE rn = 1
)
SELECT
    c.*,
    (c.error_class <> 'recovered' AND r.prompt_id IS NOT NULL) AS resolved_later,
    CASE WHEN c.error_class <> 'recovered' THEN r.prompt_id END AS resolved_in_prompt
FROM classed c
LEFT JOIN later r ON r.seq = c.seq
"""

ID_COLLISIONS_VIEW_PORTABLE_SQL = """
CREATE OR REPLACE VIEW id_collisions_v AS
WITH firsts AS (
    SELECT conversation_id, tool_call_id, prompt_id, tool_name, args_fingerprint, source_id, line_no FROM (
        SELECT
            e.conversation_id AS conversation_id, e.tool_call_id AS tool_call_id, e.prompt_id AS prompt_id,
            e.tool_name AS tool_name, e.args_fingerprint AS args_fingerprint, e.source_id AS source_id,
            e.line_no AS line_no,
            row_number() OVER (PARTITION BY e.conversation_id, e.tool_call_id ORDER BY e.ts, e.seq) AS rn
        FROM tool_calls e
    ) ranked
    WHERE rn = 1
)
SELECT
    c.conversation_id,
    c.prompt_id,
    c.tool_call_id,
    c.seq,
    c.source_id,
    c.line_no,
    c.tool_name,
    c.args_fingerprint,
    f.prompt_id AS first_prompt_id,
    f.tool_name AS first_tool_name,
    f.args_fingerprint AS first_args_fingerprint,
    f.source_id AS first_source_id,
    f.line_no AS first_line_no
FROM tool_calls_v c
JOIN firsts f ON f.conversation_id = c.conversation_id AND f.tool_call_id = c.tool_call_id
WHERE c.is_id_collision
"""

PROTOCOL_VIOLATIONS_VIEW_PORTABLE_SQL = """
CREATE OR REPLACE VIEW protocol_violations_v AS
SELECT source_id, conversation_id, prompt_id, tool_call_id, kind, detail FROM protocol_violations
UNION ALL
SELECT
    c.source_id,
    c.conversation_id,
    c.prompt_id,
    c.tool_call_id,
    'reused_tool_call_id' AS kind,
    'tool call id ' || c.tool_call_id || ' of ' || c.tool_name || ' (prompt ' || c.prompt_id || ') was first used by '
        || c.first_tool_name || CASE WHEN c.first_tool_name = c.tool_name THEN ' with other arguments' ELSE '' END
        || ' (prompt ' || c.first_prompt_id || '): a new call, counted as one, not as a replay' AS detail
FROM id_collisions_v c
LEFT JOIN (
    SELECT DISTINCT conversation_id, tool_call_id FROM protocol_violations
    WHERE kind = 'reused_tool_call_id' AND conversation_id IS NOT NULL AND tool_call_id IS NOT NULL
) v ON v.conversation_id = c.conversation_id AND v.tool_call_id = c.tool_call_id
WHERE v.tool_call_id IS NULL  -- a reader that reported it already (with its lines) is not repeated
"""


def is_clickhouse_url(target: object) -> bool:
    """Whether ``--db`` names a ClickHouse store (a URL with one of ``SCHEMES``) rather than a DuckDB file."""
    return isinstance(target, str) and target.split("://", 1)[0].lower() in SCHEMES and "://" in target


def redact_url(url: str) -> str:
    """The URL without any password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    user = f"{parts.username}@" if parts.username else ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def _env(names: Sequence[str]) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def _client(url: str) -> Any:
    try:
        import clickhouse_connect
    except ImportError:
        raise DatabaseError(f"cannot open {redact_url(url)}: clickhouse-connect is not installed", hint=INSTALL_HINT) from None
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "chdb":
        try:
            import chdb  # noqa: F401 - clickhouse-connect needs it for chdb:// URLs
        except ImportError:
            raise DatabaseError(f"cannot open {url}: chdb is not installed", hint=INSTALL_HINT) from None
        if parts.netloc not in ("", "memory"):
            raise DatabaseError(
                f"cannot open {url}: a chdb URL names a folder (chdb:///absolute/path) or chdb://memory",
                hint="for example --db chdb:///var/lib/loopscope/chdb",
            )
        if parts.path:
            folder = os.path.dirname(os.path.abspath(unquote(parts.path)))
            if parts.netloc == "" and not os.path.isdir(folder):
                raise DatabaseError(f"cannot create the database {url}: folder {folder} does not exist",
                                    hint="create the folder, or pass another --db")
        return clickhouse_connect.get_client(dsn=url)
    if parts.password is not None:
        raise DatabaseError(
            f"refusing {redact_url(url)}: the URL carries a password",
            hint=f"put the password in ${PASSWORD_ENVS[0]} and leave it out of --db (shell history, process lists)",
        )
    database = parts.path.strip("/") or "default"
    user = unquote(parts.username) if parts.username else (_env(USER_ENVS) or "default")
    return clickhouse_connect.get_client(
        host=parts.hostname or "localhost",
        port=parts.port or DEFAULT_PORTS[scheme],
        username=user,
        password=_env(PASSWORD_ENVS) or "",
        database=database,
        secure=scheme == "clickhouses",
    )


def _plain(value: Any) -> Any:
    # DuckDB hands TIMESTAMP back as naive UTC datetimes; so does this connection.
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


class ClickHouseConnection:
    """The part of a DuckDB connection the analyses use, on a ClickHouse client.

    ``execute`` translates the DuckDB statement (cached), binds the parameters
    server-side and keeps the result for ``fetchall`` / ``fetchone``.
    """

    engine = "clickhouse"
    materialises_facts = False
    """prompt_facts is a DuckDB speed-up; here the metrics run on the views."""

    def __init__(self, client: Any, url: str) -> None:
        self._client = client
        self.url = redact_url(url)
        self._rows: list[tuple[Any, ...]] = []
        self._pos = 0
        self.description: list[tuple[Any, ...]] | None = None
        self.layout = "new"
        """Where the records come from: ``loopscope`` (its own tables), ``otel`` (the Collector's), ``new``."""

    # -- DuckDB-like API -----------------------------------------------------------------------
    def execute(self, sql: str, params: object = None) -> ClickHouseConnection:
        """Run one DuckDB statement (translated); ``params`` bound to its ``?`` / ``$N``.

        Two DuckDB statements the analyses use for Parquet files are carried out here, since
        ClickHouse would write the file on the server: ``COPY (query) TO ? (FORMAT parquet...)``
        (the rows come over as Arrow and pyarrow writes the file here) and
        ``SELECT count(*) FROM read_parquet(?)``.
        """
        copy = _COPY_PARQUET.match(sql)
        if copy:
            values = list(params) if isinstance(params, (list, tuple)) else []
            if not values:
                raise DatabaseError("COPY ... TO ? needs the file as its last parameter", hint="this is a bug in loopscope")
            path = values.pop()
            return self._write_parquet(copy.group("query"), values, str(path))
        if _COUNT_PARQUET.match(sql):
            import pyarrow.parquet as pq

            path = (list(params) if isinstance(params, (list, tuple)) else [params])[0]
            self._set_rows([(pq.ParquetFile(str(path)).metadata.num_rows,)], ["count_star()"])
            return self
        text, named = bind(translate(sql), params)
        return self.execute_native(text, named)

    def _write_parquet(self, query: str, params: list[object], path: str) -> ClickHouseConnection:
        import pyarrow as pa
        import pyarrow.parquet as pq

        text, named = bind(translate(query), params)
        try:
            table = self._client.query_arrow(text, parameters=named or None, settings=SETTINGS, use_strings=True)
        except Exception as exc:
            raise DatabaseError(f"ClickHouse ({self.url}) refused a query: {_first_line(exc)}",
                                hint="check that the server is reachable") from None
        # as DuckDB writes them: naive UTC timestamps (ClickHouse's Arrow ones carry the 'UTC'
        # zone), the JSON columns with Parquet's JSON type
        json_type = pa.json_(pa.string()) if hasattr(pa, "json_") else None

        def as_duckdb(name: str, col: Any) -> Any:
            if pa.types.is_timestamp(col.type) and col.type.tz:
                return col.cast(pa.timestamp(col.type.unit))
            if name in JSON_COLUMNS and json_type is not None and pa.types.is_string(col.type):
                return col.cast(json_type)
            return col

        columns = [as_duckdb(name, col) for name, col in zip(table.column_names, table.columns)]
        table = pa.Table.from_arrays(columns, names=table.column_names)
        try:
            pq.write_table(table, path, compression="zstd")
        except OSError as exc:
            raise DatabaseError(f"cannot write {path}: {exc}", hint="give a writable folder") from None
        self._set_rows([(table.num_rows,)], ["Count"])
        return self

    def _set_rows(self, rows: list[tuple[Any, ...]], names: list[str]) -> None:
        self._rows, self._pos = rows, 0
        self.description = [(name, None, None, None, None, None, None) for name in names]

    def execute_native(self, sql: str, params: dict[str, object] | None = None) -> ClickHouseConnection:
        """Run one statement written in ClickHouse's own dialect (``{name:Type}`` parameters)."""
        try:
            result = self._client.query(sql, parameters=params or None, settings=SETTINGS)
        except Exception as exc:  # clickhouse_connect's errors: one message, no traceback
            message = _first_line(exc)
            unsupported = "not supported yet" in message or "NOT_IMPLEMENTED" in message
            raise DatabaseError(
                f"ClickHouse ({self.url}) refused a query: {message}",
                hint="this analysis does not run on ClickHouse yet (docs/clickhouse.md, 'What was tested'): "
                "use a DuckDB store for it" if unsupported else
                "check that the server is reachable and its tables are the ones docs/clickhouse.md describes",
            ) from None
        self._rows = [tuple(_plain(v) for v in row) for row in result.result_rows]
        self._pos = 0
        self.description = [
            (name, getattr(ctype, "name", str(ctype)), None, None, None, None, None)
            for name, ctype in zip(result.column_names, result.column_types)
        ]
        return self

    def command(self, sql: str, params: dict[str, object] | None = None) -> None:
        """Run one ClickHouse DDL/DML statement (no result); ``params`` bound to its ``{name:Type}``."""
        try:
            # a DELETE or UPDATE with parameters (a load replacing a file's earlier copy) is done when this returns
            settings = SETTINGS if params is None else {**SETTINGS, "mutations_sync": 2}
            self._client.command(sql, parameters=params or None, settings=settings)
        except Exception as exc:
            raise DatabaseError(f"ClickHouse ({self.url}) refused a statement: {_first_line(exc)}",
                                hint="the user needs CREATE TABLE / CREATE VIEW rights on the database") from None

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows, self._pos = self._rows[self._pos:], [], 0
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._pos >= len(self._rows):
            return None
        self._pos += 1
        return self._rows[self._pos - 1]

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        rows = self._rows[self._pos:self._pos + size]
        self._pos += len(rows)
        return rows

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass

    def __enter__(self) -> ClickHouseConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- introspection -------------------------------------------------------------------------
    def table_names(self) -> dict[str, str]:
        """Tables and views in the current database: name -> engine (``View`` for a view)."""
        sql = "SELECT name, engine FROM system.tables WHERE database = currentDatabase()"
        return {row[0]: row[1] for row in self.execute_native(sql).fetchall()}


_COPY_PARQUET = re.compile(r"^\s*COPY\s*\((?P<query>.*)\)\s*TO\s*\?\s*\((?P<options>[^()]*FORMAT\s+parquet[^()]*)\)\s*$",
                           re.S | re.I)
_COUNT_PARQUET = re.compile(r"^\s*SELECT\s+count\(\*\)\s+FROM\s+read_parquet\(\?\)\s*$", re.I)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:500]


def _schema_version() -> str:
    """A digest of every statement ``ensure_schema`` runs: when the store's marker has it, nothing is redone."""
    import hashlib

    from loopscope.analyses import model
    from loopscope.analyses.store import clickhouse_otel, clickhouse_spans

    parts = [*TABLES_SQL, *SUPPORT_TABLES_SQL, SCRATCHPAD_TABLE_SQL, model.TOOL_CALLS_VIEW_SQL, model.PROMPTS_VIEW_SQL,
             ERRORS_VIEW_PORTABLE_SQL, ID_COLLISIONS_VIEW_PORTABLE_SQL, PROTOCOL_VIOLATIONS_VIEW_PORTABLE_SQL,
             clickhouse_otel.tool_calls_select_sql({"EventName"}), clickhouse_otel.loop_exits_select_sql({"EventName"}),
             clickhouse_spans.nodes_sql(True), clickhouse_spans.prompts_sql(), clickhouse_spans.tool_calls_sql(),
             clickhouse_spans.loop_exits_sql(), ",".join(clickhouse_otel.LOG_TABLES)]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


MARKER_VIEW = "_loopscope_schema"


def _refresh_spans(con: ClickHouseConnection, present: dict[str, str]) -> None:
    if con.layout == "otel" and "otel_traces" in present:
        from loopscope.analyses.store.clickhouse_spans import refresh_spans

        refresh_spans(con, with_logs="otel_logs" in present)


def ensure_schema(con: ClickHouseConnection) -> str:
    """Make the store readable by the analyses; return the layout found: ``loopscope``, ``otel`` or ``new``.

    A marker view (``_loopscope_schema``) records the version of the statements run, so a
    second connection to a ready store runs two queries, no DDL.
    """
    from loopscope.analyses import model

    present = con.table_names()
    version = _schema_version()
    before = None
    if MARKER_VIEW in present:
        row = con.execute_native(f"SELECT version, layout FROM {MARKER_VIEW}").fetchone()
        if row and row[0] == version and (row[1] != "new" or "tool_calls" in present):
            con.layout = str(row[1])
            _refresh_spans(con, present)
            return con.layout
        before = str(row[1]) if row else None
    if before == "otel" or "tool_calls_from_otel_logs" in present or (
        ("otel_logs" in present or "otel_traces" in present) and "tool_calls" not in present
    ):
        # everything loopscope reads here is derived from the Collector's tables: (re)made whole
        from loopscope.analyses.store.clickhouse_otel import create_otel_store

        create_otel_store(con, present, TABLES_SQL)
        layout = "otel"
    elif "tool_calls" in present and "loop_exits" in present:
        layout = "loopscope"
    else:
        for ddl in TABLES_SQL:
            con.command(ddl)
        layout = "new"
    for ddl in SUPPORT_TABLES_SQL:
        con.command(ddl)
    if "scratchpad_tools" not in present:
        con.command(SCRATCHPAD_TABLE_SQL)
        con.execute(model.SCRATCHPAD_DEFAULTS_SQL.replace("$1::VARCHAR[]", "$1"), [list(model.DEFAULT_SCRATCHPAD_TOOLS)])
    for view in (model.TOOL_CALLS_VIEW_SQL, model.PROMPTS_VIEW_SQL, ERRORS_VIEW_PORTABLE_SQL,
                 ID_COLLISIONS_VIEW_PORTABLE_SQL, PROTOCOL_VIOLATIONS_VIEW_PORTABLE_SQL):
        con.execute(view)
    con.layout = "loopscope" if layout == "new" else layout
    _refresh_spans(con, present)
    con.command(f"CREATE OR REPLACE VIEW {MARKER_VIEW} AS SELECT '{version}' AS version, '{con.layout}' AS layout")
    return layout


def connect_clickhouse(url: str) -> ClickHouseConnection:
    """Open the ClickHouse store at ``url`` and create loopscope's views there.

    Raises:
        DatabaseError: the driver is missing, the URL is malformed or carries a password, or the server
            refuses the connection.
    """
    try:
        client = _client(url)
    except LoopscopeError:
        raise
    except Exception as exc:
        raise DatabaseError(
            f"cannot open the database {redact_url(url)}: {_first_line(exc)}",
            hint=f"check host, port and database; the password comes from ${PASSWORD_ENVS[0]}",
        ) from None
    con = ClickHouseConnection(client, url)
    try:
        ensure_schema(con)
    except BaseException:
        con.close()
        raise
    return con


RECORD_TABLES = ("tool_calls", "loop_exits", "protocol_violations", "quarantine")
JSON_COLUMNS = ("tags", "input_shape", "extra")
INSERT_BATCH = 100_000


def copy_records(source: Any, con: ClickHouseConnection, *, tables: Sequence[str] = RECORD_TABLES) -> dict[str, int]:
    """Append the records of a DuckDB store (``source``) to loopscope's tables in ClickHouse.

    ``seq`` and ``source_id`` are shifted past what the ClickHouse tables hold, so
    repeated copies keep input order and file identity. Returns rows copied per table.
    """
    seq_base = con.execute(
        "SELECT greatest((SELECT coalesce(max(seq), 0) FROM tool_calls), (SELECT coalesce(max(seq), 0) FROM loop_exits))"
    ).fetchone()
    sid_base = con.execute("SELECT coalesce(max(source_id), 0) FROM sources").fetchone()
    shift_seq = int(seq_base[0]) if seq_base else 0
    shift_sid = int(sid_base[0]) if sid_base else 0
    copied: dict[str, int] = {}
    for table in ("sources", *tables):
        names = [d[0] for d in source.execute(f"SELECT * FROM {table} LIMIT 0").description]  # noqa: S608
        shifted = ", ".join(
            f"{n} + {shift_seq} AS {n}" if n == "seq" else f"{n} + {shift_sid} AS {n}" if n == "source_id"
            else f"{n}::VARCHAR AS {n}" if n in JSON_COLUMNS else n
            for n in names
        )
        # Arrow batches, column by column, not Python row tuples
        relation = source.sql(f"SELECT {shifted} FROM {table}")  # noqa: S608 - fixed names
        # DuckDB 2 names it to_arrow_reader, 1.x fetch_arrow_reader
        reader = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
        reader = reader(INSERT_BATCH)
        total = 0
        for batch in reader:
            try:
                import pyarrow as pa

                con._client.insert_arrow(table, pa.Table.from_batches([batch]), settings=SETTINGS)
            except Exception as exc:
                raise DatabaseError(f"ClickHouse ({con.url}) refused rows for {table}: {_first_line(exc)}",
                                    hint="the user needs INSERT rights on loopscope's tables") from None
            total += batch.num_rows
        copied[table] = total
    return copied


# The records two sources share, as SHARED_RECORDS_SQL counts them in a DuckDB store (analyses/ingest/load.py):
# per record identity (kind, conversation, prompt, tool call id and step, timestamp) the copies both hold.
SHARED_RECORDS_NATIVE_SQL = """
SELECT
    (SELECT sum(least(a, b)) FROM (
        SELECT countIf(source_id = {new:Int32}) AS a, countIf(source_id = {old:Int32}) AS b FROM tool_calls
        WHERE source_id IN ({new:Int32}, {old:Int32}) GROUP BY conversation_id, prompt_id, tool_call_id, step, ts))
    + (SELECT sum(least(a, b)) FROM (
        SELECT countIf(source_id = {new:Int32}) AS a, countIf(source_id = {old:Int32}) AS b FROM loop_exits
        WHERE source_id IN ({new:Int32}, {old:Int32}) GROUP BY conversation_id, prompt_id, ts)),
    (SELECT count() FROM tool_calls WHERE source_id = {new:Int32}) + (SELECT count() FROM loop_exits WHERE source_id = {new:Int32}),
    (SELECT count() FROM tool_calls WHERE source_id = {old:Int32}) + (SELECT count() FROM loop_exits WHERE source_id = {old:Int32})
"""
CH_SOURCES_SQL = "SELECT source_id, path, input_format, coalesce(head_hash, ''), head_len, bytes_loaded, superseded_by FROM sources"


def _replace_earlier_copies(con: ClickHouseConnection, detail: Any, head: str, earlier: list[tuple[Any, ...]]) -> None:
    """Replace each earlier copy (``CH_SOURCES_SQL`` rows, same path) of the records file just copied as ``detail``.

    As a DuckDB store replaces an edited file's earlier source (analyses/ingest/load.py,
    ``_replace_earlier_versions``): when the records both hold are at least half of the smaller
    copy's, and some. ClickHouse reads a file again whole, so a file that grew is replaced the same
    way instead of its earlier copy staying beside it; a new file after a rotation shares nothing.
    """
    gone, edited = 0, False
    for old in earlier:
        params = {"new": detail.source_id, "old": int(old[0])}
        row = con.execute_native(SHARED_RECORDS_NATIVE_SQL, params).fetchone()
        shared, mine, theirs = (int(v or 0) for v in row) if row else (0, 0, 0)
        if shared <= 0 or 2 * shared < min(mine, theirs):
            continue
        gone += theirs
        edited = edited or old[3] != head
        for table in RECORD_TABLES:
            con.command(f"DELETE FROM {table} WHERE source_id = {{old:Int32}}", {"old": params["old"]})  # noqa: S608 - fixed names
        con.command("ALTER TABLE sources UPDATE superseded_by = {new:Int32} WHERE source_id = {old:Int32}", params)
    if not gone:
        return
    detail.status = "replaced"
    detail.note = (
        f"changed in its first 4 KiB since it was loaded (edited, or written again): the {gone} record(s) loaded from "
        "it before were replaced by the file as it is now" if edited else
        f"grew or changed since it was loaded: read again whole, its {gone} earlier record(s) replaced by the file "
        "as it is now"
    )


def _superseded_by(held: list[tuple[Any, ...]], path: str, head: str, head_len: Any) -> tuple[str, int] | None:
    """(its path, the source in use that holds it now) when a file with this head is an earlier version, from
    another path, of a records file whose edited version replaced it; else None."""
    if any(r[3] == head and r[6] is None for r in held):
        return None  # a copy in use has this head
    old = next((r for r in held if r[2] == "records" and r[3] == head and r[4] == head_len and r[6] is not None), None)
    if old is None or old[1] == path:
        return None  # at its own path the file as it is now wins: it replaces the copy in use there
    successor_of = {int(r[0]): r[6] for r in held}
    successor, seen = int(old[0]), set()
    while successor_of.get(successor) is not None and successor not in seen:
        seen.add(successor)
        successor = int(successor_of[successor])
    return str(old[1]), successor


def load_into_clickhouse(con: ClickHouseConnection, paths: Sequence[Any], **options: Any) -> Any:
    """``loopscope load --db clickhouse://...``: read PATHs with loopscope's readers, append the records.

    The files are read into a throwaway in-memory DuckDB store with the same readers,
    quarantine and protocol checks as a DuckDB load (so every input format loads, with
    the same records), then copied (``copy_records``). A file ClickHouse already holds
    (same path, same content hash, same size) is not copied again: its status becomes
    ``unchanged``. A records file that grew or was edited is read again whole (loading is per
    whole file here) and replaces its earlier copy at that path when most records are the same
    (``replaced``), as a DuckDB store replaces an edited file; an earlier version of a file
    whose edited version replaced it, loaded from another path, is not copied (``superseded``).

    Returns the ``LoadSummary``, with ``source_ids`` as ClickHouse numbers them.
    """
    from loopscope.analyses.ingest import load_paths
    from loopscope.analyses.store import connect

    if con.layout == "otel":
        raise DatabaseError(
            f"{con.url} is read from the OpenTelemetry Collector's tables (otel_logs / otel_traces): "
            "loopscope load writes to loopscope's own tables, which this database does not have",
            hint="load into another database (--db clickhouse://host/loopscope), or send the records through "
            "the Collector (docs/clickhouse.md)",
        )
    staging = connect(":memory:")
    try:
        summary = load_paths(staging, list(paths), **options)
        held = con.execute_native(CH_SOURCES_SQL).fetchall()
        known: dict[tuple[str, str, int], int] = {}
        for row in held:
            if row[6] is None:  # in use: a superseded source's records are gone
                key = (row[1], row[3], int(row[5]))
                known[key] = max(known.get(key, 0), int(row[0]))
        staged: dict[int, tuple[str, str, Any]] = {}
        again: dict[int, int] = {}
        superseded: dict[int, tuple[str, int]] = {}
        for sid, path, head, size, head_len, fmt in staging.execute(
            "SELECT source_id, path, coalesce(head_hash, ''), bytes_loaded, head_len, input_format FROM sources"
        ).fetchall():
            staged[int(sid)] = (path, head, fmt)
            if (path, head, int(size)) in known:
                again[int(sid)] = known[(path, head, int(size))]
            elif fmt == "records" and head:
                old = _superseded_by(held, path, head, head_len)
                if old is not None:
                    superseded[int(sid)] = old
        for sid in [*again, *superseded]:
            for table in ("sources", *RECORD_TABLES):
                staging.execute(f"DELETE FROM {table} WHERE source_id = ?", [sid])  # noqa: S608 - fixed names
        shift = con.execute("SELECT coalesce(max(source_id), 0) FROM sources").fetchone()
        base = int(shift[0]) if shift else 0
        copy_records(staging, con)
    finally:
        staging.close()
    ids = []
    for detail in summary.details:
        if detail.source_id is None:
            continue
        if detail.source_id in superseded:
            was, successor = superseded[detail.source_id]
            detail.source_id, detail.status, detail.skipped = successor, "superseded", 0
            detail.loaded = detail.tool_calls = detail.loop_exits = detail.quarantined = detail.protocol_violations = 0
            detail.note = (
                f"an earlier version of {was}, which was edited and loaded again since: not loaded, so its records "
                f"do not come back beside the edited ones (the store keeps {was} as it was last loaded; "
                "load this copy into another --db to see it as it was)"
            )
        elif detail.source_id in again:
            detail.source_id = again[detail.source_id]
            # its records are the store's already: skipped, as the DuckDB loader counts them
            detail.skipped = detail.loaded
            detail.status, detail.loaded, detail.tool_calls, detail.loop_exits = "unchanged", 0, 0, 0
            detail.quarantined = detail.protocol_violations = 0
        else:
            path, head, fmt = staged[detail.source_id]
            detail.source_id += base
            earlier = [r for r in held if r[1] == path and r[2] == "records" and r[6] is None]
            if fmt == "records" and earlier:
                _replace_earlier_copies(con, detail, head, earlier)
        ids.append(detail.source_id)
    summary.source_ids = tuple(ids)
    summary.loaded = sum(d.loaded for d in summary.details)
    summary.skipped = sum(d.skipped for d in summary.details)
    summary.tool_calls = sum(d.tool_calls for d in summary.details)
    summary.loop_exits = sum(d.loop_exits for d in summary.details)
    summary.quarantined = sum(d.quarantined for d in summary.details)
    summary.protocol_violations = sum(d.protocol_violations for d in summary.details)
    return summary
