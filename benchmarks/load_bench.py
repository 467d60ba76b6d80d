"""Load and metrics benchmark: ``loopscope load`` against DuckDB's bare ``read_json``.

For each size (1M and 10M records by default) it generates synthetic records
(benchmarks/gen_records.py, reused when already there), then runs, each in a
fresh process so peak memory is per phase:

- ``bare``: DuckDB's own ``read_json`` of the same files with an explicit
  schema into a table of a new database file: the floor a loader built on
  DuckDB can reach (no validation, no quarantine, no line numbers, no extras);
- ``load``: ``load_paths`` into a new loopscope database (validation,
  quarantine, line numbers, unknown fields, idempotency bookkeeping);
  both timed from connecting to closing the database, so the checkpoint that
  makes the data durable counts (DuckDB may defer work to it);
- ``first analysis``: the four dashboard metrics over the loaded database,
  in a new process. The load writes records only; the per-prompt facts the
  analyses read (``store.facts``) are built by the first analysis after a
  load, so this phase pays for them (timed from connecting to closing, so
  the checkpoint of the facts counts);
- ``metrics``: the same four metrics again, over the facts now kept.

It prints time, records/s, the load/bare ratio, **load + first analysis**
against bare (what a user waits for from `loopscope load` to the first
figure), and peak RSS. Targets (issue 20), as ratios to the bare read of the
same files in the same run: load <= 1.5x bare (aim: 1.25x), peak memory of
the load <= 2 GiB at 10M, metrics on 10M <= 3 s (over kept facts). Wall time
on a shared machine moves with other jobs; the CPU ratio moves less, so both
are printed, each with its verdict, and the load average before and after.

    python benchmarks/load_bench.py --sizes 1m          # quick
    python benchmarks/load_bench.py --sizes 1m,10m --dir /tmp/loopscope-bench
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_records import cached_dataset, record_count  # noqa: E402

BARE_COLUMNS = {
    "v": "INTEGER", "kind": "VARCHAR", "ts": "TIMESTAMPTZ", "conversation_id": "VARCHAR",
    "prompt_id": "VARCHAR", "agent": "VARCHAR", "trace_id": "VARCHAR", "span_id": "VARCHAR", "tags": "JSON",
    "tool_call_id": "VARCHAR", "tool_name": "VARCHAR", "step": "INTEGER", "input_shape": "JSON",
    "args_fingerprint": "VARCHAR", "outcome": "VARCHAR", "is_error": "BOOLEAN", "attempts": "INTEGER",
    "latency_ms": "DOUBLE", "error_type": "VARCHAR", "error_message": "VARCHAR", "replayed": "BOOLEAN",
    "exit_reason": "VARCHAR", "steps": "INTEGER", "tool_calls": "INTEGER", "tool_errors": "INTEGER",
    "max_tool_calls": "INTEGER", "input_tokens": "BIGINT", "output_tokens": "BIGINT", "duration_ms": "DOUBLE",
}
TARGET_RATIO = 1.5
AIM_RATIO = 1.25
PEAK_TARGET_MB = 2048  # at 10M
BARE_SQL = "CREATE TABLE records AS SELECT * FROM read_json(?, format = 'newline_delimited', columns = ?)"
COUNT_SQL = "SELECT count(*) FROM records"


def _phase_bare(files: list[str], db: str) -> dict[str, object]:
    import duckdb

    start = time.perf_counter()
    con = duckdb.connect(db)
    con.execute(BARE_SQL, [files, BARE_COLUMNS])
    row = con.execute(COUNT_SQL).fetchone()
    con.close()  # durable in the file: the checkpoint on close is part of the load
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "records": int(row[0]) if row else 0}


def _phase_load(files: list[str], db: str) -> dict[str, object]:
    from loopscope.analyses.ingest.load import load_paths
    from loopscope.analyses.store import connect

    start = time.perf_counter()
    con = connect(db)
    summary = load_paths(con, files)
    con.close()  # as for bare: until the data is durable in the file
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "records": summary.loaded, "quarantined": summary.quarantined}


def _phase_metrics(db: str) -> dict[str, object]:
    from loopscope.analyses.metrics import compute_metrics
    from loopscope.analyses.store import connect
    from loopscope.analyses.store.facts import facts_fresh

    start = time.perf_counter()
    con = connect(db)
    fresh_before = facts_fresh(con)
    m = compute_metrics(con)
    con.close()  # the facts a first analysis built are durable in the file (checkpoint) before it ends
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "metrics": m.as_dict(), "facts_kept": fresh_before}


def _run_child(args: list[str]) -> tuple[dict[str, object], float]:
    """Run a phase in a fresh interpreter; returns its result (with the process's CPU seconds) and peak RSS in MB."""
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"phase {args[:2]} failed with exit code {proc.returncode}")
    result = json.loads(out)
    # CPU time of the whole phase process: on a shared machine wall time moves
    # with other jobs, CPU time much less.
    result["cpu"] = usage.ru_utime + usage.ru_stime
    return result, usage.ru_maxrss / 1024  # Linux: kilobytes


def _load_average() -> str:
    """The machine's 1-minute load average (other jobs move wall times; say how busy it was)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1m,10m", help="comma-separated record counts, e.g. 1m,10m or 200k")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/loopscope-bench"), help="where data and databases go")
    parser.add_argument("--phase", choices=("bare", "load", "metrics"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--files", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase:
        result = (
            _phase_bare(args.files, args.db)
            if args.phase == "bare"
            else _phase_load(args.files, args.db)
            if args.phase == "load"
            else _phase_metrics(args.db)
        )
        print(json.dumps(result))
        return

    rows = []
    for size_text in args.sizes.split(","):
        n = record_count(size_text)
        folder = args.dir / f"records-{n}"
        files = cached_dataset(n, folder)
        mb = sum(os.path.getsize(f) for f in files) / 1e6
        bare_db, load_db = folder / "bare.duckdb", folder / "loopscope.duckdb"
        for db in (bare_db, load_db):
            for suffix in ("", ".wal"):
                Path(str(db) + suffix).unlink(missing_ok=True)
        load_before = _load_average()
        bare, bare_mb = _run_child(["--phase", "bare", "--db", str(bare_db), "--files", *files])
        load, load_mb = _run_child(["--phase", "load", "--db", str(load_db), "--files", *files])
        first, first_mb = _run_child(["--phase", "metrics", "--db", str(load_db)])
        metrics, metrics_mb = _run_child(["--phase", "metrics", "--db", str(load_db)])
        records = int(load["records"])  # type: ignore[call-overload]
        rows.append((n, mb, bare, bare_mb, load, load_mb, metrics, metrics_mb, records))
        ratio = float(load["seconds"]) / float(bare["seconds"])  # type: ignore[arg-type]
        cpu_ratio = float(load["cpu"]) / float(bare["cpu"])  # type: ignore[arg-type]
        verdict = ", ".join(
            f"{name} {'met' if r <= TARGET_RATIO else 'NOT met'}" for name, r in (("wall", ratio), ("cpu", cpu_ratio))
        )
        both_wall = float(load["seconds"]) + float(first["seconds"])  # type: ignore[arg-type]
        both_cpu = float(load["cpu"]) + float(first["cpu"])  # type: ignore[arg-type]
        print(
            f"{n:>11,} records ({mb:,.0f} MB, {len(files)} files)\n"
            f"  bare read_json : {bare['seconds']:8.2f} s  {int(bare['records']) / float(bare['seconds']):>10,.0f} rec/s  "  # type: ignore[call-overload, arg-type]
            f"peak {bare_mb:,.0f} MB  cpu {bare['cpu']:.2f} s (process)\n"
            f"  loopscope load : {load['seconds']:8.2f} s  {records / float(load['seconds']):>10,.0f} rec/s  "  # type: ignore[arg-type]
            f"peak {load_mb:,.0f} MB  cpu {load['cpu']:.2f} s (process)  ratio {ratio:.2f}x wall, {cpu_ratio:.2f}x cpu "
            f"(target <= {TARGET_RATIO}x, aim {AIM_RATIO}x: {verdict})  "
            f"quarantined {load['quarantined']}\n"
            f"  first analysis : {first['seconds']:8.2f} s  peak {first_mb:,.0f} MB  cpu {first['cpu']:.2f} s (process)  "
            f"four metrics, {'over facts already kept' if first['facts_kept'] else 'building the facts first'}\n"
            f"  load + first analysis: {both_wall:8.2f} s  cpu {both_cpu:.2f} s  "
            f"ratio {both_wall / float(bare['seconds']):.2f}x wall, {both_cpu / float(bare['cpu']):.2f}x cpu\n"  # type: ignore[arg-type]
            f"  four metrics   : {metrics['seconds']:8.2f} s  peak {metrics_mb:,.0f} MB  (facts kept)"
            + ("  (target <= 3 s at 10M)" if n >= 10_000_000 else "")
            + (
                f"\n  peak memory of the load {load_mb:,.0f} MB (target <= {PEAK_TARGET_MB:,} MB at 10M: "
                f"{'met' if load_mb <= PEAK_TARGET_MB else 'NOT met'})"
                if n >= 10_000_000
                else ""
            )
            + f"\n  load average (1 min) before / after: {load_before} / {_load_average()} on {os.cpu_count()} cores",
            flush=True,
        )


if __name__ == "__main__":
    main()
