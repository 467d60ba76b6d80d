"""``loopscope demo [--out DIR]``: write the demo agent's logs (the same as sample_logs/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from loopscope.cli.app import command


@command("demo")
def demo(
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Folder for the demo's JSONL logs (created if missing).", file_okay=False),
    ] = Path("loopscope-demo"),
    recovery_context: Annotated[
        bool,
        typer.Option(
            "--recovery-context",
            help="Also run the blind conversations again with call.recovery_context() injected after each error "
            "(blind_context.jsonl, tag mode=blind+context; the model is scripted).",
        ),
    ] = False,
) -> None:
    """Run the deterministic hotel-booking demo agent and write its logs.

    36 scripted conversations (two agents, four weeks, blind / corrective /
    crash modes) recorded by the collector. The output is byte-identical on
    every run and equal to the repository's sample_logs/.

    With --recovery-context, compare the two blind cohorts:
    loopscope compare DIR --a tag:mode=blind --b tag:mode=blind+context
    """
    from loopscope.analyses.errors import LoopscopeError
    from loopscope.collectors import CollectorConfigError
    from loopscope.cli.demo.run import describe, run_blind_with_context, run_demo

    if out.exists() and not out.is_dir():
        raise LoopscopeError(f"--out {out} is a file, not a folder", hint="pass a folder to write the demo logs into")
    try:
        paths = run_demo(out)
        if recovery_context:
            paths.append(run_blind_with_context(out))
    except (OSError, CollectorConfigError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LoopscopeError(
            f"cannot write the demo logs to {out}: {reason}",
            hint="pass a writable folder with --out",
        ) from None
    from loopscope.cli.render.demo import render

    render(describe(paths), out)
