"""The Claude Agent SDK adapter, with the real SDK and the Claude Code CLI its wheel bundles.

The CLI talks to a scripted fake Anthropic Messages API on 127.0.0.1 (tests/fake_anthropic.py,
streaming SSE), so the run is offline and deterministic. One session, two prompts, then a
second session that hits ``max_turns``:

1. "Where is my order A1?" (prompt P1)
   - step 0: ``lookup_order(A1)`` raises (backend timeout)                         -> error
   - step 1: ``lookup_order(A1)`` and ``get_weather(Paris)`` (parallel)            -> ok, ok
   - step 2: ``NoSuchTool`` (refused by Claude Code: a ``<tool_use_error>``, no tool hook
     fires) and ``get_weather(Oslo)`` (an ``is_error`` result)                     -> error, error
   - step 3: the answer (end_turn)
2. "And the weather in Rome?" (P2): ``get_weather(Rome)`` ok, then the answer.
3. "Where is my order B2?" (P3, another session, ``max_turns=1``): ``lookup_order(B2)`` raises,
   then the SDK stops the loop: ``budget_exceeded``.

Counted by hand (spec definitions): 3 prompts, 0 open; tool calls per prompt 5, 1, 1 (median
1, p99 = 1 + 0.98 * 4 = 4.92); errors 4: P1's step-0 error is recovered (later ok call, normal
exit), P1's two step-2 errors gave up, P3's error is aborted; recovery rate 1/4; the Oslo
``get_weather`` error is resolved later (P2's ``get_weather`` succeeds), so the conversation
recovery rate is 2/4; no replays.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from loopscope.collectors import Collector, JsonlSink, MemorySink
from typer.testing import CliRunner

sdk = pytest.importorskip("claude_agent_sdk")

_spec = importlib.util.spec_from_file_location("loopscope_test_fake_anthropic", Path(__file__).parent / "fake_anthropic.py")
assert _spec and _spec.loader
_fake = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _fake
_spec.loader.exec_module(_fake)
FakeAnthropic = _fake.FakeAnthropic
from loopscope.cli.app import app  # noqa: E402
from loopscope.collectors.adapters.claude_agent_sdk import ClaudeHooks, loopscope_hooks  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

BUNDLED = Path(sdk.__file__).parent / "_bundled" / "claude"


def _cli_runs() -> bool:
    try:
        out = subprocess.run([str(BUNDLED), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "Claude Code" in out.stdout


pytestmark = pytest.mark.skipif(not _cli_runs(), reason="the claude-agent-sdk wheel's bundled Claude Code CLI does not run here")

P1, P2, P3 = "Where is my order A1?", "And the weather in Rome?", "Where is my order B2?"
LOOKUP, WEATHER = "mcp__shop__lookup_order", "mcp__shop__get_weather"
SCRIPT: dict[str, list[dict[str, Any]]] = {
    P1: [
        {"tool_uses": [("toolu_1", LOOKUP, {"order_id": "A1"})]},
        {"tool_uses": [("toolu_2", LOOKUP, {"order_id": "A1"}), ("toolu_3", WEATHER, {"city": "Paris"})]},
        {"tool_uses": [("toolu_4", "NoSuchTool", {"x": 1}), ("toolu_5", WEATHER, {"city": "Oslo"})]},
        {"text": "Your order A1 has shipped; it is sunny in Paris."},
    ],
    P2: [{"tool_uses": [("toolu_6", WEATHER, {"city": "Rome"})]}, {"text": "Sunny in Rome too."}],
    P3: [{"tool_uses": [("toolu_7", LOOKUP, {"order_id": "B2"})]}, {"text": "never reached"}],
}
NO_SUCH_TOOL = "<tool_use_error>Error: No such tool available: NoSuchTool</tool_use_error>"


def _tools() -> Any:
    seen = {"A1": 0}

    @sdk.tool("lookup_order", "Look up an order by id", {"order_id": str})
    async def lookup_order(args: dict[str, Any]) -> dict[str, Any]:
        oid = args["order_id"]
        if oid == "B2" or (oid == "A1" and seen["A1"] == 0):
            seen["A1"] += oid == "A1"
            raise TimeoutError("backend timeout after 30s")
        return {"content": [{"type": "text", "text": f"order {oid}: shipped"}]}

    @sdk.tool("get_weather", "The weather in a city", {"city": str})
    async def get_weather(args: dict[str, Any]) -> dict[str, Any]:
        if args["city"] == "Oslo":
            return {"content": [{"type": "text", "text": "Error: unknown city Oslo"}], "is_error": True}
        return {"content": [{"type": "text", "text": f"sunny in {args['city']}"}]}

    return sdk.create_sdk_mcp_server("shop", tools=[lookup_order, get_weather])


def _options(fake: FakeAnthropic, home: Path, hooks: Any, max_turns: int | None = None) -> Any:
    env = {
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
    }
    return sdk.ClaudeAgentOptions(
        mcp_servers={"shop": _tools()},
        allowed_tools=[LOOKUP, WEATHER],
        tools=[],
        hooks=hooks,
        env=env,
        cwd=str(home),
        max_turns=max_turns,
        model="claude-fake",
    )


async def _run(hooks: ClaudeHooks, fake: FakeAnthropic, home: Path, watch: bool = True) -> dict[str, Any]:
    """The scenario above; returns what the agent saw (texts of the results, the budget error)."""
    out: dict[str, Any] = {"results": [], "budget_error": None}

    def stream(messages: Any) -> Any:
        return hooks.watch(messages) if watch else messages

    async with sdk.ClaudeSDKClient(_options(fake, home, hooks.hooks())) as client:
        for prompt in (P1, P2):
            await client.query(prompt)
            async for message in stream(client.receive_response()):
                if isinstance(message, sdk.ResultMessage):
                    out["results"].append(message.result)
    try:
        async for message in stream(sdk.query(prompt=P3, options=_options(fake, home, hooks.hooks(), max_turns=1))):
            if isinstance(message, sdk.ResultMessage):
                out["results"].append(message.subtype)
    except sdk.ClaudeSDKError as exc:  # the SDK raises after an error result
        out["budget_error"] = str(exc)
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of the scenario through the adapter (records in a JSONL file, spans in memory)."""
    tmp = tmp_path_factory.mktemp("claude")
    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    col = Collector(JsonlSink(tmp / "loopscope.jsonl"), tracer_provider=tp, strict=False)
    with FakeAnthropic(SCRIPT) as fake:
        seen = asyncio.run(_run(ClaudeHooks(col, agent="shop"), fake, tmp))
    col.close()
    recs = [json.loads(line) for line in (tmp / "loopscope.jsonl").read_text().splitlines()]
    return {"dir": tmp, "records": recs, "spans": spans.get_finished_spans(), "seen": seen, "fake": fake, "col": col}


def _calls(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in recs if r["kind"] == "tool_call"]


def _exits(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in recs if r["kind"] == "loop_exit"]


def test_the_agent_ran_as_scripted(run: dict[str, Any]) -> None:
    assert run["seen"]["results"] == ["Your order A1 has shipped; it is sunny in Paris.", "Sunny in Rome too.", "error_max_turns"]
    assert "maximum number of turns" in run["seen"]["budget_error"]
    assert [(p, t) for p, t, _ in run["fake"].scripted] == [(P1, 0), (P1, 1), (P1, 2), (P1, 3), (P2, 0), (P2, 1), (P3, 0)]
    assert run["col"].stats.internal_errors == 0


def test_every_tool_call_with_its_id_step_and_error(run: dict[str, Any]) -> None:
    calls = _calls(run["records"])
    got = [(c["tool_call_id"], c["tool_name"], c["step"], c["is_error"], c["outcome"], c["error_message"]) for c in calls]
    assert got == [
        ("toolu_1", LOOKUP, 0, True, "permanent_fail", "backend timeout after 30s"),
        ("toolu_2", LOOKUP, 1, False, "ok", None),
        ("toolu_3", WEATHER, 1, False, "ok", None),
        ("toolu_5", WEATHER, 2, True, "permanent_fail", "Error: unknown city Oslo"),
        # no tool hook fired for it: recorded from PostToolBatch, after the step's hooked calls
        ("toolu_4", "NoSuchTool", 2, True, "permanent_fail", NO_SUCH_TOOL),
        ("toolu_6", WEATHER, 0, False, "ok", None),
        ("toolu_7", LOOKUP, 0, True, "permanent_fail", "backend timeout after 30s"),
    ]
    assert calls[0]["input_shape"] == {"order_id": "string"}
    assert all("A1" not in json.dumps(c) and "Paris" not in json.dumps(c) for c in calls)  # shapes, never values
    # one conversation per session; P1 and P2 share one
    assert len({c["conversation_id"] for c in calls[:6]}) == 1 and calls[6]["conversation_id"] != calls[0]["conversation_id"]


def test_loop_exits_steps_and_tokens(run: dict[str, Any]) -> None:
    fake = run["fake"]
    exits = _exits(run["records"])
    got = [(e["exit_reason"], e["steps"], e["tool_calls"], e["tool_errors"]) for e in exits]
    assert got == [("end_turn", 4, 5, 3), ("end_turn", 2, 1, 0), ("budget_exceeded", 1, 1, 1)]
    # tokens: the fake bills 10 per request message and 7 output tokens per answer
    for e, prompt in zip(exits, (P1, P2, P3)):
        answers = [n for p, _, n in fake.scripted if p == prompt]
        assert (e["input_tokens"], e["output_tokens"]) == (10 * sum(answers), 7 * len(answers))
    assert exits[0]["agent"] == "shop"


def test_records_load_and_give_the_hand_counted_metrics(run: dict[str, Any], tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "t.duckdb")
    loaded = runner.invoke(app, ["load", "--db", db, str(run["dir"] / "loopscope.jsonl")], catch_exceptions=False)
    assert loaded.exit_code == 0, loaded.output
    res = runner.invoke(app, ["metrics", "--db", db, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    m = m.get("overall", m)
    assert m["prompts"] == 3 and m["open_prompts"] == 0 and m["tool_calls"] == 7
    assert m["median_tool_calls_per_prompt"] == 1
    assert m["p99_tool_calls_per_prompt"] == pytest.approx(4.92)
    assert m["errors"] == 4 and m["recovered_errors"] == 1 and m["recovery_rate"] == pytest.approx(0.25)
    assert m["resolved_later_errors"] == 1 and m["conversation_recovery_rate"] == pytest.approx(0.5)
    assert m["replays"] == 0 and m["replay_rate"] == 0
    assert m["error_classes"] == {"recovered": 1, "open": 0, "aborted": 1, "gave_up": 2}


def _manual(recs: list[dict[str, Any]], fake: FakeAnthropic) -> tuple[list[dict[str, Any]], Any]:
    """The same run written with the manual API, as a hand-written loop would record it."""
    sink, spans = MemorySink(), InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    col = Collector(sink, tracer_provider=tp, strict=True)
    ids = {}
    for r in _exits(recs):
        ids.setdefault(r["conversation_id"], []).append(r["prompt_id"])
    (c1, (p1, p2)), (c2, (p3,)) = ids.items()
    results = {"toolu_2": "order A1: shipped", "toolu_3": "sunny in Paris", "toolu_6": "sunny in Rome"}
    errors = {"toolu_1": "backend timeout after 30s", "toolu_4": NO_SUCH_TOOL, "toolu_5": "Error: unknown city Oslo",
              "toolu_7": "backend timeout after 30s"}
    order = {"toolu_4": 1, "toolu_5": 0}  # the hooked call of a step is reported first
    for conv, pid, prompt, reason in ((c1, p1, P1, "end_turn"), (c1, p2, P2, "end_turn"), (c2, p3, P3, "budget_exceeded")):
        answers = [n for p, _, n in fake.scripted if p == prompt]
        with col.prompt(conversation_id=conv, prompt_id=pid, agent="shop", provider="anthropic") as loop:
            for turn, n in zip(SCRIPT[prompt], answers):
                uses = turn.get("tool_uses", [])
                loop.model_response("tool_use" if uses else "end_turn", input_tokens=10 * n, output_tokens=7)
                for tid, name, args in sorted(uses, key=lambda u: order.get(u[0], 0)):
                    with loop.tool_call(tid, name, args) as call:
                        if tid in errors:
                            call.fail(errors[tid])
                        else:
                            call.returned([{"type": "text", "text": results[tid]}])
            if reason != "end_turn":
                loop.exit(reason)
    col.close()
    return sink.records, spans.get_finished_spans()


VOLATILE = {"ts", "latency_ms", "duration_ms", "trace_id", "span_id"}


def test_records_and_spans_equal_the_manual_apis(run: dict[str, Any]) -> None:
    recs = run["records"]
    manual, manual_spans = _manual(recs, run["fake"])
    assert len(manual) == len(recs)
    for got, want in zip(recs, manual):
        assert {k: v for k, v in got.items() if k not in VOLATILE} == {k: v for k, v in want.items() if k not in VOLATILE}

    def span_view(spans: Any) -> list[tuple[Any, ...]]:
        by_id = {s.context.span_id: s.name for s in spans}
        return sorted(
            (s.name, by_id.get(s.parent.span_id) if s.parent else None, s.status.status_code.name,
             tuple(sorted((k, str(v)) for k, v in s.attributes.items())))
            for s in spans
        )

    assert span_view(run["spans"]) == span_view(manual_spans)
    errors = [s for s in run["spans"] if s.status.status_code.name == "ERROR" and s.name.startswith("execute_tool")]
    assert len(errors) == 4


class _OneLine:
    """The one-line form: ``hooks=loopscope_hooks(collector, hooks=mine)``, no watch()."""

    def __init__(self, col: Collector, mine: dict[str, list[Any]]) -> None:
        self.col, self.mine = col, mine

    def hooks(self) -> dict[str, list[Any]]:
        return loopscope_hooks(self.col, hooks=self.mine, agent="shop")

    def watch(self, messages: Any) -> Any:  # not used: _run(watch=False)
        raise AssertionError


def test_one_line_keeps_your_hooks_and_ends_prompts_at_stop(tmp_path: Path) -> None:
    sink = MemorySink()
    col = Collector(sink, strict=False)
    mine: list[str] = []

    async def my_hook(inp: Any, tool_use_id: Any, ctx: Any) -> dict[str, Any]:
        mine.append(tool_use_id)
        return {}

    existing = {"PreToolUse": [sdk.HookMatcher(matcher=None, hooks=[my_hook])]}
    with FakeAnthropic(SCRIPT) as fake:
        seen = asyncio.run(_run(_OneLine(col, existing), fake, tmp_path, watch=False))  # type: ignore[arg-type]
    col.close()
    assert seen["results"][:2] == ["Your order A1 has shipped; it is sunny in Paris.", "Sunny in Rome too."]
    # your hook still runs, once per hooked call of each run (the three hooks() calls made three matchers)
    assert sorted(set(mine)) == ["toolu_1", "toolu_2", "toolu_3", "toolu_5", "toolu_6", "toolu_7"]
    assert existing == {"PreToolUse": existing["PreToolUse"]} and len(existing["PreToolUse"]) == 1  # not modified
    calls = [r for r in sink.records if r["kind"] == "tool_call"]
    assert [c["tool_call_id"] for c in calls] == ["toolu_1", "toolu_2", "toolu_3", "toolu_5", "toolu_4", "toolu_6", "toolu_7"]
    exits = _exits(sink.records)
    # Stop ends P1 and P2 (end_turn, no tokens without watch()); P3 hit max_turns: no Stop hook
    # fires, so without watch() its prompt stays open (documented).
    assert [(e["exit_reason"], e["steps"], e["input_tokens"]) for e in exits] == [("end_turn", 4, None), ("end_turn", 2, None)]
    assert col.stats.internal_errors == 0


@pytest.mark.parametrize("where", ["handle", "finish", "record_tool_call", "prompt"])
def test_a_failing_adapter_never_breaks_the_agent(where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Internals raise inside every hook: the agent still answers every prompt the same way."""

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("adapter bug")

    from loopscope.collectors.prompt import PromptLoop

    if where == "handle":  # every hook
        monkeypatch.setattr(ClaudeHooks, "handle", boom)
    elif where == "finish":  # the exits: Stop, observe() and watch()'s own paths
        monkeypatch.setattr(ClaudeHooks, "_finish", boom)
    elif where == "record_tool_call":
        monkeypatch.setattr(PromptLoop, "record_tool_call", boom)
        monkeypatch.setattr(PromptLoop, "model_response", boom)
    else:
        monkeypatch.setattr(Collector, "prompt", boom)
    col = Collector(MemorySink(), strict=False)
    with FakeAnthropic(SCRIPT) as fake:
        seen = asyncio.run(_run(ClaudeHooks(col), fake, tmp_path))
    col.close()
    assert seen["results"] == ["Your order A1 has shipped; it is sunny in Paris.", "Sunny in Rome too.", "error_max_turns"]
    assert [(p, t) for p, t, _ in fake.scripted] == [(P1, 0), (P1, 1), (P1, 2), (P1, 3), (P2, 0), (P2, 1), (P3, 0)]
    assert col.stats.internal_errors > 0


def test_triage_names_the_first_unrecovered_error(run: dict[str, Any], tmp_path: Path) -> None:
    log = str(run["dir"] / "loopscope.jsonl")
    conv = _calls(run["records"])[0]["conversation_id"]
    res = CliRunner().invoke(app, ["triage", conv, log, "--db", str(tmp_path / "t.duckdb"), "--format", "json"])
    assert res.exit_code == 0, res.output
    t = json.loads(res.output)
    # P1's step-2 errors gave up; the Oslo one came first (ts) and P2 resolved it later
    first = t["first_unrecovered"]
    assert (first["tool_call_id"], first["class"], first["step"], first["resolved_later"]) == ("toolu_5", "gave_up", 2, True)
    assert t["error_classes"] == {"recovered": 1, "open": 0, "aborted": 0, "gave_up": 2}


def test_a_sub_agents_batches_are_not_the_loops_steps() -> None:
    """Hook inputs as the SDK types them; a Task sub-agent's hooks carry its agent_id."""
    col = Collector(MemorySink(), strict=True)
    hooks = ClaudeHooks(col, conversation_id="c")
    base = {"session_id": "s", "transcript_path": "/nonexistent", "cwd": "/"}
    events: list[Any] = [
        sdk.types.UserPromptSubmitHookInput(**base, hook_event_name="UserPromptSubmit", prompt="hi", prompt_id="p1"),
        sdk.types.PreToolUseHookInput(**base, hook_event_name="PreToolUse", tool_name="Task", tool_input={}, tool_use_id="t1"),
        sdk.types.PreToolUseHookInput(
            **base, hook_event_name="PreToolUse", tool_name="Read", tool_input={"file_path": "x"}, tool_use_id="t2", agent_id="a1"
        ),
        sdk.types.PostToolUseHookInput(
            **base, hook_event_name="PostToolUse", tool_name="Read", tool_input={"file_path": "x"}, tool_response="x",
            tool_use_id="t2", agent_id="a1",
        ),
        {**base, "hook_event_name": "PostToolBatch", "agent_id": "a1", "tool_calls": [
            {"tool_name": "Read", "tool_input": {"file_path": "x"}, "tool_use_id": "t2", "tool_response": "x"}]},
        sdk.types.PostToolUseHookInput(
            **base, hook_event_name="PostToolUse", tool_name="Task", tool_input={}, tool_response="done", tool_use_id="t1"
        ),
        {**base, "hook_event_name": "PostToolBatch", "tool_calls": [
            {"tool_name": "Task", "tool_input": {}, "tool_use_id": "t1", "tool_response": "done"}]},
        sdk.types.StopHookInput(**base, hook_event_name="Stop", stop_hook_active=False),
    ]
    for e in events:
        hooks.handle(e)
    col.close()
    calls = [(r["tool_call_id"], r["step"]) for r in col.sink.records if r["kind"] == "tool_call"]
    assert calls == [("t2", 0), ("t1", 0)]
    (exit_,) = _exits(col.sink.records)
    assert (exit_["exit_reason"], exit_["steps"], exit_["prompt_id"]) == ("end_turn", 2, "p1")


def test_without_watch_the_next_prompt_closes_one_that_never_stopped() -> None:
    col = Collector(MemorySink(), strict=True)
    hooks = ClaudeHooks(col)
    base = {"session_id": "s1", "transcript_path": "/nonexistent", "cwd": "/"}
    hooks.handle(sdk.types.UserPromptSubmitHookInput(**base, hook_event_name="UserPromptSubmit", prompt="a", prompt_id="p1"))
    hooks.handle(sdk.types.PreToolUseHookInput(**base, hook_event_name="PreToolUse", tool_name="Bash", tool_input={"command": "x"}, tool_use_id="t1"))
    # max_turns: the loop stops with t1 unfinished and no Stop; the user's next prompt arrives
    hooks.handle(sdk.types.UserPromptSubmitHookInput(**base, hook_event_name="UserPromptSubmit", prompt="b", prompt_id="p2"))
    col.close()
    (call,) = [r for r in col.sink.records if r["kind"] == "tool_call"]
    assert (call["tool_call_id"], call["is_error"], call["error_type"]) == ("t1", True, "interrupted")
    (exit_,) = _exits(col.sink.records)
    assert (exit_["prompt_id"], exit_["conversation_id"], exit_["exit_reason"]) == ("p1", "s1", "unknown")
    assert hooks.dropped == 0


def test_state_is_bounded_and_what_is_pushed_out_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from loopscope.collectors.adapters import claude_agent_sdk as mod

    monkeypatch.setattr(mod, "MAX_SESSIONS", 2)
    monkeypatch.setattr(mod, "MAX_PENDING", 2)
    col = Collector(MemorySink(), strict=True)
    hooks = ClaudeHooks(col)
    for sid in ("s1", "s2", "s3"):  # s1 is evicted with its one unfinished call
        base = {"session_id": sid, "transcript_path": "/nonexistent", "cwd": "/"}
        hooks.handle({**base, "hook_event_name": "UserPromptSubmit", "prompt": "a", "prompt_id": f"p-{sid}"})
        hooks.handle({**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}, "tool_use_id": f"{sid}-0"})
    assert hooks.dropped == 2 and list(hooks._sessions) == ["s2", "s3"]
    base = {"session_id": "s3", "transcript_path": "/nonexistent", "cwd": "/"}
    for i in (1, 2):  # s3 now has three unfinished calls: the oldest is pushed out
        hooks.handle({**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}, "tool_use_id": f"s3-{i}"})
    assert hooks.dropped == 3 and list(hooks._sessions["s3"].pending) == ["s3-1", "s3-2"]
    col.close()


def test_built_in_tools_fail_through_their_hooks(tmp_path: Path) -> None:
    """Claude Code's own Read tool: a missing file is a PostToolUseFailure, an existing one a PostToolUse."""
    (tmp_path / "notes.txt").write_text("hello\n")
    missing = str(tmp_path / "missing.txt")
    prompt = "Read my notes."
    script = {
        prompt: [
            {"tool_uses": [("toolu_r1", "Read", {"file_path": missing}), ("toolu_r2", "Read", {"file_path": str(tmp_path / "notes.txt")})]},
            {"text": "Done."},
        ]
    }
    col = Collector(MemorySink(), strict=False)
    hooks = ClaudeHooks(col)

    async def go() -> None:
        with FakeAnthropic(script) as fake:
            options = _options(fake, tmp_path, hooks.hooks())
            options.tools, options.allowed_tools = ["Read"], ["Read"]
            async for _ in hooks.watch(sdk.query(prompt=prompt, options=options)):
                pass

    asyncio.run(go())
    col.close()
    calls = [(r["tool_call_id"], r["tool_name"], r["step"], r["is_error"]) for r in col.sink.records if r["kind"] == "tool_call"]
    assert sorted(calls) == [("toolu_r1", "Read", 0, True), ("toolu_r2", "Read", 0, False)]
    (err,) = [r for r in col.sink.records if r.get("is_error")]
    assert err["error_message"].startswith("File does not exist.")
    (exit_,) = _exits(col.sink.records)
    assert (exit_["exit_reason"], exit_["steps"], exit_["tool_errors"]) == ("end_turn", 2, 1)
    assert col.stats.internal_errors == 0


def test_a_loop_that_goes_on_after_stop_gets_a_new_prompt_id() -> None:
    """Another Stop hook blocked the stop: the calls after it go to prompt 'p1~1', not a second 'p1'."""
    col = Collector(MemorySink(), strict=True)
    hooks = ClaudeHooks(col)
    base = {"session_id": "s", "transcript_path": "/nonexistent", "cwd": "/", "prompt_id": "p1"}
    for event in (
        {"hook_event_name": "UserPromptSubmit", "prompt": "a"},
        {"hook_event_name": "Stop", "stop_hook_active": False},
        {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}, "tool_use_id": "t1"},
        {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {}, "tool_response": "", "tool_use_id": "t1"},
        {"hook_event_name": "PostToolBatch", "tool_calls": []},
        {"hook_event_name": "Stop", "stop_hook_active": True},
    ):
        hooks.handle({**base, **event})
    col.close()
    assert [(r["kind"], r["prompt_id"]) for r in col.sink.records] == [
        ("loop_exit", "p1"), ("tool_call", "p1~1"), ("loop_exit", "p1~1")
    ]


def _triage_calls(db: str, conv: str) -> list[tuple[Any, ...]]:
    res = CliRunner().invoke(app, ["triage", conv, "--db", db, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return [
        (c["tool_call_id"], c["tool_name"], c["step"], c["is_error"], c["error_message"], c["class"])
        for p in json.loads(res.output)["prompts"]
        for s in p["steps"]
        for c in s["tool_calls"]
    ]


def test_the_sessions_own_transcripts_agree(run: dict[str, Any], tmp_path: Path) -> None:
    """loopscope's Claude Code transcript reader, on the transcripts of the same run, finds the same calls."""
    transcripts = sorted((run["dir"] / ".claude" / "projects").rglob("*.jsonl"))
    assert len(transcripts) == 2  # one per session
    runner = CliRunner()
    a, t = str(tmp_path / "adapter.duckdb"), str(tmp_path / "transcripts.duckdb")
    assert runner.invoke(app, ["load", "--db", a, str(run["dir"] / "loopscope.jsonl")]).exit_code == 0
    loaded = runner.invoke(app, ["load", "--db", t, *map(str, transcripts)])
    assert loaded.exit_code == 0, loaded.output
    for conv in {c["conversation_id"] for c in _calls(run["records"])}:
        from_hooks, from_transcript = _triage_calls(a, conv), _triage_calls(t, conv)
        # the transcript holds no exit for the max_turns prompt (open); the adapter knows it (aborted)
        # (within a step, calls are in time order: the adapter writes a hookless call at the batch's end)
        assert sorted(c[:5] for c in from_hooks) == sorted(c[:5] for c in from_transcript)
        assert sorted(c[5] or "" for c in from_hooks) == sorted({"open": "aborted"}.get(c[5], c[5]) or "" for c in from_transcript)


# ---------------------------------------------------------------- seed 000 (issue 18)

CANCEL = "mcp__shop__cancel_order"
BLOCK = "[Error Recovery Context]"
SPIN = "Cancel order Z9."


def _blind(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A model that repeats the same call whatever the tool said."""
    n = sum(1 for m in messages if m.get("role") == "assistant")
    return {"tool_uses": [(f"toolu_c{n + 1}", CANCEL, {"order_id": "Z9"})]}


def _since_its_last_answer(messages: list[dict[str, Any]]) -> str:
    """What the model was sent after its last answer: the tool results and what the CLI added
    (the bundled CLI sends a hook's additionalContext as a message after the tool_result)."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return json.dumps(messages[last + 1 :])


def _reads_the_block(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A model that changes course when what it was sent since its last answer carries the block."""
    if BLOCK in _since_its_last_answer(messages):
        return {"text": "Order Z9 has shipped, so it cannot be cancelled; I can start a return instead."}
    return _blind(messages)


def _cancel_tools() -> Any:
    @sdk.tool("cancel_order", "Cancel an order", {"order_id": str})
    async def cancel_order(args: dict[str, Any]) -> dict[str, Any]:
        raise PermissionError(f"order {args['order_id']} has shipped and cannot be cancelled")

    return sdk.create_sdk_mcp_server("shop", tools=[cancel_order])


async def _run_cancel(hooks: ClaudeHooks, fake: FakeAnthropic, home: Path) -> list[Any]:
    home.mkdir(parents=True, exist_ok=True)
    options = _options(fake, home, hooks.hooks(), max_turns=8)
    options.mcp_servers = {"shop": _cancel_tools()}
    options.allowed_tools = [CANCEL]
    results = []
    async for message in hooks.watch(sdk.query(prompt=SPIN, options=options)):
        if isinstance(message, sdk.ResultMessage):
            results.append((message.subtype, message.result))
    return results


def _last_user_text(body: dict[str, Any]) -> str:
    return _since_its_last_answer(body["messages"])


def test_the_block_reaches_the_model_and_a_spin_is_stopped_by_policy(tmp_path: Path) -> None:
    sink = MemorySink()
    col = Collector(sink, history=True, strict=False)
    hooks = ClaudeHooks(col, recovery_context=True, on_loop="exit")
    with FakeAnthropic({SPIN: [_blind]}) as fake:
        asyncio.run(_run_cancel(hooks, fake, tmp_path))
    spin_requests = [b for b in fake.requests if any(SPIN in t for m in b["messages"] for t in _fake._texts(m))]
    # The model got the block with the failed result, in the request after each failure.
    after = json.loads(_last_user_text(spin_requests[1]))
    # the tool_result keeps the raw error; the block comes right after it
    assert after[0]["content"][0]["is_error"] is True and after[0]["content"][0]["tool_use_id"] == "toolu_c1"
    assert BLOCK not in json.dumps(after[0]) and "hook additional context: " + BLOCK in json.dumps(after[1])
    second = _last_user_text(spin_requests[1])
    assert "has shipped and cannot be cancelled" in second and BLOCK in second
    assert "Operation: mcp__shop__cancel_order(order_id=" in second
    assert "Previous attempts (this session): 1" in _last_user_text(spin_requests[2])
    # Stopped after the third failure: no fourth model call for the prompt.
    assert [n for p, n, _ in fake.scripted if p == SPIN] == [0, 1, 2]
    calls = [r for r in sink.records if r["kind"] == "tool_call"]
    exits = [r for r in sink.records if r["kind"] == "loop_exit"]
    assert [c["tool_call_id"] for c in calls] == ["toolu_c1", "toolu_c2", "toolu_c3"] and all(c["is_error"] for c in calls)
    assert [(e["exit_reason"], e["error_type"], e["steps"]) for e in exits] == [("error", "loop_detected", 3)]
    assert "retry loop: mcp__shop__cancel_order failed 3 times" in exits[0]["error_message"]
    assert col.stats.internal_errors == 0


def test_a_model_that_reads_the_block_changes_course_and_a_blind_one_is_stopped(tmp_path: Path) -> None:
    outcomes = {}
    for recovery in (True, False):
        sink = MemorySink()
        col = Collector(sink, history=True, strict=False)
        with FakeAnthropic({SPIN: [_reads_the_block]}) as fake:
            asyncio.run(_run_cancel(ClaudeHooks(col, recovery_context=recovery, on_loop="exit"), fake, tmp_path / str(recovery)))
        exits = [r for r in sink.records if r["kind"] == "loop_exit"]
        outcomes[recovery] = [(e["exit_reason"], e["tool_calls"]) for e in exits]
    assert outcomes == {True: [("end_turn", 1)], False: [("error", 3)]}


def test_a_failure_building_the_block_adds_nothing_and_the_agent_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loopscope.collectors import history

    def boom(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("block builder broke")

    monkeypatch.setattr("loopscope.collectors.prompt.recovery_block", boom)
    assert history.recovery_block is not boom  # only the prompt's reference is broken
    sink = MemorySink()
    col = Collector(sink, history=True, strict=False)
    with FakeAnthropic({SPIN: [_reads_the_block]}) as fake:
        asyncio.run(_run_cancel(ClaudeHooks(col, recovery_context=True, on_loop="exit"), fake, tmp_path))
    assert all(BLOCK not in json.dumps(b) for b in fake.requests)
    # no block, so the model spins; the policy still stops it
    exits = [r for r in sink.records if r["kind"] == "loop_exit"]
    assert [(e["exit_reason"], e["error_type"]) for e in exits] == [("error", "loop_detected")]
    assert col.stats.internal_errors == 3  # one per failed call


def test_hook_outputs_and_a_cli_that_goes_on_after_the_stop() -> None:
    """Hook inputs as the SDK types them, fed by hand: what each hook answers, and, should a CLI
    ignore ``continue: false``, the calls it still asks for are refused and not recorded."""
    sink = MemorySink()
    col = Collector(sink, history=True, strict=True)
    hooks = ClaudeHooks(col, conversation_id="c", recovery_context=True, on_loop="exit")
    base = {"session_id": "s", "transcript_path": "/nonexistent", "cwd": "/"}
    args = {"order_id": "Z9"}
    error = "order Z9 has shipped and cannot be cancelled"

    def attempt(tid: str) -> list[Any]:
        return [
            hooks.handle(sdk.types.PreToolUseHookInput(
                **base, hook_event_name="PreToolUse", tool_name=CANCEL, tool_input=args, tool_use_id=tid)),
            hooks.handle({**base, "hook_event_name": "PostToolUseFailure", "tool_name": CANCEL, "tool_input": args,
                          "tool_use_id": tid, "error": error}),
            hooks.handle({**base, "hook_event_name": "PostToolBatch", "tool_calls": [
                {"tool_name": CANCEL, "tool_input": args, "tool_use_id": tid, "tool_response": error}]}),
        ]

    assert hooks.handle(sdk.types.UserPromptSubmitHookInput(
        **base, hook_event_name="UserPromptSubmit", prompt=SPIN, prompt_id="p1")) is None
    pre, failure, batch = attempt("t1")
    assert pre is None and batch is None
    assert failure["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    assert failure["hookSpecificOutput"]["additionalContext"].startswith(BLOCK + "\nOperation: " + CANCEL + "(order_id='Z9')")
    attempt("t2")
    pre, failure, batch = attempt("t3")
    assert "Previous attempts (this session): 2" in failure["hookSpecificOutput"]["additionalContext"]
    reason = "loopscope stopped the loop: retry loop: mcp__shop__cancel_order failed 3 times with the same arguments"
    assert batch == {"continue_": False, "stopReason": reason}
    assert hooks.spinning("s").stop is True
    # A CLI that went on anyway: refused, nothing more recorded, the Stop changes nothing.
    pre, failure, batch = attempt("t4")
    assert pre["hookSpecificOutput"] == {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}
    assert pre["continue_"] is False and failure is None and batch is None
    hooks.handle(sdk.types.StopHookInput(**base, hook_event_name="Stop", stop_hook_active=False))
    # The session's next prompt starts afresh.
    hooks.handle(sdk.types.UserPromptSubmitHookInput(**base, hook_event_name="UserPromptSubmit", prompt="hi", prompt_id="p2"))
    pre, failure, batch = attempt("t5")
    assert pre is None and BLOCK in failure["hookSpecificOutput"]["additionalContext"] and batch is None
    hooks.handle(sdk.types.StopHookInput(**base, hook_event_name="Stop", stop_hook_active=False))
    # A stop holds for its own prompt only: hooks naming another prompt (no UserPromptSubmit seen) go on.
    base["prompt_id"] = "p2"
    for tid in ("t6", "t7"):
        attempt(tid)
    assert attempt("t8")[2]["continue_"] is False  # p2's third failure: stopped
    base["prompt_id"] = "p3"
    pre, failure, batch = attempt("t9")
    assert pre is None and batch is None
    hooks.handle(sdk.types.StopHookInput(**base, hook_event_name="Stop", stop_hook_active=False))
    col.close()
    calls = [(r["prompt_id"], r["tool_call_id"]) for r in sink.records if r["kind"] == "tool_call"]
    assert calls == [("p1", "t1"), ("p1", "t2"), ("p1", "t3"), ("p2", "t5"), ("p2~1", "t6"), ("p2~1", "t7"), ("p2~1", "t8"), ("p3", "t9")]
    exits = [(e["prompt_id"], e["exit_reason"], e["error_type"]) for e in _exits(sink.records)]
    assert exits == [("p1", "error", "loop_detected"), ("p2", "end_turn", None), ("p2~1", "error", "loop_detected"), ("p3", "end_turn", None)]


def test_off_by_default_the_hooks_have_no_opinion() -> None:
    col = Collector(MemorySink(), history=True, strict=True)
    hooks = ClaudeHooks(col, conversation_id="c")
    base = {"session_id": "s", "transcript_path": "/nonexistent", "cwd": "/"}
    outs = []
    for n in range(4):
        inp = {**base, "tool_name": CANCEL, "tool_input": {"order_id": "Z9"}, "tool_use_id": f"t{n}"}
        outs.append(hooks.handle({**inp, "hook_event_name": "PreToolUse"}))
        outs.append(hooks.handle({**inp, "hook_event_name": "PostToolUseFailure", "error": "no"}))
        outs.append(hooks.handle({**base, "hook_event_name": "PostToolBatch", "tool_calls": [{**inp, "tool_response": "no"}]}))
    col.close()
    assert outs == [None] * 12  # no block, no stop: a retry loop of four, recorded only
    assert [r["kind"] for r in col.sink.records] == ["tool_call"] * 4
