"""Error recovery: class breakdowns and the first unrecovered error.

Every error (``is_error`` and not a replay) has one class in ``errors_v``
(``recovered``, ``open``, ``aborted``, ``gave_up``; see docs/records.md). This
module only reads that view, so the classes are defined in one place.

The **first unrecovered error** of a conversation is, of its unrecovered
errors, the earliest by prompt order (the prompt's first ``ts``, then its first
``seq``), then step, then ``ts`` (then ``seq``, the position in the input).

Its **previous attempts** are the earlier ``tool_call`` records of the same
conversation with the same ``tool_name`` and the same ``args_fingerprint``
(successes, errors and replays alike: what was tried and what failed). When
the error has no fingerprint the target is unknown, so the records with no
fingerprint and the same ``error_message`` count instead, as in the retry-loop
definition.

Over a ``Selection`` (``first_unrecovered_all``), only errors in selected
prompts count: the row for a conversation is its first unrecovered error
*within the selection*, then filtered by tool and class.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from collections.abc import Iterator
from typing import Any

import duckdb

from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.model import ERROR_CLASSES
from loopscope.analyses.rows import fetch_dicts as _rows
from loopscope.analyses.rows import class_dict, json_object
from loopscope.analyses.selection import Selection
from loopscope.analyses.store.relations import ConversationRelations, conversation_relations, relations

UNRECOVERED_CLASSES = tuple(c for c in ERROR_CLASSES if c != "recovered")

# Class counts per group over the selected prompts; {group} is a whitelisted
# column expression (see _BREAKDOWN_GROUPS), {where} a Selection condition,
# {errors} / {prompts} the relations store.relations picks (views or facts).
ERROR_CLASS_BREAKDOWN_SQL = """
SELECT
    {group} AS key,
    count(*) AS errors,
    count(*) FILTER (WHERE e.error_class = 'recovered') AS recovered,
    count(*) FILTER (WHERE e.error_class = 'open') AS open,
    count(*) FILTER (WHERE e.error_class = 'aborted') AS aborted,
    count(*) FILTER (WHERE e.error_class = 'gave_up') AS gave_up,
    count(*) FILTER (WHERE e.resolved_later) AS resolved_later_errors,
    count(DISTINCT e.conversation_id || chr(0) || e.prompt_id) AS prompts
FROM {errors} e
{sel_join}
WHERE {where}
GROUP BY key
ORDER BY errors DESC, key
"""
_BREAKDOWN_GROUPS = {"tool": "e.tool_name", "agent": "p.agent"}
# The errors' prompts p: for the agent, or for a selection; per tool over every
# prompt no join is needed (every error's prompt is in {prompts}).
_BREAKDOWN_JOIN = "JOIN {prompts} p USING (conversation_id, prompt_id)"

# Ordering key of a record inside its conversation, as a comparable struct.
_ORDER_KEY = "(e.prompt_first_ts, e.prompt_first_seq, e.step, e.ts, e.seq)"

# The first unrecovered error of one conversation, over the whole store.
# {errors}: store.relations.conversation_relations(con).errors (that conversation's errors only).
FIRST_UNRECOVERED_SQL = f"""
SELECT e.*
FROM {{errors}} e
WHERE e.conversation_id = $conversation_id AND e.error_class <> 'recovered'
ORDER BY {_ORDER_KEY}
LIMIT 1
"""

# A previous attempt at an error: an earlier record (t, its prompt q) of the
# same conversation, tool and fingerprint or, when the error has no
# fingerprint, with none and the same error message. The slots name the
# error's values: bound parameters for one error, columns for many.
_PREVIOUS_ATTEMPT_CONDITION = """
    t.conversation_id = {conversation_id}
    AND t.tool_name = {tool_name}
    AND CASE WHEN {fingerprint} IS NULL
             THEN t.args_fingerprint IS NULL AND t.error_message IS NOT DISTINCT FROM {error_message}
             ELSE t.args_fingerprint = {fingerprint} END
    AND (q.first_ts, q.first_seq, t.step, t.ts, t.seq)
        < ({prompt_first_ts}, {prompt_first_seq}, {step}, {ts}, {seq})
"""

# The previous attempts at one error, in conversation order ({tool_calls} /
# {prompts}: store.relations.conversation_relations, the conversation's rows only).
PREVIOUS_ATTEMPTS_SQL = f"""
SELECT
    t.prompt_id, t.step, t.tool_call_id, t.tool_name, t.ts, t.outcome, t.is_error,
    t.attempts, t.latency_ms, t.error_type, t.error_message, t.is_replay
FROM {{tool_calls}} t
JOIN {{prompts}} q USING (conversation_id, prompt_id)
WHERE {_PREVIOUS_ATTEMPT_CONDITION.format(
    conversation_id="$conversation_id", tool_name="$tool_name", fingerprint="$fingerprint",
    error_message="$error_message", prompt_first_ts="$prompt_first_ts", prompt_first_seq="$prompt_first_seq",
    step="$step", ts="$ts", seq="$seq",
)}
ORDER BY q.first_ts, q.first_seq, t.step, t.ts, t.seq
"""

# The same for several conversations at once ({errors}: their rows of errors_v,
# store.relations.conversation_set_relations): one row per conversation that has an
# unrecovered error, numbered on the same ordering key.
FIRST_UNRECOVERED_EACH_SQL = f"""
SELECT e.*
FROM {{errors}} e
WHERE e.error_class <> 'recovered'
QUALIFY row_number() OVER (PARTITION BY e.conversation_id ORDER BY {_ORDER_KEY}) = 1
"""
# The previous attempts at each of those errors (f), by conversation, each in conversation order.
PREVIOUS_ATTEMPTS_EACH_SQL = """
SELECT
    f.conversation_id AS error_conversation_id,
    t.prompt_id, t.step, t.tool_call_id, t.tool_name, t.ts, t.outcome, t.is_error,
    t.attempts, t.latency_ms, t.error_type, t.error_message, t.is_replay
FROM ({firsts}) f
JOIN {tool_calls} t ON t.conversation_id = f.conversation_id
JOIN {prompts} q ON q.conversation_id = t.conversation_id AND q.prompt_id = t.prompt_id
WHERE {previous_attempt}
ORDER BY f.conversation_id, q.first_ts, q.first_seq, t.step, t.ts, t.seq
"""

# First unrecovered error per conversation among the selected prompts, then
# filtered by tool / class. {prompts}: prompt_facts when it matches the records
# (the selected prompts' columns, materialised), else prompts_v.
# Parameters, in order: the Selection's, never_resolved, tools (twice), classes (twice), limit.
_FIRSTS_CTES = """
WITH sel AS (
    SELECT p.conversation_id, p.prompt_id, p.first_ts, p.last_ts FROM {prompts} p WHERE {where}
),
unrec_keys AS (
    -- numbered on the ordering columns only (sorting the texts too cost most of the query);
    -- the first one's other columns are joined by seq, unique per record
    SELECT
        e.conversation_id, e.seq,
        row_number() OVER (
            PARTITION BY e.conversation_id
            ORDER BY e.prompt_first_ts, e.prompt_first_seq, e.step, e.ts, e.seq
        ) AS rn,
        count(*) OVER (PARTITION BY e.conversation_id) AS n_unrecovered
    FROM {errors} e
    JOIN sel USING (conversation_id, prompt_id)
    WHERE e.error_class <> 'recovered' AND NOT (? AND e.resolved_later)
),
unrec AS (
    SELECT
        e.conversation_id, e.prompt_id, e.step, e.tool_call_id, e.tool_name, e.error_class, e.error_type,
        e.error_message, e.exit_reason, e.agent, e.ts, e.seq, e.args_fingerprint, e.prompt_first_ts,
        e.prompt_first_seq, e.resolved_later, e.resolved_in_prompt, k.rn, k.n_unrecovered
    FROM unrec_keys k
    JOIN {errors} e ON e.seq = k.seq
    WHERE k.rn = 1
),
convs AS (
    SELECT conversation_id, max(last_ts) AS last_ts, min(first_ts) AS first_ts, count(*) AS prompts
    FROM sel GROUP BY conversation_id
),
firsts AS (
    SELECT u.*, c.prompts, c.first_ts AS conversation_first_ts, c.last_ts AS conversation_last_ts
    FROM unrec u
    JOIN convs c USING (conversation_id)
    WHERE u.rn = 1
      AND (len(?::VARCHAR[]) = 0 OR list_contains(?::VARCHAR[], u.tool_name))
      AND (len(?::VARCHAR[]) = 0 OR list_contains(?::VARCHAR[], u.error_class))
)"""
_UNRECOVERED_ROW_COLUMNS = """
    f.conversation_id, f.prompt_id, f.step, f.tool_call_id, f.tool_name, f.error_class, f.error_type,
    f.error_message, f.exit_reason, f.agent, f.ts AS error_ts, f.n_unrecovered, f.resolved_later,
    f.resolved_in_prompt, f.prompts, f.conversation_first_ts AS first_ts, f.conversation_last_ts AS last_ts"""
# coalesce: ClickHouse's correlated count over no rows is NULL, not 0. Every
# record counts (replays too), so the table itself, not tool_calls_v: no
# replay flags to compute.
_PREVIOUS_ATTEMPTS_COUNT = """coalesce((
        SELECT count(*)
        FROM tool_calls t
        JOIN {prompts} q USING (conversation_id, prompt_id)
        WHERE {previous_attempt}
    ), 0)"""
# Newest conversation (last record) first: the page is cut before the
# previous attempts are counted, so they are counted for the rows shown only.
FIRST_UNRECOVERED_ALL_SQL = _FIRSTS_CTES + """,
page AS (
    SELECT * FROM firsts
    ORDER BY conversation_last_ts DESC, conversation_id
    LIMIT ?
)
SELECT""" + _UNRECOVERED_ROW_COLUMNS + """,
    """ + _PREVIOUS_ATTEMPTS_COUNT + """ AS previous_attempts
FROM page f
ORDER BY f.conversation_last_ts DESC, f.conversation_id
"""
# The audit's "triage first" order: most unrecovered errors, then most
# previous attempts at the failing call, then newest; the first ``limit``
# rows and, in every row, how many conversations there are in all (``total``).
# How many conversations the list would show without a limit (the heading's "2 of 7").
COUNT_FIRST_UNRECOVERED_SQL = _FIRSTS_CTES + """
SELECT count(*) FROM firsts
"""
# The order starts with n_unrecovered, so a conversation whose number of
# unrecovered errors is below the ``limit``-th largest cannot be among the first
# ``limit``: the errors are counted per conversation first (one grouping), and
# only the conversations at or above that cut get their first unrecovered
# error (a window over their errors only), their figures (their prompts only)
# and their previous attempts (a join with their records only). The same rows
# as FIRST_UNRECOVERED_ALL_SQL's firsts in the triage order. {sel_join} joins
# the selected prompts to the errors e, or is empty when every prompt is
# selected (every error's prompt is in {prompts}). Parameters: the Selection's,
# the limit twice.
TRIAGE_FIRST_SQL = """
WITH sel AS NOT MATERIALIZED (
    SELECT p.conversation_id, p.prompt_id, p.first_ts, p.last_ts FROM {prompts} p WHERE {where}
),
unrec AS NOT MATERIALIZED (
    SELECT e.conversation_id, e.seq, e.prompt_first_ts, e.prompt_first_seq, e.step, e.ts
    FROM {errors} e
    {sel_join}
    WHERE e.error_class <> 'recovered'
),
counts AS (
    SELECT conversation_id, count(*) AS n_unrecovered FROM unrec GROUP BY conversation_id
),
cutoff AS (
    SELECT min(n_unrecovered) AS n_unrecovered
    FROM (SELECT n_unrecovered FROM counts ORDER BY n_unrecovered DESC LIMIT ?) top
),
cut AS (
    SELECT c.* FROM counts c WHERE c.n_unrecovered >= (SELECT n_unrecovered FROM cutoff)
),
first_keys AS (
    SELECT conversation_id, seq, n_unrecovered FROM (
        SELECT u.conversation_id, u.seq, c.n_unrecovered,
               row_number() OVER (
                   PARTITION BY u.conversation_id
                   ORDER BY u.prompt_first_ts, u.prompt_first_seq, u.step, u.ts, u.seq
               ) AS rn
        FROM unrec u
        JOIN cut c ON c.conversation_id = u.conversation_id
    ) numbered
    WHERE rn = 1
),
convs AS (
    SELECT s.conversation_id, max(s.last_ts) AS last_ts, min(s.first_ts) AS first_ts, count(*) AS prompts
    FROM sel s
    JOIN cut c ON c.conversation_id = s.conversation_id
    GROUP BY s.conversation_id
),
firsts AS (
    SELECT
        e.conversation_id, e.prompt_id, e.step, e.tool_call_id, e.tool_name, e.error_class, e.error_type,
        e.error_message, e.exit_reason, e.agent, e.ts, e.seq, e.args_fingerprint, e.prompt_first_ts,
        e.prompt_first_seq, e.resolved_later, e.resolved_in_prompt, k.n_unrecovered,
        c.prompts, c.first_ts AS conversation_first_ts, c.last_ts AS conversation_last_ts
    FROM first_keys k
    JOIN {errors} e ON e.seq = k.seq
    JOIN convs c ON c.conversation_id = k.conversation_id
),
cut_calls AS (
    -- found by seq, a list a narrow scan makes: the wide columns are then read only
    -- in the row groups that hold these calls
    SELECT t.conversation_id, t.prompt_id, t.tool_name, t.args_fingerprint, t.error_message, t.step, t.ts, t.seq
    FROM tool_calls t
    WHERE t.seq IN (SELECT unnest((
        SELECT list(s.seq) FROM tool_calls s WHERE s.conversation_id IN (SELECT conversation_id FROM cut)
    )))
),
cut_prompts AS (
    SELECT q.conversation_id, q.prompt_id, q.first_ts, q.first_seq
    FROM {prompts} q
    JOIN cut c ON c.conversation_id = q.conversation_id
),
attempts AS (
    SELECT f.conversation_id, count(*) AS n
    FROM firsts f
    JOIN cut_calls t ON t.conversation_id = f.conversation_id
    JOIN cut_prompts q ON q.conversation_id = t.conversation_id AND q.prompt_id = t.prompt_id
    WHERE {previous_attempt}
    GROUP BY f.conversation_id
),
counted AS (
    SELECT f.*, coalesce(a.n, 0) AS previous_attempts
    FROM firsts f
    LEFT JOIN attempts a ON a.conversation_id = f.conversation_id
)
SELECT""" + _UNRECOVERED_ROW_COLUMNS.replace("f.", "c.") + """, c.previous_attempts,
    (SELECT count(*) FROM counts) AS total
FROM counted c
ORDER BY c.n_unrecovered DESC, c.previous_attempts DESC, c.conversation_last_ts DESC, c.conversation_id
LIMIT ?
"""
_SEL_JOIN_ERRORS = "JOIN sel ON sel.conversation_id = e.conversation_id AND sel.prompt_id = e.prompt_id"


# The condition for the rows f of FIRST_UNRECOVERED_ALL_SQL.
_PREVIOUS_ATTEMPT_OF_ROW = _PREVIOUS_ATTEMPT_CONDITION.format(
    conversation_id="f.conversation_id", tool_name="f.tool_name", fingerprint="f.args_fingerprint",
    error_message="f.error_message", prompt_first_ts="f.prompt_first_ts", prompt_first_seq="f.prompt_first_seq",
    step="f.step", ts="f.ts", seq="f.seq",
)


@dataclass(frozen=True)
class ClassBreakdown:
    """Error counts by class for one tool or one agent."""

    key: str
    errors: int
    recovered: int
    open: int
    aborted: int
    gave_up: int
    resolved_later_errors: int
    prompts: int

    @property
    def recovery_rate(self) -> float | None:
        """recovered / errors (the third dashboard metric for this group)."""
        return self.recovered / self.errors if self.errors else None

    @property
    def conversation_recovery_rate(self) -> float | None:
        """(recovered + resolved later) / errors."""
        return (self.recovered + self.resolved_later_errors) / self.errors if self.errors else None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON, with the spec's names (``error_classes`` per class)."""
        return {
            "key": self.key,
            "prompts": self.prompts,
            "errors": self.errors,
            "recovered_errors": self.recovered,
            "recovery_rate": self.recovery_rate,
            "resolved_later_errors": self.resolved_later_errors,
            "conversation_recovery_rate": self.conversation_recovery_rate,
            "error_classes": {"recovered": self.recovered, "open": self.open, "aborted": self.aborted,
                              "gave_up": self.gave_up},
        }


@dataclass(frozen=True)
class Attempt:
    """One earlier tool call at the same tool and fingerprint."""

    prompt_id: str
    step: int
    tool_call_id: str
    tool_name: str
    ts: dt.datetime
    outcome: str
    is_error: bool
    attempts: int
    latency_ms: float | None
    error_type: str | None
    error_message: str | None
    is_replay: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class ErrorAt:
    """Where an unrecovered error happened, what class it has and what it said."""

    conversation_id: str
    prompt_id: str
    step: int
    tool_call_id: str
    tool_name: str
    error_class: str
    error_type: str | None
    error_message: str | None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON/CSV (``class`` is the error class)."""
        return class_dict(self)


@dataclass(frozen=True)
class UnrecoveredError(ErrorAt):
    """The first unrecovered error of a conversation and what led up to it."""

    args_fingerprint: str | None
    ts: dt.datetime
    agent: str
    exit_reason: str | None
    outcome: str
    attempts: int
    latency_ms: float | None
    input_shape: dict[str, str] | None = None
    seq: int | None = None
    previous_attempts: list[Attempt] = field(default_factory=list)
    resolved_later: bool = False
    resolved_in_prompt: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (``class`` is the error class; ``seq`` is internal)."""
        return class_dict(self, drop=("seq",))


@dataclass(frozen=True)
class UnrecoveredRow(ErrorAt):
    """One conversation in ``loopscope unrecovered``."""

    exit_reason: str | None
    agent: str
    error_ts: dt.datetime
    n_unrecovered: int
    resolved_later: bool
    resolved_in_prompt: str | None
    prompts: int
    first_ts: dt.datetime
    last_ts: dt.datetime
    previous_attempts: int


UNRECOVERED_COLUMNS = (
    "conversation_id", "prompt_id", "step", "tool_call_id", "tool_name", "class", "error_type",
    "error_message", "exit_reason", "agent", "error_ts", "n_unrecovered", "resolved_later", "resolved_in_prompt",
    "prompts", "first_ts",
    "last_ts", "previous_attempts",
)


def class_breakdown(con: duckdb.DuckDBPyConnection, selection: Selection, by: str = "tool") -> list[ClassBreakdown]:
    """Error counts per class, grouped by ``"tool"`` or ``"agent"``.

    Args:
        con: an open store.
        selection: which prompts count.
        by: ``"tool"`` (the erroring tool) or ``"agent"`` (the prompt's agent).

    Raises:
        ValueError: ``by`` is not one of the two groupings.
    """
    if by not in _BREAKDOWN_GROUPS:
        raise ValueError(f"by must be one of {sorted(_BREAKDOWN_GROUPS)}, not {by!r}")
    where, params = selection.where("p")
    rel = relations(con)
    join = "" if by == "tool" and where == "TRUE" else _BREAKDOWN_JOIN.format(prompts=rel.prompts)
    sql = ERROR_CLASS_BREAKDOWN_SQL.format(group=_BREAKDOWN_GROUPS[by], where=where, errors=rel.errors, sel_join=join)
    return [ClassBreakdown(**r) for r in _rows(con.execute(sql, params))]


def previous_attempts(con: duckdb.DuckDBPyConnection, error: dict[str, Any]) -> list[Attempt]:
    """Earlier calls at the same tool and fingerprint as ``error`` (an ``errors_v`` row)."""
    params = {
        "conversation_id": error["conversation_id"],
        "tool_name": error["tool_name"],
        "fingerprint": error["args_fingerprint"],
        "error_message": error["error_message"],
        "prompt_first_ts": error["prompt_first_ts"],
        "prompt_first_seq": error["prompt_first_seq"],
        "step": error["step"],
        "ts": error["ts"],
        "seq": error["seq"],
    }
    one = conversation_relations(con)
    sql = PREVIOUS_ATTEMPTS_SQL.format(tool_calls=one.tool_calls, prompts=one.prompts)
    return [Attempt(**r) for r in _rows(con.execute(sql, params))]


def first_unrecovered(con: duckdb.DuckDBPyConnection, conversation_id: str) -> UnrecoveredError | None:
    """The first unrecovered error of a conversation, or None if every error was recovered.

    The whole store counts (no selection): this is a fact about the conversation.
    """
    sql = FIRST_UNRECOVERED_SQL.format(errors=conversation_relations(con).errors)
    rows = _rows(con.execute(sql, {"conversation_id": conversation_id}))
    if not rows:
        return None
    return unrecovered_error(rows[0], previous_attempts(con, rows[0]))


def unrecovered_error(e: dict[str, Any], attempts: list[Attempt]) -> UnrecoveredError:
    """An ``UnrecoveredError`` from its ``errors_v`` row and its previous attempts."""
    return UnrecoveredError(
        conversation_id=e["conversation_id"],
        prompt_id=e["prompt_id"],
        step=e["step"],
        tool_call_id=e["tool_call_id"],
        tool_name=e["tool_name"],
        error_class=e["error_class"],
        error_type=e["error_type"],
        error_message=e["error_message"],
        args_fingerprint=e["args_fingerprint"],
        ts=e["ts"],
        agent=e["agent"],
        exit_reason=e["exit_reason"],
        outcome=e["outcome"],
        attempts=e["attempts"],
        latency_ms=e["latency_ms"],
        input_shape=json_object(e["input_shape"]),
        seq=e["seq"],
        previous_attempts=attempts,
        resolved_later=bool(e["resolved_later"]),
        resolved_in_prompt=e["resolved_in_prompt"],
    )


def first_unrecovered_each(
    con: duckdb.DuckDBPyConnection, rel: ConversationRelations
) -> dict[str, UnrecoveredError]:
    """``first_unrecovered`` of several conversations at once, from their relations
    (``store.relations.conversation_set_relations``): two queries, whatever their number.

    The conversations without an unrecovered error are not in the result.
    """
    firsts = FIRST_UNRECOVERED_EACH_SQL.format(errors=rel.errors)
    rows = _rows(con.execute(firsts))
    if not rows:
        return {}
    attempts: dict[str, list[Attempt]] = {}
    sql = PREVIOUS_ATTEMPTS_EACH_SQL.format(firsts=firsts, tool_calls=rel.tool_calls, prompts=rel.prompts,
                                            previous_attempt=_PREVIOUS_ATTEMPT_OF_ROW)
    for r in _rows(con.execute(sql)):
        attempts.setdefault(r.pop("error_conversation_id"), []).append(Attempt(**r))
    return {e["conversation_id"]: unrecovered_error(e, attempts.get(e["conversation_id"], [])) for e in rows}


def first_unrecovered_all(
    con: duckdb.DuckDBPyConnection,
    selection: Selection,
    *,
    tools: tuple[str, ...] = (),
    classes: tuple[str, ...] = (),
    limit: int | None = None,
    never_resolved: bool = False,
) -> list[UnrecoveredRow]:
    """The first unrecovered error of every conversation, newest conversation first.

    Args:
        con: an open store.
        selection: which prompts count (errors elsewhere are ignored).
        tools: keep only conversations whose first unrecovered error is in one of these tools.
        classes: keep only those whose first unrecovered error has one of these classes.
        limit: at most this many rows.
        never_resolved: leave out the errors a later prompt resolved (``resolved_later``):
            each row is then the conversation's first error never resolved.

    Raises:
        LoopscopeError: a class is not an unrecovered class, or ``limit`` is negative.
    """
    return list(iter_first_unrecovered_all(
        con, selection, tools=tools, classes=classes, limit=limit, never_resolved=never_resolved
    ))


def iter_first_unrecovered_all(
    con: duckdb.DuckDBPyConnection,
    selection: Selection,
    *,
    tools: tuple[str, ...] = (),
    classes: tuple[str, ...] = (),
    limit: int | None = None,
    never_resolved: bool = False,
    batch: int = 2048,
) -> Iterator[UnrecoveredRow]:
    """``first_unrecovered_all``'s rows as they come from the cursor, ``batch`` at a time.

    For ``--format json``/``csv`` of every conversation: the output is written
    while the rows are read, so memory does not grow with the list. The
    arguments are checked before the first row (same errors as
    ``first_unrecovered_all``); read the iterator while the store is open.
    """
    check_list_arguments(classes, limit)
    params = _firsts_params(selection, tools, classes, never_resolved) + [limit]
    cur = con.execute(_firsts_sql(con, FIRST_UNRECOVERED_ALL_SQL, selection), params)
    names = [d[0] for d in cur.description or []]
    return _batches(cur, names, batch)


def count_first_unrecovered(
    con: duckdb.DuckDBPyConnection,
    selection: Selection,
    *,
    tools: tuple[str, ...] = (),
    classes: tuple[str, ...] = (),
    never_resolved: bool = False,
) -> int:
    """How many conversations ``first_unrecovered_all`` lists with no limit (one count, in the query)."""
    check_list_arguments(classes, None)
    params = _firsts_params(selection, tools, classes, never_resolved)
    return int(con.execute(_firsts_sql(con, COUNT_FIRST_UNRECOVERED_SQL, selection), params).fetchone()[0])


def _batches(cur: duckdb.DuckDBPyConnection, names: list[str], batch: int) -> Iterator[UnrecoveredRow]:
    while rows := cur.fetchmany(batch):
        for row in rows:
            yield UnrecoveredRow(**dict(zip(names, row)))


def check_list_arguments(classes: tuple[str, ...], limit: int | None) -> None:
    """Refuse an unknown ``--class`` or a negative ``--limit`` (the CLI calls it before opening the store)."""
    bad = [c for c in classes if c not in UNRECOVERED_CLASSES]
    if bad:
        raise LoopscopeError(
            f"--class {bad[0]!r} is not an unrecovered error class",
            hint="use one of: " + ", ".join(UNRECOVERED_CLASSES),
        )
    if limit is not None and limit < 0:
        raise LoopscopeError(f"--limit {limit} is negative", hint="use --limit 20, or leave it out for every row")


def triage_first(con: duckdb.DuckDBPyConnection, selection: Selection, *, limit: int) -> tuple[int, list[UnrecoveredRow]]:
    """How many conversations have an unrecovered error, and the first ``limit`` to triage.

    Order: most unrecovered errors, then most previous attempts at the failing
    call, then newest conversation (last record), then id; ordered and cut in
    the query, so only ``limit`` rows reach Python.
    """
    where, params = selection.where("p")
    rel = relations(con)
    sql = TRIAGE_FIRST_SQL.format(prompts=rel.prompts, errors=rel.errors, where=where,
                                  sel_join="" if where == "TRUE" else _SEL_JOIN_ERRORS,
                                  previous_attempt=_PREVIOUS_ATTEMPT_OF_ROW)
    rows = _rows(con.execute(sql, [*params, limit, limit]))
    total = int(rows[0].pop("total")) if rows else 0
    for r in rows[1:]:
        r.pop("total")
    return total, [UnrecoveredRow(**r) for r in rows]


def _firsts_params(
    selection: Selection, tools: tuple[str, ...], classes: tuple[str, ...], never_resolved: bool
) -> list[object]:
    _, params = selection.where("p")
    tool_list, class_list = list(tools), list(classes)
    return [*params, never_resolved, tool_list, tool_list, class_list, class_list]


def _firsts_sql(con: duckdb.DuckDBPyConnection, template: str, selection: Selection) -> str:
    where, _ = selection.where("p")
    rel = relations(con)
    return template.format(prompts=rel.prompts, errors=rel.errors, where=where, previous_attempt=_PREVIOUS_ATTEMPT_OF_ROW)
