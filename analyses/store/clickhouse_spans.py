"""Tool calls and loop exits from the spans the Collector's ``clickhouse`` exporter writes (``otel_traces``).

The OTLP file reader (``ingest/otlp/genai.py``) turns a trace's span tree into
records in Python. Here the same decisions are ClickHouse SQL, as views over
``otel_traces`` (a span's prompt depends on spans that may arrive in later
inserts, so it cannot be parsed once on insert like a log record). Their rows
are kept in ``otel_span_tool_calls`` / ``otel_span_loop_exits`` and made again,
whole, when loopscope connects and ``otel_traces`` changed (``refresh_spans``):
the analyses read the record tables many times per command, and the views
inlined that often made each query's plan huge (13 s per ``errors_v`` query on
8 spans in chDB). Spans are recognised with the same alias map (``ingest/otlp/aliases.py``):
tool spans by ``gen_ai.operation.name = execute_tool``, OpenInference ``TOOL``,
OpenLLMetry ``tool``, the Vercel AI SDK's ``ai.toolCall`` (or the ``execute_tool ...`` /
``....tool`` span names, or the execute-tool attributes with no operation name), agent and
model spans likewise. The exporter writes every attribute as a
string, ``Timestamp`` as the span's start, ``Duration`` in nanoseconds, and the
status as ``STATUS_CODE_ERROR`` (older exporters: ``Error``): both are read.

What is reproduced, per trace (the work is partitioned by ``TraceId``):

- **prompt**: the outermost agent span above a tool span, found by walking up
  the parent ids at most ``MAX_DEPTH`` levels (``arrayFold`` over the trace's
  spans, no joins); a broken chain makes the missing parent the (open) prompt;
  a chain that ends at a root that is no agent span makes that root the prompt;
  no parent at all: one open prompt per trace (``otlp-trace:<trace id>``).
  Agent spans with no tool call under them, outside every other prompt, are
  prompts of 0 calls.
- **step**: ``loopscope.tool.step`` when every tool span of the prompt has it;
  else the number of the prompt's model spans that started at or before the
  tool span, minus one; else (no model spans) tool spans that overlap in time,
  or share a parent that is not an agent span, form one step, in start order.
- **conversation**: the alias keys on the prompt's tool spans, then its agent
  spans, then any span of the trace, else ``otlp-trace:<trace id>``.
- **tool call id**: ``gen_ai.tool.call.id`` / ``tool.id`` / ``tool_call.id`` / ``ai.toolCall.id``
  (placeholders such as ADK's ``<not specified>`` are none), else the span id.
- **errors**: status error, ``error.type`` or an ``exception`` event (a tool span's
  ``gen_ai.tool.status`` error and Logfire warn level too); the message
  is the tool's result (``gen_ai.tool.call.result`` / ``output.value``), else the
  exception's message, else the status message.
- **exit**: ``loopscope.agent.exit_reason``; an agent span in error -> ``error``;
  the finish reason of the agent spans, then of the last model span, normalised
  as the file reader does; else ``end_turn``.

Simplifications, where SQL does not follow the Python (docs/clickhouse.md lists them):

1. A tool span without its own call id gets its span id; the file reader first
   looks for the call in the model's messages (``tool_call_id_from_messages``).
   Counts do not change; the ids shown do, and two spans of one call would not
   be recognised as a replay by id.
2. ``args_fingerprint`` is the SHA-256 of the argument text as the span holds it
   (``gen_ai.tool.call.arguments``, ``input.value`` when JSON,
   ``traceloop.entity.input``), not of its canonical JSON; ``input_shape`` is
   read only from ``loopscope.tool.input_shape``. Two calls with the same
   arguments written in another key order are not the same call here.
3. Error text is cleaned in Python, as the file reader cleans it: the views cut it
   to ``clean_error_text``'s pre-cut (4x the cap) and, after the spans' rows are
   kept, each distinct text is redacted and capped by ``clean_error_text``
   itself (the redaction's patterns need look-arounds, which ClickHouse's RE2
   lacks); only the texts that change are written back. Not a simplification
   any more: the same text as the file reader.
4. Tags (``loopscope.tag.*``) are read from the prompt's root span only.
5. Parent chains longer than ``MAX_DEPTH`` are cut there (the span reached is
   taken as the root); a cycle of parent ids stops at the span itself.
6. Ties in start time are broken by span id (the file reader uses the line).
7. In the step grouping without model spans, a tool span joins the step of the
   previous one when they share a parent; the file reader compares with the
   step's first span's parent.
8. A trace that loopscope's own collector also reported as log records in
   ``otel_logs`` is read from the log records only (the same calls, not twice).
"""

from __future__ import annotations

from typing import Any

from loopscope.analyses.ingest.otlp.aliases import (
    AGENT_NAME_KEYS,
    AGENT_OPERATIONS,
    AI_SDK_AGENT_OPERATIONS,
    AI_SDK_LLM_OPERATIONS,
    AI_SDK_TOOL_OPERATION,
    ARGUMENT_KEYS,
    CONVERSATION_KEYS,
    FINISH_REASON_KEYS,
    FINISH_REASONS,
    INPUT_TOKEN_KEYS,
    LLM_OPERATIONS,
    LOGFIRE_WARN,
    MERGED_TOOL_NAMES,
    OUTCOMES,
    OUTPUT_TOKEN_KEYS,
    PLACEHOLDER_IDS,
    RESULT_KEYS,
    TAG_PREFIX,
    TOOL_CALL_ID_KEYS,
    TOOL_NAME_KEYS,
    TOOL_OPERATIONS,
)
from loopscope.collectors.redact import MAX_ERROR_CHARS, clean_error_text

MAX_DEPTH = 32
"""Parent levels walked up from a span (agent frameworks nest a handful)."""
STATUS_ERROR_VALUES = ("STATUS_CODE_ERROR", "Error")

VIEWS = ("otel_span_nodes_v", "otel_span_prompts_v", "tool_calls_from_otel_traces", "loop_exits_from_otel_traces")


def _q(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def _attr(keys: tuple[str, ...], col: str = "a", none: tuple[str, ...] = ()) -> str:
    """The first of ``keys`` that is set (non-empty, and none of the placeholders ``none``), else NULL."""
    def one(k: str) -> str:
        value = f"nullIf({col}[{_q(k)}], '')"
        return f"if({value} IN ({', '.join(_q(v) for v in none)}), NULL, {value})" if none else value
    return "coalesce(" + ", ".join(one(k) for k in keys) + ")"


def _marked(operations: tuple[str, ...], openinference: str, traceloop: tuple[str, ...], a: str) -> str:
    parts = [f"{a}['gen_ai.operation.name'] IN ({', '.join(_q(o) for o in operations)})" if operations else "false",
             f"upper({a}['openinference.span.kind']) = {_q(openinference)}"]
    if traceloop:
        parts.append(f"{a}['traceloop.span.kind'] IN ({', '.join(_q(t) for t in traceloop)})")
    return "(" + " OR ".join(parts) + ")"


def is_tool(a: str = "a", name: str = "SpanName") -> str:
    """A tool span, in any of the conventions (or by its name alone); ``aliases.is_tool_span``."""
    return (f"(({_marked(TOOL_OPERATIONS, 'TOOL', ('tool',), a)} OR {a}['ai.operationId'] = {_q(AI_SDK_TOOL_OPERATION)} "
            f"OR startsWith({name}, 'execute_tool ') "
            f"OR (endsWith({name}, '.tool') AND NOT mapContains({a}, 'openinference.span.kind')) "
            f"OR (NOT mapContains({a}, 'gen_ai.operation.name') AND {a}['gen_ai.tool.name'] != '' "
            f"AND {a}['gen_ai.tool.call.id'] != '')) "
            f"AND {a}['gen_ai.tool.name'] NOT IN ({', '.join(_q(n) for n in MERGED_TOOL_NAMES)}))")


def is_agent(a: str = "a", name: str = "SpanName") -> str:
    """An agent (or agent workflow) span."""
    return (f"({_marked(AGENT_OPERATIONS, 'AGENT', ('agent', 'workflow'), a)} "
            f"OR {a}['ai.operationId'] IN ({', '.join(_q(o) for o in AI_SDK_AGENT_OPERATIONS)}) "
            f"OR startsWith({name}, 'invoke_agent'))")


def is_llm(a: str = "a", name: str = "SpanName") -> str:
    """A model call; ``aliases.is_llm_span``."""
    return (f"({_marked(LLM_OPERATIONS, 'LLM', (), a)} OR {a}['llm.request.type'] IN ('chat', 'completion') "
            f"OR {a}['ai.operationId'] IN ({', '.join(_q(o) for o in AI_SDK_LLM_OPERATIONS)}) "
            f"OR (NOT mapContains({a}, 'gen_ai.operation.name') AND {a}['gen_ai.request.model'] != '' "
            f"AND NOT {is_tool(a, name)} AND NOT {is_agent(a, name)}))")


def is_error(t: str = "", tool: bool = False) -> str:
    """Status error, ``error.type`` or an ``exception`` event (``t``: the table alias with its dot); on a
    tool span (``tool``) also ``gen_ai.tool.status`` = error and a Logfire level of warn or above."""
    tool_only = (f" OR lower({t}a['gen_ai.tool.status']) = 'error' "
                 f"OR toInt64OrZero({t}a['logfire.level_num']) >= {LOGFIRE_WARN}") if tool else ""
    return (f"({t}StatusCode IN ({', '.join(_q(v) for v in STATUS_ERROR_VALUES)}) OR {t}a['error.type'] != '' "
            f"OR has({t}`Events.Name`, 'exception'){tool_only})")


PRE_CUT_CHARS = 4 * MAX_ERROR_CHARS
"""``clean_error_text`` cuts longer text to this before redacting it (then caps it at ``MAX_ERROR_CHARS``)."""


def _pre_cut(expr: str) -> str:
    # the rest of clean_error_text (redaction, the cap) runs in Python: _clean_error_text
    return f"substringUTF8({expr}, 1, {PRE_CUT_CHARS})"


def _exception(key: str, t: str = "") -> str:
    # the first exception event's attribute, NULL when there is none
    return f"nullIf(arrayElement({t}`Events.Attributes`, indexOf({t}`Events.Name`, 'exception'))[{_q(key)}], '')"


def _arguments(a: str = "a") -> str:
    parts = []
    for key in ARGUMENT_KEYS:
        if key == "input.value":  # OpenInference's plain-text input is not the arguments
            parts.append(f"if({a}['input.mime_type'] = 'application/json', nullIf({a}['input.value'], ''), NULL)")
        else:
            parts.append(f"nullIf({a}[{_q(key)}], '')")
    return "coalesce(" + ", ".join(parts) + ")"


def _finish(col: str) -> str:
    """A finish reason attribute in the record format's vocabulary (a JSON list: its last item)."""
    raw = _attr(FINISH_REASON_KEYS, col)
    last = f"if(startsWith({raw}, '['), nullIf(JSONExtractString({raw}, -1), ''), {raw})"
    keys = list(FINISH_REASONS)
    return (f"if({last} IS NULL, NULL, transform(lower(assumeNotNull({last})), {_list(keys)}, "
            f"{_list([FINISH_REASONS[k] for k in keys])}, assumeNotNull({last})))")


def _agent_name() -> str:
    return (f"coalesce({_attr(AGENT_NAME_KEYS)}, if(a['traceloop.span.kind'] = 'agent', nullIf(a['traceloop.entity.name'], ''), NULL), "
            "if(startsWith(SpanName, 'invoke_agent '), nullIf(substring(SpanName, 14), ''), NULL))")


def _tool_name(a: str = "a", name: str = "SpanName") -> str:
    stripped = (f"if(startsWith({name}, 'execute_tool '), substring({name}, 14), "
                f"if(endsWith({name}, '.tool'), substring({name}, 1, length({name}) - 5), {name}))")
    return (f"coalesce({_attr(TOOL_NAME_KEYS, a)}, if({a}['traceloop.span.kind'] = 'tool', nullIf({a}['traceloop.entity.name'], ''), NULL), "
            f"nullIf({stripped}, ''), 'unknown')")


def nodes_sql(exclude_logged: bool) -> str:
    """``otel_span_nodes_v``: the tool, agent and model spans, each with its place in the tree and its prompt."""
    logged = ("AND TraceId NOT IN (SELECT trace_id FROM otel_log_tool_calls WHERE trace_id IS NOT NULL "
              "UNION ALL SELECT trace_id FROM otel_log_loop_exits WHERE trace_id IS NOT NULL)") if exclude_logged else ""
    # walking up: (next parent id, outermost agent span seen, last span found, missing parent id)
    walk = f"""arrayFold((acc, i) -> if(acc.1 = '' OR acc.1 = s.span_id, acc,
                    if(indexOf(t.ids, acc.1) = 0, ('', acc.2, acc.3, acc.1),
                       (t.parents[indexOf(t.ids, acc.1)], if(t.agents[indexOf(t.ids, acc.1)], acc.1, acc.2), acc.1, acc.4))),
                range({MAX_DEPTH}), (s.parent_id, '', '', ''))"""
    conv = _attr(CONVERSATION_KEYS)
    return f"""
CREATE OR REPLACE VIEW otel_span_nodes_v AS
WITH spans AS (
    SELECT
        TraceId AS trace_id, SpanId AS span_id, ParentSpanId AS parent_id, SpanName, SpanAttributes AS a,
        StatusCode, StatusMessage, `Events.Name`, `Events.Attributes`,
        toInt64(toUnixTimestamp64Nano(Timestamp)) AS start_ns,
        toInt64(toUnixTimestamp64Nano(Timestamp)) + toInt64(Duration) AS end_ns,
        {is_tool()} AS is_tool, {is_agent()} AND NOT {is_tool()} AS is_agent, {is_llm()} AND NOT {is_tool()} AS is_llm
    FROM otel_traces
    WHERE TraceId != '' AND SpanId != ''
      -- only traces with an agent loop in them: the rest of the table is other traffic
      AND TraceId IN (SELECT TraceId FROM otel_traces
                      WHERE {is_tool('SpanAttributes')} OR {is_agent('SpanAttributes')})
      {logged}
    LIMIT 1 BY TraceId, SpanId  -- a span delivered twice (an exporter retry) counts once
),
trees AS (
    SELECT trace_id, groupArray(span_id) AS ids, groupArray(parent_id) AS parents, groupArray(is_agent) AS agents,
           argMinIf({conv}, (start_ns, span_id), {conv} IS NOT NULL) AS trace_conversation
    FROM spans GROUP BY trace_id
),
placed AS (
    SELECT s.*, t.trace_conversation AS trace_conversation,
           {walk} AS w, w.2 AS outer_agent, w.3 AS top, w.4 AS missing,
           s.parent_id != '' AND indexOf(t.ids, s.parent_id) > 0 AND t.agents[indexOf(t.ids, s.parent_id)] AS parent_is_agent
    FROM spans s JOIN trees t ON t.trace_id = s.trace_id
    -- a trace's roots too: one may stand in for an agent span (a root that is no agent span)
    WHERE s.is_tool OR s.is_agent OR s.is_llm OR s.parent_id = ''
),
roots AS (
    -- per trace: roots standing in for an agent span (tool spans with no agent above them),
    -- and the outermost agent spans above tool spans
    SELECT trace_id,
           groupUniqArrayIf(top, is_tool AND outer_agent = '' AND missing = '' AND top != '') AS root_spans,
           groupUniqArrayIf(outer_agent, is_tool AND outer_agent != '') AS agent_roots
    FROM placed GROUP BY trace_id
)
SELECT p.* EXCEPT (w),
       -- a span belongs to the outermost prompt root on its chain of parents
       if(has(r.root_spans, p.top), p.top, p.outer_agent) AS owner,
       has(r.agent_roots, p.span_id) OR has(r.root_spans, p.span_id)
           OR (p.is_agent AND p.outer_agent = '' AND NOT has(r.root_spans, p.top)) AS is_root,
       multiIf(p.outer_agent != '', 'agent_span', p.missing != '', 'missing_parent', p.top != '', 'root_span', 'trace') AS how,
       multiIf(p.outer_agent != '', p.outer_agent, p.missing != '', p.missing, p.top != '', p.top,
               concat('otlp-trace:', p.trace_id)) AS tool_prompt
FROM placed p JOIN roots r ON r.trace_id = p.trace_id
"""


def prompts_sql() -> str:
    """``otel_span_prompts_v``: per prompt (trace, key), what its records need from its spans."""
    conv = _attr(CONVERSATION_KEYS)
    agent_name = _agent_name()
    error, tool_error = is_error(), is_error(tool=True)
    exc_type, exc_message = _exception("exception.type"), _exception("exception.message")
    return f"""
CREATE OR REPLACE VIEW otel_span_prompts_v AS
WITH members AS (
    -- one row per (prompt, span), in one pass: a tool span in its prompt; a prompt's root in its
    -- own (rank 0); agent and model spans in the prompt of their owner
    SELECT *, m.1 AS pkey, m.2 AS role, m.3 AS rank
    FROM otel_span_nodes_v
    ARRAY JOIN arrayConcat(
        if(is_tool, [(tool_prompt, 'tool', 2)], []),
        if(is_root, [(span_id, 'agent', 0)], []),
        if(is_agent AND owner != '' AND owner != span_id, [(owner, 'agent', 1)], []),
        if(is_llm AND owner != '', [(owner, 'llm', 3)], [])
    ) AS m
)
SELECT
    trace_id, pkey,
    countIf(rank = 0) > 0 AS has_root,
    anyIf(span_id, rank = 0) AS root_span_id,
    anyIf(end_ns, rank = 0) AS root_end_ns,
    anyIf(end_ns - start_ns, rank = 0) AS root_duration_ns,
    anyIf(a, rank = 0) AS root_a,
    anyIf(how, role = 'tool') AS tool_how,
    any(trace_conversation) AS trace_conversation,
    -- first the tool spans (in start order), then the agent spans (the root first)
    argMinIf({conv}, (if(role = 'tool', 0, 1), rank, start_ns, span_id),
             role IN ('tool', 'agent') AND {conv} IS NOT NULL) AS own_conversation,
    argMinIf(nullIf(a['loopscope.prompt.id'], ''), (if(role = 'agent', 0, 1), rank, start_ns, span_id),
             role IN ('tool', 'agent') AND a['loopscope.prompt.id'] != '') AS own_prompt_id,
    argMinIf({agent_name}, (rank, start_ns, span_id), role = 'agent' AND {agent_name} IS NOT NULL) AS agent_name,
    argMinIf(nullIf(a['loopscope.agent.exit_reason'], ''), (rank, start_ns, span_id),
             role = 'agent' AND a['loopscope.agent.exit_reason'] != '') AS explicit_reason,
    countIf(role = 'agent' AND {error}) > 0 AS agent_failed,
    argMinIf(tuple(if(a['error.type'] != '', nullIf(a['error.type'], '_OTHER'), nullIf({exc_type}, '_OTHER')),
                   coalesce({exc_message}, nullIf(StatusMessage, ''))),
             (rank, start_ns, span_id), role = 'agent' AND {error}) AS failed,
    argMinIf({_finish('a')}, (rank, start_ns, span_id), role = 'agent' AND {_finish('a')} IS NOT NULL) AS agent_finish,
    argMaxIf({_finish('a')}, (end_ns, span_id), role = 'llm') AS last_llm_finish,
    arraySort(groupArrayIf(start_ns, role = 'llm')) AS llm_starts,
    countIf(role = 'llm') AS n_llm,
    sumIf(toInt64OrZero({_attr(INPUT_TOKEN_KEYS)}), role = 'llm') AS llm_input_tokens,
    countIf(role = 'llm' AND toInt64OrNull({_attr(INPUT_TOKEN_KEYS)}) IS NOT NULL) AS n_llm_input_tokens,
    sumIf(toInt64OrZero({_attr(OUTPUT_TOKEN_KEYS)}), role = 'llm') AS llm_output_tokens,
    countIf(role = 'llm' AND toInt64OrNull({_attr(OUTPUT_TOKEN_KEYS)}) IS NOT NULL) AS n_llm_output_tokens,
    countIf(role = 'tool') AS n_tools,
    countIf(role = 'tool' AND {tool_error}) AS n_tool_errors,
    countIf(role = 'tool' AND NOT coalesce(toInt32OrNull(a['loopscope.tool.step']) >= 0, false)) = 0 AS own_steps
FROM members
GROUP BY trace_id, pkey
"""


def _tags() -> str:
    cut = len(TAG_PREFIX) + 1
    tags = f"mapApply((k, v) -> (substring(k, {cut}), v), mapFilter((k, v) -> startsWith(k, {_q(TAG_PREFIX)}), p.root_a))"
    return f"if(empty({tags}), CAST(NULL AS Nullable(String)), toJSONString({tags}))"


def _prompt_columns() -> str:
    return """CAST(coalesce(p.own_conversation, p.trace_conversation, concat('otlp-trace:', p.trace_id)) AS String) AS conversation_id,
    CAST(coalesce(p.own_prompt_id, p.pkey) AS String) AS prompt_id,
    CAST(coalesce(p.agent_name, 'default') AS String) AS agent,
    CAST(p.trace_id AS Nullable(String)) AS trace_id"""


def tool_calls_sql() -> str:
    """``tool_calls_from_otel_traces``: one ``tool_calls`` row per tool span, the store's columns."""
    error = is_error("t.", tool=True)
    outcome = (f"if(t.a['loopscope.tool.outcome'] IN ({', '.join(_q(o) for o in OUTCOMES)}), t.a['loopscope.tool.outcome'], "
               f"if({error}, 'permanent_fail', 'ok'))")
    message = (f"coalesce({_attr(RESULT_KEYS, 't.a')}, {_exception('exception.message', 't.')}, "
               "nullIf(t.StatusMessage, ''))")
    args = _arguments("t.a")
    return f"""
CREATE OR REPLACE VIEW tool_calls_from_otel_traces AS
WITH tools AS (
    SELECT *,
        -- a parent that is the loop itself (an agent span, the prompt) is no turn
        if(parent_id != '' AND NOT parent_is_agent AND parent_id != tool_prompt, parent_id, '') AS turn_parent
    FROM otel_span_nodes_v WHERE is_tool
),
turns AS (
    -- for prompts without model spans: tool spans that overlap in time, or share a turn parent,
    -- form one step
    SELECT *,
        row_number() OVER (PARTITION BY trace_id, tool_prompt ORDER BY start_ns, span_id) AS rn,
        max(end_ns) OVER (PARTITION BY trace_id, tool_prompt ORDER BY start_ns, span_id
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end,
        lagInFrame(turn_parent) OVER (PARTITION BY trace_id, tool_prompt ORDER BY start_ns, span_id
                                      ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS prev_parent
    FROM tools
),
grouped AS (
    SELECT *,
        sum(toInt32(rn = 1 OR NOT (start_ns < coalesce(prev_end, 0) OR (turn_parent != '' AND turn_parent = prev_parent))))
            OVER (PARTITION BY trace_id, tool_prompt ORDER BY start_ns, span_id
                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - 1 AS turn_step
    FROM turns
)
SELECT
    toInt64(bitAnd(cityHash64('otel_traces', t.trace_id, t.span_id), 9223372036854775807)) AS seq,
    CAST(NULL AS Nullable(Int32)) AS source_id,
    CAST(NULL AS Nullable(Int64)) AS line_no,
    toInt32(1) AS v,
    fromUnixTimestamp64Micro(intDiv(t.end_ns, 1000), 'UTC') AS ts,
    {_prompt_columns()},
    CAST(t.span_id AS Nullable(String)) AS span_id,
    {_tags()} AS tags,
    CAST(coalesce({_attr(TOOL_CALL_ID_KEYS, 't.a', PLACEHOLDER_IDS)}, t.span_id) AS String) AS tool_call_id,
    CAST({_tool_name('t.a', 't.SpanName')} AS String) AS tool_name,
    toInt32(assumeNotNull(multiIf(p.own_steps, toInt32OrZero(t.a['loopscope.tool.step']),
                    p.n_llm > 0, greatest(0, arrayCount(x -> x <= t.start_ns, p.llm_starts) - 1),
                    t.turn_step))) AS step,
    CAST(nullIf(t.a['loopscope.tool.input_shape'], '') AS Nullable(String)) AS input_shape,
    CAST(coalesce(nullIf(t.a['loopscope.tool.args_fingerprint'], ''),
                  if({args} IS NULL, NULL, lower(hex(SHA256(assumeNotNull({args})))))) AS Nullable(String)) AS args_fingerprint,
    {outcome} AS outcome,
    CAST({error} AS Bool) AS is_error,
    toInt32(greatest(1, coalesce(toInt32OrNull(t.a['loopscope.tool.attempts']), 1))) AS attempts,
    CAST((t.end_ns - t.start_ns) / 1e6 AS Nullable(Float64)) AS latency_ms,
    CAST(if({error}, if(t.a['error.type'] != '', nullIf(t.a['error.type'], '_OTHER'),
                         nullIf({_exception('exception.type', 't.')}, '_OTHER')), NULL) AS Nullable(String)) AS error_type,
    CAST(if({error}, {_pre_cut(message)}, NULL) AS Nullable(String)) AS error_message,
    CAST(t.a['loopscope.tool.replayed'] = 'true' AS Bool) AS replayed,
    CAST(NULL AS Nullable(String)) AS extra
FROM grouped t
JOIN otel_span_prompts_v p ON p.trace_id = t.trace_id AND p.pkey = t.tool_prompt
"""


def loop_exits_sql() -> str:
    """``loop_exits_from_otel_traces``: one ``loop_exits`` row per prompt whose root span was exported."""
    return f"""
CREATE OR REPLACE VIEW loop_exits_from_otel_traces AS
SELECT
    toInt64(bitAnd(cityHash64('otel_traces', p.trace_id, assumeNotNull(p.root_span_id)), 9223372036854775807)) AS seq,
    CAST(NULL AS Nullable(Int32)) AS source_id,
    CAST(NULL AS Nullable(Int64)) AS line_no,
    toInt32(1) AS v,
    fromUnixTimestamp64Micro(intDiv(assumeNotNull(p.root_end_ns), 1000), 'UTC') AS ts,
    {_prompt_columns()},
    CAST(p.root_span_id AS Nullable(String)) AS span_id,
    {_tags()} AS tags,
    CAST(multiIf(p.explicit_reason IS NOT NULL, assumeNotNull(p.explicit_reason), p.agent_failed, 'error',
                 coalesce(p.agent_finish, p.last_llm_finish, 'end_turn')) AS String) AS exit_reason,
    CAST(coalesce(toInt32OrNull(p.root_a['loopscope.agent.turns']), if(p.n_llm > 0, toInt32(p.n_llm), NULL)) AS Nullable(Int32)) AS steps,
    CAST(coalesce(toInt32OrNull(p.root_a['loopscope.agent.tool_calls']), toInt32(p.n_tools)) AS Nullable(Int32)) AS tool_calls,
    CAST(coalesce(toInt32OrNull(p.root_a['loopscope.agent.tool_failures']), toInt32(p.n_tool_errors)) AS Nullable(Int32)) AS tool_errors,
    CAST(toInt32OrNull(p.root_a['loopscope.agent.max_tool_calls']) AS Nullable(Int32)) AS max_tool_calls,
    CAST(coalesce(toInt64OrNull({_attr(INPUT_TOKEN_KEYS, 'p.root_a')}),
                  if(p.n_llm_input_tokens > 0, p.llm_input_tokens, NULL)) AS Nullable(Int64)) AS input_tokens,
    CAST(coalesce(toInt64OrNull({_attr(OUTPUT_TOKEN_KEYS, 'p.root_a')}),
                  if(p.n_llm_output_tokens > 0, p.llm_output_tokens, NULL)) AS Nullable(Int64)) AS output_tokens,
    CAST(p.root_duration_ns / 1e6 AS Nullable(Float64)) AS duration_ms,
    CAST(if(exit_reason = 'error' AND p.agent_failed, p.failed.1, NULL) AS Nullable(String)) AS error_type,
    CAST(if(exit_reason = 'error' AND p.agent_failed, {_pre_cut('p.failed.2')}, NULL) AS Nullable(String)) AS error_message,
    CAST(NULL AS Nullable(String)) AS extra
FROM otel_span_prompts_v p
-- prompts whose chain of parents broke (the agent span never exported) stay open: no exit
WHERE p.has_root AND (p.tool_how IS NULL OR p.tool_how IN ('agent_span', 'root_span'))
"""


SNAPSHOT_TABLES = ("otel_span_tool_calls", "otel_span_loop_exits")
STATE_TABLE = "otel_span_state"
STATE_SQL = f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} (state String) ENGINE = MergeTree ORDER BY tuple()"


def create_span_views(con: Any, tables: tuple[str, str], *, exclude_logged: bool) -> None:
    """Create the views over ``otel_traces`` and the tables that keep their rows (``con``: a ``ClickHouseConnection``).

    ``tables``: the DDL of loopscope's two tables, given the snapshot tables' names here.
    """
    for sql in (nodes_sql(exclude_logged), prompts_sql(), tool_calls_sql(), loop_exits_sql()):
        con.command(sql)
    for target, table, ddl in (("tool_calls", SNAPSHOT_TABLES[0], tables[0]), ("loop_exits", SNAPSHOT_TABLES[1], tables[1])):
        con.command(ddl.replace(f"EXISTS {target} (", f"EXISTS {table} (").replace(
            "ENGINE = MergeTree ORDER BY (conversation_id, prompt_id, ts, seq)",
            "ENGINE = ReplacingMergeTree ORDER BY (conversation_id, seq)"))
    con.command(STATE_SQL)


CLEANED_TABLE = "otel_span_error_text"
CLEANED_TABLE_SQL = f"CREATE TABLE IF NOT EXISTS {CLEANED_TABLE} (original String, cleaned String) ENGINE = Memory"
DISTINCT_ERROR_TEXT_SQL = f"""
SELECT DISTINCT assumeNotNull(error_message) FROM (
    SELECT error_message FROM {SNAPSHOT_TABLES[0]} WHERE error_message IS NOT NULL
    UNION ALL
    SELECT error_message FROM {SNAPSHOT_TABLES[1]} WHERE error_message IS NOT NULL
)
"""
INSERT_CLEANED_SQL = (f"INSERT INTO {CLEANED_TABLE} SELECT tupleElement(x, 1), tupleElement(x, 2) "
                      "FROM (SELECT arrayJoin(arrayZip({original:Array(String)}, {cleaned:Array(String)})) AS x)")
CLEANED_BATCH_CHARS = 4_000_000
"""Texts bound per INSERT into the cleaned-text table (a bound parameter travels in the query)."""
# Each table's rows again, their error text swapped for the cleaned one (``transform`` keeps the
# text when it is not in the list); written to a staging copy first, then back.
REWRITE_SQL = """
INSERT INTO {staging} SELECT * REPLACE (
    if(error_message IS NULL, NULL,
       transform(assumeNotNull(error_message), (SELECT groupArray(original) FROM {cleaned_table}),
                 (SELECT groupArray(cleaned) FROM {cleaned_table}), assumeNotNull(error_message))) AS error_message)
FROM {table}
"""


def _clean_error_text(con: Any) -> int:
    """Redact and cap the kept spans' error text with the file reader's ``clean_error_text``; return the texts changed.

    Each distinct text is cleaned once in Python (rows in proportion to distinct texts, not
    calls); the rows are rewritten only when a text changed (a secret, or more than
    ``MAX_ERROR_CHARS`` characters).
    """
    changed = [(text, cleaned) for (text,) in con.execute_native(DISTINCT_ERROR_TEXT_SQL).fetchall()
               if (cleaned := clean_error_text(text)) != text]
    if not changed:
        return 0
    con.command(CLEANED_TABLE_SQL)
    con.command(f"TRUNCATE TABLE {CLEANED_TABLE}")
    batch: list[tuple[str, str]] = []
    size = 0
    for pair in [*changed, None]:
        if pair is not None:
            batch.append(pair)
            size += len(pair[0]) + len(pair[1])
        if batch and (pair is None or size >= CLEANED_BATCH_CHARS):
            con.execute_native(INSERT_CLEANED_SQL, {"original": [o for o, _ in batch], "cleaned": [c for _, c in batch]})
            batch, size = [], 0
    for table in SNAPSHOT_TABLES:
        staging = f"{table}_cleaning"
        con.command(f"DROP TABLE IF EXISTS {staging}")
        con.command(f"CREATE TABLE {staging} AS {table}")
        con.command(REWRITE_SQL.format(staging=staging, table=table, cleaned_table=CLEANED_TABLE))
        con.command(f"TRUNCATE TABLE {table}")
        con.command(f"INSERT INTO {table} SELECT * FROM {staging}")
        con.command(f"DROP TABLE {staging}")
    con.command(f"TRUNCATE TABLE {CLEANED_TABLE}")
    return len(changed)


def refresh_spans(con: Any, *, with_logs: bool) -> bool:
    """Derive the span records again when ``otel_traces`` (or the log records that stand in for traces) changed.

    The views follow the span tree on every read; the analyses read each record table many
    times per command, so the views' rows are kept in ``otel_span_tool_calls`` /
    ``otel_span_loop_exits`` and made again, whole, when the source changed since the last time
    (rows and latest start in ``otel_traces``; rows of the log-record tables). Returns whether it
    made them again.
    """
    parts = ["(SELECT toString(count()) || '/' || toString(max(Timestamp)) FROM otel_traces)"]
    if with_logs:
        parts += ["(SELECT toString(count()) FROM otel_log_tool_calls)", "(SELECT toString(count()) FROM otel_log_loop_exits)"]
    joined = ", '|', ".join(parts)
    row = con.execute_native(f"SELECT concat({joined})").fetchone()
    current = str(row[0]) if row else ""
    last = con.execute_native(f"SELECT any(state) FROM {STATE_TABLE}").fetchone()
    if last and last[0] == current:
        return False
    for table, view in zip(SNAPSHOT_TABLES, ("tool_calls_from_otel_traces", "loop_exits_from_otel_traces")):
        con.command(f"TRUNCATE TABLE {table}")
        con.command(f"INSERT INTO {table} SELECT * FROM {view}")
    _clean_error_text(con)
    con.command(f"TRUNCATE TABLE {STATE_TABLE}")
    con.execute_native(f"INSERT INTO {STATE_TABLE} VALUES ({{state:String}})", {"state": current})
    return True
