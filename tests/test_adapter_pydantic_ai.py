"""The pydantic-ai adapter, with the real framework against the fake OpenAI server of tests/thirdparty_agent.py.

pydantic-ai's OpenAI chat model talks to the scripted ``/v1/chat/completions`` server on
127.0.0.1 (its answer depends only on the request). Two prompts of one conversation, then a
run that hits the usage limit:

1. P1 "Where is my order Z9?" (its own script, added to the server's)
   - step 0: ``lookup_order(Z9)`` raises ``ModelRetry`` (the model is asked to try again) -> error
   - step 1: ``lookup_order(Z9)`` ok and ``get_weather(city=5)``: arguments that fail validation
     (the tool never runs; the model gets a retry prompt) -> ok, error
   - step 2: ``get_weather(Paris)`` ok; step 3: the answer
2. P2 "And the weather in Oslo?" (``message_history`` of P1: the same conversation):
   ``get_weather(Oslo)`` ok, then the answer.
3. P3 "Cancel order Q7." (a new conversation, ``UsageLimits(request_limit=1)``): ``cancel_order``
   raises ``ToolFailed``; the next model request would pass the limit: ``UsageLimitExceeded``.

Counted by hand: 3 prompts; tool calls 4, 1, 1 (median 1, p99 = 1 + 0.98 * 3 = 3.94); errors
3: P1's two are recovered (ok calls at later steps, normal exit), P3's is aborted; recovery rate
2/3, conversation recovery rate 2/3, nothing resolved later; no replays.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from loopscope.collectors import Collector, JsonlSink, MemorySink
from typer.testing import CliRunner

pai = pytest.importorskip("pydantic_ai")
pytest.importorskip("pydantic_ai.models.openai")
pytest.importorskip("pydantic_ai.capabilities")

from loopscope.cli.app import app  # noqa: E402
from loopscope.collectors.adapters.pydantic_ai import loopscope_capability  # noqa: E402
from pydantic_ai import Agent, ModelRetry, ToolFailed  # noqa: E402
from pydantic_ai.exceptions import UsageLimitExceeded  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.usage import UsageLimits  # noqa: E402

_spec = importlib.util.spec_from_file_location("loopscope_test_thirdparty_agent_pai", Path(__file__).parent / "thirdparty_agent.py")
assert _spec and _spec.loader
fake = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fake
_spec.loader.exec_module(fake)

P1, P2, P3 = "Where is my order Z9?", "And the weather in Oslo?", "Cancel order Q7."
fake.SCRIPT.update(
    {
        P1: [
            {"tool_calls": [("call_1", "lookup_order", {"order_id": "Z9"})]},
            {"tool_calls": [("call_2", "lookup_order", {"order_id": "Z9"}), ("call_3", "get_weather", {"city": 5})]},
            {"tool_calls": [("call_4", "get_weather", {"city": "Paris"})]},
            {"text": "Order Z9 has shipped; sunny in Paris."},
        ],
        P2: [{"tool_calls": [("call_5", "get_weather", {"city": "Oslo"})]}, {"text": "Sunny in Oslo."}],
        P3: [{"tool_calls": [("call_6", "cancel_order", {"order_id": "Q7"})]}, {"text": "never reached"}],
    }
)
RETRY = "order service timed out, try again"
FAILED = "order Q7 cannot be cancelled: it has shipped"


REQUESTS: list[dict[str, Any]] = []  # every request body the fake server answered


class Recording(fake.FakeModel):
    """The fake server's handler, keeping each request body (to count tokens independently)."""

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        REQUESTS.append(body)
        data = json.dumps(fake._answer(body)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def request_sizes(requests: list[dict[str, Any]], prompt: str) -> list[int]:
    """Messages in each request answered for ``prompt`` (the fake bills 10 prompt tokens each)."""
    out = []
    for body in requests:
        users = [m for m in body["messages"] if m["role"] == "user"]
        if users and users[-1]["content"] == prompt:
            out.append(len(body["messages"]))
    return out


class Server:
    def __enter__(self) -> str:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Recording)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def make_agent(base_url: str, capability: Any) -> Agent:
    model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=base_url, api_key="sk-test-not-a-key"))
    agent = Agent(model, capabilities=[capability] if capability is not None else [])
    seen = {"Z9": 0}

    @agent.tool_plain(retries=3)
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        seen[order_id] = seen.get(order_id, 0) + 1
        if seen[order_id] == 1:
            raise ModelRetry(RETRY)
        return f"order {order_id}: shipped"

    @agent.tool_plain(retries=3)
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @agent.tool_plain
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        raise ToolFailed(FAILED)

    return agent


def run(col: Collector | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    REQUESTS.clear()
    with Server() as base_url:
        agent = make_agent(base_url, loopscope_capability(col, agent="shop", provider="openai") if col else None)
        r1 = agent.run_sync(P1)
        r2 = agent.run_sync(P2, message_history=r1.all_messages())
        out["outputs"] = [r1.output, r2.output]
        out["messages"] = r1.all_messages() + r2.new_messages()
        try:
            agent.run_sync(P3, usage_limits=UsageLimits(request_limit=1))
        except UsageLimitExceeded as exc:
            out["limit"] = str(exc)
    out["requests"] = list(REQUESTS)
    return out


@pytest.fixture(scope="module")
def adapter_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    log = tmp_path_factory.mktemp("pai") / "loopscope.jsonl"
    col = Collector(JsonlSink(log), strict=False)
    out = run(col)
    col.close()
    out["log"] = log
    out["records"] = [json.loads(line) for line in log.read_text().splitlines()]
    out["internal_errors"] = col.stats.internal_errors
    return out


def test_every_call_and_what_the_model_was_told(adapter_run: dict[str, Any]) -> None:
    assert adapter_run["outputs"] == ["Order Z9 has shipped; sunny in Paris.", "Sunny in Oslo."]
    assert "request_limit" in adapter_run["limit"] and adapter_run["internal_errors"] == 0
    calls = [r for r in adapter_run["records"] if r["kind"] == "tool_call"]
    got = [(c["tool_call_id"], c["tool_name"], c["step"], c["is_error"], c["error_type"]) for c in calls]
    assert got == [
        ("call_1", "lookup_order", 0, True, "ModelRetry"),
        # pydantic-ai validates every call of a step before it runs any: the refused one comes first
        ("call_3", "get_weather", 1, True, "ValidationError"),
        ("call_2", "lookup_order", 1, False, None),
        ("call_4", "get_weather", 2, False, None),
        ("call_5", "get_weather", 0, False, None),
        ("call_6", "cancel_order", 0, True, "ToolFailed"),
    ]
    assert calls[0]["error_message"] == RETRY and calls[5]["error_message"] == FAILED
    assert calls[1]["error_message"] == "city: Input should be a valid string"  # no value
    assert calls[1]["input_shape"] == {"city": "integer"}  # what the model sent
    exits = [(r["exit_reason"], r["steps"], r["tool_calls"], r["tool_errors"]) for r in adapter_run["records"] if r["kind"] == "loop_exit"]
    assert exits == [("end_turn", 4, 4, 2), ("end_turn", 2, 1, 0), ("budget_exceeded", 1, 1, 1)]
    convs = [r["conversation_id"] for r in adapter_run["records"] if r["kind"] == "loop_exit"]
    assert convs[0] == convs[1] != convs[2]


def test_records_load_and_give_the_hand_counted_metrics(adapter_run: dict[str, Any], tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "t.duckdb")
    assert runner.invoke(app, ["load", "--db", db, str(adapter_run["log"])], catch_exceptions=False).exit_code == 0
    res = runner.invoke(app, ["metrics", "--db", db, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    m = m.get("overall", m)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"]) == (3, 0, 6)
    assert m["median_tool_calls_per_prompt"] == 1 and m["p99_tool_calls_per_prompt"] == pytest.approx(3.94)
    assert (m["errors"], m["recovered_errors"]) == (3, 2) and m["recovery_rate"] == pytest.approx(2 / 3)
    assert m["resolved_later_errors"] == 0 and m["conversation_recovery_rate"] == pytest.approx(2 / 3)
    assert (m["replays"], m["replay_rate"]) == (0, 0)
    assert m["error_classes"] == {"recovered": 2, "open": 0, "aborted": 1, "gave_up": 0}


def test_records_equal_the_manual_apis(adapter_run: dict[str, Any]) -> None:
    recs = adapter_run["records"]
    exits = [r for r in recs if r["kind"] == "loop_exit"]
    manual = Collector(MemorySink(), strict=True)
    # (id, tool, arguments, error type, error text or None, result) per step, as the loop ran them
    steps = {
        P1: [
            [("call_1", "lookup_order", {"order_id": "Z9"}, "ModelRetry", RETRY, None)],
            [("call_3", "get_weather", {"city": 5}, "ValidationError", "city: Input should be a valid string", None),
             ("call_2", "lookup_order", {"order_id": "Z9"}, None, None, "order Z9: shipped")],
            [("call_4", "get_weather", {"city": "Paris"}, None, None, "sunny in Paris")],
            [],
        ],
        P2: [[("call_5", "get_weather", {"city": "Oslo"}, None, None, "sunny in Oslo")], []],
        P3: [[("call_6", "cancel_order", {"order_id": "Q7"}, "ToolFailed", FAILED, None)]],
    }
    for e, prompt in zip(exits, (P1, P2, P3)):
        sizes = request_sizes(adapter_run["requests"], prompt)
        assert len(sizes) == len(steps[prompt])
        with manual.prompt(conversation_id=e["conversation_id"], prompt_id=e["prompt_id"], agent="shop", provider="openai") as loop:
            for calls, n in zip(steps[prompt], sizes):
                # the fake server bills 10 prompt tokens per request message, 5 completion tokens
                loop.model_response("tool_use" if calls else "end_turn", input_tokens=10 * n, output_tokens=5)
                for tid, name, args, etype, text, result in calls:
                    with loop.tool_call(tid, name, args) as call:
                        if etype:
                            call.fail(text, error_type=etype)
                        else:
                            call.returned(result)
            if prompt == P3:
                loop.exit("budget_exceeded")
    manual.close()
    volatile = {"ts", "latency_ms", "duration_ms", "trace_id", "span_id"}
    assert [{k: v for k, v in r.items() if k not in volatile} for r in recs] == [
        {k: v for k, v in r.items() if k not in volatile} for r in manual.sink.records
    ]


@pytest.mark.parametrize("where", ["prompt", "model_response", "record_tool_call", "exit"])
def test_a_failing_adapter_never_breaks_the_agent(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector's internals raise inside every hook: the runs give the same answers."""
    from loopscope.collectors.prompt import PromptLoop

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("adapter bug")

    plain = run(None)
    if where == "prompt":
        monkeypatch.setattr(Collector, "prompt", boom)
    else:
        monkeypatch.setattr(PromptLoop, where, boom)
    col = Collector(MemorySink(), strict=False)
    out = run(col)
    col.close()
    assert out["outputs"] == plain["outputs"] == ["Order Z9 has shipped; sunny in Paris.", "Sunny in Oslo."]
    assert "request_limit" in out["limit"]
    assert [len(b["messages"]) for b in out["requests"]] == [len(b["messages"]) for b in plain["requests"]]
    assert col.stats.internal_errors > 0


def test_spans_name_the_runs_provider_and_model(span_recorder: tuple[Any, Any]) -> None:
    tp, spans = span_recorder
    col = Collector(MemorySink(), tracer_provider=tp, strict=True)
    with Server() as base_url:
        make_agent(base_url, loopscope_capability(col)).run_sync(P2)  # provider and model not given
    col.close()
    (agent_span,) = [s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert agent_span.attributes["gen_ai.provider.name"] == "openai"
    assert agent_span.attributes["gen_ai.request.model"] == "fake-model"
    tools = [s for s in spans.get_finished_spans() if s.name == "execute_tool get_weather"]
    assert len(tools) == 1 and tools[0].parent.span_id == agent_span.context.span_id


# ---------------------------------------------------------------- seed 000 (issue 18)

_chat_spec = importlib.util.spec_from_file_location("loopscope_test_fake_chat_server_pai", Path(__file__).parent / "fake_chat_server.py")
assert _chat_spec and _chat_spec.loader
chat = importlib.util.module_from_spec(_chat_spec)
sys.modules[_chat_spec.name] = chat
_chat_spec.loader.exec_module(chat)

BLOCK, blind, reads_the_block = chat.BLOCK, chat.blind, chat.reads_the_block
SPIN = "Cancel order Z9"
SHIPPED = "order Z9 has shipped and cannot be cancelled"


def cancel_agent(base_url: str, capability: Any, raises: type[Exception]) -> Agent:
    model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=base_url, api_key="sk-test-not-a-key"))
    agent = Agent(model, capabilities=[capability])

    @agent.tool_plain(retries=20)
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        raise raises(f"order {order_id} has shipped and cannot be cancelled")

    return agent


def test_the_block_reaches_the_model_and_a_spin_is_stopped_by_policy() -> None:
    from loopscope.collectors.adapters.pydantic_ai import LoopDetected

    sink = MemorySink()
    col = Collector(sink, history=True, strict=True)
    capability = loopscope_capability(col, recovery_context=True, on_loop="exit")
    with chat.ScriptedChatServer({SPIN: [blind]}) as server:
        with pytest.raises(LoopDetected, match="retry loop: cancel_order failed 3 times"):
            cancel_agent(server.base_url, capability, ModelRetry).run_sync(SPIN)
    assert len(server.requests) == 3  # the fourth model request never happened
    # The retried call's tool message the model read (pydantic-ai wraps a failed return as
    # {"error": ...} for OpenAI): the error word for word, then the block.
    tool = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool) == 1 and tool[0]["tool_call_id"] == "s1"
    error = json.loads(tool[0]["content"])["error"]
    assert error.startswith(SHIPPED + "\n\n" + BLOCK) and "Operation: cancel_order(order_id='Z9')" in error
    third = [json.loads(m["content"])["error"] for m in server.requests[2]["messages"] if m["role"] == "tool"]
    # every failed return keeps its own block; the latest lists the earlier attempt
    assert [BLOCK in e for e in third] == [True, True]
    assert "Previous attempts (this session): 1\n  1. cancel_order(order_id='Z9') [step 0]" in third[-1]
    calls = [r for r in sink.records if r["kind"] == "tool_call"]
    exits = [r for r in sink.records if r["kind"] == "loop_exit"]
    assert [(c["tool_call_id"], c["error_type"], c["error_message"]) for c in calls] == [
        (f"s{n}", "ModelRetry", SHIPPED) for n in (1, 2, 3)
    ]
    assert [(e["exit_reason"], e["error_type"], e["steps"]) for e in exits] == [("error", "loop_detected", 3)]


def test_a_model_that_reads_the_block_changes_course_and_a_blind_one_is_stopped() -> None:
    from loopscope.collectors.adapters.pydantic_ai import LoopDetected

    outcomes = {}
    for recovery in (True, False):
        sink = MemorySink()
        col = Collector(sink, history=True, strict=True)
        capability = loopscope_capability(col, recovery_context=recovery, on_loop="exit")
        with chat.ScriptedChatServer({SPIN: [reads_the_block]}) as server:
            try:
                result = cancel_agent(server.base_url, capability, ToolFailed).run_sync(SPIN)
                answer = result.output
            except LoopDetected:
                answer = None
        if recovery:  # a ToolFailed return: the error (as pydantic-ai wraps it for OpenAI) carries the block
            tool = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
            assert json.loads(tool[0]["content"])["error"].startswith(SHIPPED + "\n\n" + BLOCK)
            # the run's own message history is unchanged: only the request carried the block
            assert BLOCK not in result.all_messages_json().decode() and SHIPPED in result.all_messages_json().decode()
        else:
            assert all(BLOCK not in json.dumps(b) for b in server.requests)
        exits = [r for r in sink.records if r["kind"] == "loop_exit"]
        outcomes[recovery] = (answer is not None, [(e["exit_reason"], e["tool_calls"]) for e in exits])
    assert outcomes == {True: (True, [("end_turn", 1)]), False: (False, [("error", 3)])}


def test_arguments_that_fail_validation_get_the_block_too() -> None:
    """The model sends a string where the tool takes an int: the tool never runs, pydantic-ai's
    retry holds the validation errors (a list, not a string); the block follows their text."""
    from loopscope.collectors.adapters.pydantic_ai import LoopDetected

    def bad_args(messages: list[dict[str, Any]]) -> dict[str, Any]:
        n = sum(1 for m in messages if m["role"] == "assistant")
        return {"tool_calls": [(f"v{n + 1}", "refund", {"amount": "ten"})]}

    sink = MemorySink()
    col = Collector(sink, history=True, strict=True)
    with chat.ScriptedChatServer({"Refund ten": [bad_args]}) as server:
        model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=server.base_url, api_key="sk-test-not-a-key"))
        agent = Agent(model, capabilities=[loopscope_capability(col, recovery_context=True, on_loop="exit")])

        @agent.tool_plain(retries=20)
        def refund(amount: int) -> str:
            """Refund an amount."""
            return f"refunded {amount}"

        with pytest.raises(LoopDetected, match="retry loop: refund failed 3 times"):
            agent.run_sync("Refund ten")
    tool = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    content = tool[0]["content"]
    assert "int_parsing" in content and BLOCK in content
    assert content.index("int_parsing") < content.index(BLOCK)
    calls = [r for r in sink.records if r["kind"] == "tool_call"]
    assert [c["error_type"] for c in calls] == ["ValidationError"] * 3
