"""The collector API: :class:`Collector` -> :class:`PromptLoop` (one user prompt) -> :class:`ToolCall`.

Hot path design (a tool call): one small object, three clock reads, one copy of a per-prompt
record template with the per-call fields set, one deque append. Shape, fingerprint, timestamp formatting and JSON serialisation happen off the host thread
(:mod:`loopscope.collectors.records`, :class:`~loopscope.collectors.sinks.JsonlSink`). Spans are
created only when the prompt's span is recording.

Every public method swallows its own failures (see :mod:`loopscope.collectors.guard`); exceptions
from the host's code pass through unchanged unless the caller asked ``catch=True``.
"""

from __future__ import annotations

import atexit
import math
import os
import time
import uuid
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping

from loopscope.collectors import otel
from loopscope.collectors.guard import Guard
from loopscope.collectors.records import LOOP_EXIT, OUTCOMES, PENDING, TOOL_CALL, finish
from loopscope.collectors.redact import MAX_ERROR_CHARS, clean_error_text
from loopscope.collectors.sinks import CollectorConfigError, JsonlSink, Sink

DEFAULT_LOG = "loopscope.jsonl"
_FAILS = ("transient_fail", "permanent_fail")


def _uuid_hex() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class CollectorStats:
    """Counters of one collector (a snapshot).

    Attributes:
        emitted: Records handed to the sink.
        written: Records the sink wrote (JSONL lines, MemorySink entries).
        dropped: Records lost in the sink: queue full, sink closed, or a failed write.
        queued: Records waiting for the writer thread.
        sink_errors: Sink failures (a raising sink, a failed write, an unserialisable record).
        internal_errors: Collector failures swallowed by the guard.
    """

    emitted: int
    written: int
    dropped: int
    queued: int
    sink_errors: int
    internal_errors: int

    def __getitem__(self, key: str) -> int:
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
        redact: Redact secrets from error text (default True). Error text is always capped.
        wall_clock: Epoch seconds for record timestamps.
        perf_clock: Monotonic seconds for latencies and durations.
        new_id: Makes prompt ids when none is given.
        strict: Re-raise internal errors (True), never (False), or ask the environment (None:
            ``PYTEST_CURRENT_TEST`` / ``LOOPSCOPE_STRICT``).
        max_error_chars: Cap on ``error_message`` (spec: 2,000).

    Raises:
        CollectorConfigError: At construction, for a bad argument or an unopenable log file.
    """

    def __init__(
        self,
        sink: Sink | str | os.PathLike[str] | None = None,
        *,
        tracer_provider: Any = None,
        redact: bool = True,
        wall_clock: Callable[[], float] = time.time,
        perf_clock: Callable[[], float] = time.perf_counter,
        new_id: Callable[[], str] = _uuid_hex,
        strict: bool | None = None,
        max_error_chars: int = MAX_ERROR_CHARS,
    ) -> None:
        for name, fn in (("wall_clock", wall_clock), ("perf_clock", perf_clock), ("new_id", new_id)):
            _callable(name, fn)
        _number_clock("wall_clock", wall_clock)
        _number_clock("perf_clock", perf_clock)
        if isinstance(max_error_chars, bool) or not isinstance(max_error_chars, int) or max_error_chars < 32:
            raise CollectorConfigError(f"max_error_chars must be an int >= 32, got {max_error_chars!r}")
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
        self._redact = bool(redact)
        self._limit = max_error_chars
        self._wall = wall_clock
        self._perf = perf_clock
        self._new_id = new_id
        self._emitted = 0
        self._sink_errors = 0
        self._closed = False
        ref = weakref.ref(self)
        self._atexit = lambda: (lambda c: c.close() if c is not None else None)(ref())
        atexit.register(self._atexit)

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
    ) -> PromptLoop:
        """Open one user prompt's loop (also a context manager; leaving it writes ``loop_exit``).

        Args:
            conversation_id: The user's thread.
            prompt_id: Unique within the conversation; generated with ``new_id`` when None.
            agent: Agent type (``"default"`` when None).
            max_tool_calls: The tool-call budget in force, if any.
            provider: ``gen_ai.provider.name`` for the span (``anthropic``, ``openai``, ...).
            model: ``gen_ai.request.model`` for the span.
            tags: String labels copied into every record of this prompt.

        Returns:
            The open :class:`PromptLoop`.
        """
        return PromptLoop(self, conversation_id, prompt_id, agent, max_tool_calls, provider, model, tags)

    start_prompt = prompt

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
        )


class PromptLoop:
    """One user prompt's agent loop. Create with :meth:`Collector.prompt`.

    Attributes:
        conversation_id, prompt_id, agent: Identity of the prompt.
        steps: Model calls reported so far (:meth:`model_response`).
        tool_calls, tool_errors: Tool-call records written so far, and how many had ``is_error``.
        max_tool_calls: The budget, or None.
        closed: Whether ``loop_exit`` has been written.
    """

    __slots__ = (
        "_col", "conversation_id", "prompt_id", "agent", "max_tool_calls", "tags", "steps", "tool_calls",
        "tool_errors", "_started", "_last_stop", "input_tokens", "output_tokens", "_t0", "_span", "_ctx",
        "_token", "closed", "exit_reason", "_step", "_perf", "_wall", "_submit", "_tmpl", "__weakref__",
    )

    def __init__(self, col, conversation_id, prompt_id, agent, max_tool_calls, provider, model, tags) -> None:  # noqa: ANN001
        self._col = col
        self._perf, self._wall, self._submit = col._perf, col._wall, col._submit
        self.steps = self.tool_calls = self.tool_errors = self._started = self._step = 0
        self._last_stop = self.input_tokens = self.output_tokens = None
        self._span = self._ctx = self._token = None
        self.closed = False
        self.exit_reason: str | None = None
        self.conversation_id = str(conversation_id)
        self.prompt_id = self.agent = ""
        self.max_tool_calls = self.tags = None
        self._t0 = 0.0
        self._tmpl: dict[str, Any] = {}
        guard = col._guard
        try:
            self._t0 = col._perf()
            self.agent = str(agent) if agent else "default"
            self.prompt_id = str(prompt_id) if prompt_id is not None else str(col._new_id())
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt", exc)
            self.prompt_id = self.prompt_id or _uuid_hex()
            self.agent = self.agent or "default"
        try:
            if tags:
                self.tags = {str(k): str(v) for k, v in tags.items()}
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.tags", exc)
        # Built before anything else can fail, so tool calls always get complete records.
        self._tmpl = self._template()
        try:
            if max_tool_calls is not None:
                if isinstance(max_tool_calls, bool) or not isinstance(max_tool_calls, int) or max_tool_calls < 0:
                    raise ValueError(f"max_tool_calls must be an int >= 0 or None, got {max_tool_calls!r}")
                self.max_tool_calls = max_tool_calls
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.max_tool_calls", exc)
        try:
            attrs: dict[str, Any] = {
                otel.OPERATION: "invoke_agent",
                otel.AGENT_NAME: self.agent,
                otel.CONVERSATION_ID: self.conversation_id,
                otel.PROMPT_ID: self.prompt_id,
            }
            if provider:
                attrs[otel.PROVIDER] = str(provider)
            if model:
                attrs[otel.REQUEST_MODEL] = str(model)
            if self.max_tool_calls is not None:
                attrs[otel.MAX_TOOL_CALLS] = self.max_tool_calls
            if self.tags:
                for k, v in self.tags.items():
                    attrs[otel.TAG_PREFIX + k] = v
            name = "invoke_agent" if agent is None else f"invoke_agent {self.agent}"
            span = col._tracer.start_span(name, kind=otel.INTERNAL, attributes=attrs)
            if span.is_recording():
                self._span = span
                self._ctx = otel.set_span_in_context(span)
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.span", exc)

    # -- context manager --

    def __enter__(self) -> PromptLoop:
        if self._ctx is not None:
            try:
                self._token = otel.attach(self._ctx)
            except Exception as exc:  # noqa: BLE001
                self._col._guard.internal_error("prompt.enter", exc)
        return self

    def __exit__(self, et, ev, tb) -> bool:  # noqa: ANN001
        try:
            if self._token is not None:
                token, self._token = self._token, None
                otel.detach(token)
        except Exception as exc:  # noqa: BLE001
            self._col._guard.internal_error("prompt.exit", exc)
        if not self.closed:
            if ev is not None:
                self.exit("error", ev)
            else:
                self.close()
        return False

    # -- the loop --

    @property
    def step(self) -> int:
        """The 0-based index of the latest model call (0 before the first)."""
        return self._step

    def model_response(
        self, stop_reason: str | None = None, input_tokens: int | None = None, output_tokens: int | None = None
    ) -> None:
        """Report one model call: the step advances, tokens add up, the stop reason is kept.

        Args:
            stop_reason: The provider's stop reason, raw (``tool_use``, ``end_turn``, ...). For
                OpenAI, map ``finish_reason`` with :func:`openai_stop_reason`.
            input_tokens: Input tokens of this call.
            output_tokens: Output tokens of this call.
        """
        try:
            self.steps += 1
            self._step = self.steps - 1
            if stop_reason is not None:
                self._last_stop = str(stop_reason)
            if input_tokens is not None:
                self.input_tokens = (self.input_tokens or 0) + int(input_tokens)
            if output_tokens is not None:
                self.output_tokens = (self.output_tokens or 0) + int(output_tokens)
        except Exception as exc:  # noqa: BLE001
            self._col._guard.internal_error("model_response", exc)

    def over_budget(self, upcoming: int = 1) -> bool:
        """True when ``upcoming`` more tool calls would exceed ``max_tool_calls``.

        With the default ``upcoming=1``: tool calls started so far >= ``max_tool_calls``.
        Always False without a budget.
        """
        m = self.max_tool_calls
        return m is not None and self._started + upcoming > m

    def tool_call(
        self, tool_call_id: str, tool_name: str, arguments: Any = None, *, step: int | None = None, catch: bool = False
    ) -> ToolCall:
        """Time and record one tool execution (a context manager).

        Args:
            tool_call_id: ``tool_use.id`` / ``tool_call.id``.
            tool_name: The tool.
            arguments: The arguments (dict, or a JSON string); only their shape and fingerprint
                are recorded. A shallow copy is taken when the call ends.
            step: Model call index; default :attr:`step` (parallel calls share it).
            catch: Swallow an exception from the block (it becomes an error result; see
                :attr:`ToolCall.error_text`). Default False: re-raise it unchanged.

        Returns:
            The :class:`ToolCall`.
        """
        self._started += 1
        return ToolCall(self, tool_call_id, tool_name, arguments, self._step if step is None else step, catch)

    def record_tool_call(
        self,
        *,
        tool_call_id: str,
        tool_name: str,
        arguments: Any = None,
        step: int | None = None,
        outcome: str | None = None,
        is_error: bool | None = None,
        attempts: int = 1,
        latency_ms: float = 0.0,
        error_type: str | None = None,
        error_message: str | None = None,
        replayed: bool = False,
    ) -> None:
        """Record a tool call timed elsewhere (frameworks with their own hooks).

        ``outcome`` defaults from ``is_error`` (``permanent_fail`` / ``ok``, ``retried`` when
        ``attempts > 1``) and ``is_error`` from ``outcome``.
        """
        col = self._col
        try:
            self._started += 1
            if outcome is None:
                outcome = ("permanent_fail" if is_error else ("retried" if attempts > 1 else "ok"))
            elif outcome not in OUTCOMES:
                col._guard.once("outcome", 30, "loopscope: unknown outcome %r; use one of %s", outcome, OUTCOMES)
                outcome = "permanent_fail" if is_error else "ok"
            if is_error is None:
                is_error = outcome in _FAILS
            msg = None if error_message is None else col._clean(error_message)
            now_ns = time.time_ns()
            span = None
            if self._ctx is not None:
                span = self._start_tool_span(tool_call_id, tool_name, arguments, step, now_ns - int(latency_ms * 1e6))
            self._write_tool(
                tool_call_id, tool_name, self.step if step is None else step, arguments, outcome, bool(is_error),
                max(1, int(attempts)), float(latency_ms), error_type, msg, bool(replayed), span, now_ns,
            )
        except Exception as exc:  # noqa: BLE001
            col._guard.internal_error("record_tool_call", exc)

    def _start_tool_span(self, tool_call_id, tool_name, arguments, step, start_ns=None):  # noqa: ANN001, ANN202
        attrs = {
            otel.OPERATION: "execute_tool",
            otel.TOOL_NAME: str(tool_name),
            otel.TOOL_CALL_ID: str(tool_call_id),
            otel.TOOL_TYPE: "function",
            otel.CONVERSATION_ID: self.conversation_id,
            otel.PROMPT_ID: self.prompt_id,
            otel.TOOL_STEP: self.step if step is None else step,
            otel.TOOL_INPUT_SHAPE: otel.shape_attribute(arguments),
        }
        return self._col._tracer.start_span(
            f"execute_tool {tool_name}", context=self._ctx, kind=otel.INTERNAL, attributes=attrs, start_time=start_ns
        )

    def _template(self) -> dict[str, Any]:
        """The tool_call record of this prompt with every per-call field at its default.

        Copying it and setting the few per-call fields is about twice as fast as a dict literal,
        and keeps the spec's field order (``tags`` included) in one place.
        """
        rec: dict[str, Any] = {
            "v": 1, "kind": TOOL_CALL, "ts": None, "conversation_id": self.conversation_id,
            "prompt_id": self.prompt_id, "agent": self.agent, "trace_id": None, "span_id": None,
        }
        if self.tags is not None:
            rec["tags"] = self.tags
        rec.update(
            tool_call_id=None, tool_name=None, step=0, input_shape=None, args_fingerprint=PENDING, outcome="ok",
            is_error=False, attempts=1, latency_ms=None, error_type=None, error_message=None, replayed=False,
        )
        return rec

    def _write_tool(
        self, tool_call_id, tool_name, step, args, outcome, is_error, attempts, latency_ms, error_type, message,  # noqa: ANN001
        replayed, span, end_ns=None,  # noqa: ANN001
    ) -> None:
        rec = self._tmpl.copy()
        if span is not None:
            attrs = {otel.TOOL_OUTCOME: outcome, otel.TOOL_ATTEMPTS: attempts}
            if replayed:
                attrs[otel.TOOL_REPLAYED] = True
            if is_error:
                attrs[otel.ERROR_TYPE] = error_type or "_OTHER"
            span.set_attributes(attrs)
            if is_error:
                # Only errors the model saw: a call retried to success keeps status UNSET.
                span.set_status(otel.error_status(message))
            ctx = span.get_span_context()
            rec["trace_id"] = ctx.trace_id
            rec["span_id"] = ctx.span_id
            span.end(end_time=end_ns)
        if type(args) is dict or type(args) is list:
            args = args.copy()
        self.tool_calls += 1
        if is_error:
            self.tool_errors += 1
        rec["ts"] = self._wall()
        rec["tool_call_id"] = tool_call_id
        rec["tool_name"] = tool_name
        rec["step"] = step
        rec["input_shape"] = args
        rec["outcome"] = outcome
        rec["is_error"] = is_error
        rec["attempts"] = attempts
        rec["latency_ms"] = latency_ms
        rec["error_type"] = error_type
        rec["error_message"] = message
        rec["replayed"] = replayed
        self._col._emit(rec)

    def exit(
        self, reason: str, error: BaseException | str | None = None, *, error_type: str | None = None
    ) -> None:
        """Write ``loop_exit`` now with an explicit reason; later exits/closes are no-ops.

        Args:
            reason: ``end_turn``, ``budget_exceeded``, ``error``, or a provider stop reason as-is.
            error: For ``error`` exits: the exception (type and message recorded) or a message.
            error_type: Overrides the recorded error type (e.g. a stable error code).
        """
        col = self._col
        if self.closed:
            col._guard.once("exit-twice", 30, "loopscope: prompt %s already exited; ignoring exit(%r)", self.prompt_id, reason)
            return
        try:
            self.closed = True
            reason = str(reason)
            self.exit_reason = reason
            message = None
            if isinstance(error, BaseException):
                error_type = error_type or type(error).__name__
                message = col._clean(str(error) or type(error).__name__)
            elif error is not None:
                message = col._clean(error)
            duration_ms = (col._perf() - self._t0) * 1000.0
            tid = sid = None
            span = self._span
            if span is not None:
                attrs: dict[str, Any] = {
                    otel.EXIT_REASON: reason,
                    otel.TURNS: self.steps,
                    otel.AGENT_TOOL_CALLS: self.tool_calls,
                    otel.AGENT_TOOL_FAILURES: self.tool_errors,
                }
                if self._last_stop is not None:
                    attrs[otel.FINISH_REASONS] = [self._last_stop]
                if self.input_tokens is not None:
                    attrs[otel.INPUT_TOKENS] = self.input_tokens
                if self.output_tokens is not None:
                    attrs[otel.OUTPUT_TOKENS] = self.output_tokens
                if reason == "error":
                    attrs[otel.ERROR_TYPE] = error_type or "_OTHER"
                span.set_attributes(attrs)
                if reason == "error":
                    span.set_status(otel.error_status(message))
                ctx = span.get_span_context()
                tid, sid = ctx.trace_id, ctx.span_id
                span.end()
            rec: dict[str, Any] = {
                "v": 1, "kind": LOOP_EXIT, "ts": col._wall(), "conversation_id": self.conversation_id,
                "prompt_id": self.prompt_id, "agent": self.agent, "trace_id": tid, "span_id": sid,
            }
            if self.tags is not None:
                rec["tags"] = self.tags
            rec.update(
                exit_reason=reason, steps=self.steps, tool_calls=self.tool_calls, tool_errors=self.tool_errors,
                max_tool_calls=self.max_tool_calls, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                duration_ms=duration_ms, error_type=error_type if (error_type or message) else None,
                error_message=message,
            )
            col._emit(rec)
        except Exception as exc:  # noqa: BLE001
            col._guard.internal_error("exit", exc)

    def close(self) -> None:
        """Write ``loop_exit`` with the last stop reason (``unknown`` if no model call was reported).

        No-op when the loop already exited. A prompt never closed stays *open* (process died).
        """
        if not self.closed:
            self.exit(self._last_stop or "unknown")


class ToolCall:
    """One tool execution inside ``with loop.tool_call(...) as call:``.

    Attributes:
        tool_call_id, tool_name, step: Identity of the call.
        outcome: ``ok``, ``retried``, ``transient_fail`` or ``permanent_fail`` (final after the block).
        is_error: Whether the result handed to the model is an error.
        attempts: Executions inside the tool, retries included.
        error_type, error_text: The error class/code and the (redacted, capped) text for the model.
        latency_ms: Wall time of the call, set when the block ends.
        result: Whatever the caller stored (e.g. the replayed result).
    """

    # Class-level defaults: the hot path sets only the per-call fields (no __slots__ on purpose:
    # fewer stores per call is what matters here).
    outcome = "ok"
    is_error = False
    attempts = 1
    error_type: str | None = None
    error_text: str | None = None
    latency_ms: float | None = None
    result: Any = None
    _replayed = False
    _span: Any = None
    _token: Any = None

    def __init__(self, loop: PromptLoop, tool_call_id: str, tool_name: str, arguments: Any, step: int, catch: bool):
        self._loop = loop
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.arguments = arguments
        self.step = step
        self.catch = catch
        self._t0 = loop._perf()

    def __enter__(self) -> ToolCall:
        loop = self._loop
        if loop._ctx is not None:
            try:
                self._span = span = loop._start_tool_span(self.tool_call_id, self.tool_name, self.arguments, self.step)
                self._token = otel.attach(otel.set_span_in_context(span))
            except Exception as exc:  # noqa: BLE001
                loop._col._guard.internal_error("tool_call.enter", exc)
        return self

    def attempt_failed(self, error: BaseException | str | None = None) -> None:
        """A transient attempt failed and the tool will retry it (``attempts`` += 1)."""
        self.attempts += 1

    def fail(self, message: object, error_type: str | None = None, transient: bool = False) -> None:
        """Hand an error result to the model without raising.

        Args:
            message: The error text the model sees (recorded redacted and capped).
            error_type: Error class or stable code.
            transient: The tool's retries of a transient error were exhausted (``transient_fail``);
                default ``permanent_fail``.
        """
        try:
            self.is_error = True
            self.outcome = "transient_fail" if transient else "permanent_fail"
            self.error_type = error_type
            self.error_text = self._loop._col._clean(message)
        except Exception as exc:  # noqa: BLE001
            self._loop._col._guard.internal_error("tool_call.fail", exc)

    def replayed(self, result: Any = None) -> None:
        """The idempotency layer short-circuited this call (already ran): ``replayed: true``."""
        self._replayed = True
        self.result = result

    def __exit__(self, et, ev, tb) -> bool:  # noqa: ANN001
        loop = self._loop
        t1 = loop._perf()
        try:
            if ev is None and not self.is_error and self._span is None:
                # The common case, inlined: no error, no span.
                self.latency_ms = latency = (t1 - self._t0) * 1000.0
                args = self.arguments
                if type(args) is dict or type(args) is list:
                    args = args.copy()
                rec = loop._tmpl.copy()
                rec["ts"] = loop._wall()
                rec["tool_call_id"] = self.tool_call_id
                rec["tool_name"] = self.tool_name
                rec["step"] = self.step
                rec["input_shape"] = args  # the shape and fingerprint are computed by the sink
                rec["latency_ms"] = latency
                if self.attempts > 1:
                    self.outcome = rec["outcome"] = "retried"
                    rec["attempts"] = self.attempts
                if self._replayed:
                    rec["replayed"] = True
                loop.tool_calls += 1
                try:
                    loop._submit(rec)
                except Exception as exc:  # noqa: BLE001
                    loop._col._sink_failed(exc)
                    return False
                loop._col._emitted += 1
                return False
            if self._token is not None:
                otel.detach(self._token)
                self._token = None
            col = loop._col
            if ev is not None:
                self.is_error = True
                self.outcome = "permanent_fail"
                self.error_type = et.__name__
                self.error_text = col._clean(str(ev) or et.__name__)
            elif not self.is_error:
                self.outcome = "retried" if self.attempts > 1 else "ok"
            self.latency_ms = latency = (t1 - self._t0) * 1000.0
            loop._write_tool(
                self.tool_call_id, self.tool_name, self.step, self.arguments, self.outcome, self.is_error,
                self.attempts, latency, self.error_type, self.error_text, self._replayed, self._span,
            )
        except Exception as exc:  # noqa: BLE001
            loop._col._guard.internal_error("tool_call", exc)
        return self.catch and isinstance(ev, Exception)
