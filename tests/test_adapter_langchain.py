"""The LangChain / LangGraph adapter, with real LangGraph against a scripted model server on 127.0.0.1.

The run of tests/adapter_scenario.py through ``create_react_agent`` (a ``ToolNode`` handing tool
errors back to the model, a checkpointer, ``thread_id`` as the conversation) must write the
records the manual API writes for the same run, and give the hand-counted metrics and triage
through ``loopscope load``. Then: a handled error that ends as ``ToolMessage(status="error")``,
both ways LangGraph stops at its step limit, a failing adapter, and seed 000 in a graph.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("langgraph")  # the `thirdparty` extra
from langchain_core.tools import ToolException, tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.errors import GraphRecursionError  # noqa: E402
from loopscope.collectors import Collector, JsonlSink, MemorySink  # noqa: E402
from loopscope.collectors.adapters import langchain as adapter  # noqa: E402
from loopscope.collectors.adapters.langchain import LoopDetected, LoopscopeCallbackHandler  # noqa: E402

with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain.agents
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import ToolNode, create_react_agent


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"loopscope_test_{name}", Path(__file__).parent / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


scenario = _load("adapter_scenario")
fake = _load("fake_chat_server")


def make_agent(server: Any, tools: list[Any], **kwargs: Any) -> Any:
    model = ChatOpenAI(model="fake-model", base_url=server.base_url, api_key="test-key", max_retries=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            model, ToolNode(tools, handle_tool_errors=True), checkpointer=InMemorySaver(), name="support", **kwargs
        )


def run_scenario(handler: Any, server: Any, recursion_limit: int = 5) -> list[str]:
    lookup_order, get_weather = scenario.make_tools()
    agent = make_agent(server, [tool(lookup_order), tool(get_weather)])
    config = {"configurable": {"thread_id": scenario.CONVERSATION}, "callbacks": [handler]}
    answers = []
    for text in scenario.PROMPTS[:2]:
        result = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
        answers.append(result["messages"][-1].content)
    last = {"messages": [{"role": "user", "content": scenario.PROMPTS[2]}]}
    if recursion_limit == 5:  # the limit is hit inside the graph: GraphRecursionError
        with pytest.raises(GraphRecursionError):
            agent.invoke(last, {**config, "recursion_limit": recursion_limit})
    else:  # one step more: the agent node answers "need more steps" itself, no exception
        result = agent.invoke(last, {**config, "recursion_limit": recursion_limit})
        assert "need more steps" in result["messages"][-1].content
    return answers


OUTCOMES = {cid: ("ok", result) for cid, result in scenario.OK_RESULTS.items()}
OUTCOMES.update({
    "call_1": ("error", "TimeoutError", "orders backend timed out after 30s"),
    "call_5": ("error", "KeyError", "'no order B2'"),
    "call_6": ("error", "KeyError", "'no order B2'"),
})


@pytest.mark.parametrize("recursion_limit", [5, 6])
def test_the_scenario_records_equal_the_manual_api_and_give_the_counted_figures(recursion_limit: int, tmp_path: Path) -> None:
    log = tmp_path / "langgraph.jsonl"
    col = Collector(JsonlSink(log))
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        assert run_scenario(LoopscopeCallbackHandler(col), server, recursion_limit) == scenario.ANSWERS
    col.close()
    # LangGraph lets the model answer a third time in prompt 3 (asking for call_7, never run).
    manual = scenario.manual_records(server.answers, OUTCOMES, agent="support", model_calls=[3, 2, 3])
    records = scenario.check_log(log, tmp_path, manual)
    assert {r["conversation_id"] for r in records} == {scenario.CONVERSATION}  # the thread_id


def test_a_tool_message_with_error_status_is_an_error() -> None:
    """``handle_tool_error=True``: the tool ends through on_tool_end, with ToolMessage(status="error")."""

    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        raise ToolException(f"Order {order_id} not found. Ask the user for the id on the receipt.")

    handled = tool(lookup_order)
    handled.handle_tool_error = True
    script = {"Check order B2": [{"tool_calls": [("c1", "lookup_order", {"order_id": "B2"})]}, {"text": "Which id?"}]}
    sink = MemorySink()
    col = Collector(sink)
    with fake.ScriptedChatServer(script) as server:
        agent = make_agent(server, [handled])
        agent.invoke({"messages": [{"role": "user", "content": "Check order B2"}]},
                     {"configurable": {"thread_id": "t-1"}, "callbacks": [LoopscopeCallbackHandler(col)]})
    call, exit_ = sink.records
    assert (call["tool_call_id"], call["is_error"], call["outcome"], call["error_type"], call["error_message"]) == (
        "c1", True, "permanent_fail", None, "Order B2 not found. Ask the user for the id on the receipt."
    )
    assert (exit_["exit_reason"], exit_["tool_errors"], exit_["conversation_id"]) == ("end_turn", 1, "t-1")


def test_without_a_thread_id_the_handler_conversation_is_used() -> None:
    script = {"Weather?": [{"tool_calls": [("w1", "get_weather", {"city": "Oslo"})]}, {"text": "Sunny."}]}
    sink = MemorySink()
    col = Collector(sink)
    _, get_weather = scenario.make_tools()
    with fake.ScriptedChatServer(script) as server:
        agent = make_agent(server, [tool(get_weather)])
        agent.invoke({"messages": [{"role": "user", "content": "Weather?"}]},
                     {"configurable": {"thread_id": None}, "callbacks": [LoopscopeCallbackHandler(col, conversation_id="u-9")]})
    assert [r["conversation_id"] for r in sink.records] == ["u-9", "u-9"]


def test_a_tool_run_alone_is_a_prompt_of_its_own() -> None:
    sink = MemorySink()
    col = Collector(sink)
    _, get_weather = scenario.make_tools()
    handler = LoopscopeCallbackHandler(col, conversation_id="u-1")
    out = tool(get_weather).invoke({"type": "tool_call", "id": "t9", "name": "get_weather", "args": {"city": "Oslo"}},
                                   {"callbacks": [handler]})
    assert out.content == "sunny in Oslo"
    call, exit_ = sink.records
    assert (call["tool_call_id"], call["is_error"], exit_["exit_reason"], exit_["tool_calls"]) == ("t9", False, "unknown", 1)


# ---------------------------------------------------------------- never break the agent


def test_a_raising_sink_never_breaks_the_agent() -> None:
    col = Collector(scenario.RaisingSink(), strict=False)
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        assert run_scenario(LoopscopeCallbackHandler(col), server) == scenario.ANSWERS
    assert col.stats.sink_errors == 9 and col.stats.emitted == 0  # 6 tool calls + 3 exits, all counted


@pytest.mark.parametrize("where", ["start", "end", "llm_end", "tool_start", "tool_end"])
def test_a_failing_adapter_never_breaks_the_agent(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"adapter bug in {where}")

    monkeypatch.setattr(adapter._Core, where, broken)
    col = Collector(MemorySink(), strict=False)
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        assert run_scenario(LoopscopeCallbackHandler(col), server) == scenario.ANSWERS
    assert col.stats.internal_errors > 0


def test_strict_mode_surfaces_adapter_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under pytest the guard re-raises; LangChain logs a handler's error (raise_error=False) and goes on."""
    monkeypatch.setattr(adapter._Core, "tool_end", lambda *a: 1 / 0)
    col = Collector(MemorySink())
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        assert run_scenario(LoopscopeCallbackHandler(col), server) == scenario.ANSWERS
    assert col.stats.internal_errors == 6  # every tool end, counted


# ---------------------------------------------------------------- seed 000 (issue 18)


BLOCK, reads_the_block = fake.BLOCK, fake.reads_the_block


@pytest.mark.parametrize("recovery", [True, False])
def test_pre_model_hook_injects_the_block_or_stops_the_spin(recovery: bool) -> None:
    sink = MemorySink()
    col = Collector(sink, history=True)
    handler = LoopscopeCallbackHandler(col, recovery_context=recovery, on_loop="exit")
    with fake.ScriptedChatServer({"Cancel order Z9": [reads_the_block]}) as server:
        agent = make_agent(server, [tool(scenario.cancel_order)], pre_model_hook=handler.pre_model_hook)
        config = {"configurable": {"thread_id": "c-z9"}, "callbacks": [handler]}
        if recovery:
            result = agent.invoke({"messages": [{"role": "user", "content": "Cancel order Z9"}]}, config)
            assert "cannot be cancelled" in result["messages"][-1].content
            # The graph state keeps the plain error; the model was sent the block after it.
            assert BLOCK not in result["messages"][-2].content
            sent = [m for m in server.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
            assert sent.startswith("Error: PermissionError('order Z9 has shipped and cannot be cancelled')")
            assert BLOCK + "\nOperation: cancel_order(order_id=" in sent
        else:
            with pytest.raises(LoopDetected, match="retry loop: cancel_order failed 3 times"):
                agent.invoke({"messages": [{"role": "user", "content": "Cancel order Z9"}]}, config)
            assert len(server.requests) == 3
    exit_ = sink.records[-1]
    expected = ("end_turn", 1, None) if recovery else ("error", 3, "loop_detected")
    assert (exit_["exit_reason"], exit_["tool_calls"], exit_["error_type"]) == expected


def test_ainvoke_records_the_same_calls() -> None:
    """Async graphs: callbacks arrive from the event loop, parallel tools run as tasks."""
    import asyncio

    sink = MemorySink()
    col = Collector(sink)
    lookup_order, get_weather = scenario.make_tools()
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        agent = make_agent(server, [tool(lookup_order), tool(get_weather)])
        config = {"configurable": {"thread_id": "a-1"}, "callbacks": [LoopscopeCallbackHandler(col)]}
        result = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": scenario.PROMPTS[0]}]}, config))
    assert result["messages"][-1].content == scenario.ANSWERS[0]
    calls, exit_ = sink.records[:-1], sink.records[-1]
    assert sorted((c["tool_call_id"], c["step"], c["is_error"], c["error_type"]) for c in calls) == [
        ("call_1", 0, True, "TimeoutError"), ("call_2", 1, False, None), ("call_3", 1, False, None)]
    assert (exit_["exit_reason"], exit_["steps"], exit_["tool_calls"], exit_["conversation_id"]) == ("end_turn", 3, 3, "a-1")


def test_runs_below_a_parent_never_seen_open_no_prompt() -> None:
    """A handler added below the top-level run sees children of an unknown parent: no invented prompt."""
    from uuid import uuid4

    sink = MemorySink()
    col = Collector(sink)
    handler = LoopscopeCallbackHandler(col)
    chain, tool_run = uuid4(), uuid4()
    handler.on_chain_start({}, {}, run_id=chain, parent_run_id=uuid4())
    handler.on_tool_start({"name": "t"}, "{}", run_id=tool_run, parent_run_id=chain, inputs={}, tool_call_id="x")
    handler.on_tool_end("done", run_id=tool_run, parent_run_id=chain)
    handler.on_chain_end({}, run_id=chain)
    col.close()
    assert sink.records == [] and col.stats.internal_errors == 0


def test_spans_carry_the_tool_call_ids_and_the_error_status(span_recorder: tuple[Any, Any]) -> None:
    provider, exporter = span_recorder
    sink = MemorySink()
    col = Collector(sink, tracer_provider=provider, provider="openai")
    lookup_order, get_weather = scenario.make_tools()
    with fake.ScriptedChatServer(scenario.SCRIPT) as server:
        agent = make_agent(server, [tool(lookup_order), tool(get_weather)])
        agent.invoke({"messages": [{"role": "user", "content": scenario.PROMPTS[0]}]},
                     {"configurable": {"thread_id": "s-1"}, "callbacks": [LoopscopeCallbackHandler(col)]})
    spans = {s.attributes.get("gen_ai.tool.call.id"): s for s in exporter.get_finished_spans()
             if s.attributes.get("gen_ai.operation.name") == "execute_tool"}
    assert sorted(spans) == ["call_1", "call_2", "call_3"]
    assert spans["call_1"].status.status_code.name == "ERROR" and spans["call_2"].status.status_code.name == "UNSET"
    (root,) = [s for s in exporter.get_finished_spans() if s.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert all(s.parent.span_id == root.context.span_id for s in spans.values())
    records = {r["tool_call_id"]: r for r in sink.records if r["kind"] == "tool_call"}
    assert {cid: format(s.context.span_id, "016x") for cid, s in spans.items()} == {cid: r["span_id"] for cid, r in records.items()}


def test_parallel_failures_each_get_their_own_block() -> None:
    """Two tools fail in one step, on two threads: each ToolMessage gets its own call's block."""

    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        raise PermissionError(f"order {order_id} has shipped")

    def refund_order(order_id: str) -> str:
        """Refund an order."""
        raise ValueError(f"order {order_id} was paid with a voucher")

    script = {"Undo Z9": [{"tool_calls": [("a", "cancel_order", {"order_id": "Z9"}), ("b", "refund_order", {"order_id": "Z9"})]},
                          {"text": "Neither is possible."}]}
    sink = MemorySink()
    col = Collector(sink, history=True)
    handler = LoopscopeCallbackHandler(col, recovery_context=True)
    with fake.ScriptedChatServer(script) as server:
        agent = make_agent(server, [tool(cancel_order), tool(refund_order)], pre_model_hook=handler.pre_model_hook)
        agent.invoke({"messages": [{"role": "user", "content": "Undo Z9"}]},
                     {"configurable": {"thread_id": "p-1"}, "callbacks": [handler]})
    sent = {m["tool_call_id"]: m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"}
    assert "Operation: cancel_order(" in sent["a"] and "has shipped" in sent["a"].split(BLOCK)[1]
    assert "Operation: refund_order(" in sent["b"] and "voucher" in sent["b"].split(BLOCK)[1]
