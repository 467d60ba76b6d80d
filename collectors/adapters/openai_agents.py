"""OpenAI Agents SDK adapter: one call runs an agent and records its loop.

::

    from loopscope.collectors.adapters.openai_agents import LoopscopeAgents

    runner = LoopscopeAgents(collector)
    result = await runner.run(agent, "Where is my order A1?", conversation_id="c-42")  # was Runner.run(...)

:meth:`LoopscopeAgents.run` (and :meth:`~LoopscopeAgents.run_sync`) take ``Runner.run``'s keyword
arguments unchanged and open one prompt per run. What it records:

- every tool call the SDK runs, with its real ``tool_call_id`` (the model's ``call_id``), its
  JSON argument string (shape and fingerprint only), its step (the model call that asked for it:
  parallel calls share it) and its result's fingerprint;
- a tool whose exception the SDK turned into a string for the model (the default
  ``failure_error_function``: "An error occurred while running the tool. Please try again.", or
  yours) as ``is_error: true`` with that string as ``error_message`` (what the model saw);
  ``error_type`` is null (the SDK hands hooks the string, not the exception). A tool that raises
  with ``failure_error_function=None`` ends the run: it is recorded with its exception's class;
- the loop exit when the run ends: ``end_turn`` (the run returned its final output),
  ``budget_exceeded`` (``MaxTurnsExceeded``, raised, or turned into a final output by your
  ``error_handlers={"max_turns": ...}``), ``refusal`` (a ``model_refusal`` handler's output),
  ``error`` (any other exception, class and text).

**Why run hooks and not a trace processor.** ``agents.add_trace_processor`` would need no change
at the call site, but the SDK's function spans carry no tool-call id (``FunctionSpanData`` has
the name, input and output only), so replays and id collisions could not be told apart, and a
processor never sees the run's exception (``MaxTurnsExceeded`` is raised to the caller, not put
on a span). ``Runner.run(..., hooks=...)`` gets a ``ToolContext`` with ``tool_call_id`` and the
raw arguments at ``on_tool_start``, the model responses (step, stop reason, tokens) at
``on_llm_end``, and wrapping the call sees how the run ends. A handled tool error reaches
``on_tool_end`` as an ordinary string, so the adapter reads the error the SDK attaches to the
current function span (``agents.tracing.get_current_span().error``) and, when tracing is
disabled, compares the result with the default error text. Your own ``hooks=`` still run (after
the adapter's).

**Seed 000 and the loop signal.** With ``recovery_context=True`` the ``[Error Recovery Context]``
block of each failed call is appended to that call's tool output in the input of every later
model call (a ``RunConfig.call_model_input_filter``, chained after yours; the run's stored
history is not changed). With ``on_loop="exit"`` the same filter asks ``loop.spinning()`` before
each model call; when the prompt spins it has written ``loop_exit`` (``error`` /
``loop_detected``) and the run stops with :class:`LoopDetected`. ``on_loop="warn"`` logs instead.

:meth:`LoopscopeAgents.run_streamed` records streamed runs the same way (the exit is written when
the event stream ends or raises).

Not seen: hosted tools the model provider runs (web search, file search) and the exception
class of a handled tool error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import secrets
import time
from typing import TYPE_CHECKING, Any, Mapping

from loopscope.collectors.adapters._common import LoopDetected

if TYPE_CHECKING:
    from loopscope.collectors.core import Collector
    from loopscope.collectors.prompt import PromptLoop

__all__ = ["LoopDetected", "LoopscopeAgents"]

#: Response output items the SDK executes on the client: the model asked for a tool (stop reason ``tool_use``).
CLIENT_TOOL_ITEMS = frozenset(
    {"function_call", "computer_call", "local_shell_call", "shell_call", "apply_patch_call", "custom_tool_call"}
)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


class _Run:
    """One run's state: the prompt, the tool calls started and not ended, the recovery blocks."""

    def __init__(self, adapter: LoopscopeAgents, loop: PromptLoop) -> None:
        self.adapter = adapter
        self.loop = loop
        self.col = adapter.collector
        self.pending: dict[Any, tuple[float, int, str, str, Any]] = {}
        self.blocks: dict[str, str] = {}
        #: (error kind, error) of a run error one of the caller's ``error_handlers`` turned into a final output.
        self.handled: tuple[str, BaseException] | None = None

    def wrap_error_handlers(self, handlers: Any) -> Any:
        """The caller's ``error_handlers``, each noting when it turned an error into a final output."""

        def wrapped(kind: str, handler: Any) -> Any:
            def note(result: Any, data: Any) -> Any:
                if result is not None:
                    self.handled = (kind, getattr(data, "error", None) or Exception(kind))
                return result

            def run_handler(data: Any) -> Any:
                result = handler(data)
                if inspect.isawaitable(result):

                    async def awaited() -> Any:
                        return note(await result, data)

                    return awaited()
                return note(result, data)

            return run_handler

        return {kind: wrapped(kind, h) if callable(h) else h for kind, h in dict(handlers).items()}

    def guarded(self, where: str, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - never into the agent
            self.col._guard.internal_error(f"openai_agents.{where}", exc)

    def llm_end(self, response: Any) -> None:
        items = _get(response, "output") or []
        tool_use = any(_get(item, "type") in CLIENT_TOOL_ITEMS for item in items)
        usage = _get(response, "usage")
        self.loop.model_response(
            "tool_use" if tool_use else "end_turn",
            _get(usage, "input_tokens") if usage is not None else None,
            _get(usage, "output_tokens") if usage is not None else None,
        )

    def tool_start(self, context: Any, tool: Any) -> None:
        call_id = getattr(context, "tool_call_id", None)
        key = call_id if call_id is not None else id(context)
        name = str(getattr(context, "tool_name", None) or getattr(tool, "name", None) or type(tool).__name__)
        call_id = str(call_id) if call_id is not None else "call-" + secrets.token_hex(6)
        self.pending[key] = (time.perf_counter(), self.loop.step, call_id, name, getattr(context, "tool_arguments", None))

    def tool_end(self, context: Any, tool: Any, result: Any) -> None:
        call_id = getattr(context, "tool_call_id", None)
        started = self.pending.pop(call_id if call_id is not None else id(context), None)
        if started is None:  # no on_tool_start seen (should not happen): record it anyway
            self.tool_start(context, tool)
            started = self.pending.pop(call_id if call_id is not None else id(context))
        t0, step, call_id, name, arguments = started
        failed = self.adapter._handled_error(result)
        loop = self.loop
        loop.record_tool_call(
            tool_call_id=call_id,
            tool_name=name,
            arguments=arguments,
            step=step,
            is_error=failed,
            latency_ms=(time.perf_counter() - t0) * 1000.0,
            error_message=str(result) if failed else None,
            result=result,
        )
        if failed and self.adapter.recovery:
            block = loop.recovery_context()  # the call just recorded: no await since
            if block:
                self.blocks[call_id] = block

    def fail_pending(self, exc: BaseException) -> None:
        """Tool calls the run's exception interrupted: errors, with the tool's own exception."""
        cause = exc.__cause__ if isinstance(exc.__cause__, BaseException) else exc
        for t0, step, call_id, name, arguments in list(self.pending.values()):
            self.loop.record_tool_call(
                tool_call_id=call_id,
                tool_name=name,
                arguments=arguments,
                step=step,
                is_error=True,
                latency_ms=(time.perf_counter() - t0) * 1000.0,
                error_type=type(cause).__name__,
                error_message=str(cause) or type(cause).__name__,
            )
        self.pending.clear()

    def before_model_call(self, model_data: Any) -> Any:
        """The model input with the recovery blocks appended; raises LoopDetected when stopped."""
        loop = self.loop
        if loop.on_loop is not None or self.col._history is not None:
            spin = loop.spinning()
            if spin is not None and spin.stop:
                raise LoopDetected(f"{loop.conversation_id}/{loop.prompt_id}: {spin.describe()}")
        if not self.blocks:
            return model_data
        items = []
        for item in model_data.input:
            block = self.blocks.get(_get(item, "call_id")) if _get(item, "type") == "function_call_output" else None
            output = _get(item, "output")
            if block and isinstance(output, str) and isinstance(item, dict) and block not in output:
                item = {**item, "output": f"{output}\n\n{block}"}
            items.append(item)
        return dataclasses.replace(model_data, input=items)


_HOOKS_CLASS: Any = None


def _hooks_class() -> Any:
    """The ``agents.RunHooks`` subclass, built on first use (the SDK is imported only then)."""
    global _HOOKS_CLASS
    if _HOOKS_CLASS is not None:
        return _HOOKS_CLASS
    from agents import RunHooks

    class LoopscopeRunHooks(RunHooks):  # type: ignore[misc]
        """Records the run's model responses and tool calls, then calls the caller's hooks."""

        def __init__(self, run: _Run, inner: Any) -> None:
            self._run = run
            self._inner = inner

        async def _forward(self, name: str, *args: Any) -> None:
            if self._inner is not None:
                await getattr(self._inner, name)(*args)

        async def on_llm_start(self, context: Any, agent: Any, *args: Any) -> None:
            await self._forward("on_llm_start", context, agent, *args)

        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            self._run.guarded("on_llm_end", self._run.llm_end, response)
            await self._forward("on_llm_end", context, agent, response)

        async def on_agent_start(self, context: Any, agent: Any) -> None:
            await self._forward("on_agent_start", context, agent)

        async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
            await self._forward("on_agent_end", context, agent, output)

        async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
            await self._forward("on_handoff", context, from_agent, to_agent)

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            self._run.guarded("on_tool_start", self._run.tool_start, context, tool)
            await self._forward("on_tool_start", context, agent, tool)

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            self._run.guarded("on_tool_end", self._run.tool_end, context, tool, result)
            await self._forward("on_tool_end", context, agent, tool, result)

    _HOOKS_CLASS = LoopscopeRunHooks
    return _HOOKS_CLASS


class LoopscopeAgents:
    """Runs OpenAI Agents SDK agents (``Runner.run``) and records each run as one prompt.

    Args:
        collector: The :class:`~loopscope.collectors.Collector` to write to.
        recovery_context: Append the seed-000 block of each failed tool call to its output in
            later model calls (best with ``Collector(history=True)``: it then lists the previous
            attempts at the same operation and target in the conversation).
        on_loop: Default loop policy of each prompt (``"warn"``, ``"exit"`` or None); see
            :meth:`~loopscope.collectors.PromptLoop.spinning`.
        max_tool_calls: The tool-call budget recorded in ``loop_exit`` (the SDK's budget is
            ``max_turns``, in model calls: it is not a tool-call budget).
    """

    def __init__(
        self,
        collector: Collector,
        *,
        recovery_context: bool = False,
        on_loop: str | None = None,
        max_tool_calls: int | None = None,
    ) -> None:
        self.collector = collector
        self.recovery = bool(recovery_context)
        self.on_loop = on_loop
        self.max_tool_calls = max_tool_calls
        self._default_error_text: str | None = None

    def _handled_error(self, result: Any) -> bool:
        """Whether the SDK turned this tool call's exception into its result."""
        from agents.tracing import get_current_span

        span = get_current_span()
        if span is not None and getattr(getattr(span, "span_data", None), "type", None) == "function":
            if getattr(span, "error", None) is not None:
                return True
        if self._default_error_text is None:
            from agents.tool import default_tool_error_function

            self._default_error_text = str(default_tool_error_function(None, Exception("")))  # type: ignore[arg-type]
        return isinstance(result, str) and result == self._default_error_text

    def _conversation(self, conversation_id: str | None, kwargs: Mapping[str, Any]) -> str:
        if conversation_id:
            return str(conversation_id)
        config = kwargs.get("run_config")
        for candidate in (
            _get(config, "group_id") if config is not None else None,
            kwargs.get("conversation_id"),
            getattr(kwargs.get("session"), "session_id", None),
        ):
            if candidate:
                return str(candidate)
        return "c-" + secrets.token_hex(5)

    def _with_filter(self, run: _Run, run_config: Any) -> Any:
        from agents import RunConfig

        user_filter = _get(run_config, "call_model_input_filter") if run_config is not None else None

        async def loopscope_input_filter(data: Any) -> Any:
            model_data = data.model_data
            if user_filter is not None:
                model_data = user_filter(data)
                if inspect.isawaitable(model_data):
                    model_data = await model_data
            try:
                return run.before_model_call(model_data)
            except LoopDetected:
                raise
            except Exception as exc:  # noqa: BLE001 - the model call goes on without the block
                run.col._guard.internal_error("openai_agents.input_filter", exc)
                return model_data

        if run_config is None:
            return RunConfig(call_model_input_filter=loopscope_input_filter)
        if isinstance(run_config, dict):
            return {**run_config, "call_model_input_filter": loopscope_input_filter}
        return dataclasses.replace(run_config, call_model_input_filter=loopscope_input_filter)

    def _begin(
        self,
        starting_agent: Any,
        conversation_id: str | None,
        prompt_id: str | None,
        tags: Mapping[str, str] | None,
        on_loop: str | None,
        runner_kwargs: dict[str, Any],
        enter: bool,
    ) -> tuple[_Run | None, dict[str, Any]]:
        """Open the prompt and build ``Runner``'s keyword arguments; (None, the caller's) if that failed."""
        col = self.collector
        loop: PromptLoop | None = None
        try:
            conv = self._conversation(conversation_id, runner_kwargs)
            if "conversation_id" in runner_kwargs and runner_kwargs["conversation_id"] is None:
                runner_kwargs.pop("conversation_id")
            model = getattr(starting_agent, "model", None)
            loop = col.prompt(
                conv,
                prompt_id,
                agent=getattr(starting_agent, "name", None),
                max_tool_calls=self.max_tool_calls,
                provider="openai",
                model=model if isinstance(model, str) else None,
                tags=tags,
                on_loop=on_loop if on_loop is not None else self.on_loop,
            )
            if enter:
                loop.__enter__()
            run = _Run(self, loop)
            kwargs = dict(runner_kwargs)
            kwargs["hooks"] = _hooks_class()(run, runner_kwargs.get("hooks"))
            if self.recovery or loop.on_loop is not None or col._history is not None:
                kwargs["run_config"] = self._with_filter(run, runner_kwargs.get("run_config"))
            if runner_kwargs.get("error_handlers"):
                kwargs["error_handlers"] = run.wrap_error_handlers(runner_kwargs["error_handlers"])
            return run, kwargs
        except Exception as exc:  # noqa: BLE001 - run the agent uninstrumented
            col._guard.internal_error("openai_agents.run", exc)
            if loop is not None and enter:
                loop.__exit__(None, None, None)
            return None, runner_kwargs

    def _finish(self, run: _Run, exc: BaseException | None, entered: bool) -> None:
        """Write the loop exit: the run's exception, or the last model response's stop reason."""
        from agents import MaxTurnsExceeded

        loop = run.loop
        try:
            if exc is None and run.handled is not None:  # an error handler gave the final output
                kind, exc = run.handled
                if kind == "model_refusal" and not loop.closed:
                    loop.exit("refusal")
            if exc is not None:
                run.fail_pending(exc)
                if not loop.closed:
                    if isinstance(exc, MaxTurnsExceeded):
                        loop.exit("budget_exceeded")
                    else:
                        loop.exit("error", exc)
            elif not loop.closed:
                # The SDK produced a final output: a normal end, even when the last model response
                # asked for a tool (tool_use_behavior="stop_on_first_tool" ends on the tool's output).
                loop.exit("end_turn")
            if entered:
                loop.__exit__(None, None, None)
        except Exception as inner:  # noqa: BLE001
            self.collector._guard.internal_error("openai_agents.exit", inner)

    async def run(
        self,
        starting_agent: Any,
        input: Any,  # noqa: A002 - Runner.run's name
        *,
        conversation_id: str | None = None,
        prompt_id: str | None = None,
        tags: Mapping[str, str] | None = None,
        on_loop: str | None = None,
        **runner_kwargs: Any,
    ) -> Any:
        """``Runner.run(starting_agent, input, **runner_kwargs)``, recorded as one prompt.

        Args:
            conversation_id: The conversation; default the run config's ``group_id``, else
                ``Runner.run``'s ``conversation_id``, else the session's id, else a new id.
                (``Runner.run``'s own ``conversation_id`` is its server-side conversation: pass it
                in ``runner_kwargs`` as usual.)
            prompt_id: Default a short generated id.
            tags: String labels copied into every record of the prompt.
            on_loop: This prompt's loop policy (default: the adapter's).

        Returns:
            The SDK's ``RunResult``. Exceptions of the run are re-raised unchanged
            (:class:`LoopDetected` when ``on_loop="exit"`` stopped it).
        """
        from agents import Runner

        run, kwargs = self._begin(starting_agent, conversation_id, prompt_id, tags, on_loop, runner_kwargs, enter=True)
        if run is None:
            return await Runner.run(starting_agent, input, **kwargs)
        try:
            result = await Runner.run(starting_agent, input, **kwargs)
        except BaseException as exc:
            self._finish(run, exc, entered=True)
            raise
        self._finish(run, None, entered=True)
        return result

    def run_sync(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:  # noqa: A002
        """:meth:`run` from synchronous code (like ``Runner.run_sync``: not inside a running event loop)."""
        return asyncio.run(self.run(starting_agent, input, **kwargs))

    def run_streamed(
        self,
        starting_agent: Any,
        input: Any,  # noqa: A002 - Runner.run_streamed's name
        *,
        conversation_id: str | None = None,
        prompt_id: str | None = None,
        tags: Mapping[str, str] | None = None,
        on_loop: str | None = None,
        **runner_kwargs: Any,
    ) -> Any:
        """``Runner.run_streamed(...)``, recorded as one prompt (same arguments as :meth:`run`).

        The loop exit is written when ``result.stream_events()`` is exhausted or raises (the SDK
        raises ``MaxTurnsExceeded`` and the run's errors from it). A stream never consumed
        leaves the prompt open, like a process that died.
        """
        from agents import Runner

        run, kwargs = self._begin(starting_agent, conversation_id, prompt_id, tags, on_loop, runner_kwargs, enter=False)
        result = Runner.run_streamed(starting_agent, input, **kwargs)
        if run is None:
            return result
        adapter = self
        original = result.stream_events

        async def stream_events() -> Any:
            finished = False
            try:
                async for event in original():
                    yield event
            except GeneratorExit:  # the caller stopped reading: the exit has the last stop reason
                finished = True
                adapter._finish(run, None, entered=False)
                raise
            except BaseException as exc:
                finished = True
                adapter._finish(run, exc, entered=False)
                raise
            finally:
                if not finished:
                    adapter._finish(run, None, entered=False)

        try:
            result.stream_events = stream_events
        except Exception as exc:  # noqa: BLE001 - a result we cannot wrap: the run goes on unrecorded at its end
            self.collector._guard.internal_error("openai_agents.run_streamed", exc)
        return result
