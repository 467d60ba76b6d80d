"""Claude Agent SDK adapter: the ``hooks=`` of ``ClaudeAgentOptions`` write loopscope's v1 records.

One line::

    options = ClaudeAgentOptions(..., hooks=loopscope_hooks(collector))

and, for the exit reason of loops that end without a ``Stop`` hook (``max_turns``, a spent
``max_budget_usd``, an error) and the prompt's tokens, iterate the messages through
:meth:`ClaudeHooks.watch`::

    hooks = ClaudeHooks(collector)
    options = ClaudeAgentOptions(..., hooks=hooks.hooks())
    async for message in hooks.watch(query(prompt=..., options=options)):
        ...

What each hook gives (the Claude Code CLI fires them; the SDK runs them in this process):

- ``UserPromptSubmit``: a prompt starts (``prompt_id`` is Claude Code's own prompt id, the
  conversation is the session id unless ``conversation_id=`` is given).
- ``PreToolUse``: a tool call starts (keyed by ``tool_use_id``).
- ``PostToolUse`` / ``PostToolUseFailure``: it ended, with the CLI's own ``duration_ms`` and, for
  a failure, the error text the model saw (a raising tool and an ``is_error`` result alike).
- ``PostToolBatch``: every tool call of one model response is done. This is the step boundary
  (parallel calls share a step), and it lists every call of the batch, hooks or not: a call
  that fired no tool hook (an unknown tool, input that failed validation: the model got a
  ``<tool_use_error>`` result) is recorded from it.
- ``Stop``: the loop ended normally (``end_turn``).

**Seed 000 and the loop signal** (off by default). With ``recovery_context=True`` a failed
call's ``[Error Recovery Context]`` block is the hook's ``additionalContext``
(``hookSpecificOutput``): of ``PostToolUseFailure`` for a call whose tool hook fired, of
``PostToolBatch`` for a call only the batch reports (a ``<tool_use_error>``). Claude Code hands
it to the model with the failed result, in the next request. With ``on_loop="exit"``, at each
``PostToolBatch`` (before the next model call) the adapter asks ``loop.spinning()``; when the
prompt spins it has written ``loop_exit`` (``error`` / ``loop_detected``) and the hook returns
``continue: false`` with a ``stopReason``: Claude Code ends the turn. Any tool call of that prompt
still asked for is refused (``PreToolUse`` ``permissionDecision: "deny"``). ``"warn"`` logs
instead. :meth:`ClaudeHooks.recovery_context` and :meth:`ClaudeHooks.spinning` give the same for
a session, for hooks of your own.

Never raises into the agent: every hook returns ``{}`` (no opinion) whatever happens inside,
and internal failures go to the collector's guard (counted, logged once). Memory is bounded:
at most :data:`MAX_SESSIONS` sessions and :data:`MAX_PENDING` unfinished calls per session are
kept; what is pushed out is counted in :attr:`ClaudeHooks.dropped`.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, AsyncIterator, Mapping

if TYPE_CHECKING:
    from loopscope.collectors.core import Collector
    from loopscope.collectors.prompt import PromptLoop

__all__ = ["MAX_PENDING", "MAX_SESSIONS", "ClaudeHooks", "loopscope_hooks"]

#: Sessions whose state is kept (least recently used evicted first).
MAX_SESSIONS = 1024
#: Tool calls started and not yet ended kept per session.
MAX_PENDING = 1024

#: The hook events the adapter registers.
EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Stop")

# Claude Code wraps the error of a call it refused before running it (unknown tool, invalid
# input, denied permission) in these tags; the model gets the tags too.
_TOOL_USE_ERROR = re.compile(r"^\s*<tool_use_error>(.*)</tool_use_error>\s*$", re.S)

# ResultMessage.subtype -> exit_reason (spec: budget exits are budget_exceeded).
_RESULT_EXITS = {
    "error_max_turns": "budget_exceeded",
    "error_max_budget_usd": "budget_exceeded",
    "error_max_structured_output_retries": "error",
    "error_during_execution": "error",
}


class _Session:
    """One Claude Code session's open prompt and its in-flight calls."""

    __slots__ = ("loop", "step", "pending", "done", "stopped", "reopened", "halted")

    def __init__(self) -> None:
        self.loop: PromptLoop | None = None
        self.reopened = 0  # prompts reopened under the same Claude Code prompt id
        self.step = 0  # tool batches (model responses that asked for tools) so far in this prompt
        self.pending: OrderedDict[str, tuple[str, Any, float, int]] = OrderedDict()
        self.done: set[str] = set()  # tool_use_ids recorded in the current step
        self.stopped = False  # Stop fired; the exit waits for watch()'s ResultMessage
        # on_loop="exit" stopped this prompt: (why, Claude Code's prompt id of the stopped prompt)
        self.halted: tuple[str, str] | None = None


def _error_text(response: Any) -> str | None:
    """A ``<tool_use_error>...</tool_use_error>`` result as the model got it (tags included, as
    loopscope's Claude Code transcript reader records it), or None for a normal result."""
    if isinstance(response, str) and _TOOL_USE_ERROR.match(response):
        return response.strip()
    return None


class ClaudeHooks:
    """Records a Claude Agent SDK agent through its hooks. :meth:`hooks` gives ``hooks=``.

    Args:
        collector: The :class:`~loopscope.collectors.Collector` that writes the records.
        conversation_id: The conversation of every prompt; default: the Claude Code session id.
        agent: Agent type (``agent`` field); default ``"default"``.
        max_tool_calls: The tool-call budget recorded on ``loop_exit``.
        model: ``gen_ai.request.model`` of the prompt spans.
        tags: Cohort labels of every record.
        recovery_context: Hand the model each failed call's seed-000 block as the hook's
            ``additionalContext`` (best with ``Collector(history=True)``: the block then lists
            the previous attempts at the same operation and target in the conversation).
        on_loop: Loop policy of each prompt: ``"exit"`` stops a spinning prompt (``continue:
            false``), ``"warn"`` logs it, None (default) leaves it to you.
    """

    def __init__(
        self,
        collector: Collector,
        *,
        conversation_id: str | None = None,
        agent: str | None = None,
        max_tool_calls: int | None = None,
        model: str | None = None,
        tags: Mapping[str, str] | None = None,
        recovery_context: bool = False,
        on_loop: str | None = None,
    ) -> None:
        self.collector = collector
        self.recovery = bool(recovery_context)
        self.on_loop = on_loop
        self.conversation_id = conversation_id
        self.agent = agent
        self.max_tool_calls = max_tool_calls
        self.model = model
        self.tags = dict(tags) if tags else None
        self.dropped = 0  # calls and sessions pushed out of the bounded state
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._watching = 0

    # -- the hooks dict --

    def hooks(self, existing: Mapping[str, list[Any]] | None = None) -> dict[str, list[Any]]:
        """The ``hooks=`` dict for ``ClaudeAgentOptions``: ``existing`` hooks kept, ours appended.

        Imports ``claude_agent_sdk`` (for ``HookMatcher``). Raises ``ImportError`` when it is not
        installed: this is configuration, before the agent runs.
        """
        from claude_agent_sdk import HookMatcher

        out: dict[str, list[Any]] = {str(k): list(v) for k, v in (existing or {}).items()}
        for event in EVENTS:
            out.setdefault(event, []).append(HookMatcher(matcher=None, hooks=[self._callback]))
        return out

    async def _callback(self, hook_input: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        # Never raises, never blocks: no I/O here (records go to the collector's queue).
        try:
            out = self.handle(hook_input)
        except Exception as exc:  # noqa: BLE001
            self.collector._guard.internal_error("claude_agent_sdk.hook", exc)
            return {}
        return out or {}

    # -- the events --

    def handle(self, hook_input: Mapping[str, Any]) -> dict[str, Any] | None:
        """Handle one hook input (a dict as the SDK passes it). Called by the registered hooks.

        Returns the hook's output (the recovery block as ``additionalContext``, a stop, a
        refusal), or None for no opinion.
        """
        event = hook_input.get("hook_event_name")
        sid = str(hook_input.get("session_id") or "")
        if event == "UserPromptSubmit":
            self._start(sid, hook_input)
            return None
        halted = self._halted(sid, hook_input)
        if halted is not None:
            # on_loop="exit" stopped this prompt: refuse what is still asked for, record nothing more.
            if event == "PreToolUse":
                return {
                    "continue_": False,
                    "stopReason": halted,
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "deny",
                        "permissionDecisionReason": halted,
                    },
                }
            return None
        if event == "PreToolUse":
            self._pre(sid, hook_input)
        elif event == "PostToolUse":
            self._post(sid, hook_input, None)
        elif event == "PostToolUseFailure":
            error = hook_input.get("error")
            block = self._post(sid, hook_input, "" if error is None else str(error))
            if block:
                return {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": block}}
        elif event == "PostToolBatch":
            return self._batch(sid, hook_input)
        elif event == "Stop":
            self._stop(sid)
        return None

    def _halted(self, sid: str, inp: Mapping[str, Any]) -> str | None:
        """Why the session's prompt was stopped, if this hook belongs to that prompt."""
        s = self._sessions.get(sid)
        if s is None or s.halted is None:
            return None
        reason, pid = s.halted
        other = inp.get("prompt_id")
        if other and str(other) != pid:  # another prompt (no UserPromptSubmit seen): not stopped
            s.halted = None
            return None
        return reason

    def _live(self, session_id: str | None) -> PromptLoop | None:
        if session_id is None:
            s = next(reversed(self._sessions.values()), None)  # the latest active session
        else:
            s = self._sessions.get(str(session_id))
        return s.loop if s is not None else None

    def recovery_context(self, session_id: str | None = None) -> str | None:
        """The block of the latest failed call of the session's prompt (default: the session
        seen last), or None. Never raises."""
        try:
            loop = self._live(session_id)
            return loop.recovery_context() if loop is not None else None
        except Exception as exc:  # noqa: BLE001
            self.collector._guard.internal_error("claude_agent_sdk.recovery_context", exc)
            return None

    def spinning(self, session_id: str | None = None) -> Any:
        """``loop.spinning()`` of the session's prompt (default: the session seen last), or None.
        Never raises."""
        try:
            loop = self._live(session_id)
            return loop.spinning() if loop is not None else None
        except Exception as exc:  # noqa: BLE001
            self.collector._guard.internal_error("claude_agent_sdk.spinning", exc)
            return None

    def _session(self, sid: str) -> _Session:
        sessions = self._sessions
        s = sessions.get(sid)
        if s is None:
            s = sessions[sid] = _Session()
            if len(sessions) > MAX_SESSIONS:
                _, old = sessions.popitem(last=False)
                self.dropped += 1 + len(old.pending)
        else:
            sessions.move_to_end(sid)
        return s

    def _open(self, s: _Session, sid: str, prompt_id: Any) -> PromptLoop:
        pid = str(prompt_id) if prompt_id else None
        if pid is not None and s.loop is not None and s.loop.prompt_id.split("~")[0] == pid:
            # The loop went on after its exit was written (another Stop hook blocked the stop):
            # the rest is a new prompt, and prompt ids stay unique in the conversation.
            s.reopened += 1
            pid = f"{pid}~{s.reopened}"
        s.loop = self.collector.prompt(
            conversation_id=self.conversation_id or sid or "claude-agent-sdk",
            prompt_id=pid,
            agent=self.agent,
            max_tool_calls=self.max_tool_calls,
            provider="anthropic",
            model=self.model,
            tags=self.tags,
            on_loop=self.on_loop,
        )
        s.step = 0
        s.halted = None
        s.pending.clear()
        s.done.clear()
        s.stopped = False
        return s.loop

    def _start(self, sid: str, inp: Mapping[str, Any]) -> None:
        s = self._session(sid)
        if s.loop is not None and not s.loop.closed:
            # The previous prompt ended without a Stop hook (max_turns, an error) and nobody
            # told watch(): the reason is not known here.
            self._finish(s, "unknown")
        self._open(s, sid, inp.get("prompt_id"))

    def _current(self, sid: str, inp: Mapping[str, Any]) -> _Session:
        s = self._session(sid)
        if s.loop is None or s.loop.closed:
            self._open(s, sid, inp.get("prompt_id"))  # no UserPromptSubmit seen (resumed session)
        return s

    def _pre(self, sid: str, inp: Mapping[str, Any]) -> None:
        s = self._current(sid, inp)
        tid = str(inp.get("tool_use_id") or "")
        s.pending[tid] = (str(inp.get("tool_name")), inp.get("tool_input"), time.perf_counter(), s.step)
        if len(s.pending) > MAX_PENDING:
            s.pending.popitem(last=False)
            self.dropped += 1

    def _post(self, sid: str, inp: Mapping[str, Any], error: str | None) -> str | None:
        """Record the call; returns its recovery block when it failed and ``recovery_context=True``."""
        s = self._current(sid, inp)
        tid = str(inp.get("tool_use_id") or "")
        started = s.pending.pop(tid, None)
        name, args, t0, step = started or (str(inp.get("tool_name")), inp.get("tool_input"), None, s.step)
        duration = inp.get("duration_ms")
        if isinstance(duration, (int, float)) and not isinstance(duration, bool):
            latency = float(duration)
        elif t0 is not None:
            latency = (time.perf_counter() - t0) * 1000.0
        else:
            latency = 0.0
        kwargs: dict[str, Any] = {}
        if error is None:
            kwargs["result"] = inp.get("tool_response")
        else:
            kwargs["error_message"] = error
            if inp.get("is_interrupt"):
                kwargs["error_type"] = "interrupted"
        assert s.loop is not None
        s.loop.record_tool_call(
            tool_call_id=tid, tool_name=name, arguments=args, step=step, is_error=error is not None, latency_ms=latency, **kwargs
        )
        s.done.add(tid)
        if error is not None and self.recovery:
            return s.loop.recovery_context()  # the call just recorded: no await since; None if it failed
        return None

    def _batch(self, sid: str, inp: Mapping[str, Any]) -> dict[str, Any] | None:
        s = self._current(sid, inp)
        loop = s.loop
        assert loop is not None
        blocks: list[str] = []
        for call in inp.get("tool_calls") or ():
            tid = str(call.get("tool_use_id") or "")
            if tid in s.done:
                continue
            # A call no tool hook reported: refused before it ran (unknown tool, invalid input).
            started = s.pending.pop(tid, None)
            response = call.get("tool_response")
            error = _error_text(response)
            latency = (time.perf_counter() - started[2]) * 1000.0 if started else 0.0
            loop.record_tool_call(
                tool_call_id=tid,
                tool_name=str(call.get("tool_name")),
                arguments=call.get("tool_input"),
                step=s.step,
                is_error=error is not None,
                error_message=error,
                latency_ms=latency,
                **({"result": response} if error is None else {}),
            )
            if error is not None and self.recovery:
                block = loop.recovery_context()
                if block:
                    blocks.append(block)
        out: dict[str, Any] = {}
        if blocks:
            out["hookSpecificOutput"] = {"hookEventName": "PostToolBatch", "additionalContext": "\n\n".join(blocks)}
        if inp.get("agent_id"):
            return out or None  # a sub-agent's batch: its model calls are not this loop's steps
        s.done.clear()
        s.step += 1
        loop.model_response(stop_reason="tool_use")
        if loop.on_loop is not None:
            spin = loop.spinning()  # before the next model call; "exit" writes loop_exit
            if spin is not None and spin.stop:
                reason = f"loopscope stopped the loop: {spin.describe()}"
                s.halted = (reason, loop.prompt_id.split("~")[0])
                s.pending.clear()
                out["continue_"] = False
                out["stopReason"] = reason
        return out or None

    def _stop(self, sid: str) -> None:
        s = self._sessions.get(sid)
        if s is None or s.loop is None or s.loop.closed or s.stopped:
            return
        s.loop.model_response(stop_reason="end_turn")
        s.stopped = True
        if not self._watching:
            self._finish(s, "end_turn")

    def _finish(self, s: _Session, reason: str, error: str | None = None, error_type: str | None = None) -> None:
        loop = s.loop
        if loop is None or loop.closed:
            return
        for tid, (name, args, t0, step) in list(s.pending.items()):
            # Started, never ended: the loop stopped under it (an interrupt, a crash).
            loop.record_tool_call(
                tool_call_id=tid,
                tool_name=name,
                arguments=args,
                step=step,
                is_error=True,
                error_type="interrupted",
                error_message="the loop ended before the tool call did",
                latency_ms=(time.perf_counter() - t0) * 1000.0,
            )
        s.pending.clear()
        loop.exit(reason, error, error_type=error_type)

    # -- the message stream (optional) --

    def observe(self, message: Any) -> None:
        """Read one message of the SDK's stream: the ``ResultMessage`` gives the exit and tokens.

        ``success`` -> its ``stop_reason`` (``end_turn``), ``error_max_turns`` and
        ``error_max_budget_usd`` -> ``budget_exceeded``, other errors -> ``error``. Never raises.
        """
        try:
            if type(message).__name__ != "ResultMessage":
                return
            sid = str(getattr(message, "session_id", "") or "")
            s = self._sessions.get(sid)
            if s is None or s.loop is None or s.loop.closed:
                return
            loop = s.loop
            usage = getattr(message, "usage", None)
            if isinstance(usage, Mapping):
                if isinstance(usage.get("input_tokens"), int):
                    loop.input_tokens = usage["input_tokens"]
                if isinstance(usage.get("output_tokens"), int):
                    loop.output_tokens = usage["output_tokens"]
            subtype = str(getattr(message, "subtype", "") or "")
            if subtype == "success" and not getattr(message, "is_error", False):
                if not s.stopped:
                    loop.model_response(stop_reason=getattr(message, "stop_reason", None) or "end_turn")
                self._finish(s, getattr(message, "stop_reason", None) or "end_turn")
                return
            reason = _RESULT_EXITS.get(subtype, "error")
            errors = getattr(message, "errors", None)
            text = "; ".join(str(e) for e in errors) if errors else None
            if reason == "error":
                status = getattr(message, "api_error_status", None)
                err_type = f"api_error_{status}" if status else subtype
                self._finish(s, "error", text or getattr(message, "result", None) or subtype, err_type)
            else:
                self._finish(s, reason)  # spec: error_type/error_message belong to error exits
        except Exception as exc:  # noqa: BLE001
            self.collector._guard.internal_error("claude_agent_sdk.observe", exc)

    async def watch(self, messages: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """Yield ``messages`` unchanged, reading each with :meth:`observe`.

        While a watch runs, a ``Stop`` hook leaves the exit to the ``ResultMessage`` (which has
        the tokens). An exception from the stream passes through unchanged; a prompt it leaves
        open is exited ``error`` with it.
        """
        self._watching += 1
        try:
            async for message in messages:
                try:
                    self.observe(message)
                except Exception as exc:  # noqa: BLE001 - observe() guards itself; belt and braces
                    self.collector._guard.internal_error("claude_agent_sdk.watch", exc)
                yield message
        except BaseException as exc:
            try:
                for s in self._sessions.values():
                    if s.loop is not None and not s.loop.closed:
                        if isinstance(exc, Exception):
                            self._finish(s, "error", exc)
                        elif s.stopped:
                            self._finish(s, "end_turn")
            except Exception as inner:  # noqa: BLE001
                self.collector._guard.internal_error("claude_agent_sdk.watch", inner)
            raise
        finally:
            self._watching -= 1
            try:
                for s in self._sessions.values():
                    if s.stopped and s.loop is not None and not s.loop.closed:
                        self._finish(s, "end_turn")  # the stream ended without its ResultMessage
            except Exception as inner:  # noqa: BLE001
                self.collector._guard.internal_error("claude_agent_sdk.watch", inner)


def loopscope_hooks(
    collector: Collector, hooks: Mapping[str, list[Any]] | None = None, **options: Any
) -> dict[str, list[Any]]:
    """``ClaudeAgentOptions(hooks=loopscope_hooks(collector))``: the one line.

    Args:
        collector: Where the records go.
        hooks: Hooks you already have; they are kept, loopscope's are added after them.
        **options: :class:`ClaudeHooks` options (``conversation_id``, ``agent``,
            ``max_tool_calls``, ``model``, ``tags``, ``recovery_context``, ``on_loop``).
    """
    return ClaudeHooks(collector, **options).hooks(hooks)
