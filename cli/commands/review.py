"""``loopscope review``: the weekly review of a sample of conversations, one noun with its verbs.

``review sample`` draws the sample and writes its pack; ``review import`` loads the verdicts
reviewers filled in. ``loopscope sample`` (the spelling before the group) is kept, hidden from
--help, as the same command with a one-line notice on stderr, so scripts and packs that name it keep working.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from loopscope.cli.app import Command, deprecated_alias, handle_errors, noun_group
from loopscope.cli.options import DbOption, FormatOption, Scope, selection_options
from loopscope.cli.render.output import OutputFormat, inert, stderr_console, stdout_console, write_csv, write_json

review_app = noun_group(
    "review",
    "The weekly review: [b]loopscope review sample --out DIR[/b], fill in DIR/reviews.csv, "
    "then [b]loopscope review import DIR/reviews.csv[/b].",
)

CSV_COLUMNS = ("conversation_id", "stratum", "computed_class", "agent", "first_ts", "prompts", "tool_calls",
               "errors", "unrecovered")


@selection_options()
def sample_command(
    scope: Scope,
    n: Annotated[int, typer.Option("--n", help="How many conversations to draw.")] = 50,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Random seed: the same seed draws the same sample. Default: a new one, printed.", show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the review pack here: index.md, one Markdown file per conversation, reviews.csv.", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite a pack (and its reviews.csv) already in --out.")] = False,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Draw the weekly review sample (stratified over unrecovered / recovered / no-error conversations) and its pack.

    Equal thirds of --n; a stratum smaller than its share is taken whole and the
    others fill in. The same store, window, --n and --seed draw the same sample.
    With --out, writes a review pack: one Markdown timeline per conversation,
    an index.md, and reviews.csv with blank verdict columns to fill in.

    \b
    Examples:
      loopscope review sample sample_logs/ --week 2026-W47 --seed 1 --out review-w47/
      loopscope review import review-w47/reviews.csv
      loopscope sample sample_logs/ --n 20     # the older spelling, still accepted
    """
    from loopscope.analyses.review_pack import write_pack
    from loopscope.analyses.sampling import draw_sample

    with scope.open(status="drawing the sample") as (con, selection, _summary):
        sample = draw_sample(con, selection, n=n, seed=seed)
        pack = write_pack(con, sample, out, window=scope.describe_window(), force=force) if out is not None else None
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

review_app.command("sample", cls=Command)(handle_errors(sample_command))
deprecated_alias("sample", "review sample", sample_command)


@review_app.command("import", cls=Command)
@handle_errors
def import_command(
    file: Annotated[Path, typer.Argument(help="The filled-in reviews.csv of a pack from loopscope review sample --out (or the pack's folder).", show_default=False)],
    db: DbOption = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Load filled-in verdicts; bad rows are listed by line and skipped, good rows kept; re-import replaces.

    Verdicts are yes/no (y, n, true, false, 1, 0, x) or blank; a row with no
    verdict and no note is "not reviewed yet". Then loopscope audit shows the
    verdicts next to the computed classes.

    \b
    Exit codes:
      0  every filled-in row imported
      1  some row rejected (listed by line; the good rows are stored anyway), or a bad file
    \b
    Examples:
      loopscope review import review-w47/reviews.csv
      loopscope review import review-w47/
    """
    from loopscope.analyses.review import import_reviews
    from loopscope.cli.common import analysis_store

    with analysis_store(db, None) as (con, _selection, _summary):
        result = import_reviews(con, file)
    if output is OutputFormat.json:
        write_json(result.to_dict())
    else:
        stdout_console().print(
            f"imported {result.imported} review(s) ({result.replaced} replaced); "
            f"{result.unreviewed} row(s) not reviewed yet; {len(result.errors)} rejected"
        )
        err = stderr_console()
        for e in result.errors:
            err.print(f"[red]{inert(file)}: {inert(str(e))}[/red]")
    if result.errors:
        raise typer.Exit(1)
