"""loopscope collector: per tool call and per loop exit, a v1 record and an OpenTelemetry span.

Imports only the standard library and ``opentelemetry-api``. See docs/collector.md::

    from loopscope.collectors import Collector, JsonlSink

    collector = Collector(JsonlSink("logs/loopscope.jsonl"), provider="anthropic")
    with collector.prompt(conversation_id="c-1", agent="support", max_tool_calls=25) as loop:
        ...
        loop.model_response(stop_reason=response.stop_reason)
        with loop.tool_call(block.id, block.name, block.input, catch=True) as call:
            content = run_tool(block.name, block.input)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopscope.collectors.core import Collector, CollectorStats, PromptLoop, ToolCall
    from loopscope.collectors.records import SCHEMA_VERSION, finish, format_ts, openai_stop_reason
    from loopscope.collectors.redact import MAX_ERROR_CHARS, clean_error_text, redact_secrets
    from loopscope.collectors.shape import args_fingerprint, canonical_json, input_shape
    from loopscope.collectors.sinks import CollectorConfigError, JsonlSink, MemorySink, Sink

# Each name is imported from its module on first use (PEP 562), so that a reader of logs that
# needs one helper (``loopscope.collectors.redact``) does not pay for the collector, its
# writer thread and OpenTelemetry: ``loopscope`` on small data stays instant (issue 14).
_HOMES = {
    "Collector": "core", "CollectorStats": "core", "PromptLoop": "core", "ToolCall": "core",
    "SCHEMA_VERSION": "records", "finish": "records", "format_ts": "records", "openai_stop_reason": "records",
    "MAX_ERROR_CHARS": "redact", "clean_error_text": "redact", "redact_secrets": "redact",
    "args_fingerprint": "shape", "canonical_json": "shape", "input_shape": "shape",
    "CollectorConfigError": "sinks", "JsonlSink": "sinks", "MemorySink": "sinks", "Sink": "sinks",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "MAX_ERROR_CHARS",
    "SCHEMA_VERSION",
    "Collector",
    "CollectorConfigError",
    "CollectorStats",
    "JsonlSink",
    "MemorySink",
    "PromptLoop",
    "Sink",
    "ToolCall",
    "args_fingerprint",
    "canonical_json",
    "clean_error_text",
    "finish",
    "format_ts",
    "input_shape",
    "openai_stop_reason",
    "redact_secrets",
]
