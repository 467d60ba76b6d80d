"""MCP client adapter: every ``call_tool`` of an MCP client session becomes a v1 ``tool_call`` record.

One line, after the session is open::

    from loopscope.collectors.adapters.mcp import instrument_mcp

    instrument_mcp(session, loop)          # an mcp ClientSession or mcp.Client; loop: a PromptLoop
    result = await session.call_tool("lookup_order", {"order_id": "A1"}, tool_call_id=block.id)

``loop`` is the :class:`~loopscope.collectors.PromptLoop` the calls belong to, or a function of
no arguments returning the current one (a session usually outlives a prompt); when it returns
None the call is not recorded. The call is recorded through ``loop.tool_call(...)``, the manual
API itself, so the records and spans are the ones a hand-written loop writes:

- a ``CallToolResult`` with ``isError`` (``is_error`` in mcp 2.x) is an error; its text content
  is the error message the model sees;
- an exception (an MCP protocol error such as an unknown tool, a timeout, a lost connection) is
  an error too, with the exception's class as ``error_type``; it is re-raised unchanged;
- ``tool_call_id``: the id you pass as ``tool_call_id=`` (the model's ``tool_use`` id: the call's
  identity in the model's conversation), else a generated ``mcp-<hex>`` id. The JSON-RPC request
  id is not used: the SDK does not hand it to the caller, and it restarts at 1 in every session,
  so two sessions of one conversation would reuse ids and look like replays.

**Seed 000 and the loop signal** (off by default)::

    instrument_mcp(session, current_loop, recovery_context=True, on_loop="exit")

- ``recovery_context=True``: a failed call's ``CallToolResult`` comes back with one more
  ``TextContent`` item at the end of ``content``, the ``[Error Recovery Context]`` block (the
  error word for word, the previous attempts at the same operation and target: best with
  ``Collector(history=True)``, the catalog's suggestions). A host that turns ``content`` into
  the model's tool result, as MCP hosts do, hands the model the block with the error, in the
  next request, without a line of its own. The result is a copy (the SDK's object is not
  changed); ``isError`` stays set and the record has the tool's own error text. A call that
  raised (a protocol error) has no result to carry it: ``loop.recovery_context()`` gives it.
- ``on_loop``: the policy of a prompt that has none of its own (``collector.prompt(on_loop=...)``
  wins); needs ``Collector(history=True)`` or a prompt opened with a policy. After each call the
  wrapper asks ``loop.spinning()``; with ``"exit"``, when the prompt spins, ``loop_exit`` is
  written (``error`` / ``loop_detected``) and ``call_tool`` raises :class:`LoopDetected` (the
  call itself is recorded; an exception it raised is the ``__cause__``). ``"warn"`` logs instead.

The wrapper never raises an error of its own into the caller: the recording goes through the
collector, whose every entry point swallows its own failures (see ``collectors/guard.py``).
``del session.call_tool`` removes it. Import cost: none (``mcp`` is not imported here).
"""

from __future__ import annotations

import functools
import uuid
from typing import TYPE_CHECKING, Any, Callable, Union

from loopscope.collectors.adapters._common import LoopDetected
from loopscope.collectors.guard import logger

if TYPE_CHECKING:
    from loopscope.collectors.prompt import PromptLoop

__all__ = ["LoopDetected", "error_text", "instrument_mcp", "is_error_result", "with_recovery_context"]

LoopSource = Union["PromptLoop", Callable[[], "PromptLoop | None"]]


def is_error_result(result: Any) -> bool:
    """Whether an MCP ``CallToolResult`` is an error result (mcp 2.x ``is_error``, 1.x ``isError``)."""
    flag = getattr(result, "is_error", None)
    if flag is None:
        flag = getattr(result, "isError", None)
    if flag is None and isinstance(result, dict):
        flag = result.get("isError", result.get("is_error"))
    return bool(flag)


def error_text(result: Any) -> str:
    """The text content of a result, joined by newlines (what the model reads)."""
    content = getattr(result, "content", None)
    if content is None and isinstance(result, dict):
        content = result.get("content")
    parts = []
    for block in content or ():
        text = getattr(block, "text", None)
        if text is None and isinstance(block, dict):
            text = block.get("text")
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


def _result_value(result: Any) -> Any:
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = getattr(result, "structuredContent", None)
    return structured if structured is not None else error_text(result)


def with_recovery_context(result: Any, block: str) -> Any:
    """A copy of a ``CallToolResult`` (or its dict form) with ``block`` as one more text item."""
    if isinstance(result, dict):
        return {**result, "content": [*(result.get("content") or ()), {"type": "text", "text": block}]}
    content = list(getattr(result, "content", None) or ())
    text_type = next((type(c) for c in content if getattr(c, "type", None) == "text"), None)
    if text_type is None:
        from mcp.types import TextContent  # the SDK is installed: the result came from it

        text_type = TextContent
    return result.model_copy(update={"content": [*content, text_type(type="text", text=block)]})


def _stop(target: PromptLoop, cause: BaseException | None) -> None:
    """Raise LoopDetected when the prompt spins under an ``exit`` policy (loop_exit is then written)."""
    if target.on_loop is None:
        return
    spin = target.spinning()  # never raises
    if spin is not None and spin.stop:
        raise LoopDetected(f"{target.conversation_id}/{target.prompt_id}: {spin.describe()}") from cause


_warned: set[str] = set()


def _unrecorded(exc: Exception) -> None:
    key = type(exc).__name__
    if key not in _warned:  # once per exception type: a wrong loop= fails on every call
        _warned.add(key)
        logger.warning(
            "loopscope: MCP tool calls are not recorded: instrument_mcp(loop=) must be a PromptLoop or a "
            "function returning one (%s: %s)",
            key,
            exc,
        )


def instrument_mcp(session: Any, loop: LoopSource, *, recovery_context: bool = False, on_loop: str | None = None) -> Any:
    """Record every ``session.call_tool(...)`` into ``loop``; returns ``session``.

    Args:
        session: An open ``mcp.ClientSession`` or ``mcp.Client`` (anything with an async
            ``call_tool(name, arguments, ...)``). Instrument one of the two, not both: a
            ``Client`` calls its session's ``call_tool``.
        loop: The :class:`~loopscope.collectors.PromptLoop`, or a function returning the current
            one (or None: that call is not recorded).
        recovery_context: Append the seed-000 block to a failed call's result (a copy).
        on_loop: ``"warn"`` or ``"exit"`` for prompts opened without a policy (see above).

    The wrapped ``call_tool`` takes two more keyword arguments, removed before the SDK sees
    them: ``tool_call_id=`` (default: generated) and ``step=`` (default: the loop's step).
    """
    original = session.call_tool
    current: Callable[[], PromptLoop | None] = loop if callable(loop) else (lambda: loop)  # type: ignore[assignment]

    @functools.wraps(original)
    async def call_tool(
        name: str, arguments: Any = None, *args: Any, tool_call_id: str | None = None, step: int | None = None, **kwargs: Any
    ) -> Any:
        call = target = None
        try:
            target = current()
            if target is not None:
                tid = tool_call_id if tool_call_id is not None else f"mcp-{uuid.uuid4().hex[:16]}"
                if on_loop is not None and target.on_loop is None:
                    target.on_loop = on_loop
                call = target.tool_call(tid, name, arguments, step=step).__enter__()
        except Exception as exc:  # noqa: BLE001 - the call runs unrecorded
            call = None
            guard = getattr(getattr(target, "_col", None), "_guard", None)
            if guard is not None:
                guard.internal_error("mcp.call_tool", exc)
            else:  # not a PromptLoop, or the caller's function failed
                _unrecorded(exc)
        if call is None:
            return await original(name, arguments, *args, **kwargs)
        try:
            result = await original(name, arguments, *args, **kwargs)
        except BaseException as exc:
            call.__exit__(type(exc), exc, exc.__traceback__)  # records the error; never raises
            if isinstance(exc, Exception):
                _stop(target, exc)  # type: ignore[arg-type]
            raise
        failed = False
        try:
            failed = is_error_result(result)
            if failed:
                call.fail(error_text(result) or "the tool returned an error result with no text")
            else:
                call.returned(_result_value(result))
        except Exception as exc:  # noqa: BLE001
            call._loop._col._guard.internal_error("mcp.call_tool", exc)
        call.__exit__(None, None, None)
        if failed and recovery_context:
            try:
                block = call.recovery_context()  # None if building it failed (counted)
                if block:
                    result = with_recovery_context(result, block)
            except Exception as exc:  # noqa: BLE001 - the caller gets the result as the server sent it
                call._loop._col._guard.internal_error("mcp.recovery_context", exc)
        _stop(target, None)  # type: ignore[arg-type]
        return result

    call_tool.__loopscope_wrapped__ = original  # type: ignore[attr-defined]
    session.call_tool = call_tool
    return session
