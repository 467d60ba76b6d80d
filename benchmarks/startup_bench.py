"""Startup benchmark: small data stays instant (issue 14).

Times, in fresh processes as a user runs them, ``loopscope --help`` and every command on
``sample_logs/`` (154 records), hyperfine-style: a warm-up run, then ``--runs`` runs each,
reporting the best and the median wall time next to the target, and the median CPU time (user +
system, of the process and its threads: on a loaded machine the closer estimate of what the run
costs on a quiet one):

- ``loopscope --help``: <= 0.2 s;
- every command on sample_logs/: <= 0.4 s. Two cases: a fresh store (``--db :memory:``: the
  schema is created and the files loaded, the first run's cost), and a store that already
  holds the files (``--db FILE`` after a ``load``: what every later run costs).

With ``--baseline DIR`` (a checkout of another loopscope commit, e.g. from
``git worktree add`` or ``git archive main | tar -x -C DIR``), each command also runs against
that code, interleaved run by run with the candidate so both see the same machine load, and the
ratio candidate / baseline is printed. On a loaded machine trust the ratios more than the times.

    python benchmarks/startup_bench.py
    python benchmarks/startup_bench.py --runs 15 --baseline /tmp/loopscope-main
    python benchmarks/startup_bench.py --ablate --runs 5 --only help,metrics,audit
    python benchmarks/startup_bench.py --importtime   # the slowest imports of `metrics`

``--ablate`` compares this code with itself with the startup work of issue 14 switched off in the
same run (the "baseline" columns): Typer's pydantic coercion instead of cli/coercion.py,
rich.markdown/rich.traceback imported eagerly, the whole collector imported with its package, an
empty store built by replaying the migration chain and the expected columns by building a store
in memory, every command built by Typer, DuckDB's default threads and optimizer on small data (and with them
the uncapped facts build), the loop facts of a ``:memory:`` store built with the others, the facts'
freshness checked at every ask, the objects not frozen for the interpreter's teardown. Everything else
(others' work merged since) is the same on both sides.

Python's bytecode cache is on (``PYTHONDONTWRITEBYTECODE`` is dropped from the environment, so
the warm-up run writes each checkout's ``__pycache__``), as in an installation: pip compiles a
wheel's modules when it installs them. ``--no-bytecode-cache`` sets ``PYTHONDONTWRITEBYTECODE=1``
instead: each run then compiles the modules that have no cached bytecode from source (in an
editable checkout that never ran with the cache on, all of loopscope's: some 0.05-0.1 s a run).

This is a benchmark, not a test: nothing fails, it prints.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = str(REPO / "sample_logs")
HELP_TARGET_S = 0.2
COMMAND_TARGET_S = 0.4
ENTRY = "import sys; from loopscope.cli import main; sys.argv[0] = 'loopscope'; main()"
# --ablate: the same code with the startup work switched off (see the module docstring)
ABLATED = """
import functools, gc, sys
gc.freeze = lambda: None
from loopscope.cli import coercion, lazy_rich
lazy_rich.defer = lambda: None
coercion.install = lambda command: None
coercion.install_param = lambda param: param
import loopscope.collectors.core, loopscope.collectors.records, loopscope.collectors.shape, loopscope.collectors.sinks
import contextlib, importlib
importlib.import_module("loopscope.cli.app")._only_the_named_command = lambda args: contextlib.nullcontext()
if sys.argv[1:2] != ["--help"]:
    from loopscope.analyses import store
    from loopscope.analyses.store import migrations
    migrations._is_empty = lambda con: False
    store.migrate = lambda con, **kw: migrations.migrate(con, **{**kw, "fresh_schema": False})
    migrations._expected_columns = functools.cache(migrations._built_columns)
    store._small_data = lambda con, paths: False
    from loopscope.analyses.store import facts, freshness
    facts.loops_on_demand = lambda con: contextlib.nullcontext()
    freshness.checked_once = lambda con, fresh=None: contextlib.nullcontext()
""" + ENTRY

# (label, arguments): {db} is the store, {out} a scratch folder.
COMMANDS: list[tuple[str, list[str]]] = [
    ("load", ["load", SAMPLE, "--db", "{db}"]),
    ("metrics", ["metrics", SAMPLE, "--db", "{db}"]),
    ("metrics --by week", ["metrics", SAMPLE, "--db", "{db}", "--by", "week"]),
    ("metrics -f json", ["metrics", SAMPLE, "--db", "{db}", "-f", "json"]),
    ("unrecovered", ["unrecovered", SAMPLE, "--db", "{db}"]),
    ("triage c02-date-blind", ["triage", "c02-date-blind", SAMPLE, "--db", "{db}"]),
    ("lint", ["lint", SAMPLE, "--db", "{db}"]),
    ("audit", ["audit", SAMPLE, "--db", "{db}"]),
    ("audit -f json", ["audit", SAMPLE, "--db", "{db}", "-f", "json"]),
    ("audit --html", ["audit", SAMPLE, "--db", "{db}", "--html", "{out}/audit.html"]),
    ("review sample", ["review", "sample", SAMPLE, "--db", "{db}", "--n", "9", "--seed", "1"]),
    ("compare", ["compare", SAMPLE, "--db", "{db}", "--a", "tag:mode=blind", "--b", "tag:mode=corrective"]),
    ("check", ["check", SAMPLE, "--db", "{db}", "--min-recovery-rate", "0.1"]),
    ("export", ["export", SAMPLE, "--db", "{db}", "--out", "{out}/export"]),
    ("lint check -m", ["lint", "check", "-m", "Invalid date 'x'. Use YYYY-MM-DD."]),
]
# The same work in the spelling of a baseline from before lint had verbs.
BASELINE_SPELLING = {"lint check -m": ["lint", "-m", "Invalid date 'x'. Use YYYY-MM-DD."]}


def _shim(checkout: Path) -> Path:
    """A folder to put first on PYTHONPATH so that ``import loopscope`` reads ``checkout``'s code."""
    root = Path(tempfile.mkdtemp(prefix="loopscope-baseline-"))
    pkg = root / "loopscope"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("cli", "analyses", "collectors"):
        (pkg / name).symlink_to(checkout.resolve() / name)
    return root


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run in a fresh process."""
    entry = env.get("_LOOPSCOPE_BENCH_ENTRY", ENTRY)
    cpu, start = _cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", entry, *args], env=env, cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr[-500:]}")
    return took, _cpu() - cpu


def _expand(args: list[str], db: str, out: str) -> list[str]:
    return [a.replace("{db}", db).replace("{out}", out) for a in args]


def _envs(baseline: Path | None, ablate: bool, bytecode_cache: bool = True) -> dict[str, dict[str, str]]:
    dropped = ("LOOPSCOPE_DB", "PYTHONPATH") + (("PYTHONDONTWRITEBYTECODE",) if bytecode_cache else ())
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    if not bytecode_cache:
        base["PYTHONDONTWRITEBYTECODE"] = "1"
    base.update(COLUMNS="100", NO_COLOR="1")
    envs = {"candidate": dict(base)}
    if baseline is not None:
        envs["baseline"] = {**base, "PYTHONPATH": str(_shim(baseline))}
    elif ablate:
        envs["baseline"] = {**base, "_LOOPSCOPE_BENCH_ENTRY": ABLATED}
    return envs


def bench(runs: int, baseline: Path | None, ablate: bool = False, only: set[str] | None = None,
          bytecode_cache: bool = True) -> None:
    envs = _envs(baseline, ablate, bytecode_cache)
    has_baseline = len(envs) > 1
    work = Path(tempfile.mkdtemp(prefix="loopscope-startup-"))
    for name in envs:
        (work / f"out-{name}").mkdir()
    # a store per code version that already holds sample_logs/ (the "later runs" case)
    stores = {}
    for name, env in envs.items():
        stores[name] = str(work / f"{name}.duckdb")
        _run(["load", SAMPLE, "--db", stores[name]], env, str(work))
    cases: list[tuple[str, list[str], float, str]] = [("--help", ["--help"], HELP_TARGET_S, "")]
    for label, args in COMMANDS:
        if only and label not in only and label.split()[0] not in only:
            continue
        cases.append((label, args, COMMAND_TARGET_S, ":memory:" if "{db}" in args else ""))
        if "{db}" in args:
            cases.append((label, args, COMMAND_TARGET_S, "store"))
    names = list(envs)
    print(f"{runs} runs each after a warm-up; wall seconds, best / median; machine load {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores; bytecode cache {'on' if bytecode_cache else 'off (every module compiled)'}")
    head = f"{'command':<22} {'store':<8} {'target':>6}  {'best':>6} {'median':>6} {'cpu':>6}"
    if has_baseline:
        head += f"  {'base best':>9} {'base med':>8} {'base cpu':>8}  {'ratio':>5} {'cpu ratio':>9}"
    print(head)
    misses = 0
    for label, args, target, store in cases:
        times: dict[str, list[float]] = {n: [] for n in names}
        cpus: dict[str, list[float]] = {n: [] for n in names}
        for i in range(runs + 1):
            for name in names if i % 2 == 0 else reversed(names):
                out = str(work / f"out-{name}")
                db = ":memory:" if store in ("", ":memory:") else stores[name]
                spelled = BASELINE_SPELLING.get(label, args) if name == "baseline" else args
                took, cpu = _run(_expand(spelled, db, out), envs[name], str(work))
                if i:  # the first round warms the file cache
                    times[name].append(took)
                    cpus[name].append(cpu)
        best, med = min(times["candidate"]), statistics.median(times["candidate"])
        cpu = statistics.median(cpus["candidate"])
        flag = "" if med <= target else "  over"
        misses += med > target
        line = f"{label:<22} {store or '-':<8} {target:>6.2f}  {best:>6.3f} {med:>6.3f} {cpu:>6.3f}"
        if has_baseline:
            b_best, b_med = min(times["baseline"]), statistics.median(times["baseline"])
            b_cpu = statistics.median(cpus["baseline"])
            line += f"  {b_best:>9.3f} {b_med:>8.3f} {b_cpu:>8.3f}  {med / b_med:>5.2f} {cpu / b_cpu:>9.2f}"
        print(line + flag, flush=True)
    print(f"{len(cases) - misses} of {len(cases)} within target (median)")


def importtime() -> None:
    """The 25 slowest imports (cumulative) of ``loopscope metrics sample_logs/ --db :memory:``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", ENTRY, "metrics", SAMPLE, "--db", ":memory:"],
                          capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                rows.append((int(cumulative), name.rstrip()))
    for cumulative, name in sorted(rows, reverse=True)[:25]:
        print(f"{cumulative / 1000:8.1f} ms {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--baseline", type=Path, help="a checkout of another loopscope version to compare with")
    parser.add_argument("--ablate", action="store_true",
                        help="baseline = this code with the startup work switched off (see above)")
    parser.add_argument("--only", help="comma-separated command labels or verbs (e.g. help,metrics,audit)")
    parser.add_argument("--importtime", action="store_true", help="list the slowest imports of one command")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="set PYTHONDONTWRITEBYTECODE=1: modules without cached bytecode compile on every run")
    args = parser.parse_args()
    if args.importtime:
        importtime()
        return
    bench(args.runs, args.baseline, args.ablate, set(args.only.split(",")) if args.only else None,
          bytecode_cache=not args.no_bytecode_cache)


if __name__ == "__main__":
    main()
