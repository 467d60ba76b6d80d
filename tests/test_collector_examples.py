"""The docs examples run as written against scripted fake model clients (no network, no key)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
from loopscope.collectors import Collector, JsonlSink

_spec = importlib.util.spec_from_file_location("loopscope_test_example_clients", Path(__file__).parent / "example_clients.py")
assert _spec and _spec.loader
_clients = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_clients)
EXAMPLES, records, ScriptedClient, anthropic_client = (
    _clients.EXAMPLES, _clients.records, _clients.ScriptedClient, _clients.anthropic_client
)
a_text, o_resp, o_call = _clients.a_text, _clients.o_resp, _clients.o_call


# ---------------------------------------------------------------- Anthropic


def a_tools(*calls: tuple[str, str, dict], usage: tuple[int, int] = (10, 5)) -> NS:
    blocks = [NS(type="text", text="Let me check.")] + [NS(type="tool_use", id=i, name=n, input=a) for i, n, a in calls]
    return NS(stop_reason="tool_use", content=blocks, usage=NS(input_tokens=usage[0], output_tokens=usage[1]))


def flaky_weather(failures: int):  # noqa: ANN201
    state = {"n": 0}

    def get_weather(city: str, date: str) -> str:
        state["n"] += 1
        if state["n"] <= failures:
            raise EX_A.TransientError("503 Service Unavailable from weather.example.com")
        return EX_A.get_weather(city, date)

    return get_weather


EX_A = _clients.load("anthropic_loop", "loopscope_example_")
EX_O = _clients.load("openai_loop", "loopscope_example_")


def test_anthropic_loop_records_error_recovered_by_the_model(tmp_path: Path) -> None:
    log = tmp_path / "loopscope.jsonl"
    col = Collector(JsonlSink(log))

    def after_error(req: dict) -> NS:
        # The model saw the error as a tool_result with is_error and fixes its call.
        results = req["messages"][-1]["content"]
        bad = next(r for r in results if r.get("is_error"))
        assert bad["tool_use_id"] == "toolu_paris" and "Use YYYY-MM-DD" in bad["content"]
        return a_tools(("toolu_paris2", "get_weather", {"city": "Paris", "date": "2026-11-23"}))

    client, create = anthropic_client(
        [
            lambda req: a_tools(
                ("toolu_paris", "get_weather", {"city": "Paris", "date": "tomorrow"}),
                ("toolu_lisbon", "lookup", {"city": "Lisbon", "date": "2026-11-23"}),
            ),
            after_error,
            lambda req: a_text("Paris: 14°C and rain; Lisbon the same."),
        ]
    )
    tools = {"get_weather": EX_A.get_weather, "lookup": flaky_weather(failures=1)}
    messages: list = []
    answer = EX_A.run_agent_loop(
        client,
        col,
        "conv-1",
        "Weather in Paris and Lisbon?",
        messages,
        prompt_id="p1",
        tools=tools,
        sleep=lambda s: None,
    )
    col.close()
    assert answer.startswith("Paris: 14°C")
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]

    recs = records(log)
    calls = sorted((r for r in recs if r["kind"] == "tool_call"), key=lambda r: (r["step"], r["tool_call_id"]))
    got = [(r["tool_call_id"], r["step"], r["outcome"], r["is_error"], r["attempts"], r["error_type"]) for r in calls]
    assert got == [
        ("toolu_lisbon", 0, "retried", False, 2, None),
        ("toolu_paris", 0, "permanent_fail", True, 1, "ToolInputError"),
        ("toolu_paris2", 1, "ok", False, 1, None),
    ]
    assert calls[1]["error_message"] == "Invalid date format 'tomorrow'. Use YYYY-MM-DD, e.g. 2026-11-23."
    assert calls[1]["input_shape"] == {"city": "string", "date": "string"}
    assert "tomorrow" not in json.dumps(calls[1]["input_shape"]) and "Paris" not in json.dumps(calls)
    (exit_,) = [r for r in recs if r["kind"] == "loop_exit"]
    expected = {
        "conversation_id": "conv-1",
        "prompt_id": "p1",
        "agent": "support",
        "exit_reason": "end_turn",
        "steps": 3,
        "tool_calls": 3,
        "tool_errors": 1,
        "max_tool_calls": 25,
        "input_tokens": 30,
        "output_tokens": 15,
    }
    assert {k: exit_[k] for k in expected} == expected


def test_anthropic_loop_budget_exceeded(tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(log))
    same = ("get_weather", {"city": "Paris", "date": "2026-11-23"})
    client, _ = anthropic_client(
        [
            lambda req: a_tools(("t1", *same), ("t2", *same)),
            lambda req: a_tools(("t3", *same), ("t4", *same)),
        ]
    )
    with pytest.raises(EX_A.BudgetExceededError):
        EX_A.run_agent_loop(client, col, "conv-2", "Weather?", [], max_tool_calls=3)
    col.close()
    recs = records(log)
    assert [r["kind"] for r in recs] == ["tool_call", "tool_call", "loop_exit"]
    assert recs[-1]["exit_reason"] == "budget_exceeded" and recs[-1]["max_tool_calls"] == 3


def test_anthropic_loop_resume_replays_instead_of_rerunning(tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(log))
    # Saved state after a crash: the tool ran (its result is in the idempotency table) but the
    # tool_result never made it into the persisted messages.
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": a_tools(("toolu_1", "get_weather", {"city": "Paris", "date": "2026-11-23"})).content,
        },
    ]
    done = {"toolu_1": "Paris on 2026-11-23: 14°C, light rain"}
    ran = []
    tools = {"get_weather": lambda **kw: ran.append(kw) or "fresh"}
    client, create = anthropic_client([lambda req: a_text("14°C and rain.")])
    EX_A.run_agent_loop(client, col, "conv-3", None, messages, prompt_id="p1", tools=tools, done=done)
    col.close()
    assert ran == []  # not executed twice
    assert create.requests[0]["messages"][-1]["content"][0]["content"] == done["toolu_1"]
    call, exit_ = records(log)
    assert (call["tool_call_id"], call["replayed"], call["outcome"], call["is_error"]) == ("toolu_1", True, "ok", False)
    assert exit_["exit_reason"] == "end_turn"


def test_anthropic_loop_exception_escaping_is_an_error_exit(tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(log))

    def overloaded(req: dict) -> NS:
        raise ConnectionError("529 overloaded; Authorization: Bearer sk-ant-api03-abcdefghijklmnopqrstuvwxyz")

    client, _ = anthropic_client([overloaded])
    with pytest.raises(ConnectionError):
        EX_A.run_agent_loop(client, col, "conv-4", "Hi", [])
    col.close()
    (exit_,) = records(log)
    assert exit_["exit_reason"] == "error" and exit_["error_type"] == "ConnectionError"
    assert exit_["error_message"] == "529 overloaded; Authorization: Bearer [REDACTED]"


# ---------------------------------------------------------------- OpenAI


def test_openai_loop_records_error_recovered_by_the_model(tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(log))

    def after_error(req: dict) -> NS:
        tool_msgs = [m for m in req["messages"] if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_msgs] == ["call_a", "call_b", "call_c"]
        assert "Use YYYY-MM-DD" in tool_msgs[0]["content"] and "not valid JSON" in tool_msgs[2]["content"]
        return o_resp(None, [o_call("call_d", "get_weather", '{"city": "Paris", "date": "2026-11-23"}')], "tool_calls")

    create = ScriptedClient(
        [
            lambda req: o_resp(
                None,
                [
                    o_call("call_a", "get_weather", '{"city": "Paris", "date": "next friday"}'),
                    o_call("call_b", "get_weather", '{"city": "Rome", "date": "2026-11-23"}'),
                    o_call("call_c", "get_weather", '{"city": "Oslo", "date": '),
                ],
                "tool_calls",
            ),
            after_error,
            lambda req: o_resp("Paris and Rome: 14°C and rain.", None, "stop"),
        ]
    )
    client = NS(chat=NS(completions=NS(create=create)))
    messages: list = []
    answer = EX_O.run_openai_agent_loop(client, col, "conv-o", "Weather?", messages, prompt_id="p1")
    col.close()
    assert answer == "Paris and Rome: 14°C and rain."
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    recs = records(log)
    calls = sorted((r for r in recs if r["kind"] == "tool_call"), key=lambda r: r["tool_call_id"])
    got = [
        (r["tool_call_id"], r["step"], r["outcome"], r["is_error"], r["error_type"], r["input_shape"]) for r in calls
    ]
    shape = {"city": "string", "date": "string"}
    assert got == [
        ("call_a", 0, "permanent_fail", True, "ToolInputError", shape),
        ("call_b", 0, "ok", False, None, shape),
        ("call_c", 0, "permanent_fail", True, "invalid_arguments", {}),
        ("call_d", 1, "ok", False, None, shape),
    ]
    assert calls[2]["args_fingerprint"] is None
    assert calls[1]["args_fingerprint"] != calls[3]["args_fingerprint"]
    exit_ = recs[-1]
    assert (exit_["exit_reason"], exit_["steps"], exit_["tool_calls"], exit_["tool_errors"]) == ("end_turn", 3, 4, 2)
    assert (exit_["input_tokens"], exit_["output_tokens"]) == (60, 21)


def test_openai_loop_budget_exceeded(tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(log))
    args = '{"city": "Paris", "date": "2026-11-23"}'
    create = ScriptedClient(
        [lambda req: o_resp(None, [o_call(f"c{i}", "get_weather", args) for i in range(3)], "tool_calls")]
    )
    client = NS(chat=NS(completions=NS(create=create)))
    with pytest.raises(EX_O.BudgetExceededError):
        EX_O.run_openai_agent_loop(client, col, "conv-b", "Weather?", [], max_tool_calls=2)
    col.close()
    (exit_,) = records(log)
    assert (exit_["exit_reason"], exit_["tool_calls"], exit_["steps"]) == ("budget_exceeded", 0, 1)


# ---------------------------------------------------------------- README / docs snippets

ROOT = EXAMPLES.parent.parent


def snippet(path: Path, start_marker: str) -> str:
    text = path.read_text(encoding="utf-8")
    body = text[text.index(start_marker) :]
    return body[body.index("```python\n") + len("```python\n") :].split("```", 1)[0]


def snippet_env() -> dict:
    script = [
        a_tools(("toolu_01", "get_weather", {"city": "Paris", "date": "tomorrow"}), usage=(420, 38)),
        a_text("Please give me a date like 2026-11-23.", usage=(510, 22)),
    ]
    client, create = anthropic_client([lambda req, r=r: r for r in script])

    def run_tool(name: str, args: dict) -> str:
        raise ValueError("Invalid date format 'tomorrow'. Use YYYY-MM-DD.")

    return {
        "client": client,
        "MODEL": "claude-x",
        "TOOLS": [],
        "run_tool": run_tool,
        "messages": [{"role": "user", "content": "Weather in Paris tomorrow?"}],
    }


SHOWN_VOLATILE = ("ts", "prompt_id", "latency_ms", "duration_ms")


@pytest.mark.parametrize(
    ("doc", "marker"), [("README.md", "<!-- SECTION:instrument -->"), ("docs/collector.md", "## Quick start")]
)
def test_documented_snippet_runs_and_writes_the_shown_record(doc: str, marker: str, tmp_path: Path) -> None:
    env = snippet_env()
    exec(compile(snippet(ROOT / doc, marker), doc, "exec"), env)  # noqa: S102 - our own docs
    env["collector"].close()
    written = records(tmp_path / "logs" / "loopscope.jsonl")
    text = (ROOT / doc).read_text(encoding="utf-8")
    if "<!-- SECTION:" in marker:  # only our own README section
        text = text[text.index(marker) : text.index(marker.replace("<!-- ", "<!-- /"))]
    shown = [json.loads(line) for line in text.splitlines() if line.startswith('{"v":1,')]
    assert shown, "the doc shows no record"
    for got, want in zip(written, shown):
        assert {k: v for k, v in got.items() if k not in SHOWN_VOLATILE} == {
            k: v for k, v in want.items() if k not in SHOWN_VOLATILE
        }
    assert env["messages"][2]["content"][0]["is_error"] is True
