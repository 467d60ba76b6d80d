"""pydantic-ai adapter: a capability that writes loopscope's v1 records for every agent run.

One line::

    from loopscope.collectors.adapters.pydantic_ai import loopscope_capability

    agent = Agent(model, tools=[...], capabilities=[loopscope_capability(collector)])

One run (``agent.run(...)``) is one prompt: ``conversation_id`` is pydantic-ai's own (pass
``conversation_id=`` to ``agent.run`` to continue a thread; a fixed one can be given here),
``prompt_id`` is the run id. What the capability's hooks see (pydantic-ai >= 2.x capabilities):

- ``wrap_model_request``: one model call (a step), its finish reason and tokens;
- ``wrap_tool_execute``: one tool execution, timed. A tool that raises ``ModelRetry`` or
  ``ToolFailed`` handed the model an error: ``is_error`` (``error_type`` ``ModelRetry`` /
  ``ToolFailed``, the text the model read). Any other exception is an error too; it propagates
  (the run usually fails with it);
- ``wrap_tool_validate``: arguments that failed validation (the model gets a retry prompt and the
  tool never runs) are an error call (``error_type`` ``ValidationError``);
- ``wrap_run``: the exit: ``end_turn`` (or the last finish reason), ``budget_exceeded`` for
  ``UsageLimitExceeded``, ``error`` for any other exception.

**Seed 000 and the loop signal** (off by default:
``loopscope_capability(collector, recovery_context=True, on_loop="exit")``). With
``recovery_context=True`` the ``[Error Recovery Context]`` block of each failed call is appended to
that call's failed tool return (``outcome`` ``retried`` or ``failed``: the ``ModelRetry`` /
validation retry prompt, the ``ToolFailed`` result) in every later model request of the run; the
run's message history is not changed (``wrap_model_request`` edits its own copy). With
``on_loop="exit"`` the same hook asks ``loop.spinning()`` before each model request; when the
prompt spins ``loop_exit`` is written (``error`` / ``loop_detected``) and the run ends with
:class:`LoopDetected`. ``"warn"`` logs instead.

Deferred calls (``CallDeferred``, ``ApprovalRequired``) are not recorded until they run. Never
raises into the agent: the recording goes through the collector, whose entry points swallow
their own failures, and each hook guards its own bookkeeping.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any, Mapping

from loopscope.collectors.adapters._common import LoopDetected

if TYPE_CHECKING:
    from loopscope.collectors.core import Collector

__all__ = ["LoopDetected", "loopscope_capability"]

# pydantic-ai's ModelResponse.finish_reason -> the spec's stop reasons (Anthropic's words).
FINISH_REASONS = {"tool_call": "tool_use", "stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"}
# Tool returns the model reads as a failed call (pydantic-ai's ToolReturnPart.outcome).
_FAILED_OUTCOMES = frozenset({"retried", "failed"})
# Control flow, not failures: the call is deferred or its result supplied by a hook.
_CONTROL = frozenset({"CallDeferred", "ApprovalRequired", "SkipToolExecution", "SkipToolValidation"})

_CLASS: Any = None


def _error_of(exc: BaseException) -> tuple[str, str]:
    """(error_type, the text the model reads) of a tool failure."""
    name = type(exc).__name__
    errors = getattr(exc, "errors", None)
    if name == "ValidationError" and callable(errors):
        # What was wrong with each argument, without its value (pydantic-ai hands the model the
        # same errors, values included, as JSON).
        try:
            found = errors(include_url=False, include_context=False, include_input=False)
            text = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in found)
            if text:
                return name, text
        except Exception:  # noqa: BLE001 - fall back to str(exc)
            pass
    part = getattr(exc, "tool_retry", None) or getattr(exc, "tool_failed", None)
    text = None
    if part is not None:
        try:
            text = part.model_response_str(wrap_if_error=False)
        except Exception:  # noqa: BLE001 - older part types
            content = getattr(part, "content", None)
            text = content if isinstance(content, str) else None
    if name == "ToolRetryError":
        name = "ModelRetry"
    elif name == "ToolFailedError":
        name = "ToolFailed"
    return name, text if text is not None else (str(exc) or name)


def _capability_class() -> Any:
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    from pydantic_ai.capabilities import AbstractCapability

    class LoopscopeCapability(AbstractCapability[Any]):
        """Records each run as a loopscope prompt. Build with :func:`loopscope_capability`."""

        def __init__(self, collector: Collector, options: Mapping[str, Any]) -> None:
            self.collector = collector
            self.options = dict(options)
            self.loop: Any = None  # the run's PromptLoop (on the per-run copy)
            self.blocks: dict[str, str] = {}  # tool_call_id -> recovery block (per run)

        def __repr__(self) -> str:
            return f"LoopscopeCapability({self.options!r})"

        async def for_run(self, ctx: Any) -> Any:
            try:
                return type(self)(self.collector, self.options)  # per-run state on a fresh copy
            except Exception as exc:  # noqa: BLE001
                self._internal("for_run", exc)
                return self

        def _internal(self, where: str, exc: BaseException) -> None:
            self.collector._guard.internal_error(f"pydantic_ai.{where}", exc)

        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            try:
                opts = self.options
                model = getattr(ctx, "model", None)  # the run's model: its provider and name for the spans
                self.loop = self.collector.prompt(
                    conversation_id=opts.get("conversation_id") or getattr(ctx, "conversation_id", None) or "pydantic-ai",
                    prompt_id=getattr(ctx, "run_id", None),
                    agent=opts.get("agent"),
                    max_tool_calls=opts.get("max_tool_calls"),
                    provider=opts.get("provider") or getattr(model, "system", None),
                    model=opts.get("model") or getattr(model, "model_name", None),
                    tags=opts.get("tags"),
                    on_loop=opts.get("on_loop"),
                )
            except Exception as exc:  # noqa: BLE001
                self._internal("wrap_run", exc)
            try:
                result = await handler()
            except BaseException as exc:
                try:
                    loop = self.loop
                    if loop is not None and not loop.closed:
                        reason = "budget_exceeded" if type(exc).__name__ == "UsageLimitExceeded" else "error"
                        loop.exit(reason, exc if reason == "error" else None)
                except Exception as inner:  # noqa: BLE001
                    self._internal("wrap_run.exit", inner)
                raise
            try:
                loop = self.loop
                if loop is not None and not loop.closed:
                    loop.close()  # the last finish reason (end_turn)
            except Exception as exc:  # noqa: BLE001
                self._internal("wrap_run.close", exc)
            return result

        def _with_blocks(self, request_context: Any) -> None:
            """Append each failed call's block to its failed tool return, in this request only."""
            messages = request_context.messages
            for i, message in enumerate(messages):
                parts = getattr(message, "parts", None)
                if not parts or not any(getattr(p, "tool_call_id", None) in self.blocks for p in parts):
                    continue
                new_parts = []
                for part in parts:
                    block = self.blocks.get(getattr(part, "tool_call_id", None))  # type: ignore[arg-type]
                    failed = getattr(part, "outcome", None) in _FAILED_OUTCOMES or type(part).__name__ == "RetryPromptPart"
                    if block and failed:
                        content = part.content
                        if not isinstance(content, str):  # validation errors: the text the model would read
                            content = part.model_response_str(wrap_if_error=False)
                        if block not in content:
                            part = dataclasses.replace(part, content=f"{content}\n\n{block}")
                    new_parts.append(part)
                messages[i] = dataclasses.replace(message, parts=new_parts)  # a copy: the history keeps its own

        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            loop = self.loop
            if loop is not None:
                if loop.on_loop is not None:
                    spin = loop.spinning()  # never raises; "exit" writes loop_exit
                    if spin is not None and spin.stop:
                        raise LoopDetected(f"{loop.conversation_id}/{loop.prompt_id}: {spin.describe()}")
                if self.blocks:
                    try:
                        self._with_blocks(request_context)
                    except Exception as exc:  # noqa: BLE001 - the request goes as the framework built it
                        self._internal("recovery_context", exc)
            response = await handler(request_context)
            loop = self.loop
            if loop is not None:
                try:
                    reason = getattr(response, "finish_reason", None)
                    if reason is None:
                        calls = any(type(p).__name__ == "ToolCallPart" for p in getattr(response, "parts", ()))
                        reason = "tool_use" if calls else "end_turn"
                    usage = getattr(response, "usage", None)
                    loop.model_response(
                        FINISH_REASONS.get(reason, reason),
                        getattr(usage, "input_tokens", None),
                        getattr(usage, "output_tokens", None),
                    )
                except Exception as exc:  # noqa: BLE001
                    self._internal("wrap_model_request", exc)
            return response

        def _record(self, call: Any, t0: float, error: BaseException | None, result: Any = None) -> None:
            loop = self.loop
            if loop is None:
                return
            try:
                kwargs: dict[str, Any] = {}
                if error is None:
                    kwargs["result"] = result
                else:
                    kwargs["error_type"], kwargs["error_message"] = _error_of(error)
                loop.record_tool_call(
                    tool_call_id=str(call.tool_call_id),
                    tool_name=str(call.tool_name),
                    arguments=call.args,
                    is_error=error is not None,
                    latency_ms=(time.perf_counter() - t0) * 1000.0,
                    **kwargs,
                )
                if error is not None and self.options.get("recovery_context"):
                    block = loop.recovery_context()  # the call just recorded (no await since); None if it failed
                    if block:
                        self.blocks[str(call.tool_call_id)] = block
            except Exception as exc:  # noqa: BLE001
                self._internal("record", exc)

        async def wrap_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await handler(args)
            except Exception as exc:
                if type(exc).__name__ not in _CONTROL:
                    self._record(call, t0, exc)  # the tool will not run: the model gets a retry prompt
                raise

        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            t0 = time.perf_counter()
            try:
                result = await handler(args)
            except Exception as exc:
                if type(exc).__name__ not in _CONTROL:
                    self._record(call, t0, exc)
                raise
            self._record(call, t0, None, result)
            return result

    _CLASS = LoopscopeCapability
    return _CLASS


def loopscope_capability(collector: Collector, **options: Any) -> Any:
    """``Agent(..., capabilities=[loopscope_capability(collector)])``: the one line.

    Args:
        collector: Where the records go.
        **options: ``conversation_id`` (default: pydantic-ai's conversation id), ``agent``,
            ``max_tool_calls``, ``provider`` and ``model`` of the spans (default: the run model's
            ``system`` and ``model_name``), ``tags``, ``recovery_context`` (True: the seed-000
            block appended to each failed call's tool return the model reads), ``on_loop``
            (``"warn"``, ``"exit"``: the run ends with :class:`LoopDetected`, or None).

    Imports ``pydantic_ai`` (``ImportError`` when it is not installed: configuration time).
    """
    return _capability_class()(collector, options)
