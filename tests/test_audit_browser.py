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
