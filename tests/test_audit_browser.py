"""The audit HTML page in a real headless browser (Debian's chromium; .ci/run installs it).

Checks that the page renders (a screenshot is produced), that its script ran
(``data-ready``), that the five charts (four metrics, conversation recovery rate) are in the DOM, that hostile log text did
not inject any element, and that the browser logged no console message at all
(errors, CSP violations and failed requests all show up as console messages).
Skips only when no Chromium binary is on the machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

pytestmark = pytest.mark.browser

FIXTURE = Path(__file__).parent / "fixtures" / "audit" / "cohorts.jsonl"
SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# The flags a sandboxed machine with a closed network needs (no background
# requests, no sandbox as root, software rendering).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0")


def _browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no headless Chromium on this machine (apt-get install chromium; .ci/run installs it)")


def _run(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    cmd = [_browser(), *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()]
    env = {**os.environ, "HOME": str(tmp_path)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _audit_html(tmp_path: Path, *paths: Path) -> Path:
    page = tmp_path / "audit.html"
    res = runner.invoke(app, ["audit", *map(str, paths), "--db", ":memory:", "--html", str(page), "--format", "json", "--limit", "50"])
    assert res.exit_code == 0, res.output
    return page


runner = CliRunner()


def test_sample_logs_report_renders_without_console_messages(tmp_path: Path) -> None:
    page = _audit_html(tmp_path, SAMPLE_LOGS)
    dom = _run(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-ready="1"' in dom.stdout, "the page's script did not run"
    assert len(re.findall(r'<svg[^>]*class="chart"', dom.stdout)) == 5  # the four metrics and the conversation recovery rate
    assert len(re.findall(r"<polyline", dom.stdout)) >= 4
    for section in ("metrics", "charts", "weeks", "agents", "triage", "reviews"):
        assert f'<section id="{section}">' in dom.stdout
    assert "c10-conflict-blind" in dom.stdout
    assert _console(dom.stderr) == []
    shot = tmp_path / "shot.png"
    res = _run(page, tmp_path, f"--screenshot={shot}", "--window-size=1300,2000")
    assert res.returncode == 0 and shot.stat().st_size > 20_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_real_conversations_render_without_console_messages(tmp_path: Path) -> None:
    # Real tau2-bench conversations (tests/fixtures/tau2, read by the messages reader): real
    # tool names and error texts, protocol violations, no week-over-week series to speak of.
    real = Path(__file__).parent / "fixtures" / "tau2" / "langchain_agent_airline_2025-11-26_00-37-06.json"
    page = _audit_html(tmp_path, real)
    dom = _run(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-ready="1"' in dom.stdout
    assert len(re.findall(r'<svg[^>]*class="chart"', dom.stdout)) == 5
    # its 7 reused ids are the same call dispatched again: replays, not protocol violations (spec 2026-11-24)
    assert "Protocol violations (0)" in dom.stdout and "Replays (7" in dom.stdout
    assert _console(dom.stderr) == []


def test_hostile_log_text_stays_text_in_the_browser(tmp_path: Path) -> None:
    page = _audit_html(tmp_path, FIXTURE)
    dom = _run(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<script") == 1  # the page's own script only
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in dom.stdout
    assert "<!-- c -->" not in dom.stdout
    assert _console(dom.stderr) == []


def test_console_errors_would_be_caught(tmp_path: Path) -> None:
    # The detector itself: a page with a script error and a blocked request logs console lines.
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                    "script-src 'unsafe-inline'\"><script>undefinedFunction()</script>")
    res = _run(page, tmp_path, "--dump-dom")
    assert any("undefinedFunction" in line for line in _console(res.stderr))


# Measures the page as the browser laid it out, after the page's own script ran; the result is
# written into the DOM (``data-probe``) and read back with --dump-dom. Added to a copy of the page
# by the test only (the page's CSP allows inline scripts; the report itself has one).
PROBE = """
<script>
(function(){
  var out={overlaps:[],labels:0,links:0,broken:[],headings:[],timelines:0,lowPoints:0,points:0};
  document.querySelectorAll('svg.chart').forEach(function(svg){
    var boxes=Array.prototype.map.call(svg.querySelectorAll('g.xaxis text'),function(t){return t.getBoundingClientRect();});
    out.labels+=boxes.length;
    for(var i=0;i<boxes.length;i++)for(var j=i+1;j<boxes.length;j++){
      var a=boxes[i],b=boxes[j];
      if(a.left<b.right&&b.left<a.right&&a.top<b.bottom&&b.top<a.bottom)
        out.overlaps.push(svg.getAttribute('data-metric')+': '+svg.querySelectorAll('g.xaxis text')[i].textContent);
    }
    out.points+=svg.querySelectorAll('.point').length;out.lowPoints+=svg.querySelectorAll('.point.low').length;
  });
  document.querySelectorAll('a.conv').forEach(function(a){
    out.links++;
    var target=document.getElementById(a.getAttribute('href').slice(1));
    if(!target||target.querySelector('h3').textContent!==a.textContent)out.broken.push(a.textContent);
  });
  out.timelines=document.querySelectorAll('article.timeline').length;
  document.querySelectorAll('section h2, section h3').forEach(function(h){
    var m=/\\((\\d+)(?: of (\\d+))?[ :,)]/.exec(h.textContent);
    if(!m)return;
    var el=h.nextElementSibling;
    while(el&&el.tagName!=='TABLE'&&!/^H[23]$/.test(el.tagName)&&el.tagName!=='P')el=el.nextElementSibling;
    var rows=el&&el.tagName==='TABLE'?el.tBodies[0].rows.length:0;
    out.headings.push({text:h.textContent,shown:+m[1],total:m[2]?+m[2]:+m[1],rows:rows});
  });
  document.body.setAttribute('data-probe',JSON.stringify(out));
})();
</script>
"""


def _probe(page: Path, tmp_path: Path) -> tuple[dict, str, str]:
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _run(probed, tmp_path, "--dump-dom", "--window-size=1300,2000")
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert found, "the probe did not run"
    import html as html_lib
    import json

    return json.loads(html_lib.unescape(found.group(1))), dom.stdout, dom.stderr


def test_report_on_tau2_files_reads_at_a_glance(tmp_path: Path) -> None:
    """Issue 19 on the real tau2-bench excerpts: labels apart, every listed conversation linked, headings = rows."""
    import json

    tau2 = sorted((Path(__file__).parent / "fixtures" / "tau2").glob("*.json"))
    page = tmp_path / "audit.html"
    # --limit 3 cuts the lists, so headings must say "3 of N"
    res = runner.invoke(app, ["audit", *map(str, tau2), "--db", ":memory:", "--html", str(page), "--by", "tag:model",
                              "--limit", "3", "--format", "json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    probe, dom, console = _probe(page, tmp_path)

    # the x axis: labels exist and none overlaps another (bounding boxes as laid out)
    assert probe["labels"] >= 5 * 2
    assert probe["overlaps"] == []
    # one series per model (the legend names them), and low-confidence points are marked
    legend = re.findall(r'<span class="series"><svg.*?</svg>([^<]*)</span>', dom)
    assert legend == ["all prompts", "claude-opus-4-6", "claude-sonnet-4-5", "openai/gpt-oss-120b"]
    weeks_with_few_errors = sum(1 for w in report["weeks"] if w["errors"] < 10)
    assert weeks_with_few_errors >= 1 and probe["lowPoints"] >= weeks_with_few_errors

    # every conversation a list shows links to a timeline in the page, and every link lands
    listed = {str(r["conversation_id"]) for section in ("triage_first", "retry_loops", "no_progress_loops", "cycles",
                                                       "replays", "duplicate_executions", "protocol_violations")
              for r in report[section]["items"] if r.get("conversation_id") is not None}
    assert listed and set(report["timelines"]) == listed
    assert probe["timelines"] == len(listed)
    assert probe["links"] >= len(listed)
    assert probe["broken"] == []

    # every counted heading matches the rows under it: "N" when whole, "n of N" when --limit cut it
    checked = {h["text"].split(" (")[0]: h for h in probe["headings"]}
    for title, section in (("Conversations to triage first", "triage_first"), ("Retry loops", "retry_loops"),
                           ("Generic error messages", "generic_templates"), ("Tools", "tools")):
        h = checked[title]
        assert h["rows"] == h["shown"] == len(report[section]["items"]), h
        assert h["total"] == report[section]["total"], h
    assert report["triage_first"]["total"] > 3 and " of " in checked["Conversations to triage first"]["text"]
    for h in probe["headings"]:
        if h["text"].startswith(("Timelines", "Per ", "Protocol violations", "Reviewer")):
            continue
        assert h["rows"] == h["shown"], h
    print(json.dumps(probe))  # shown with -s
    assert _console(console) == []
    shot = tmp_path / "shot.png"
    res2 = _run(page, tmp_path, f"--screenshot={shot}", "--window-size=1300,1600")
    assert res2.returncode == 0 and _console(res2.stderr) == []


def test_the_probe_sees_overlapping_labels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The detector itself: one label per week over the tau2 files' 20 weeks does not fit in a chart.
    import loopscope.cli.render.html as html_render

    monkeypatch.setattr(html_render, "LABEL_STRIDES", (1,))
    tau2 = sorted((Path(__file__).parent / "fixtures" / "tau2").glob("*.json"))
    page = tmp_path / "audit.html"
    res = runner.invoke(app, ["audit", *map(str, tau2), "--db", ":memory:", "--html", str(page)])
    assert res.exit_code == 0, res.output
    probe, _, _ = _probe(page, tmp_path)
    assert probe["overlaps"]
