"""LangChain / LangGraph adapter: a callback handler records each graph (or chain) run as one prompt.

::

    from loopscope.collectors.adapters.langchain import LoopscopeCallbackHandler

    handler = LoopscopeCallbackHandler(collector)
    graph.invoke({"messages": [...]}, {"configurable": {"thread_id": "c-42"}, "callbacks": [handler]})

One handler serves any number of runs, threads and conversations (each top-level run is a
prompt; its state is dropped when it ends). What it records:

- the conversation: the run's ``thread_id`` (LangGraph copies ``configurable`` into the callback
  metadata), else ``conversation_id=`` given to the handler, else a new id per run;
- the step: the index of the chat-model call in the run (``on_llm_end``: tool calls asked for ->
  ``tool_use``; else the provider's finish reason, mapped; tokens from ``usage_metadata``). Model
  calls made inside a tool are not steps of the agent loop and are not counted;
- every tool run (``on_tool_start``) with its ``tool_call_id`` (passed by the tool node; else
  the returned ``ToolMessage``'s), its arguments (shape and fingerprint) and its step;
- a tool error: ``on_tool_error`` (the tool raised: LangGraph's ``ToolNode`` with
  ``handle_tool_errors`` then hands the model an error message; the record has the exception's
  class and text) and ``on_tool_end`` with a ``ToolMessage(status="error")`` (a tool with
  ``handle_tool_error=True``: the record has the message content, what the model saw) --
  the second is the case observers recorded as a success (langfuse/langfuse#12867);
- the exit when the top-level run ends: the last model response's stop reason (``end_turn``),
  ``budget_exceeded`` for ``GraphRecursionError`` (the ``recursion_limit``) and for a run that
  ends right after the model asked for tools without running them (``create_react_agent``
  answers "Sorry, need more steps" instead of raising when the limit is near), ``error`` for any
  other exception. A run paused by an interrupt (``__interrupt__`` in its output) keeps the
  model's ``tool_use``: the resumed run is another prompt.

**Seed 000 and the loop signal.** LangGraph owns the model call, so the block goes in through a
node before it: :meth:`LoopscopeCallbackHandler.pre_model_hook` (``create_react_agent(...,
pre_model_hook=handler.pre_model_hook)``, or call it from your own node) appends each failed
call's ``[Error Recovery Context]`` block to that call's ``ToolMessage`` in the messages sent to
the model (the graph state is not changed) and, with ``on_loop="exit"``, raises
:class:`LoopDetected` when the prompt spins (``loop_exit`` is already written: ``error`` /
``loop_detected``). :meth:`~LoopscopeCallbackHandler.recovery_context` and
:meth:`~LoopscopeCallbackHandler.spinning` give the same for a thread, for custom graphs.

Not seen: tools run outside LangChain's callback system, the text a ``ToolNode`` error handler
shows the model (the record has the exception's text), and runs whose callbacks are not
propagated (a subgraph invoked without the parent's config).
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import TYPE_CHECKING, Any, Mapping
from uuid import UUID

from loopscope.collectors.records import openai_stop_reason

from loopscope.collectors.adapters._common import LoopDetected

if TYPE_CHECKING:
    from loopscope.collectors.core import Collector
    from loopscope.collectors.prompt import PromptLoop

__all__ = ["LoopDetected", "LoopscopeCallbackHandler"]

#: Exceptions that mean the run hit its step budget (``recursion_limit``).
BUDGET_ERRORS = ("GraphRecursionError",)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


class _Prompt:
    """One top-level run: its prompt, its thread, the recovery blocks of its failed calls."""

    __slots__ = ("loop", "thread", "blocks", "lock")

    def __init__(self, loop: PromptLoop, thread: str | None) -> None:
        self.loop = loop
        self.thread = thread
        self.blocks: dict[str, str] = {}
        # Parallel tools end on several threads: a call's record and its recovery block (built
        # from the prompt's latest error) must not interleave with another call's.
        self.lock = threading.Lock()


class _Core:
    """The handler's logic, free of LangChain types (the callbacks below only forward here)."""

    def __init__(
        self,
        collector: Collector,
        conversation_id: str | None,
        agent: str | None,
        max_tool_calls: int | None,
        on_loop: str | None,
        recovery: bool,
        tags: Mapping[str, str] | None,
    ) -> None:
        self.col = collector
        self.conversation_id = conversation_id
        self.agent = agent
        self.max_tool_calls = max_tool_calls
        self.on_loop = on_loop
        self.recovery = recovery
        self.tags = tags
        self.lock = threading.Lock()
        # run id -> (top-level run id, inside a tool run); prompts by top-level run id;
        # tool runs started -> (t0, step, tool_call_id, name, arguments); the latest prompt per thread.
        self.runs: dict[UUID, tuple[UUID, bool]] = {}
        self.prompts: dict[UUID, _Prompt] = {}
        self.tools: dict[UUID, tuple[float, int, str | None, str, Any]] = {}
        self.threads: dict[str, _Prompt] = {}

    def guarded(self, where: str, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - never into the graph
            self.col._guard.internal_error(f"langchain.{where}", exc)

    # -- runs --

    def start(self, run_id: UUID, parent: UUID | None, metadata: Mapping[str, Any] | None, name: Any, tool: bool = False) -> _Prompt | None:
        with self.lock:
            if parent is None:
                root, inside = run_id, False
            elif parent in self.runs:
                root, inside = self.runs[parent]
            else:
                # A run whose parent this handler never saw start (the handler was added below
                # the top-level run): no prompt to put it in, and no new one either.
                root, inside = None, True
            self.runs[run_id] = (root, inside or tool)
            prompt = self.prompts.get(root) if root is not None else None
        if prompt is None and root == run_id:
            meta = metadata or {}
            thread = meta.get("thread_id")
            conv = str(thread) if thread else (self.conversation_id or "c-" + secrets.token_hex(5))
            loop = self.col.prompt(
                conv,
                agent=self.agent or (str(name) if name else None),
                max_tool_calls=self.max_tool_calls,
                tags=self.tags,
                on_loop=self.on_loop,
            )
            prompt = _Prompt(loop, str(thread) if thread else None)
            with self.lock:
                self.prompts[root] = prompt
                self.threads[conv] = prompt
        return prompt

    def start_other(self, run_id: UUID, parent: UUID | None) -> None:
        """A run that is neither a chain, a model call nor a tool (a retriever): only its place in the tree."""
        with self.lock:
            root, inside = self.runs.get(parent, (None, True)) if parent is not None else (run_id, False)
            self.runs[run_id] = (root, inside)

    def prompt_of(self, run_id: UUID) -> tuple[_Prompt | None, bool]:
        with self.lock:
            root, inside = self.runs.get(run_id, (None, False))
            return (self.prompts.get(root) if root is not None else None), inside

    def end(self, run_id: UUID, error: BaseException | None = None, outputs: Any = None) -> None:
        with self.lock:
            root, _ = self.runs.pop(run_id, (None, False))
            prompt = self.prompts.pop(run_id, None) if root == run_id else None
            if prompt is not None:
                if self.threads.get(prompt.loop.conversation_id) is prompt:
                    del self.threads[prompt.loop.conversation_id]
                # Runs of this prompt that never ended (the run was interrupted): forget them.
                for stale in [r for r, (rt, _) in self.runs.items() if rt == run_id]:
                    self.runs.pop(stale, None)
                    self.tools.pop(stale, None)
        if prompt is None:
            return
        loop = prompt.loop
        if loop.closed:
            return
        if error is None:
            if loop._last_stop == "tool_use" and not (isinstance(outputs, Mapping) and "__interrupt__" in outputs):
                # The model asked for tools and the graph ended without running them: its step
                # guard stopped it (create_react_agent's "need more steps" answer near the limit).
                loop.exit("budget_exceeded")
            else:
                loop.close()
        elif type(error).__name__ in BUDGET_ERRORS:
            loop.exit("budget_exceeded")
        else:
            loop.exit("error", error)

    # -- model calls --

    def llm_end(self, run_id: UUID, response: Any) -> None:
        prompt, inside_tool = self.prompt_of(run_id)
        with self.lock:
            self.runs.pop(run_id, None)
        if prompt is None or inside_tool:
            return
        generations = _get(response, "generations") or []
        first = generations[0][0] if generations and generations[0] else None
        message = _get(first, "message")
        stop = None
        if message is not None and _get(message, "tool_calls"):
            stop = "tool_use"
        else:
            info = _get(first, "generation_info") or {}
            meta = _get(message, "response_metadata") or {}
            reason = info.get("finish_reason") or meta.get("finish_reason") or meta.get("stop_reason")
            stop = openai_stop_reason(reason) if reason else "end_turn"
        usage = _get(message, "usage_metadata") or {}
        prompt.loop.model_response(stop, usage.get("input_tokens"), usage.get("output_tokens"))

    # -- tools --

    def tool_start(self, run_id: UUID, parent: UUID | None, name: str, inputs: Any, input_str: str, tool_call_id: Any) -> None:
        prompt = self.start(run_id, parent, None, None, tool=True)
        if prompt is None:
            return
        arguments = inputs if inputs is not None else input_str
        with self.lock:
            self.tools[run_id] = (
                time.perf_counter(),
                prompt.loop.step,
                str(tool_call_id) if tool_call_id is not None else None,
                name,
                arguments,
            )

    def tool_end(self, run_id: UUID, output: Any, error: BaseException | None, tool_call_id: Any = None) -> None:
        prompt, _ = self.prompt_of(run_id)
        with self.lock:
            started = self.tools.pop(run_id, None)
        try:
            if prompt is not None and started is not None:
                self._record_tool(prompt, started, output, error, tool_call_id)
        finally:
            self.end(run_id, error)  # a tool run on its own is its own prompt: this closes it

    def _record_tool(self, prompt: _Prompt, started: tuple[Any, ...], output: Any, error: BaseException | None, tool_call_id: Any) -> None:
        with prompt.lock:
            self._record_tool_locked(prompt, started, output, error, tool_call_id)

    def _record_tool_locked(self, prompt: _Prompt, started: tuple[Any, ...], output: Any, error: BaseException | None, tool_call_id: Any) -> None:
        t0, step, call_id, name, arguments = started
        call_id = call_id or (str(tool_call_id) if tool_call_id is not None else None) or _get(output, "tool_call_id")
        call_id = str(call_id) if call_id else "call-" + secrets.token_hex(6)
        latency = (time.perf_counter() - t0) * 1000.0
        loop = prompt.loop
        if error is not None:
            loop.record_tool_call(
                tool_call_id=call_id, tool_name=name, arguments=arguments, step=step, is_error=True,
                latency_ms=latency, error_type=type(error).__name__, error_message=str(error) or type(error).__name__,
            )
        else:
            content = _get(output, "content") if _get(output, "type") == "tool" else output
            failed = _get(output, "type") == "tool" and _get(output, "status") == "error"
            loop.record_tool_call(
                tool_call_id=call_id, tool_name=name, arguments=arguments, step=step, is_error=failed,
                latency_ms=latency, error_message=str(content) if failed else None, result=content,
            )
            if not failed:
                return
        if self.recovery:
            block = loop.recovery_context()  # the call just recorded (under the prompt's lock)
            if block:
                prompt.blocks[call_id] = block

    # -- seed 000 --

    def prompt_for(self, config: Any) -> _Prompt | None:
        configurable = _get(config, "configurable") or {}
        thread = _get(configurable, "thread_id") or self.conversation_id
        with self.lock:
            if thread is not None and str(thread) in self.threads:
                return self.threads[str(thread)]
            live = list(self.prompts.values())
        return live[0] if len(live) == 1 else None

    def model_messages(self, messages: list[Any], config: Any) -> list[Any]:
        prompt = self.prompt_for(config)
        if prompt is None:
            return messages
        loop = prompt.loop
        if loop.on_loop is not None or self.col._history is not None:
            spin = loop.spinning()
            if spin is not None and spin.stop:
                raise LoopDetected(f"{loop.conversation_id}/{loop.prompt_id}: {spin.describe()}")
        if not prompt.blocks:
            return messages
        out = []
        for m in messages:
            block = prompt.blocks.get(_get(m, "tool_call_id")) if _get(m, "type") == "tool" else None
            content = _get(m, "content")
            if block and isinstance(content, str) and block not in content:
                m = m.model_copy(update={"content": f"{content}\n\n{block}"})
            out.append(m)
        return out


_HANDLER_CLASS: Any = None


def _handler_class() -> Any:
    """The ``BaseCallbackHandler`` subclass, built on first use (LangChain is imported only then)."""
    global _HANDLER_CLASS
    if _HANDLER_CLASS is not None:
        return _HANDLER_CLASS
    from langchain_core.callbacks import BaseCallbackHandler

    class _Handler(BaseCallbackHandler):  # type: ignore[misc]
        run_inline = True  # fast, non-blocking: keep events in order, on the caller's thread
        raise_error = False

        def __init__(self, core: _Core) -> None:
            self._core = core

        def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                           tags: Any = None, metadata: Any = None, **kwargs: Any) -> None:
            self._core.guarded("on_chain_start", self._core.start, run_id, parent_run_id, metadata, kwargs.get("name"))

        def on_chain_end(self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
            self._core.guarded("on_chain_end", self._core.end, run_id, None, outputs)

        def on_chain_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
            self._core.guarded("on_chain_error", self._core.end, run_id, error)

        def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                                tags: Any = None, metadata: Any = None, **kwargs: Any) -> None:
            self._core.guarded("on_chat_model_start", self._core.start, run_id, parent_run_id, metadata, None)

        def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                         tags: Any = None, metadata: Any = None, **kwargs: Any) -> None:
            self._core.guarded("on_llm_start", self._core.start, run_id, parent_run_id, metadata, None)

        def on_llm_end(self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
            self._core.guarded("on_llm_end", self._core.llm_end, run_id, response)

        def on_llm_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
            self._core.guarded("on_llm_error", self._core.end, run_id, error)

        def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, parent_run_id: UUID | None = None,
                               **kwargs: Any) -> None:
            self._core.guarded("on_retriever_start", self._core.start_other, run_id, parent_run_id)

        def on_retriever_end(self, documents: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
            self._core.guarded("on_retriever_end", self._core.end, run_id, None)

        def on_retriever_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None,
                               **kwargs: Any) -> None:
            self._core.guarded("on_retriever_error", self._core.end, run_id, error)

        def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, parent_run_id: UUID | None = None,
                          tags: Any = None, metadata: Any = None, inputs: Any = None, **kwargs: Any) -> None:
            name = kwargs.get("name") or _get(serialized, "name") or "tool"
            self._core.guarded("on_tool_start", self._core.tool_start, run_id, parent_run_id, str(name), inputs,
                               input_str, kwargs.get("tool_call_id"))

        def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
            self._core.guarded("on_tool_end", self._core.tool_end, run_id, output, None)

        def on_tool_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
            self._core.guarded("on_tool_error", self._core.tool_end, run_id, None, error, kwargs.get("tool_call_id"))

    _HANDLER_CLASS = _Handler
    return _HANDLER_CLASS


def LoopscopeCallbackHandler(  # noqa: N802 - a class to the user; built lazily
    collector: Collector,
    *,
    conversation_id: str | None = None,
    agent: str | None = None,
    max_tool_calls: int | None = None,
    on_loop: str | None = None,
    recovery_context: bool = False,
    tags: Mapping[str, str] | None = None,
) -> Any:
    """A LangChain callback handler that records every top-level run as one prompt.

    Args:
        collector: The :class:`~loopscope.collectors.Collector` to write to.
        conversation_id: The conversation when the run's config has no ``thread_id``.
        agent: The agent name of the records (default: the top-level run's name, e.g. the
            ``name=`` of ``create_react_agent``).
        max_tool_calls: The tool-call budget recorded in ``loop_exit`` (LangGraph's
            ``recursion_limit`` counts graph steps, not tool calls).
        on_loop: Loop policy of each prompt (``"warn"``, ``"exit"`` or None).
        recovery_context: Keep each failed call's seed-000 block for :meth:`pre_model_hook`.
        tags: String labels copied into every record.

    Returns:
        A ``langchain_core.callbacks.BaseCallbackHandler`` with three more methods:
        ``pre_model_hook(state, config)`` (for ``create_react_agent``), ``recovery_context(config)``
        and ``spinning(config)``.
    """
    core = _Core(collector, conversation_id, agent, max_tool_calls, on_loop, recovery_context, tags)
    handler = _handler_class()(core)

    def pre_model_hook(state: Any, config: Any = None) -> dict[str, Any]:
        """``create_react_agent(..., pre_model_hook=handler.pre_model_hook)``: the messages for the model.

        Each failed call's ToolMessage carries its recovery block (``recovery_context=True``);
        raises :class:`LoopDetected` when ``on_loop="exit"`` stopped the prompt.
        """
        messages = list(_get(state, "messages") or [])
        try:
            messages = core.model_messages(messages, config)
        except LoopDetected:
            raise
        except Exception as exc:  # noqa: BLE001 - the model call goes on with the plain messages
            collector._guard.internal_error("langchain.pre_model_hook", exc)
        return {"llm_input_messages": messages}

    def recovery_context(config: Any = None) -> str | None:
        """The block of the latest failed call of the thread's live prompt (``config``'s thread_id)."""
        try:
            prompt = core.prompt_for(config)
            return prompt.loop.recovery_context() if prompt is not None else None
        except Exception as exc:  # noqa: BLE001
            collector._guard.internal_error("langchain.recovery_context", exc)
            return None

    def spinning(config: Any = None) -> Any:
        """``loop.spinning()`` of the thread's live prompt, or None."""
        try:
            prompt = core.prompt_for(config)
            return prompt.loop.spinning() if prompt is not None else None
        except Exception as exc:  # noqa: BLE001
            collector._guard.internal_error("langchain.spinning", exc)
            return None

    handler.pre_model_hook = pre_model_hook
    handler.recovery_context = recovery_context
    handler.spinning = spinning
    return handler
