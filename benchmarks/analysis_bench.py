"""Analysis benchmark: every analysis command against the load of the same data, in the same run.

For each size (1M and 10M records by default) it generates synthetic records
(``gen_records.py``, as ``load_bench.py`` does; reused when already there),
times ``loopscope load`` of them into a new store (the baseline), keeps that
store in the cache folder, then times each analysis command on it, each in a
fresh process through the CLI a user runs, with its peak RSS
(``ru_maxrss`` of the child):

- ``metrics --by week``, ``metrics --by tool`` (skipped when this loopscope
  has no ``--by tool``), ``unrecovered --limit 20``, ``triage`` of one
  conversation (the newest one with an unrecovered error), ``lint --format
  json``, ``audit --format json``, ``audit --html FILE``.

Targets (issue 14), on the 2-core machine the issue measured: at 10M records
the whole ``audit`` <= 5 s and <= 2 GiB peak, ``unrecovered`` and ``lint``
<= 2 s each; at 1M every command <= 0.5x the load time of the same data.
Wall time on a shared machine moves with other jobs, so the CPU time of each
process is printed too, and ``--loopscope`` times another installation
(e.g. a checkout of the previous version in its own venv) in the same run,
command by command, interleaved with this one::

    python benchmarks/analysis_bench.py --sizes 1m
    python benchmarks/analysis_bench.py --sizes 1m,10m --baseline /work/venv-base/bin/loopscope
    python benchmarks/analysis_bench.py --sizes 10m --no-load    # reuse the cached store and load time
    python benchmarks/analysis_bench.py --sizes 10m --no-load --baseline OLD/bin/loopscope --baseline-same-store

The store is built once per size and generator version under ``--dir``
(default ``$XDG_CACHE_HOME/loopscope-bench`` or ``~/.cache/loopscope-bench``);
``--no-load`` reuses it and the load time recorded when it was built.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_records import cached_dataset, record_count  # noqa: E402

TARGET_10M_AUDIT_S = 5.0
TARGET_10M_AUDIT_MB = 2048
TARGET_10M_FAST_S = 2.0  # unrecovered, lint
TARGET_1M_LOAD_RATIO = 0.5
# The newest conversation with an unrecovered error: what a person triages first.
TRIAGE_TARGET_SQL = """
SELECT conversation_id FROM prompt_facts
WHERE n_errors > n_recovered
ORDER BY last_ts DESC, conversation_id
LIMIT 1
"""


@dataclass
class Run:
    seconds: float
    cpu: float
    peak_mb: float
    exit_code: int
    stderr: str


def _default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "loopscope-bench"


def _run(argv: list[str], env: dict[str, str] | None = None) -> Run:
    """Run one command in a fresh process; wall seconds, CPU seconds and peak RSS (MB) of the child."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.stderr.close()
    return Run(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), err)


def _accepts(loopscope: str, argv: list[str]) -> bool:
    """Whether this loopscope runs the command (e.g. knows ``metrics --by tool``)."""
    return subprocess.run([loopscope, *argv], capture_output=True, text=True, env=_env()).returncode == 0


def _env() -> dict[str, str]:
    # Plain output: no colour codes, no progress display, a wide terminal.
    return {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "TERM": "dumb"}


def _build_store(
    loopscope: str, files: list[str], folder: Path, fresh: bool, name: str = "analysis"
) -> tuple[Path, float | None, str]:
    """The cached store of these files and the load time: timed now, or the one recorded when it was built."""
    db = folder / f"{name}.duckdb"
    meta = folder / f"{name}-load.json"
    if fresh or not db.exists() or not meta.exists():
        scratch = folder / f"{name}-new.duckdb"
        for path in (scratch, Path(str(scratch) + ".wal")):
            path.unlink(missing_ok=True)
        run = _run([loopscope, "load", *files, "--db", str(scratch)], _env())
        if run.exit_code != 0:
            raise SystemExit(f"load failed ({run.exit_code}): {run.stderr[-2000:]}")
        # The load writes records only; the first analysis builds the facts the others read
        # (store.facts): run it here, so every command below is timed on an analysed store.
        first = _run([loopscope, "metrics", "--db", str(scratch)], _env())
        if first.exit_code != 0:
            raise SystemExit(f"first analysis failed ({first.exit_code}): {first.stderr[-2000:]}")
        shutil.move(str(scratch), str(db))
        meta.write_text(json.dumps({"seconds": run.seconds, "cpu": run.cpu, "peak_mb": run.peak_mb,
                                    "first_analysis_seconds": first.seconds, "first_analysis_cpu": first.cpu,
                                    "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
        return db, run.seconds, (f"timed now: {run.seconds:.2f} s wall, {run.cpu:.2f} s cpu, peak {run.peak_mb:,.0f} MB; "
                                 f"first analysis (builds the facts) {first.seconds:.2f} s wall, {first.cpu:.2f} s cpu")
    recorded = json.loads(meta.read_text())
    return db, float(recorded["seconds"]), f"recorded {recorded['when']}: {recorded['seconds']:.2f} s wall"


def _recorded_cpu(folder: Path, name: str = "analysis") -> float | None:
    meta = folder / f"{name}-load.json"
    return float(json.loads(meta.read_text()).get("cpu") or 0) or None if meta.exists() else None


def _commands(loopscope: str, db: Path, triage_id: str | None, html: Path) -> list[tuple[str, list[str]]]:
    d = ["--db", str(db)]
    cmds: list[tuple[str, list[str]]] = [
        ("metrics --by week", [loopscope, "metrics", "--by", "week", *d]),
    ]
    if _accepts(loopscope, ["metrics", "--by", "tool", "--db", ":memory:"]):
        cmds.append(("metrics --by tool", [loopscope, "metrics", "--by", "tool", *d]))
    cmds.append(("unrecovered --limit 20", [loopscope, "unrecovered", "--limit", "20", *d]))
    if triage_id:
        cmds.append(("triage ID", [loopscope, "triage", triage_id, *d]))
    cmds += [
        ("lint --format json", [loopscope, "lint", "--format", "json", *d]),
        ("audit --format json", [loopscope, "audit", "--format", "json", *d]),
        ("audit --html", [loopscope, "audit", "--html", str(html), *d]),
    ]
    return cmds


def _target(n: int, name: str, run: Run, load_s: float | None) -> tuple[str, bool | None]:
    if n >= 10_000_000:
        if name.startswith("audit"):
            ok = run.seconds <= TARGET_10M_AUDIT_S and run.peak_mb <= TARGET_10M_AUDIT_MB
            return f"<= {TARGET_10M_AUDIT_S:g} s, <= {TARGET_10M_AUDIT_MB:,} MB", ok
        if name.startswith(("unrecovered", "lint")):
            return f"<= {TARGET_10M_FAST_S:g} s", run.seconds <= TARGET_10M_FAST_S
        return "", None
    if n >= 1_000_000 and load_s:
        return f"<= {TARGET_1M_LOAD_RATIO:g}x load", run.seconds <= TARGET_1M_LOAD_RATIO * load_s
    return "", None


def _triage_id(db: Path) -> str | None:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(TRIAGE_TARGET_SQL).fetchone()
    finally:
        con.close()
    return str(row[0]) if row else None


def _default_loopscope() -> str:
    """``loopscope`` on PATH, else the one installed beside this Python (a virtual environment not activated)."""
    return shutil.which("loopscope") or str(Path(sys.executable).parent / "loopscope")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1m,10m", help="comma-separated record counts, e.g. 1m,10m or 200k")
    parser.add_argument("--dir", type=Path, default=_default_dir(), help="cache folder for data and stores")
    parser.add_argument("--loopscope", default=_default_loopscope(),
                        help="the loopscope executable to measure (default: the one on PATH, else the one "
                             "installed beside this Python)")
    parser.add_argument("--baseline", help="another loopscope executable, timed command by command in the same run")
    parser.add_argument("--no-load", action="store_true", help="reuse the cached store and its recorded load time")
    parser.add_argument("--baseline-same-store", action="store_true",
                        help="the baseline reads this version's store instead of one it loads itself "
                             "(when both have the same store schema: saves a second load of 10M records)")
    parser.add_argument("--only", help="comma-separated command names to run (substring match)")
    args = parser.parse_args()
    for exe in (args.loopscope, args.baseline):
        if exe is not None and shutil.which(exe) is None:
            parser.error(f"{exe}: no such executable; install loopscope (pip install -e .) or pass --loopscope PATH")

    print(f"loopscope: {args.loopscope}" + (f"   baseline: {args.baseline}" if args.baseline else ""))
    print(f"machine: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f} at start")
    all_ok = True
    for size_text in args.sizes.split(","):
        n = record_count(size_text)
        folder = args.dir / f"records-{n}"
        files = cached_dataset(n, folder)
        db, load_s, load_note = _build_store(args.loopscope, files, folder, fresh=not args.no_load)
        triage_id = _triage_id(db)
        print(f"\n{n:,} records: load {load_note}; triage of {triage_id}", flush=True)
        load_cpu = _recorded_cpu(folder)
        base_db = db
        if args.baseline and args.baseline_same_store:
            print("  baseline reads the same store", flush=True)
        elif args.baseline:
            # the baseline reads a store it loaded itself (its own schema and facts)
            base_db, _, base_note = _build_store(args.baseline, files, folder, not args.no_load, "baseline")
            print(f"  baseline load {base_note}", flush=True)
        header = f"  {'command':<24} {'wall s':>8} {'cpu s':>8} {'peak MB':>9} {'x load':>19}  {'target':<26} result"
        if args.baseline:
            header += f"   {'baseline s':>10} {'cpu s':>7} {'MB':>7} {'speedup':>8} {'cpu':>6}"
        print(header)
        with tempfile.TemporaryDirectory() as tmp:
            html = Path(tmp) / "audit.html"
            base_cmds = dict(_commands(args.baseline, base_db, triage_id, html)) if args.baseline else {}
            for name, argv in _commands(args.loopscope, db, triage_id, html):
                if args.only and not any(o.strip() in name for o in args.only.split(",")):
                    continue
                run = _run(argv, _env())
                if run.exit_code != 0:
                    print(f"  {name:<24} FAILED with exit code {run.exit_code}: {run.stderr.strip()[-500:]}")
                    all_ok = False
                    continue
                target, ok = _target(n, name, run, load_s)
                ratio = f"{run.seconds / load_s:6.2f}x" if load_s else "      -"
                if load_cpu:
                    ratio += f" ({run.cpu / load_cpu:4.2f}x cpu)"
                verdict = "" if ok is None else ("met" if ok else "NOT met")
                all_ok = all_ok and ok is not False
                line = (f"  {name:<24} {run.seconds:8.2f} {run.cpu:8.2f} {run.peak_mb:9,.0f} {ratio:>19}  "
                        f"{target:<26} {verdict}")
                if name in base_cmds:
                    base = _run(base_cmds[name], _env())
                    if base.exit_code == 0:
                        line += (f"   {base.seconds:10.2f} {base.cpu:7.2f} {base.peak_mb:7,.0f} "
                                 f"{base.seconds / run.seconds:7.1f}x {base.cpu / run.cpu:5.1f}x")
                    else:
                        line += f"   baseline failed ({base.exit_code})"
                print(line, flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end; all targets {'met' if all_ok else 'NOT met'}")


if __name__ == "__main__":
    main()
