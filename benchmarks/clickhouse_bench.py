"""The same metrics on DuckDB and on ClickHouse (chDB, embedded), over the same N records.

Generates N records (benchmarks/gen_records.py), loads them into a DuckDB file
with loopscope's loader, copies them into a chDB store (``copy_records``,
Arrow batches), then times, on both engines, interleaved, best of R runs:

- the four metrics (``metrics_by(con, None, None)``): on DuckDB from
  ``prompt_facts`` (its per-prompt materialisation) and from the views
  (``source="views"``); on ClickHouse from the views (there is no
  ``prompt_facts`` there);
- ``metrics --by week`` and ``--by tool`` (the per-tool health);
- the audit's figures (``audit.audit``: per week and agent, tools, incidents,
  triage-first).

Each case reports wall seconds and CPU seconds of this process (both engines
run inside it, on all their threads: ``time.process_time``), so a loaded
machine inflates the wall time more than the CPU time. Checks that both
engines give the same figures, and prints one JSON object.

    python benchmarks/clickhouse_bench.py 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_records import generate  # noqa: E402

from loopscope.analyses.ingest.load import load_paths  # noqa: E402
from loopscope.analyses.metrics import metrics_by  # noqa: E402
from loopscope.analyses.store import connect  # noqa: E402
from loopscope.analyses.store.clickhouse import connect_clickhouse, copy_records  # noqa: E402


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(best wall seconds, CPU seconds of that run, result)."""
    best, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        result = fn()
        wall = time.perf_counter() - t
        if wall < best:
            best, cpu = wall, time.process_time() - c
    return best, cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, nargs="?", default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="work folder to keep (default: a temporary one)")
    parser.add_argument("--no-audit", action="store_true", help="leave out the audit (the longest case)")
    parser.add_argument("--spans", type=int, metavar="TRACES",
                        help="instead: TRACES agent traces (1 agent, 3 model, 3 tool spans each) in the Collector's "
                        "otel_traces, and the time to derive their records (on connection) and the four metrics")
    args = parser.parse_args()
    if args.spans:
        print(json.dumps(bench_spans(args.spans, args.keep), indent=2, default=str))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="ls-chbench-"))
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"records": args.n}
    try:
        files = generate(args.n, work / "records", 4)
        duck_path = str(work / "store.duckdb")
        t, c = time.perf_counter(), time.process_time()
        duck = connect(duck_path)
        load_paths(duck, files)
        out["duckdb_load_s"] = round(time.perf_counter() - t, 2)
        out["duckdb_load_cpu_s"] = round(time.process_time() - c, 2)
        url = f"chdb://{work / 'chdb'}"
        ch = connect_clickhouse(url)
        t, c = time.perf_counter(), time.process_time()
        out["copied"] = copy_records(duck, ch)
        out["chdb_copy_s"] = round(time.perf_counter() - t, 2)
        out["chdb_copy_cpu_s"] = round(time.process_time() - c, 2)
        cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
            "metrics": (lambda: metrics_by(duck, None, None), lambda: metrics_by(ch, None, None)),
            "metrics_views": (lambda: metrics_by(duck, None, None, source="views"), lambda: metrics_by(ch, None, None)),
            "metrics_by_week": (lambda: metrics_by(duck, None, "week", source="views"), lambda: metrics_by(ch, None, "week")),
        }
        from loopscope.analyses.tools import tool_health

        cases["by_tool"] = (lambda: tool_health(duck, None), lambda: tool_health(ch, None))
        if not args.no_audit:
            from loopscope.analyses.audit import audit
            from loopscope.analyses.selection import Selection

            cases["audit"] = (lambda: audit(duck, Selection()), lambda: audit(ch, Selection()))
        for name, (on_duck, on_ch) in cases.items():
            d_s, d_cpu, d_res = best_of(on_duck, args.repeat)  # interleaved: DuckDB, then chDB, per case
            c_s, c_cpu, c_res = best_of(on_ch, args.repeat)
            out[name] = {"duckdb_s": round(d_s, 3), "chdb_s": round(c_s, 3), "ratio_chdb_over_duckdb": round(c_s / d_s, 2),
                         "duckdb_cpu_s": round(d_cpu, 3), "chdb_cpu_s": round(c_cpu, 3),
                         "cpu_ratio_chdb_over_duckdb": round(c_cpu / d_cpu, 2) if d_cpu else None,
                         "same_figures": d_res == c_res}
            print(name, out[name], file=sys.stderr, flush=True)
        ch.close()
        duck.close()
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2, default=str))


SPAN_COLUMNS = ["Timestamp", "TraceId", "SpanId", "ParentSpanId", "SpanName", "SpanKind", "ServiceName",
                "SpanAttributes", "Duration", "StatusCode", "StatusMessage"]


def _trace_rows(i: int, t0: int) -> list[list[Any]]:
    """One agent trace as the clickhouse exporter writes it: a prompt of 3 model calls, 3 tool calls."""
    trace, agent = f"{i:032x}", f"{i:012x}a000"
    start = t0 + i * 10_000_000_000
    ms = 1_000_000
    rows = [[start, trace, agent, "", "invoke_agent support", "SPAN_KIND_INTERNAL", "bench",
             {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
              "gen_ai.conversation.id": f"conv-{i // 3}"}, 900 * ms, "STATUS_CODE_UNSET", ""]]
    for k in range(3):
        rows.append([start + (1 + 300 * k) * ms, trace, f"{i:012x}b{k:03x}", agent, "chat model", "SPAN_KIND_CLIENT",
                     "bench", {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": "100",
                               "gen_ai.response.finish_reasons": '["tool_calls"]' if k < 2 else '["stop"]'},
                     100 * ms, "STATUS_CODE_UNSET", ""])
        if k < 2:
            failed = (i + k) % 10 == 0
            for tool in range(2 if k == 0 else 1):
                rows.append([start + (150 + 300 * k + tool) * ms, trace, f"{i:012x}c{k:01x}{tool:02x}", agent,
                             f"execute_tool t{tool}", "SPAN_KIND_INTERNAL", "bench",
                             {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{tool}",
                              "gen_ai.tool.call.id": f"call-{i}-{k}-{tool}"}, 20 * ms,
                             "STATUS_CODE_ERROR" if failed and tool == 0 else "STATUS_CODE_UNSET",
                             "boom" if failed and tool == 0 else ""])
    return rows


def bench_spans(traces: int, keep: Path | None) -> dict[str, Any]:
    """Derive records from ``traces`` agent traces in otel_traces (chDB) and compute the four metrics."""
    import clickhouse_connect

    work = keep or Path(tempfile.mkdtemp(prefix="ls-chspans-"))
    work.mkdir(parents=True, exist_ok=True)
    url = f"chdb://{work / 'chdb'}"
    out: dict[str, Any] = {"traces": traces}
    try:
        client = clickhouse_connect.get_client(dsn=url)
        client.command("CREATE TABLE IF NOT EXISTS otel_traces (Timestamp DateTime64(9), TraceId String, SpanId String, "
                       "ParentSpanId String, TraceState String, SpanName LowCardinality(String), SpanKind "
                       "LowCardinality(String), ServiceName LowCardinality(String), ResourceAttributes "
                       "Map(LowCardinality(String), String), ScopeName String, ScopeVersion String, SpanAttributes "
                       "Map(LowCardinality(String), String), Duration UInt64, StatusCode LowCardinality(String), "
                       "StatusMessage String, Events Nested (Timestamp DateTime64(9), Name LowCardinality(String), "
                       "Attributes Map(LowCardinality(String), String))) ENGINE = MergeTree "
                       "ORDER BY (ServiceName, SpanName, toDateTime(Timestamp), Timestamp)")
        t0 = 1_795_000_000_000_000_000
        spans = 0
        for first in range(0, traces, 10_000):
            rows = [r for i in range(first, min(traces, first + 10_000)) for r in _trace_rows(i, t0)]
            client.insert("otel_traces", rows, column_names=SPAN_COLUMNS)
            spans += len(rows)
        out["spans"] = spans
        client.close()
        t, c = time.perf_counter(), time.process_time()
        ch = connect_clickhouse(url)  # creates the views and derives the span records
        out["derive_s"], out["derive_cpu_s"] = round(time.perf_counter() - t, 2), round(time.process_time() - c, 2)
        out["tool_calls"] = ch.execute("SELECT count(*) FROM tool_calls").fetchone()[0]
        t, c = time.perf_counter(), time.process_time()
        figures = metrics_by(ch, None, None)
        out["metrics_s"], out["metrics_cpu_s"] = round(time.perf_counter() - t, 2), round(time.process_time() - c, 2)
        out["metrics"] = figures
        ch.close()
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return out


if __name__ == "__main__":
    main()
