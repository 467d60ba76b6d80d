"""Turn decoded OTLP spans into v1 ``tool_call`` / ``loop_exit`` records.

Spans are recognised through the alias map (``otlp_aliases``) over the three conventions agents
are instrumented with today (docs/inputs.md, "OpenTelemetry exports", has the
full table):

- OpenTelemetry GenAI (``gen_ai.*``; also what loopscope's collector emits,
  with its own ``loopscope.*`` keys),
- OpenInference (``openinference.span.kind``, ``tool.name``, ``session.id``),
- OpenLLMetry / Traceloop (``traceloop.span.kind``, ``traceloop.entity.name``),
- the Vercel AI SDK (``ai.operationId``, ``ai.toolCall.*``), and the keys Strands, Google ADK and
  pydantic-ai's earlier instrumentation add where those leave something out.

Decisions (each record says in ``extra`` when a value was derived rather
than read):

- **prompt**: the outermost agent span above a tool span; its span id is the
  ``prompt_id`` and it gives the ``loop_exit``. When the chain of parents breaks
  (the agent span was never exported: the process died, or the file was read
  mid-run) the prompt is the missing parent's id and stays open. When the
  chain reaches a root that is not an agent span, that root stands in for it
  (``agent_span_inferred``). Tool spans with no parent at all form one open
  prompt per trace.
- **conversation**: ``gen_ai.conversation.id``, ``session.id``,
  ``traceloop.association.properties.{conversation_id,session_id,thread_id}``,
  read from the tool span, then its ancestors, then any span of its trace.
  Never the bare trace id: with none of them the conversation is
  ``otlp-trace:<trace id>`` (one conversation per trace, marked
  ``conversation_id_from_trace``), so it cannot be mistaken for a real id.
- **step**: ``loopscope.tool.step`` when present; else the index of the last
  model (LLM) span of the prompt that started before the tool span; else tool
  spans that overlap in time, or share a parent that is not the agent span
  (a "turn"), form one step, in start order.
- **tool call id**: ``gen_ai.tool.call.id`` / ``tool.id``; else the id of the
  matching tool call in the prompt's LLM messages (same name, same arguments,
  in order; ``tool_call_id_from_messages``); else the span id
  (``tool_call_id_from_span``).
- **exit reason**: ``loopscope.agent.exit_reason``; span status ERROR ->
  ``error``; ``gen_ai.response.finish_reasons`` / ``llm.finish_reason`` /
  ``llm.response.finish_reason`` on the agent spans, then on the last LLM span,
  normalised (``stop`` -> ``end_turn``, ``length`` -> ``max_tokens``,
  ``content_filter`` -> ``refusal``; the raw value kept in ``finish_reason_raw``);
  else an agent span that ended without error is taken as ``end_turn``
  (``exit_reason_inferred``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from typing import Any

from loopscope.analyses.ingest.otlp import Span
from loopscope.analyses.ingest.otlp.aliases import (
    AGENT_NAME_KEYS,
    CONVERSATION_KEYS,
    FINISH_REASON_KEYS,
    INPUT_TOKEN_KEYS,
    OUTCOMES,
    OUTPUT_TOKEN_KEYS,
    PLACEHOLDER_IDS,
    RESULT_KEYS,
    TAG_PREFIX,
    TOOL_CALL_ID_KEYS,
    arguments,
    as_int,
    error_of,
    first,
    format_ts,
    is_agent_span,
    is_llm_span,
    is_tool_span,
    json_value,
    message_calls,
    normalise_reason,
    same_args,
    tool_name,
)
from loopscope.collectors.shape import result_fingerprint, shape_and_fingerprint


class _Trace:
    """The spans of one trace, indexed for walking up parent chains."""

    def __init__(self, spans: list[Span]) -> None:
        self.spans = sorted(spans, key=lambda s: (s.start_ns, s.line_no))
        self.by_id = {s.span_id: s for s in self.spans}
        self.conversation = next(
            (c for s in self.spans if (c := first(s.attrs, CONVERSATION_KEYS)) is not None), None
        )

    def ancestors(self, span: Span) -> tuple[list[Span], str | None]:
        """Known ancestors, nearest first, and the id of a parent that is missing (if the chain breaks)."""
        chain: list[Span] = []
        seen = {span.span_id}
        parent = span.parent_id
        while parent is not None and parent not in seen:
            node = self.by_id.get(parent)
            if node is None:
                return chain, parent
            chain.append(node)
            seen.add(parent)
            parent = node.parent_id
        return chain, None


class _Prompt:
    def __init__(self, key: str, root: Span | None, how: str) -> None:
        self.key = key
        self.root = root
        self.how = how
        self.tools: list[Span] = []
        self.agents: list[Span] = []  # agent spans inside the prompt, outermost first

    @property
    def prompt_id(self) -> str:
        """loopscope's own prompt id when the spans carry it, else the structural key."""
        for span in [*self.agents, *self.tools]:
            if span.attrs.get("loopscope.prompt.id"):
                return str(span.attrs["loopscope.prompt.id"])
        return self.key


def _prompt_of(tool: Span, trace: _Trace, prompts: dict[str, _Prompt]) -> _Prompt:
    chain, missing = trace.ancestors(tool)
    agents = [s for s in chain if is_agent_span(s)]
    if agents:
        root, key, how = agents[-1], agents[-1].span_id, "agent_span"
    elif missing is not None:
        root, key, how = None, missing, "missing_parent"
    elif chain:
        root, key, how = chain[-1], chain[-1].span_id, "root_span"
    else:
        root, key, how = None, f"otlp-trace:{tool.trace_id or tool.span_id}", "trace"
    prompt = prompts.get(key)
    if prompt is None:
        prompt = prompts[key] = _Prompt(key, root, how)
    prompt.tools.append(tool)
    return prompt


def _assign_steps(prompt: _Prompt, llms: list[Span]) -> dict[str, int]:
    tools = sorted(prompt.tools, key=lambda s: (s.start_ns, s.line_no))
    steps: dict[str, int] = {}
    own = [t.attrs.get("loopscope.tool.step") for t in tools]
    if all(type(v) is int and v >= 0 for v in own):
        return {t.span_id: t.attrs["loopscope.tool.step"] for t in tools}  # type: ignore[misc]
    if llms:
        starts = sorted(s.start_ns for s in llms)
        for t in tools:
            steps[t.span_id] = max(0, bisect_right(starts, t.start_ns) - 1)
        return steps
    # A parent that is an agent span is the loop itself, not a turn: only other parents group calls.
    loop_ids = {s.span_id for s in prompt.agents} | {prompt.key}
    step, group_end, group_parent = -1, None, None
    for t in tools:
        turn_parent = t.parent_id if t.parent_id not in loop_ids and t.parent_id is not None else None
        same = group_end is not None and (
            t.start_ns < group_end or (turn_parent is not None and turn_parent == group_parent)
        )
        if not same:
            step += 1
            group_end, group_parent = t.end_ns, turn_parent
        else:
            group_end = max(group_end or 0, t.end_ns)
        steps[t.span_id] = step
    return steps


def _tool_record(span: Span, prompt: _Prompt, conversation: tuple[str, bool], step: int,
                 call_id: tuple[str, str | None], agent: str) -> dict[str, Any]:
    a = span.attrs
    is_error, error_type, message, detail = error_of(span, tool=True)
    outcome = a.get("loopscope.tool.outcome")
    if outcome not in OUTCOMES:
        outcome = "permanent_fail" if is_error else "ok"
    shape = json_value(a.get("loopscope.tool.input_shape"))
    args = arguments(span)
    derived_shape, fingerprint = shape_and_fingerprint(args)
    rec: dict[str, Any] = {
        "v": 1,
        "kind": "tool_call",
        "ts": format_ts(span.end_ns),
        "conversation_id": conversation[0],
        "prompt_id": prompt.prompt_id,
        "agent": agent,
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "tool_call_id": call_id[0],
        "tool_name": tool_name(span),
        "step": step,
        "input_shape": shape if isinstance(shape, dict) else derived_shape,
        "args_fingerprint": a.get("loopscope.tool.args_fingerprint") or fingerprint,
        "outcome": outcome,
        "is_error": is_error,
        "attempts": max(1, as_int(a.get("loopscope.tool.attempts"), 1) or 1),
        "latency_ms": max(0, span.end_ns - span.start_ns) / 1e6,
        "error_type": error_type,
        "error_message": message,
        "replayed": bool(a.get("loopscope.tool.replayed", False)),
    }
    # The result the model saw, when the span records it (opt-in content): its digest only, as the
    # collector's call.returned() writes it (docs/records.md, optional field).
    result = next((a[k] for k in RESULT_KEYS if a.get(k) is not None), None)
    if result is not None:
        rec["result_fingerprint"] = result_fingerprint(result)
    if detail:
        rec["error_detail"] = detail
    _provenance(rec, span, prompt, conversation[1])
    if call_id[1]:
        rec[f"tool_call_id_from_{call_id[1]}"] = True
    return rec


def _provenance(rec: dict[str, Any], span: Span, prompt: _Prompt, conv_from_trace: bool) -> None:
    tags = {k.removeprefix(TAG_PREFIX): str(v) for s in prompt.agents for k, v in s.attrs.items()
            if k.startswith(TAG_PREFIX)}
    if tags:
        rec["tags"] = tags
    rec["source_format"] = "otlp"
    if span.scope:
        rec["instrumentation"] = span.scope
    if span.resource.get("service.name"):
        rec["service_name"] = span.resource["service.name"]
    if conv_from_trace:
        rec["conversation_id_from_trace"] = True
    if prompt.how != "agent_span":
        rec["prompt_id_from"] = prompt.how


def _agent_name(prompt: _Prompt) -> str:
    for span in prompt.agents:
        name = first(span.attrs, AGENT_NAME_KEYS)
        if name is None and span.attrs.get("traceloop.span.kind") == "agent":
            name = span.attrs.get("traceloop.entity.name")
        if name is None and span.name.startswith("invoke_agent "):
            name = span.name.removeprefix("invoke_agent ")
        if name:
            return str(name)
    return "default"


def _exit_record(prompt: _Prompt, llms: list[Span], conversation: tuple[str, bool], agent: str,
                 tool_records: list[dict[str, Any]]) -> dict[str, Any]:
    root = prompt.root
    assert root is not None
    rec: dict[str, Any] = {
        "v": 1, "kind": "loop_exit", "ts": format_ts(root.end_ns),
        "conversation_id": conversation[0], "prompt_id": prompt.prompt_id, "agent": agent,
        "trace_id": root.trace_id, "span_id": root.span_id,
    }
    error_type = error_message = None
    explicit = next((s.attrs["loopscope.agent.exit_reason"] for s in prompt.agents
                     if s.attrs.get("loopscope.agent.exit_reason")), None)
    failed = next((s for s in prompt.agents if error_of(s)[0]), None)
    reason: str | None = None
    if explicit:
        reason = str(explicit)
    elif failed is not None:
        reason = "error"
    if failed is not None:
        _, error_type, error_message, _ = error_of(failed)
    if reason is None:
        last_llm = sorted(llms, key=lambda s: s.end_ns)[-1:]
        for span in [*prompt.agents, *last_llm]:
            found = normalise_reason(first(span.attrs, FINISH_REASON_KEYS))
            if found:
                reason, rec["finish_reason_raw"] = found
                break
    if reason is None:
        reason, rec["exit_reason_inferred"] = "end_turn", True
    a = root.attrs

    def tokens(keys: tuple[str, ...]) -> int | None:
        own = as_int(first(a, keys))
        if own is not None:
            return own
        vals = [v for s in llms if (v := as_int(first(s.attrs, keys))) is not None]
        return sum(vals) if vals else None

    rec.update({
        "exit_reason": reason,
        "steps": as_int(a.get("loopscope.agent.turns"), len(llms) or None),
        "tool_calls": as_int(a.get("loopscope.agent.tool_calls"), len(tool_records)),
        "tool_errors": as_int(a.get("loopscope.agent.tool_failures"), sum(r["is_error"] for r in tool_records)),
        "max_tool_calls": as_int(a.get("loopscope.agent.max_tool_calls")),
        "input_tokens": tokens(INPUT_TOKEN_KEYS),
        "output_tokens": tokens(OUTPUT_TOKEN_KEYS),
        "duration_ms": max(0, root.end_ns - root.start_ns) / 1e6,
        "error_type": error_type if reason == "error" else None,
        "error_message": error_message if reason == "error" else None,
    })
    _provenance(rec, root, prompt, conversation[1])
    if prompt.how == "root_span":
        rec["agent_span_inferred"] = True
    return rec


def spans_to_records(spans: list[Span]) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str, str]]]:
    """Convert the spans of a file into records, each with the line it came from.

    Args:
        spans: decoded spans (any order, any number of traces). A span seen
            twice (same trace and span id: a file concatenated twice) counts once.

    Returns:
        ``(line_no, record)`` pairs: a prompt's ``tool_call`` records in step
        order, then its ``loop_exit`` (when its agent span was exported); and
        ``(line_no, reason, raw)`` for prompts whose spans could not be converted.
    """
    by_trace: dict[str | None, dict[str, Span]] = defaultdict(dict)
    for span in spans:
        by_trace[span.trace_id].setdefault(str(span.span_id), span)
    out: list[tuple[int, dict[str, Any]]] = []
    bad: list[tuple[int, str, str]] = []
    for trace_spans in by_trace.values():
        trace = _Trace(list(trace_spans.values()))
        prompts: dict[str, _Prompt] = {}
        for tool in (s for s in trace.spans if is_tool_span(s)):
            _prompt_of(tool, trace, prompts)
        # Agent spans with no tool call under them are prompts too (n = 0), unless they sit
        # inside a prompt already found (LangGraph's per-step "agent" node under a CHAIN root).
        roots = {p.root.span_id for p in prompts.values() if p.root is not None} | set(prompts)
        for span in trace.spans:
            if is_agent_span(span) and span.span_id not in prompts:
                chain, _ = trace.ancestors(span)
                if not any(is_agent_span(s) or s.span_id in roots for s in chain):
                    prompts[str(span.span_id)] = _Prompt(str(span.span_id), span, "agent_span")
        # Which spans each prompt contains, in one pass: a span belongs to the outermost prompt
        # root on its chain of parents.
        by_root = {p.root.span_id: p for p in prompts.values() if p.root is not None}
        inside: dict[str, list[Span]] = defaultdict(list)
        for span in trace.spans:
            chain, _ = trace.ancestors(span)
            owner = next((by_root[s.span_id] for s in reversed(chain) if s.span_id in by_root), None)
            if owner is not None:
                inside[owner.key].append(span)
        for prompt in prompts.values():
            try:
                out.extend(_convert_prompt(prompt, inside[prompt.key], trace.conversation))
            except (TypeError, ValueError, AttributeError, RecursionError) as exc:
                first = prompt.root or prompt.tools[0]
                bad.append((first.line_no, f"prompt {prompt.key} (trace {first.trace_id}): {exc}", ""))
    return out, bad


def _convert_prompt(prompt: _Prompt, inside: list[Span], trace_conversation: Any) -> list[tuple[int, dict[str, Any]]]:
    if prompt.root is None:
        inside = list(prompt.tools)
    else:
        prompt.agents = [prompt.root, *[s for s in inside if is_agent_span(s)]]
    llms = [s for s in inside if is_llm_span(s)]
    conv_raw = None
    for span in [*prompt.tools, *prompt.agents]:
        conv_raw = first(span.attrs, CONVERSATION_KEYS)
        if conv_raw is not None:
            break
    conv_raw = conv_raw if conv_raw is not None else trace_conversation
    tid = prompt.tools[0].trace_id if prompt.tools else (prompt.root.trace_id if prompt.root else None)
    conversation = (str(conv_raw), False) if conv_raw is not None else (f"otlp-trace:{tid}", True)
    agent = _agent_name(prompt)
    steps = _assign_steps(prompt, llms)
    candidates = message_calls(llms)
    records: list[tuple[int, dict[str, Any]]] = []
    for tool in sorted(prompt.tools, key=lambda s: (steps[s.span_id], s.start_ns, s.line_no)):
        own = first(tool.attrs, TOOL_CALL_ID_KEYS)
        call_id: tuple[str, str | None]
        if own is not None and own not in PLACEHOLDER_IDS:
            call_id = (str(own), None)
        else:
            name, args = tool_name(tool), arguments(tool)
            match = next((c for c in candidates if c[1] == name and same_args(c[2], args)), None)
            if match is not None:
                candidates.remove(match)
                call_id = (match[0], "messages")
            else:
                call_id = (str(tool.span_id), "span")
        records.append((tool.line_no, _tool_record(tool, prompt, conversation, steps[tool.span_id], call_id, agent)))
    if prompt.root is not None and prompt.how in ("agent_span", "root_span"):
        exit_rec = _exit_record(prompt, llms, conversation, agent, [r for _, r in records])
        records.append((prompt.root.line_no, exit_rec))
    return records
