"""Triage benchmark: ``triage`` and ``unrecovered`` against plain reads of the same store.

Generates synthetic records (benchmarks/gen_records.py, reused when already
there), loads them once, then times in the same run:

- ``read one conversation``: ``SELECT * FROM tool_calls WHERE conversation_id = ?``,
  the floor for pulling one conversation out of the store;
- ``triage``: ``loopscope.analyses.triage.triage`` of that conversation (timeline,
  classes, first unrecovered error, previous attempts, loops, replays, duplicates);
- ``classify all errors``: ``SELECT count(*) FROM errors_v`` (every error's class);
- ``unrecovered``: ``first_unrecovered_all`` over the whole store.

It prints each time (best of ``--repeat``) and the ratios triage / read and
unrecovered / classify. Triage should stay within a small multiple of reading
the conversation: it must not scan the whole store per query.

    python benchmarks/triage_bench.py --records 1000000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_records import generate  # noqa: E402

READ_CONVERSATION_SQL = "SELECT * FROM tool_calls WHERE conversation_id = ?"
CLASSIFY_SQL = "SELECT count(*) FROM errors_v"
# A conversation in the middle of the store that has an unrecovered error.
PICK_SQL = """
SELECT conversation_id FROM errors_v WHERE error_class <> 'recovered'
ORDER BY conversation_id LIMIT 1 OFFSET (SELECT count(DISTINCT conversation_id) / 2 FROM errors_v WHERE error_class <> 'recovered')
"""


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "loopscope-triage-bench")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from loopscope.analyses import recovery
    from loopscope.analyses.ingest.load import load_paths
    from loopscope.analyses.selection import Selection
    from loopscope.analyses.store import connect
    from loopscope.analyses.triage import triage

    data = args.dir / f"records-{args.records}"
    files = sorted(data.glob("*.jsonl")) or generate(args.records, data)
    db = args.dir / f"store-{args.records}.duckdb"
    fresh = not db.exists()
    con = connect(db)
    if fresh:
        start = time.perf_counter()
        load_paths(con, list(files))
        print(f"loaded {args.records:,} records in {time.perf_counter() - start:.1f} s")
    row = con.execute(PICK_SQL).fetchone()
    if row is None:
        sys.exit("no unrecovered error in the generated data")
    conv = row[0]

    read = best_of(args.repeat, lambda: con.execute(READ_CONVERSATION_SQL, [conv]).fetchall())
    tri = best_of(args.repeat, lambda: triage(con, conv))
    classify = best_of(args.repeat, lambda: con.execute(CLASSIFY_SQL).fetchall())
    unrec = best_of(args.repeat, lambda: recovery.first_unrecovered_all(con, Selection()))
    n_rows = len(recovery.first_unrecovered_all(con, Selection()))

    print(f"store: {args.records:,} records; conversation {conv}")
    print(f"  read one conversation   {read * 1000:9.1f} ms")
    print(f"  triage                  {tri * 1000:9.1f} ms   {tri / read:6.1f}x read")
    print(f"  classify all errors     {classify * 1000:9.1f} ms")
    print(f"  unrecovered ({n_rows:,} rows) {unrec * 1000:9.1f} ms   {unrec / classify:6.1f}x classify")


if __name__ == "__main__":
    main()
