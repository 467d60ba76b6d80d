"""Third-party instrumentations: real agent framework, real instrumentation, loopscope reads the spans.

The OpenAI Agents SDK (``openai-agents``) runs two prompts against a scripted
fake model on 127.0.0.1 (tests/thirdparty_agent.py) under each of three
instrumentations, exporting OTLP JSON Lines:

- OpenInference ``openinference-instrumentation-openai-agents``,
- OpenLLMetry ``opentelemetry-instrumentation-openai-agents``,
- the official ``opentelemetry-instrumentation-genai-openai-agents``.

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

from loopscope.analyses.readers import otlp
from loopscope.cli.app import app

AGENT_SCRIPT = Path(__file__).parent / "thirdparty_agent.py"
EXTRA = "needs the thirdparty extra: pip install -e '.[test,thirdparty]'"

# instrumentation -> (module to import, whether its tool spans can be matched to real call ids,
#                     whether it exports a conversation id for this SDK)
CASES = {
    "openinference": ("openinference.instrumentation.openai_agents", True, True),
    "openllmetry": ("opentelemetry.instrumentation.openai_agents", True, False),
    "genai": ("opentelemetry.instrumentation.genai.openai_agents", False, True),
}


def _run_agent(which: str, tmp_path: Path) -> Path:
    pytest.importorskip("agents", reason=EXTRA)
    pytest.importorskip(CASES[which][0], reason=EXTRA)
    out = tmp_path / f"{which}.jsonl"
    proc = subprocess.run(
        [sys.executable, str(AGENT_SCRIPT), which, str(out)],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["Your order A1 has shipped; it is sunny in Paris.", "Sunny in Rome too."]
    return out


@pytest.mark.parametrize("which", list(CASES))
def test_tool_calls_error_and_recovery_are_found(which: str, tmp_path: Path) -> None:
    spans = _run_agent(which, tmp_path)
    _, matched_ids, has_conversation = CASES[which]

    out = otlp.read(spans, {})
    assert out.bad == []
    calls = [r for r in out.records if r["kind"] == "tool_call"]
    exits = [r for r in out.records if r["kind"] == "loop_exit"]
    assert [(c["tool_name"], c["step"], c["is_error"]) for c in calls] == [
        ("lookup_order", 0, True), ("lookup_order", 1, False), ("get_weather", 1, False), ("get_weather", 0, False)]
    assert calls[0]["outcome"] == "permanent_fail" and "Error running tool" in calls[0]["error_message"]
    assert [(e["exit_reason"], e["tool_calls"], e["tool_errors"], e["agent"]) for e in exits] == [
        ("end_turn", 3, 1, "support"), ("end_turn", 1, 0, "support")]
    assert len({c["prompt_id"] for c in calls}) == 2
    if matched_ids:  # ids recovered from the model spans' messages, in call order
        assert [c["tool_call_id"] for c in calls] == ["call_1", "call_2", "call_3", "call_4"]
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
