"""loopscope collector: per tool call and per loop exit, a v1 record and an OpenTelemetry span.

Imports only the standard library and ``opentelemetry-api``.
"""
