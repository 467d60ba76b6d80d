"""The recovery-suggestion catalog: each family maps to its recovery pattern."""

from __future__ import annotations

import pytest

from loopscope.analyses.hints import (
    FALLBACK_SUGGESTIONS,
    HINTS,
    MODIFY_AND_RETRY,
    RECOVERY_PATTERNS,
    RETRY_UNCHANGED,
    USE_DIFFERENT_TOOL,
    match,
    recovery_pattern,
    suggestions_for,
)


@pytest.mark.parametrize(
    ("error_type", "message", "key", "pattern"),
    [
        (None, "HTTP 429 Too Many Requests", "rate_limited", RETRY_UNCHANGED),
        ("openai.RateLimitError", None, "rate_limited", RETRY_UNCHANGED),
        ("TimeoutError", "read timed out", "timeout", RETRY_UNCHANGED),
        (None, "503 Service Unavailable", "unavailable", RETRY_UNCHANGED),
        (None, "connection reset by peer", "connection", RETRY_UNCHANGED),
        ("FileNotFoundError", "src/config.ts", "file_not_found", MODIFY_AND_RETRY),
        # a message naming a more specific family wins over a general type
        ("ValueError", "check_in 'next friday' is not a valid date", "date_format", MODIFY_AND_RETRY),
        (None, "room_type 'premium' is invalid", "validation", MODIFY_AND_RETRY),
        (None, "Error: Patient not found with provided name and date of birth", "not_found", USE_DIFFERENT_TOOL),
        (None, "KeyError: 'created_by'", "not_found", USE_DIFFERENT_TOOL),
        (None, "Invoice is in 'draft' status; it must be finalized before sending", "conflict", USE_DIFFERENT_TOOL),
        ("PermissionError", "Access denied - path outside allowed directories", "permission", USE_DIFFERENT_TOOL),
        (None, "Error: Too many reservations", "limit", MODIFY_AND_RETRY),
        (None, "'NoneType' object has no attribute 'get'", "tool_bug", USE_DIFFERENT_TOOL),
    ],
)
def test_families(error_type: str | None, message: str | None, key: str, pattern: str) -> None:
    entry = match(error_type, message)
    assert entry is not None and entry.key == key
    assert recovery_pattern(error_type, message) == pattern


def test_suggestions_name_the_tool_and_fall_back() -> None:
    hints = suggestions_for("RateLimitError", "slow down", tool_name="search_flights")
    assert any("search_flights" in h for h in hints)
    assert not any("{tool}" in h for h in hints)
    fallback = suggestions_for(None, "the frobnicator declined", None)
    assert fallback == [t.replace("{tool}", "the tool") for t in FALLBACK_SUGGESTIONS]
    assert suggestions_for(None, None) == fallback


def test_catalog_is_well_formed() -> None:
    keys = [h.key for h in HINTS]
    assert len(keys) == len(set(keys))
    for entry in HINTS:
        assert entry.recovery in RECOVERY_PATTERNS
        assert 2 <= len(entry.suggestions) <= 4
        assert entry.rewrite and "e.g." in entry.rewrite or "trace id" in entry.rewrite
