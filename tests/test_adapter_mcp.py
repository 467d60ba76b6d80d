"""The MCP client adapter, against a real MCP server (the ``mcp`` package's ``MCPServer``, in memory).

A scripted agent loop (the model's answers fixed) calls the server's tools through an
instrumented ``ClientSession``. One conversation, two prompts:

1. P1, step 0 (two calls in one model response): ``lookup_order(B2)`` raises inside the server
   (the server hands back an ``isError`` result, "Error executing tool lookup_order") and
   ``get_weather(Oslo)`` returns an ``isError`` result. Step 1: ``lookup_order(A1)`` and
   ``get_weather(Rome)`` succeed. Then the answer (end_turn).
2. P2: ``slow_report`` outlives the client's read timeout: ``call_tool`` raises ``MCPError``
   (-32001); the loop ends with ``error``.

Counted by hand: 2 prompts, tool calls 4 and 1 (median 2.5, p99 = 1 + 0.99 * 3 = 3.97);
errors 3: P1's two step-0 errors are recovered (ok calls at step 1, normal exit), P2's is
aborted; recovery rate 2/3, nothing resolved later, conversation recovery rate 2/3; no replays.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from loopscope.collectors import Collector, JsonlSink, MemorySink
from typer.testing import CliRunner

mcp = pytest.importorskip("mcp")
pytest.importorskip("mcp.server.mcpserver")

from loopscope.cli.app import app  # noqa: E402
from loopscope.collectors.adapters.mcp import instrument_mcp  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

# Per prompt, the model's responses: the tool calls of each step (id, tool, arguments).
SCRIPT = {
    "P1": [
        [("call_1", "lookup_order", {"order_id": "B2"}), ("call_2", "get_weather", {"city": "Oslo"})],
        [("call_3", "lookup_order", {"order_id": "A1"}), ("call_4", "get_weather", {"city": "Rome"})],
    ],
    "P2": [[("call_5", "slow_report", {"days": 7})]],
}
TIMEOUT_S = 0.3


def make_server() -> MCPServer:
    server = MCPServer("shop")

    @server.tool()
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        if order_id == "B2":
            raise TimeoutError("backend timeout after 30s")
        return f"order {order_id}: shipped"

    @server.tool()
    def get_weather(city: str) -> CallToolResult:
        """The weather in a city."""
        if city == "Oslo":
            return CallToolResult(content=[TextContent(type="text", text="Error: unknown city Oslo")], is_error=True)
        return CallToolResult(content=[TextContent(type="text", text=f"sunny in {city}")])

    @server.tool()
    async def slow_report(days: int) -> str:
        """A report that takes too long."""
        await anyio.sleep(TIMEOUT_S * 5)
        return "late"

    return server


async def agent(col: Collector) -> list[tuple[str, str, bool]]:
    """The scripted loop; returns what the model was handed: (tool_call_id, text, is_error)."""
    seen: list[tuple[str, str, bool]] = []
    current: dict[str, Any] = {"loop": None}
    async with mcp.Client(make_server()) as client:
        session = client.session
        instrument_mcp(session, lambda: current["loop"])
        for pid, steps in SCRIPT.items():
            with col.prompt(conversation_id="c-mcp", prompt_id=pid, agent="shop", provider="anthropic") as loop:
                current["loop"] = loop
                try:
                    for calls in steps:
                        loop.model_response("tool_use")
                        for tid, name, args in calls:
                            kw: dict[str, Any] = {"tool_call_id": tid}
                            if name == "slow_report":  # only this call has a (short) timeout
                                kw["read_timeout_seconds"] = TIMEOUT_S
                            result = await session.call_tool(name, args, **kw)
                            text = "\n".join(c.text for c in result.content)
                            seen.append((tid, text, bool(result.is_error)))
                    loop.model_response("end_turn")
                except MCPError as exc:
                    seen.append((tid, str(exc), True))
                    loop.exit("error", exc)
    return seen


def run(col: Collector) -> list[tuple[str, str, bool]]:
    return anyio.run(agent, col)


EXPECTED_SEEN = [
    ("call_1", "Error executing tool lookup_order", True),
    ("call_2", "Error: unknown city Oslo", True),
    ("call_3", "order A1: shipped", False),
    ("call_4", "sunny in Rome", False),
    ("call_5", f"Timed out after {TIMEOUT_S}s waiting for 'tools/call'", True),
]


def test_records_every_call_its_error_and_the_exception(tmp_path: Path) -> None:
    col = Collector(MemorySink(), strict=True)
    assert run(col) == EXPECTED_SEEN
    col.close()
    calls = [r for r in col.sink.records if r["kind"] == "tool_call"]
    got = [(c["tool_call_id"], c["tool_name"], c["step"], c["is_error"], c["error_type"], c["error_message"]) for c in calls]
    assert got == [
        ("call_1", "lookup_order", 0, True, None, "Error executing tool lookup_order"),
        ("call_2", "get_weather", 0, True, None, "Error: unknown city Oslo"),
        ("call_3", "lookup_order", 1, False, None, None),
        ("call_4", "get_weather", 1, False, None, None),
        ("call_5", "slow_report", 0, True, "MCPError", f"Timed out after {TIMEOUT_S}s waiting for 'tools/call'"),
    ]
    assert calls[0]["input_shape"] == {"order_id": "string"} and calls[4]["input_shape"] == {"days": "integer"}
    assert all(c["result_fingerprint"] for c in calls[2:4])  # the result's digest, never its text
    assert "shipped" not in json.dumps(col.sink.records)
    exits = [(r["prompt_id"], r["exit_reason"], r["steps"], r["tool_calls"], r["tool_errors"]) for r in col.sink.records if r["kind"] == "loop_exit"]
    assert exits == [("P1", "end_turn", 3, 4, 2), ("P2", "error", 1, 1, 1)]


def test_records_equal_the_manual_apis(tmp_path: Path) -> None:
    col = Collector(MemorySink(), strict=True)
    run(col)
    col.close()
    manual = Collector(MemorySink(), strict=True)
    texts = {tid: (text, err) for tid, text, err in EXPECTED_SEEN}
    for pid, steps in SCRIPT.items():
        with manual.prompt(conversation_id="c-mcp", prompt_id=pid, agent="shop", provider="anthropic") as loop:
            for calls in steps:
                loop.model_response("tool_use")
                for tid, name, args in calls:
                    text, err = texts[tid]
                    if tid == "call_5":
                        try:
                            with loop.tool_call(tid, name, args):
                                raise MCPError(-32001, text)
                        except MCPError as exc:
                            loop.exit("error", exc)
                        break
                    with loop.tool_call(tid, name, args) as call:
                        call.fail(text) if err else call.returned({"result": text} if name == "lookup_order" else text)
            if not loop.closed:
                loop.model_response("end_turn")
    manual.close()
    volatile = {"ts", "latency_ms", "duration_ms", "trace_id", "span_id"}
    got = [{k: v for k, v in r.items() if k not in volatile} for r in col.sink.records]
    want = [{k: v for k, v in r.items() if k not in volatile} for r in manual.sink.records]
    assert got == want


def test_records_load_and_give_the_hand_counted_metrics(tmp_path: Path) -> None:
    log = tmp_path / "mcp.jsonl"
    col = Collector(JsonlSink(log), strict=True)
    run(col)
    col.close()
    runner = CliRunner()
    db = str(tmp_path / "t.duckdb")
    assert runner.invoke(app, ["load", "--db", db, str(log)], catch_exceptions=False).exit_code == 0
    res = runner.invoke(app, ["metrics", "--db", db, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    m = m.get("overall", m)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"]) == (2, 0, 5)
    assert m["median_tool_calls_per_prompt"] == 2.5 and m["p99_tool_calls_per_prompt"] == pytest.approx(3.97)
    assert (m["errors"], m["recovered_errors"]) == (3, 2) and m["recovery_rate"] == pytest.approx(2 / 3)
    assert m["resolved_later_errors"] == 0 and m["conversation_recovery_rate"] == pytest.approx(2 / 3)
    assert (m["replays"], m["replay_rate"]) == (0, 0)
    assert m["error_classes"] == {"recovered": 2, "open": 0, "aborted": 1, "gave_up": 0}


def test_generated_ids_when_none_given_and_no_loop_no_record() -> None:
    col = Collector(MemorySink(), strict=True)

    async def go() -> None:
        async with mcp.Client(make_server()) as client:
            state: dict[str, Any] = {"loop": None}
            instrument_mcp(client, lambda: state["loop"])  # mcp.Client itself, this time
            await client.call_tool("get_weather", {"city": "Rome"})  # no loop: not recorded
            with col.prompt(conversation_id="c", prompt_id="p") as loop:
                state["loop"] = loop
                loop.model_response("tool_use")
                await client.call_tool("get_weather", {"city": "Rome"})
                await client.call_tool("get_weather", {"city": "Rome"})

    anyio.run(go)
    col.close()
    ids = [r["tool_call_id"] for r in col.sink.records if r["kind"] == "tool_call"]
    assert len(ids) == 2 and len(set(ids)) == 2 and all(i.startswith("mcp-") for i in ids)


@pytest.mark.parametrize("where", ["tool_call", "fail", "loop"])
def test_a_failing_adapter_never_breaks_the_agent(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from loopscope.collectors.prompt import PromptLoop
    from loopscope.collectors.tool_call import ToolCall

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("adapter bug")

    col = Collector(MemorySink(), strict=False)
    if where == "tool_call":
        monkeypatch.setattr(PromptLoop, "tool_call", boom)
        assert run(col) == EXPECTED_SEEN
    elif where == "fail":
        monkeypatch.setattr(ToolCall, "fail", boom)
        monkeypatch.setattr(ToolCall, "returned", boom)
        assert run(col) == EXPECTED_SEEN
        assert len([r for r in col.sink.records if r["kind"] == "tool_call"]) == 5  # still recorded
    else:

        async def go() -> list[str]:
            async with mcp.Client(make_server()) as client:
                instrument_mcp(client.session, boom)  # the caller's loop function raises
                r = await client.session.call_tool("get_weather", {"city": "Rome"}, tool_call_id="x")
                instrument_mcp(client.session, object())  # not a PromptLoop
                r2 = await client.session.call_tool("get_weather", {"city": "Paris"})
                return [r.content[0].text, r2.content[0].text]

        assert anyio.run(go) == ["sunny in Rome", "sunny in Paris"]
    col.close()
    if where != "loop":
        assert col.stats.internal_errors > 0


# ---------------------------------------------------------------- seed 000 (issue 18)

BLOCK = "[Error Recovery Context]"
SHIPPED = "order Z9 has shipped and cannot be cancelled"


def cancel_server() -> MCPServer:
    server = MCPServer("shop")

    @server.tool()
    def cancel_order(order_id: str) -> CallToolResult:
        """Cancel an order."""
        return CallToolResult(content=[TextContent(type="text", text=f"order {order_id} has shipped and cannot be cancelled")], is_error=True)

    return server


async def cancel_agent(col: Collector, reads_the_block: bool, **instrument: Any) -> tuple[list[Any], str | None]:
    """A scripted host loop: each step the model asks for cancel_order(Z9) again, unless (a model
    that reads the block) the last result it was handed carries the block. Returns the results
    handed to the model and the LoopDetected message that stopped the loop, if one did."""
    from loopscope.collectors.adapters.mcp import LoopDetected

    results: list[Any] = []
    stopped = None
    async with mcp.Client(cancel_server()) as client:
        session = client.session
        with col.prompt(conversation_id="c-z9", prompt_id="P", provider="anthropic") as loop:
            instrument_mcp(session, loop, **instrument)
            try:
                for n in range(1, 10):
                    last = results[-1] if results else None
                    if reads_the_block and last is not None and BLOCK in "\n".join(c.text for c in last.content):
                        loop.model_response("end_turn")  # "Z9 has shipped; I can start a return instead."
                        break
                    loop.model_response("tool_use")
                    results.append(await session.call_tool("cancel_order", {"order_id": "Z9"}, tool_call_id=f"c{n}"))
            except LoopDetected as exc:  # the policy wrote loop_exit: leave the loop
                stopped = str(exc)
    return results, stopped


def test_the_block_is_appended_to_the_failed_result_and_a_spin_is_stopped_by_policy() -> None:
    col = Collector(MemorySink(), history=True, strict=True)

    async def main() -> tuple[list[Any], str | None]:
        return await cancel_agent(col, False, recovery_context=True, on_loop="exit")

    results, stopped = anyio.run(main)
    assert stopped == "c-z9/P: retry loop: cancel_order failed 3 times with the same arguments"
    # results[] got the first two (the third call raised); each: the server's error, then the block
    assert len(results) == 2
    for n, result in enumerate(results):
        assert result.is_error is True
        assert [c.type for c in result.content] == ["text", "text"]
        assert result.content[0].text == SHIPPED
        block = result.content[1].text
        assert block.startswith(BLOCK) and "Operation: cancel_order(order_id='Z9')" in block
        assert f"Previous attempts (this session): {n}" in block
    calls = [r for r in col.sink.records if r["kind"] == "tool_call"]
    exits = [r for r in col.sink.records if r["kind"] == "loop_exit"]
    assert [(c["tool_call_id"], c["error_message"]) for c in calls] == [(f"c{n}", SHIPPED) for n in (1, 2, 3)]
    assert [(e["exit_reason"], e["error_type"], e["steps"]) for e in exits] == [("error", "loop_detected", 3)]


def test_off_by_default_and_a_model_that_reads_the_block_changes_course() -> None:
    outcomes = {}
    for recovery in (True, False):
        col = Collector(MemorySink(), history=True, strict=True)

        async def main(recovery: bool = recovery, col: Collector = col) -> tuple[list[Any], str | None]:
            return await cancel_agent(col, True, recovery_context=recovery, on_loop="exit")

        results, stopped = anyio.run(main)
        exits = [r for r in col.sink.records if r["kind"] == "loop_exit"]
        outcomes[recovery] = (len(results), stopped is not None, [(e["exit_reason"], e["tool_calls"]) for e in exits])
    # with the block the model answers after one failure; without it, it spins until the policy stops it
    assert outcomes == {True: (1, False, [("end_turn", 1)]), False: (2, True, [("error", 3)])}


def test_without_a_policy_nothing_stops_and_a_broken_block_adds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("block builder broke")

    monkeypatch.setattr("loopscope.collectors.tool_call.recovery_block", boom)
    col = Collector(MemorySink(), history=True, strict=False)

    async def main() -> tuple[list[Any], str | None]:
        return await cancel_agent(col, True, recovery_context=True)

    results, stopped = anyio.run(main)
    assert stopped is None
    assert len(results) == 9 and all([c.text for c in r.content] == [SHIPPED] for r in results)
    assert col.stats.internal_errors == 9
    exits = [r for r in col.sink.records if r["kind"] == "loop_exit"]
    # no policy: the host loop runs out of its own 9 steps (the last stop reason is the exit)
    assert [(e["exit_reason"], e["tool_calls"]) for e in exits] == [("tool_use", 9)]
