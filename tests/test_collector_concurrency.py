"""``with loop.tool_call(...)`` under asyncio.gather and a ThreadPoolExecutor.

Many agents run the parallel tool calls of one model response concurrently. Each call must get
its own record with its own latency and outcome, every tool span must be a child of the prompt
span (never of a sibling tool span that happened to be current), spans the tool itself opens must
nest under that tool's span, and the prompt's counters must add up.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from loopscope.collectors import Collector, MemorySink
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture
def traced(span_recorder):
    provider, exporter = span_recorder
    sink = MemorySink()
    return Collector(sink, tracer_provider=provider), sink, exporter, provider.get_tracer("app")


def _tool_spans(exporter: InMemorySpanExporter) -> dict[str, object]:
    return {s.attributes["gen_ai.tool.call.id"]: s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")}


def test_asyncio_gather_records_parents_and_latencies(traced) -> None:  # noqa: ANN001
    col, sink, exporter, tracer = traced

    async def tool(loop, i: int):  # noqa: ANN001, ANN202
        with loop.tool_call(f"t{i}", "fetch", {"i": i}, catch=True) as call:
            # Finish in reverse order of start, so the calls' enter/exit interleave.
            await asyncio.sleep(0.02 * (3 - i))
            with tracer.start_as_current_span(f"http {i}"):
                await asyncio.sleep(0)
            if i == 1:
                raise RuntimeError("upstream said no")
        return call

    async def main():  # noqa: ANN202
        with col.prompt(conversation_id="c-async", prompt_id="p1", agent="async") as loop:
            loop.model_response(stop_reason="tool_use")
            calls = await asyncio.gather(*(tool(loop, i) for i in range(3)))
            with tracer.start_as_current_span("model call"):
                pass
            loop.model_response(stop_reason="end_turn")
        return calls

    calls = asyncio.run(main())
    spans = {s.name: s for s in exporter.get_finished_spans()}
    root = spans["invoke_agent async"]
    tools = _tool_spans(exporter)
    assert sorted(tools) == ["t0", "t1", "t2"]
    for i in range(3):
        assert tools[f"t{i}"].parent.span_id == root.context.span_id
        assert spans[f"http {i}"].parent.span_id == tools[f"t{i}"].context.span_id
    # After the gather the prompt span is current again, not a leftover tool span.
    assert spans["model call"].parent.span_id == root.context.span_id

    assert [c.is_error for c in calls] == [False, True, False]
    # Each call timed itself: t0 slept longest.
    assert calls[0].latency_ms > calls[1].latency_ms > calls[2].latency_ms
    recs = {r["tool_call_id"]: r for r in sink.records if r["kind"] == "tool_call"}
    assert {k: (r["step"], r["is_error"]) for k, r in recs.items()} == {
        "t0": (0, False),
        "t1": (0, True),
        "t2": (0, False),
    }
    assert recs["t1"]["span_id"] == format(tools["t1"].context.span_id, "016x")
    (exit_rec,) = [r for r in sink.records if r["kind"] == "loop_exit"]
    assert (exit_rec["tool_calls"], exit_rec["tool_errors"], exit_rec["exit_reason"]) == (3, 1, "end_turn")


def test_cancelled_tool_is_recorded_and_not_swallowed(traced) -> None:  # noqa: ANN001
    col, sink, _, _ = traced

    async def main() -> None:
        with col.prompt(conversation_id="c-cancel", prompt_id="p1") as loop:
            loop.model_response(stop_reason="tool_use")

            async def slow() -> None:
                with loop.tool_call("t-slow", "slow", {}, catch=True):
                    await asyncio.sleep(10)

            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(slow(), 0.01)
            loop.model_response(stop_reason="end_turn")

    asyncio.run(main())
    (rec,) = [r for r in sink.records if r["kind"] == "tool_call"]
    # catch=True swallows Exceptions only: the CancelledError reached wait_for.
    assert (rec["is_error"], rec["error_type"]) == (True, "CancelledError")


def test_thread_pool_parallel_calls_of_one_step(traced) -> None:  # noqa: ANN001
    col, sink, exporter, tracer = traced
    steps, width = 20, 8

    def tool(loop, step: int, i: int) -> None:  # noqa: ANN001
        with loop.tool_call(f"t{step}-{i}", "blocking", {"i": i}, catch=True) as call:
            with tracer.start_as_current_span(f"db {step}-{i}"):
                time.sleep(0.0005)
            if i == 0:
                call.fail("row locked, retry in 1s", "locked")

    with col.prompt(conversation_id="c-threads", prompt_id="p1", agent="threads", max_tool_calls=1000) as loop:
        with ThreadPoolExecutor(4) as pool:
            for step in range(steps):
                loop.model_response(stop_reason="tool_use")
                list(pool.map(lambda i, s=step: tool(loop, s, i), range(width)))
        loop.model_response(stop_reason="end_turn")

    spans = {s.name: s for s in exporter.get_finished_spans()}
    root = spans["invoke_agent threads"]
    tools = _tool_spans(exporter)
    assert len(tools) == steps * width
    assert all(s.parent.span_id == root.context.span_id for s in tools.values())
    assert all(spans[f"db {k[1:]}"].parent.span_id == s.context.span_id for k, s in tools.items())
    recs = [r for r in sink.records if r["kind"] == "tool_call"]
    assert len(recs) == steps * width
    # Calls started from worker threads still get the step of the response that asked for them.
    assert all(r["step"] == int(r["tool_call_id"][1:].split("-")[0]) for r in recs)
    (exit_rec,) = [r for r in sink.records if r["kind"] == "loop_exit"]
    assert (exit_rec["tool_calls"], exit_rec["tool_errors"], exit_rec["steps"]) == (steps * width, steps, steps + 1)
    assert loop.over_budget(1000 - steps * width) is False
    assert loop.over_budget(1000 - steps * width + 1) is True


def test_many_prompts_from_many_threads_share_one_jsonl_sink(tmp_path) -> None:  # noqa: ANN001
    import json

    from loopscope.collectors import JsonlSink

    col = Collector(JsonlSink(tmp_path / "log.jsonl", flush_interval=0.05))

    def agent(k: int) -> None:
        with col.prompt(conversation_id=f"c{k}", prompt_id="p1") as loop:
            for step in range(25):
                loop.model_response(stop_reason="tool_use")
                with loop.tool_call(f"t{step}", "x", {"k": k}):
                    pass
            loop.model_response(stop_reason="end_turn")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(agent, range(40)))
    col.close()
    recs = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    exits = [r for r in recs if r["kind"] == "loop_exit"]
    assert len(recs) == 40 * 26 and len(exits) == 40
    assert all(r["tool_calls"] == 25 and r["steps"] == 26 for r in exits)
    assert col.stats.dropped == 0 and col.stats.written == 40 * 26
