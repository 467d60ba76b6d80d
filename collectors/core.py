"""The collector API: :class:`Collector` -> :class:`PromptLoop` (one user prompt) -> :class:`ToolCall`.

Hot path design (a tool call): one small object, three clock reads, one copy of a per-prompt
record template with the per-call fields set, one deque append. Shape, fingerprint, timestamp
formatting and JSON serialisation happen off the host thread (:mod:`loopscope.collectors.records`,
:class:`~loopscope.collectors.sinks.JsonlSink`). Spans are created only when the prompt's span is
recording. :class:`PromptLoop` lives in :mod:`~loopscope.collectors.prompt`, :class:`ToolCall` in
:mod:`~loopscope.collectors.tool_call`; both are re-exported here.

Every public method swallows its own failures (see :mod:`loopscope.collectors.guard`); exceptions
from the host's code pass through unchanged unless the caller asked ``catch=True``.
"""

from __future__ import annotations

import atexit
import math
import os
import time
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Mapping

from loopscope.collectors import otel
from loopscope.collectors.guard import Guard
from loopscope.collectors.history import DEFAULT_MAX_CALLS, DEFAULT_MAX_CONVERSATIONS, History
from loopscope.collectors.prompt import PromptLoop, short_id
from loopscope.collectors.metrics import DEFAULT_MAX_VALUES, DEFAULT_SCRATCHPAD_TOOLS, LiveMetrics
from loopscope.collectors.records import finish
from loopscope.collectors.redact import MAX_ERROR_CHARS, clean_error_text
from loopscope.collectors.sinks import CollectorConfigError, JsonlSink, Sink
from loopscope.collectors.tool_call import ToolCall

__all__ = ["Collector", "CollectorStats", "PromptLoop", "ToolCall"]

DEFAULT_LOG = "loopscope.jsonl"


@dataclass(frozen=True)
class CollectorStats:
    """Counters of one collector (a snapshot).

    Attributes:
        emitted: Records handed to the sink.
        written: Records the sink wrote (JSONL lines, MemorySink entries).
        dropped: Records lost in the sink: queue full, sink closed, unserialisable, or a failed write.
        queued: Records waiting for the writer thread.
        in_flight: Records the writer thread has taken and not yet written (a hung write holds
            them here). At every moment ``emitted = written + dropped + queued + in_flight``.
        sink_errors: Sink failures (a raising sink, a failed write, an unserialisable record).
        internal_errors: Collector failures swallowed by the guard.
        history_dropped: History entries no longer kept (``history=True``): pushed out of a
            conversation holding ``max_history_calls``, or in an evicted conversation.
        history_evicted: Conversations evicted from the history (least recently used first,
            beyond ``max_history_conversations``).
        malformed_arguments: Tool calls given to ``loop.tool_call_from`` whose JSON-string
            arguments were not JSON (recorded with an empty shape and a null fingerprint).
        untracked_tool_calls: Calls of a ``@collector.tool`` function made outside any prompt
            (or with several prompts open in other threads): the function ran, nothing was recorded.
        metric_values_capped: Metric attribute values recorded as ``_OTHER`` because their
            attribute already had ``max_metric_values`` distinct values (docs/collector.md).
        metric_errors_unjudged: Errors a prompt could not keep pending for its recovery
            verdict (more than 4,096 distinct error steps after its latest success): counted
            as errors, classified as unrecovered.
    """

    emitted: int
    written: int
    dropped: int
    queued: int
    sink_errors: int
    internal_errors: int
    in_flight: int = 0
    history_dropped: int = 0
    history_evicted: int = 0
    malformed_arguments: int = 0
    untracked_tool_calls: int = 0
    metric_values_capped: int = 0
    metric_errors_unjudged: int = 0

    def __getitem__(self, key: str) -> int:
        """``stats["dropped"]`` works as well as ``stats.dropped``."""
        return asdict(self)[key]


def _callable(name: str, value: Any) -> None:
    if not callable(value):
        raise CollectorConfigError(f"{name} must be callable, got {value!r}")


def _number_clock(name: str, clock: Callable[[], float]) -> None:
    try:
        v = clock()
    except Exception as exc:
        raise CollectorConfigError(f"{name}() failed: {exc!r}") from exc
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise CollectorConfigError(f"{name}() must return seconds as a finite number, got {v!r}")


class Collector:
    """Records tool calls and loop exits of agent loops, as v1 records and OpenTelemetry spans.

    Args:
        sink: Where records go: a :class:`Sink` (or any object with ``emit(record)``), a path
            (shorthand for ``JsonlSink(path)``), or None for ``JsonlSink("loopscope.jsonl")``.
        tracer_provider: OpenTelemetry provider; None uses the global one (no-op without an SDK).
        logger_provider: OpenTelemetry logger provider for the ``loopscope.tool_call`` /
            ``loopscope.agent_exit`` log records; None uses the global one (no-op without an SDK).
        provider: Default ``gen_ai.provider.name`` (``anthropic``, ``openai``, ...) of every
            prompt's span; :meth:`prompt` can override it.
        redact: Redact secrets from error text (default True). Error text is always capped.
        wall_clock: Epoch seconds for record timestamps.
        perf_clock: Monotonic seconds for latencies and durations.
        new_id: Makes prompt ids when none is given (default: short ids such as ``p-3f9a1c07be``).
        strict: Re-raise internal errors (True), never (False), or ask the environment (None:
            ``PYTEST_CURRENT_TEST`` / ``LOOPSCOPE_STRICT``).
        max_error_chars: Cap on ``error_message`` (spec: 2,000).
        history: Keep a bounded per-conversation history of tool calls (tool, target, argument
            and result fingerprints, error line) on the host thread, for
            :meth:`ToolCall.recovery_context` and :meth:`PromptLoop.spinning`. Costs a shape and
            fingerprint per call on the host thread instead of the writer thread (see
            docs/collector.md). Default False.
        max_history_conversations: Conversations the history holds (least recently used evicted).
        max_history_calls: Calls it holds per conversation (oldest dropped).
        meter_provider: OpenTelemetry MeterProvider for the dashboard metrics
            (:mod:`loopscope.collectors.metrics`, docs/collector.md); None uses the global one,
            looked up at each prompt (no SDK: nothing is recorded, at no cost).
        metrics: False turns the metrics off even with a provider. Default True.
        scratchpad_tools: Tools that never recover an error (spec: ``think`` by default), as
            ``load --scratchpad-tool`` for the offline figures.
        metric_tags: Record tag keys to add to the metrics as ``loopscope.tag.<key>`` attributes
            (none by default: tags are often high-cardinality).
        max_metric_values: Distinct values kept per metric attribute (tool names, agents, exit
            reasons, error types, each tag key); later new values are recorded as ``_OTHER``.

    Raises:
        CollectorConfigError: At construction, for a bad argument or an unopenable log file.
    """

    def __init__(
        self,
        sink: Sink | str | os.PathLike[str] | None = None,
        *,
        tracer_provider: Any = None,
        logger_provider: Any = None,
        provider: str | None = None,
        redact: bool = True,
        wall_clock: Callable[[], float] = time.time,
        perf_clock: Callable[[], float] = time.perf_counter,
        new_id: Callable[[], str] = short_id,
        strict: bool | None = None,
        max_error_chars: int = MAX_ERROR_CHARS,
        history: bool = False,
        max_history_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        max_history_calls: int = DEFAULT_MAX_CALLS,
        meter_provider: Any = None,
        metrics: bool = True,
        scratchpad_tools: Iterable[str] = DEFAULT_SCRATCHPAD_TOOLS,
        metric_tags: Iterable[str] = (),
        max_metric_values: int = DEFAULT_MAX_VALUES,
    ) -> None:
        for name, fn in (("wall_clock", wall_clock), ("perf_clock", perf_clock), ("new_id", new_id)):
            _callable(name, fn)
        _number_clock("wall_clock", wall_clock)
        _number_clock("perf_clock", perf_clock)
        if isinstance(max_error_chars, bool) or not isinstance(max_error_chars, int) or max_error_chars < 32:
            raise CollectorConfigError(f"max_error_chars must be an int >= 32, got {max_error_chars!r}")
        for name, n in (("max_history_conversations", max_history_conversations), ("max_history_calls", max_history_calls)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise CollectorConfigError(f"{name} must be an int >= 1, got {n!r}")
        if isinstance(max_metric_values, bool) or not isinstance(max_metric_values, int) or max_metric_values < 1:
            raise CollectorConfigError(f"max_metric_values must be an int >= 1, got {max_metric_values!r}")
        try:
            if isinstance(scratchpad_tools, str) or isinstance(metric_tags, str):
                raise TypeError("a string, not a list")
            scratchpad_tools, metric_tags = tuple(scratchpad_tools), tuple(metric_tags)
            if not all(isinstance(n, str) for n in scratchpad_tools + metric_tags):
                raise TypeError("not all strings")
        except TypeError as exc:
            raise CollectorConfigError(
                f"scratchpad_tools and metric_tags must be lists of strings, got {scratchpad_tools!r}, {metric_tags!r}"
            ) from exc
        if meter_provider is not None and not callable(getattr(meter_provider, "get_meter", None)):
            raise CollectorConfigError(f"meter_provider must have get_meter(), got {meter_provider!r}")
        if sink is None:
            sink = JsonlSink(DEFAULT_LOG)
        elif isinstance(sink, (str, os.PathLike)):
            sink = JsonlSink(sink)
        submit = getattr(sink, "submit", None)
        if not callable(submit):
            emit = getattr(sink, "emit", None)
            if not callable(emit):
                raise CollectorConfigError(f"sink must have submit(record) or emit(record), got {sink!r}")
            submit = lambda rec, _emit=emit: _emit(finish(rec))  # noqa: E731
        self.sink = sink
        self._submit = submit
        self._guard = Guard(strict)
        self._tracer = otel.get_tracer(tracer_provider)
        try:
            self._logger = otel.get_logger(logger_provider)
        except Exception as exc:
            raise CollectorConfigError(f"logger_provider.get_logger() failed: {exc!r}") from exc
        self._provider = None if provider is None else str(provider)
        self._redact = bool(redact)
        self._limit = max_error_chars
        self._history = History(max_history_conversations, max_history_calls) if history else None
        self._metrics = LiveMetrics(
            meter_provider,
            enabled=metrics,
            scratchpad_tools=scratchpad_tools,
            tags=metric_tags,
            max_values=max_metric_values,
            seen_ids=(max_history_conversations, max_history_calls) if history else None,
        )
        self._wall = wall_clock
        self._perf = perf_clock
        self._new_id = new_id
        self._emitted = 0
        self._sink_errors = 0
        self._malformed_arguments = 0
        self._untracked_tool_calls = 0
        self._open_prompts: weakref.WeakSet[PromptLoop] = weakref.WeakSet()
        self._closed = False
        ref = weakref.ref(self)
        self._atexit = lambda: (lambda c: c.close() if c is not None else None)(ref())
        atexit.register(self._atexit)
        if hasattr(os, "register_at_fork"):
            # A forked child's sink starts its counters at zero (the parent writes what it
            # had queued): so does the child's emitted count.
            os.register_at_fork(after_in_child=lambda: (lambda c: c._after_fork() if c is not None else None)(ref()))

    def _after_fork(self) -> None:
        if isinstance(self.sink, JsonlSink):
            self._emitted = 0

    # -- internal helpers --

    def _clean(self, text: object) -> str:
        return clean_error_text(text, self._redact, self._limit)

    def _sink_failed(self, exc: BaseException) -> None:
        self._sink_errors += 1
        self._guard.internal_error("sink", exc)

    def _emit(self, rec: dict[str, Any]) -> None:
        try:
            self._submit(rec)
        except Exception as exc:  # noqa: BLE001 - a failing sink must not reach the host
            self._sink_failed(exc)
            return
        self._emitted += 1

    # -- public API --

    def prompt(
        self,
        conversation_id: str,
        prompt_id: str | None = None,
        agent: str | None = None,
        max_tool_calls: int | None = None,
        *,
        provider: str | None = None,
        model: str | None = None,
        tags: Mapping[str, str] | None = None,
        on_loop: str | None = None,
    ) -> PromptLoop:
        """Open one user prompt's loop (also a context manager; leaving it writes ``loop_exit``).

        Args:
            conversation_id: The user's thread.
            prompt_id: Unique within the conversation; generated with ``new_id`` when None.
            agent: Agent type (``"default"`` when None).
            max_tool_calls: The tool-call budget in force, if any.
            provider: ``gen_ai.provider.name`` for the span (``anthropic``, ``openai``, ...);
                default: the collector's ``provider``.
            model: ``gen_ai.request.model`` for the span.
            tags: String labels copied into every record of this prompt.
            on_loop: What :meth:`PromptLoop.spinning` does when it finds a loop: None (just
                return it), ``"warn"`` (also log a warning to the ``loopscope`` logger, once per
                loop) or ``"exit"`` (also write ``loop_exit`` with ``exit_reason: "error"`` and
                ``error_type: "loop_detected"``; the returned signal has ``stop=True``). Works
                without ``history=True`` (the loop counters are per prompt).

        Returns:
            The open :class:`PromptLoop`.
        """
        return PromptLoop(self, conversation_id, prompt_id, agent, max_tool_calls, provider, model, tags, on_loop)

    start_prompt = prompt

    def tool(self, fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
        """Decorator: record every call of a plain tool function (sync or async) made inside a prompt.

        ::

            @collector.tool
            def get_weather(city: str, date: str) -> str: ...

            with collector.prompt(conversation_id="c-1") as loop:
                ...
                TOOLS[block.name](**block.input, tool_call_id=block.id)

        The prompt is the one whose ``with`` / ``async with`` block the call runs in (in a plain
        worker thread: the collector's only open prompt); ``tool_call_id=`` is taken off the call
        and recorded (a random id without it); an exception is recorded and re-raised unchanged;
        the return value is recorded as ``result_fingerprint``. Outside any prompt the function
        just runs (``stats.untracked_tool_calls`` counts it). See :mod:`loopscope.collectors.decorate`.

        Args:
            fn: The function (``@collector.tool``), or None (``@collector.tool(name="search")``).
            name: The recorded tool name; default the function's ``__name__``.
        """
        from loopscope.collectors.decorate import instrument_tool

        if fn is None:
            return lambda f: instrument_tool(self, f, name)
        return instrument_tool(self, fn, name)

    def flush(self) -> None:
        """Ask the sink to write everything recorded so far."""
        try:
            self.sink.flush()
        except Exception as exc:  # noqa: BLE001
            self._guard.internal_error("flush", exc)

    def close(self) -> None:
        """Flush and close the sink (also run at interpreter exit). Open prompts stay open."""
        if self._closed:
            return
        self._closed = True
        try:
            atexit.unregister(self._atexit)
            self.sink.close()
        except Exception as exc:  # noqa: BLE001
            self._guard.internal_error("close", exc)

    def __enter__(self) -> Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stats(self) -> CollectorStats:
        """A snapshot of the counters (see :class:`CollectorStats`)."""
        try:
            s = self.sink.stats()
        except Exception:  # noqa: BLE001
            s = {}
        return CollectorStats(
            emitted=self._emitted,
            written=int(s.get("written", 0)),
            dropped=int(s.get("dropped", 0)),
            queued=int(s.get("queued", 0)),
            sink_errors=self._sink_errors + int(s.get("errors", 0)),
            internal_errors=self._guard.internal_errors,
            in_flight=int(s.get("in_flight", 0)),
            history_dropped=self._history.dropped if self._history is not None else 0,
            history_evicted=self._history.evicted if self._history is not None else 0,
            malformed_arguments=self._malformed_arguments,
            untracked_tool_calls=self._untracked_tool_calls,
            metric_values_capped=self._metrics.capped,
            metric_errors_unjudged=self._metrics.dropped,
        )
