"""Run-time history: seed 000's error-recovery block and the loop signal, inside the host process.

With ``Collector(history=True)`` every tool call also leaves a small :class:`CallEntry` (tool,
target, argument fingerprint, result fingerprint, error line; never the argument values beyond
the capped target) in two places:

- the conversation's history (:class:`History`): at most ``max_calls`` entries per conversation
  and ``max_conversations`` conversations, least recently used evicted first; what falls out is
  counted (``stats.history_dropped``, ``stats.history_evicted``). :meth:`ToolCall.recovery_context`
  reads it to list the previous attempts at the same operation and target.
- the prompt's :class:`PromptWatch`: counters that say, after each call, whether the call
  completed or extended a loop (:data:`RETRY_LOOP`, :data:`NO_PROGRESS`, :data:`CYCLE`);
  :meth:`PromptLoop.spinning` returns it before the next model call.

The loop definitions are the offline ones (``loopscope.analyses.loops`` and the spec's retry
loop); the thresholds are defined here, once, and the analyses import them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, replace
from typing import Any

from loopscope.collectors import hints
from loopscope.collectors.redact import redact_secrets

#: Spec: a retry loop is three or more failing calls of one prompt with the same tool and arguments.
RETRY_LOOP_MIN_CALLS = 3
#: A no-progress loop: this many successful calls of one prompt with the same tool, arguments and result.
NO_PROGRESS_MIN_CALLS = 3
#: A cycle: this many consecutive calls alternating between two different calls (A-B-A-B).
CYCLE_MIN_CALLS = 4

RETRY_LOOP = "retry_loop"
NO_PROGRESS = "no_progress"
CYCLE = "cycle"
LOOP_KINDS = (RETRY_LOOP, NO_PROGRESS, CYCLE)

#: ``loop_exit.error_type`` of a prompt the ``on_loop="exit"`` policy stopped (the exit reason is
#: ``error``: the spec's list of exit reasons has no ``loop_detected``).
LOOP_DETECTED = "loop_detected"
ON_LOOP_POLICIES = ("warn", "exit")

DEFAULT_MAX_CONVERSATIONS = 256
DEFAULT_MAX_CALLS = 64
#: Distinct calls a prompt's loop counters keep; past it, new calls are not counted (counted as dropped).
MAX_KEYS_PER_PROMPT = 4096
#: Characters of a target value and of a previous attempt's error line in the block.
TARGET_CHARS = 120
ATTEMPT_CHARS = 160
DEFAULT_MAX_ATTEMPTS = 5


def without_error_label(text: str) -> str:
    """``text`` without a leading ``Error:`` label: the block prints its own (many tools already
    start their text with it, e.g. tau2-bench's "Error: not enough seats"), so it is not repeated."""
    head, sep, rest = text.partition(":")
    return rest.lstrip() if sep and head.strip().lower() == "error" else text


def one_line(text: object, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text if text is not None else "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class CallEntry:
    """One tool call as the history keeps it: about 1 KB with a full-length target and error line."""

    __slots__ = ("prompt_id", "step", "tool_name", "key", "fingerprint", "result_fingerprint", "is_error", "error")

    def __init__(
        self,
        prompt_id: str,
        step: int,
        tool_name: str,
        arguments: Any,
        fingerprint: str | None,
        result_fingerprint: str | None,
        is_error: bool,
        error: str | None,
    ) -> None:
        self.prompt_id = prompt_id
        self.step = step
        self.tool_name = tool_name
        self.fingerprint = fingerprint
        self.result_fingerprint = result_fingerprint
        self.is_error = is_error
        self.error = None if error is None else one_line(error, ATTEMPT_CHARS)
        name = hints.target_argument(arguments)
        if name is not None:
            # The value stays in memory only (capped); it is redacted when a block shows it.
            self.key = (tool_name, name, one_line(arguments[name], TARGET_CHARS))
        else:
            self.key = (tool_name, None, fingerprint)

    @property
    def target(self) -> str:
        """``name='value'`` (the value redacted) or ``<arguments 1a2b3c4d5e6f>``."""
        _, name, value = self.key
        if name is not None:
            return f"{name}={redact_secrets(value)!r}"
        return f"<arguments {value[:12]}>" if value else "<no arguments>"

    def operation(self) -> str:
        """``tool(target)``: the operation and its target, as the block shows it."""
        return f"{self.tool_name}({self.target})"


class History:
    """Per-conversation call history, bounded: ``max_calls`` per conversation, ``max_conversations`` in all.

    Thread-safe. ``dropped`` counts entries no longer kept (pushed out of a full conversation, or
    in an evicted one); ``evicted`` counts conversations evicted (least recently used first).
    """

    def __init__(self, max_conversations: int = DEFAULT_MAX_CONVERSATIONS, max_calls: int = DEFAULT_MAX_CALLS) -> None:
        self.max_conversations = max_conversations
        self.max_calls = max_calls
        self.dropped = 0
        self.evicted = 0
        self._convs: OrderedDict[str, deque[CallEntry]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return sum(len(d) for d in list(self._convs.values()))

    @property
    def conversations(self) -> int:
        """Conversations held now."""
        return len(self._convs)

    def add(self, conversation_id: str, entry: CallEntry) -> None:
        """Append ``entry`` to its conversation, evicting what the bounds require."""
        with self._lock:
            calls = self._convs.get(conversation_id)
            if calls is None:
                calls = self._convs[conversation_id] = deque(maxlen=self.max_calls)
                while len(self._convs) > self.max_conversations:
                    _, old = self._convs.popitem(last=False)
                    self.evicted += 1
                    self.dropped += len(old)
            else:
                self._convs.move_to_end(conversation_id)
            if len(calls) == self.max_calls:
                self.dropped += 1
            calls.append(entry)

    def attempts(self, conversation_id: str, entry: CallEntry) -> list[CallEntry]:
        """Earlier calls of the conversation at the same operation and target as ``entry``, oldest first.

        Empty when ``entry`` itself is no longer held (its conversation was evicted).
        """
        with self._lock:
            calls = list(self._convs.get(conversation_id, ()))
        earlier = []
        for c in calls:
            if c is entry:
                return earlier
            if c.key == entry.key:
                earlier.append(c)
        return []


@dataclass(frozen=True)
class Spin:
    """A loop the latest tool calls completed or extended (truthy).

    Attributes:
        kind: ``retry_loop``, ``no_progress`` or ``cycle``.
        tool_name: The repeated call's tool (a cycle's first call).
        args_fingerprint: Its arguments' fingerprint (may be None).
        calls: Calls in the loop so far (a cycle: consecutive alternating calls).
        other_tool_name: A cycle's second call's tool (None otherwise).
        other_args_fingerprint: Its fingerprint.
        stop: The ``on_loop="exit"`` policy wrote ``loop_exit``: leave the loop.
    """

    kind: str
    tool_name: str
    args_fingerprint: str | None
    calls: int
    other_tool_name: str | None = None
    other_args_fingerprint: str | None = None
    stop: bool = False

    def describe(self) -> str:
        """One line for a log or an exit message (no argument values)."""
        if self.kind == RETRY_LOOP:
            return f"retry loop: {self.tool_name} failed {self.calls} times with the same arguments"
        if self.kind == NO_PROGRESS:
            return f"no-progress loop: {self.tool_name} returned the same result {self.calls} times for the same arguments"
        return f"cycle: {self.tool_name} and {self.other_tool_name} alternated {self.calls} times with the same arguments"


class PromptWatch:
    """One prompt's loop counters (freed with the prompt). Thread-safe."""

    __slots__ = (
        "_lock", "_errors", "_oks", "_prev", "_run", "_pair", "_n", "_start", "spin", "spin_step", "seen",
        "keys_dropped", "warned",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._errors: dict[tuple[Any, ...], int] = {}
        self._oks: dict[tuple[Any, ...], int] = {}
        self._prev: tuple[Any, Any] = (None, None)  # the call keys before the latest, latest
        self._run = 0  # consecutive calls with key(i) == key(i-2) != key(i-1)
        self._pair: tuple[Any, Any] = (None, None)  # the cycle's first and second call
        self._n = 0  # calls observed
        self._start = 0  # position of the current cycle's first call
        self.seen: dict[tuple[Any, ...], Spin] = {}  # every loop of the prompt, its latest state
        self.spin: Spin | None = None
        self.spin_step = -1
        self.keys_dropped = 0
        self.warned: set[tuple[Any, ...]] = set()

    def _count(self, counts: dict[tuple[Any, ...], int], key: tuple[Any, ...]) -> int:
        n = counts.get(key)
        if n is None:
            if len(counts) >= MAX_KEYS_PER_PROMPT:
                self.keys_dropped += 1
                return 0
            n = 0
        counts[key] = n = n + 1
        return n

    def observe(self, entry: CallEntry, error_message: str | None, step: int, replayed: bool = False) -> list[Spin]:
        """Count one finished call; return the loops it completed or extended (retry, no-progress, cycle order).

        A call flagged ``replayed`` (short-circuited: a resumed loop, not the model asking again)
        counts toward retry loops only, as in the spec; no-progress loops and cycles skip it.
        """
        with self._lock:
            found: list[tuple[tuple[Any, ...], Spin]] = []
            if replayed and not entry.is_error:
                return []
            if entry.is_error:
                # Spec: same tool and fingerprint; a null fingerprint compares the error message.
                key = (entry.tool_name, entry.fingerprint, error_message if entry.fingerprint is None else None)
                n = self._count(self._errors, key)
                if n >= RETRY_LOOP_MIN_CALLS:
                    found.append(((RETRY_LOOP, *key), Spin(RETRY_LOOP, entry.tool_name, entry.fingerprint, n)))
            elif entry.result_fingerprint is not None:
                key = (entry.tool_name, entry.fingerprint, entry.result_fingerprint)
                n = self._count(self._oks, key)
                if n >= NO_PROGRESS_MIN_CALLS:
                    found.append(((NO_PROGRESS, *key), Spin(NO_PROGRESS, entry.tool_name, entry.fingerprint, n)))
            call = (entry.tool_name, entry.fingerprint)
            if replayed:
                return self._found(found, step)
            before, last = self._prev
            self._n += 1
            self._run = self._run + 1 if (call == before and call != last) else 0
            if self._run == 1:
                self._pair = (call, last)  # A-B-A: the cycle started two calls back, with A
                self._start = self._n - 2
            self._prev = (last, call)
            if self._run >= CYCLE_MIN_CALLS - 2:
                (a_tool, a_fp), (b_tool, b_fp) = self._pair
                found.append(((CYCLE, self._start), Spin(CYCLE, a_tool, a_fp, self._run + 2, b_tool, b_fp)))
            return self._found(found, step)

    def _found(self, found: list[tuple[tuple[Any, ...], Spin]], step: int) -> list[Spin]:
        # Called with the lock held.
        for key, spin in found:
            if key in self.seen or len(self.seen) < MAX_KEYS_PER_PROMPT:
                self.seen[key] = spin
            else:
                self.keys_dropped += 1
        if found:
            self.spin, self.spin_step = found[0][1], step
        return [spin for _, spin in found]

    def current(self, step: int) -> Spin | None:
        """The loop found among the calls of ``step`` (the latest model call's), or None."""
        spin = self.spin
        return spin if spin is not None and self.spin_step == step else None

    def stopped(self, spin: Spin) -> Spin:
        """``spin`` marked as stopped by the policy."""
        self.spin = spin = replace(spin, stop=True)
        return spin


def recovery_block(
    entry: CallEntry,
    error_text: str | None,
    error_type: str | None,
    previous: list[CallEntry] | None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> str:
    """The seed-000 ``[Error Recovery Context]`` block for a failed call.

    The error is shown as the collector holds it (redacted, at most ``max_error_chars``); at most
    ``max_attempts`` previous attempts are listed (``previous=None``: the history is off, and the
    block says the attempts are not tracked rather than "0") (the latest ones), and the block says how many
    earlier ones it leaves out, so its size is bounded (about 2 KB plus 200 characters per attempt).
    """
    suggestions = hints.suggestions_for(error_type, error_text, entry.tool_name)
    lines = [
        "[Error Recovery Context]",
        f"Operation: {entry.operation()}",
        f"Error: {without_error_label(error_text or '') or '(no message)'}",
    ]
    if error_type:
        lines.append(f"Error type: {one_line(error_type, ATTEMPT_CHARS)}")
    if previous is None:
        lines += ["", "Previous attempts (this session): not tracked"]
        previous = []
    else:
        lines += ["", f"Previous attempts (this session): {len(previous)}"]
    shown = previous[-max_attempts:] if max_attempts > 0 else []
    left_out = len(previous) - len(shown)
    if left_out:
        lines.append(f"  ({left_out} earlier attempt{'s' if left_out != 1 else ''} not listed)")
    for i, attempt in enumerate(shown, left_out + 1):
        result = (attempt.error or "error") if attempt.is_error else "ok"
        where = f"step {attempt.step}"
        if attempt.prompt_id != entry.prompt_id:
            where = f"prompt {one_line(attempt.prompt_id, 40)}, {where}"
        lines.append(f"  {i}. {attempt.operation()} [{where}] → {result}")
    lines += ["", "Recovery suggestions:", *(f"  - {s}" for s in suggestions)]
    return "\n".join(lines)
