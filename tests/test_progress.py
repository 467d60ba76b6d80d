"""Long work shows progress on a terminal, and nothing anywhere else (issue 14).

The loading bar and the analysis spinner appear on stderr after ``LOOPSCOPE_PROGRESS_DELAY``
seconds (1 by default; 0 here, so that 154 records are "long"): drawn on a terminal (a real
pseudo-terminal here), never on a pipe, never under CI, and stdout is the same either way.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = str(REPO / "sample_logs")
ENTRY = "import sys; from loopscope.cli import main; sys.argv[0] = 'loopscope'; main()"
COMMAND = ["metrics", SAMPLE, "--db", ":memory:", "-f", "json"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "TERM", "NO_COLOR", "LOOPSCOPE_DB")}
    env.update({"LOOPSCOPE_PROGRESS_DELAY": "0", "TERM": "xterm-256color", "COLUMNS": "80"}, **extra)
    return env


def _on_a_terminal(env: dict[str, str]) -> tuple[str, str, int]:
    """Run with stderr on a pseudo-terminal and stdout on a pipe: (stdout, what the terminal got, exit code)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, *COMMAND], stdout=subprocess.PIPE, stderr=slave,
                            env=env, cwd="/")
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=60)
    os.close(master)
    return out, seen.decode("utf-8", "replace"), code


def test_a_pipe_gets_no_progress_at_all() -> None:
    proc = subprocess.run([sys.executable, "-c", ENTRY, *COMMAND], capture_output=True, text=True, env=_env(), cwd="/")
    assert proc.returncode == 0 and json.loads(proc.stdout)["prompts"] == 41  # sample_logs/, as test_metrics_cli
    assert proc.stderr == ""


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_a_terminal_sees_the_load_bar_and_the_spinner_and_stdout_is_unchanged() -> None:
    piped = subprocess.run([sys.executable, "-c", ENTRY, *COMMAND], capture_output=True, text=True, env=_env(), cwd="/")
    out, terminal, code = _on_a_terminal(_env())
    assert code == 0 and out == piped.stdout
    assert "loading" in terminal and "analysing" in terminal


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("quiet", [{"CI": "true"}, {"TERM": "dumb"}, {"LOOPSCOPE_PROGRESS_DELAY": "30"}],
                         ids=["CI", "dumb terminal", "quick work"])
def test_no_progress_under_ci_on_a_dumb_terminal_or_for_quick_work(quiet: dict[str, str]) -> None:
    out, terminal, code = _on_a_terminal(_env(**quiet))
    assert code == 0 and json.loads(out)["tool_calls"] > 0
    assert terminal == ""
