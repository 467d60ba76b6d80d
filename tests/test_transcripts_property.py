"""The transcript readers never crash: any value put anywhere in a session file is read or reported.

Starts from the constructed Claude Code and Codex fixtures (tests/fixtures/transcripts/, which
hold every line shape the readers look at), replaces the value at random places (an id, a
type, a content block, a whole message, a timestamp...) with a random JSON value, and reads the
file: ``read`` returns records with the required fields well typed and bad lines with their
numbers; it never raises.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from loopscope.analyses.ingest.transcripts import claude_code, codex

_spec = importlib.util.spec_from_file_location("loopscope_test_json_mutation", Path(__file__).parent / "json_mutation.py")
assert _spec and _spec.loader
mutation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation)

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
CLAUDE = FIXTURES / "claude-code" / "-home-dev-demo" / "5a1c0b7e-0000-4000-8000-000000000001.jsonl"
CODEX = FIXTURES / "codex" / "sessions" / "2025" / "10" / "02" / "rollout-2025-10-02T09-00-00-0199a213-81c0-7800-8aa1-bbab2a035a53.jsonl"
LEGACY = FIXTURES / "codex" / "sessions" / "2025" / "05" / "20" / "rollout-2025-05-20T10-00-00-7f3c2a10-5b1e-4c2d-9a55-1c0de0000001.jsonl"


def _lines(path: Path) -> list[Any]:
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue  # the fixtures' deliberately cut lines
    return out


WORDS = [
    "", "user", "assistant", "tool_use", "tool_result", "text", "toolu_G1", "call_1", "message", "payload",
    "function_call", "function_call_output", "response_item", "event_msg", "user_message", "turn_aborted",
    "[Request interrupted by user]", "Exit code: 1\nOutput:\n", "{\"output\":\"x\",\"metadata\":{\"exit_code\":2}}",
    "2026-13-45T99:00:00Z", "2025-07-20T10:00:00Z", "Warmup", "acompact-1",
]
KEYS = ["type", "message", "content", "id", "tool_use_id", "is_error", "payload", "call_id", "output", "timestamp", "uuid", "agentId", "isSidechain", "role", "x"]
JSON = mutation.json_values(WORDS, KEYS)
CASES = [(claude_code, _lines(CLAUDE)), (codex, _lines(CODEX)), (codex, _lines(LEGACY))]


def _check(out: Any, n_lines: int) -> None:
    json.dumps(out.records, default=str)
    assert all(bad.line_no is not None and 1 <= bad.line_no <= n_lines for bad in out.bad)
    for record in out.records:
        assert record["kind"] in ("tool_call", "loop_exit") and isinstance(record["ts"], str)
        assert isinstance(record["conversation_id"], str) and isinstance(record["prompt_id"], str)
        if record["kind"] == "tool_call":
            assert isinstance(record["tool_call_id"], str) and isinstance(record["tool_name"], str)
            assert isinstance(record["step"], int) and record["step"] >= 0
            assert isinstance(record["is_error"], bool)
        else:
            assert isinstance(record["exit_reason"], str)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(range(len(CASES))), st.data())
def test_any_value_anywhere_is_read_or_reported(tmp_path_factory: Any, case: int, data: Any) -> None:
    reader, original = CASES[case]
    edits = data.draw(st.lists(st.tuples(st.sampled_from(mutation.places(original)), JSON), min_size=1, max_size=4))
    lines = mutation.edited(original, edits)
    file = tmp_path_factory.mktemp("transcript") / "session.jsonl"
    file.write_text("".join(json.dumps(line, allow_nan=True) + "\n" for line in lines), encoding="utf-8")
    _check(reader.read(file, {}), len(lines))  # never raises


@settings(max_examples=30, deadline=None)
@given(st.lists(JSON, min_size=1, max_size=6))
def test_any_lines_are_read_or_reported(tmp_path_factory: Any, values: list[Any]) -> None:
    file = tmp_path_factory.mktemp("transcript") / "session.jsonl"
    file.write_text("".join(json.dumps(v, allow_nan=True) + "\n" for v in values), encoding="utf-8")
    for reader in (claude_code, codex):
        _check(reader.read(file, {}), len(values))
