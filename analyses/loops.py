"""No-progress loops and cycles: the run-time loop signal's definitions, offline.

The collector's ``loop.spinning()`` (``loopscope.collectors.history``) finds three kinds of loop
in a prompt while it runs; this module finds the same loops in stored records, with the same
thresholds (imported from the collector, defined once there):

- **Retry loop** (the spec's definition; ``incidents.retry_loops``): three or more failing calls
  of one prompt with the same tool and fingerprint.
- **No-progress loop**: within one prompt, ``NO_PROGRESS_MIN_CALLS`` (3) or more successful
  calls (``is_error: false``) with the same ``tool_name``, the same ``args_fingerprint`` (two
  nulls count as the same) and the same non-null ``result_fingerprint``: the model asked for the
  same thing again and got the same answer (HKUDS/nanobot#2298: 172 identical ``exec`` calls with
  an empty result). Records without ``result_fingerprint`` (older writers, results not handed
  to the collector) never form one.

Records flagged ``replayed: true`` (short-circuited by an idempotency layer: a resumed loop, not
the model asking again) take no part in no-progress loops and cycles; they are replays.
- **Cycle**: within one prompt, in call order (step, then ``ts``, then position in the input),
  ``CYCLE_MIN_CALLS`` (4) or more consecutive calls alternating between two different calls,
  a call being its ``tool_name`` and ``args_fingerprint``: A-B-A-B (confident-ai/deepeval#2643).
  A call continues the cycle when it equals the call two before it and differs from the one
  before it; a cycle of n calls has n - 2 such calls in a row.

``result_fingerprint`` is an optional v1 field (docs/records.md); the loader keeps it among a
record's unknown fields (``tool_calls.extra``), where these queries read it.
tests/test_runtime_loops.py runs loops through the collector and checks that the signal and
these queries find the same loops.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any

import duckdb

from loopscope.analyses.rows import fetch_dicts as _rows
from loopscope.analyses.selection import Selection
from loopscope.collectors.history import CYCLE_MIN_CALLS, NO_PROGRESS_MIN_CALLS

# Each kind of loop lies inside one prompt and reads only its records (the
# raw ``replayed`` flag, not the computed replays), so the loops of every
# prompt are facts of the store: the store keeps them (``no_progress_facts``,
# ``cycle_facts``: store.facts) and the queries below read them through
# store.relations, or, with stale facts, these per-prompt queries over the
# records. {calls}: a filter on the tool calls t (or TRUE).
NO_PROGRESS_PER_PROMPT_SQL = """
WITH calls AS (
    SELECT t.*, json_extract_string(t.extra, '$.result_fingerprint') AS result_fingerprint
    FROM tool_calls t
    WHERE NOT t.is_error AND NOT t.replayed AND {calls}
)
SELECT
    c.conversation_id,
    c.prompt_id,
    c.tool_name,
    c.args_fingerprint,
    c.result_fingerprint,
    count(*) AS calls,
    min(c.step) AS first_step,
    max(c.step) AS last_step,
    min(c.ts) AS first_ts,
    max(c.ts) AS last_ts,
    list(c.tool_call_id ORDER BY c.ts, c.seq) AS tool_call_ids
FROM calls c
WHERE c.result_fingerprint IS NOT NULL
GROUP BY c.conversation_id, c.prompt_id, c.tool_name, c.args_fingerprint, c.result_fingerprint
HAVING count(*) >= """ + str(int(NO_PROGRESS_MIN_CALLS)) + """
"""

# A cycle of four calls or more (A-B-A-B...) holds two different calls twice
# each, so the calls of the prompt that occur twice or more number four or
# more; only such prompts are put in order (most prompts are not, and ordering
# every call is the cost). Prompts and calls are grouped by hashes: a
# collision merges groups, which only adds up their counts, so a prompt that
# qualifies always does, and the window below orders by the exact keys.
if CYCLE_MIN_CALLS < 4:
    raise ValueError("the cycle query's prefilter (two calls twice each) needs CYCLE_MIN_CALLS >= 4")
CYCLES_PER_PROMPT_SQL = """
WITH repeated_calls AS (
    SELECT hash(t.conversation_id, t.prompt_id) AS ph, count(*) AS n
    FROM tool_calls t
    WHERE NOT t.replayed AND {calls}
    GROUP BY ph, hash(t.conversation_id, t.prompt_id, t.tool_name, t.args_fingerprint)
    HAVING count(*) >= 2
),
candidates AS (SELECT ph FROM repeated_calls GROUP BY ph HAVING sum(n) >= 4),
ordered AS (
    SELECT
        t.conversation_id, t.prompt_id, t.tool_call_id, t.tool_name, t.args_fingerprint, t.step, t.ts,
        row_number() OVER w AS pos,
        lag(t.tool_name, 1) OVER w AS tool_1,
        lag(t.args_fingerprint, 1) OVER w AS fp_1,
        lag(t.tool_name, 2) OVER w AS tool_2,
        lag(t.args_fingerprint, 2) OVER w AS fp_2
    FROM tool_calls t
    WHERE NOT t.replayed AND {calls} AND hash(t.conversation_id, t.prompt_id) IN (SELECT ph FROM candidates)
    WINDOW w AS (PARTITION BY t.conversation_id, t.prompt_id ORDER BY t.step, t.ts, t.seq)
),
flagged AS (
    -- a call continues an alternation: it equals the call two before and differs from the one before
    SELECT *,
        coalesce(tool_name = tool_2 AND args_fingerprint IS NOT DISTINCT FROM fp_2
                 AND NOT (tool_name = tool_1 AND args_fingerprint IS NOT DISTINCT FROM fp_1), false) AS alternates
    FROM ordered
),
runs AS (
    -- gaps and islands: consecutive alternating calls share run_id
    SELECT *, pos - row_number() OVER (PARTITION BY conversation_id, prompt_id ORDER BY pos) AS run_id
    FROM flagged
    WHERE alternates
)
SELECT
    r.conversation_id,
    r.prompt_id,
    first(r.tool_name ORDER BY r.pos) AS tool_name,
    first(r.args_fingerprint ORDER BY r.pos) AS args_fingerprint,
    first(r.tool_1 ORDER BY r.pos) AS other_tool_name,
    first(r.fp_1 ORDER BY r.pos) AS other_args_fingerprint,
    count(*) + 2 AS calls,
    min(r.step) AS first_step,
    max(r.step) AS last_step,
    min(r.ts) AS first_ts,
    max(r.ts) AS last_ts
FROM runs r
GROUP BY r.conversation_id, r.prompt_id, r.run_id
HAVING count(*) + 2 >= """ + str(int(CYCLE_MIN_CALLS)) + """
"""

# The loops of the selected prompts, longest first. Slots: {loops} (the
# per-prompt loops, filtered by {calls}: the facts or the query above),
# {prompts} (prompt_facts or prompts_v, store.relations picks) and {where}
# (the Selection's condition on the prompts p), bound in that order.
NO_PROGRESS_LOOPS_SQL = """
SELECT
    c.conversation_id,
    c.prompt_id,
    p.agent,
    c.tool_name,
    c.args_fingerprint,
    c.result_fingerprint,
    c.calls,
    c.calls - 1 AS redundant_calls,
    c.first_step,
    c.last_step,
    c.first_ts,
    c.last_ts,
    c.tool_call_ids,
    p.exit_reason,
    p.is_open
FROM {loops} c
JOIN {prompts} p USING (conversation_id, prompt_id)
WHERE {where}
ORDER BY c.calls DESC, p.first_ts, p.first_seq, c.conversation_id, c.first_step
"""

CYCLES_SQL = """
SELECT
    r.conversation_id,
    r.prompt_id,
    p.agent,
    r.tool_name,
    r.args_fingerprint,
    r.other_tool_name,
    r.other_args_fingerprint,
    r.calls,
    r.calls - 2 AS redundant_calls,
    r.first_step,
    r.last_step,
    r.first_ts,
    r.last_ts,
    p.exit_reason,
    p.is_open
FROM {loops} r
JOIN {prompts} p USING (conversation_id, prompt_id)
WHERE {where}
ORDER BY r.calls DESC, p.first_ts, p.first_seq, r.conversation_id, r.first_step
"""


def _run(con: duckdb.DuckDBPyConnection, sql: str, selection: Selection, kind: str) -> list[dict[str, Any]]:
    where, params = selection.where("p")
    calls, calls_params = selection.calls_where("t")
    from loopscope.analyses.store.relations import relations

    rel = relations(con)
    loops = getattr(rel.loops, kind)
    query = sql.format(loops=loops.format(calls=calls), where=where, prompts=rel.prompts)
    # every {calls} slot (one or two, by relation) comes before {where}: its parameters first, once per slot
    return _rows(con.execute(query, [*calls_params * loops.count("{calls}"), *params]))


@dataclass(frozen=True)
class NoProgressLoop:
    """The same successful call with the same result, at least three times in one prompt."""

    conversation_id: str
    prompt_id: str
    agent: str
    tool_name: str
    args_fingerprint: str | None
    result_fingerprint: str
    calls: int
    redundant_calls: int
    first_step: int
    last_step: int
    first_ts: dt.datetime
    last_ts: dt.datetime
    tool_call_ids: list[str]
    exit_reason: str | None
    is_open: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class Cycle:
    """Two different calls alternating (A-B-A-B), at least four calls in a row in one prompt.

    ``redundant_calls`` counts the calls after the first A-B pair.
    """

    conversation_id: str
    prompt_id: str
    agent: str
    tool_name: str
    args_fingerprint: str | None
    other_tool_name: str
    other_args_fingerprint: str | None
    calls: int
    redundant_calls: int
    first_step: int
    last_step: int
    first_ts: dt.datetime
    last_ts: dt.datetime
    exit_reason: str | None
    is_open: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


def no_progress_loops(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[NoProgressLoop]:
    """No-progress loops in the selected prompts, longest first."""
    return [NoProgressLoop(**r) for r in _run(con, NO_PROGRESS_LOOPS_SQL, selection, "no_progress")]


def cycles(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[Cycle]:
    """A-B-A-B cycles in the selected prompts, longest first."""
    return [Cycle(**r) for r in _run(con, CYCLES_SQL, selection, "cycles")]
