"""OpenAI Responses API items of client-run tools other than functions, through the CLI.

Before responses_items.py, custom_tool_call, shell_call, local_shell_call, apply_patch_call and
computer_call items (and their outputs) were left out without a word: a coding agent on the
Responses API's shell and apply_patch tools showed 0 tool calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.cli.app import app

runner = CliRunner()


def figures(path: Path, *options: str) -> dict[str, Any]:
    result = runner.invoke(app, ["metrics", "--db", ":memory:", "--format", "json", *options, str(path)])
    assert result.exit_code == 0, result.output
    m = json.loads(result.stdout)
    return {k: m[k] for k in ("prompts", "open_prompts", "tool_calls", "errors", "recovered_errors", "replays")}


def _msg(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


# One prompt of a coding agent (by hand): shell `pytest` exits 1 (error), apply_patch fails (error),
# apply_patch again (ok), shell `pytest` exits 0 (ok: recovers both), a custom tool (ok), a computer
# screenshot (ok), a web search the provider ran (not an agent tool call): 6 calls, 2 errors, both
# recovered; then the answer.
ITEMS = [
    _msg("user", "fix the failing test"),
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "shell_call", "id": "sh_1", "call_id": "call_sh1", "action": {"commands": ["pytest -q"]}, "status": "completed"},
    {"type": "shell_call_output", "call_id": "call_sh1",
     "output": [{"stdout": "1 failed", "stderr": "", "outcome": {"type": "exit", "exit_code": 1}}]},
    {"type": "apply_patch_call", "id": "ap_1", "call_id": "call_ap1",
     "operation": {"type": "update_file", "path": "a.py", "diff": "@@ x"}, "status": "completed"},
    {"type": "apply_patch_call_output", "call_id": "call_ap1", "status": "failed", "output": "context not found"},
    {"type": "apply_patch_call", "id": "ap_2", "call_id": "call_ap2",
     "operation": {"type": "update_file", "path": "a.py", "diff": "@@ y"}, "status": "completed"},
    {"type": "apply_patch_call_output", "call_id": "call_ap2", "status": "completed", "output": "patched"},
    {"type": "shell_call", "id": "sh_2", "call_id": "call_sh2", "action": {"commands": ["pytest -q"]}, "status": "completed"},
    {"type": "shell_call_output", "call_id": "call_sh2",
     "output": [{"stdout": "3 passed", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
    {"type": "custom_tool_call", "id": "ct_1", "call_id": "call_ct1", "name": "notes", "input": "fixed a.py"},
    {"type": "custom_tool_call_output", "call_id": "call_ct1", "output": "saved"},
    {"type": "computer_call", "id": "cu_1", "call_id": "call_cu1", "action": {"type": "screenshot"}, "status": "completed"},
    {"type": "computer_call_output", "call_id": "call_cu1", "output": {"type": "computer_screenshot", "image_url": "data:"}},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "pytest"}},
    _msg("assistant", "Fixed: the tests pass."),
]


def test_client_run_tool_items_in_a_session(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text(json.dumps(ITEMS))
    assert figures(path) == {"prompts": 1, "open_prompts": 0, "tool_calls": 6, "errors": 2, "recovered_errors": 2,
                             "replays": 0}


def test_client_run_tool_items_in_a_responses_call_log(tmp_path: Path) -> None:
    # the same loop as a Responses API call log, each call sending the whole input so far
    def call(n_input: int, output: list[dict[str, Any]]) -> dict[str, Any]:
        return {"request": {"model": "gpt-5.1", "input": ITEMS[:n_input]},
                "response": {"id": f"resp_{n_input}", "object": "response", "status": "completed", "error": None,
                             "output": output}}

    lines = [call(1, ITEMS[1:3]), call(4, ITEMS[4:5]), call(6, ITEMS[6:7]), call(8, ITEMS[8:9]),
             call(10, ITEMS[10:11]), call(12, ITEMS[12:13]), call(14, ITEMS[14:16])]
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert figures(path) == {"prompts": 1, "open_prompts": 0, "tool_calls": 6, "errors": 2, "recovered_errors": 2,
                             "replays": 0}
