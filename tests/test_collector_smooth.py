"""The smoother manual API: ``loop.tool_call_from(block)``, ``@collector.tool``, ``async with``, short ids.

Each form must write exactly the record the long form writes for the same call (field by field,
ignoring the timestamp, the latency and the prompt id), and never raise into the host.
"""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace as NS
from typing import Any

import pytest
from loopscope.collectors import Collector, MemorySink
from loopscope.collectors.shape import args_fingerprint
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from openai.types.responses import ResponseFunctionToolCall

VOLATILE = ("ts", "latency_ms", "prompt_id", "trace_id", "span_id", "duration_ms")


def stable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in records]


def run_long_form(calls: list[tuple[str, str, Any]]) -> list[dict[str, Any]]:
    sink = MemorySink()
    col = Collector(sink)
    with col.prompt(conversation_id="c-1") as loop:
        loop.model_response(stop_reason="tool_use")
        for call_id, name, args in calls:
            with loop.tool_call(call_id, name, args) as call:
                call.returned("ok")
        loop.model_response(stop_reason="end_turn")
    col.close()
    return stable(sink.records)


ARGS = {"city": "Paris", "date": "2026-11-23", "days": 3}
BLOCKS = {
    "anthropic object": NS(type="tool_use", id="toolu_01", name="get_weather", input=ARGS),
    "anthropic dict": {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": ARGS},
    "openai object": ChatCompletionMessageFunctionToolCall(
        id="toolu_01", type="function", function={"name": "get_weather", "arguments": json.dumps(ARGS)}
    ),
    "openai dict": {"id": "toolu_01", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(ARGS)}},
    "responses item": ResponseFunctionToolCall(
        type="function_call", call_id="toolu_01", name="get_weather", arguments=json.dumps(ARGS)
    ),
}


@pytest.mark.parametrize("kind", list(BLOCKS))
def test_tool_call_from_writes_what_the_long_form_writes(kind: str) -> None:
    sink = MemorySink()
    col = Collector(sink)
    with col.prompt(conversation_id="c-1") as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call_from(BLOCKS[kind]) as call:
            assert call.arguments == ARGS and call.arguments_error is None  # parsed, ready for tool(**args)
            assert (call.tool_call_id, call.tool_name) == ("toolu_01", "get_weather")
            call.returned("ok")
        loop.model_response(stop_reason="end_turn")
    col.close()
    assert stable(sink.records) == run_long_form([("toolu_01", "get_weather", ARGS)])
    assert sink.records[0]["args_fingerprint"] == args_fingerprint(ARGS)
    assert col.stats.malformed_arguments == 0


@pytest.mark.parametrize("raw", ['{"city": "Par', "city=Paris", "[1, 2"])
def test_malformed_json_arguments_are_recorded_and_counted_not_raised(raw: str) -> None:
    sink = MemorySink()
    col = Collector(sink)  # strict under pytest: a raise would surface here
    entry = {"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": raw}}
    with col.prompt(conversation_id="c-1") as loop:
        with loop.tool_call_from(entry) as call:
            assert call.arguments == raw
            assert call.arguments_error is not None and call.arguments_error.startswith("arguments are not valid JSON")
            call.fail(f"Send a JSON object ({call.arguments_error}).", "invalid_arguments")
    col.close()
    rec = sink.records[0]
    assert (rec["input_shape"], rec["args_fingerprint"], rec["is_error"], rec["error_type"]) == (
        {}, None, True, "invalid_arguments"
    )
    assert raw not in json.dumps(sink.records)  # the raw text never reaches the log
    assert col.stats.malformed_arguments == 1 and col.stats.internal_errors == 0


def test_empty_arguments_string_is_no_arguments() -> None:
    sink = MemorySink()
    col = Collector(sink)
    with col.prompt(conversation_id="c-1") as loop:
        with loop.tool_call_from({"id": "c", "function": {"name": "now", "arguments": ""}}) as call:
            assert call.arguments == {}
    assert sink.records[0]["input_shape"] == {} and sink.records[0]["args_fingerprint"] == args_fingerprint({})
    assert col.stats.malformed_arguments == 0


def test_an_object_that_is_no_tool_call_never_raises() -> None:
    sink = MemorySink()
    col = Collector(sink, strict=False)
    with col.prompt(conversation_id="c-1") as loop:
        with loop.tool_call_from({"type": "text", "text": "hi"}) as call:
            pass
    assert call.tool_name == "unknown" and col.stats.internal_errors == 1
    assert sink.records[0]["kind"] == "tool_call"


def test_async_with_forms_and_parallel_calls_share_a_step() -> None:
    sink = MemorySink()
    col = Collector(sink, history=True)

    async def tool(call_id: str, city: str, fail: bool) -> None:
        async with loop_ref[0].tool_call(call_id, "get_weather", {"city": city}, catch=True) as call:
            await asyncio.sleep(0.01)
            if fail:
                raise TimeoutError("weather backend timed out")
            call.returned(f"sunny in {city}")

    loop_ref: list[Any] = []

    async def main() -> None:
        async with col.prompt(conversation_id="c-1", on_loop="exit") as loop:
            loop_ref.append(loop)
            loop.model_response(stop_reason="tool_use")
            await asyncio.gather(tool("a", "Paris", True), tool("b", "Rome", False))
            loop.model_response(stop_reason="end_turn")

    asyncio.run(main())
    col.close()
    tools, (exit_,) = sink.records[:2], sink.records[2:]
    assert sorted((r["tool_call_id"], r["step"], r["is_error"], r["error_type"]) for r in tools) == [
        ("a", 0, True, "TimeoutError"),
        ("b", 0, False, None),
    ]
    assert (exit_["exit_reason"], exit_["steps"], exit_["tool_calls"], exit_["tool_errors"]) == ("end_turn", 2, 2, 1)


def test_async_with_prompt_exits_with_error_on_an_exception() -> None:
    sink = MemorySink()
    col = Collector(sink)

    async def main() -> None:
        async with col.prompt(conversation_id="c-1"):
            raise RuntimeError("model API down")

    with pytest.raises(RuntimeError):
        asyncio.run(main())
    (exit_,) = sink.records
    assert (exit_["exit_reason"], exit_["error_type"], exit_["error_message"]) == ("error", "RuntimeError", "model API down")


# ---------------------------------------------------------------- @collector.tool


def test_decorated_tool_writes_what_the_long_form_writes() -> None:
    sink = MemorySink()
    col = Collector(sink)

    @col.tool
    def get_weather(city: str, date: str, days: int = 1) -> str:
        return "ok"

    with col.prompt(conversation_id="c-1") as loop:
        loop.model_response(stop_reason="tool_use")
        assert get_weather(**ARGS, tool_call_id="toolu_01") == "ok"  # the id is taken off the call
        loop.model_response(stop_reason="end_turn")
    col.close()
    assert stable(sink.records) == run_long_form([("toolu_01", "get_weather", ARGS)])
    assert get_weather.__name__ == "get_weather"


def test_decorated_tool_records_and_reraises_errors_and_names_itself() -> None:
    sink = MemorySink()
    col = Collector(sink)

    @col.tool(name="orders.lookup")
    def lookup(order_id: str) -> str:
        raise KeyError(f"no order {order_id}")

    with col.prompt(conversation_id="c-1") as loop:
        loop.model_response(stop_reason="tool_use")
        with pytest.raises(KeyError):
            lookup("A1")
    rec = sink.records[0]
    assert (rec["tool_name"], rec["is_error"], rec["outcome"], rec["error_type"]) == (
        "orders.lookup", True, "permanent_fail", "KeyError"
    )
    assert rec["input_shape"] == {"order_id": "string"} and rec["tool_call_id"].startswith("call-")


def test_decorated_tool_that_takes_tool_call_id_keeps_it() -> None:
    sink = MemorySink()
    col = Collector(sink)

    @col.tool
    def echo(text: str, tool_call_id: str) -> str:
        return tool_call_id

    with col.prompt(conversation_id="c-1"):
        assert echo("hi", tool_call_id="t-7") == "t-7"
    assert sink.records[0]["tool_call_id"] == "t-7"


def test_decorated_async_tools_in_parallel_tasks() -> None:
    sink = MemorySink()
    col = Collector(sink)

    @col.tool
    async def search(query: str) -> list[str]:
        await asyncio.sleep(0.01)
        return [query]

    async def main() -> None:
        async with col.prompt(conversation_id="c-1") as loop:
            loop.model_response(stop_reason="tool_use")
            await asyncio.gather(*(search(q, tool_call_id=f"t{i}") for i, q in enumerate("abc")))

    asyncio.run(main())
    tools = [r for r in sink.records if r["kind"] == "tool_call"]
    assert sorted(r["tool_call_id"] for r in tools) == ["t0", "t1", "t2"]
    assert {r["step"] for r in tools} == {0} and sink.records[-1]["tool_calls"] == 3


def test_decorated_tool_in_worker_threads_uses_the_only_open_prompt() -> None:
    sink = MemorySink()
    col = Collector(sink)

    @col.tool
    def get_weather(city: str) -> str:
        return city

    with col.prompt(conversation_id="c-1"):
        with ThreadPoolExecutor(2) as pool:  # plain threads do not inherit the context
            list(pool.map(lambda c: get_weather(c), ["Paris", "Rome"]))
    assert sink.records[-1]["tool_calls"] == 2 and col.stats.untracked_tool_calls == 0


def test_decorated_tool_guesses_nothing_with_two_prompts_open_elsewhere() -> None:
    sink = MemorySink()
    col = Collector(sink)

    @col.tool
    def get_weather(city: str) -> str:
        return city

    a, b = col.prompt(conversation_id="c-1"), col.prompt(conversation_id="c-2")  # open, not entered here
    results: list[str] = []
    t = threading.Thread(target=lambda: results.append(get_weather("Paris")))
    t.start()
    t.join()
    assert results == ["Paris"]  # the tool ran
    assert get_weather("Rome") == "Rome"
    a.close()
    b.close()
    assert [r["kind"] for r in sink.records] == ["loop_exit", "loop_exit"]
    assert col.stats.untracked_tool_calls == 2


def test_decorator_internal_failure_never_stops_the_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    sink = MemorySink()
    col = Collector(sink, strict=False)

    class Bad:
        def __iter__(self):  # noqa: ANN204 - list(col._open_prompts) raises
            raise RuntimeError("broken")

    @col.tool
    def ping() -> str:
        return "pong"

    monkeypatch.setattr(col, "_open_prompts", Bad())
    assert ping() == "pong"
    assert col.stats.internal_errors == 1


def test_a_decorated_tool_inside_a_tool_call_block_is_recorded_once() -> None:
    sink = MemorySink()
    col = Collector(sink)

    @col.tool
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    entry = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}

    async def main() -> None:
        async with col.prompt(conversation_id="c-1") as loop:
            async with loop.tool_call_from(entry) as call:
                call.returned(get_weather(**call.arguments))
            get_weather("Rome", tool_call_id="c2")  # outside the block: recorded by the decorator

    asyncio.run(main())
    with col.prompt(conversation_id="c-2") as loop, ThreadPoolExecutor(2) as pool:
        def dispatch(e: dict) -> None:
            with loop.tool_call_from(e) as call:
                call.returned(get_weather(**call.arguments))
        list(pool.map(dispatch, [entry, {**entry, "id": "c3"}]))
    tools = [(r["conversation_id"], r["tool_call_id"]) for r in sink.records if r["kind"] == "tool_call"]
    assert sorted(tools) == [("c-1", "c1"), ("c-1", "c2"), ("c-2", "c1"), ("c-2", "c3")]
    assert col.stats.untracked_tool_calls == 0


def test_decorated_methods_leave_self_out_and_flatten_kwargs() -> None:
    sink = MemorySink()
    col = Collector(sink)

    class Weather:
        @col.tool
        def forecast(self, city: str, **options: Any) -> str:
            return city

    with col.prompt(conversation_id="c-1"):
        Weather().forecast("Oslo", days=3, tool_call_id="a")
        Weather().forecast("Oslo", days=3, tool_call_id="b")  # another object, the same call
    a, b = sink.records[:2]
    assert a["input_shape"] == {"city": "string", "days": "integer"}
    assert a["args_fingerprint"] == b["args_fingerprint"] == args_fingerprint({"city": "Oslo", "days": 3})
