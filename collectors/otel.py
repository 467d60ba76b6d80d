"""OpenTelemetry through the API only: span names, kinds and attribute keys.

One ``invoke_agent {agent}`` INTERNAL span per prompt and one ``execute_tool {tool}`` INTERNAL
child span per tool call (research/otel-genai.md sections 1 and 6). Standard keys are GenAI
semantic-convention names (Development status); our own keys live under ``loopscope.*``.

Tool spans are only created when the prompt span is recording, so without an SDK (or for an
unsampled prompt) a tool call costs one attribute check, not a span.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from loopscope.collectors.shape import input_shape
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

INTERNAL = SpanKind.INTERNAL
STATUS_ERROR = StatusCode.ERROR
set_span_in_context = trace.set_span_in_context
attach = otel_context.attach
detach = otel_context.detach

# Standard (GenAI semconv) keys.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
ERROR_TYPE = "error.type"

# Project-owned keys.
PROMPT_ID = "loopscope.prompt.id"
EXIT_REASON = "loopscope.agent.exit_reason"
TURNS = "loopscope.agent.turns"
AGENT_TOOL_CALLS = "loopscope.agent.tool_calls"
AGENT_TOOL_FAILURES = "loopscope.agent.tool_failures"
MAX_TOOL_CALLS = "loopscope.agent.max_tool_calls"
TOOL_OUTCOME = "loopscope.tool.outcome"
TOOL_ATTEMPTS = "loopscope.tool.attempts"
TOOL_INPUT_SHAPE = "loopscope.tool.input_shape"
TOOL_STEP = "loopscope.tool.step"
TOOL_REPLAYED = "loopscope.tool.replayed"
TAG_PREFIX = "loopscope.tag."


SCOPE = "loopscope.collectors"
# Log records (Logs API, event_name) emitted next to the spans.
TOOL_CALL_EVENT = "loopscope.tool_call"
AGENT_EXIT_EVENT = "loopscope.agent_exit"
try:  # the Logs API is still Development: tolerate an API without it
    from opentelemetry._logs import SeverityNumber

    SEV_INFO, SEV_WARN, SEV_ERROR = SeverityNumber.INFO, SeverityNumber.WARN, SeverityNumber.ERROR
except ImportError:  # pragma: no cover
    SEV_INFO, SEV_WARN, SEV_ERROR = 9, 13, 17
TOOL_SEVERITY = {"ok": (SEV_INFO, "INFO"), "retried": (SEV_WARN, "WARN")}
_SEV_ERROR = (SEV_ERROR, "ERROR")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("loopscope")
    except Exception:  # noqa: BLE001 - running from a checkout without metadata
        return ""


def get_tracer(tracer_provider: Any = None) -> trace.Tracer:
    """The collector's tracer: from ``tracer_provider``, else the global (proxy) provider."""
    return trace.get_tracer(SCOPE, _version(), tracer_provider=tracer_provider)


def get_logger(logger_provider: Any = None) -> Any:
    """The collector's OpenTelemetry logger: from ``logger_provider``, else the global (proxy) one.

    The Logs API is still Development (``opentelemetry._logs``): None when this API version
    does not have it.
    """
    try:
        from opentelemetry import _logs
    except ImportError:  # pragma: no cover - opentelemetry-api without the Logs API
        return None
    if logger_provider is not None:
        return logger_provider.get_logger(SCOPE, _version())
    return _logs.get_logger(SCOPE, _version())


def logs_enabled(logger: Any) -> bool:
    """Whether ``logger`` would record anything (False for the no-op logger of an API without SDK)."""
    if logger is None:
        return False
    enabled = getattr(logger, "enabled", None)
    if enabled is None:  # an API older than Logger.enabled(): emit, the SDK decides
        return True
    return bool(enabled(event_name=TOOL_CALL_EVENT))


def tool_severity(outcome: str) -> tuple[int, str]:
    """INFO for ``ok``, WARN for ``retried`` (a transient error was retried), ERROR for failures."""
    return TOOL_SEVERITY.get(outcome, _SEV_ERROR)


def exit_severity(reason: str) -> tuple[int, str]:
    """INFO for a normal exit, ERROR for ``error``, WARN for every other abnormal exit."""
    if reason in ("end_turn", "stop_sequence"):
        return (SEV_INFO, "INFO")
    return _SEV_ERROR if reason == "error" else (SEV_WARN, "WARN")


def emit_log(logger: Any, event: str, severity: tuple[int, str], ts: float, ctx: Any, attrs: dict, body: dict) -> None:
    """One log record in the given span context (its trace_id/span_id link it to the span)."""
    logger.emit(
        timestamp=round(ts * 1_000_000) * 1000,  # the microsecond the record's ts shows
        context=ctx,
        severity_number=severity[0],
        severity_text=severity[1],
        body={k: v for k, v in body.items() if v is not None},
        attributes=attrs,
        event_name=event,
    )


_SHAPE_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_shape_cache: dict[tuple[Any, ...], str] = {}


#: Arguments given as JSON text longer than this are not parsed on the host thread for a span
#: attribute or log body (the record still gets their shape, from the writer thread).
MAX_HOST_PARSE = 64 * 1024


def _too_big(arguments: Any) -> bool:
    return isinstance(arguments, (str, bytes, bytearray)) and len(arguments) > MAX_HOST_PARSE


def _cached_shape(cache: dict[tuple[Any, ...], Any], arguments: Any, make: Callable[[Any], Any]) -> Any:
    """``make(arguments)``, cached in ``cache`` by (argument names, value types) for a dict
    (cleared past 4,096 entries); None for JSON text over :data:`MAX_HOST_PARSE`."""
    if type(arguments) is dict:
        key = (*arguments, *map(type, arguments.values()))
        value = cache.get(key)
        if value is None:
            if len(cache) > 4096:
                cache.clear()
            value = cache[key] = make(arguments)
        return value
    if _too_big(arguments):
        return None
    return make(arguments)


def _shape_text(arguments: Any) -> str:
    return _SHAPE_JSON(input_shape(arguments))


def shape_attribute(arguments: Any) -> str | None:
    """The arguments' ``input_shape`` as a span attribute: compact JSON object text, sorted keys.

    JSON text rather than a map attribute, because map-valued attributes are not accepted by
    every SDK version and exporter. Tools are called with few distinct shapes, so the text is
    cached by (argument names, value types). None for JSON text over :data:`MAX_HOST_PARSE`.
    """
    return _cached_shape(_shape_cache, arguments, _shape_text)


_map_cache: dict[tuple[Any, ...], dict[str, str]] = {}


def shape_map(arguments: Any) -> dict[str, str] | None:
    """The arguments' ``input_shape`` as a map (log record bodies), cached like :func:`shape_attribute`.

    The cached map is shared: callers must not modify it. None for JSON text over
    :data:`MAX_HOST_PARSE`.
    """
    return _cached_shape(_map_cache, arguments, input_shape)


def error_status(message: str | None) -> Status:
    """Status ERROR with the (already redacted) error text as description."""
    return Status(STATUS_ERROR, message or None)
