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

from loopscope.collectors.core import Collector, CollectorStats, PromptLoop, ToolCall
from loopscope.collectors.records import SCHEMA_VERSION, finish, format_ts, openai_stop_reason
from loopscope.collectors.redact import MAX_ERROR_CHARS, clean_error_text, redact_secrets
from loopscope.collectors.shape import args_fingerprint, canonical_json, input_shape
from loopscope.collectors.sinks import CollectorConfigError, JsonlSink, MemorySink, Sink

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
