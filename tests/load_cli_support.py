"""What the load tests through the CLI share: one tool_call record with defaults, and the CLI call.

Loaded by file (``importlib``, as the suite runs with ``--import-mode=importlib``) by
tests/test_load_defects.py and tests/test_load_robustness.py.
"""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from loopscope.cli.app import app

runner = CliRunner()


def rec(**fields: Any) -> dict[str, Any]:
    """A valid v1 tool_call record, ``fields`` replacing or adding to its defaults."""
    base: dict[str, Any] = {
        "v": 1, "kind": "tool_call", "ts": "2026-11-20T10:00:00Z", "conversation_id": "c1", "prompt_id": "p1",
        "tool_call_id": "t1", "tool_name": "search", "step": 0, "outcome": "ok", "is_error": False,
    }
    base.update(fields)
    return base


def line(**fields: Any) -> str:
    """``rec(**fields)`` as one JSON Lines line."""
    return json.dumps(rec(**fields)) + "\n"


def invoke(*args: str) -> Any:
    """``loopscope *args`` in this process; exceptions propagate."""
    return runner.invoke(app, list(args), catch_exceptions=False)
