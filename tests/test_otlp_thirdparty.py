"""Third-party instrumentations: real agent frameworks, real instrumentations, loopscope reads the spans.

Two frameworks run two prompts against a scripted fake model on 127.0.0.1
(tests/thirdparty_agent.py), each under several instrumentations, exporting
OTLP JSON Lines through the SDK:

- the OpenAI Agents SDK (``openai-agents``) under OpenInference
  (``openinference-instrumentation-openai-agents``), OpenLLMetry
  (``opentelemetry-instrumentation-openai-agents``) and the official
  ``opentelemetry-instrumentation-genai-openai-agents``;
- LangGraph's ReAct agent (``langgraph`` + ``langchain-openai``) under
  OpenInference (``openinference-instrumentation-langchain``) and OpenLLMetry
  (``opentelemetry-instrumentation-langchain``).

``lookup_order`` fails once (a backend timeout) and succeeds when the model
calls it again together with ``get_weather``; loopscope must find the four
tool calls, the one error and its recovery, through ``loopscope load`` and
``loopscope metrics`` as a user would. These packages are the ``thirdparty``
extra (``pip install -e '.[test,thirdparty]'``); without them the tests skip.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.analyses.ingest import otlp
from loopscope.cli.app import app

AGENT_SCRIPT = Path(__file__).parent / "thirdparty_agent.py"
EXTRA = "needs the thirdparty extra: pip install -e '.[test,thirdparty]'"

# (framework, instrumentation) -> modules to import, then what the spans carry:
# call ids recoverable from the model spans' messages, the conversation id, the agent name.
CASES = {
    ("openai-agents", "openinference"): (("agents", "openinference.instrumentation.openai_agents"), True, True, "support"),
    ("openai-agents", "openllmetry"): (("agents", "opentelemetry.instrumentation.openai_agents"), True, False, "support"),
    ("openai-agents", "genai"): (("agents", "opentelemetry.instrumentation.genai.openai_agents"), False, True, "support"),
    ("langgraph", "openinference"): (("langgraph", "langchain_openai", "openinference.instrumentation.langchain"),
                                     True, True, "default"),
    ("langgraph", "openllmetry"): (("langgraph", "langchain_openai", "opentelemetry.instrumentation.langchain"),
                                   True, True, "support"),
}


def _run_agent(framework: str, which: str, tmp_path: Path, expected_stdout: list[str] | None = None) -> Path:
    for module in CASES[(framework.removesuffix("-max-turns"), which)][0]:
        pytest.importorskip(module, reason=EXTRA)
    out = tmp_path / f"{framework}-{which}.jsonl"
    proc = subprocess.run(
        [sys.executable, str(AGENT_SCRIPT), framework, which, str(out)],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == (expected_stdout or [
        "Your order A1 has shipped; it is sunny in Paris.", "Sunny in Rome too."])
    return out


@pytest.mark.parametrize(("framework", "which"), list(CASES), ids=["-".join(k) for k in CASES])
def test_tool_calls_error_and_recovery_are_found(framework: str, which: str, tmp_path: Path) -> None:
    spans = _run_agent(framework, which, tmp_path)
    _, matched_ids, has_conversation, agent = CASES[(framework, which)]

    out = otlp.read(spans, {})
    assert out.bad == []
    calls = [r for r in out.records if r["kind"] == "tool_call"]
    exits = [r for r in out.records if r["kind"] == "loop_exit"]
    prompts = list(dict.fromkeys(c["prompt_id"] for c in calls))
    assert len(prompts) == 2
    # Within a step the order is the start order, which the framework decides: compare sorted.
    assert [sorted((c["step"], c["tool_name"], c["is_error"]) for c in calls if c["prompt_id"] == p) for p in prompts] == [
        [(0, "lookup_order", True), (1, "get_weather", False), (1, "lookup_order", False)],
        [(0, "get_weather", False)],
    ]
    failed = calls[0]
    assert failed["outcome"] == "permanent_fail" and failed["error_message"]
    if framework == "langgraph":  # the exception itself is recorded; the Agents SDK redacts it
        assert failed["error_type"] == "TimeoutError" and failed["error_message"] == "orders backend timed out after 30s"
    elif which != "genai":  # the tool result the model was handed is on the span: that is the message
        assert failed["error_message"] == "An error occurred while running the tool. Please try again."
        assert "Error running tool (non-fatal)" in failed["error_detail"]
    assert [(e["prompt_id"], e["exit_reason"], e["tool_calls"], e["tool_errors"], e["agent"]) for e in exits] == [
        (prompts[0], "end_turn", 3, 1, agent), (prompts[1], "end_turn", 1, 0, agent)]
    if matched_ids:  # ids recovered from the model spans' messages, in call order
        assert sorted(c["tool_call_id"] for c in calls) == ["call_1", "call_2", "call_3", "call_4"]
        assert {c["tool_call_id"]: c["tool_name"] for c in calls} == {
            "call_1": "lookup_order", "call_2": "lookup_order", "call_3": "get_weather", "call_4": "get_weather"}
        assert all(c["tool_call_id_from_messages"] for c in calls)
    else:
        assert all(c["tool_call_id"] == c["span_id"] and c["tool_call_id_from_span"] for c in calls)
    if has_conversation:
        assert {r["conversation_id"] for r in out.records} == {"conv-42"}
    else:
        assert all(r["conversation_id"].startswith("otlp-trace:") and r["conversation_id_from_trace"]
                   for r in out.records)

    # The user's path: auto-detected load, then the dashboard metrics.
    runner = CliRunner()
    loaded = runner.invoke(app, ["load", "--db", "t.duckdb", str(spans)], catch_exceptions=False)
    assert loaded.exit_code == 0, loaded.output
    res = runner.invoke(app, ["metrics", "--db", "t.duckdb", "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    metrics = json.loads(res.stdout)
    assert {k: metrics[k] for k in ("prompts", "open_prompts", "tool_calls", "errors", "recovered_errors",
                                    "recovery_rate", "median_tool_calls_per_prompt")} == {
        "prompts": 2, "open_prompts": 0, "tool_calls": 4, "errors": 1, "recovered_errors": 1,
        "recovery_rate": 1.0, "median_tool_calls_per_prompt": 2.0}


@pytest.mark.parametrize("which", ["openinference", "openllmetry", "genai"])
def test_max_turns_is_an_error_exit_and_the_error_unrecovered(which: str, tmp_path: Path) -> None:
    spans = _run_agent("openai-agents-max-turns", which, tmp_path, expected_stdout=["MaxTurnsExceeded"])
    out = otlp.read(spans, {})
    (call,) = [r for r in out.records if r["kind"] == "tool_call"]
    (exit_,) = [r for r in out.records if r["kind"] == "loop_exit"]
    assert (call["tool_name"], call["is_error"]) == ("lookup_order", True)
    assert exit_["exit_reason"] == "error" and "Max turns exceeded" in exit_["error_message"]
    assert "exit_reason_inferred" not in exit_

    runner = CliRunner()
    assert runner.invoke(app, ["load", "--db", "t.duckdb", str(spans)], catch_exceptions=False).exit_code == 0
    res = runner.invoke(app, ["metrics", "--db", "t.duckdb", "--format", "json"], catch_exceptions=False)
    metrics = json.loads(res.stdout)
    assert (metrics["errors"], metrics["recovered_errors"], metrics["recovery_rate"]) == (1, 0, 0.0)
