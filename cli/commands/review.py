"""``loopscope review import``: load reviewers' verdicts back into the database."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from loopscope.cli.app import PANELS, app, handle_errors
from loopscope.cli.options import DbOption, FormatOption
from loopscope.cli.render.output import OutputFormat, inert, stderr_console, stdout_console, write_json

review_app = typer.Typer(
    help="Reviewer verdicts of a sample: [b]loopscope review import reviews.csv[/b].",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(review_app, name="review", rich_help_panel=PANELS["review"])


@review_app.command("import")
@handle_errors
def import_command(
    file: Annotated[Path, typer.Argument(help="The filled-in reviews.csv of a pack from loopscope sample --out (or the pack's folder).", show_default=False)],
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
