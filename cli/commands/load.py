"""``loopscope load PATH...``: load log files into the store."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from loopscope.cli.app import command
from loopscope.cli.options import FormatOption, Scope, selection_options
from loopscope.cli.render.output import OutputFormat, write_csv, write_json

SUMMARY_COLUMNS = ("files", "loaded", "skipped", "quarantined", "tool_calls", "loop_exits", "protocol_violations", "unreadable")


@command("load")
@selection_options(window=False, paths_required=True)
def load(
    scope: Scope,
    fmt: FormatOption = OutputFormat.table,
    tag: Annotated[
        Optional[list[str]],
        typer.Option("--tag", help="Add this tag, as KEY=VALUE, to every record loaded now (repeat for several); it "
                     "wins over a tag of the same key the records carry. Then compare by it: "
                     "[b]--by tag:KEY[/b], [b]--tag KEY=VALUE[/b].", show_default=False),
    ] = None,
) -> None:
    """Load log files into the database; safe to repeat (only new lines are added).

    Bad lines never stop a load: they are kept in the quarantine with file,
    line and reason (see [b]loopscope quarantine[/b]). Benchmark result files
    (tau2-bench) keep the model, domain and harness they name as tags
    (model, user_model, domain, framework).

    \b
    Examples:
      loopscope load logs/ --tag deploy=v42
      loopscope load runs/gpt-4.1/ --tag model=gpt-4.1 --tag arm=b
    """
    from loopscope.analyses.notices import notices as store_notices
    from loopscope.cli.render.output import inert, stderr_console

    import dataclasses

    from loopscope.analyses.selection import parse_tag

    if tag:
        added = dict(parse_tag(t) for t in tag)  # before any work: a typo fails at once
        scope = dataclasses.replace(scope, reader_options={**scope.reader_options, "tags": added})
    # loads the PATHs (required here), applies --scratchpad-tool and closes the store;
    # the summary is all load reports
    with scope.open(require_records=False, name_quarantined="none") as opened:  # load reports such files itself, below
        summary = opened.summary
        notices = [n.as_dict() for n in store_notices(opened.con, opened.selection, build_facts=False)
                   if n.kind != "quarantined_lines"]  # the summary counts them, per file
    assert summary is not None
    if fmt is OutputFormat.json:
        write_json({**summary.as_dict(), "notices": notices})
    elif fmt is OutputFormat.csv:
        write_csv([{c: getattr(summary, c) for c in SUMMARY_COLUMNS}], SUMMARY_COLUMNS)
    else:
        from loopscope.cli.render.load import render

        render(summary, scope.db)
    from loopscope.analyses.ingest.formats import fruitless_files
    from loopscope.analyses.notices import Notice
    from loopscope.cli.common import print_notices

    print_notices([Notice(**n) for n in notices])
    fruitless = fruitless_files(summary.details)
    if fruitless and not (summary.loaded or summary.skipped):
        # Nothing came of the whole load: that is a user error, not an empty success.
        from loopscope.analyses.errors import LoopscopeError

        first = fruitless[0]
        more = f" (and {len(fruitless) - 1} more file(s) like it)" if len(fruitless) > 1 else ""
        raise LoopscopeError(first.message() + more, hint=first.hint)
    for f in fruitless:
        stderr_console().print(f"[yellow]warning:[/yellow] {inert(f.message())}\n  [dim]{inert(f.hint)}[/dim]")
    if tag:
        kept = [d for d in summary.details if d.status == "unchanged"]
        if kept:
            from loopscope.cli.render.output import shown_path

            stderr_console().print(
                f"[yellow]warning:[/yellow] --tag applies to the records loaded now; {len(kept)} file(s) were already "
                f"loaded and keep their tags, e.g. {inert(shown_path(kept[0].path))}\n  [dim]load them into a new "
                "--db to tag them, or tag them when first loaded[/dim]"
            )
    if summary.unreadable:
        # The other files are loaded; exit 1 so a script notices the ones that were not.
        raise typer.Exit(1)
