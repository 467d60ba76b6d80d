"""How long ``rank_templates`` takes on a synthetic store, against a baseline in the same run.

Usage: python benchmarks/lint_bench.py [N_ERRORS]

The store holds N error calls over 7 tools whose messages carry ids, so there
are tens of thousands of distinct texts. The baseline loads the
(tool, message, template) map row by row with ``executemany`` (the first
implementation); ``rank_templates`` loads it in one ``unnest`` statement.
Both compute the same templates; the script prints both times and the ratio.
"""

from __future__ import annotations

import sys
import time

from loopscope.analyses.lint.ranking import rank_templates
from loopscope.analyses.lint.templates import template_of
from loopscope.analyses.selection import Selection
from loopscope.analyses.store import connect

FILL_SQL = """
INSERT INTO tool_calls
SELECT i, 1, i, 1, TIMESTAMP '2026-11-01' + INTERVAL (i) SECOND, 'c' || (i // 10), 'p' || (i // 5), 'a',
       NULL, NULL, NULL, 'tc' || i, 'tool' || (i % 7), i % 5, NULL, NULL, 'permanent_fail', true, 1, 1.0, NULL,
       CASE i % 3 WHEN 0 THEN 'Error: Patient P-' || (i % 20000) || ' not found'
                  WHEN 1 THEN 'Failed' ELSE 'timeout after ' || (i % 50) || ' s' END,
       false, NULL
FROM range(?) t(i)
"""

BASELINE_PAIRS_SQL = "SELECT DISTINCT tool_name, error_message FROM tool_calls WHERE is_error"


def main(n: int) -> None:
    con = connect(":memory:")
    con.execute(FILL_SQL, [n])

    start = time.perf_counter()
    # the baseline's input: every distinct (tool, message) of the error calls, read straight from the table
    pairs = con.execute(BASELINE_PAIRS_SQL).fetchall()
    con.execute("CREATE TEMP TABLE baseline (tool_name VARCHAR, message VARCHAR, template VARCHAR)")
    con.executemany("INSERT INTO baseline VALUES (?, ?, ?)", [(t, m, template_of(m)) for t, m in pairs])
    baseline = time.perf_counter() - start

    start = time.perf_counter()
    ranked = rank_templates(con, Selection())
    current = time.perf_counter() - start

    print(f"errors: {n}, distinct (tool, message): {len(pairs)}, templates: {len(ranked)}")
    print(f"baseline (executemany map only): {baseline:.2f} s")
    print(f"rank_templates (whole ranking):  {current:.2f} s")
    print(f"ratio baseline / current: {baseline / current:.1f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
