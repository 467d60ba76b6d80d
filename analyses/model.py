"""The normative derived views: replays, id collisions, prompts and error classes.

These views implement the definitions of docs/records.md (record format v1,
"The four dashboard metrics" and "Incident analysis") once, so every analysis
(metrics, triage, lint, audit, sampling) reads the same facts:

- ``tool_calls_v``: every ``tool_call`` row plus
  ``is_replay``: it has ``replayed: true``, or the same call (same
  ``tool_call_id``, ``tool_name`` and ``args_fingerprint``, two nulls equal)
  already appeared in an earlier ``tool_call`` row of the same conversation
  (ordered by ``ts``, then ``seq``);
  ``is_id_collision``: its ``tool_call_id`` was used earlier in the
  conversation by a *different* call (another tool or fingerprint), so it is a
  new call, not a replay (reported as a ``reused_tool_call_id`` protocol
  violation by ``id_collisions_v``);
  ``is_scratchpad``: its tool is one of the store's scratchpad tools
  (``scratchpad_tools``, ``think`` by default), which never recover an error.
- ``prompts_v``: one row per (conversation_id, prompt_id) seen in any record:
  first/last ``ts``, agent, tags, the number of ``tool_call`` rows, and its
  ``loop_exit`` (the last one by ts, seq, if several were logged) or none
  (``is_open``). ``normal_exit`` is ``end_turn`` / ``stop_sequence``.
  Prompt order, in a conversation, is (``first_ts``, ``first_seq``): the
  time and input position of the prompt's first record.
  ``max_ok_step`` is the last step with a successful call of a tool that is
  not a scratchpad tool.
- ``errors_v``: every error (``is_error`` and not a replay) with its class:
  ``recovered`` (a later step in the prompt has a ``tool_call`` with
  ``is_error: false`` of a non-scratchpad tool and the exit is normal), else
  ``open`` (no exit), ``aborted`` (abnormal exit) or ``gave_up`` (normal exit,
  no later success); and ``resolved_later``: an unrecovered error after which
  a later prompt of the conversation (by prompt order: first ``ts``, then first
  ``seq``) has a successful, non-replay call of the same tool
  (``resolved_in_prompt`` names the first such prompt).
- ``id_collisions_v``: one row per id collision, naming both calls;
  ``protocol_violations_v``: the readers' stored violations plus one
  ``reused_tool_call_id`` per collision.

Record-level facts (replay, class, resolved later) are computed over
everything in the store; a ``Selection`` then picks which prompts an analysis
counts.
"""

from __future__ import annotations

import duckdb

NORMAL_EXIT_REASONS = ("end_turn", "stop_sequence")
ERROR_CLASSES = ("recovered", "open", "aborted", "gave_up")

DEFAULT_SCRATCHPAD_TOOLS = ("think",)
"""Tools that do nothing in the world; a success of theirs never recovers an error (spec, metric 3)."""

# The store's scratchpad tools: one row per tool name (``load --scratchpad-tool``).
SCRATCHPAD_TABLE_SQL = "CREATE TABLE IF NOT EXISTS scratchpad_tools (tool_name VARCHAR PRIMARY KEY)"
SCRATCHPAD_DEFAULTS_SQL = "INSERT INTO scratchpad_tools SELECT unnest($1::VARCHAR[])"
SCRATCHPAD_TOOLS_SQL = "SELECT tool_name FROM scratchpad_tools ORDER BY tool_name"
CLEAR_SCRATCHPAD_TOOLS_SQL = "DELETE FROM scratchpad_tools"

# Same call: same conversation, tool_call_id, tool_name and fingerprint
# (PARTITION BY puts nulls together: two null fingerprints are the same).
# Only a tool_call_id used more than once in its conversation can be a repeat
# or an id collision, so only those records (about 1% of them) are numbered by
# the windows; every other record is a replay exactly when it is flagged
# ``replayed``. Same rows as numbering every record, without sorting them all.
# The ids are told apart by a hash of (conversation, id): a collision only
# sends a few more records through the windows, which number them exactly.
# {tool_calls}: the table, or a subquery of it (one conversation's records: triage).
TOOL_CALLS_QUERY = """
WITH repeated AS NOT MATERIALIZED (
    SELECT hash(conversation_id, tool_call_id) AS h FROM {tool_calls} GROUP BY h HAVING count(*) > 1
)
SELECT
    t.*,
    t.replayed AS is_replay,
    false AS is_id_collision,
    t.tool_name IN (SELECT tool_name FROM scratchpad_tools) AS is_scratchpad
FROM {tool_calls} t
ANTI JOIN repeated r ON r.h = hash(t.conversation_id, t.tool_call_id)
UNION ALL
SELECT
    t.*,
    (t.replayed OR row_number() OVER same_call > 1) AS is_replay,
    (NOT t.replayed AND row_number() OVER same_call = 1 AND row_number() OVER same_id > 1) AS is_id_collision,
    t.tool_name IN (SELECT tool_name FROM scratchpad_tools) AS is_scratchpad
FROM {tool_calls} t
SEMI JOIN repeated r ON r.h = hash(t.conversation_id, t.tool_call_id)
WINDOW
    same_call AS (PARTITION BY t.conversation_id, t.tool_call_id, t.tool_name, t.args_fingerprint ORDER BY t.ts, t.seq),
    same_id AS (PARTITION BY t.conversation_id, t.tool_call_id ORDER BY t.ts, t.seq)
"""
TOOL_CALLS_VIEW_SQL = "CREATE OR REPLACE VIEW tool_calls_v AS" + TOOL_CALLS_QUERY.format(tool_calls="tool_calls")

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
        arg_min(seq, (ts, seq)) AS first_seq,  -- the position of its first record
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
        max(step) FILTER (WHERE NOT is_error AND tool_name NOT IN (SELECT tool_name FROM scratchpad_tools))
            AS max_ok_step
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

ERROR_CLASS_SQL = """CASE
            WHEN p.normal_exit AND p.max_ok_step > t.step THEN 'recovered'
            WHEN p.is_open THEN 'open'
            WHEN NOT p.normal_exit THEN 'aborted'
            ELSE 'gave_up'
        END"""
"""An error's class (the spec's ``error_class``), over its call ``t`` and its prompt ``p`` (a
``prompts_v`` row): written once, read by ``errors_v`` on both engines (store/clickhouse.py)."""

# resolved_in_prompt: per unrecovered (conversation, tool, prompt), the first
# later prompt with a successful, non-replay call of that tool; computed once
# per such key by a grouped join (not a lateral lookup per error row).
# {prompts}: prompts_v, or prompt_facts when it matches the records (it holds
# the columns used here, max_ok_step included; store.relations picks);
# {tool_calls_v}: the view, or TOOL_CALLS_QUERY over one conversation's records.
ERRORS_CLASSED_CTE = """classed AS (
    SELECT
        t.*,
        """ + ERROR_CLASS_SQL + """ AS error_class,
        p.first_ts AS prompt_first_ts,
        p.first_seq AS prompt_first_seq,
        p.exit_reason
    FROM {tool_calls_v} t
    JOIN {prompts} p USING (conversation_id, prompt_id)
    WHERE t.is_error AND NOT t.is_replay
)"""
"""The CTE ``classed`` (every error call, not a replay, with its class and its prompt's order and
exit) over the slots {tool_calls_v} and {prompts}: the start of ``errors_v`` on both engines
(ERRORS_QUERY here, store/clickhouse.py's portable view)."""
ERRORS_QUERY = """
WITH """ + ERRORS_CLASSED_CTE + """,
unrecovered AS (
    SELECT DISTINCT conversation_id, tool_name, prompt_first_ts, prompt_first_seq
    FROM classed WHERE error_class <> 'recovered'
),
ok AS (
    SELECT DISTINCT o.conversation_id, o.tool_name, q.prompt_id, q.first_ts, q.first_seq
    FROM {tool_calls_v} o
    JOIN {prompts} q USING (conversation_id, prompt_id)
    WHERE NOT o.is_error AND NOT o.is_replay
      AND (o.conversation_id, o.tool_name) IN (SELECT conversation_id, tool_name FROM unrecovered)
),
resolved AS (
    SELECT u.conversation_id, u.tool_name, u.prompt_first_ts, u.prompt_first_seq,
           arg_min(ok.prompt_id, (ok.first_ts, ok.first_seq)) AS resolved_in_prompt
    FROM unrecovered u
    JOIN ok ON ok.conversation_id = u.conversation_id AND ok.tool_name = u.tool_name
           AND (ok.first_ts, ok.first_seq) > (u.prompt_first_ts, u.prompt_first_seq)
    GROUP BY u.conversation_id, u.tool_name, u.prompt_first_ts, u.prompt_first_seq
)
SELECT
    c.*,
    (c.error_class <> 'recovered' AND r.resolved_in_prompt IS NOT NULL) AS resolved_later,
    CASE WHEN c.error_class <> 'recovered' THEN r.resolved_in_prompt END AS resolved_in_prompt
FROM classed c
LEFT JOIN resolved r
    ON r.conversation_id = c.conversation_id AND r.tool_name = c.tool_name
   AND r.prompt_first_ts = c.prompt_first_ts AND r.prompt_first_seq = c.prompt_first_seq
"""
ERRORS_VIEW_SQL = "CREATE OR REPLACE VIEW errors_v AS" + ERRORS_QUERY.format(
    prompts="prompts_v", tool_calls_v="tool_calls_v"
)


# One row per id collision: the later call and the earlier call that first
# used its tool_call_id in the conversation (first_*). Only ids used twice or
# more in their conversation can collide (found by hash, as in tool_calls_v:
# a hash collision only numbers a few more records), so only those records are
# numbered, and the first use is read from the same window.
ID_COLLISIONS_VIEW_SQL = """
CREATE OR REPLACE VIEW id_collisions_v AS
WITH repeated AS NOT MATERIALIZED (
    SELECT hash(conversation_id, tool_call_id) AS h FROM tool_calls GROUP BY h HAVING count(*) > 1
),
numbered AS (
    SELECT
        t.conversation_id, t.prompt_id, t.tool_call_id, t.seq, t.source_id, t.line_no, t.tool_name,
        t.args_fingerprint, t.replayed,
        row_number() OVER same_call AS call_run,
        row_number() OVER same_id AS id_run,
        first_value(t.prompt_id) OVER same_id AS first_prompt_id,
        first_value(t.tool_name) OVER same_id AS first_tool_name,
        first_value(t.args_fingerprint) OVER same_id AS first_args_fingerprint,
        first_value(t.source_id) OVER same_id AS first_source_id,
        first_value(t.line_no) OVER same_id AS first_line_no
    FROM tool_calls t
    SEMI JOIN repeated r ON r.h = hash(t.conversation_id, t.tool_call_id)
    WINDOW
        same_call AS (PARTITION BY t.conversation_id, t.tool_call_id, t.tool_name, t.args_fingerprint ORDER BY t.ts, t.seq),
        same_id AS (PARTITION BY t.conversation_id, t.tool_call_id ORDER BY t.ts, t.seq)
)
SELECT
    conversation_id, prompt_id, tool_call_id, seq, source_id, line_no, tool_name, args_fingerprint,
    first_prompt_id, first_tool_name, first_args_fingerprint, first_source_id, first_line_no
FROM numbered
WHERE NOT replayed AND call_run = 1 AND id_run > 1
"""

# Every protocol violation: those the readers stored, and one
# ``reused_tool_call_id`` per id collision a reader did not report itself,
# whatever the input format.
PROTOCOL_VIOLATIONS_VIEW_SQL = """
CREATE OR REPLACE VIEW protocol_violations_v AS
SELECT source_id, conversation_id, prompt_id, tool_call_id, kind, detail FROM protocol_violations
UNION ALL
SELECT
    source_id,
    conversation_id,
    prompt_id,
    tool_call_id,
    'reused_tool_call_id' AS kind,
    'tool call id ' || tool_call_id || ' of ' || tool_name || ' (prompt ' || prompt_id || ') was first used by '
        || first_tool_name || CASE WHEN first_tool_name = tool_name THEN ' with other arguments' ELSE '' END
        || ' (prompt ' || first_prompt_id || '): a new call, counted as one, not as a replay' AS detail
FROM id_collisions_v c
WHERE NOT EXISTS (  -- a reader that reported it already (with its lines) is not repeated
    SELECT 1 FROM protocol_violations v
    WHERE v.kind = 'reused_tool_call_id' AND v.conversation_id = c.conversation_id AND v.tool_call_id = c.tool_call_id
)
"""

MODEL_VIEWS = (
    TOOL_CALLS_VIEW_SQL, PROMPTS_VIEW_SQL, ERRORS_VIEW_SQL, ID_COLLISIONS_VIEW_SQL, PROTOCOL_VIOLATIONS_VIEW_SQL,
)


def create_model(con: duckdb.DuckDBPyConnection) -> None:
    """Create (or replace) the scratchpad table and the normative views; the table keeps its rows."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'scratchpad_tools' AND NOT temporary"
    ).fetchone()
    con.execute(SCRATCHPAD_TABLE_SQL)
    if not (exists and exists[0]):
        con.execute(SCRATCHPAD_DEFAULTS_SQL, [list(DEFAULT_SCRATCHPAD_TOOLS)])
    for view in MODEL_VIEWS:
        con.execute(view)


def scratchpad_tools(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The store's scratchpad tools, sorted."""
    return [row[0] for row in con.execute(SCRATCHPAD_TOOLS_SQL).fetchall()]
