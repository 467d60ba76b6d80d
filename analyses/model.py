"""The normative derived views: replays, prompts and error classes.

These views implement the definitions of docs/records.md (record format v1,
"The four dashboard metrics" and "Incident analysis") once, so every analysis
(metrics, triage, lint, audit, sampling) reads the same facts:

- ``tool_calls_v``: every ``tool_call`` row plus ``is_replay``: its
  ``tool_call_id`` already appeared in an earlier ``tool_call`` row of the same
  conversation (ordered by ``ts``, then ``seq``), or it has ``replayed: true``.
- ``prompts_v``: one row per (conversation_id, prompt_id) seen in any record:
  first/last ``ts``, agent, tags, the number of ``tool_call`` rows, and its
  ``loop_exit`` (the last one by ts, seq, if several were logged) or none
  (``is_open``). ``normal_exit`` is ``end_turn`` / ``stop_sequence``.
- ``errors_v``: every error (``is_error`` and not a replay) with its class:
  ``recovered`` (a later step in the prompt has a ``tool_call`` with
  ``is_error: false`` and the exit is normal), else ``open`` (no exit),
  ``aborted`` (abnormal exit) or ``gave_up`` (normal exit, no later success).

Record-level facts (replay, class) are computed over everything in the store;
a ``Selection`` then picks which prompts an analysis counts.
"""

from __future__ import annotations

import duckdb

from loopscope.analyses.store.migrations import migration

NORMAL_EXIT_REASONS = ("end_turn", "stop_sequence")
ERROR_CLASSES = ("recovered", "open", "aborted", "gave_up")

TOOL_CALLS_VIEW_SQL = """
CREATE OR REPLACE VIEW tool_calls_v AS
SELECT
    t.*,
    (t.replayed OR row_number() OVER (
        PARTITION BY t.conversation_id, t.tool_call_id ORDER BY t.ts, t.seq
    ) > 1) AS is_replay
FROM tool_calls t
"""

PROMPTS_VIEW_SQL = """
CREATE OR REPLACE VIEW prompts_v AS
WITH seen AS (
    SELECT conversation_id, prompt_id, ts, seq, agent, tags FROM tool_calls
    UNION ALL
    SELECT conversation_id, prompt_id, ts, seq, agent, tags FROM loop_exits
),
keys AS (
    SELECT
        conversation_id,
        prompt_id,
        min(ts) AS first_ts,
        max(ts) AS last_ts,
        min(seq) AS first_seq,
        arg_min(agent, (ts, seq)) AS first_agent,
        arg_min(tags, (ts, seq)) AS first_tags
    FROM seen
    GROUP BY conversation_id, prompt_id
),
calls AS (
    SELECT
        conversation_id,
        prompt_id,
        count(*) AS n_tool_calls,
        count(*) FILTER (WHERE is_error) AS n_error_results,
        max(step) FILTER (WHERE NOT is_error) AS max_ok_step
    FROM tool_calls
    GROUP BY conversation_id, prompt_id
),
exits AS (
    SELECT * EXCLUDE (rn) FROM (
        SELECT
            e.*,
            row_number() OVER (
                PARTITION BY conversation_id, prompt_id ORDER BY ts DESC, seq DESC
            ) AS rn
        FROM loop_exits e
    ) WHERE rn = 1
)
SELECT
    k.conversation_id,
    k.prompt_id,
    k.first_ts,
    k.last_ts,
    k.first_seq,
    coalesce(x.agent, k.first_agent) AS agent,
    coalesce(x.tags, k.first_tags) AS tags,
    coalesce(c.n_tool_calls, 0) AS n_tool_calls,
    coalesce(c.n_error_results, 0) AS n_error_results,
    c.max_ok_step,
    x.conversation_id IS NULL AS is_open,
    x.exit_reason,
    coalesce(x.exit_reason IN ('end_turn', 'stop_sequence'), false) AS normal_exit,
    x.max_tool_calls,
    x.steps,
    x.input_tokens,
    x.output_tokens,
    x.duration_ms,
    x.error_type AS exit_error_type,
    x.error_message AS exit_error_message,
    x.ts AS exit_ts
FROM keys k
LEFT JOIN calls c USING (conversation_id, prompt_id)
LEFT JOIN exits x USING (conversation_id, prompt_id)
"""

ERRORS_VIEW_SQL = """
CREATE OR REPLACE VIEW errors_v AS
SELECT
    t.*,
    CASE
        WHEN p.normal_exit AND p.max_ok_step > t.step THEN 'recovered'
        WHEN p.is_open THEN 'open'
        WHEN NOT p.normal_exit THEN 'aborted'
        ELSE 'gave_up'
    END AS error_class,
    p.first_ts AS prompt_first_ts,
    p.first_seq AS prompt_first_seq,
    p.exit_reason
FROM tool_calls_v t
JOIN prompts_v p USING (conversation_id, prompt_id)
WHERE t.is_error AND NOT t.is_replay
"""


@migration
def m002_model_views(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(TOOL_CALLS_VIEW_SQL)
    con.execute(PROMPTS_VIEW_SQL)
    con.execute(ERRORS_VIEW_SQL)
