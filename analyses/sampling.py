"""The weekly review sample: stratified, reproducible, never the same conversation twice.

Seed 001's audit: "sample fifty conversations ... read what the model did after
each error". ``draw_sample`` picks conversations from a window (a
``Selection``: a conversation is a candidate when one of its prompts is
selected, and only the selected prompts' errors count) and puts each in one
**stratum**:

- ``unrecovered``: at least one unrecovered error (class open, aborted or gave_up);
- ``recovered``: errors, all of them recovered;
- ``no_error``: no error at all.

**Allocation** of ``n``: equal thirds (``n // 3`` each, the remainder going to
unrecovered, then recovered, then no_error). A stratum smaller than its share
is taken whole, and the shortfall is shared among the strata that still have
conversations left, in proportion to what they have left (largest remainder,
ties in stratum order), until ``n`` is reached or every conversation is taken.

**Reproducibility**: candidates are sorted by id within each stratum and drawn
with ``random.Random(seed)`` (Python's Mersenne Twister, stable across
versions for ``sample``), so the same store, window, ``n`` and seed give the
same sample. Without a seed one is drawn from the system and reported, so any
sample can be redrawn.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from loopscope.analyses import recovery
from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.selection import Selection

STRATA = ("unrecovered", "recovered", "no_error")

# One row per candidate conversation: its errors among the selected prompts.
# (The class of its first unrecovered error comes from recovery.first_unrecovered_all,
# so "first" is defined in one place.) {prompts} / {errors}: store.relations (the facts
# the store keeps, or the views prompts_v / errors_v: the same rows).
CONVERSATION_STRATA_SQL = """
WITH sel AS (
    SELECT p.* FROM {prompts} p WHERE {where}
),
counts AS (
    SELECT e.conversation_id,
           count(*) AS errors,
           count(*) FILTER (WHERE e.error_class <> 'recovered') AS unrecovered,
           count(*) FILTER (WHERE e.error_class = 'gave_up') AS gave_up
    FROM {errors} e JOIN sel USING (conversation_id, prompt_id)
    GROUP BY e.conversation_id
)
SELECT
    s.conversation_id,
    min(s.first_ts) AS first_ts,
    count(*) AS prompts,
    sum(s.n_tool_calls) AS tool_calls,
    arg_min(s.agent, (s.first_ts, s.first_seq)) AS agent,
    coalesce(any_value(c.errors), 0) AS errors,
    coalesce(any_value(c.unrecovered), 0) AS unrecovered,
    coalesce(any_value(c.gave_up), 0) AS gave_up
FROM sel s
LEFT JOIN counts c USING (conversation_id)
GROUP BY s.conversation_id
ORDER BY s.conversation_id
"""


@dataclass(frozen=True)
class Candidate:
    """A conversation that can be sampled, with what the analyses computed about it."""

    conversation_id: str
    first_ts: Any
    prompts: int
    tool_calls: int
    agent: str
    errors: int
    unrecovered: int
    gave_up: int
    first_unrecovered_class: str | None

    @property
    def stratum(self) -> str:
        """unrecovered, recovered or no_error."""
        if self.unrecovered:
            return "unrecovered"
        return "recovered" if self.errors else "no_error"

    @property
    def computed_class(self) -> str:
        """The class of the first unrecovered error, else ``recovered`` or ``no_error``."""
        return self.first_unrecovered_class or self.stratum

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON, stratum and class included."""
        return {**asdict(self), "stratum": self.stratum, "computed_class": self.computed_class}


@dataclass(frozen=True)
class Sample:
    """The drawn conversations, in stratum order, and how they were drawn."""

    seed: int
    n: int
    available: dict[str, int]
    allocation: dict[str, int]
    conversations: list[Candidate] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON: the fields, each conversation with its stratum and class."""
        return {**asdict(self), "conversations": [c.to_dict() for c in self.conversations]}


def candidates(con: duckdb.DuckDBPyConnection, selection: Selection) -> list[Candidate]:
    """Every conversation with a selected prompt, by id."""
    from loopscope.analyses.store.relations import relations

    where, params = selection.where("p")
    rel = relations(con)
    cur = con.execute(CONVERSATION_STRATA_SQL.format(where=where, prompts=rel.prompts, errors=rel.errors), params)
    names = [d[0] for d in cur.description or []]
    rows = [dict(zip(names, row)) for row in cur.fetchall()]
    first_class = {r.conversation_id: r.error_class for r in recovery.first_unrecovered_all(con, selection)}
    return [Candidate(**r, first_unrecovered_class=first_class.get(r["conversation_id"])) for r in rows]


def allocate(n: int, available: dict[str, int]) -> dict[str, int]:
    """How many conversations to take from each stratum (see the module docstring).

    Args:
        n: the sample size wanted.
        available: conversations per stratum.

    Returns:
        Per stratum, at most its availability; the total is min(n, all available).
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    base, extra = divmod(n, len(STRATA))
    want = {s: base + (1 if i < extra else 0) for i, s in enumerate(STRATA)}
    take = {s: min(want[s], available.get(s, 0)) for s in STRATA}
    target = min(n, sum(available.get(s, 0) for s in STRATA))
    while sum(take.values()) < target:
        short = target - sum(take.values())
        left = {s: available.get(s, 0) - take[s] for s in STRATA if available.get(s, 0) > take[s]}
        total_left = sum(left.values())
        quotas = {s: short * left[s] / total_left for s in left}
        add = {s: min(int(quotas[s]), left[s]) for s in left}
        rest = short - sum(add.values())
        # Largest remainder first; ties in stratum order.
        for s in sorted(left, key=lambda k: (-(quotas[k] - int(quotas[k])), STRATA.index(k))):
            if rest <= 0:
                break
            if add[s] < left[s]:
                add[s] += 1
                rest -= 1
        for s, k in add.items():
            take[s] += k
    return take


def draw_sample(
    con: duckdb.DuckDBPyConnection, selection: Selection, *, n: int = 50, seed: int | None = None
) -> Sample:
    """Draw a stratified sample of conversations from the selection.

    Args:
        con: an open store.
        selection: the window (and any agent / tag filters).
        n: how many conversations (fewer when the window has fewer).
        seed: the random seed; None draws one from the system (reported in the result).

    Raises:
        LoopscopeError: ``n`` is below 1, or the window has no conversation.
    """
    if n < 1:
        raise LoopscopeError(f"--n {n} must be at least 1", hint="the weekly audit reads --n 50")
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    pool = candidates(con, selection)
    if not pool:
        raise LoopscopeError(
            "the window has no conversation to sample",
            hint="check --week / --since / --until against the data (loopscope metrics --by week)",
        )
    by_stratum: dict[str, list[Candidate]] = {s: [] for s in STRATA}
    for c in pool:
        by_stratum[c.stratum].append(c)
    available = {s: len(v) for s, v in by_stratum.items()}
    allocation = allocate(n, available)
    rng = random.Random(seed)
    chosen: list[Candidate] = []
    for s in STRATA:
        # One draw per stratum, in a fixed order: the sample depends only on the seed.
        picked = rng.sample(by_stratum[s], allocation[s])
        chosen.extend(sorted(picked, key=lambda c: (c.first_ts, c.conversation_id)))
    return Sample(seed=seed, n=n, available=available, allocation=allocation, conversations=chosen)
