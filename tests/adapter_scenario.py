"""One conversation that every framework adapter test runs, and its answers counted by hand.

Conversation ``conv-42``, three prompts, against :class:`fake_chat_server.ScriptedChatServer`:

1. "Where is my order A1?": ``lookup_order(A1)`` fails (the backend times out the first time),
   then ``lookup_order(A1)`` and ``get_weather(Paris)`` in parallel (one step) succeed, then the
   answer: 3 tool calls, 1 error, recovered (a later successful call, a normal exit).
2. "And the weather in Rome?": ``get_weather(Rome)``, then the answer: 1 call.
3. "Check order B2": the model asks for ``lookup_order(B2)`` (no such order: it fails) again and
   again; the framework's turn budget stops the run after 2 calls: ``budget_exceeded``, 2 errors,
   both aborted.

By hand: 3 prompts, 0 open, 6 tool calls (3, 1, 2: median 2, p99 2 + 0.98 x (3 - 2) = 2.98),
3 errors, 1 recovered (rate 1/3), 0 resolved later (prompt 3 is the last), conversation
recovery rate 1/3, 0 replays, classes recovered 1 / aborted 2; the first unrecovered error is
``call_5`` (prompt 3, step 0), aborted by a ``budget_exceeded`` exit.

:func:`manual_records` writes, through the manual API (``loop.tool_call``), what a hand-written
loop would have recorded for the same run, from the answers the fake model actually gave.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopscope.cli import app
from loopscope.collectors import Collector, MemorySink, openai_stop_reason
from typer.testing import CliRunner

CONVERSATION = "conv-42"
PROMPTS = ["Where is my order A1?", "And the weather in Rome?", "Check order B2"]
SCRIPT: dict[str, list[Any]] = {
    PROMPTS[0]: [
        {"tool_calls": [("call_1", "lookup_order", {"order_id": "A1"})]},
        {"tool_calls": [("call_2", "lookup_order", {"order_id": "A1"}), ("call_3", "get_weather", {"city": "Paris"})]},
        {"text": "Your order A1 has shipped; it is sunny in Paris."},
    ],
    PROMPTS[1]: [
        {"tool_calls": [("call_4", "get_weather", {"city": "Rome"})]},
        {"text": "Sunny in Rome too."},
    ],
    PROMPTS[2]: [
        {"tool_calls": [("call_5", "lookup_order", {"order_id": "B2"})]},
        {"tool_calls": [("call_6", "lookup_order", {"order_id": "B2"})]},
        {"tool_calls": [("call_7", "lookup_order", {"order_id": "B2"})]},
        {"text": "never reached: the budget stops the run first"},
    ],
}
#: Model calls each prompt makes (the budget allows two in prompt 3).
MODEL_CALLS = [3, 2, 2]
#: Exit of each prompt.
EXITS = ["end_turn", "end_turn", "budget_exceeded"]
#: What each tool call returned: ("ok", result) or ("error", error_type, error_message), per adapter.
OK_RESULTS = {"call_2": "order A1: shipped", "call_3": "sunny in Paris", "call_4": "sunny in Rome"}

EXPECTED_METRICS = {
    "prompts": 3,
    "open_prompts": 0,
    "tool_calls": 6,
    "median_tool_calls_per_prompt": 2.0,
    "p99_tool_calls_per_prompt": 2.98,
    "errors": 3,
    "recovered_errors": 1,
    "recovery_rate": 1 / 3,
    "resolved_later_errors": 0,
    "conversation_recovery_rate": 1 / 3,
    "replays": 0,
    "replay_rate": 0.0,
    "error_classes": {"recovered": 1, "open": 0, "aborted": 2, "gave_up": 0},
}


def make_tools() -> tuple[Any, Any]:
    """The two plain tool functions (each test wraps them with its framework's decorator)."""
    calls = {"A1": 0}

    def lookup_order(order_id: str) -> str:
        """Look up an order's shipping status."""
        if order_id != "A1":
            raise KeyError(f"no order {order_id}")
        calls["A1"] += 1
        if calls["A1"] == 1:
            raise TimeoutError("orders backend timed out after 30s")
        return f"order {order_id}: shipped"

    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    return lookup_order, get_weather


#: The agent's final answers to the first two prompts (the third ends at the budget).
ANSWERS = ["Your order A1 has shipped; it is sunny in Paris.", "Sunny in Rome too."]


def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    raise PermissionError(f"order {order_id} has shipped and cannot be cancelled")


class RaisingSink:
    """A sink that fails on every record (a full disk): the agent must run on regardless."""

    def emit(self, record: dict[str, Any]) -> None:
        raise OSError("disk full")


def manual_records(
    answers: list[dict[str, Any]], outcomes: dict[str, tuple[Any, ...]], agent: str, model_calls: list[int] = MODEL_CALLS
) -> list[dict[str, Any]]:
    """The records the manual API writes for the run the fake model answered (``answers``, in order).

    ``model_calls``: model calls per prompt (LangGraph's budget lets the model answer once more in
    prompt 3, asking for ``call_7``, which never runs). ``outcomes``: what each call that ran gave;
    a call missing from it never ran.
    """
    sink = MemorySink()
    col = Collector(sink)
    it = iter(answers)
    for text, n, exit_reason in zip(PROMPTS, model_calls, EXITS):
        with col.prompt(conversation_id=CONVERSATION, agent=agent, provider="openai") as loop:
            for _ in range(n):
                answer = next(it)
                choice = answer["choices"][0]
                loop.model_response(
                    openai_stop_reason(choice["finish_reason"]),
                    answer["usage"]["prompt_tokens"],
                    answer["usage"]["completion_tokens"],
                )
                for entry in choice["message"].get("tool_calls") or []:
                    if entry["id"] not in outcomes:
                        continue
                    with loop.tool_call_from(entry) as call:
                        outcome = outcomes[entry["id"]]
                        if outcome[0] == "error":
                            call.fail(outcome[2], outcome[1])
                            if len(outcome) > 3:
                                call.returned(outcome[3])
                        else:
                            call.returned(outcome[1])
            if exit_reason != "end_turn":
                loop.exit(exit_reason)
    col.close()
    return sink.records


VOLATILE = ("ts", "latency_ms", "trace_id", "span_id", "duration_ms", "prompt_id")


def comparable(records: list[dict[str, Any]]) -> list[tuple[int, str, str, dict[str, Any]]]:
    """Records without timestamps, latencies and span ids; prompts by order; a step's calls by id."""
    order = list(dict.fromkeys(r["prompt_id"] for r in records))
    rows = [
        (order.index(r["prompt_id"]), r["kind"], r.get("tool_call_id") or "~exit", {k: v for k, v in r.items() if k not in VOLATILE})
        for r in records
    ]
    return sorted(rows, key=lambda row: (row[0], row[1] == "loop_exit", row[3].get("step", 0), row[2]))


def load_and_report(log: Path, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``loopscope load``, then ``metrics -f json`` and ``triage conv-42 -f json``, as a user runs them."""
    runner = CliRunner()
    db = str(tmp_path / "adapters.duckdb")
    loaded = runner.invoke(app, ["load", str(log), "--db", db], catch_exceptions=False)
    assert loaded.exit_code == 0, loaded.output
    metrics = runner.invoke(app, ["metrics", "--db", db, "--format", "json"], catch_exceptions=False)
    assert metrics.exit_code == 0, metrics.output
    triage = runner.invoke(app, ["triage", CONVERSATION, "--db", db, "--format", "json"], catch_exceptions=False)
    assert triage.exit_code == 0, triage.output
    return json.loads(metrics.stdout), json.loads(triage.stdout)


def check_log(log: Path, tmp_path: Path, manual: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An adapter's log of the scenario: its tool calls are the six counted by hand, its records
    equal ``manual`` (what :func:`manual_records` wrote for the same run), and loopscope's figures
    from it are the hand-counted ones. Returns the log's records."""
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    calls = [r for r in records if r["kind"] == "tool_call"]
    assert sorted((r["tool_call_id"], r["step"], r["is_error"]) for r in calls) == [
        ("call_1", 0, True), ("call_2", 1, False), ("call_3", 1, False),
        ("call_4", 0, False), ("call_5", 0, True), ("call_6", 1, True),
    ]
    assert comparable(records) == comparable(manual)
    metrics, triage = load_and_report(log, tmp_path)
    check_figures(metrics, triage, list(dict.fromkeys(r["prompt_id"] for r in records)))
    return records


def check_figures(metrics: dict[str, Any], triage: dict[str, Any], prompt_ids: list[str]) -> None:
    """The hand-counted figures of the module docstring."""
    assert metrics == {**EXPECTED_METRICS, "recovery_rate": metrics["recovery_rate"],
                       "conversation_recovery_rate": metrics["conversation_recovery_rate"],
                       "p99_tool_calls_per_prompt": metrics["p99_tool_calls_per_prompt"]}
    assert abs(metrics["recovery_rate"] - 1 / 3) < 1e-9 and abs(metrics["conversation_recovery_rate"] - 1 / 3) < 1e-9
    assert abs(metrics["p99_tool_calls_per_prompt"] - 2.98) < 1e-9
    first = triage["first_unrecovered"]
    assert (first["prompt_id"], first["step"], first["tool_call_id"], first["tool_name"]) == (prompt_ids[2], 0, "call_5", "lookup_order")
    assert (first["class"], first["exit_reason"]) == ("aborted", "budget_exceeded")
    assert triage["error_classes"] == EXPECTED_METRICS["error_classes"]
    assert [p["prompt_id"] for p in triage["prompts"]] == prompt_ids
    assert [p["n_tool_calls"] for p in triage["prompts"]] == [3, 1, 2]
    assert triage["retry_loops"] == [] and triage["replays"] == []
