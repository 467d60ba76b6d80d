"""Properties of the lint over arbitrary text and stores."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopscope.analyses.lint import RULES_BY_ID, lint_message
from loopscope.analyses.lint.ranking import rank_templates
from loopscope.analyses.lint.templates import template_of
from loopscope.analyses.ingest.load import load_paths
from loopscope.analyses.selection import Selection
from loopscope.analyses.store import connect

TEXT = st.one_of(
    st.text(max_size=300),
    st.sampled_from(["Error: ", "Failed", "{", '{"error": ', "Traceback", "<html>", "'", "sk-"]).flatmap(
        lambda head: st.text(max_size=80).map(lambda tail: head + tail)
    ),
)


@settings(max_examples=150, deadline=None)
@given(TEXT, st.booleans(), st.sampled_from([None, "ok", "retried", "transient_fail", "permanent_fail"]))
def test_lint_never_raises_and_verdict_matches_findings(text: str, is_error: bool, outcome: str | None) -> None:
    result = lint_message(text, is_error=is_error, outcome=outcome)
    assert result.generic == any(RULES_BY_ID[f.rule_id].generic for f in result.findings)
    assert len(set(result.rule_ids)) == len(result.rule_ids)


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_template_is_stable(text: str) -> None:
    once = template_of(text)
    assert template_of(once) == once


MESSAGES = st.sampled_from(
    ["Failed", "Error: Order A-1 not found", "Error: Order B-22 not found", "timeout after 30 s", None]
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.booleans(), MESSAGES), min_size=1, max_size=25))
def test_ranking_accounts_for_every_error(tmp_path_factory, calls) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("logs")
    lines = []
    for i, (conv, step, is_error, message) in enumerate(calls):
        lines.append({
            "v": 1, "kind": "tool_call", "ts": f"2026-11-02T10:00:{i:02d}Z", "conversation_id": f"c{conv}",
            "prompt_id": "p1", "agent": "a", "trace_id": None, "span_id": None, "tool_call_id": f"t{i}",
            "tool_name": "tool", "step": step, "input_shape": {}, "args_fingerprint": None,
            "outcome": "permanent_fail" if is_error else "ok", "is_error": is_error, "attempts": 1,
            "latency_ms": 1.0, "error_type": None, "error_message": message, "replayed": False,
        })
    path = Path(folder) / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    con = connect(":memory:")
    load_paths(con, [path])
    ranked = rank_templates(con, Selection())
    errors = con.execute("SELECT count(*), count(*) FILTER (WHERE error_class <> 'recovered') FROM errors_v").fetchone()
    silent = sum(1 for _, _, e, m in calls if not e and m is not None)
    assert sum(r.occurrences for r in ranked if r.kind == "error") == errors[0]
    assert sum(r.unrecovered for r in ranked) == errors[1]
    assert sum(r.occurrences for r in ranked if r.kind == "silent") == silent
    keys = [(r.tool_name, r.template, r.kind) for r in ranked]
    assert len(keys) == len(set(keys))
    assert [(-r.unrecovered, -r.occurrences) for r in ranked] == sorted((-r.unrecovered, -r.occurrences) for r in ranked)
