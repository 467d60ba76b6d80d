"""Terminal rendering of ``loopscope check``: one line per threshold, then the verdict."""

from __future__ import annotations

from typing import Any

from loopscope.cli.render.output import inert, stdout_console
from loopscope.cli.render.styles import STATUS_STYLE


def render(result: Any) -> None:
    """Print a ``CheckResult``."""
    console = stdout_console()
    for o in result.outcomes:
        style = STATUS_STYLE[o.status]
        console.print(f"[{style}]{o.status.upper():<8}[/{style}] {inert(o.reason)}")
    verdict = "[green]check passed[/green]" if result.passed else f"[red]check failed: {len(result.violations)} threshold(s) violated[/red]"
    console.print(verdict)
