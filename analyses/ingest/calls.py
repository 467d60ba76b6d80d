"""Call bookkeeping shared by the readers that derive records from a conversation.

The message-array reader (``messages.records``) and the transcript readers
(``transcripts._session``) walk one conversation in order and meet the same
things: tool calls that wait for their result, results that answer one of them
(or none, or one already answered), protocol violations to report, the
fields every record they write starts with, the fields of the ``loop_exit``
they derive, and ISO 8601 times. ``CallBook`` keeps the first three;
``record_head``, ``loop_exit_fields`` and ``parse_iso_ts`` give the rest. The rules themselves (which call a result
answers: the oldest waiting one with its id) are the readers' documented ones.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, Generic, TypeVar

C = TypeVar("C")

SYNTHETIC_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
"""The time of a record whose source stores none and has none before it (plus its position, in seconds)."""
TOOL_STOP_REASONS = frozenset({"tool_use", "tool_calls", "function_call", "pause_turn"})
"""Stop reasons that mean "the loop goes on": the model asked for tools, or (Anthropic
``pause_turn``) a long server-side turn was paused to be resumed."""


def format_ts(moment: datetime) -> str:
    """RFC 3339 UTC with microseconds, as the collector writes it."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso_ts(text: str) -> datetime | None:
    """An ISO 8601 time (``...Z`` allowed; naive = UTC) in UTC; None when unreadable."""
    text = text.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def record_head(kind: str, moment: datetime, conversation_id: str, prompt_id: str, agent: str) -> dict[str, Any]:
    """The fields every derived record starts with, in the collector's order (no trace or span ids)."""
    return {
        "v": 1,
        "kind": kind,
        "ts": format_ts(moment),
        "conversation_id": conversation_id,
        "prompt_id": prompt_id,
        "agent": agent,
        "trace_id": None,
        "span_id": None,
    }


def loop_exit_fields(
    *,
    exit_reason: str,
    steps: int,
    calls: Sequence[Any],
    input_tokens: list[int],
    output_tokens: list[int],
    start: datetime | None,
    end: datetime | None,
    error_type: str | None,
    error_message: str | None,
    inferred: bool,
    source: str,
) -> dict[str, Any]:
    """The fields of a derived ``loop_exit`` after its head, in the collector's order.

    ``calls``: the prompt's answered calls (each with ``is_error``); the token lists: the
    counts the log stores (none: null); ``start``/``end``: None where a time is made up
    (no duration then).
    """
    return {
        "exit_reason": exit_reason,
        "steps": steps,
        "tool_calls": len(calls),
        "tool_errors": sum(1 for c in calls if c.is_error),
        "max_tool_calls": None,
        "input_tokens": sum(input_tokens) if input_tokens else None,
        "output_tokens": sum(output_tokens) if output_tokens else None,
        "duration_ms": (end - start).total_seconds() * 1000.0 if start and end and end >= start else None,
        "error_type": error_type,
        "error_message": error_message,
        "exit_inferred": inferred,
        "exit_source": source,
    }


class CallBook(Generic[C]):
    """One conversation's calls waiting for a result (by id, oldest first) and its protocol violations."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.pending: dict[str, deque[C]] = {}
        self.resolved: set[str] = set()
        self.violations: list[dict[str, Any]] = []

    def violation(self, kind: str, detail: str, prompt_id: str | None = None, call_id: str | None = None) -> None:
        """Report a protocol violation of this conversation."""
        self.violations.append(
            {"conversation_id": self.conversation_id, "prompt_id": prompt_id, "tool_call_id": call_id, "kind": kind, "detail": detail}
        )

    def asked(self, call_id: str, call: C) -> None:
        """``call`` waits for a result under ``call_id``."""
        self.pending.setdefault(call_id, deque()).append(call)

    def unanswered(self) -> Iterator[C]:
        """The calls still waiting for a result, by id in the order first asked, then oldest first."""
        for queue in self.pending.values():
            yield from queue

    def answered(self, call_id: str | None, where: str, asked_by: str, prompt_id: str | None) -> C | None:
        """The oldest call waiting under ``call_id``, now answered; None after reporting a result nobody waits for.

        ``where`` names the result (``message 7``, ``line 12``), ``asked_by`` who
        would have asked for it (``no model response``); ``prompt_id`` is the
        prompt such a violation is reported under.
        """
        queue = self.pending.get(call_id or "")
        if not queue:
            kind = "duplicate_result" if call_id in self.resolved else "unknown_result_id"
            self.violation(
                kind,
                f"{where} is a result for tool call id {call_id!r}, "
                + ("which already had one" if kind == "duplicate_result" else f"which {asked_by} asked for"),
                prompt_id,
                call_id,
            )
            return None
        call = queue.popleft()
        self.resolved.add(call_id or "")
        return call
