"""``loopscope audit`` on logs with known answers (tests/fixtures/audit/cohorts.jsonl), all three outputs.

W45 and W46 are identical blind weeks (12 errors, 3 recovered); W47 is corrective
(18 errors, 16 recovered): the recovery rate's W46 -> W47 change is significant
(two-proportion z-test), the W45 -> W46 change is zero. One W46 error message is
hostile text (HTML, ANSI escapes, rich markup, Markdown).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.analyses import stats
from loopscope.cli.app import app

FIXTURE = Path(__file__).parent / "fixtures" / "audit" / "cohorts.jsonl"
SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
runner = CliRunner()


@pytest.fixture
def db(loaded_store) -> Path:  # noqa: ANN001  (tests/conftest.py: the fixture loaded once, copied per test)
    return loaded_store(FIXTURE)


def _json(*args: str) -> dict:
    res = runner.invoke(app, ["audit", *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_audit_json_figures(db: Path) -> None:
    r = _json("--db", str(db))
    o = r["overall"]
    assert (o["prompts"], o["open_prompts"], o["conversations"], o["errors"], o["recovered_errors"], o["tool_calls"], o["replays"]) == (
        78, 2, 74, 42, 22, 136, 4)
    assert [w["week"] for w in r["weeks"]] == ["2026-W45", "2026-W46", "2026-W47"]
    w46, w47 = r["weeks"][1], r["weeks"][2]
    assert w46["changes"]["recovery_rate"]["difference"] == 0 and not w46["changes"]["recovery_rate"]["significant"]
    ch = w47["changes"]["recovery_rate"]
    assert w47["previous_week"] == "2026-W46"
    assert ch["difference"] == pytest.approx(16 / 18 - 3 / 12)
    assert ch["p_value"] == pytest.approx(stats.two_proportion_test(3, 12, 16, 18).p_value)
    assert ch["significant"] and ch["test"] == stats.TWO_PROPORTION
    assert w47["changes"]["median_tool_calls_per_prompt"]["test"] == stats.MANN_WHITNEY
    assert r["weeks"][0]["changes"] == {}
    agents = {a["agent"]: a for a in r["agents"]}
    assert agents["researcher"]["prompts"] == 8 and agents["researcher"]["replays"] == 4
    assert agents["researcher"]["recovery_rate"] is None
    assert [w["week"] for w in agents["concierge"]["weeks"]] == ["2026-W45", "2026-W46", "2026-W47"]
    tools = {b["tool_name"]: b for b in r["error_classes_by_tool"]}
    assert tools["book_room"]["error_classes"]["gave_up"] == 12 and tools["check_availability"]["error_classes"]["aborted"] == 6
    assert tools["search_rooms"]["error_classes"]["open"] == 2 and tools["check_availability"]["recovered_errors"] == 22
    assert r["generic_templates"]["total"] == 4
    assert r["generic_templates"]["items"][0]["template"] == "failed"
    assert r["retry_loops"]["total"] == 2 and r["retry_loops"]["redundant_calls"] == 4
    assert (r["replays"]["total"], r["replays"]["short_circuited"], r["replays"]["double_executions"]) == (4, 2, 2)
    budget = {b["agent"]: b for b in r["budget_pressure"]}
    assert budget["concierge"]["budget_exceeded"] == 2 and budget["concierge"]["max_tool_calls"] == 3
    assert r["protocol_violations"]["total"] == 0
    tf = r["triage_first"]
    assert tf["total"] == 16
    assert {i["conversation_id"] for i in tf["items"][:2]} == {"2026-W45-blind-0-spin-0", "2026-W46-blind-0-spin-0"}
    assert r["reviews"]["reviewed"] == 0


def test_audit_window_and_limit(db: Path) -> None:
    r = _json("--db", str(db), "--week", "2026-W47", "--limit", "1")
    assert r["overall"]["prompts"] == 38 and len(r["weeks"]) == 1
    assert r["triage_first"]["total"] == 2 and len(r["triage_first"]["items"]) == 1
    r = _json("--db", str(db), "--tag", "mode=blind", "--agent", "concierge")
    assert r["overall"]["errors"] == 24 and r["selection"]["tags"] == ["mode=blind"]


def test_audit_terminal_output(db: Path) -> None:
    res = runner.invoke(app, ["audit", "--db", str(db), "--limit", "20"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    for title in ("The four metrics", "Per ISO week", "Per agent", "Error classes per tool", "Generic error messages (4",
                  "Retry loops (2, 4 redundant calls)", "Replays (4: 2 short-circuited, 2 double executions)",
                  "Budget pressure per agent", "Protocol violations (0)", "Conversations to triage first (16)",
                  "Reviewer verdicts"):
        assert title in out, title
    line = next(l for l in out.splitlines() if "recovery rate" in l)
    assert "52.4%" in line and "▁▁█" in line and "+63.9pt p<.001 ◆" in line
    # hostile text: no terminal escape, rich markup shown literally, not interpreted
    assert "\x1b" not in out
    assert "<script>alert('x')</script> \\x1b[31mred\\x1b[0m [bold" in out
    assert "red]markup[/bold red] **md**" in out


def test_audit_html_self_contained_and_escaped(db: Path, tmp_path: Path) -> None:
    page = tmp_path / "audit.html"
    res = runner.invoke(app, ["audit", "--db", str(db), "--html", str(page), "--format", "json", "--limit", "20"])
    assert res.exit_code == 0, res.output
    text = page.read_text(encoding="utf-8")
    report = json.loads(res.stdout)
    # five charts, and one legend swatch per series: all prompts and each agent
    assert text.count('class="chart"') == 5 and text.count("<svg") == 5 + 1 + len(report["agents"])
    assert text.count("<script>") == 1  # ours only
    assert "<script>alert" not in text and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert "\x1b" not in text and "\\x1b[31mred" in text
    assert "<!-- c -->" not in text
    # nothing that could reach the network
    without_ns = text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    # links only to anchors in the page itself (each listed conversation's timeline)
    anchors = re.findall(r'href="#(c-[0-9a-f]{16})"', without_ns)
    assert anchors and all(f'id="{a}"' in text for a in anchors)
    without_anchors = re.sub(r'href="#c-[0-9a-f]{16}"', "", without_ns)
    assert not re.search(r"https?://|src=|href=|@import|url\(", without_anchors)
    assert "default-src 'none'" in text
    for section in ("metrics", "charts", "weeks", "agents", "classes", "templates", "loops", "replays", "budget",
                    "protocol", "triage", "reviews"):
        assert f'<section id="{section}">' in text


def test_audit_reports_reviews_next_to_computed(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "pack"
    res = runner.invoke(app, ["sample", "--db", str(db), "--week", "2026-W46", "--n", "19", "--seed", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    reviews = out / "reviews.csv"
    rows = list(csv.DictReader(reviews.open()))
    for r in rows:
        kind = r["conversation_id"].split("-")[-2]
        if kind == "spin":
            r.update(recovered_cleanly="no", spun="yes", gave_up="no", generic_apology="yes")
        elif kind == "gave_up":
            # one reviewer disagrees: says the model recovered
            bad = r["conversation_id"].endswith("gave_up-0")
            r.update(recovered_cleanly="yes" if bad else "no", spun="no", gave_up="no" if bad else "yes",
                     generic_apology="no", notes="<b>hm</b>" if bad else "")
        elif kind == "clean":
            r.update(recovered_cleanly="yes", spun="no", gave_up="no", generic_apology="no")
    with reviews.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    res = runner.invoke(app, ["review", "import", str(reviews), "--db", str(db)])
    assert res.exit_code == 0, res.output
    r = _json("--db", str(db))
    rv = r["reviews"]
    assert rv["reviewed"] == 1 + 5 + 8
    assert rv["verdicts"]["recovered_cleanly"] == {"compared": 14, "agree": 13, "agreement": pytest.approx(13 / 14), "yes": 9}
    assert rv["verdicts"]["spun"]["agree"] == 14 and rv["verdicts"]["gave_up"]["agree"] == 13
    assert rv["generic_apology_yes"] == 1
    assert [(d["conversation_id"], d["verdict"]) for d in rv["disagreements"]] == [
        ("2026-W46-blind-0-gave_up-0", "recovered_cleanly"), ("2026-W46-blind-0-gave_up-0", "gave_up")]
    # another week's audit does not list these reviews
    assert _json("--db", str(db), "--week", "2026-W47")["reviews"]["reviewed"] == 0
    res = runner.invoke(app, ["audit", "--db", str(db), "--html", str(tmp_path / "a.html")])
    assert res.exit_code == 0
    assert "Disagreements" in res.stdout and "92.9%" in res.stdout
    page = (tmp_path / "a.html").read_text()
    assert "&lt;b&gt;hm&lt;/b&gt;" in page and "<b>hm" not in page


def test_audit_on_sample_logs() -> None:
    r = _json(str(SAMPLE_LOGS), "--db", ":memory:")
    o = r["overall"]
    # sample_logs/EXPECTED.md
    assert (o["prompts"], o["open_prompts"], o["tool_calls"], o["errors"], o["recovered_errors"], o["replays"]) == (41, 1, 114, 26, 14, 3)
    assert o["median_tool_calls_per_prompt"] == 2 and o["p99_tool_calls_per_prompt"] == pytest.approx(16.6)
    assert [(w["week"], w["prompts"], w["errors"], w["recovered_errors"], w["replays"]) for w in r["weeks"]] == [
        ("2026-W44", 10, 5, 1, 0), ("2026-W45", 10, 8, 4, 0), ("2026-W46", 10, 7, 4, 2), ("2026-W47", 11, 6, 5, 1)]
    assert {a["agent"] for a in r["agents"]} == {"concierge", "back_office"}
    assert r["replays"]["short_circuited"] == 2 and r["replays"]["double_executions"] == 1
    assert r["triage_first"]["total"] == 7
    assert {i["conversation_id"] for i in r["triage_first"]["items"]} == {
        "c02-date-blind", "c05-date-crash", "c10-conflict-blind", "c12-roomtype-crash", "c14-noname-corrective",
        "c17-soldout-blind", "c24-died-corrective"}
    assert any(loop["conversation_id"] == "c10-conflict-blind" for loop in r["retry_loops"]["items"])


def test_audit_on_sample_logs_terminal_and_html(tmp_path: Path) -> None:
    page = tmp_path / "a.html"
    res = runner.invoke(app, ["audit", str(SAMPLE_LOGS), "--db", ":memory:", "--html", str(page), "--limit", "20"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "41 prompts (1 open) in 36 conversations, 114 tool calls, 26 errors (14 recovered, 1 more resolved later), 3 replays" in out
    assert "weeks 2026-W44 to 2026-W47" in out
    line = next(l for l in out.splitlines() if "recovery rate" in l)
    assert "53.8%" in line and "83.3%" in line and "+26.2pt" in line and "◆" not in line
    assert "Replays (3: 2 short-circuited, 1 double execution)" in out
    assert "Conversations to triage first (7)" in out and "c24-died-corrective" in out
    html = page.read_text()
    assert "53.8%" in html and "16.6" in html and "c05-date-crash" in html
    assert "Replays (3: 2 short-circuited, 1 double execution)" in html


def test_audit_headings_say_how_many_of_a_cut_list(tmp_path: Path) -> None:
    """A heading counts what the list shows, or says "2 of 7" when --limit cut it (terminal and HTML)."""
    page = tmp_path / "a.html"
    res = runner.invoke(app, ["audit", str(SAMPLE_LOGS), "--db", ":memory:", "--html", str(page), "--limit", "2"],
                        env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    html = page.read_text()
    for text in (res.stdout, html):
        assert "Conversations to triage first (2 of 7)" in text
        assert "Replays (2 of 3: 2 short-circuited, 1 double execution)" in text
        assert "Retry loops (1, " in text  # one loop, shown whole: no "of"
    assert html.count('id="triage"') == 1 and len(re.findall(r"c\d\d-[a-z-]+", html.split('id="triage"')[1].split("</section>")[0])) >= 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--limit", "0"], "must be at least 1"),
        (["--format", "csv"], "no csv output"),
        (["--since", "2030-01-01"], "no prompt to audit"),
        (["--html", "/nonexistent-dir/x.html"], "cannot write"),
        (["--html", "."], "it is a folder"),
    ],
)
def test_audit_user_errors(db: Path, args: list[str], message: str) -> None:
    res = runner.invoke(app, ["audit", "--db", str(db), *args])
    assert res.exit_code == 1 and message in res.output


def test_audit_reports_protocol_violations_of_conversation_logs(tmp_path: Path) -> None:
    # tests/fixtures/messages/anthropic.jsonl (the messages reader's fixture): one tool_use
    # without a result and one result for an unknown id.
    logs = Path(__file__).parent / "fixtures" / "messages" / "anthropic.jsonl"
    page = tmp_path / "a.html"
    r = _json(str(logs), "--db", ":memory:", "--html", str(page))
    pv = r["protocol_violations"]
    assert pv["total"] == 2
    assert {(k["kind"], k["violations"]) for k in pv["by_kind"]} == {("missing_result", 1), ("unknown_result_id", 1)}
    assert {i["kind"] for i in pv["items"]} == {"missing_result", "unknown_result_id"}
    assert "Protocol violations (2)" in page.read_text()


def test_html_charts_have_round_ticks_axis_labels_and_values() -> None:
    from loopscope.cli.render.html import Series, label_stride, nice_step, svg_chart

    assert [nice_step(s) for s in (4, 27.2, 0.275, 0.05, 100)] == [1, 10, 0.1, 0.02, 25]
    points = {"2026-W46": (3.0, "12 prompts", 12), "2026-W47": (23.11, "3 prompts", 3)}
    svg = svg_chart(["2026-W46", "2026-W47"], [Series("all prompts", points, {"2026-W47": True}, 0)],
                    "p99_tool_calls_per_prompt")
    ticks = [t for t in ("0", "10", "20", "30") if f">{t}</text>" in svg]
    assert ticks == ["0", "10", "20", "30"]  # whole axis up to the first round tick above 23.11
    assert ">ISO week (time axis)</text>" in svg and ">tool calls</text>" in svg
    assert 'class="value">23.11</text>' not in svg  # 3 prompts: low confidence, faded
    assert 'class="value" opacity="0.45">23.11</text>' in svg and 'class="flag"' in svg
    assert svg.count('class="point low"') == 1 and 'data-n="3"' in svg
    # a time axis: 2 weeks 60 weeks apart are 60 weeks apart, labels thinned to fit
    far = {"2025-W01": (1.0, "", 20), "2026-W08": (2.0, "", 20)}
    svg = svg_chart(["2025-W01", "2026-W08"], [Series("all prompts", far, {}, 0)], "median_tool_calls_per_prompt")
    assert "<polyline" not in svg  # no line across 59 weeks without prompts
    stride = label_stride(59, 520 - 62 - 16)
    # 442 px hold 7 labels of 56 px: every 8 weeks would need 8, every 13 needs 5
    assert stride == 13 and f"a label every {stride} weeks" in svg
    xaxis = svg[svg.index('<g class="xaxis">'):svg.index("</g>")]
    assert re.findall(r">(\d{4}-W\d\d)</text>", xaxis) == ["2025-W01", "2025-W14", "2025-W27", "2025-W40", "2026-W01"]
