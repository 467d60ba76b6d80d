"""A raw Anthropic tool_use loop, instrumented with loopscope.

The loop is the shape of ``runAgentLoop`` in "LLM Agent Tool-Call Retry: The Loop That Survives
Production": the messages array is the state, every ``tool_use`` block gets a ``tool_result``
(``is_error: true`` when the tool failed, so the model can recover), parallel ``tool_use`` blocks of
one response run together, transient errors are retried inside the tool, side effects are keyed on
``tool_use.id`` so a resumed loop replays instead of re-executing, and a tool-call budget bounds
the loop. loopscope adds one ``with`` per prompt and one per tool call (``loop.tool_call_from(block)``
takes the ``tool_use`` block as it is), and two run-time aids
(seed 000): after a failed call, ``call.recovery_context()`` builds an ``[Error Recovery Context]``
block (the error, the previous attempts at the same operation and target, the catalog's
suggestions) that goes into the next request right after the tool results; before each request,
``loop.spinning()`` says whether the prompt is in a retry loop, a no-progress loop or a cycle, and
with ``on_loop="exit"`` it has already written the exit: the loop stops.

Run it for real with ``anthropic.Anthropic()`` as ``client``; the tests run it as written against a
scripted fake client (tests/test_collector_examples.py).
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from loopscope.collectors import Collector, PromptLoop

MODEL = "claude-opus-4-7"
MAX_TOOL_CALLS = 25

TOOL_DEFINITIONS = [
    {
        "name": "get_weather",
        "description": "Weather forecast for a city on a date.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "date": {"type": "string", "description": "YYYY-MM-DD"},
            },
            "required": ["city", "date"],
        },
    },
]


class TransientError(Exception):
    """HTTP 429/5xx, connection reset, timeout: retried inside the tool, never shown to the model."""


class ToolInputError(Exception):
    """A permanent error: the model must change its call. The message says how."""


class BudgetExceededError(Exception):
    """The prompt asked for more tool calls than its budget allows."""


class LoopDetectedError(Exception):
    """The prompt was spinning (``loop.spinning()`` with ``on_loop="exit"``): stopped."""


def get_weather(city: str, date: str) -> str:
    """Stand-in for a weather API."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise ToolInputError(f"Invalid date format {date!r}. Use YYYY-MM-DD, e.g. 2026-11-23.")
    return f"{city} on {date}: 14°C, light rain"


TOOLS: dict[str, Callable[..., str]] = {"get_weather": get_weather}


def execute_tool_with_retry(
    call: Any,
    fn: Callable[[], str],
    max_attempts: int = 3,
    base_s: float = 0.25,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Run ``fn``; retry transient errors with backoff, telling the collector about each attempt."""
    for attempt in range(1, max_attempts + 1):
        try:
            return fn()
        except TransientError as exc:
            if attempt == max_attempts:
                call.fail(
                    f"{exc}. Gave up after {attempt} attempts; try again later.", type(exc).__name__, transient=True
                )
                return None
            call.attempt_failed(exc)
            sleep(base_s * 2 ** (attempt - 1))
    return None


def dispatch_tool(
    loop: PromptLoop,
    block: Any,
    tools: dict[str, Callable[..., str]],
    done: dict[str, str],
    sleep: Callable[[float], None],
) -> tuple[dict[str, Any], str | None]:
    """Execute one tool_use block: its tool_result, and the recovery block if it failed (never raises)."""
    content = None
    with loop.tool_call_from(block, catch=True) as call:  # the tool_use block as it is
        if block.id in done:  # idempotency: this tool_use already ran (we are resuming)
            content = done[block.id]
            call.replayed(content)
        elif block.name not in tools:
            call.fail(f"Unknown tool {block.name!r}. Available tools: {', '.join(sorted(tools))}.", "unknown_tool")
        else:
            content = execute_tool_with_retry(call, lambda: tools[block.name](**block.input), sleep=sleep)
            call.returned(content)  # only its digest is recorded (result_fingerprint)
    if call.is_error:
        # catch=True turned an exception into call.error_text (redacted, capped): hand it to the model,
        # with the seed-000 block (None only if building it failed).
        error = {"type": "tool_result", "tool_use_id": block.id, "content": call.error_text, "is_error": True}
        return error, call.recovery_context()
    done[block.id] = content
    return {"type": "tool_result", "tool_use_id": block.id, "content": content}, None


def _pending_tool_uses(messages: list[dict[str, Any]]) -> list[Any]:
    """tool_use blocks of a trailing assistant message that never got their tool_results (crash)."""
    if messages and messages[-1]["role"] == "assistant":
        return [b for b in messages[-1]["content"] if getattr(b, "type", None) == "tool_use"]
    return []


def run_agent_loop(
    client: Any,
    collector: Collector,
    conversation_id: str,
    user_message: str | None,
    messages: list[dict[str, Any]],
    *,
    prompt_id: str | None = None,
    agent: str = "support",
    max_tool_calls: int = MAX_TOOL_CALLS,
    tools: dict[str, Callable[..., str]] = TOOLS,
    done: dict[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_loop: str | None = "exit",
) -> str:
    """Answer one user message; ``user_message=None`` resumes a loop from its saved ``messages``.

    ``messages`` is the persisted conversation (mutated in place: save it after every turn);
    ``done`` maps tool_use ids to results already produced (the idempotency table).
    """
    done = {} if done is None else done
    if user_message is not None:
        messages.append({"role": "user", "content": user_message})
    with collector.prompt(
        conversation_id=conversation_id,
        prompt_id=prompt_id,
        agent=agent,
        max_tool_calls=max_tool_calls,
        provider="anthropic",
        model=MODEL,
        on_loop=on_loop,
    ) as loop:
        tool_uses = _pending_tool_uses(messages)
        while True:
            if tool_uses:
                if loop.over_budget(len(tool_uses)):
                    loop.exit("budget_exceeded")
                    raise BudgetExceededError(f"{conversation_id}: more than {max_tool_calls} tool calls")
                # Parallel tool use: run every block of this response together; results keep order.
                with ThreadPoolExecutor(max_workers=len(tool_uses)) as pool:
                    dispatched = list(pool.map(lambda b: dispatch_tool(loop, b, tools, done, sleep), tool_uses))
                # tool_result blocks come first in the user message (Anthropic's rule); each failed
                # call's [Error Recovery Context] block follows them, in the same message.
                results = [result for result, _ in dispatched]
                results += [{"type": "text", "text": context} for _, context in dispatched if context]
                messages.append({"role": "user", "content": results})
                spin = loop.spinning()  # before the next model call
                if spin is not None and spin.stop:  # on_loop="exit" has written loop_exit
                    raise LoopDetectedError(f"{conversation_id}: {spin.describe()}")

            response = client.messages.create(model=MODEL, max_tokens=4096, tools=TOOL_DEFINITIONS, messages=messages)
            loop.model_response(
                stop_reason=response.stop_reason,
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
            )
            messages.append({"role": "assistant", "content": response.content})
            if response.stop_reason != "tool_use":
                # Leaving the block writes loop_exit with this stop reason (end_turn, max_tokens, ...).
                return "".join(b.text for b in response.content if b.type == "text")
            tool_uses = [b for b in response.content if b.type == "tool_use"]


if __name__ == "__main__":  # pragma: no cover - needs the anthropic package and an API key
    import anthropic
    from loopscope.collectors import JsonlSink

    col = Collector(JsonlSink("logs/loopscope.jsonl"), history=True)
    print(run_agent_loop(anthropic.Anthropic(), col, "demo-1", "Weather in Paris on 2026-11-23?", []))
    col.close()
