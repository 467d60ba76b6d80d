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

The wrapper never raises an error of its own into the caller: the recording goes through the
collector, whose every entry point swallows its own failures (see ``collectors/guard.py``).
``del session.call_tool`` removes it. Import cost: none (``mcp`` is not imported here).
"""

from __future__ import annotations

import functools
import uuid
from typing import TYPE_CHECKING, Any, Callable, Union

from loopscope.collectors.guard import logger

if TYPE_CHECKING:
    from loopscope.collectors.prompt import PromptLoop

__all__ = ["error_text", "instrument_mcp", "is_error_result"]

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


def instrument_mcp(session: Any, loop: LoopSource) -> Any:
    """Record every ``session.call_tool(...)`` into ``loop``; returns ``session``.

    Args:
        session: An open ``mcp.ClientSession`` or ``mcp.Client`` (anything with an async
            ``call_tool(name, arguments, ...)``). Instrument one of the two, not both: a
            ``Client`` calls its session's ``call_tool``.
        loop: The :class:`~loopscope.collectors.PromptLoop`, or a function returning the current
            one (or None: that call is not recorded).

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
            raise
        try:
            if is_error_result(result):
                call.fail(error_text(result) or "the tool returned an error result with no text")
            else:
                call.returned(_result_value(result))
        except Exception as exc:  # noqa: BLE001
            call._loop._col._guard.internal_error("mcp.call_tool", exc)
        call.__exit__(None, None, None)
        return result

    call_tool.__loopscope_wrapped__ = original  # type: ignore[attr-defined]
    session.call_tool = call_tool
    return session
