"""The alias map: how tool, agent and model spans are recognised across conventions.

One place for the attribute keys of OpenTelemetry GenAI (``gen_ai.*``; also
what loopscope's collector emits, with its own ``loopscope.*`` keys),
OpenInference, OpenLLMetry / Traceloop and the Vercel AI SDK (``ai.*``), plus the few
framework-specific keys that say what those conventions leave out (Strands' tool status,
Google ADK's session id and argument / response keys, pydantic-ai's Logfire-era keys), and
for reading values out of them
(ids, names, arguments, errors, finish reasons). docs/inputs.md, "OpenTelemetry
exports", has the table; ``otlp_genai`` builds records from these facts.
"""

from __future__ import annotations

import ast
import json
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any

from loopscope.analyses.ingest import jsontext
from loopscope.analyses.ingest.otlp import Span
from loopscope.collectors.redact import clean_error_text

MAX_LITERAL = 100_000  # longest Python-literal argument text worth parsing
TAG_PREFIX = "loopscope.tag."
STATUS_ERROR = 2
OUTCOMES = ("ok", "retried", "transient_fail", "permanent_fail")

# --- the alias map ----------------------------------------------------------------------------
TOOL_OPERATIONS = ("execute_tool",)
# create_agent is left out on purpose: it creates an agent at a service and runs no loop.
AGENT_OPERATIONS = ("invoke_agent", "invoke_workflow")
# The last four: Semantic Kernel's (and early Microsoft Agent Framework's) names for the same model calls.
LLM_OPERATIONS = ("chat", "text_completion", "generate_content", "chat.completions", "chat.streaming_completions",
                  "text.completions", "text.streaming_completions")
CONVERSATION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",
    "traceloop.association.properties.conversation_id",
    "traceloop.association.properties.session_id",
    "traceloop.association.properties.thread_id",
    "gcp.vertex.agent.session_id",  # Google ADK's model spans (before it set gen_ai.conversation.id)
)
TOOL_CALL_ID_KEYS = ("gen_ai.tool.call.id", "tool.id", "tool_call.id", "ai.toolCall.id")
# Ids that stand for "none": Google ADK writes this one when a call has no response event.
PLACEHOLDER_IDS = ("<not specified>",)
TOOL_NAME_KEYS = ("gen_ai.tool.name", "tool.name", "ai.toolCall.name")
# agent_name: pydantic-ai's "agent run" span; ai.telemetry.functionId: the Vercel AI SDK call's own name.
AGENT_NAME_KEYS = ("gen_ai.agent.name", "agent.name", "agent_name", "ai.telemetry.functionId")
# What the model was handed back (opt-in content; recorded by OpenLLMetry and OpenInference,
# the Vercel AI SDK, Google ADK and pydantic-ai's earlier instrumentation under their own keys).
RESULT_KEYS = ("gen_ai.tool.call.result", "output.value", "ai.toolCall.result", "gcp.vertex.agent.tool_response",
               "tool_response")
ARGUMENT_KEYS = ("gen_ai.tool.call.arguments", "input.value", "traceloop.entity.input", "ai.toolCall.args",
                 "gcp.vertex.agent.tool_call_args", "tool_arguments")
FINISH_REASON_KEYS = (
    "gen_ai.response.finish_reasons",
    "llm.finish_reason",
    "llm.response.finish_reason",
    "stop_reason",
    "ai.response.finishReason",
)
INPUT_TOKEN_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
                    "ai.usage.inputTokens", "ai.usage.promptTokens")
OUTPUT_TOKEN_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion",
                     "ai.usage.outputTokens", "ai.usage.completionTokens")
# The Vercel AI SDK (``ai`` scope) says what a span is in ``ai.operationId``: the call that runs the
# tool loop (generateText / streamText), each model request of it, and each tool execution.
AI_SDK_AGENT_OPERATIONS = ("ai.generateText", "ai.streamText")
AI_SDK_LLM_OPERATIONS = ("ai.generateText.doGenerate", "ai.streamText.doStream")
AI_SDK_TOOL_OPERATION = "ai.toolCall"
# Google ADK sums up parallel calls in one more execute_tool span ("execute_tool (merged)") after
# the calls' own spans; it is not a call.
MERGED_TOOL_NAMES = ("(merged tools)",)
# Logfire's level for a span: 17 is "warn" (pydantic-ai's earlier instrumentation marks a tool call
# the model is asked to retry so), 17 and above is a failure.
LOGFIRE_WARN = 17
# Provider vocabulary -> record format v1 (docs/records.md); anything else is kept as-is.
FINISH_REASONS = {
    "stop": "end_turn",
    "end_turn": "end_turn",
    "stop_sequence": "stop_sequence",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "content_filter": "refusal",
    "content-filter": "refusal",  # the Vercel AI SDK's spelling
    "refusal": "refusal",
    "error": "error",
}


def as_int(value: Any, default: int | None = None) -> int | None:
    """An integer attribute (ints may arrive as strings or floats); ``default`` when it is not one."""
    if value is None or isinstance(value, bool):
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite double
        return default


def first(attrs: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` that is set (not None, empty string or empty list)."""
    for key in keys:
        value = attrs.get(key)
        if value not in (None, "", []):
            return value
    return None


def _marked(span: Span, operations: tuple[str, ...], openinference: str, traceloop: tuple[str, ...]) -> bool:
    """Whether the span's attributes say it is of a kind, in any of the three conventions."""
    a = span.attrs
    return (
        a.get("gen_ai.operation.name") in operations
        or str(a.get("openinference.span.kind", "")).upper() == openinference
        or a.get("traceloop.span.kind") in traceloop
    )


def is_tool_span(span: Span) -> bool:
    """A tool execution span, in any of the conventions (or by its name alone).

    Also: a span that carries the GenAI execute-tool attributes ``gen_ai.tool.name`` and
    ``gen_ai.tool.call.id`` with no ``gen_ai.operation.name`` at all (pydantic-ai's ``running tool``
    spans before it set one). Not: Google ADK's summary of parallel calls (``(merged tools)``).
    """
    a = span.attrs
    if a.get("gen_ai.tool.name") in MERGED_TOOL_NAMES:
        return False
    return (
        _marked(span, TOOL_OPERATIONS, "TOOL", ("tool",))
        or a.get("ai.operationId") == AI_SDK_TOOL_OPERATION
        or span.name.startswith("execute_tool ")
        or (span.name.endswith(".tool") and "openinference.span.kind" not in a)
        or ("gen_ai.operation.name" not in a and bool(a.get("gen_ai.tool.name")) and bool(a.get("gen_ai.tool.call.id")))
    )


def is_agent_span(span: Span) -> bool:
    """An agent (or agent workflow) span: the loop that answers one user prompt."""
    return (
        _marked(span, AGENT_OPERATIONS, "AGENT", ("agent", "workflow"))
        or span.attrs.get("ai.operationId") in AI_SDK_AGENT_OPERATIONS
        or span.name.startswith("invoke_agent")
    )


def is_llm_span(span: Span) -> bool:
    """A model call (one step of the loop); OpenLLMetry marks these with ``llm.request.type``.

    Also: the Vercel AI SDK's ``doGenerate`` / ``doStream`` spans, and a span that names the model
    it requests (``gen_ai.request.model``) with no ``gen_ai.operation.name`` and is neither a tool
    nor an agent span (Google ADK's ``call_llm``).
    """
    a = span.attrs
    return (
        _marked(span, LLM_OPERATIONS, "LLM", ())
        or a.get("llm.request.type") in ("chat", "completion")
        or a.get("ai.operationId") in AI_SDK_LLM_OPERATIONS
        or ("gen_ai.operation.name" not in a and bool(a.get("gen_ai.request.model"))
            and not is_tool_span(span) and not is_agent_span(span))
    )


def format_ts(ns: int) -> str:
    """Nanoseconds since the epoch -> RFC 3339 UTC with microseconds, like the collector writes."""
    dt = datetime.fromtimestamp(ns // 1_000_000_000, tz=timezone.utc)
    return dt.replace(microsecond=(ns % 1_000_000_000) // 1000).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def json_value(value: Any) -> Any:
    """Parse a JSON string attribute (content keys are often JSON text); other values pass."""
    if isinstance(value, str):
        try:
            return jsontext.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def as_text(value: Any) -> str | None:
    """Attribute value as text: strings as they are, structures as JSON; empty -> None."""
    if value in (None, ""):
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def error_of(span: Span, tool: bool = False) -> tuple[bool, str | None, str | None, str | None]:
    """(is_error, error_type, error_message, error_detail) of a span.

    The error flag comes from span status ERROR, ``error.type`` or an ``exception`` event; on a tool
    span also from ``gen_ai.tool.status`` = ``error`` (Strands) and a Logfire level of warn or above
    (``logfire.level_num`` >= 17: pydantic-ai's earlier instrumentation, for a retry). The
    message is what the model saw when the span records it (a tool span's result:
    ``gen_ai.tool.call.result`` / OpenInference ``output.value``), else the exception's
    message, else the status description; the instrumentation's own description, when it says
    something else, is kept as ``error_detail``. Both are redacted and capped like the
    collector's error text.
    """
    event = next((attrs for name, _, attrs in span.events if name == "exception"), None)
    exc = event or {}
    # an exception event counts even with no attributes (the SDK may drop them past its limits)
    is_error = span.status_code == STATUS_ERROR or bool(span.attrs.get("error.type")) or event is not None
    if tool and not is_error:
        # Strands ends a failed tool's span with status OK and the result's status "error"; pydantic-ai's
        # earlier instrumentation marks a call the model must retry at Logfire level warn.
        is_error = (str(span.attrs.get("gen_ai.tool.status", "")).lower() == "error"
                    or (as_int(span.attrs.get("logfire.level_num"), 0) or 0) >= LOGFIRE_WARN)
    if not is_error:
        return False, None, None, None
    error_type = span.attrs.get("error.type") or exc.get("exception.type")
    if error_type == "_OTHER":  # the semconv placeholder for "no type known"
        error_type = None
    seen = first(span.attrs, RESULT_KEYS) if tool else None
    candidates = [as_text(seen), as_text(exc.get("exception.message")), as_text(span.status_message)]
    message = next((m for m in candidates if m), None)
    detail = next((m for m in candidates[1:] if m and m != message), None)
    return (
        True,
        str(error_type) if error_type else None,
        clean_error_text(message) if message else None,
        clean_error_text(detail) if detail else None,
    )


def normalise_reason(raw: Any) -> tuple[str, Any] | None:
    """(exit reason in the record format's vocabulary, the raw value), or None when there is none."""
    if isinstance(raw, list):
        raw = raw[-1] if raw else None  # finish_reasons lists one per choice; the last decides
    if raw in (None, ""):
        return None
    return FINISH_REASONS.get(str(raw).lower(), str(raw)), raw


def _span_calls(span: Span, which: str) -> list[tuple[str, str, Any]]:
    """Tool calls (id, name, arguments) in one model span's ``input`` or ``output`` messages, in order."""
    calls: list[tuple[str, str, Any]] = []
    for msg in json_value(span.attrs.get(f"gen_ai.{which}.messages")) or []:
        for part in (msg.get("parts") or []) if isinstance(msg, dict) else []:
            if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("id"):
                calls.append((str(part["id"]), part.get("name") or "", part.get("arguments")))
    # OpenInference flattens lists: llm.{input,output}_messages.<i>.message.tool_calls.<j>.tool_call.*
    flat: dict[tuple[int, int], dict[str, Any]] = defaultdict(dict)
    prefix = f"llm.{which}_messages."
    for key, value in span.attrs.items():
        if not key.startswith(prefix):
            continue
        parts = key.split(".")
        if len(parts) >= 8 and parts[3:5] == ["message", "tool_calls"] and parts[2].isdigit() and parts[5].isdigit():
            flat[(int(parts[2]), int(parts[5]))][".".join(parts[7:])] = value
    for _, call in sorted(flat.items()):
        if call.get("id"):
            calls.append((str(call["id"]), call.get("function.name") or "", call.get("function.arguments")))
    return calls


def message_calls(llms: list[Span]) -> list[tuple[str, str, Any]]:
    """The tool calls the model made in this prompt, in order, from its model spans' messages.

    A call is in the output of the model span that made it and in the input of every later
    one; calls already in the input of the prompt's first model span are history (earlier
    prompts of the conversation) and are left out.
    """
    ordered = sorted(llms, key=lambda s: s.start_ns)
    history = {c[0] for c in _span_calls(ordered[0], "input")} if ordered else set()
    found: dict[str, tuple[str, str, Any]] = {}
    for span in ordered:
        for call in [*_span_calls(span, "input"), *_span_calls(span, "output")]:
            if call[0] not in history:
                found.setdefault(call[0], call)
    return list(found.values())


def same_args(a: Any, b: Any) -> bool:
    """Arguments that may be the same call's: equal as JSON, or one side unknown."""
    return a is None or b is None or json_value(a) == json_value(b)


def tool_name(span: Span) -> str:
    """The tool's name from the attributes, else from the span name."""
    name = first(span.attrs, TOOL_NAME_KEYS)
    if name is None and span.attrs.get("traceloop.span.kind") == "tool":
        name = span.attrs.get("traceloop.entity.name")
    if name is None:
        name = span.name.removeprefix("execute_tool ").removesuffix(".tool")
    return str(name or "unknown")


def unwrap_arguments(value: Any) -> Any:
    """The tool's own arguments inside a framework's wrapper, when there is one."""
    if isinstance(value, dict) and isinstance(value.get("input_str"), str) and "metadata" in value:
        # LangChain's on_tool_start payload (OpenLLMetry): input_str is JSON or a Python dict repr.
        text = value["input_str"]
        try:
            return jsontext.loads(text)
        except (ValueError, RecursionError):
            pass
        try:
            return ast.literal_eval(text) if len(text) <= MAX_LITERAL else None
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return value


def arguments(span: Span) -> dict[str, Any] | None:
    """The call's arguments as an object, or None when no attribute holds them as one."""
    for key in ARGUMENT_KEYS:
        if key not in span.attrs:
            continue
        if key == "input.value" and span.attrs.get("input.mime_type") != "application/json":
            continue  # OpenInference's plain-text input (e.g. a single argument's value)
        value = unwrap_arguments(json_value(span.attrs[key]))
        if isinstance(value, dict):
            return value
    return None
