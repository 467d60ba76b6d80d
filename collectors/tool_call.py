"""One tool execution: :class:`ToolCall`, the context manager behind ``loop.tool_call(...)``.

The no-error, no-span exit is inlined (it is the hot path); everything else goes through
:meth:`PromptLoop._write_tool <loopscope.collectors.prompt.PromptLoop._write_tool>`.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

from loopscope.collectors import otel
from loopscope.collectors.history import DEFAULT_MAX_ATTEMPTS, CallEntry, recovery_block
from loopscope.collectors.shape import RawResult, args_fingerprint, parsed_arguments

if TYPE_CHECKING:
    from loopscope.collectors.prompt import PromptLoop


class _NoResult:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<loopscope: no result given>"


#: ``ToolCall`` / ``record_tool_call`` marker: the host did not hand over the result.
NO_RESULT: Any = _NoResult()

#: The ``with loop.tool_call(...)`` block the current code runs in, so that a ``@collector.tool``
#: function called inside it is not recorded twice. Set only once a decorated tool exists
#: (``TRACKING[0]``): the hot path of a plain loop pays one list lookup.
CURRENT_CALL: contextvars.ContextVar[ToolCall | None] = contextvars.ContextVar("loopscope_tool_call", default=None)
TRACKING = [False]


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
    #: Why the JSON-string arguments given to ``loop.tool_call_from`` are not JSON (else None).
    arguments_error: str | None = None
    _replayed = False
    _result: Any = NO_RESULT
    _entry: CallEntry | None = None
    _span: Any = None
    _token: Any = None
    _cv_token: Any = None

    def __init__(self, loop: PromptLoop, tool_call_id: str, tool_name: str, arguments: Any, step: int, catch: bool):
        self._loop = loop
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        # Copied now, before the tool runs: a tool that edits its arguments in place must not
        # change the recorded shape and fingerprint. (Shallow: the values are shared.)
        if type(arguments) is dict or type(arguments) is list:
            arguments = arguments.copy()
        self.arguments = arguments
        self.step = step
        self.catch = catch
        try:
            self._t0 = loop._perf()
        except Exception as exc:  # noqa: BLE001
            self._t0 = 0.0
            loop._col._guard.internal_error("tool_call.start", exc)

    def __enter__(self) -> ToolCall:
        loop = self._loop
        if TRACKING[0]:
            self._cv_token = CURRENT_CALL.set(self)
        if loop._ctx is not None:
            try:
                self._span = span = loop._start_tool_span(self.tool_call_id, self.tool_name, self.arguments, self.step)
                self._token = otel.attach(otel.set_span_in_context(span))
            except Exception as exc:  # noqa: BLE001
                loop._col._guard.internal_error("tool_call.enter", exc)
        return self

    async def __aenter__(self) -> ToolCall:
        """``async with loop.tool_call(...) as call:`` (the same as ``with``)."""
        return self.__enter__()

    async def __aexit__(self, et, ev, tb) -> bool:  # noqa: ANN001
        return self.__exit__(et, ev, tb)

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

    def returned(self, content: Any) -> None:
        """The tool result handed to the model (the text or JSON value of the tool_result).

        Only its digest is recorded, as ``result_fingerprint`` (SHA-256 of a string's UTF-8 text,
        else of its canonical JSON); the value never leaves the process. It lets the loop signal
        and the analyses tell a call that returned the same thing as before (a no-progress loop).
        """
        self._result = content
        self.result = content

    def recovery_context(self, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> str | None:
        """The seed-000 ``[Error Recovery Context]`` block for this failed call, or None.

        Call it after the ``with`` block. The block holds the operation (the tool and its target:
        the argument the hint catalog says identifies it, else the arguments' fingerprint), the
        error text as recorded (redacted, capped), the previous attempts at the same operation and
        target in this conversation (the latest ``max_attempts``, and how many earlier ones are
        left out; needs ``Collector(history=True)``) and the catalog's recovery suggestions.
        Inject it into the next model call, right after the error result. None when the call did
        not fail, or when building the block failed (counted, logged once): fall back to
        ``call.error_text``. Never raises.
        """
        loop = self._loop
        try:
            if not self.is_error:
                return None
            entry = self._entry
            hist = loop._col._history
            previous: list[CallEntry] | None = None
            if entry is None or hist is None:
                args = parsed_arguments(self.arguments)
                fp = args_fingerprint(args) if args is not None else None
                entry = CallEntry(loop.prompt_id, self.step, str(self.tool_name), args, fp, None, True, self.error_text)
            else:
                previous = hist.attempts(loop.conversation_id, entry)
            return recovery_block(entry, self.error_text, self.error_type, previous, max_attempts)
        except Exception as exc:  # noqa: BLE001
            loop._col._guard.internal_error("recovery_context", exc)
            return None

    def replayed(self, result: Any = None) -> None:
        """The idempotency layer short-circuited this call (already ran): ``replayed: true``."""
        self._replayed = True
        self.result = result

    def __exit__(self, et, ev, tb) -> bool:  # noqa: ANN001
        loop = self._loop
        if self._cv_token is not None:
            try:
                CURRENT_CALL.reset(self._cv_token)
            except ValueError:  # exited in another context than it was entered: leave it
                pass
            self._cv_token = None
        try:
            t1 = loop._perf()
        except Exception as exc:  # noqa: BLE001 - still write the record, with latency 0
            t1 = self._t0
            loop._col._guard.internal_error("tool_call.end", exc)
        try:
            if loop._plain and ev is None and not self.is_error:
                # The common case, inlined: no error, no span, no log record.
                self.latency_ms = latency = (t1 - self._t0) * 1000.0
                rec = loop._tmpl.copy()
                rec["ts"] = loop._wall()
                rec["tool_call_id"] = self.tool_call_id
                rec["tool_name"] = self.tool_name
                rec["step"] = self.step
                rec["input_shape"] = self.arguments  # shape and fingerprint: computed by the sink
                rec["latency_ms"] = latency
                if self.attempts > 1:
                    self.outcome = rec["outcome"] = "retried"
                    rec["attempts"] = self.attempts
                if self._replayed:
                    rec["replayed"] = True
                if self._result is not NO_RESULT:
                    rec["result_fingerprint"] = RawResult(self._result)  # digest: computed by the sink
                loop.tool_calls += 1
                try:
                    loop._submit(rec)
                except Exception as exc:  # noqa: BLE001
                    loop._col._sink_failed(exc)
                    return False
                loop._col._emitted += 1
                if loop._m is not None:
                    loop._m.call(self.tool_call_id, self.tool_name, self.step, False, self._replayed, latency)
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
            self._entry = loop._write_tool(
                self.tool_call_id,
                self.tool_name,
                self.step,
                self.arguments,
                self.outcome,
                self.is_error,
                self.attempts,
                latency,
                self.error_type,
                self.error_text,
                self._replayed,
                self._span,
                None,
                self._result,
            )
        except Exception as exc:  # noqa: BLE001
            loop._col._guard.internal_error("tool_call", exc)
        return self.catch and isinstance(ev, Exception)
