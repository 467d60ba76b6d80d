"""Options shared by several commands, defined once as ``Annotated`` aliases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from loopscope.cli.render.output import OutputFormat

DbOption = Annotated[
    Optional[str],
    typer.Option(
        "--db",
        envvar="LOOPSCOPE_DB",
        help="DuckDB file to use (created if missing). [dim]:memory:[/dim] for a throwaway store. "
        "Default: ./loopscope.duckdb.",
        show_default=False,
    ),
]
FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="Output: a rich [b]table[/b] for people, [b]json[/b] or [b]csv[/b] for scripts."),
]
PathsArgument = Annotated[
    Optional[list[Path]],
    typer.Argument(
        help="Log files, directories (searched recursively) or globs to load first. "
        "Without them, the command reads what is already in --db.",
        show_default=False,
    ),
]
SinceOption = Annotated[
    Optional[str],
    typer.Option("--since", help="Only prompts that started at or after this date or RFC 3339 timestamp (UTC).", show_default=False),
]
UntilOption = Annotated[
    Optional[str],
    typer.Option("--until", help="Only prompts that started before this date or timestamp (UTC).", show_default=False),
]
AgentOption = Annotated[
    Optional[list[str]],
    typer.Option("--agent", help="Only this agent type (repeat for several).", show_default=False),
]
TagOption = Annotated[
    Optional[list[str]],
    typer.Option("--tag", help="Only prompts whose records carry this tag, as KEY=VALUE (repeat to require several).", show_default=False),
]
InputFormatOption = Annotated[
    str,
    typer.Option(
        "--input-format",
        help="How to read PATHs: [b]auto[/b] (detect per file), [b]records[/b] (loopscope JSONL), "
        "[b]messages[/b] (conversation message arrays), [b]otlp[/b] (OpenTelemetry JSON Lines), "
        "[b]claude-code[/b] (~/.claude/projects sessions), [b]codex[/b] (~/.codex/sessions rollouts).",
    ),
]
WeekOption = Annotated[
    Optional[str],
    typer.Option("--week", help="Only prompts that started in this ISO week (UTC), e.g. 2026-W47. "
                 "Instead of --since/--until.", show_default=False),
]
