"""How long the audit report takes, against the four metrics on the same store, in the same run.

The audit runs every analysis (weekly and per-agent series with their tests,
templates, loops, replays, duplicates, budget, triage list, reviews), so it is
compared with ``metrics`` (one query) as the baseline: the ratio says what the
whole report costs relative to the dashboard figures.

    python benchmarks/audit_bench.py 200000
    python benchmarks/audit_bench.py 200000 --weeks 12   # conversations spread over 12 ISO weeks

The generator writes every record within a few days; ``--weeks W`` then moves
each conversation (all its records together) by 0..W-1 weeks in the store, so
the weekly series have W points, as in a real quarter of logs.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

from loopscope.analyses.audit import audit
from loopscope.analyses.ingest.load import load_paths
from loopscope.analyses.store.facts import refresh_facts
from loopscope.analyses.metrics import compute_metrics
from loopscope.cli.render.html import render_html
from loopscope.analyses.selection import Selection
from loopscope.analyses.store import connect


def _gen_records():  # type: ignore[no-untyped-def]
    # benchmarks/ is not a package: load the generator next to this file.
    spec = importlib.util.spec_from_file_location("gen_records", Path(__file__).with_name("gen_records.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# Move each conversation by a stable pseudo-random number of weeks (whole conversations,
# so prompts and replays stay together).
SPREAD_SQL = """
UPDATE {table} SET ts = ts + to_weeks(CAST(hash(conversation_id) % ? AS INTEGER))
"""


def spread_over_weeks(con, weeks: int) -> None:  # type: ignore[no-untyped-def]
    """Spread the conversations over ``weeks`` ISO weeks and rebuild the per-prompt facts."""
    for table in ("tool_calls", "loop_exits"):
        con.execute(SPREAD_SQL.format(table=table), [weeks])
    refresh_facts(con)  # the facts' freshness check counts rows, not timestamps


def best_of(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    """Fastest wall time of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=200_000, help="records to generate (about)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--weeks", type=int, default=1, help="spread the conversations over this many ISO weeks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = _gen_records().generate(args.n, Path(tmp) / "logs")
        con = connect(":memory:")
        load_paths(con, paths)
        if args.weeks > 1:
            spread_over_weeks(con, args.weeks)
        sel = Selection()
        report = audit(con, sel)
        o = report["overall"]
        print(f"{o['prompts']} prompts, {o['tool_calls']} tool calls, {len(report['weeks'])} weeks, "
              f"{len(report['agents'])} agents")
        base = best_of(lambda: compute_metrics(con, sel), args.repeat)
        full = best_of(lambda: audit(con, sel), args.repeat)
        page = best_of(lambda: render_html(report), args.repeat)
        print(f"metrics (baseline): {base * 1000:8.1f} ms")
        print(f"audit report:       {full * 1000:8.1f} ms  ({full / base:.1f}x metrics)")
        print(f"HTML rendering:     {page * 1000:8.1f} ms  ({page / base:.2f}x metrics)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
