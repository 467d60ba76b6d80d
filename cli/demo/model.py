"""A scripted, deterministic stand-in for the model, shaped like Anthropic's Messages API.

Each scenario's behaviour is a *policy*: a generator that yields what the
model would answer and receives the tool results of its previous answer::

    def policy(m):
        results = yield [m.call("check_availability", check_in="next friday", ...)]
        if results[0].hint:           # corrective mode: follow the hint
            ...
        yield m.say("Booked!")         # a text answer ends the turn

A policy reads the real tool results (error code, hint, data), so the same
user request plays out differently in blind and corrective mode, as it does
with a real model. ``ScriptedModel.create`` turns the policy's next move into
a response object with ``stop_reason``, ``content`` blocks and ``usage``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any, Union


@dataclass(frozen=True)
class ToolUse:
    """One ``tool_use`` block the model asks for."""

    name: str
    input: dict[str, Any]
    id: str = ""
    type: str = "tool_use"


@dataclass(frozen=True)
class Text:
    """A text block: the model's answer to the user."""

    text: str
    type: str = "text"


@dataclass(frozen=True)
class Usage:
    """Token counts of one model call."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Response:
    """One model response (the fields of an Anthropic ``Message`` the loop reads)."""

    stop_reason: str
    content: list[Union[ToolUse, Text]]
    usage: Usage
    latency_ms: int


@dataclass(frozen=True)
class ToolResult:
    """A tool result as the model reads it back."""

    tool_use_id: str
    content: str
    is_error: bool
    context: str | None = None  # the [Error Recovery Context] block the loop put after this error

    @property
    def data(self) -> dict[str, Any]:
        """The result parsed as JSON (``{}`` when it is not a JSON object)."""
        try:
            value = json.loads(self.content)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    @property
    def error(self) -> str | None:
        """The error code, if the result is an error."""
        return self.data.get("error") if self.is_error else None

    @property
    def hint(self) -> str | None:
        """The corrective hint, if the loop gave one: in the result, or the recovery block's first suggestion.

        The scripted model follows whatever hint it is given; so a blind loop that injects
        ``call.recovery_context()`` makes it change course as the corrective loop does.
        """
        if not self.is_error:
            return None
        hint = self.data.get("hint")
        if hint is None and self.context:
            hint = next((line[4:] for line in self.context.splitlines() if line.startswith("  - ")), None)
        return hint


Move = Union[list[ToolUse], Text]
Policy = Callable[["Moves"], Generator[Move, list[ToolResult], None]]


class Moves:
    """Helpers a policy uses to say what the model does next."""

    @staticmethod
    def call(name: str, **args: Any) -> ToolUse:
        """Ask for one tool call (put several in one list for parallel calls)."""
        return ToolUse(name=name, input=args)

    @staticmethod
    def say(text: str) -> Text:
        """Answer the user and end the turn."""
        return Text(text)


@dataclass
class ScriptedModel:
    """Plays one prompt's policy as a sequence of model responses.

    Args:
        policy: the scenario's policy for this prompt.
        id_seed: makes ``tool_use`` ids unique and stable (conversation and
            prompt id); the n-th call of the prompt always gets the same id.
    """

    policy: Policy
    id_seed: str
    _gen: Generator[Move, list[ToolResult], None] | None = None
    _calls: int = 0
    _context_tokens: int = 0
    transcript: list[Response] = field(default_factory=list)

    def create(self, messages: list[dict[str, Any]]) -> Response:
        """The next response, given the conversation so far (Anthropic message shape)."""
        results = _last_tool_results(messages)
        if self._gen is None:
            self._gen = self.policy(Moves())
            move = next(self._gen)
        else:
            move = self._gen.send(results)
        self._context_tokens += 60 * len(results) + _tokens(messages[-1])
        input_tokens = 350 + self._context_tokens
        if isinstance(move, Text):
            response = Response("end_turn", [move], Usage(input_tokens, 20 + len(move.text) // 4), 900)
        else:
            blocks = [ToolUse(u.name, u.input, self._next_id()) for u in move]
            response = Response("tool_use", list(blocks), Usage(input_tokens, 35 * len(blocks)), 600 + 150 * len(blocks))
        self._context_tokens += response.usage.output_tokens
        self.transcript.append(response)
        return response

    def _next_id(self) -> str:
        self._calls += 1
        digest = hashlib.sha256(f"{self.id_seed}/{self._calls}".encode()).hexdigest()
        return f"toolu_{digest[:22]}"


def _last_tool_results(messages: list[dict[str, Any]]) -> list[ToolResult]:
    last = messages[-1]
    if last["role"] != "user" or isinstance(last["content"], str):
        return []
    results = [
        ToolResult(block["tool_use_id"], block["content"], block.get("is_error", False))
        for block in last["content"]
        if block.get("type") == "tool_result"
    ]
    # Recovery blocks follow the tool results, one per error, in the errors' order.
    contexts = iter(
        block["text"] for block in last["content"]
        if block.get("type") == "text" and block.get("text", "").startswith("[Error Recovery Context]")
    )
    return [replace(r, context=next(contexts, None)) if r.is_error else r for r in results]


def _tokens(message: dict[str, Any]) -> int:
    content = message["content"]
    text = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
    return len(text) // 4
