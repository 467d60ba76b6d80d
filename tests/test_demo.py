"""The demo agent: deterministic output equal to sample_logs/, the scenario facts, EXPECTED.md.

The metric figures are checked against a plain-Python reading of the record
format and metric definitions (``_reference`` below), independent of the
DuckDB views, and against the figures written by hand in sample_logs/EXPECTED.md.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app
from loopscope.cli.demo import run_demo
from loopscope.cli.demo.scenarios import AGENT_BUDGETS, CONVERSATIONS, MODES

SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
EXPECTED_MD = SAMPLE_LOGS / "EXPECTED.md"
NORMAL_EXITS = ("end_turn", "stop_sequence")


# -- a plain-Python reading of the metric definitions -----------------------------------------


def _records(folder: Path) -> list[dict[str, Any]]:
    """Every record of every *.jsonl file, in file-name then line order, with its position."""
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            rec["_pos"] = len(out)
            out.append(rec)
    return out


def _quantile(values: list[int], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    xs = sorted(values)
    rank = q * (len(xs) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (rank - lo) * (xs[hi] - xs[lo])


def _reference(records: list[dict[str, Any]]) -> dict[str, Any]:
    calls = [r for r in records if r["kind"] == "tool_call"]
    exits = {(r["conversation_id"], r["prompt_id"]): r for r in records if r["kind"] == "loop_exit"}
    prompts = {(r["conversation_id"], r["prompt_id"]) for r in records}
    per_prompt = {key: [c for c in calls if (c["conversation_id"], c["prompt_id"]) == key] for key in prompts}

    seen: set[tuple[str, str, str, str | None]] = set()
    replay_pos = set()
    for c in sorted(calls, key=lambda c: (c["ts"], c["_pos"])):
        key = (c["conversation_id"], c["tool_call_id"], c["tool_name"], c["args_fingerprint"])  # the same call
        if key in seen or c["replayed"]:
            replay_pos.add(c["_pos"])
        seen.add(key)

    errors = []
    for c in calls:
        if not c["is_error"] or c["_pos"] in replay_pos:
            continue
        key = (c["conversation_id"], c["prompt_id"])
        exit_rec = exits.get(key)
        later_ok = any(o["step"] > c["step"] and not o["is_error"] and o["tool_name"] != "think" for o in per_prompt[key])
        if exit_rec is None:
            cls = "open"
        elif exit_rec["exit_reason"] in NORMAL_EXITS:
            cls = "recovered" if later_ok else "gave_up"
        else:
            cls = "aborted"
        errors.append((c, cls))

    counts = [len(v) for v in per_prompt.values()]
    recovered = sum(1 for _, cls in errors if cls == "recovered")
    first_ts = {key: min(r["ts"] for r in records if (r["conversation_id"], r["prompt_id"]) == key) for key in prompts}
    # resolved later: a later prompt of the conversation has a non-replay success of the same tool
    resolved_later = sum(
        1
        for c, cls in errors
        if cls != "recovered"
        and any(
            o["conversation_id"] == c["conversation_id"] and o["tool_name"] == c["tool_name"] and not o["is_error"]
            and o["_pos"] not in replay_pos
            and first_ts[(o["conversation_id"], o["prompt_id"])] > first_ts[(c["conversation_id"], c["prompt_id"])]
            for o in calls
        )
    )
    return {
        "prompts": len(prompts),
        "open_prompts": sum(1 for key in prompts if key not in exits),
        "tool_calls": len(calls),
        "median_tool_calls_per_prompt": _quantile(counts, 0.5),
        "p99_tool_calls_per_prompt": _quantile(counts, 0.99),
        "errors": len(errors),
        "recovered_errors": recovered,
        "recovery_rate": recovered / len(errors) if errors else None,
        "resolved_later_errors": resolved_later,
        "conversation_recovery_rate": (recovered + resolved_later) / len(errors) if errors else None,
        "replays": len(replay_pos),
        "replay_rate": len(replay_pos) / len(calls) if calls else None,
        "error_classes": {k: sum(1 for _, cls in errors if cls == k) for k in ("recovered", "open", "aborted", "gave_up")},
        "_errors": errors,
        "_replays": [c for c in calls if c["_pos"] in replay_pos],
        "_prompt_first_ts": first_ts,
    }


def _first_unrecovered(ref: dict[str, Any]) -> dict[str, dict[str, Any]]:
    first: dict[str, tuple[Any, ...]] = {}
    for c, cls in ref["_errors"]:
        if cls == "recovered":
            continue
        key = (ref["_prompt_first_ts"][(c["conversation_id"], c["prompt_id"])], c["step"], c["ts"])
        if c["conversation_id"] not in first or key < first[c["conversation_id"]][0]:
            first[c["conversation_id"]] = (key, c, cls)
    return {
        conv: {"prompt_id": c["prompt_id"], "step": c["step"], "tool_name": c["tool_name"],
               "error_type": c["error_type"], "class": cls}
        for conv, (_, c, cls) in sorted(first.items())
    }


def _json_block(marker: str) -> Any:
    text = EXPECTED_MD.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {marker} -->\s*```json\n(.*?)```", text, re.S)
    assert match, f"EXPECTED.md has no ```json block after <!-- {marker} -->"
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return _records(SAMPLE_LOGS)


def _prompt(records: list[dict[str, Any]], prompt_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    calls = [r for r in records if r["prompt_id"] == prompt_id and r["kind"] == "tool_call"]
    exits = [r for r in records if r["prompt_id"] == prompt_id and r["kind"] == "loop_exit"]
    return calls, exits


# -- the command ------------------------------------------------------------------------------


def test_demo_command_writes_the_sample_logs_byte_for_byte(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--out", "out"])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == sorted(p.name for p in SAMPLE_LOGS.glob("*.jsonl")) == ["back_office.jsonl", "concierge.jsonl"]
    for name in written:
        assert (tmp_path / "out" / name).read_bytes() == (SAMPLE_LOGS / name).read_bytes(), name
    assert "loopscope metrics out" in result.output
    assert "84" in result.output and "30" in result.output  # concierge tool calls, back-office tool calls


def test_demo_rerun_replaces_its_files_instead_of_appending(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("not the demo's", encoding="utf-8")
    first = [p.read_bytes() for p in run_demo(tmp_path)]
    second = [p.read_bytes() for p in run_demo(tmp_path)]
    assert first == second
    assert (tmp_path / "keep.txt").read_text(encoding="utf-8") == "not the demo's"


def test_demo_default_out_folder() -> None:
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert (Path("loopscope-demo") / "concierge.jsonl").read_bytes() == (SAMPLE_LOGS / "concierge.jsonl").read_bytes()


def test_demo_out_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x", encoding="utf-8")
    result = CliRunner().invoke(app, ["demo", "--out", "taken"])
    assert result.exit_code == 1
    assert "is a file" in result.output
    assert "Traceback" not in result.output


def test_demo_out_below_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x", encoding="utf-8")
    result = CliRunner().invoke(app, ["demo", "--out", "taken/logs"])
    assert result.exit_code == 1
    assert "cannot write the demo logs" in result.output
    assert "Traceback" not in result.output


# -- scenario facts -------------------------------------------------------------------------


def test_every_record_carries_mode_and_scenario_tags_and_its_agent_budget(records: list[dict[str, Any]]) -> None:
    specs = {s.conversation_id: s for s in CONVERSATIONS}
    assert {r["conversation_id"] for r in records} == set(specs)
    for r in records:
        spec = specs[r["conversation_id"]]
        assert r["tags"] == {"mode": spec.mode, "scenario": spec.scenario}
        assert r["agent"] == spec.agent
        assert r["v"] == 1 and r["trace_id"] is None
        if r["kind"] == "loop_exit":
            assert r["max_tool_calls"] == AGENT_BUDGETS[spec.agent]
    assert {r["tags"]["mode"] for r in records} == set(MODES)
    assert AGENT_BUDGETS == {"concierge": 25, "back_office": 100}


def test_records_span_four_iso_weeks(records: list[dict[str, Any]]) -> None:
    weeks = {dt.datetime.fromisoformat(r["ts"].replace("Z", "+00:00")).isocalendar()[:2] for r in records}
    assert weeks == {(2026, 44), (2026, 45), (2026, 46), (2026, 47)}


def test_spin_is_three_identical_failing_calls(records: list[dict[str, Any]]) -> None:
    calls, exits = _prompt(records, "c10-conflict-blind-p1")
    failing = [c for c in calls if c["is_error"]]
    assert len(failing) == 3
    assert {(c["tool_name"], c["args_fingerprint"], c["error_type"]) for c in failing} == {
        ("create_reservation", failing[0]["args_fingerprint"], "reservation_conflict")
    }
    assert [c["step"] for c in failing] == [1, 2, 3]
    assert exits[0]["exit_reason"] == "end_turn"


def test_conflict_recovered_by_switching_tools(records: list[dict[str, Any]]) -> None:
    calls, _ = _prompt(records, "c09-conflict-corrective-p1")
    assert [(c["tool_name"], c["is_error"]) for c in calls] == [
        ("check_availability", False), ("create_reservation", True), ("check_availability", False), ("create_reservation", False),
    ]
    assert "Call check_availability again" in json.loads(calls[1]["error_message"])["hint"]


def test_replay_after_restart_is_flagged(records: list[dict[str, Any]]) -> None:
    calls, exits = _prompt(records, "b07-replay-corrective-p1")
    first, again = calls[:2], calls[2:]
    assert [c["replayed"] for c in first] == [False, False]
    assert [c["replayed"] for c in again] == [True, True]
    assert [c["tool_call_id"] for c in again] == [c["tool_call_id"] for c in first]
    assert len(exits) == 1 and exits[0]["exit_reason"] == "end_turn"


def test_resumed_call_reexecuted_without_the_flag(records: list[dict[str, Any]]) -> None:
    calls, _ = _prompt(records, "b08-replay-reexecuted-corrective-p1")
    assert len(calls) == 2
    assert calls[0]["tool_call_id"] == calls[1]["tool_call_id"]
    assert [c["replayed"] for c in calls] == [False, False]
    assert [c["tool_name"] for c in calls] == ["charge_deposit", "charge_deposit"]
    assert calls[0]["ts"] < calls[1]["ts"]


def test_transient_503_retried_inside_the_tool_and_transient_fail(records: list[dict[str, Any]]) -> None:
    retried, _ = _prompt(records, "b03-deposit-corrective-p1")
    assert (retried[0]["outcome"], retried[0]["attempts"], retried[0]["is_error"]) == ("retried", 2, False)
    failed, _ = _prompt(records, "b05-deposit-corrective-p1")
    assert (failed[0]["outcome"], failed[0]["attempts"], failed[0]["is_error"]) == ("transient_fail", 3, True)
    assert (failed[1]["outcome"], failed[1]["is_error"], failed[1]["step"]) == ("ok", False, 1)


def test_open_prompt_has_no_loop_exit(records: list[dict[str, Any]]) -> None:
    calls, exits = _prompt(records, "c24-died-corrective-p2")
    assert exits == [] and len(calls) == 1 and calls[0]["is_error"]
    assert _prompt(records, "c24-died-corrective-p1")[1][0]["exit_reason"] == "end_turn"


def test_budget_crash_parallel_and_toolless_prompts(records: list[dict[str, Any]]) -> None:
    calls, exits = _prompt(records, "c18-budget-corrective-p1")
    assert (exits[0]["exit_reason"], exits[0]["tool_calls"], exits[0]["max_tool_calls"], len(calls)) == ("budget_exceeded", 25, 25, 25)
    assert {c["step"] for c in calls} == {0, 1, 2, 3, 4}
    crash_calls, crash_exit = _prompt(records, "c05-date-crash-p1")
    assert crash_exit[0]["exit_reason"] == "error" and crash_exit[0]["error_type"] == "HotelError"
    assert crash_calls[0]["is_error"] and "invalid_date_format" in crash_calls[0]["error_message"]
    parallel, _ = _prompt(records, "c11-compare-corrective-p1")
    assert [c["step"] for c in parallel] == [0, 0]
    toolless, exits = _prompt(records, "c03-faq-corrective-p1")
    assert toolless == [] and exits[0]["tool_calls"] == 0 and exits[0]["exit_reason"] == "end_turn"


def test_blind_errors_have_no_hint_and_corrective_errors_do(records: list[dict[str, Any]]) -> None:
    for r in records:
        if r["kind"] != "tool_call" or not r["is_error"] or r["tags"]["mode"] == "crash":
            continue
        body = json.loads(r["error_message"])
        assert body["error"] == r["error_type"]
        assert ("hint" in body) == (r["tags"]["mode"] == "corrective"), r["tool_call_id"]


def test_corrective_mode_recovers_more_often_than_blind(records: list[dict[str, Any]]) -> None:
    rates = {}
    for mode in MODES:
        ref = _reference([r for r in records if r["tags"]["mode"] == mode])
        rates[mode] = (ref["prompts"], ref["tool_calls"], ref["errors"], ref["recovered_errors"])
    # (prompts, tool calls, errors, recovered), as in EXPECTED.md "By mode"
    assert rates == {"corrective": (22, 71, 9, 7), "blind": (17, 41, 15, 7), "crash": (2, 2, 2, 0)}


# -- EXPECTED.md ----------------------------------------------------------------------------


def test_expected_md_metrics_equal_a_plain_python_count(records: list[dict[str, Any]]) -> None:
    expected = _json_block("metrics-json")
    ref = {k: v for k, v in _reference(records).items() if not k.startswith("_")}
    assert set(expected) == set(ref)
    for key, value in expected.items():
        assert ref[key] == (value if isinstance(value, dict) else pytest.approx(value, abs=1e-12)), key


def test_expected_md_first_unrecovered_errors(records: list[dict[str, Any]]) -> None:
    assert _json_block("first-unrecovered-json") == _first_unrecovered(_reference(records))


def test_reference_quantile_matches_statistics_module() -> None:
    values = [0, 1, 2, 2, 3, 4, 25]
    assert _quantile(values, 0.5) == statistics.median(values)
    assert _quantile([1, 2, 3, 4], 0.99) == pytest.approx(statistics.quantiles([1, 2, 3, 4], n=100, method="inclusive")[98])


def test_per_prompt_table_matches_the_logs(records: list[dict[str, Any]]) -> None:
    """EXPECTED.md's per-prompt [tool calls, errors, replays] (written by hand) against the logs."""
    table = _json_block("per-prompt-json")
    counts: dict[str, list[int]] = {r["prompt_id"]: [0, 0, 0] for r in records}
    ref = _reference(records)
    for r in records:
        if r["kind"] == "tool_call":
            counts[r["prompt_id"]][0] += 1
    for c, _ in ref["_errors"]:
        counts[c["prompt_id"]][1] += 1
    for c in ref["_replays"]:
        counts[c["prompt_id"]][2] += 1
    assert table == dict(sorted(counts.items()))


def test_corrective_hints_stop_after_max_retries() -> None:
    from loopscope.cli.demo.hotel import HotelError, blind_result, corrective_result

    exc = HotelError("invalid_date_format", "check_in 'next friday' is not a valid date")
    first = json.loads(corrective_result(exc, errors_before=0, max_retries=2))
    second = json.loads(corrective_result(exc, errors_before=1, max_retries=2))
    third = json.loads(corrective_result(exc, errors_before=2, max_retries=2))
    assert (first["retriesRemaining"], second["retriesRemaining"], third["retriesRemaining"]) == (1, 0, 0)
    assert "YYYY-MM-DD" in first["hint"] and "hint" in second and "hint" not in third
    assert "max retries exceeded" in third["message"]
    assert json.loads(blind_result(exc)) == {"error": "invalid_date_format", "message": exc.message}


def test_expected_md_week_table(records: list[dict[str, Any]]) -> None:
    """The "By ISO week" rows of EXPECTED.md: prompts, tool calls, errors, recovered, replays."""
    text = EXPECTED_MD.read_text(encoding="utf-8")
    rows = {m[0]: tuple(int(x) for x in m[1:]) for m in re.findall(r"^\| (\d{4}-W\d\d) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", text, re.M)}
    ref = _reference(records)

    def week(ts: str) -> str:
        year, wk, _ = dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).isocalendar()
        return f"{year}-W{wk:02d}"

    first_ts = ref["_prompt_first_ts"]
    of = {key: week(ts) for key, ts in first_ts.items()}
    computed = {}
    for w in sorted(set(of.values())):
        keys = {k for k, v in of.items() if v == w}
        mine = [r for r in records if (r["conversation_id"], r["prompt_id"]) in keys]
        sub = _reference(mine)
        computed[w] = (sub["prompts"], sub["tool_calls"], sub["errors"], sub["recovered_errors"], sub["replays"])
    assert rows == computed


def test_demo_package_imports_no_cli_or_analysis_dependency() -> None:
    import subprocess
    import sys

    code = (
        "import json, sys; import loopscope.cli.demo; "
        "print(json.dumps([m for m in ('duckdb', 'polars', 'rich', 'typer', 'click', 'loopscope.analyses', 'loopscope.cli.app', 'loopscope.cli.commands') if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd="/")
    assert json.loads(out.stdout) == []
