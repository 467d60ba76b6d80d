"""``@collector.tool``: instrument a plain tool function (sync or async) once, where it is defined.

Each call of the decorated function made inside a ``with collector.prompt(...)`` (or ``async
with``) block is recorded as a ``tool_call`` of that prompt, exactly as if it were wrapped in
``with loop.tool_call(tool_call_id, name, arguments) as call: call.returned(fn(...))``:

- the prompt is the one whose block the code runs in (a context variable: it follows ``await``,
  asyncio tasks and ``contextvars.copy_context().run``). A plain worker thread does not inherit
  it: there, the collector's only open prompt is used; with several open prompts and none in the
  context, nothing is guessed: the function runs, nothing is recorded, and
  ``stats.untracked_tool_calls`` counts it;
- the arguments are the function's bound arguments (names from its signature; a method's
  ``self`` / ``cls`` left out, ``**kwargs`` flattened);
- ``tool_call_id=`` passed by the caller (``TOOLS[b.name](**b.input, tool_call_id=b.id)``) is
  taken off the call (unless the function declares that parameter itself) and recorded; without
  it the call gets a random id (``call-`` and 12 hex digits), so no call passes for a replay;
- an exception is recorded as an error (its class, its text) and re-raised unchanged; a return
  value is recorded as ``result_fingerprint`` only;
- called inside a ``with loop.tool_call(...)`` / ``tool_call_from(...)`` block, it records
  nothing: that block records the call (never twice).
"""

from __future__ import annotations

import functools
import inspect
import secrets
from typing import TYPE_CHECKING, Any, Callable

from loopscope.collectors.prompt import CURRENT_PROMPT
from loopscope.collectors.tool_call import CURRENT_CALL, TRACKING

if TYPE_CHECKING:
    from loopscope.collectors.core import Collector
    from loopscope.collectors.prompt import PromptLoop


def _random_call_id() -> str:
    return "call-" + secrets.token_hex(6)


def instrument_tool(col: Collector, fn: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """Wrap ``fn`` so that each call inside a prompt is recorded (see the module docstring)."""
    if not callable(fn):
        raise TypeError(f"@collector.tool needs a function, got {fn!r}")
    tool_name = str(name or getattr(fn, "__name__", None) or "tool")
    try:
        sig: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    takes_id = sig is not None and "tool_call_id" in sig.parameters
    TRACKING[0] = True  # from now on, tool-call blocks say they are open (CURRENT_CALL)

    def current() -> PromptLoop | None:
        loop = CURRENT_PROMPT.get()
        if loop is not None and loop._col is col and not loop.closed:
            return loop
        open_prompts = [p for p in list(col._open_prompts) if not p.closed]
        return open_prompts[0] if len(open_prompts) == 1 else None

    params = sig.parameters if sig is not None else {}
    var_keyword = next((n for n, p in params.items() if p.kind is inspect.Parameter.VAR_KEYWORD), None)

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if sig is not None:
            try:
                bound = dict(sig.bind(*args, **kwargs).arguments)
            except TypeError:
                pass  # the call itself will raise the same TypeError: record what was passed
            else:
                # A method's receiver is no argument of the tool (its str() would change the
                # fingerprint from object to object); **kwargs are top-level arguments.
                for receiver in ("self", "cls"):
                    bound.pop(receiver, None)
                if var_keyword is not None and isinstance(bound.get(var_keyword), dict):
                    bound.update(bound.pop(var_keyword))
                return bound
        return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}

    def prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[PromptLoop | None, str, Any]:
        """(the prompt or None, the call id, the arguments); ``tool_call_id`` taken off ``kwargs``."""
        call_id = kwargs.get("tool_call_id") if takes_id else kwargs.pop("tool_call_id", None)
        try:
            if CURRENT_CALL.get() is not None:
                return None, "", None  # the enclosing tool-call block records this call
            loop = current()
            if loop is None:
                col._untracked_tool_calls += 1
                col._guard.once(
                    "untracked-tool",
                    30,
                    "loopscope: %s was called outside a prompt (or with several prompts open and none in this "
                    "context): not recorded (stats.untracked_tool_calls)",
                    tool_name,
                )
                return None, "", None
            return loop, str(call_id) if call_id is not None else _random_call_id(), arguments(args, kwargs)
        except Exception as exc:  # noqa: BLE001 - the tool must run whatever happens here
            col._guard.internal_error("tool_decorator", exc)
            return None, "", None

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            loop, call_id, recorded = prepare(args, kwargs)
            if loop is None:  # outside a prompt, or inside a tool-call block that records it
                return await fn(*args, **kwargs)
            async with loop.tool_call(call_id, tool_name, recorded) as call:
                result = await fn(*args, **kwargs)
                call.returned(result)
            return result

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        loop, call_id, recorded = prepare(args, kwargs)
        if loop is None:
            return fn(*args, **kwargs)
        with loop.tool_call(call_id, tool_name, recorded) as call:
            result = fn(*args, **kwargs)
            call.returned(result)
        return result

    return wrapper
