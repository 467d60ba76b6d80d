"""A raw OpenAI function-calling loop, instrumented with loopscope.

The loop is the shape of ``runOpenAiAgentLoop`` in "LLM Agent Tool-Call Retry: The Loop That
Survives Production": ``tool_calls`` instead of ``tool_use`` blocks, ``role: "tool"`` messages
instead of ``tool_result`` blocks (an error is simply the content of the tool message; loopscope
still records ``is_error: true``), every ``tool_call.id`` answered before the next request, parallel
calls run together, transient errors retried inside the tool, a tool-call budget.

OpenAI's ``finish_reason`` is mapped to the record vocabulary with ``openai_stop_reason``
(``stop`` -> ``end_turn``, ``length`` -> ``max_tokens``, ``tool_calls`` -> ``tool_use``).

Run it for real with ``openai.OpenAI()`` as ``client``; the tests run it as written against a
scripted fake client (tests/test_collector_examples.py).
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from loopscope.collectors import Collector, PromptLoop, openai_stop_reason

MODEL = "gpt-4.1"
MAX_TOOL_CALLS = 25

OPENAI_TOOL_DEFINITIONS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather forecast for a city on a date.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "date": {"type": "string", "description": "YYYY-MM-DD"}},
                "required": ["city", "date"],
            },
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
    tool_call: Any,
    tools: dict[str, Callable[..., str]],
    done: dict[str, str],
    sleep: Callable[[float], None],
) -> dict[str, Any]:
    """Execute one tool_call and build its ``role: "tool"`` message (never raises)."""
    content = None
    # The tool_calls entry as it is: its JSON argument string is parsed into call.arguments (only
    # their shape and fingerprint are recorded); malformed JSON sets call.arguments_error instead.
    with loop.tool_call_from(tool_call, catch=True) as call:
        if tool_call.id in done:  # idempotency: this tool_call already ran (we are resuming)
            content = done[tool_call.id]
            call.replayed(content)
        elif call.tool_name not in tools:
            call.fail(f"Unknown tool {call.tool_name!r}. Available tools: {', '.join(sorted(tools))}.", "unknown_tool")
        elif call.arguments_error is not None or not isinstance(call.arguments, dict):
            call.fail(f"Arguments are not a JSON object ({call.arguments_error}). Send a JSON object.", "invalid_arguments")
        else:
            content = execute_tool_with_retry(call, lambda: tools[call.tool_name](**call.arguments), sleep=sleep)
            call.returned(content)  # only its digest is recorded (result_fingerprint)
    if call.is_error:
        # The seed-000 block holds the error word for word, then the previous attempts and the
        # catalog's suggestions: it is the tool message's content (the raw error if it failed).
        return {"role": "tool", "tool_call_id": tool_call.id, "content": call.recovery_context() or call.error_text}
    done[tool_call.id] = content
    return {"role": "tool", "tool_call_id": tool_call.id, "content": content}


def run_openai_agent_loop(
    client: Any,
    collector: Collector,
    conversation_id: str,
    user_message: str,
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
    """Answer one user message. ``messages`` is the persisted conversation (mutated in place)."""
    done = {} if done is None else done
    messages.append({"role": "user", "content": user_message})
    with collector.prompt(
        conversation_id=conversation_id,
        prompt_id=prompt_id,
        agent=agent,
        max_tool_calls=max_tool_calls,
        provider="openai",
        model=MODEL,
        on_loop=on_loop,
    ) as loop:
        while True:
            response = client.chat.completions.create(model=MODEL, messages=messages, tools=OPENAI_TOOL_DEFINITIONS)
            choice = response.choices[0]
            loop.model_response(
                stop_reason=openai_stop_reason(choice.finish_reason),
                input_tokens=response.usage.prompt_tokens,
                output_tokens=response.usage.completion_tokens,
            )
            assistant = choice.message
            tool_calls = assistant.tool_calls or []
            messages.append(
                {
                    "role": "assistant",
                    "content": assistant.content,
                    **(
                        {
                            "tool_calls": [
                                {
                                    "id": c.id,
                                    "type": "function",
                                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                                }
                                for c in tool_calls
                            ]
                        }
                        if tool_calls
                        else {}
                    ),
                }
            )
            if not tool_calls:
                return assistant.content or ""
            if loop.over_budget(len(tool_calls)):
                loop.exit("budget_exceeded")
                raise BudgetExceededError(f"{conversation_id}: more than {max_tool_calls} tool calls")
            # Every tool_call.id needs its role:"tool" message before the next request.
            with ThreadPoolExecutor(max_workers=len(tool_calls)) as pool:
                messages.extend(pool.map(lambda c: dispatch_tool(loop, c, tools, done, sleep), tool_calls))
            spin = loop.spinning()  # before the next model call
            if spin is not None and spin.stop:  # on_loop="exit" has written loop_exit
                raise LoopDetectedError(f"{conversation_id}: {spin.describe()}")


if __name__ == "__main__":  # pragma: no cover - needs the openai package and an API key
    import openai
    from loopscope.collectors import JsonlSink

    col = Collector(JsonlSink("logs/loopscope.jsonl"), history=True)
    print(run_openai_agent_loop(openai.OpenAI(), col, "demo-1", "Weather in Paris on 2026-11-23?", []))
    col.close()
