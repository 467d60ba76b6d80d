"""One user prompt's loop: :class:`PromptLoop` writes its ``tool_call`` and ``loop_exit`` records.

Tool-call records are copies of a per-prompt template (:meth:`PromptLoop._template`) with the
per-call fields set: about twice as fast as a dict literal, and the spec's field order lives in one
place. See :mod:`loopscope.collectors.core` for the overall design.
"""

from __future__ import annotations

import contextvars
import secrets
import time
from typing import TYPE_CHECKING, Any, Mapping

from loopscope.collectors import otel
from loopscope.collectors.blocks import tool_call_parts
from loopscope.collectors.guard import logger
from loopscope.collectors.history import (
    DEFAULT_MAX_ATTEMPTS,
    LOOP_DETECTED,
    ON_LOOP_POLICIES,
    CallEntry,
    PromptWatch,
    Spin,
    recovery_block,
)
from loopscope.collectors.metrics import UNKNOWN as NO_FP
from loopscope.collectors.records import COMMON_FIELDS, LOOP_EXIT, LOOP_EXIT_FIELDS, OUTCOMES, PENDING, TOOL_CALL
from loopscope.collectors.shape import (
    RawResult,
    args_fingerprint,
    parsed_arguments,
    result_fingerprint,
    shape_and_fingerprint,
)
from loopscope.collectors.tool_call import NO_RESULT, ToolCall

if TYPE_CHECKING:
    from loopscope.collectors.core import Collector

_FAILS = ("transient_fail", "permanent_fail")
# The loop_exit fields that make the agent_exit log record's body (no ids, no envelope).
_EXIT_BODY = ("conversation_id", "prompt_id", "agent") + LOOP_EXIT_FIELDS[len(COMMON_FIELDS) :]


def short_id() -> str:
    """A short readable prompt id: ``p-`` and 10 random hex digits (40 bits), e.g. ``p-3f9a1c07be``.

    Unique within a conversation in practice (a collision among 1,000 prompts of one conversation
    has odds below one in two million) and easy to read, type and grep.
    """
    return "p-" + secrets.token_hex(5)


#: The prompt whose ``with`` / ``async with`` block the current code runs in (for ``Collector.tool``).
CURRENT_PROMPT: contextvars.ContextVar[PromptLoop | None] = contextvars.ContextVar("loopscope_prompt", default=None)


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
        "_col",
        "conversation_id",
        "prompt_id",
        "agent",
        "max_tool_calls",
        "tags",
        "steps",
        "tool_calls",
        "tool_errors",
        "_started",
        "_last_stop",
        "input_tokens",
        "output_tokens",
        "_t0",
        "_span",
        "_ctx",
        "_token",
        "closed",
        "exit_reason",
        "_step",
        "_perf",
        "_wall",
        "_submit",
        "_tmpl",
        "_logs",
        "_plain",
        "_provider",
        "_span_named",
        "_watch",
        "on_loop",
        "_last_error",
        "_cv_token",
        "_m",
        "__weakref__",
    )

    def __init__(
        self,
        col: Collector,
        conversation_id: str,
        prompt_id: str | None,
        agent: str | None,
        max_tool_calls: int | None,
        provider: str | None,
        model: str | None,
        tags: Mapping[str, str] | None,
        on_loop: str | None = None,
    ) -> None:
        self._col = col
        self._watch: PromptWatch | None = None
        self.on_loop: str | None = None
        self._last_error: tuple[Any, ...] | None = None
        self._cv_token: Any = None
        self._perf, self._wall, self._submit = col._perf, col._wall, col._submit
        self.steps = self.tool_calls = self.tool_errors = self._started = self._step = 0
        self._last_stop = self.input_tokens = self.output_tokens = None
        self._span = self._ctx = self._token = self._logs = None
        self._plain = True
        self._span_named = bool(agent)
        self._provider = provider = provider or col._provider
        self.closed = False
        self.exit_reason: str | None = None
        self.conversation_id = self.prompt_id = self.agent = ""
        self.max_tool_calls = self.tags = None
        self._t0 = 0.0
        self._tmpl: dict[str, Any] = {}
        guard = col._guard
        try:
            self.conversation_id = str(conversation_id)
            self.agent = str(agent) if agent else "default"
            self.prompt_id = str(prompt_id) if prompt_id is not None else str(col._new_id())
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt", exc)
            self.prompt_id = self.prompt_id or short_id()
            self.agent = self.agent or "default"
        try:
            self._t0 = col._perf()
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.clock", exc)
        try:
            if tags:
                self.tags = {str(k): str(v) for k, v in tags.items()}
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.tags", exc)
        # Built before anything else can fail, so tool calls always get complete records.
        self._tmpl = self._template()
        self._m = None
        try:  # the dashboard metrics (collectors/metrics.py): None unless a MeterProvider is set
            self._m = col._metrics.prompt(self.conversation_id, self.agent, self.tags)
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.metrics", exc)
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
                otel.CONVERSATION_ID: self.conversation_id,
                otel.PROMPT_ID: self.prompt_id,
            }
            if agent:  # no invented name: the record says "default", the span stays unnamed
                attrs[otel.AGENT_NAME] = self.agent
            if provider:
                attrs[otel.PROVIDER] = str(provider)
            if model:
                attrs[otel.REQUEST_MODEL] = str(model)
            if self.max_tool_calls is not None:
                attrs[otel.MAX_TOOL_CALLS] = self.max_tool_calls
            if self.tags:
                for k, v in self.tags.items():
                    attrs[otel.TAG_PREFIX + k] = v
            name = f"invoke_agent {self.agent}" if agent else "invoke_agent"
            span = col._tracer.start_span(name, kind=otel.INTERNAL, attributes=attrs)
            if span.is_recording():
                self._span = span
                self._ctx = otel.set_span_in_context(span)
                if not provider:
                    guard.once(
                        "no-provider",
                        30,
                        "loopscope: no provider given: spans lack gen_ai.provider.name (required by the GenAI "
                        "conventions); pass provider= to Collector() or prompt()",
                    )
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.span", exc)
        try:
            # Checked once per prompt: with no Logs SDK the proxy logger says no, and tool calls
            # keep the plain (no span, no log) path.
            if otel.logs_enabled(col._logger):
                self._logs = col._logger
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.logs", exc)
        try:
            if on_loop is not None and on_loop not in ON_LOOP_POLICIES:
                raise ValueError(f"on_loop must be one of {ON_LOOP_POLICIES} or None, got {on_loop!r}")
            self.on_loop = on_loop
            if col._history is not None or on_loop is not None:
                self._watch = PromptWatch()
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.on_loop", exc)
        self._plain = self._ctx is None and self._logs is None and self._watch is None
        try:
            col._open_prompts.add(self)
        except Exception as exc:  # noqa: BLE001
            guard.internal_error("prompt.open", exc)

    # -- context manager --

    def __enter__(self) -> PromptLoop:
        try:
            self._cv_token = CURRENT_PROMPT.set(self)
            if self._ctx is not None:
                self._token = otel.attach(self._ctx)
        except Exception as exc:  # noqa: BLE001
            self._col._guard.internal_error("prompt.enter", exc)
        return self

    def __exit__(self, et, ev, tb) -> bool:  # noqa: ANN001
        try:
            if self._token is not None:
                token, self._token = self._token, None
                otel.detach(token)
            if self._cv_token is not None:
                cv_token, self._cv_token = self._cv_token, None
                CURRENT_PROMPT.reset(cv_token)
        except Exception as exc:  # noqa: BLE001
            self._col._guard.internal_error("prompt.exit", exc)
        if not self.closed:
            if ev is not None:
                self.exit("error", ev)
            else:
                self.close()
        return False

    async def __aenter__(self) -> PromptLoop:
        """``async with collector.prompt(...) as loop:`` (the same as ``with``; nothing awaits)."""
        return self.__enter__()

    async def __aexit__(self, et, ev, tb) -> bool:  # noqa: ANN001
        return self.__exit__(et, ev, tb)

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
        try:
            return m is not None and self._started + upcoming > m
        except Exception as exc:  # noqa: BLE001 - e.g. a non-numeric `upcoming`
            self._col._guard.internal_error("over_budget", exc)
            return False

    def spinning(self) -> Spin | None:
        """Before the next model call: the loop the latest step's tool calls completed or extended.

        A *retry loop* (spec: three or more failing calls of this prompt with the same tool and
        argument fingerprint; a null fingerprint compares the error message), a *no-progress loop*
        (three or more successful calls with the same tool, fingerprint and result fingerprint;
        needs ``call.returned(content)``) or a *cycle* (four or more consecutive calls alternating
        between two different calls, A-B-A-B). Only loops a call of the latest step (since the
        last :meth:`model_response`) belongs to are returned: a loop the model has left is not.

        With ``on_loop="warn"`` a warning is logged once per loop; with ``on_loop="exit"``
        ``loop_exit`` is written (``exit_reason: "error"``, ``error_type: "loop_detected"``) and the
        returned :class:`Spin` has ``stop=True``: leave the loop. Needs ``Collector(history=True)``
        or an ``on_loop`` policy; otherwise None (logged once). Never raises.
        """
        col = self._col
        try:
            watch = self._watch
            if watch is None:
                col._guard.once(
                    "spinning-off",
                    30,
                    "loopscope: spinning() needs Collector(history=True) or prompt(on_loop=...); returning None",
                )
                return None
            spin = watch.current(self._step)
            if spin is None or spin.stop:
                return spin
            policy = self.on_loop
            if policy == "warn":
                key = (spin.kind, spin.tool_name, spin.args_fingerprint, spin.other_tool_name, spin.other_args_fingerprint)
                if key not in watch.warned:
                    watch.warned.add(key)
                    logger.warning(
                        "loopscope: prompt %s of conversation %s: %s", self.prompt_id, self.conversation_id, spin.describe()
                    )
            elif policy == "exit":
                if not self.closed:
                    self.exit("error", spin.describe(), error_type=LOOP_DETECTED)
                spin = watch.stopped(spin)
            return spin
        except Exception as exc:  # noqa: BLE001
            col._guard.internal_error("spinning", exc)
            return None

    def recovery_context(self, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> str | None:
        """The ``[Error Recovery Context]`` block of this prompt's latest failed tool call, or None.

        For calls recorded with :meth:`record_tool_call` (framework hooks), where there is no
        :class:`ToolCall` to ask; otherwise the same as :meth:`ToolCall.recovery_context`. Never raises.
        """
        col = self._col
        try:
            last = self._last_error
            if last is None:
                return None
            tool_name, args, step, message, error_type = last[:5]
            entry = last[5] if len(last) > 5 else None
            hist = col._history
            previous = None
            if entry is None or hist is None:
                parsed = parsed_arguments(args)
                fp = args_fingerprint(parsed) if parsed is not None else None
                entry = CallEntry(self.prompt_id, step, str(tool_name), parsed, fp, None, True, message)
            else:
                previous = hist.attempts(self.conversation_id, entry)
            return recovery_block(entry, message, error_type, previous, max_attempts)
        except Exception as exc:  # noqa: BLE001
            col._guard.internal_error("prompt.recovery_context", exc)
            return None

    def loops(self) -> list[Spin]:
        """Every loop found in this prompt so far (its latest state), in the order found. Never raises."""
        try:
            watch = self._watch
            return [] if watch is None else list(watch.seen.values())
        except Exception as exc:  # noqa: BLE001
            self._col._guard.internal_error("loops", exc)
            return []

    def tool_call(
        self, tool_call_id: str, tool_name: str, arguments: Any = None, *, step: int | None = None, catch: bool = False
    ) -> ToolCall:
        """Time and record one tool execution (a context manager).

        Args:
            tool_call_id: ``tool_use.id`` / ``tool_call.id``.
            tool_name: The tool.
            arguments: The arguments (dict, or a JSON string); only their shape and fingerprint
                are recorded. A shallow copy is taken when the call starts.
            step: Model call index; default :attr:`step` (parallel calls share it).
            catch: Swallow an exception from the block (it becomes an error result; see
                :attr:`ToolCall.error_text`). Default False: re-raise it unchanged.

        Returns:
            The :class:`ToolCall`.
        """
        self._started += 1
        return ToolCall(self, tool_call_id, tool_name, arguments, self._step if step is None else step, catch)

    def tool_call_from(self, block: Any, *, step: int | None = None, catch: bool = False) -> ToolCall:
        """:meth:`tool_call` for a provider's tool-call object, passed as it is.

        Accepts an Anthropic ``tool_use`` block, an OpenAI Chat Completions ``tool_calls`` entry
        or an OpenAI Responses ``function_call`` item, as an SDK object or a dict. JSON-string
        arguments are parsed: the returned call's :attr:`~ToolCall.arguments` is the parsed
        object, ready for ``tool(**call.arguments)``. Arguments that are not valid JSON never
        raise: ``call.arguments`` stays the raw string, ``call.arguments_error`` says why (hand
        it to the model with ``call.fail(...)``), the record gets an empty ``input_shape`` and a
        null ``args_fingerprint``, and ``collector.stats.malformed_arguments`` counts it.

        Args:
            block: The tool-call object.
            step: Model call index; default :attr:`step`.
            catch: As in :meth:`tool_call`.

        Returns:
            The :class:`ToolCall` (a context manager, ``with`` or ``async with``).
        """
        col = self._col
        try:
            parts = tool_call_parts(block)
        except Exception as exc:  # noqa: BLE001 - a host bug, but the loop must go on
            col._guard.internal_error("tool_call_from", exc)
            get = block.get if isinstance(block, dict) else lambda k: getattr(block, k, None)
            return self.tool_call(str(get("id") or get("call_id") or ""), str(get("name") or "unknown"), None, step=step, catch=catch)
        call = self.tool_call(parts.tool_call_id, parts.tool_name, parts.arguments, step=step, catch=catch)
        if parts.arguments_error is not None:
            call.arguments_error = parts.arguments_error
            col._malformed_arguments += 1
            col._guard.once(
                "malformed-arguments",
                30,
                "loopscope: tool call %s (%s): %s; recorded with an empty input_shape and a null args_fingerprint",
                parts.tool_call_id,
                parts.tool_name,
                parts.arguments_error,
            )
        return call

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
        result: Any = NO_RESULT,
    ) -> None:
        """Record a tool call timed elsewhere (frameworks with their own hooks).

        ``outcome`` defaults from ``is_error`` (``permanent_fail`` / ``ok``, ``retried`` when
        ``attempts > 1``) and ``is_error`` from ``outcome``. ``result``: the tool result the
        model saw, recorded as ``result_fingerprint`` only (see :meth:`ToolCall.returned`).
        """
        col = self._col
        try:
            self._started += 1
            if outcome is None:
                outcome = "permanent_fail" if is_error else ("retried" if attempts > 1 else "ok")
            elif outcome not in OUTCOMES:
                col._guard.once("outcome", 30, "loopscope: unknown outcome %r; use one of %s", outcome, OUTCOMES)
                outcome = "permanent_fail" if is_error else "ok"
            if is_error is None:
                is_error = outcome in _FAILS
            if type(arguments) is dict or type(arguments) is list:
                arguments = arguments.copy()
            msg = None if error_message is None else col._clean(error_message)
            now_ns = time.time_ns()
            span = None
            if self._ctx is not None:
                span = self._start_tool_span(tool_call_id, tool_name, arguments, step, now_ns - int(latency_ms * 1e6))
            self._write_tool(
                tool_call_id,
                tool_name,
                self.step if step is None else step,
                arguments,
                outcome,
                bool(is_error),
                max(1, int(attempts)),
                float(latency_ms),
                error_type,
                msg,
                bool(replayed),
                span,
                now_ns,
                result,
            )
        except Exception as exc:  # noqa: BLE001
            col._guard.internal_error("record_tool_call", exc)

    def _start_tool_span(self, tool_call_id, tool_name, arguments, step, start_ns=None):  # noqa: ANN001, ANN202
        attrs = self._tool_attrs(tool_call_id, tool_name)
        attrs[otel.PROMPT_ID] = self.prompt_id
        attrs[otel.TOOL_STEP] = self.step if step is None else step
        shape = otel.shape_attribute(arguments)
        if shape is not None:
            attrs[otel.TOOL_INPUT_SHAPE] = shape
        return self._col._tracer.start_span(
            f"execute_tool {tool_name}", context=self._ctx, kind=otel.INTERNAL, attributes=attrs, start_time=start_ns
        )

    def _tool_attrs(self, tool_call_id: Any, tool_name: Any) -> dict[str, Any]:
        """The attributes a tool call's span and its log record both begin with (OTel GenAI names)."""
        return {
            otel.OPERATION: "execute_tool",
            otel.TOOL_NAME: str(tool_name),
            otel.TOOL_CALL_ID: str(tool_call_id),
            otel.TOOL_TYPE: "function",
            otel.CONVERSATION_ID: self.conversation_id,
        }

    def _head(self, kind: str, ts: Any, trace_id: int | None, span_id: int | None) -> dict[str, Any]:
        """The fields every record of this prompt begins with, in the spec's order (``tags`` only when set)."""
        rec: dict[str, Any] = {
            "v": 1,
            "kind": kind,
            "ts": ts,
            "conversation_id": self.conversation_id,
            "prompt_id": self.prompt_id,
            "agent": self.agent,
            "trace_id": trace_id,
            "span_id": span_id,
        }
        if self.tags is not None:
            rec["tags"] = self.tags
        return rec

    def _template(self) -> dict[str, Any]:
        """The tool_call record of this prompt with every per-call field at its default.

        Copying it and setting the few per-call fields is about twice as fast as a dict literal,
        and keeps the spec's field order (``tags`` included) in one place.
        """
        rec = self._head(TOOL_CALL, None, None, None)
        rec.update(
            tool_call_id=None,
            tool_name=None,
            step=0,
            input_shape=None,
            args_fingerprint=PENDING,
            outcome="ok",
            is_error=False,
            attempts=1,
            latency_ms=None,
            error_type=None,
            error_message=None,
            replayed=False,
        )
        return rec

    def _write_tool(
        self,
        tool_call_id,
        tool_name,
        step,
        args,
        outcome,
        is_error,
        attempts,
        latency_ms,
        error_type,
        message,  # noqa: ANN001
        replayed,
        span,
        end_ns=None,  # noqa: ANN001
        result=NO_RESULT,  # noqa: ANN001
    ) -> CallEntry | None:
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
        self.tool_calls += 1
        if is_error:
            self.tool_errors += 1
        rec["ts"] = ts = self._wall()
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
        watch = self._watch
        entry = None
        fp = NO_FP
        if is_error:
            self._last_error = (tool_name, args, step, message, error_type)
        if watch is None:
            if result is not NO_RESULT:
                rec["result_fingerprint"] = RawResult(result)  # digest computed by the sink
            self._col._emit(rec)
        else:
            # History on: shape and fingerprints now, on the host thread (the sink then skips them).
            try:
                rec["input_shape"], fp = shape_and_fingerprint(args)
                rec["args_fingerprint"] = fp
                rec["latency_ms"] = round(latency_ms, 3)
                rfp = None
                if result is not NO_RESULT:
                    rec["result_fingerprint"] = rfp = result_fingerprint(result)
                entry = CallEntry(self.prompt_id, step, str(tool_name), parsed_arguments(args), fp, rfp, is_error, message)
            except Exception as exc:  # noqa: BLE001
                self._col._guard.internal_error("tool_call.history", exc)
            self._col._emit(rec)
            if entry is not None:
                if is_error:
                    self._last_error = (tool_name, args, step, message, error_type, entry)
                try:
                    hist = self._col._history
                    if hist is not None:
                        hist.add(self.conversation_id, entry)
                    watch.observe(entry, message, step, replayed)
                except Exception as exc:  # noqa: BLE001
                    self._col._guard.internal_error("tool_call.watch", exc)
        if self._m is not None:
            try:
                self._m.call(tool_call_id, tool_name, step, is_error, replayed, latency_ms, error_type, fp)
            except Exception as exc:  # noqa: BLE001
                self._col._guard.internal_error("tool_call.metrics", exc)
        if self._logs is not None:
            try:
                body = {
                    "conversation_id": self.conversation_id,
                    "prompt_id": self.prompt_id,
                    "agent": self.agent,
                    "tool_call_id": str(tool_call_id),
                    "tool_name": str(tool_name),
                    "step": step,
                    "input_shape": otel.shape_map(args),
                    "outcome": outcome,
                    "is_error": is_error,
                    "attempts": attempts,
                    "latency_ms": round(latency_ms, 3),
                    "error_type": error_type,
                    "error_message": message,
                    "replayed": replayed,
                }
                attrs = self._tool_attrs(tool_call_id, tool_name)
                if is_error:
                    attrs[otel.ERROR_TYPE] = error_type or "_OTHER"
                ctx = otel.set_span_in_context(span) if span is not None else self._ctx
                otel.emit_log(self._logs, otel.TOOL_CALL_EVENT, otel.tool_severity(outcome), ts, ctx, attrs, body)
            except Exception as exc:  # noqa: BLE001
                self._col._guard.internal_error("tool_call.log", exc)
        return entry

    def exit(self, reason: str, error: BaseException | str | None = None, *, error_type: str | None = None) -> None:
        """Write ``loop_exit`` now with an explicit reason; later exits/closes are no-ops.

        Args:
            reason: ``end_turn``, ``budget_exceeded``, ``error``, or a provider stop reason as-is.
            error: For ``error`` exits: the exception (type and message recorded) or a message.
            error_type: Overrides the recorded error type (e.g. a stable error code).
        """
        col = self._col
        if self.closed:
            col._guard.once(
                "exit-twice", 30, "loopscope: prompt %s already exited; ignoring exit(%r)", self.prompt_id, reason
            )
            return
        try:
            self.closed = True
            col._open_prompts.discard(self)
            reason = str(reason)
            self.exit_reason = reason
            message = None
            if isinstance(error, BaseException):
                error_type = error_type or type(error).__name__
                message = col._clean(str(error) or type(error).__name__)
            elif error is not None:
                message = col._clean(error)
            try:
                duration_ms = (col._perf() - self._t0) * 1000.0
            except Exception as exc:  # noqa: BLE001 - still write the record
                duration_ms = 0.0
                col._guard.internal_error("exit.clock", exc)
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
            ts = col._wall()
            rec = self._head(LOOP_EXIT, ts, tid, sid)
            rec.update(
                exit_reason=reason,
                steps=self.steps,
                tool_calls=self.tool_calls,
                tool_errors=self.tool_errors,
                max_tool_calls=self.max_tool_calls,
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
                duration_ms=duration_ms,
                error_type=error_type if (error_type or message) else None,
                error_message=message,
            )
            body = {k: rec[k] for k in _EXIT_BODY}  # before the sink completes rec in place
            col._emit(rec)
        except Exception as exc:  # noqa: BLE001
            col._guard.internal_error("exit", exc)
            return
        if self._m is not None:
            try:
                self._m.exit(reason, self.tool_calls)
            except Exception as exc:  # noqa: BLE001
                col._guard.internal_error("exit.metrics", exc)
        if self._logs is not None:
            try:
                attrs = {otel.OPERATION: "invoke_agent", otel.CONVERSATION_ID: self.conversation_id}
                if self._span_named:
                    attrs[otel.AGENT_NAME] = self.agent
                if self._provider:
                    attrs[otel.PROVIDER] = str(self._provider)
                if reason == "error":
                    attrs[otel.ERROR_TYPE] = error_type or "_OTHER"
                body["duration_ms"] = round(duration_ms, 3)
                otel.emit_log(self._logs, otel.AGENT_EXIT_EVENT, otel.exit_severity(reason), ts, self._ctx, attrs, body)
            except Exception as exc:  # noqa: BLE001
                col._guard.internal_error("exit.log", exc)

    def close(self) -> None:
        """Write ``loop_exit`` with the last stop reason (``unknown`` if no model call was reported).

        No-op when the loop already exited. A prompt never closed stays *open* (process died).
        """
        if not self.closed:
            self.exit(self._last_stop or "unknown")
