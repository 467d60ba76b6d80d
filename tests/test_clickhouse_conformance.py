"""The same analyses on ClickHouse (chDB, embedded) as on DuckDB: identical figures over the same data.

ClickHouse runs in this process through chDB, reached with clickhouse-connect's
``chdb://`` client: the same client, translation and SQL a server gets
(``--db clickhouse://...``). Each case loads the data into DuckDB with
loopscope's readers, copies the records into ClickHouse (``copy_records``) or
writes them as the OpenTelemetry Collector's ``otel_logs`` rows, and compares:

- ``loopscope metrics --format json`` (overall, ``--by day|week|agent``, a
  ``--agent`` / ``--since`` selection) through the CLI, on both engines;
- every error's class and ``resolved_later`` (``errors_v``), every replay
  (``tool_calls_v``), every id collision (``id_collisions_v``);
- the translation rewrites one by one (``store.clickhouse_sql``), each run on
  both engines;
- the portable forms of the ``LATERAL`` views against ``model``'s own, on DuckDB.

Skipped, with the reason, without the ``clickhouse`` extra (chdb, clickhouse-connect, sqlglot).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

for _module in ("chdb", "clickhouse_connect", "sqlglot"):
    pytest.importorskip(_module, reason=f"{_module} is not installed: pip install 'loopscope[clickhouse]' to run the ClickHouse conformance tests")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from loopscope.analyses.ingest.load import load_paths  # noqa: E402
from loopscope.analyses.metrics import metrics_by  # noqa: E402
from loopscope.analyses.store import connect  # noqa: E402
from loopscope.analyses.store.clickhouse import (  # noqa: E402
    ERRORS_VIEW_PORTABLE_SQL,
    ID_COLLISIONS_VIEW_PORTABLE_SQL,
    PROTOCOL_VIOLATIONS_VIEW_PORTABLE_SQL,
    ClickHouseConnection,
    connect_clickhouse,
    copy_records,
)
from loopscope.analyses.store.clickhouse_sql import UntranslatableSQL, translate  # noqa: E402
from loopscope.cli.app import app  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_LOGS = ROOT / "sample_logs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL_TAU2 = Path("/work/shared/real-data/tau2-bench")
OTEL_LOGS_DDL = FIXTURES / "clickhouse" / "otel_logs.sql"
runner = CliRunner()

_spec = importlib.util.spec_from_file_location("loopscope_test_metrics_property", Path(__file__).parent / "test_metrics_property.py")
assert _spec and _spec.loader
_property = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _property
_spec.loader.exec_module(_property)


@pytest.fixture(scope="module")
def ch_url(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # chDB runs one engine (one folder) per process: every test here shares it and empties it first.
    # A client held open keeps the engine up between connections (it starts in about 2 s).
    import clickhouse_connect

    url = "chdb://" + str(tmp_path_factory.mktemp("chdb") / "store")
    keep = clickhouse_connect.get_client(dsn=url)
    yield url
    keep.close()


def _empty(url: str) -> None:
    """Drop every table and view in the chDB store."""
    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn=url)
    try:
        names = [r[0] for r in client.query(
            "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY engine = 'View' DESC"
        ).result_rows]
        for name in names:
            client.command(f"DROP TABLE IF EXISTS `{name}` SYNC")
    finally:
        client.close()


def _fresh(url: str, duck: Any) -> None:
    """The chDB store holds exactly the records of the DuckDB store ``duck``."""
    _empty(url)
    con = connect_clickhouse(url)
    try:
        copy_records(duck, con)
    finally:
        con.close()


def cli(*args: str) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result


def metrics_json(db: str, *extra: str) -> Any:
    result = cli("metrics", "--db", db, "--format", "json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# Per-record facts, comparable across engines (booleans as bool, ids as text).
ERRORS_SQL = """
SELECT conversation_id, prompt_id, tool_call_id, tool_name, step, error_class, resolved_later, resolved_in_prompt
FROM errors_v ORDER BY conversation_id, prompt_id, tool_call_id, tool_name, step, ts, seq
"""
REPLAYS_SQL = """
SELECT conversation_id, prompt_id, tool_call_id, tool_name, is_replay, is_id_collision, is_scratchpad
FROM tool_calls_v ORDER BY conversation_id, prompt_id, tool_call_id, tool_name, ts, seq
"""
COLLISIONS_SQL = """
SELECT conversation_id, prompt_id, tool_call_id, tool_name, first_prompt_id, first_tool_name
FROM id_collisions_v ORDER BY conversation_id, prompt_id, tool_call_id, tool_name, seq, first_prompt_id
"""
PROMPTS_SQL = """
SELECT conversation_id, prompt_id, agent, n_tool_calls, n_error_results, max_ok_step, is_open, exit_reason, normal_exit
FROM prompts_v ORDER BY conversation_id, prompt_id
"""


def _facts(con: Any, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


def _compare_records(duck: Any, url: str) -> None:
    con = connect_clickhouse(url)
    try:
        for sql in (PROMPTS_SQL, ERRORS_SQL, REPLAYS_SQL, COLLISIONS_SQL):
            assert _facts(con, sql) == _facts(duck, sql), sql
    finally:
        con.close()


def same_json_output(duck_db: str, url: str, *args: str) -> Any:
    """``loopscope ARGS --format json`` on both stores: the same exit code and the same JSON."""
    want = cli(*args, "--db", duck_db, "--format", "json")
    got = cli(*args, "--db", url, "--format", "json")
    assert got.exit_code == want.exit_code, (args, got.output)
    assert json.loads(got.stdout) == json.loads(want.stdout), args
    return json.loads(want.stdout)


def _compare_cli(duck_db: str, url: str, extra_runs: list[tuple[str, ...]] = ()) -> dict[str, Any]:
    runs: list[tuple[str, ...]] = [(), ("--by", "week"), ("--by", "day"), ("--by", "agent"), ("--by", "tool"),
                                   # tags: the demo's mode, the tau2 files' model; '(untagged)' where absent
                                   ("--by", "tag:mode"), ("--by", "tag:model"), *extra_runs]
    seen = {}
    for args in runs:
        want = metrics_json(duck_db, *args)
        got = metrics_json(url, *args)
        assert got == want, args
        seen[" ".join(args)] = want
    return seen


# --- datasets loaded with loopscope's readers, copied into ClickHouse ----------------------------


DATASETS = {
    "sample_logs": [SAMPLE_LOGS],
    "messages": sorted((FIXTURES / "messages").glob("*.json*")),
    "otlp_spans": sorted((FIXTURES / "otlp").glob("*.jsonl")),
    "tau2_real": sorted(REAL_TAU2.glob("*.json")),
}


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_cli_metrics_and_record_facts_identical(name: str, tmp_path: Path, ch_url: str) -> None:
    paths = DATASETS[name]
    if not paths or not all(p.exists() for p in paths):
        pytest.skip(f"{name}: data not present here")
    duck_db = str(tmp_path / "store.duckdb")
    result = cli("load", *map(str, paths), "--db", duck_db)
    assert result.exit_code == 0, result.output
    duck = connect(duck_db, read_only=True)
    try:
        _fresh(ch_url, duck)
        _compare_records(duck, ch_url)
        agent = duck.execute("SELECT min(agent) FROM prompts_v").fetchone()[0]
        conversation = duck.execute(
            "SELECT conversation_id FROM errors_v ORDER BY resolved_later DESC, error_class, conversation_id LIMIT 1"
        ).fetchone() or duck.execute("SELECT min(conversation_id) FROM prompts_v").fetchone()
        conversation = conversation[0]
        since = duck.execute("SELECT quantile_disc(first_ts, 0.5) FROM prompts_v").fetchone()[0]
    finally:
        duck.close()
    seen = _compare_cli(duck_db, ch_url, [("--agent", agent), ("--since", since.isoformat() + "Z", "--by", "agent")])
    assert seen[""]["prompts"] > 0
    # error-message templates ranked by cost; one conversation's triage
    same_json_output(duck_db, ch_url, "lint")
    assert same_json_output(duck_db, ch_url, "triage", conversation)
    # the conversations with an unrecovered error, with their previous attempts counted
    same_json_output(duck_db, ch_url, "unrecovered", "--limit", "50")
    # the whole audit: figures per week and agent, tools, incidents, triage-first, reviews
    same_json_output(duck_db, ch_url, "audit")
    same_json_output(duck_db, ch_url, "audit", "--by", "tag:model")
    if name == "sample_logs":  # a tag filter selects the same prompts (it selected none on ClickHouse before)
        tagged = metrics_json(ch_url, "--tag", "mode=blind")
        assert tagged == metrics_json(duck_db, "--tag", "mode=blind") and tagged["prompts"] == 17
    if name == "sample_logs":  # the figures sample_logs/EXPECTED.md states, on ClickHouse too
        assert (seen[""]["tool_calls"], seen[""]["errors"], seen[""]["recovered_errors"]) == (114, 26, 14)


@contextlib.contextmanager
def _generated_store(tmp_path: Path, files: list[list[Any]]) -> Iterator[Any]:
    """An in-memory DuckDB store holding one of the property test's random record sets."""
    folder = tmp_path / f"run-{next(_property._RUNS)}"
    folder.mkdir()
    duck = connect(":memory:")
    try:
        load_paths(duck, _property._write(files, folder))
        yield duck
    finally:
        duck.close()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=_property.record_sets())
def test_generated_stores_identical(tmp_path: Path, ch_url: str, data: tuple[list[list[Any]], int]) -> None:
    """The property test's random stores (replays, collisions, ties, reopened prompts...) on both engines."""
    files, _ = data
    with _generated_store(tmp_path, files) as duck:
        _fresh(ch_url, duck)
        con = connect_clickhouse(ch_url)
        try:
            for by in (None, "agent", "day"):
                got = metrics_by(con, None, by)  # once: the same query, the same store (about 0.1 s a run on chDB)
                assert got == metrics_by(duck, None, by, source="views"), by
                assert got == metrics_by(duck, None, by), by  # and the facts table
            for sql in (PROMPTS_SQL, ERRORS_SQL, REPLAYS_SQL, COLLISIONS_SQL):
                assert _facts(con, sql) == _facts(duck, sql), sql
        finally:
            con.close()


# --- the portable views are model's views ---------------------------------------------------------


def _portable_equal(duck: Any) -> None:
    for view, sql in (("errors_v", ERRORS_VIEW_PORTABLE_SQL), ("id_collisions_v", ID_COLLISIONS_VIEW_PORTABLE_SQL),
                      ("protocol_violations_v", PROTOCOL_VIOLATIONS_VIEW_PORTABLE_SQL)):
        duck.execute(sql.replace(f"VIEW {view}", f"VIEW portable_{view}"))
        for a, b in ((view, f"portable_{view}"), (f"portable_{view}", view)):
            extra = duck.execute(f"SELECT count(*) FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})").fetchone()
            assert extra == (0,), (a, b)
        assert [d[0] for d in duck.execute(f"SELECT * FROM {view} LIMIT 0").description] == [
            d[0] for d in duck.execute(f"SELECT * FROM portable_{view} LIMIT 0").description
        ]


def test_portable_views_are_models_views_on_duckdb() -> None:
    duck = connect(":memory:")
    try:
        load_paths(duck, [SAMPLE_LOGS, *sorted((FIXTURES / "messages").glob("*.json*"))])
        assert duck.execute("SELECT count(*) FROM errors_v WHERE resolved_later").fetchone()[0] > 0
        _portable_equal(duck)
    finally:
        duck.close()


# Generated examples per run: 12 (25 with LOOPSCOPE_PROPERTY_EXAMPLES=full, as before 2026-11-27;
# tests/conftest.py says why).
PROPERTY_EXAMPLES = 25 if os.environ.get("LOOPSCOPE_PROPERTY_EXAMPLES") == "full" else 12


@settings(max_examples=PROPERTY_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_property.record_sets())
def test_portable_views_on_generated_stores(tmp_path: Path, data: tuple[list[list[Any]], int]) -> None:
    files, _ = data
    with _generated_store(tmp_path, files) as duck:
        _portable_equal(duck)


# --- what the OpenTelemetry Collector's clickhouse exporter writes --------------------------------


def _log_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """loopscope's collector log records for these v1 records, as (OTLP JSON log record, otel_logs row) pairs.

    The body is the record without its envelope (kind, v, ts, trace and span ids), as the
    collector emits it; the attributes are the alias map's keys, every value a string, as the
    exporter writes them.
    """
    out = []
    for i, rec in enumerate(records):
        event = "loopscope.tool_call" if rec["kind"] == "tool_call" else "loopscope.agent_exit"
        body = {k: v for k, v in rec.items() if k not in ("kind", "v", "ts", "trace_id", "span_id") and v is not None}
        ts = dt.datetime.fromisoformat(rec["ts"].replace("Z", "+00:00"))
        ns = int(ts.timestamp()) * 1_000_000_000 + ts.microsecond * 1000
        trace_id = f"{abs(hash(rec['prompt_id'])) % (1 << 64):032x}"
        span_id = f"{i + 1:016x}"
        attrs = {"gen_ai.conversation.id": rec["conversation_id"]}
        if rec["kind"] == "tool_call":
            attrs |= {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": rec["tool_name"],
                      "gen_ai.tool.call.id": rec["tool_call_id"]}
        else:
            attrs |= {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": rec["agent"]}
        out.append({"event": event, "body": body, "ns": ns, "trace_id": trace_id, "span_id": span_id, "attrs": attrs})
    return out


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _any_value(v)} for k, v in value.items()]}}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _otlp_json_line(logs: list[dict[str, Any]]) -> str:
    records = [
        {"timeUnixNano": str(x["ns"]), "severityText": "INFO", "eventName": x["event"], "traceId": x["trace_id"],
         "spanId": x["span_id"], "body": _any_value(x["body"]),
         "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in x["attrs"].items()]}
        for x in logs
    ]
    return json.dumps({"resourceLogs": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "agents"}}]},
        "scopeLogs": [{"scope": {"name": "loopscope.collectors"}, "logRecords": records}]}]})


def _insert_otel_logs(url: str, logs: list[dict[str, Any]], *, event_name_column: bool = True) -> None:
    """Write log records as the exporter does (creating otel_logs with its DDL first, when missing)."""
    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn=url)
    try:
        ddl = OTEL_LOGS_DDL.read_text()
        ddl = "\n".join(line for line in ddl.splitlines() if not line.startswith("--"))
        if not event_name_column:  # an exporter from before the EventName column: event.name attribute
            ddl = ddl.replace("    EventName String CODEC(ZSTD(1)),\n", "")
        client.command(ddl)
        columns = ["Timestamp", "TraceId", "SpanId", "SeverityText", "ServiceName", "Body", "LogAttributes", "ScopeName"]
        rows = []
        for x in logs:
            attrs = dict(x["attrs"])
            if not event_name_column:
                attrs["event.name"] = x["event"]
            ts = dt.datetime.fromtimestamp(x["ns"] / 1e9, tz=dt.timezone.utc)
            rows.append([ts, x["trace_id"], x["span_id"], "INFO", "agents", json.dumps(x["body"]), attrs,
                         "loopscope.collectors"] + ([x["event"]] if event_name_column else []))
        client.insert("otel_logs", rows, column_names=columns + (["EventName"] if event_name_column else []))
    finally:
        client.close()


@pytest.mark.parametrize("event_name_column", [True, False], ids=["EventName", "event.name-attribute"])
def test_collector_otel_logs_identical_to_otlp_file(tmp_path: Path, ch_url: str, event_name_column: bool) -> None:
    """The collector's log records: read from an OTLP file on DuckDB, from otel_logs on ClickHouse."""
    records = [json.loads(line) for f in sorted(SAMPLE_LOGS.glob("*.jsonl")) for line in f.read_text().splitlines() if line.strip()]
    logs = _log_rows(records)
    otlp = tmp_path / "collector-logs.jsonl"
    otlp.write_text(_otlp_json_line(logs) + "\n")
    duck_db = str(tmp_path / "store.duckdb")
    result = cli("load", str(otlp), "--db", duck_db)
    assert result.exit_code == 0, result.output
    _empty(ch_url)
    # half the records before loopscope first connects (copied once), the rest after (the
    # materialised views), and a batch delivered twice (an exporter retry: counted once)
    half = len(logs) // 2
    _insert_otel_logs(ch_url, logs[:half], event_name_column=event_name_column)
    connect_clickhouse(ch_url).close()
    _insert_otel_logs(ch_url, logs[half:], event_name_column=event_name_column)
    _insert_otel_logs(ch_url, logs[half - 10:half + 10], event_name_column=event_name_column)
    duck = connect(duck_db, read_only=True)
    try:
        assert duck.execute("SELECT count(*) FROM tool_calls").fetchone() == (114,)
        _compare_records(duck, ch_url)
    finally:
        duck.close()
    seen = _compare_cli(duck_db, ch_url)
    assert (seen[""]["tool_calls"], seen[""]["errors"], seen[""]["recovered_errors"]) == (114, 26, 14)
    con = connect_clickhouse(ch_url)
    try:
        assert con.execute("SELECT count(*) FROM tool_calls").fetchone() == (114,)
    finally:
        con.close()


# --- the translation rewrites, each run on both engines -------------------------------------------

REWRITES = [
    # exact quantiles (ClickHouse's quantile/median are approximate)
    ("SELECT quantile_cont(x, 0.5), quantile_cont(x, 0.99), median(x) FROM (SELECT unnest([1, 2, 2, 7, 40, 41]) AS x)", []),
    # to the last bit: DuckDB interpolates lo * (1 - d) + hi * d (2.9799999999999995, not 2.98)
    ("SELECT quantile_cont(x, 0.99), quantile_cont(x, 0.5), quantile_cont(x, 0.25) FROM (SELECT unnest([1, 3]) AS x)", []),
    ("SELECT k, quantile_cont(x, 0.99) FROM (SELECT unnest([1, 1, 2]) AS k, unnest([1.5, 3.25, 7]::DOUBLE[]) AS x) GROUP BY k ORDER BY k", []),
    # qualified output names keep the bare name
    ("SELECT s.a, s.b FROM (SELECT k.a, k.b FROM (SELECT 1 AS a, 2 AS b) k) s", []),
    # an outer join's missing side is NULL
    ("SELECT a.k, b.v, b.v IS NULL FROM (SELECT 'x' AS k) a LEFT JOIN (SELECT 'y' AS k, 1 AS v) b USING (k)", []),
    # max of no rows is NULL, count 0
    ("SELECT max(x) FILTER (WHERE x > 100), count(*) FILTER (WHERE x > 100) FROM (SELECT 1 AS x)", []),
    # parameters: positional, list casts
    ("SELECT list_contains(?::VARCHAR[], ?), len(?::VARCHAR[]) = 0, ?", [["a", "b"], "b", [], "it's"]),
    ("SELECT $2 || $1, $1", ["x", "y"]),
    # full regex match (RE2 on both)
    ("SELECT regexp_full_match(?, ?), regexp_full_match(?, ?)", ["abc", "a.c", "abcd", "a.c"]),
    # LIMIT NULL is no limit
    ("SELECT x FROM (SELECT unnest([3, 1, 2]) AS x) ORDER BY x LIMIT ?", [None]),
    # ordered list aggregate
    ("SELECT list(x ORDER BY x DESC) FROM (SELECT unnest([3, 1, 2]) AS x)", []),
    ("SELECT suffix('a/b.jsonl', '.jsonl'), prefix('a/b', 'a/')", []),
    # ordered first / last (NULLs of the value count)
    ("SELECT first(x ORDER BY k), last(x ORDER BY k), first(x ORDER BY k DESC) "
     "FROM (SELECT unnest([NULL, 'b', 'c']) AS x, unnest([1, 2, 3]) AS k)", []),
]


@pytest.mark.parametrize("sql,params", REWRITES, ids=[str(i) for i in range(len(REWRITES))])
def test_rewrite_runs_alike_on_both(sql: str, params: list[Any], ch_url: str) -> None:
    duck = connect(":memory:")
    con = connect_clickhouse(ch_url)
    try:
        want = duck.execute(sql, params).fetchall()
        got = con.execute(sql, params).fetchall()
        assert got == want
        assert [type(v) for v in got[0]] == [type(v) for v in want[0]]  # flags are bools on both
    finally:
        con.close()
        duck.close()


def test_output_names_are_bare() -> None:
    assert "AS a" in translate("SELECT k.a FROM t k").text
    quantile = translate("SELECT quantile_cont(n, 0.99) FROM t").text
    assert "quantile" not in quantile.replace("__", "") and "arraySort(groupArray(toFloat64(n)))" in quantile


def test_lateral_is_refused() -> None:
    with pytest.raises(UntranslatableSQL):
        translate("SELECT * FROM t a JOIN LATERAL (SELECT * FROM u WHERE u.k = a.k LIMIT 1) b ON true")


def test_translations_are_cached() -> None:
    sql = "SELECT count(*) FROM tool_calls_v WHERE tool_name = ?"
    assert translate(sql) is translate(sql)


# --- the URL: credentials from the environment, clear errors --------------------------------------


def test_password_in_url_refused_and_not_echoed() -> None:
    result = cli("metrics", "--db", "clickhouse://alice:s3cret-pw@localhost:8123/agents")
    assert result.exit_code == 1
    assert "s3cret-pw" not in result.output
    assert "LOOPSCOPE_CLICKHOUSE_PASSWORD" in " ".join(result.output.split())


def test_unreachable_server_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPSCOPE_CLICKHOUSE_PASSWORD", "pw-never-shown")
    result = cli("metrics", "--db", "clickhouse://alice@127.0.0.1:9/agents")
    assert result.exit_code == 1
    assert "pw-never-shown" not in result.output
    assert "127.0.0.1" in result.output


def test_chdb_folder_must_exist(tmp_path: Path) -> None:
    result = cli("metrics", "--db", f"chdb://{tmp_path}/missing/store")
    assert result.exit_code == 1
    assert "does not exist" in " ".join(result.output.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())


def test_connection_api_is_duckdb_like(ch_url: str) -> None:
    _empty(ch_url)
    con = connect_clickhouse(ch_url)
    try:
        assert isinstance(con, ClickHouseConnection)
        assert con.execute("SELECT ?::INTEGER + 1 AS n", [41]).fetchone() == (42,)
        assert con.description[0][0] == "n"
        assert con.execute("SELECT count(*) FROM prompts_v").fetchall() == [(0,)]
        assert con.execute("SELECT tool_name FROM scratchpad_tools").fetchall() == [("think",)]
    finally:
        con.close()


# --- loopscope load --db clickhouse://... ---------------------------------------------------------


def test_load_into_clickhouse_like_duckdb(tmp_path: Path, ch_url: str) -> None:
    """The same files loaded into both stores (twice: the second load adds nothing), bad lines quarantined."""
    bad = tmp_path / "with-bad-lines.jsonl"
    good = (SAMPLE_LOGS / "concierge.jsonl").read_text().splitlines()
    bad.write_text("\n".join([good[0], '{"v": 1, "kind": "tool_call"', good[1], "[1, 2]"]) + "\n")
    files = [str(SAMPLE_LOGS / "back_office.jsonl"), str(bad), str(FIXTURES / "messages" / "anthropic.jsonl")]
    duck_db = str(tmp_path / "store.duckdb")
    _empty(ch_url)
    for db in (duck_db, ch_url):
        for _ in range(2):
            result = cli("load", *files, "--db", db, "--format", "json")
            assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert summary["loaded"] == 0 and summary["files"] == 3, summary  # the second load: nothing new
    quarantined = [json.loads(cli("quarantine", "--db", db, "--format", "json").stdout) for db in (duck_db, ch_url)]
    assert quarantined[0] == quarantined[1]
    assert [(q["path"], q["line_no"]) for q in quarantined[1]] == [(str(bad), 2), (str(bad), 4)]
    _compare_cli(duck_db, ch_url)
    # PATHs with --db: the figures of those files only, on both
    assert metrics_json(ch_url, str(bad)) == metrics_json(duck_db, str(bad))


def test_tables_have_the_duckdb_store_columns(ch_url: str) -> None:
    """loopscope's ClickHouse tables: the DuckDB store's columns, same names, same order (copy_records relies on it)."""
    _empty(ch_url)
    con = connect_clickhouse(ch_url)
    duck = connect(":memory:")
    try:
        for table in ("tool_calls", "loop_exits", "sources", "protocol_violations", "quarantine", "scratchpad_tools"):
            want = [d[0] for d in duck.execute(f"SELECT * FROM {table} LIMIT 0").description]
            got = [d[0] for d in con.execute(f"SELECT * FROM {table} LIMIT 0").description]
            assert got == want, table
    finally:
        con.close()
        duck.close()


# --- tool spans in the Collector's otel_traces ----------------------------------------------------

OTEL_TRACES_DDL = FIXTURES / "clickhouse" / "otel_traces.sql"
# The OpenAI Agents SDK captures (one failed lookup_order each); the other instrumentations' files apart
OTLP_FIXTURES = sorted((FIXTURES / "otlp").glob("openai_agents_*.jsonl"))
OTHER_OTLP_FIXTURES = sorted(p for p in (FIXTURES / "otlp").glob("*.json*") if not p.name.startswith("openai_agents_"))
SPAN_STATUS = {0: "STATUS_CODE_UNSET", 1: "STATUS_CODE_OK", 2: "STATUS_CODE_ERROR"}
OLD_SPAN_STATUS = {0: "Unset", 1: "Ok", 2: "Error"}  # exporters before traceutil.StatusCodeStr
SPAN_KINDS = ["SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT",
              "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"]
SPAN_COLUMNS = ["Timestamp", "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName", "SpanKind", "ServiceName",
                "ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes", "Duration", "StatusCode",
                "StatusMessage", "Events.Timestamp", "Events.Name", "Events.Attributes"]


def _plain_value(value: dict[str, Any]) -> Any:
    kind, raw = next(iter(value.items())) if value else ("stringValue", "")
    if kind == "intValue":
        return int(raw)
    if kind == "arrayValue":
        return [_plain_value(v) for v in raw.get("values", [])]
    if kind == "kvlistValue":
        return {kv["key"]: _plain_value(kv.get("value", {})) for kv in raw.get("values", [])}
    return raw


def _exporter_string(value: dict[str, Any]) -> str:
    """An attribute value as the exporter writes it (pcommon ``Value.AsString``): lists and maps as JSON."""
    plain = _plain_value(value)
    if isinstance(plain, bool):
        return "true" if plain else "false"
    if isinstance(plain, (list, dict)):
        return json.dumps(plain, separators=(",", ":"))
    return str(plain)


def _exporter_map(attributes: list[dict[str, Any]] | None) -> dict[str, str]:
    return {kv["key"]: _exporter_string(kv.get("value", {})) for kv in attributes or []}


def _span_rows(paths: list[Path], status_names: dict[int, str] = SPAN_STATUS) -> list[list[Any]]:
    """The otel_traces rows the clickhouse exporter writes for the spans of OTLP JSON files.

    Timestamp is the span's start (nanoseconds), Duration end - start in nanoseconds, ids hex,
    every attribute a string, status and kind as the exporter names them.
    """
    rows = []
    for path in paths:
        text = path.read_text()
        docs = [json.loads(text)] if path.suffix == ".json" else [json.loads(line) for line in text.splitlines()]
        for doc in docs:
            for resource_spans in doc.get("resourceSpans", []):
                resource = _exporter_map(resource_spans.get("resource", {}).get("attributes"))
                for scope_spans in resource_spans.get("scopeSpans", []):
                    scope = scope_spans.get("scope", {})
                    for s in scope_spans.get("spans", []):
                        start, end = int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])
                        status = s.get("status") or {}
                        events = s.get("events", [])
                        rows.append([
                            start, s["traceId"].lower(), s["spanId"].lower(), (s.get("parentSpanId") or "").lower(),
                            s.get("traceState", ""), s["name"], SPAN_KINDS[s.get("kind", 0)],
                            resource.get("service.name", ""), resource, scope.get("name", ""), scope.get("version", ""),
                            _exporter_map(s.get("attributes")), end - start, status_names[status.get("code", 0)],
                            status.get("message", ""), [int(e["timeUnixNano"]) for e in events],
                            [e["name"] for e in events], [_exporter_map(e.get("attributes")) for e in events],
                        ])
    return rows


def _insert_otel_traces(url: str, rows: list[list[Any]]) -> None:
    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn=url)
    try:
        client.command("\n".join(line for line in OTEL_TRACES_DDL.read_text().splitlines() if not line.startswith("--")))
        client.insert("otel_traces", rows, column_names=SPAN_COLUMNS)
    finally:
        client.close()


def _spans_in_both(tmp_path: Path, ch_url: str, spans: Path) -> str:
    """An OTLP file loaded into a DuckDB store (``loopscope load``, exit 0) and, as its otel_traces
    rows, into the emptied ClickHouse; returns the store's path."""
    duck_db = str(tmp_path / "store.duckdb")
    assert cli("load", str(spans), "--db", duck_db).exit_code == 0
    _empty(ch_url)
    _insert_otel_traces(ch_url, _span_rows([spans]))
    return duck_db


# Per tool span: what the file reader and the views must agree on (tool_call_id apart: below).
SPAN_CALLS_SQL = """
SELECT conversation_id, prompt_id, agent, tool_name, step, outcome, is_error, error_type, error_message, ts,
       latency_ms, span_id, tool_call_id
FROM tool_calls ORDER BY ts, span_id
"""
SPAN_EXITS_SQL = """
SELECT conversation_id, prompt_id, agent, exit_reason, steps, tool_calls, tool_errors, input_tokens, output_tokens,
       duration_ms, ts, span_id
FROM loop_exits ORDER BY ts, span_id
"""


@pytest.mark.parametrize("files,status_names", [
    *[([p], SPAN_STATUS) for p in OTLP_FIXTURES],
    (OTLP_FIXTURES, OLD_SPAN_STATUS),
], ids=[*[p.stem for p in OTLP_FIXTURES], "all-old-status-names"])
def test_collector_otel_traces_identical_to_otlp_file(tmp_path: Path, ch_url: str, files: list[Path],
                                                      status_names: dict[int, str]) -> None:
    """Third-party instrumentations' spans: loaded from the OTLP file on DuckDB, read from otel_traces on ClickHouse.

    Documented simplification (store/clickhouse_spans.py, 1): a tool span without its own call
    id gets its span id, where the file reader first takes the id of the matching call in the
    model's messages (``tool_call_id_from_messages``). Every other field, and every figure, is
    the same.
    """
    duck_db = str(tmp_path / "store.duckdb")
    result = cli("load", *map(str, files), "--db", duck_db)
    assert result.exit_code == 0, result.output
    _empty(ch_url)
    rows = _span_rows(files, status_names)
    _insert_otel_traces(ch_url, rows)
    _insert_otel_traces(ch_url, rows[:5])  # an exporter retry: the same spans again, counted once
    duck = connect(duck_db, read_only=True)
    con = connect_clickhouse(ch_url)
    try:
        assert con.layout == "otel"
        want_calls, errors = _spans_read_alike(duck, con)
        assert len(want_calls) > 0
    finally:
        con.close()
        duck.close()
    assert errors == len(files)  # each capture has its one failed lookup_order
    seen = _compare_cli(duck_db, ch_url)
    assert seen["--by tool"]["groups"] if isinstance(seen["--by tool"], dict) else seen["--by tool"]
    same_json_output(duck_db, ch_url, "lint")
    same_json_output(duck_db, ch_url, "audit")


def _spans_read_alike(duck: Any, con: Any) -> tuple[list[Any], int]:
    """Assert the store read from otel_traces (``con``) holds what the OTLP file reader stored (``duck``).

    Tool calls column by column (a call id the file reader took from the messages may differ: the
    span id stands in), loop exits, prompts and error classes. Returns the file reader's tool calls
    and its error count.
    """
    want_calls, got_calls = _facts(duck, SPAN_CALLS_SQL), _facts(con, SPAN_CALLS_SQL)
    from_messages = {r[0] for r in duck.execute(
        "SELECT span_id FROM tool_calls WHERE json_extract(extra, '$.tool_call_id_from_messages')::BOOLEAN"
    ).fetchall()}
    assert len(got_calls) == len(want_calls)
    for want, got in zip(want_calls, got_calls):
        assert got[:-1] == want[:-1]
        assert got[-1] == (got[-2] if want[-2] in from_messages else want[-1])
    assert _facts(con, SPAN_EXITS_SQL) == _facts(duck, SPAN_EXITS_SQL)
    assert _facts(con, PROMPTS_SQL) == _facts(duck, PROMPTS_SQL)
    classes = "SELECT conversation_id, prompt_id, tool_name, step, error_class, resolved_later FROM errors_v ORDER BY ALL"
    assert _facts(con, classes) == _facts(duck, classes)
    return want_calls, int(duck.execute("SELECT count(*) FROM errors_v").fetchone()[0])


# Counted by hand from the spans (tests/fixtures/otlp/README.md, "Other instrumentations"): tool calls, errors
OTHER_HAND_COUNTS = {
    "vercel_ai_sdk5_genai_interlingua": (1, 0),
    "strands_constructed": (2, 1),
    "google_adk_constructed": (3, 1),
    "pydantic_ai_logfire_era_constructed": (2, 1),
    "pydantic_ai_v5": (5, 2),
}


@pytest.mark.parametrize("path", OTHER_OTLP_FIXTURES, ids=[p.stem for p in OTHER_OTLP_FIXTURES])
def test_other_instrumentations_otel_traces_identical_to_otlp_file(tmp_path: Path, ch_url: str, path: Path) -> None:
    """The Vercel AI SDK, Strands, Google ADK and pydantic-ai spans read the same from otel_traces as from the file."""
    duck_db = str(tmp_path / "store.duckdb")
    result = cli("load", str(path), "--db", duck_db)
    assert result.exit_code == 0, result.output
    _empty(ch_url)
    _insert_otel_traces(ch_url, _span_rows([path]))
    duck = connect(duck_db, read_only=True)
    con = connect_clickhouse(ch_url)
    try:
        want_calls, errors = _spans_read_alike(duck, con)
    finally:
        con.close()
        duck.close()
    assert (len(want_calls), errors) == OTHER_HAND_COUNTS[path.stem]


def test_spans_and_log_records_together(tmp_path: Path, ch_url: str) -> None:
    """otel_logs and otel_traces in one database: both read; a trace the collector also logged is read once."""
    records = [json.loads(line) for line in (SAMPLE_LOGS / "concierge.jsonl").read_text().splitlines() if line.strip()]
    logs = _log_rows(records)
    spans = _span_rows(OTLP_FIXTURES)
    logged_trace = spans[0][1]  # the collector's log records of one traced prompt carry its trace id
    for x in logs[:3]:
        x["trace_id"] = logged_trace
    _empty(ch_url)
    _insert_otel_logs(ch_url, logs)
    _insert_otel_traces(ch_url, spans)
    con = connect_clickhouse(ch_url)
    try:
        span_calls = con.execute("SELECT count(*) FROM otel_span_tool_calls").fetchone()[0]
        in_logged_trace = sum(1 for r in spans if r[1] == logged_trace and "tool" in (
            r[11].get("gen_ai.operation.name", "") + r[11].get("openinference.span.kind", "").lower()
            + r[11].get("traceloop.span.kind", "")))
        assert in_logged_trace > 0
        assert span_calls == 12 - in_logged_trace  # the fixtures' 12 tool spans, less the logged trace's
        assert con.execute("SELECT count(*) FROM tool_calls").fetchone()[0] == \
            sum(r["kind"] == "tool_call" for r in records) + span_calls
        assert con.execute("SELECT count(*) FROM tool_calls WHERE trace_id = ?", [logged_trace]).fetchone()[0] == 3
    finally:
        con.close()
    # more spans arrive: the span tables are made again on the next connection
    _insert_otel_traces(ch_url, [[*r[:2], "f" + r[2][1:], *r[3:]] for r in spans if r[1] != logged_trace
                                 and r[11].get("gen_ai.operation.name") == "execute_tool" and r[3]][:1])
    con = connect_clickhouse(ch_url)
    try:
        assert con.execute("SELECT count(*) FROM otel_span_tool_calls").fetchone()[0] == span_calls + 1
    finally:
        con.close()
    # loopscope load writes loopscope's own tables, which a Collector-fed database does not have
    result = cli("load", str(SAMPLE_LOGS / "concierge.jsonl"), "--db", ch_url)
    assert result.exit_code == 1
    assert "otel_traces" in " ".join(result.output.split()) and "Traceback" not in result.output


# --- compare, export, review sample, --tag through the CLI ----------------------------------------


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_quarantined_lines_notice_identical(tmp_path: Path, ch_url: str) -> None:
    """A file with lines set aside: the same quarantined_lines notice from both engines (metrics' and audit's)."""
    sample = sorted((Path(__file__).resolve().parent.parent / "sample_logs").glob("*.jsonl"))[0]
    bad = tmp_path / "with-bad-lines.jsonl"
    bad.write_text(sample.read_text() + "oops\n" + '{"v": 1, "kind": "tool_call"}\n')
    duck_db = str(tmp_path / "store.duckdb")
    assert cli("load", str(bad), "--db", duck_db).exit_code == 0
    duck = connect(duck_db, read_only=True)
    try:
        _fresh(ch_url, duck)
    finally:
        duck.close()
    report = same_json_output(duck_db, ch_url, "audit")
    assert [n for n in report["notices"] if n["kind"] == "quarantined_lines"] == [{
        "kind": "quarantined_lines",
        "message": f"2 line(s) of {bad} could not be read and are in none of these figures (quarantined)",
        "hint": "loopscope quarantine --file with-bad-lines.jsonl lists them with the reason for each",
        "count": 2,
    }]
    for db in (duck_db, ch_url):  # and metrics says it on stderr, on both
        assert "2 line(s) of" in " ".join(cli("metrics", "--db", db).stderr.split())


def test_compare_tag_export_review_identical(tmp_path: Path, ch_url: str) -> None:
    duck_db = str(tmp_path / "store.duckdb")
    result = cli("load", str(SAMPLE_LOGS), "--db", duck_db)
    assert result.exit_code == 0, result.output
    duck = connect(duck_db, read_only=True)
    try:
        _fresh(ch_url, duck)
        corrective = duck.execute("SELECT count(*) FROM prompts_v WHERE tags->>'mode' = 'corrective'").fetchone()[0]
        everyone = duck.execute("SELECT count(*) FROM prompts_v").fetchone()[0]
    finally:
        duck.close()
    # cohorts by tag, week and agent; --tag narrows every figure
    same_json_output(duck_db, ch_url, "compare", "--a", "tag:mode=blind", "--b", "tag:mode=corrective")
    same_json_output(duck_db, ch_url, "compare", "--a", "agent:concierge", "--b", "agent:back_office")
    tagged = same_json_output(duck_db, ch_url, "metrics", "--tag", "mode=corrective", "--by", "agent")
    overall = same_json_output(duck_db, ch_url, "metrics", "--tag", "mode=corrective")
    assert 0 < corrective < everyone
    assert overall["prompts"] == corrective and tagged
    # Parquet: the same rows and the same column types, read back by DuckDB
    outs = {db: tmp_path / f"export-{i}" for i, db in enumerate((duck_db, ch_url))}
    summaries = []
    for db, out in outs.items():
        result = cli("export", "--db", db, "--out", str(out), "--format", "json", "--agent", "concierge")
        assert result.exit_code == 0, result.output
        summaries.append([(t["table"], t["rows"]) for t in json.loads(result.stdout)])
    assert summaries[0] == summaries[1] and summaries[0][0][1] > 0
    import duckdb

    for table in ("tool_calls", "loop_exits"):
        a, b = (str(out / f"{table}.parquet") for out in outs.values())
        assert duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{a}')").fetchall() == \
            duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{b}')").fetchall()
        for x, y in ((a, b), (b, a)):
            assert duckdb.sql(f"SELECT count(*) FROM (SELECT * FROM read_parquet('{x}') EXCEPT ALL "
                              f"SELECT * FROM read_parquet('{y}'))").fetchall() == [(0,)]
    # the review pack: the same conversations drawn, the same files
    packs = {db: tmp_path / f"pack-{i}" for i, db in enumerate((duck_db, ch_url))}
    for db, out in packs.items():
        result = cli("review", "sample", "--db", db, "--n", "4", "--seed", "7", "--out", str(out), "--format", "json")
        assert result.exit_code == 0, result.output
    trees = [_tree(out) for out in packs.values()]
    assert trees[0] == trees[1] and len(trees[0]) > 2


def _span(tid: str, sid: str, parent: str | None, name: str, start_ms: int, end_ms: int, attrs: dict[str, Any],
          status: int = 0, exception: tuple[str, str] | None = None) -> dict[str, Any]:
    t0 = 1_795_304_979_000_000_000
    events = [] if exception is None else [{"name": "exception", "timeUnixNano": str(t0 + end_ms * 1_000_000 - 1), "attributes": [
        {"key": "exception.type", "value": {"stringValue": exception[0]}},
        {"key": "exception.message", "value": {"stringValue": exception[1]}}]}]
    return {"traceId": tid * 32, "spanId": tid * 15 + sid, "parentSpanId": (parent and tid * 15 + parent) or "",
            "name": name, "kind": 1, "startTimeUnixNano": str(t0 + start_ms * 1_000_000),
            "endTimeUnixNano": str(t0 + end_ms * 1_000_000), "status": {"code": status}, "events": events,
            "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
                           for k, v in attrs.items()]}


def test_span_tree_edge_cases_identical(tmp_path: Path, ch_url: str) -> None:
    """Prompts the file reader makes from broken and unusual trees, in SQL: the same records.

    A parent never exported (an open prompt named after it), tool spans with no parent (one
    open prompt per trace), a root that is no agent span (it stands in for one: exit from the
    model's finish reason, tokens summed, tags from it), an agent span in error with no tool
    call (a prompt of 0 calls, exit ``error``). Error text is redacted and capped as the file
    reader does it (store/clickhouse_spans.py, 3): a key in an exception message, a Bearer
    token and a password in a long status message, a secret cut by the pre-cut.
    """
    tool, agent = "gen_ai.operation.name", "gen_ai.operation.name"
    spans = [
        _span("1", "a", "f", "execute_tool search", 0, 5, {tool: "execute_tool", "gen_ai.tool.name": "search",
                                                            "gen_ai.conversation.id": "c1"}, status=2),
        _span("1", "b", "f", "execute_tool search", 10, 15, {tool: "execute_tool", "gen_ai.tool.name": "search"}),
        _span("2", "a", None, "fetch.tool", 20, 25, {"traceloop.span.kind": "tool", "traceloop.entity.name": "fetch"}),
        _span("2", "b", None, "fetch.tool", 22, 27, {"traceloop.span.kind": "tool", "traceloop.entity.name": "fetch"}, status=2),
        _span("3", "c", None, "chain", 30, 90, {"openinference.span.kind": "CHAIN", "session.id": "c3", "loopscope.tag.arm": "b"}),
        _span("3", "d", "c", "llm", 31, 35, {"openinference.span.kind": "LLM", "llm.token_count.prompt": 10,
                                               "llm.token_count.completion": 3, "llm.finish_reason": "tool_calls"}),
        _span("3", "e", "c", "lookup", 36, 40, {"openinference.span.kind": "TOOL", "tool.name": "lookup", "tool.id": "x1"},
              exception=("KeyError", "no such key: token=abc123")),
        _span("3", "f", "c", "llm", 41, 45, {"openinference.span.kind": "LLM", "llm.token_count.prompt": 20, "llm.finish_reason": "length"}),
        _span("4", "c", None, "invoke_workflow w", 50, 80, {agent: "invoke_workflow", "gen_ai.conversation.id": "c4"}),
        _span("4", "a", "c", "invoke_agent helper", 51, 79, {agent: "invoke_agent"}, status=2,
              exception=("Timeout", "model timed out")),
        _span("5", "c", None, "invoke_agent a", 100, 200, {agent: "invoke_agent", "gen_ai.conversation.id": "c5"}, status=2,
              exception=("AuthError", "upstream said: password=hunter2! " + "x" * 2500 + " sk-" + "a1" * 12)),
        _span("5", "a", "c", "execute_tool fetch", 101, 110, {tool: "execute_tool", "gen_ai.tool.name": "fetch"}, status=2,
              exception=("HTTPError", "401 for Authorization: Bearer abc.def-123456 at https://bob:s3cret@api.example.com/v1")),
        _span("5", "b", "c", "execute_tool fetch", 111, 120, {tool: "execute_tool", "gen_ai.tool.name": "fetch"}, status=2,
              exception=("HTTPError", "y" * 7990 + " api_key=ABCDEFGHIJKLMNOP " + "z" * 100)),
    ]
    otlp = tmp_path / "edge-cases.jsonl"
    otlp.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [
        {"scope": {"name": "edge"}, "spans": spans}]}]}) + "\n")
    duck = connect(_spans_in_both(tmp_path, ch_url, otlp), read_only=True)
    con = connect_clickhouse(ch_url)
    try:
        want, got = _facts(duck, SPAN_CALLS_SQL), _facts(con, SPAN_CALLS_SQL)
        assert len(want) == 7
        texts = [w[8] for w in want if w[8]]
        assert "no such key: token=[REDACTED]" in texts
        assert "401 for Authorization: Bearer [REDACTED] at https://bob:[REDACTED]@api.example.com/v1" in texts
        assert sum(t.endswith("... [truncated]") and len(t) == 2000 for t in texts) == 1  # cut past 8,000: no key left
        assert got == want
        for sql in (SPAN_EXITS_SQL, PROMPTS_SQL, "SELECT conversation_id, prompt_id, tags FROM tool_calls ORDER BY ts",
                    "SELECT prompt_id, error_type, error_message FROM loop_exits ORDER BY ts"):
            assert _facts(con, sql) == _facts(duck, sql), sql
        long_exit = [r[2] for r in _facts(duck, "SELECT prompt_id, error_type, error_message FROM loop_exits ORDER BY ts")
                     if r[2] and "hunter2" not in r[2] and "password=[REDACTED]" in r[2]]
        assert len(long_exit) == 1 and len(long_exit[0]) == 2000
        assert {r[3] for r in _facts(con, SPAN_EXITS_SQL)} == {"max_tokens", "error"}
        assert not [t for t in (r[0] for r in con.execute("SELECT error_message FROM tool_calls").fetchall()) if t and (
            "hunter2" in t or "s3cret" in t or "abc.def-123456" in t or "abc123" in t)]
    finally:
        con.close()
        duck.close()


def test_store_set_up_by_an_earlier_version_is_remade(tmp_path: Path, ch_url: str) -> None:
    """An otel layout of the previous version (tool_calls a table fed by tool_calls_from_otel_logs) is made again."""
    import clickhouse_connect

    from loopscope.analyses.store.clickhouse import MARKER_VIEW, TABLES_SQL
    from loopscope.analyses.store.clickhouse_otel import tool_calls_select_sql

    records = [json.loads(line) for line in (SAMPLE_LOGS / "concierge.jsonl").read_text().splitlines() if line.strip()]
    _empty(ch_url)
    _insert_otel_logs(ch_url, _log_rows(records))
    client = clickhouse_connect.get_client(dsn=ch_url)
    try:  # what the previous version created
        for ddl in TABLES_SQL:
            client.command(ddl.replace("ENGINE = MergeTree ORDER BY (conversation_id, prompt_id, ts, seq)",
                                       "ENGINE = ReplacingMergeTree ORDER BY (conversation_id, seq)"))
        client.command(f"CREATE MATERIALIZED VIEW tool_calls_from_otel_logs TO tool_calls AS {tool_calls_select_sql({'EventName'})}")
        client.command(f"CREATE VIEW {MARKER_VIEW} AS SELECT 'old-version' AS version, 'otel' AS layout")
    finally:
        client.close()
    con = connect_clickhouse(ch_url)
    try:
        tables = con.table_names()
        assert tables["tool_calls"] == "View" and "tool_calls_from_otel_logs" not in tables
        assert con.execute("SELECT count(*) FROM tool_calls").fetchone()[0] == sum(r["kind"] == "tool_call" for r in records)
    finally:
        con.close()
    # a table of that version holding rows of `loopscope load` is not dropped: a clear error instead
    _empty(ch_url)
    _insert_otel_logs(ch_url, _log_rows(records[:2]))
    client = clickhouse_connect.get_client(dsn=ch_url)
    try:
        for ddl in TABLES_SQL:
            client.command(ddl.replace("ENGINE = MergeTree", "ENGINE = ReplacingMergeTree"))
        client.command("INSERT INTO tool_calls (seq, source_id, v, ts, conversation_id, prompt_id, agent, tool_call_id, "
                       "tool_name, step, outcome, is_error, attempts, replayed) VALUES "
                       "(1, 1, 1, now64(6), 'c', 'p', 'a', 't', 'x', 0, 'ok', false, 1, false)")
        client.command(f"CREATE VIEW {MARKER_VIEW} AS SELECT 'old-version' AS version, 'otel' AS layout")
    finally:
        client.close()
    result = cli("metrics", "--db", ch_url)
    assert result.exit_code == 1
    assert "loopscope load" in " ".join(result.output.split()) and "Traceback" not in result.output


def test_loopscope_collector_spans_identical(tmp_path: Path, ch_url: str) -> None:
    """loopscope's own collector's spans (its loopscope.* attributes: step, prompt id, outcome...) in otel_traces."""
    pytest.importorskip("opentelemetry.sdk.trace", reason="the SDK exports the collector's spans")
    pytest.importorskip("opentelemetry.exporter.otlp.json.file.trace_exporter",
                        reason="opentelemetry-exporter-otlp-json-file (test extra) writes the OTLP file")
    spec = importlib.util.spec_from_file_location("loopscope_test_otlp_roundtrip", Path(__file__).parent / "test_otlp_roundtrip.py")
    assert spec and spec.loader
    roundtrip = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roundtrip)
    records, spans_path = roundtrip._export(tmp_path)  # the scripted agent: every outcome and exit
    duck_db = _spans_in_both(tmp_path, ch_url, spans_path)
    duck = connect(duck_db, read_only=True)
    con = connect_clickhouse(ch_url)
    try:
        assert len(_facts(con, SPAN_CALLS_SQL)) == sum(r["kind"] == "tool_call" for r in records)
        for sql in (SPAN_CALLS_SQL, SPAN_EXITS_SQL, PROMPTS_SQL, ERRORS_SQL, REPLAYS_SQL,
                    "SELECT conversation_id, prompt_id, tags, attempts, replayed FROM tool_calls ORDER BY ts, span_id"):
            assert _facts(con, sql) == _facts(duck, sql), sql
    finally:
        con.close()
        duck.close()
    _compare_cli(duck_db, ch_url)


def test_an_edited_file_replaces_its_earlier_copy_like_duckdb(tmp_path: Path, ch_url: str) -> None:
    """A records file edited in its first 4 KiB, a new file after rotation, an earlier copy loaded back:
    the same statuses and the same figures on both engines (no record stored twice, no invented replay)."""
    good = (SAMPLE_LOGS / "concierge.jsonl").read_text().splitlines(keepends=True)
    duck_db = str(tmp_path / "store.duckdb")
    _empty(ch_url)
    statuses: dict[str, list[list[str]]] = {}
    for db, folder in ((duck_db, tmp_path / "duck"), (ch_url, tmp_path / "ch")):
        log, backup = folder / "app.jsonl", folder / "backup" / "app.jsonl"
        backup.parent.mkdir(parents=True)
        log.write_text("".join(good))
        backup.write_text("".join(good))
        seen = statuses.setdefault(db, [])

        def load(path: Path, db: str = db, seen: list[list[str]] = seen) -> None:
            result = cli("load", str(path), "--db", db, "--format", "json")
            assert result.exit_code == 0, result.output
            seen.append([d["status"] for d in json.loads(result.stdout)["details"]])

        load(log)
        log.write_text(good[0].replace('"latency_ms":', '"latency_ms": 1.0, "was":', 1) + "".join(good[1:]))
        load(log)  # edited in line 1: replaces the earlier copy
        assert metrics_json(db)["tool_calls"] == sum('"tool_call"' in line for line in good)  # each call once
        load(backup)  # the pre-edit copy from another path: not loaded
        log.rename(folder / "app.jsonl.1")
        log.write_text("".join(line.replace('"c0', '"r0') for line in good[:5]))  # rotation: other conversations
        load(log)
    assert statuses[duck_db] == statuses[ch_url] == [["new"], ["replaced"], ["superseded"], ["new"]]
    assert metrics_json(duck_db) == metrics_json(ch_url)
    assert metrics_json(duck_db)["tool_calls"] == sum('"tool_call"' in line for line in good) + \
        sum('"tool_call"' in line for line in good[:5])
