"""``loopscope sample``: the weekly review sample, and its review pack."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from loopscope.cli.app import command
from loopscope.cli.common import analysis_store, window_selection
from loopscope.cli.options import (
    AgentOption,
    DbOption,
    FormatOption,
    InputFormatOption,
    PathsArgument,
    SinceOption,
    TagOption,
    UntilOption,
    WeekOption,
)
from loopscope.cli.render.output import OutputFormat, inert, stderr_console, stdout_console, write_csv, write_json

CSV_COLUMNS = ("conversation_id", "stratum", "computed_class", "agent", "first_ts", "prompts", "tool_calls",
               "errors", "unrecovered")


@command("sample")
def sample_command(
    paths: PathsArgument = None,
    n: Annotated[int, typer.Option("--n", help="How many conversations to draw.")] = 50,
    week: WeekOption = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Random seed: the same seed draws the same sample. Default: a new one, printed.", show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the review pack here: index.md, one Markdown file per conversation, reviews.csv.", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite a pack (and its reviews.csv) already in --out.")] = False,
    since: SinceOption = None,
    until: UntilOption = None,
    agent: AgentOption = None,
    tag: TagOption = None,
    db: DbOption = None,
    output: FormatOption = OutputFormat.table,
    input_format: InputFormatOption = "auto",
) -> None:
    """Draw the weekly review sample: stratified over unrecovered / recovered / no-error conversations.

    Equal thirds of --n; a stratum smaller than its share is taken whole and the
    others fill in. The same store, window, --n and --seed draw the same sample.
    With --out, writes a review pack: one Markdown timeline per conversation,
    an index.md, and reviews.csv with blank verdict columns to fill in.

    \b
    Examples:
      loopscope sample sample_logs/ --week 2026-W47 --seed 1 --out review-w47/
      loopscope review import review-w47/reviews.csv
    """
    from loopscope.analyses.review_pack import write_pack
    from loopscope.analyses.sampling import draw_sample

    window_sel = window_selection(since, until, agent, tag, week)
    with analysis_store(db, paths, input_format, window_sel) as (con, selection, _summary):
        sample = draw_sample(con, selection, n=n, seed=seed)
        window = week or (f"{since or '…'} to {until or '…'}" if since or until else "all loaded prompts")
        pack = write_pack(con, sample, out, window=window, force=force) if out is not None else None
    rows = [c.to_dict() for c in sample.conversations]
    if output is OutputFormat.json:
        data = sample.to_dict()
        if pack is not None:
            data["pack"] = {"index": str(pack.index), "reviews_csv": str(pack.reviews_csv), "files": [str(f) for f in pack.files]}
        write_json(data)
    elif output is OutputFormat.csv:
        write_csv(rows, CSV_COLUMNS)
    else:
        from loopscope.cli.render.sample import render

        render(sample, rows)
    if pack is not None and output is OutputFormat.table:
        stdout_console().print(f"review pack: {inert(pack.index)} ({len(pack.files)} conversations); "
                               f"fill in {inert(pack.reviews_csv)}, then: loopscope review import {inert(pack.reviews_csv)}")
    elif seed is None and output is not OutputFormat.table:
        stderr_console().print(f"seed {sample.seed} (pass --seed {sample.seed} to draw this sample again)")
