"""The collector must not pull in the CLI's heavy dependencies."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("duckdb", "polars", "rich", "typer", "click", "opentelemetry.sdk")


def test_collector_import_loads_no_heavy_dependency() -> None:
    code = (
        "import json, sys; import loopscope.collectors; "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd="/")
    assert json.loads(out.stdout) == []


def test_analyses_do_not_import_cli() -> None:
    code = "import json, sys; import loopscope.analyses.store; print(json.dumps('loopscope.cli' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd="/")
    assert json.loads(out.stdout) is False
