"""The messages reader on real tau2-bench conversations (excerpts in tests/fixtures/tau2/).

Every expected value below was worked out by reading the conversation's
messages (message indexes in the comments), not by running loopscope.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from loopscope.analyses.ingest.messages import read

TAU2 = Path(__file__).resolve().parent / "fixtures" / "tau2"
CLAUDE = TAU2 / "claude-sonnet-4-5_airline_default_gpt4.1_1trials.json"
LANGCHAIN = TAU2 / "langchain_agent_airline_2025-11-26_00-37-06.json"
MEDICAL = TAU2 / "adaptive_agent_medical_triage_opus46_cascata.json"

CLAUDE_CONV = "a62a4510-a540-4d76-8e6e-026589c80fd6"
LANGCHAIN_CONV = "1717074d-9497-4dab-ae39-b2876f241291"
MEDICAL_CONV = "a2bc35d4-64bc-4944-8106-00283389b4eb"


def of(path: Path, conversation: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    out = read(path, {})
    assert out.bad == []
    records = [r for r in out.records if r["conversation_id"] == conversation]
    return records, [v for v in out.violations if v["conversation_id"] == conversation]


def summary(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(prompt, step, tool, is_error) per call and (prompt, 'EXIT', reason, steps) per exit, in order."""
    rows = []
    for r in records:
        if r["kind"] == "tool_call":
            rows.append((r["prompt_id"], r["step"], r["tool_name"], r["is_error"]))
        else:
            rows.append((r["prompt_id"], "EXIT", r["exit_reason"], r["steps"]))
    return rows


def test_claude_airline_error_recovered_in_the_same_prompt() -> None:
    records, violations = of(CLAUDE, CLAUDE_CONV)
    assert summary(records) == [
        # 0 is the agent's greeting (no tools: no prompt); 1 the first user message
        ("m1", "EXIT", "end_turn", 1),
        ("m3", 0, "get_user_details", False),  # 4
        ("m3", 1, "get_reservation_details", False),  # 6
        ("m3", "EXIT", "end_turn", 3),  # 8
        ("m9", 0, "calculate", False),  # 10
        ("m9", 1, "calculate", False),  # 12
        ("m9", 2, "calculate", False),  # 14
        ("m9", "EXIT", "end_turn", 4),  # 16
        ("m17", 0, "book_reservation", True),  # 18 -> 19 "Error: Payment amount does not add up ..."
        ("m17", 1, "search_direct_flight", False),  # 20
        ("m17", 2, "search_direct_flight", False),  # 22
        ("m17", 3, "calculate", False),  # 24
        ("m17", 4, "calculate", False),  # 26
        ("m17", 5, "calculate", False),  # 28
        ("m17", "EXIT", "end_turn", 7),  # 30
        ("m31", 0, "book_reservation", False),  # 32
        ("m31", "EXIT", "end_turn", 2),  # 34; 35 is the user's ###STOP###: no response, no prompt
    ]
    error = next(r for r in records if r.get("is_error"))
    assert error["tool_call_id"] == "toolu_01UG6bL6RqW4Cg3jVMcQs7uE"
    assert error["error_message"] == "Error: Payment amount does not add up, total price is 375, but paid 299"
    assert error["ts"] == "2025-10-31T07:37:24.612169Z"  # the result's stored time
    # the stop reason stored in raw_data (Anthropic stop_reason), not inferred
    assert {r["exit_source"] for r in records if r["kind"] == "loop_exit"} == {"stored"}
    assert violations == []


def test_langchain_airline_too_many_errors_and_reused_ids() -> None:
    records, violations = of(LANGCHAIN, LANGCHAIN_CONV)
    calls = [r for r in records if r["kind"] == "tool_call"]
    assert len(calls) == 27  # 27 tool messages, every one answers an agent call
    per_prompt = Counter(r["prompt_id"] for r in calls)
    assert per_prompt == {"m1": 6, "m11": 1, "m15": 2, "m21": 2, "m26": 3, "m32": 1, "m36": 1, "m40": 6, "m52": 5}
    errors = [(r["prompt_id"], r["step"], r["error_message"]) for r in calls if r["is_error"]]
    assert errors == [
        ("m21", 0, "Error: Flight HAT902 not found"),  # 23
        ("m26", 0, "Error: Flight HAT903 not found"),  # 28
        ("m32", 0, "Error: Not enough seats on flight HAT268"),  # 34
        ("m36", 0, "Error: Payment amount does not add up, total price is 570, but paid 285"),  # 38
        ("m40", 1, "Error: Payment method certificate_3221322 not found"),  # 44, same id as 41's call
        ("m40", 3, "Error: Payment method certificate_3221322 not found"),  # 49
        ("m52", 1, "Error: Too many reservations"),  # 56 .. 62: the call of 53 re-run 4 times, same id
        ("m52", 2, "Error: Too many reservations"),
        ("m52", 3, "Error: Too many reservations"),
        ("m52", 4, "Error: Too many reservations"),
    ]
    exits = [(r["prompt_id"], r["exit_reason"], r["exit_source"]) for r in records if r["kind"] == "loop_exit"]
    # the LangGraph agent stores no stop reason: every end is inferred; the last prompt ends on a
    # tool result and the harness stopped the run (termination_reason too_many_errors)
    assert exits[-1] == ("m52", "error", "termination_reason")
    assert {source for _, _, source in exits[:-1]} == {"inferred"}
    assert len(exits) == 9
    assert records[-1]["error_type"] == "too_many_errors"
    # ids reused by later calls (8 reuses 2's, 43 reuses 41's, 55/57/59/61 reuse 53's) are kept as they
    # are: the store judges them (same call: replay; another call: id collision), as for every format
    assert violations == []
    reused = Counter(r["tool_call_id"] for r in records if r["kind"] == "tool_call")
    assert sorted(n for n in reused.values() if n > 1) == [2, 2, 5]


def test_medical_triage_errors_never_recovered() -> None:
    records, violations = of(MEDICAL, MEDICAL_CONV)
    assert summary(records) == [
        ("m1", "EXIT", "end_turn", 1),
        ("m3", "EXIT", "end_turn", 1),
        ("m5", 0, "get_patient_details", True),  # 6 -> 7 "Patient PC-20160314-ECW not found"
        ("m5", 1, "find_patient_by_name_dob", True),  # 8 -> 9
        ("m5", "EXIT", "end_turn", 3),  # 10, finish_reason "stop"
        ("m11", 0, "get_patient_details", True),  # 12 -> 13
        ("m11", "EXIT", "end_turn", 2),
        ("m15", "EXIT", "end_turn", 1),
        ("m17", "EXIT", "end_turn", 1),  # 19 is the user's last message: no response
    ]
    assert [r["error_message"] for r in records if r.get("is_error")] == [
        "Error: Patient PC-20160314-ECW not found",
        "Error: Patient not found with provided name and date of birth",
        "Error: Patient PC-2016-0314-ECW not found",
    ]
    assert records[-1]["stop_reason_stored"] == "stop"
    assert violations == []


def test_medical_excerpt_template_counts() -> None:
    out = read(MEDICAL, {})
    errors = Counter(r["error_message"] for r in out.records if r.get("is_error"))
    assert sum(errors.values()) == 26
    assert errors.most_common(1) == [("Error: Patient not found with provided name and date of birth", 20)]
    assert {r["agent"] for r in out.records} == {"adaptive_agent"}


@pytest.mark.parametrize("path", [CLAUDE, LANGCHAIN, MEDICAL])
def test_every_tool_message_becomes_one_record(path: Path) -> None:
    doc = json.loads(path.read_text())
    tool_messages = sum(1 for s in doc["simulations"] for m in s["messages"] if m["role"] == "tool" and m.get("requestor") != "user")
    out = read(path, {})
    assert sum(1 for r in out.records if r["kind"] == "tool_call") == tool_messages
    assert out.violations == []
