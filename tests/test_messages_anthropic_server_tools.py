"""Anthropic Messages histories with the tools the API runs itself, the MCP connector and the
2026 stop reasons, through the CLI.

tests/fixtures/messages/anthropic_server_tools.jsonl was written by the anthropic 2.14.0 SDK
against a scripted Messages API on 127.0.0.1, each response kept as ``model_dump()``
(make_anthropic_server_tools.py says what the loop did). Provider-run tools (``server_tool_use``,
``mcp_tool_use``) are not agent tool calls (as the Responses API reader leaves ``web_search_call``
/ ``mcp_call`` out); ``pause_turn`` goes on. The expected figures are counted over the raw file
here (``raw_count``), not by the reader.

On main before this change the figures were already these (6 prompts, 4 calls, 1 error aborted
by ``refusal``), but the prompt left on an unresumed ``pause_turn`` vanished without a word, and a
file whose only tools ran on the provider's side got the "text-action agent" ``no_tool_calls``
notice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

LOG = Path(__file__).resolve().parent / "fixtures" / "messages" / "anthropic_server_tools.jsonl"
runner = CliRunner()


def run(*args: str) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def raw_count(path: Path) -> dict[str, Any]:
    """Counts over the raw blocks, independent of the reader."""
    counts: dict[str, Any] = {"tool_use": 0, "tool_result": 0, "is_error": 0, "user_prompts": 0,
                              "server_tool_use": 0, "mcp_tool_use": 0, "stops": {}, "last_stops": []}
    for line in path.read_text().splitlines():
        messages = json.loads(line)["messages"]
        for m in messages:
            content = m["content"]
            if m["role"] == "user" and isinstance(content, str):
                counts["user_prompts"] += 1
            for block in content if isinstance(content, list) else []:
                kind = block["type"]
                if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
                    counts[kind] += 1
                if kind == "tool_result":
                    counts["tool_result"] += 1
                    counts["is_error"] += block.get("is_error") is True
            if m["role"] == "assistant":
                counts["stops"][m["stop_reason"]] = counts["stops"].get(m["stop_reason"], 0) + 1
        counts["last_stops"].append(messages[-1].get("stop_reason"))
    return counts


def test_server_tools_mcp_and_stop_reasons(tmp_path: Path) -> None:
    raw = raw_count(LOG)
    assert (raw["tool_use"], raw["tool_result"], raw["is_error"], raw["user_prompts"]) == (4, 4, 1, 7)
    assert (raw["server_tool_use"], raw["mcp_tool_use"]) == (4, 2)  # provider-run: in no figure
    assert raw["stops"] == {"pause_turn": 2, "tool_use": 4, "end_turn": 2, "refusal": 1, "max_tokens": 1,
                            "model_context_window_exceeded": 1, "stop_sequence": 1}
    # 7 prompts: the one left on pause_turn (the log ends there) has no call, so no record: 6 shown
    assert raw["last_stops"][-1] == "pause_turn"
    db = str(tmp_path / "s.duckdb")
    load = run("load", "--db", db, "--format", "json", str(LOG))
    assert (load["tool_calls"], load["loop_exits"], load["quarantined"]) == (raw["tool_result"], 6, 0)
    assert not [n for n in load["notices"] if n["kind"] in ("no_tool_calls", "provider_tools_only")]
    m = run("metrics", "--db", db, "--format", "json")
    assert {k: m[k] for k in ("prompts", "open_prompts", "tool_calls", "errors", "recovered_errors")} == {
        "prompts": 6, "open_prompts": 0, "tool_calls": 4, "errors": 1, "recovered_errors": 0}
    assert m["error_classes"]["aborted"] == 1  # refund's error, then the model refused
    audit = run("audit", "--db", db, "--format", "json")
    assert sorted(t["tool_name"] for t in audit["tools"]["items"]) == [
        "get_price", "read_file", "refund", "search_docs"]  # no web_search, code_execution, find_customer
    violations = audit["protocol_violations"]
    assert [(v["conversation_id"], v["prompt_id"], v["kind"]) for v in violations["items"]] == [
        ("stops", "m8", "unresumed_pause_turn")]
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        exits = con.execute("SELECT conversation_id, prompt_id, exit_reason, steps, tool_calls FROM loop_exits "
                            "ORDER BY 1, 2").fetchall()
    finally:
        con.close()
    assert exits == [
        ("mcp-refund", "m0", "end_turn", 1, 0),  # two MCP connector calls (one is_error), run by the API
        ("mcp-refund", "m2", "refusal", 2, 1),
        ("srv-research", "m0", "end_turn", 4, 2),  # pause_turn then its continuation: 4 model responses
        ("stops", "m0", "max_tokens", 1, 0),
        ("stops", "m2", "model_context_window_exceeded", 2, 1),
        ("stops", "m6", "stop_sequence", 1, 0),
    ]


@pytest.mark.parametrize("name", ["mcp_only.json", "a), 7 of them errors (MCP connector), 5 of them error.json"])
def test_provider_tools_only_file_is_named_so(tmp_path: Path, name: str) -> None:
    # The MCP prompt alone: 2 mcp_tool_use blocks, 1 mcp_tool_result with is_error true, no tool_use.
    # The second name holds the notice's own words: the error count is still the file's.
    first = json.loads(LOG.read_text().splitlines()[1])
    messages = first["messages"][:2]
    blocks = messages[1]["content"]
    assert [b["type"] for b in blocks].count("mcp_tool_use") == 2
    assert sum(b.get("is_error") is True for b in blocks if b["type"] == "mcp_tool_result") == 1
    path = tmp_path / name
    path.write_text(json.dumps({"conversation_id": "mcp-only", "messages": messages}))
    load = run("load", "--db", str(tmp_path / "s.duckdb"), "--format", "json", str(path))
    assert (load["tool_calls"], load["loop_exits"]) == (0, 1)
    kinds = {n["kind"]: n for n in load["notices"]}
    assert "no_tool_calls" not in kinds  # not a text-action agent: its tools ran on the provider's side
    assert kinds["provider_tools_only"]["count"] == 2
    assert "(1 error(s))" in kinds["provider_tools_only"]["message"]
