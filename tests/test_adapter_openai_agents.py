"""The OpenAI Agents SDK adapter, with the real SDK against a scripted model server on 127.0.0.1.

The run of tests/adapter_scenario.py (a failing tool, its recovery, parallel calls, a budget exit)
must write the records the manual API writes for the same run, and give the hand-counted metrics
and triage through ``loopscope load``. Then: errors the SDK hands the model as strings, errors it
raises, a failing adapter (the agent still answers), and seed 000 (the block reaches the model,
a spin is stopped by policy).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

agents = pytest.importorskip("agents")  # the `thirdparty` extra
from agents import Agent, MaxTurnsExceeded, OpenAIChatCompletionsModel, function_tool  # noqa: E402
from loopscope.collectors import Collector, JsonlSink, MemorySink  # noqa: E402
from loopscope.collectors.adapters import openai_agents as adapter  # noqa: E402
from loopscope.collectors.adapters.openai_agents import LoopDetected, LoopscopeAgents  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"loopscope_test_{name}", Path(__file__).parent / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


scenario = _load("adapter_scenario")
fake = _load("fake_chat_server")
# The SDK's default trace processor uploads to OpenAI: there is no network here.
agents.set_trace_processors([])
DEFAULT_ERROR = "An error occurred while running the tool. Please try again."


def make_agent(server: Any, tools: list[Any]) -> Agent:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    return Agent(
        name="support",
        instructions="Help with orders.",
        tools=tools,
        model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client),
    )


def run_scenario(col: Collector, server: Any, lookup_order: Any, get_weather: Any) -> list[str]:
    agent = make_agent(server, [function_tool(lookup_order), function_tool(get_weather)])
    runner = LoopscopeAgents(col)
    answers, history = [], []
    for text in scenario.PROMPTS[:2]:
        result = runner.run_sync(agent, [*history, {"role": "user", "content": text}], conversation_id=scenario.CONVERSATION)
        history = result.to_input_list()
        answers.append(result.final_output)
    with pytest.raises(MaxTurnsExceeded):
        runner.run_sync(
            agent, [*history, {"role": "user", "content": scenario.PROMPTS[2]}],
            conversation_id=scenario.CONVERSATION, max_turns=2,
        )
    return answers


def test_the_scenario_records_equal_the_manual_api_and_give_the_counted_figures(tmp_path: Path) -> None:
    log = tmp_path / "agents.jsonl"
    col = Collector(JsonlSink(log))
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        answers = run_scenario(col, server, *scenario.make_tools())
    col.close()
    assert answers == scenario.ANSWERS
    outcomes = {cid: ("ok", result) for cid, result in scenario.OK_RESULTS.items()}
    outcomes.update({cid: ("error", None, DEFAULT_ERROR, DEFAULT_ERROR) for cid in ("call_1", "call_5", "call_6")})
    manual = scenario.manual_records(server.answers, outcomes, agent="support")
    # Every function tool call has the model's own call id and its step (check_log), and what the model was told.
    records = scenario.check_log(log, tmp_path, manual)
    calls = [r for r in records if r["kind"] == "tool_call"]
    assert {r["error_message"] for r in calls if r["is_error"]} == {DEFAULT_ERROR}


def test_a_custom_failure_error_function_is_an_error_with_its_text() -> None:
    """Only the function span's error says so: the result is an ordinary string."""

    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        raise KeyError(f"no order {order_id}")

    tool = function_tool(lookup_order, failure_error_function=lambda ctx, exc: f"Lookup failed: {exc}. Check the id.")
    script = {"Check order B2": [{"tool_calls": [("c1", "lookup_order", {"order_id": "B2"})]}, {"text": "Sorry."}]}
    sink = MemorySink()
    col = Collector(sink)
    with fake.ScriptedChatServer(script) as server:
        LoopscopeAgents(col).run_sync(make_agent(server, [tool]), "Check order B2", conversation_id="c")
    call, exit_ = sink.records
    assert (call["is_error"], call["error_message"]) == (True, "Lookup failed: 'no order B2'. Check the id.")
    assert exit_["exit_reason"] == "end_turn" and exit_["tool_errors"] == 1


def test_with_tracing_disabled_the_default_error_text_still_marks_the_error() -> None:
    lookup_order, get_weather = scenario.make_tools()
    script = {"Check order B2": [{"tool_calls": [("c1", "lookup_order", {"order_id": "B2"})]}, {"text": "Sorry."}]}
    sink = MemorySink()
    col = Collector(sink)
    agents.set_tracing_disabled(True)
    try:
        with fake.ScriptedChatServer(script) as server:
            LoopscopeAgents(col).run_sync(make_agent(server, [function_tool(lookup_order)]), "Check order B2")
    finally:
        agents.set_tracing_disabled(False)
    call, exit_ = sink.records
    assert (call["tool_call_id"], call["is_error"], call["error_message"]) == ("c1", True, DEFAULT_ERROR)
    assert exit_["conversation_id"].startswith("c-")  # no conversation given: a generated one


def test_a_tool_error_the_sdk_raises_ends_the_prompt_with_error() -> None:
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        raise KeyError(f"no order {order_id}")

    tool = function_tool(lookup_order, failure_error_function=None)
    script = {"Check order B2": [{"tool_calls": [("c1", "lookup_order", {"order_id": "B2"})]}, {"text": "Sorry."}]}
    sink = MemorySink()
    col = Collector(sink)
    with fake.ScriptedChatServer(script) as server, pytest.raises(agents.exceptions.UserError):
        LoopscopeAgents(col).run_sync(make_agent(server, [tool]), "Check order B2", conversation_id="c")
    call, exit_ = sink.records
    assert (call["tool_call_id"], call["is_error"], call["error_type"], call["error_message"]) == (
        "c1", True, "KeyError", "'no order B2'"
    )
    assert (exit_["exit_reason"], exit_["error_type"], exit_["tool_errors"]) == ("error", "UserError", 1)


def test_the_callers_own_hooks_and_input_filter_still_run() -> None:
    seen: list[str] = []

    class MyHooks(agents.RunHooks):
        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            seen.append(f"tool_end {context.tool_call_id}")

    def my_filter(data: Any) -> Any:
        seen.append("filter")
        return data.model_data

    lookup_order, get_weather = scenario.make_tools()
    script = {"Weather?": [{"tool_calls": [("w1", "get_weather", {"city": "Oslo"})]}, {"text": "Sunny."}]}
    sink = MemorySink()
    col = Collector(sink, history=True)
    with fake.ScriptedChatServer(script) as server:
        result = LoopscopeAgents(col, recovery_context=True).run_sync(
            make_agent(server, [function_tool(get_weather)]), "Weather?",
            hooks=MyHooks(), run_config=agents.RunConfig(call_model_input_filter=my_filter, group_id="thread-7"),
        )
    assert result.final_output == "Sunny."
    assert seen == ["filter", "tool_end w1", "filter"]
    assert [r["conversation_id"] for r in sink.records] == ["thread-7", "thread-7"]  # the run's group_id


# ---------------------------------------------------------------- never break the agent


def test_a_raising_sink_never_breaks_the_agent() -> None:
    col = Collector(scenario.RaisingSink(), strict=False)
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        answers = run_scenario(col, server, *scenario.make_tools())
    assert answers == scenario.ANSWERS
    assert col.stats.sink_errors == 9 and col.stats.emitted == 0  # 6 tool calls + 3 exits, all counted


@pytest.mark.parametrize("where", ["tool_start", "tool_end", "llm_end", "before_model_call"])
def test_a_failing_adapter_never_breaks_the_agent(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"adapter bug in {where}")

    monkeypatch.setattr(adapter._Run, where, broken)
    col = Collector(MemorySink(), strict=False, history=True)
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        answers = run_scenario(col, server, *scenario.make_tools())
    assert answers == scenario.ANSWERS
    assert col.stats.internal_errors > 0
    exits = [r for r in col.sink.records if r["kind"] == "loop_exit"]
    assert [e["exit_reason"] for e in exits] == ["end_turn", "end_turn", "budget_exceeded"]  # still written


def test_strict_mode_surfaces_adapter_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under pytest the guard re-raises (strict): an adapter bug fails the test instead of hiding."""
    monkeypatch.setattr(adapter._Run, "tool_end", lambda *a: 1 / 0)
    col = Collector(MemorySink())
    # The SDK wraps what a hook raises in UserError.
    with fake.ScriptedChatServer(scenario.SCRIPT) as server, pytest.raises(agents.exceptions.UserError, match="division by zero"):
        run_scenario(col, server, *scenario.make_tools())


# ---------------------------------------------------------------- seed 000 (issue 18)


BLOCK, blind, reads_the_block = fake.BLOCK, fake.blind, fake.reads_the_block


def failing_cancel_tool() -> Any:
    return function_tool(scenario.cancel_order, failure_error_function=lambda ctx, exc: f"Cancel failed: {exc}.")


def test_the_block_reaches_the_model_and_a_spin_is_stopped_by_policy() -> None:
    sink = MemorySink()
    col = Collector(sink, history=True)
    runner = LoopscopeAgents(col, recovery_context=True, on_loop="exit")
    with fake.ScriptedChatServer({"Cancel order Z9": [blind]}) as server:
        with pytest.raises(LoopDetected, match="retry loop: cancel_order failed 3 times"):
            runner.run_sync(make_agent(server, [failing_cancel_tool()]), "Cancel order Z9", conversation_id="c-z9")
    # The model was sent the block after each failure, right after the error text it was given.
    second = server.requests[1]["messages"]
    tool_message = next(m for m in second if m["role"] == "tool")
    assert tool_message["content"].startswith("Cancel failed: order Z9 has shipped and cannot be cancelled.\n\n" + BLOCK)
    assert "Operation: cancel_order(order_id=" in tool_message["content"]
    third = [m for m in server.requests[2]["messages"] if m["role"] == "tool"]
    assert "Previous attempts" in third[-1]["content"]  # the history lists the earlier attempt
    assert len(server.requests) == 3  # the fourth model call never happened
    calls, exit_ = sink.records[:-1], sink.records[-1]
    assert [c["tool_call_id"] for c in calls] == ["s1", "s2", "s3"] and all(c["is_error"] for c in calls)
    assert (exit_["exit_reason"], exit_["error_type"], exit_["steps"]) == ("error", "loop_detected", 3)


def test_a_model_that_reads_the_block_changes_course_and_a_blind_one_is_stopped() -> None:
    outcomes = {}
    for recovery in (True, False):
        sink = MemorySink()
        col = Collector(sink, history=True)
        runner = LoopscopeAgents(col, recovery_context=recovery, on_loop="exit")
        with fake.ScriptedChatServer({"Cancel order Z9": [reads_the_block]}) as server:
            try:
                runner.run_sync(make_agent(server, [failing_cancel_tool()]), "Cancel order Z9", conversation_id="c")
            except LoopDetected:
                pass
        exit_ = sink.records[-1]
        outcomes[recovery] = (exit_["exit_reason"], exit_["tool_calls"])
    assert outcomes == {True: ("end_turn", 1), False: ("error", 3)}


def test_spans_carry_the_tool_call_ids_and_the_error_status(span_recorder: tuple[Any, Any]) -> None:
    provider, exporter = span_recorder
    sink = MemorySink()
    col = Collector(sink, tracer_provider=provider)
    lookup_order, get_weather = scenario.make_tools()
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        agent = make_agent(server, [function_tool(lookup_order), function_tool(get_weather)])
        LoopscopeAgents(col).run_sync(agent, scenario.PROMPTS[0], conversation_id="s-1")
    finished = exporter.get_finished_spans()
    spans = {s.attributes.get("gen_ai.tool.call.id"): s for s in finished
             if s.attributes.get("gen_ai.operation.name") == "execute_tool"}
    assert sorted(spans) == ["call_1", "call_2", "call_3"]
    assert spans["call_1"].status.status_code.name == "ERROR" and spans["call_3"].status.status_code.name == "UNSET"
    (root,) = [s for s in finished if s.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert root.attributes["gen_ai.provider.name"] == "openai" and root.attributes["gen_ai.agent.name"] == "support"
    assert all(s.parent.span_id == root.context.span_id for s in spans.values())


def test_streamed_runs_write_the_same_records(tmp_path: Path) -> None:
    import asyncio

    sink = MemorySink()
    col = Collector(sink)
    lookup_order, get_weather = scenario.make_tools()

    async def main(server: Any) -> list[str]:
        agent = make_agent(server, [function_tool(lookup_order), function_tool(get_weather)])
        runner = LoopscopeAgents(col)
        kinds = []
        result = runner.run_streamed(agent, scenario.PROMPTS[0], conversation_id="s-1")
        async for event in result.stream_events():
            kinds.append(event.type)
        assert result.final_output == "Your order A1 has shipped; it is sunny in Paris."
        result = runner.run_streamed(agent, scenario.PROMPTS[2], conversation_id="s-1", max_turns=2)
        with pytest.raises(MaxTurnsExceeded):
            async for event in result.stream_events():
                pass
        return kinds

    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        kinds = asyncio.run(main(server))
    assert "run_item_stream_event" in kinds
    calls = [r for r in sink.records if r["kind"] == "tool_call"]
    exits = [r for r in sink.records if r["kind"] == "loop_exit"]
    assert sorted((c["tool_call_id"], c["step"], c["is_error"]) for c in calls) == [
        ("call_1", 0, True), ("call_2", 1, False), ("call_3", 1, False), ("call_5", 0, True), ("call_6", 1, True)]
    assert [(e["exit_reason"], e["steps"], e["tool_calls"], e["tool_errors"]) for e in exits] == [
        ("end_turn", 3, 3, 1), ("budget_exceeded", 2, 2, 2)]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_max_turns_error_handler_is_still_a_budget_exit(asynchronous: bool) -> None:
    def on_max_turns(data: Any) -> str:
        return "I could not finish in time."

    async def on_max_turns_async(data: Any) -> str:
        return on_max_turns(data)

    lookup_order, _ = scenario.make_tools()
    sink = MemorySink()
    col = Collector(sink)
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        result = LoopscopeAgents(col).run_sync(
            make_agent(server, [function_tool(lookup_order)]), scenario.PROMPTS[2], conversation_id="c", max_turns=2,
            error_handlers={"max_turns": on_max_turns_async if asynchronous else on_max_turns},
        )
    assert result.final_output == "I could not finish in time."
    exit_ = sink.records[-1]
    assert (exit_["exit_reason"], exit_["tool_calls"], exit_["tool_errors"]) == ("budget_exceeded", 2, 2)


def test_stop_on_first_tool_is_a_normal_end() -> None:
    _, get_weather = scenario.make_tools()
    script = {"Weather?": [{"tool_calls": [("w1", "get_weather", {"city": "Oslo"})]}, {"text": "never asked"}]}
    sink = MemorySink()
    col = Collector(sink)
    with fake.ScriptedChatServer(script) as server:
        agent = make_agent(server, [function_tool(get_weather)]).clone(tool_use_behavior="stop_on_first_tool")
        result = LoopscopeAgents(col).run_sync(agent, "Weather?", conversation_id="c")
    assert result.final_output == "sunny in Oslo" and len(server.requests) == 1
    assert (sink.records[-1]["exit_reason"], sink.records[-1]["steps"]) == ("end_turn", 1)
