"""Per-tool health through the CLI: ``metrics --by tool``, the audit's Tools section, ``check --tool``.

Two sources of expected answers, neither of them the SQL:

- ``sample_logs/``, counted by ``tests/reference.py`` (plain Python written from the spec);
- ``health.jsonl`` + ``undated.jsonl`` below, small enough to count by hand. Every figure in
  ``EXPECTED`` is worked out in the comments next to the records.

The hand-built logs, per tool (``search``, ``book``, ``think``):

c1/p1 (end_turn)  search s1 ok 10 ms; search s2 ERROR 20 ms "no result for 'paris hotels'" (step 1);
                  search s3 ok 30 ms (step 2)                      -> s2 recovered
c2/p1 (end_turn)  search t1 ERROR 40 ms "no result for 'rome'"; think t2 ok 1 ms (step 1)
                                                                   -> t1 gave_up: think never recovers
c2/p2 (end_turn)  search t3 ok 100 ms                              -> t1 resolved later
c3/p1 (error)     book b1 ok 200 ms; book b1 again, same call, 5 ms (a replay);
                  book b2 replayed: true, 0 ms (a replay);
                  book b1 with other arguments, ERROR 300 ms "room R-12 taken" (an id collision:
                  a new call, so an error)                         -> aborted
c4/p1 (open)      book b3 ERROR, no latency_ms, "room R-99 taken"  -> open;
                  book b3 again, same call, ERROR 7 ms (a replay: not an error)
undated (messages without timestamps, no latency): u-1: search ERROR "index offline" (step 0),
                  search ok (step 1), end_turn                     -> recovered

search: 7 calls (5 dated + 2 undated), errors s2, t1, u1 = 3 (error rate 3/7), recovered s2 and u1 (2/3),
        t1 resolved later (conversation recovery 3/3), 0 replays; latencies 10, 20, 30, 40, 100 and
        2 without: p50 = 30, p95 = 40 + 0.8 * 60 = 88, p99 = 40 + 0.96 * 60 = 97.6;
        top template "Error: no result for '<*>'" (2 errors; "Error: index offline" has 1).
book:   6 calls, 3 replays (b1 again, b2, b3 again), errors = the collision and b3 = 2 (2/6), none
        recovered, classes aborted 1 and open 1; latencies 200, 5, 0, 300, 7 (sorted 0, 5, 7, 200,
        300) and 1 without: p50 = 7, p95 = 200 + 0.8 * 100 = 280, p99 = 200 + 0.96 * 100 = 296;
        top template "Error: room <id> taken" (2).
think:  1 call, a scratchpad tool, no error, latency 1.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.analyses.lint.templates import template_of
from loopscope.analyses.metrics import TOOL_KEYS
from loopscope.cli.app import app

_spec = importlib.util.spec_from_file_location("loopscope_test_reference", Path(__file__).parent / "reference.py")
assert _spec and _spec.loader
reference = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = reference
_spec.loader.exec_module(reference)

SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
needs_samples = pytest.mark.skipif(not (SAMPLE_LOGS / "EXPECTED.md").exists(), reason="sample_logs/ not generated")
runner = CliRunner()


def _call(conv: str, prompt: str, ts: str, call_id: str, tool: str, step: int, fp: str, *, error: str | None = None,
          latency: float | None = None, replayed: bool = False) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "v": 1, "kind": "tool_call", "ts": ts, "conversation_id": conv, "prompt_id": prompt, "agent": "desk",
        "tool_call_id": call_id, "tool_name": tool, "step": step, "input_shape": {"q": "string"},
        "args_fingerprint": fp, "outcome": "permanent_fail" if error else "ok", "is_error": error is not None,
        "attempts": 1, "error_type": None, "error_message": error, "replayed": replayed,
    }
    if latency is not None:
        rec["latency_ms"] = latency
    return rec


def _exit(conv: str, prompt: str, ts: str, reason: str) -> dict[str, Any]:
    return {"v": 1, "kind": "loop_exit", "ts": ts, "conversation_id": conv, "prompt_id": prompt, "agent": "desk",
            "exit_reason": reason, "steps": 1, "tool_calls": 0, "tool_errors": 0, "duration_ms": 1.0}


DAY1, DAY2, DAY3 = "2026-11-02T10:00:0{}.000Z", "2026-11-03T10:00:0{}.000Z", "2026-11-04T10:00:0{}.000Z"
RECORDS = [
    _call("c1", "p1", DAY1.format(1), "s1", "search", 0, "A", latency=10),
    _call("c1", "p1", DAY1.format(2), "s2", "search", 1, "B", error="Error: no result for 'paris hotels'", latency=20),
    _call("c1", "p1", DAY1.format(3), "s3", "search", 2, "C", latency=30),
    _exit("c1", "p1", DAY1.format(4), "end_turn"),
    _call("c2", "p1", DAY1.format(5), "t1", "search", 0, "D", error="Error: no result for 'rome'", latency=40),
    _call("c2", "p1", DAY1.format(6), "t2", "think", 1, "E", latency=1),
    _exit("c2", "p1", DAY1.format(7), "end_turn"),
    _call("c2", "p2", DAY2.format(1), "t3", "search", 0, "F", latency=100),
    _exit("c2", "p2", DAY2.format(2), "end_turn"),
    _call("c3", "p1", DAY3.format(1), "b1", "book", 0, "G", latency=200),
    _call("c3", "p1", DAY3.format(2), "b1", "book", 1, "G", latency=5),
    _call("c3", "p1", DAY3.format(3), "b2", "book", 2, "H", latency=0, replayed=True),
    _call("c3", "p1", DAY3.format(4), "b1", "book", 3, "I", error="Error: room R-12 taken", latency=300),
    _exit("c3", "p1", DAY3.format(5), "error"),
    _call("c4", "p1", DAY3.format(6), "b3", "book", 0, "J", error="Error: room R-99 taken"),
    _call("c4", "p1", DAY3.format(7), "b3", "book", 1, "J", error="Error: room R-99 taken", latency=7),
]
# Anthropic messages without timestamps (the reader dates them 1970: "no timestamp") and without latencies.
UNDATED = {"conversation_id": "u-1", "messages": [
    {"role": "user", "content": "Find me a hotel."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_u1", "name": "search", "input": {"q": "hotel"}}],
     "stop_reason": "tool_use"},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_u1", "content": "Error: index offline",
                                  "is_error": True}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_u2", "name": "search", "input": {"q": "inn"}}],
     "stop_reason": "tool_use"},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_u2", "content": "3 hotels"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Here are 3 hotels."}], "stop_reason": "end_turn"},
]}

EXPECTED = [
    {"tool_name": "search", "scratchpad": False, "tool_calls": 7, "errors": 3, "error_rate": 3 / 7,
     "recovered_errors": 2, "recovery_rate": 2 / 3, "resolved_later_errors": 1, "conversation_recovery_rate": 1.0,
     "replays": 0, "replay_rate": 0.0, "p50_latency_ms": 30.0, "p95_latency_ms": 88.0, "p99_latency_ms": 97.6,
     "tool_calls_without_latency": 2, "top_error_template": "Error: no result for '<*>'",
     "top_error_template_errors": 2, "error_classes": {"recovered": 2, "open": 0, "aborted": 0, "gave_up": 1}},
    {"tool_name": "book", "scratchpad": False, "tool_calls": 6, "errors": 2, "error_rate": 2 / 6,
     "recovered_errors": 0, "recovery_rate": 0.0, "resolved_later_errors": 0, "conversation_recovery_rate": 0.0,
     "replays": 3, "replay_rate": 0.5, "p50_latency_ms": 7.0, "p95_latency_ms": 280.0, "p99_latency_ms": 296.0,
     "tool_calls_without_latency": 1, "top_error_template": "Error: room <id> taken",
     "top_error_template_errors": 2, "error_classes": {"recovered": 0, "open": 1, "aborted": 1, "gave_up": 0}},
    {"tool_name": "think", "scratchpad": True, "tool_calls": 1, "errors": 0, "error_rate": 0.0,
     "recovered_errors": 0, "recovery_rate": None, "resolved_later_errors": 0, "conversation_recovery_rate": None,
     "replays": 0, "replay_rate": 0.0, "p50_latency_ms": 1.0, "p95_latency_ms": 1.0, "p99_latency_ms": 1.0,
     "tool_calls_without_latency": 0, "top_error_template": None, "top_error_template_errors": 0,
     "error_classes": {"recovered": 0, "open": 0, "aborted": 0, "gave_up": 0}},
]


def _approx(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: pytest.approx(v) if isinstance(v, float) else v for k, v in row.items()} for row in rows]


def invoke(*args: str, exit_code: int = 0) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == exit_code, (args, result.output)
    return result


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tools")
    (folder / "health.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    (folder / "undated.jsonl").write_text(json.dumps(UNDATED) + "\n")
    return folder


@pytest.fixture(scope="module")
def db(logs: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("db") / "tools.duckdb")
    invoke("load", str(logs), "--db", path)
    return path


def test_metrics_by_tool_json_is_the_hand_count(db: str) -> None:
    rows = json.loads(invoke("metrics", "--db", db, "--by", "tool", "--format", "json").stdout)
    assert rows == _approx(EXPECTED)
    assert [list(r) for r in rows] == [[*TOOL_KEYS, "error_classes"]] * 3


def test_the_undated_prompt_counts_like_the_rest(db: str) -> None:
    # The messages have no time: metrics --by week puts their prompt under "no timestamp"; per tool it counts.
    weeks = json.loads(invoke("metrics", "--db", db, "--by", "week", "--format", "json").stdout)
    assert {w["group"]: w["tool_calls"] for w in weeks} == {"2026-W45": 12, "no timestamp": 2}
    dated = json.loads(invoke("metrics", "--db", db, "--by", "tool", "--since", "2026-01-01", "--format", "json").stdout)
    search = next(r for r in dated if r["tool_name"] == "search")
    assert (search["tool_calls"], search["errors"], search["recovered_errors"], search["tool_calls_without_latency"]) == (5, 2, 1, 0)
    assert search["top_error_template"] == "Error: no result for '<*>'"


def test_the_selection_picks_prompts_and_facts_stay_store_wide(db: str) -> None:
    # From 2026-11-03: c2/p2 (search t3) and c3, c4 (book). t1's later resolution is not in the window.
    rows = json.loads(invoke("metrics", "--db", db, "--by", "tool", "--since", "2026-11-03", "--format", "json").stdout)
    assert [(r["tool_name"], r["tool_calls"], r["errors"], r["replays"]) for r in rows] == [("book", 6, 2, 3), ("search", 1, 0, 0)]
    assert rows[1]["p50_latency_ms"] == 100.0 and rows[1]["top_error_template"] is None


def test_metrics_by_tool_csv_and_table(db: str) -> None:
    out = invoke("metrics", "--db", db, "--by", "tool", "--format", "csv").stdout
    table = list(csv.DictReader(io.StringIO(out)))
    assert list(table[0]) == [*TOOL_KEYS, "error_classes.recovered", "error_classes.open", "error_classes.aborted",
                              "error_classes.gave_up"]
    assert [(r["tool_name"], r["tool_calls"], r["p95_latency_ms"], r["error_classes.aborted"]) for r in table] == [
        ("search", "7", "88.0", "0"), ("book", "6", "280.0", "1"), ("think", "1", "1.0", "0")]
    text = invoke("metrics", "--db", db, "--by", "tool").stdout
    lines = text.splitlines()
    search = next(line for line in lines if line.lstrip().startswith("search "))
    assert search.split() == ["search", "7", "3", "42.9%", "66.7%", "100.0%", "0", "30", "88", "97.6"]
    assert any(line.split()[:2] == ["think", "(scratchpad)"] for line in lines)
    assert "Error: room <id> taken" in text and "Error: no result for '<*>'" in text
    assert "3 calls without latency_ms" in text


def test_a_scratchpad_tool_set_at_load_changes_recovery(logs: Path, tmp_path: Path) -> None:
    # With no scratchpad tool, think's success at step 1 recovers t1 (c2/p1 exits normally).
    db = str(tmp_path / "s.duckdb")
    invoke("load", str(logs), "--db", db, "--scratchpad-tool", "")
    rows = {r["tool_name"]: r for r in json.loads(invoke("metrics", "--db", db, "--by", "tool", "--format", "json").stdout)}
    assert rows["search"]["recovered_errors"] == 3 and rows["search"]["resolved_later_errors"] == 0
    assert rows["think"]["scratchpad"] is False


@needs_samples
def test_sample_logs_per_tool_match_the_plain_python_reference() -> None:
    records = [json.loads(line) for f in sorted(SAMPLE_LOGS.glob("*.jsonl")) for line in f.read_text().splitlines()
               if line.strip()]
    expected = reference.tool_health(records, template=template_of)
    rows = json.loads(invoke("metrics", str(SAMPLE_LOGS), "--db", ":memory:", "--by", "tool", "--format", "json").stdout)
    assert rows == _approx(expected)
    assert sum(r["tool_calls"] for r in rows) == 114 and sum(r["errors"] for r in rows) == 26  # EXPECTED.md
    assert sum(r["replays"] for r in rows) == 3
    # One week only (W47): the reference with the same prompt filter.
    start, end = reference.parse_ts("2026-11-16T00:00:00Z"), reference.parse_ts("2026-11-23T00:00:00Z")
    week = reference.tool_health(records, keep=lambda p: start <= p.first_ts < end, template=template_of)
    rows = json.loads(invoke("metrics", str(SAMPLE_LOGS), "--db", ":memory:", "--by", "tool", "--since", "2026-11-16",
                             "--until", "2026-11-23", "--format", "json").stdout)
    assert rows == _approx(week)


def test_audit_tools_section(db: str, tmp_path: Path) -> None:
    report = json.loads(invoke("audit", "--db", db, "--format", "json").stdout)
    assert report["tools"] == {"total": 3, "items": _approx(EXPECTED)}
    cut = json.loads(invoke("audit", "--db", db, "--format", "json", "--limit", "1").stdout)["tools"]
    assert cut["total"] == 3 and [t["tool_name"] for t in cut["items"]] == ["search"]
    text = invoke("audit", "--db", db, "--limit", "2").stdout
    assert "Tools (2 of 3 tools, most called first; latency in ms)" in text
    page = tmp_path / "audit.html"
    invoke("audit", "--db", db, "--html", str(page))
    html = page.read_text()
    section = html[html.index('<section id="tools">'):html.index('<section id="classes">')]
    assert "<h2>Tools (3 tools, most called first)</h2>" in section
    assert "<th>p95 ms</th>" in section and 'data-v="88.0">88</td>' in section
    assert "Error: room &lt;id&gt; taken" in section
    assert "3 calls without latency_ms" in section


def test_untrusted_tool_names_and_templates_stay_inert(tmp_path: Path) -> None:
    bad_name = "[bold red]x[/bold red]\x1b[31m<script>"
    rec = _call("c9", "p1", DAY1.format(1), "z1", bad_name, 0, "Z", error="=HYPERLINK(\"http://evil\") <b>boom</b>",
                latency=3)
    logs = tmp_path / "bad.jsonl"
    logs.write_text(json.dumps(rec) + "\n" + json.dumps(_exit("c9", "p1", DAY1.format(2), "end_turn")) + "\n")
    db = str(tmp_path / "b.duckdb")
    invoke("load", str(logs), "--db", db)
    text = invoke("metrics", "--db", db, "--by", "tool").stdout
    assert "\x1b" not in text and "[bold red]x[/bold red]" in text  # shown as text, not applied
    out = invoke("metrics", "--db", db, "--by", "tool", "--format", "csv").stdout
    assert not any(cell.startswith("=") for row in csv.reader(io.StringIO(out)) for cell in row)
    page = tmp_path / "a.html"
    invoke("audit", "--db", db, "--html", str(page))
    html = page.read_text()
    assert html.count("<script>") == 1 and "<b>boom" not in html  # the page's own script only
    assert "&lt;script&gt;" in html and "&lt;b&gt;boom&lt;/b&gt;" in html


def test_check_gates_a_tool(db: str) -> None:
    ok = invoke("check", "--db", db, "--tool", "search", "--max-error-rate", "0.43", "--max-p95-latency-ms", "88")
    assert ok.stdout.splitlines()[:2] == [
        "OK       error_rate of search 42.9% meets the maximum 43.0% (--max-error-rate)",
        "OK       p95_latency_ms of search 88 ms meets the maximum 88 ms (--max-p95-latency-ms)",
    ]
    bad = invoke("check", "--db", db, "--tool", "search", "--tool", "book", "--max-error-rate", "0.4",
                 "--max-p99-latency-ms", "296", exit_code=3)
    assert [line for line in bad.stdout.splitlines() if line.startswith("VIOLATED")] == [
        "VIOLATED error_rate of search 42.9% is above the maximum 40.0% (--max-error-rate)",
    ]
    assert "OK       p99_latency_ms of book 296 ms meets the maximum 296 ms (--max-p99-latency-ms)" in bad.stdout
    doc = json.loads(invoke("check", "--db", db, "--tool", "book", "--max-p99-latency-ms", "295", "--format", "json",
                            exit_code=3).stdout)
    assert doc["outcomes"] == [{
        "threshold": "max_p99_latency_ms", "figure": "p99_latency_ms", "value": 296.0, "limit": 295.0,
        "status": "violated", "reason": "p99_latency_ms of book 296 ms is above the maximum 295 ms (--max-p99-latency-ms)",
        "tool_name": "book", "group": None}]
    assert doc["figures"]["tools"]["book"] == _approx(EXPECTED)[1]


def test_check_tool_skips_a_tool_without_calls_in_the_window(db: str) -> None:
    res = invoke("check", "--db", db, "--since", "2026-11-04", "--tool", "search", "--max-error-rate", "0.1")
    assert res.stdout.splitlines()[0] == (
        "SKIPPED  error_rate of search has no value (search has no call in the selection)")
    doc = json.loads(invoke("check", "--db", db, "--since", "2026-11-04", "--tool", "search", "--max-error-rate", "0.1",
                            "--format", "json").stdout)
    assert doc["passed"] is True and doc["figures"]["tools"] == {"search": None}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tool", "serach", "--max-error-rate", "0.1"], "--tool 'serach': no record of the store calls it"),
        (["--max-error-rate", "0.1"], "--max-error-rate needs --tool NAME"),
        (["--tool", "search"], "--tool needs a tool threshold"),
        (["--tool", "search", "--max-error-rate", "1.5"], "--max-error-rate 1.5 is above 1"),
        (["--tool", "search", "--max-p95-latency-ms", "-1"], "--max-p95-latency-ms -1.0 is negative"),
    ],
)
def test_check_tool_user_errors(db: str, args: list[str], message: str) -> None:
    res = invoke("check", "--db", db, *args, exit_code=1)
    assert message in " ".join(res.output.split())
    if "serach" in args:
        assert "book, search, think" in " ".join(res.output.split())  # the hint names the store's tools


def test_metrics_by_an_unknown_grouping_names_tool(db: str) -> None:
    res = invoke("metrics", "--db", db, "--by", "tools", exit_code=1)
    assert "--by tool" in " ".join(res.output.split())


def test_a_read_only_store_with_stale_facts_gives_the_same_rows(logs: Path, tmp_path: Path) -> None:
    # The facts cannot be rebuilt on a read-only store: the figures come from the views instead.
    import duckdb

    from loopscope.analyses.store.facts import facts_fresh
    from loopscope.analyses.tools import tool_health

    path = str(tmp_path / "ro.duckdb")
    invoke("load", str(logs), "--db", path)
    con = duckdb.connect(path)
    con.execute("UPDATE prompt_facts_state SET tool_calls = tool_calls + 1")  # as if records changed behind it
    con.close()
    ro = duckdb.connect(path, read_only=True)
    try:
        assert not facts_fresh(ro)
        assert [t.as_dict() for t in tool_health(ro).tools] == _approx(EXPECTED)
    finally:
        ro.close()
