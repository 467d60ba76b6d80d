"""Shared test setup: a fixed terminal width and an isolated environment."""

from __future__ import annotations

import os

# Typer/rich read the width at import time; fix it before anything imports them.
os.environ["TERMINAL_WIDTH"] = "200"
os.environ["COLUMNS"] = "200"

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLE_LOGS = REPO / "sample_logs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in its own folder with no loopscope settings from outside."""
    monkeypatch.chdir(tmp_path)
    for var in ("LOOPSCOPE_DB", "LOOPSCOPE_DEBUG", "NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERMINAL_WIDTH", "200")
    monkeypatch.setenv("COLUMNS", "200")
