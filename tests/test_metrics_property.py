"""Property test: the SQL (load + views + metrics) agrees with tests/reference.py.

Random record sets cover what the spec's definitions hinge on: prompts
without tool calls, open prompts, parallel calls, replays (the same call:
tool_call_id, tool and fingerprint, later in the conversation, possibly in
another file, possibly with an earlier ``ts`` than the first),
``replayed: true``, id collisions (an earlier id reused by another tool or
fingerprint, in the same and in another prompt: new calls, not replays),
tool_call ids reused across conversations (not replays), ``think``
scratchpad calls (never a recovery), errors resolved in a later prompt by the
same tool or only by another tool (only the same tool counts), an error then a success in the
same step (not a recovery), abnormal exits, unknown fields, equal timestamps
(input position decides), mixed RFC 3339 spellings, and bad lines (which the
loader quarantines and the reference never sees).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import itertools
import json
import math
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopscope.analyses.ingest.load import load_paths
from loopscope.analyses.store.facts import VIEWS_FACTS_SQL
from loopscope.analyses.store.relations import FACTS_ERRORS, FACTS_PROTOCOL_VIOLATIONS, FACTS_TOOL_CALLS
from loopscope.analyses.metrics import compute_metrics
from loopscope.analyses.selection import Selection
from loopscope.analyses.store import connect

_spec = importlib.util.spec_from_file_location("loopscope_test_reference", Path(__file__).parent / "reference.py")
assert _spec and _spec.loader
reference = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = reference
_spec.loader.exec_module(reference)

BASE = dt.datetime(2026, 11, 16, 23, 59, 59)
EXITS = [None, "end_turn", "stop_sequence", "max_tokens", "error", "refusal", "budget_exceeded", "pause_turn"]
SHARED_IDS = ["toolu_a", "toolu_b", "call_1"]
TOOLS = ["search", "refund", "think"]
FINGERPRINTS = [None, None, "ab12", "cd34"]
_RUNS = itertools.count()
FACTS_DIFF_SQL = """
SELECT (SELECT count(*) FROM (SELECT * FROM prompt_facts EXCEPT ALL SELECT * FROM _ls_prompt_facts)),
       (SELECT count(*) FROM (SELECT * FROM _ls_prompt_facts EXCEPT ALL SELECT * FROM prompt_facts))
"""


def spell(ms: int, style: int) -> str:
    """Render BASE + ms in one of several RFC 3339 spellings of the same instant."""
    t = BASE + dt.timedelta(milliseconds=ms)
    if style == 0:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
    if style == 1:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00"
    if style == 2:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"  # nanoseconds
    if style == 3:
        local = t + dt.timedelta(hours=2)
        return local.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+02:00"
    if style == 4:
        local = t - dt.timedelta(hours=5, minutes=30)
        return local.strftime("%Y-%m-%dt%H:%M:%S.%f").rstrip("0").rstrip(".") + "-05:30"
    return t.strftime("%Y-%m-%d %H:%M:%S.%f") + "z"


def _vary_agent_and_tags(draw: st.DrawFn, rec: dict[str, Any]) -> None:
    """Now and then a record of the prompt names another agent or carries (other) tags: the prompt's come from its exit, else its first record."""
    if draw(st.integers(0, 4)) == 0:
        rec["agent"] = draw(st.sampled_from(["support", "billing"]))
    tags = draw(st.sampled_from([None, None, {"mode": "a"}, {"mode": "b"}]))
    if tags is not None:
        rec["tags"] = tags


@st.composite
def record_sets(draw: st.DrawFn) -> tuple[list[list[Any]], int]:
    """Files of lines: each line is a record dict (valid) or a str (a bad line)."""
    n_files = draw(st.integers(1, 3))
    files: list[list[Any]] = [[] for _ in range(n_files)]
    clock = 0
    counter = 0
    for c in range(draw(st.integers(1, 4))):
        conv = f"conv-{c}"
        used: list[tuple[str, str, str | None]] = []
        for p in range(draw(st.integers(1, 3))):
            prompt = f"prompt-{p}"
            agent = draw(st.sampled_from(["support", "billing", None]))
            common: dict[str, Any] = {"v": 1, "conversation_id": conv, "prompt_id": prompt}
            if agent:
                common["agent"] = agent
            for step in range(draw(st.integers(0, 3))):
                for _ in range(draw(st.integers(1, 3))):  # parallel calls share the step
                    how = draw(st.sampled_from(["new", "new", "new", "shared", "replay", "collision"]))
                    tool_name = draw(st.sampled_from(TOOLS))
                    fingerprint = draw(st.sampled_from(FINGERPRINTS))
                    if how == "replay" and used:  # the same call again
                        call_id, tool_name, fingerprint = draw(st.sampled_from(used))
                    elif how == "collision" and used:  # an earlier id, maybe another tool or fingerprint
                        call_id = draw(st.sampled_from(used))[0]
                    elif how == "shared":
                        call_id = draw(st.sampled_from(SHARED_IDS))
                    else:
                        counter += 1
                        call_id = f"toolu_{counter:04d}"
                    used.append((call_id, tool_name, fingerprint))
                    is_error = draw(st.booleans())
                    clock += draw(st.integers(-2, 3))  # ties and small steps back
                    rec = dict(common, kind="tool_call", ts=spell(clock, draw(st.integers(0, 5))))
                    _vary_agent_and_tags(draw, rec)
                    rec.update(
                        tool_call_id=call_id,
                        tool_name=tool_name,
                        step=step,
                        input_shape={"q": "string"},
                        args_fingerprint=fingerprint,
                        outcome="permanent_fail" if is_error else "ok",
                        is_error=is_error,
                        attempts=1,
                        latency_ms=1.5,
                        error_type=None,
                        error_message="boom" if is_error else None,
                        replayed=draw(st.sampled_from([False, False, False, True])),
                    )
                    if draw(st.integers(0, 5)) == 0:
                        rec["x_deploy"] = {"version": "v42"}  # an unknown field
                    files[draw(st.integers(0, n_files - 1))].append(rec)
            exit_reason = draw(st.sampled_from(EXITS))
            if exit_reason is not None:
                clock += draw(st.integers(0, 3))
                rec = dict(common, kind="loop_exit", ts=spell(clock, draw(st.integers(0, 5))), exit_reason=exit_reason)
                _vary_agent_and_tags(draw, rec)
                rec.update(steps=1, tool_calls=0, tool_errors=0, max_tool_calls=None, duration_ms=3.0)
                files[draw(st.integers(0, n_files - 1))].append(rec)
                if draw(st.integers(0, 4)) == 0:  # logged twice: the last one (ts, then input order) counts
                    clock += draw(st.integers(-1, 2))
                    again = dict(rec, ts=spell(clock, draw(st.integers(0, 5))), exit_reason=draw(st.sampled_from(EXITS[1:])))
                    again.pop("tags", None)
                    _vary_agent_and_tags(draw, again)
                    files[draw(st.integers(0, n_files - 1))].append(again)
            if draw(st.integers(0, 6)) == 0:
                counter += 1
                bad = draw(st.sampled_from(['{"v": 1, "kind": "tool_call", "n": %d', '{"v": 2, "kind": "tool_call", "n": %d}', "[%d]"])) % counter
                files[draw(st.integers(0, n_files - 1))].append(bad)
    return files, n_files


def _write(files: list[list[Any]], folder: Path) -> list[Path]:
    paths = []
    for i, lines in enumerate(files):
        path = folder / f"part-{i:02d}.jsonl"
        path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
        paths.append(path)
    return paths


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _check_metrics(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got.keys() == want.keys()
    for key in want:
        assert _close(got[key], want[key]), (key, got[key], want[key])


# Generated examples per run: 30 (60 with LOOPSCOPE_PROPERTY_EXAMPLES=full, as before 2026-11-27;
# tests/conftest.py says why).
PROPERTY_EXAMPLES = 60 if os.environ.get("LOOPSCOPE_PROPERTY_EXAMPLES") == "full" else 30


@settings(max_examples=PROPERTY_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=record_sets())
def test_sql_agrees_with_reference(tmp_path: Path, data: tuple[list[list[Any]], int]) -> None:
    files, n_files = data
    folder = tmp_path / f"run-{next(_RUNS)}"
    folder.mkdir()
    paths = _write(files, folder)
    # Input order as the loader sees it: files in path order, then lines.
    ordered = [(i, line_no, rec) for i, lines in enumerate(files) for line_no, rec in enumerate(lines, 1) if isinstance(rec, dict)]
    records = [rec for _, _, rec in ordered]

    con = connect(":memory:")
    summary = load_paths(con, [folder])
    assert summary.loaded == len(records)
    assert summary.quarantined == sum(1 for lines in files for x in lines if isinstance(x, str))
    again = load_paths(con, [folder])
    assert again.loaded == 0 and again.quarantined == 0 and again.skipped == len(records)

    want = reference.metrics(records)
    _check_metrics(compute_metrics(con).as_dict(), want)  # from prompt_facts
    _check_metrics(compute_metrics(con, source="views").as_dict(), want)
    # prompt_facts (built by the load's grouping query) row for row equals the views' per-prompt facts.
    con.execute(VIEWS_FACTS_SQL)
    assert con.execute(FACTS_DIFF_SQL).fetchone() == (0, 0)

    # Replay flag of every tool_call row, located by (file, line).
    source_of = {Path(d.path).name: d.source_id for d in summary.details}
    file_of = {source_of[p.name]: i for i, p in enumerate(paths)}
    rows = con.execute("SELECT source_id, line_no, is_replay FROM tool_calls_v").fetchall()
    got_flags = {(file_of[s], n): r for s, n, r in rows}
    flags = reference.replay_flags(records)
    want_flags = {(f, n): flags[k] for k, (f, n, rec) in enumerate(ordered) if rec["kind"] == "tool_call"}
    assert got_flags == want_flags

    # Id collision flag of every tool_call row, and the violations that name them.
    rows = con.execute("SELECT source_id, line_no, is_id_collision FROM tool_calls_v").fetchall()
    collisions = reference.collision_flags(records)
    want_collisions = {(f, n): collisions[k] for k, (f, n, rec) in enumerate(ordered) if rec["kind"] == "tool_call"}
    assert {(file_of[s], n): c for s, n, c in rows} == want_collisions
    n_violations = con.execute("SELECT count(*) FROM id_collisions_v").fetchone()[0]
    assert n_violations == sum(1 for c in collisions if c)
    # The violations the audit reads when the facts are fresh (id collisions through repeat_facts): the view's rows.
    every_violation = "SELECT * FROM {} ORDER BY ALL"
    assert (con.execute(every_violation.format(FACTS_PROTOCOL_VIOLATIONS)).fetchall()
            == con.execute(every_violation.format("protocol_violations_v")).fetchall())

    # Class of every error, and whether a later prompt resolved it.
    got_errors = Counter(
        con.execute(
            "SELECT conversation_id, prompt_id, tool_call_id, step, error_class, resolved_later FROM errors_v"
        ).fetchall()
    )
    want_errors = Counter(
        (e.conversation_id, e.prompt_id, e.tool_call_id, e.step, e.error_class, e.resolved_later)
        for e in reference.errors(records)
    )
    assert got_errors == want_errors
    # The errors the analyses read when prompt_facts is fresh (store.relations): errors_v's rows exactly.
    every_error = "SELECT * FROM {} ORDER BY seq"
    assert con.execute(every_error.format(FACTS_ERRORS)).fetchall() == con.execute(every_error.format("errors_v")).fetchall()
    # The calls they read (the records joined to repeat_facts): tool_calls_v's rows exactly.
    assert con.execute(every_error.format(FACTS_TOOL_CALLS)).fetchall() == con.execute(every_error.format("tool_calls_v")).fetchall()

    # Metrics over one file: the prompts with a record in it, facts from the whole store.
    first = source_of[paths[0].name]
    if first is None:  # an empty file has no source
        return
    in_first = {(r["conversation_id"], r["prompt_id"]) for r in files[0] if isinstance(r, dict)}
    got_one = compute_metrics(con, Selection(source_ids=(first,))).as_dict()
    _check_metrics(got_one, reference.metrics(records, keep=lambda p: p.key in in_first))


def test_reference_quantile_matches_numpy_convention() -> None:
    # numpy.quantile([1, 2, 3, 4], 0.5) == 2.5; ([0, 0, 10], 0.99) == 9.8
    assert reference.quantile([4, 1, 3, 2], 0.5) == 2.5
    assert math.isclose(reference.quantile([0, 0, 10], 0.99), 9.8)
    assert reference.quantile([], 0.5) is None
    assert reference.quantile([7], 0.99) == 7


def test_reference_parse_ts_spellings() -> None:
    want = dt.datetime(2026, 11, 21, 8, 0, 0, 123456)
    for text in (
        "2026-11-21T08:00:00.123456Z",
        "2026-11-21T08:00:00.123456789Z",
        "2026-11-21T10:00:00.123456+02:00",
        "2026-11-21t08:00:00.123456z",
        "2026-11-21 08:00:00.123456+00:00",
    ):
        assert reference.parse_ts(text) == want, text
