"""Terminal rendering of the audit report (rich tables and sparklines).

Reads only the dict of ``loopscope.analyses.audit.audit``; every text from
the logs goes through ``inert``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from loopscope.cli.render.output import inert, one_line, print_fitted, print_whole
from loopscope.cli.render.styles import (
    AUDIT_METRICS,
    SIGNIFICANT_MARK,
    change_parts,
    figure_text,
    shown_of,
    significant_weeks,
    unflagged_note,
)
from loopscope.cli.render.styles import label as figure_label

SPARK = "▁▂▃▄▅▆▇█"
METRICS = tuple((metric, figure_label(metric)) for metric in AUDIT_METRICS)
# Ids, tool names and every other short text stay whole on one line (copy-pasteable), whatever
# the terminal's width; long texts are cut to one line of LONG_TEXT_CHARS here (JSON and HTML keep
# them whole) and wrap in the width the other columns leave, LONG_TEXT_MIN_WIDTH or less on a
# narrow terminal (print_fitted), a word wider than that cut with "…".
ID_KEYS = {"conversation_id", "prompt_id", "tool_call_id", "where", "week"}
LONG_TEXT_KEYS = {"template", "error_message", "notes"}
LONG_TEXT_CHARS = 90
LONG_TEXT_MIN_WIDTH = 24
ID_LIST_KEYS = {"rules"}
ID_LIST_WIDTH = len("LS105, LS120,")


def new_table(title: str | None = None) -> Table:
    """A table in the audit family's style (also used by ``sample``)."""
    # No vertical rules: 100 columns then hold the weekly table without cutting headers.
    return Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1),
                 collapse_padding=True, pad_edge=False)


def _where(row: dict[str, Any]) -> str:
    """Conversation and, dimmed below it, the prompt: two short lines instead of two wide columns."""
    return f"{inert(row['conversation_id'])}\n[dim]{inert(row['prompt_id'])}[/dim]"


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value, scaled between the series' min and max; a gap is a space."""
    present = [v for v in values if v is not None]
    if not present:
        return ""
    lo, hi = min(present), max(present)
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        elif hi == lo:
            out.append(SPARK[3])
        else:
            out.append(SPARK[round((v - lo) / (hi - lo) * (len(SPARK) - 1))])
    return "".join(out)


def fmt(metric: str, value: float | None) -> str:
    """A metric for a cell."""
    return figure_text(metric, value)


UNFLAGGED_MARK = "†"


def fmt_change(metric: str, change: dict[str, Any] | None, alpha: float = 0.05) -> str:
    """Compact signed difference with its p-value; significant changes in bold red with a ◆.

    A p-value below alpha that is not flagged (too few observations) gets a † (explained under the table).
    """
    parts = change_parts(metric, change)
    if parts is None:
        return "[dim]-[/dim]"
    text, ptxt, significant = parts
    ptxt = f" {ptxt}" if ptxt else ""
    if significant:
        return f"[bold red]{text}{ptxt} {SIGNIFICANT_MARK}[/bold red]"
    dagger = f" {UNFLAGGED_MARK}" if unflagged_note(change, alpha) else ""
    return f"{text}[dim]{ptxt}{dagger}[/dim]"


def _unflagged_footnote(rows: list[dict[str, Any]], alpha: float) -> str:
    notes = sorted({unflagged_note(ch, alpha) for w in rows for ch in w["changes"].values()} - {""})
    if not notes:
        return ""
    return f"[dim]{UNFLAGGED_MARK} p < {alpha} but not flagged: {inert('; '.join(notes))} (too few for the test)[/dim]"


def _short_test(name: str) -> str:
    # The JSON keeps the full name; a terminal column only needs which test.
    return "Mann-Whitney U" if name.startswith("Mann-Whitney") else name


def _table(title: str, columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]], console: Console,
           texts: Sequence[str] = (), empty: str = "none") -> None:
    if not rows:
        console.print(f"[bold]{title}[/bold]: [dim]{empty}[/dim]")
        return
    table = new_table(title)
    for key, header in columns:
        if key in LONG_TEXT_KEYS:  # free text: wraps to what the terminal leaves (print_fitted)
            table.add_column(header, justify="left", min_width=LONG_TEXT_MIN_WIDTH, overflow="ellipsis")
        elif key in ID_LIST_KEYS:  # rule ids, two to a line: an id is never cut
            table.add_column(header, justify="left", width=ID_LIST_WIDTH)
        elif key in ID_KEYS or key in texts:  # ids, tool and agent names, kinds: never cut or folded
            table.add_column(header, justify="left", no_wrap=True)
        else:  # figures
            table.add_column(header, justify="right", no_wrap=True)
    for r in rows:
        cells = []
        for key, _ in columns:
            v = r.get(key)
            if key == "where":
                cells.append(_where(r))
                continue
            if key in LONG_TEXT_KEYS and isinstance(v, str):
                v = one_line(v, LONG_TEXT_CHARS)
            if isinstance(v, list):
                v = ", ".join(map(str, v))
            if isinstance(v, bool):
                v = "yes" if v else "no"
            if isinstance(v, bool) or v is None or isinstance(v, str) or hasattr(v, "isoformat"):
                cells.append(inert("" if v is None else (f"{v:%Y-%m-%d %H:%M}" if hasattr(v, "strftime") else v)))
            else:
                cells.append(fmt(key, v))
        table.add_row(*cells)
    print_fitted(console, table)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def group_table(console: Console, title: str, header: str, rows: list[dict[str, Any]]) -> None:
    """Per agent or per tag value: its figures, its recovery trend and last changes, where it changed significantly."""
    at = new_table(f"{title} (Δ: the last week vs the previous one; ◆ significant; "
                   "every week's changes in --format json and --html)")
    # short headers (the weekly table's): 100 columns hold them whole
    for name in (header, "prompts", "median", "p99", "recov", "replay", "recov trend", "Δ recov",
                 "Δ replay", "◆ weeks"):
        at.add_column(name, justify="left" if name in (header, "recov trend", "◆ weeks") else "right",
                      no_wrap=name in (header, "prompts", "median", "p99", "recov", "replay", "recov trend"),
                      min_width=len(name))
    for a in rows:
        alast = a["weeks"][-1] if a["weeks"] else {"changes": {}}
        at.add_row(inert(a["group"]), str(a["prompts"]), fmt("median_tool_calls_per_prompt", a["median_tool_calls_per_prompt"]),
                   fmt("p99_tool_calls_per_prompt", a["p99_tool_calls_per_prompt"]), fmt("recovery_rate", a["recovery_rate"]),
                   fmt("replay_rate", a["replay_rate"]), sparkline([w["recovery_rate"] for w in a["weeks"]]),
                   fmt_change("recovery_rate", alast["changes"].get("recovery_rate")),
                   fmt_change("replay_rate", alast["changes"].get("replay_rate")),
                   inert(significant_weeks(a["weeks"])) or "[dim]-[/dim]")
    print_whole(console, at)


def render(report: dict[str, Any], console: Console) -> None:
    """Print the whole report."""
    o = report["overall"]
    alpha = float(report["alpha"])
    weeks = report["weeks"]
    span = (f"week {inert(weeks[0]['week'])}" if len(weeks) == 1 else
            f"weeks {inert(weeks[0]['week'])} to {inert(weeks[-1]['week'])}" if weeks else "no week")
    console.print(f"[bold]loopscope audit[/bold]: {_n(o['prompts'], 'prompt')} ({o['open_prompts']} open) in "
                  f"{_n(o['conversations'], 'conversation')}, {_n(o['tool_calls'], 'tool call')}, "
                  f"{_n(o['errors'], 'error')} ({o['recovered_errors']} recovered, {o['resolved_later_errors']} more resolved later), {_n(o['replays'], 'replay')}; {span}")
    last = weeks[-1] if weeks else None
    t = new_table("The four metrics")
    for header, justify in (("metric", "left"), ("overall", "right"), ("weekly trend", "left"),
                            (f"last week {last['week'] if last else ''}", "right"),
                            (f"change vs {last['previous_week'] or '-' if last else '-'}", "left"), ("test", "left")):
        t.add_column(inert(header), justify=justify, no_wrap=header in ("metric", "test", "overall"))  # type: ignore[arg-type]
    for metric, label in METRICS:
        t.add_row(label, fmt(metric, o[metric]), sparkline([w[metric] for w in weeks]),
                  fmt(metric, last[metric]) if last else "-",
                  fmt_change(metric, last["changes"].get(metric) if last else None, alpha), _short_test(report["tests"][metric]))
    print_whole(console, t)

    def week_table(title: str, rows: list[dict[str, Any]]) -> None:
        wt = new_table(title)
        # Δ p99 has no column: it shares the median's rank test (see docs/audit.md).
        # "recov": recovery rate (metric 3); "conv": conversation recovery rate (docs/audit.md)
        for header in ("week", "prompts", "open", "median", "p99", "errors", "recov", "conv", "replay",
                       "Δ median", "Δ recov", "Δ replay"):
            wt.add_column(header, justify="left" if header == "week" else "right", no_wrap=header in ("week", "prompts", "errors"))
        for w in rows:
            wt.add_row(inert(w["week"]), str(w["prompts"]), str(w["open_prompts"]),
                       *(fmt(m, w[m]) for m in ("median_tool_calls_per_prompt", "p99_tool_calls_per_prompt")), str(w["errors"]),
                       *(fmt(m, w[m]) for m in ("recovery_rate", "conversation_recovery_rate", "replay_rate")),
                       *(fmt_change(m, w["changes"].get(m), alpha) for m in ("median_tool_calls_per_prompt", "recovery_rate", "replay_rate")))
        print_whole(console, wt)
        footnote = _unflagged_footnote(rows, alpha)
        if footnote:
            console.print(footnote + "\n")

    week_table("Per ISO week (Δ vs the previous week; ◆ significant at alpha " + str(report["alpha"]) + ")", weeks)
    group_table(console, "Per agent", "agent", [{**a, "group": a["agent"]} for a in report["agents"]])
    if report.get("groups"):
        g = report["groups"]
        group_table(console, f"Per {inert(g['by'])}", inert(g["by"]), g["items"])
    tools = report["tools"]
    if tools["items"]:
        from loopscope.cli.render.metrics import tool_tables

        tools_of = f"{shown_of(tools)} tool{'' if tools['total'] == 1 else 's'}"
        for i, table in enumerate(tool_tables(tools["items"], f"Tools ({tools_of}, most called first; latency in ms)",
                                              ruled=True)):
            if i:
                print_fitted(console, table)  # the error templates wrap to the terminal's width, the tool names whole
            else:
                print_whole(console, table)  # the figures, every column whole
    else:
        console.print("[bold]Tools[/bold]: [dim]no tool call[/dim]")
    # the Tools table's short headers, "resolved later" on two lines: 80 columns hold the table
    _table("Error classes per tool", [("tool_name", "tool"), ("errors", "errors"), ("recovered", "recovered"),
           ("gave_up", "gave up"), ("aborted", "aborted"), ("open", "open"), ("recovery_rate", "recov %"),
           ("resolved_later_errors", "resolved\nlater"), ("conversation_recovery_rate", "conv %")],
           [{**b, **b["error_classes"]} for b in report["error_classes_by_tool"]], console, texts=("tool_name",), empty="no tool error")
    gt = report["generic_templates"]
    _table(f"Generic error messages ({shown_of(gt)} template{'' if gt['total'] == 1 else 's'}, costliest first)",
           [("tool_name", "tool"), ("template", "template"), ("occurrences", "seen"), ("unrecovered", "unrec."),
            ("recovery_rate", "recovery"), ("rules", "rules")], gt["items"], console,
           texts=("tool_name", "template", "rules"), empty="no generic error message")
    rl = report["retry_loops"]
    _table(f"Retry loops ({shown_of(rl)}, {rl['redundant_calls']} redundant calls)",
           [("where", "conversation / prompt"), ("tool_name", "tool"), ("calls", "calls"),
            ("exit_reason", "exit"), ("error_message", "message")], rl["items"], console,
           texts=("tool_name", "error_message", "exit_reason"), empty="none")
    npl, cy = report["no_progress_loops"], report["cycles"]
    _table(f"No-progress loops ({shown_of(npl)}: same call, same result, {npl['redundant_calls']} redundant calls)",
           [("where", "conversation / prompt"), ("tool_name", "tool"), ("calls", "calls"),
            ("exit_reason", "exit")], npl["items"], console, texts=("tool_name", "exit_reason"), empty="none")
    _table(f"Cycles ({shown_of(cy)}: A-B-A-B, {cy['redundant_calls']} redundant calls)",
           [("where", "conversation / prompt"), ("tool_name", "tool A"), ("other_tool_name", "tool B"), ("calls", "calls"),
            ("exit_reason", "exit")], cy["items"], console, texts=("tool_name", "other_tool_name", "exit_reason"), empty="none")
    rp, de = report["replays"], report["duplicate_executions"]
    _table(f"Replays ({shown_of(rp)}: {rp['short_circuited']} short-circuited, {rp['double_executions']} "
           f"double execution{'s' if rp['double_executions'] != 1 else ''})",
           [("where", "conversation / prompt"), ("tool_call_id", "tool_call_id"), ("tool_name", "tool"),
            ("kind", "kind")], [{**r, "kind": r["kind"].replace("_", " ")} for r in rp["items"]], console,
           texts=("tool_name", "kind"), empty="none")
    _table(f"Duplicate executions ({shown_of(de)})",
           [("where", "conversation / prompt"), ("tool_name", "tool"),
            ("duplicates", "duplicates")], de["items"], console, texts=("tool_name",), empty="none")
    _table("Budget pressure per agent",
           [("agent", "agent"), ("prompts", "prompts"), ("p99_tool_calls_per_prompt", "p99"), ("max_tool_calls_seen", "max seen"),
            ("max_tool_calls", "budget"), ("p99_budget_ratio", "p99/budget"), ("budget_exceeded", "budget exits"),
            ("budget_exceeded_share", "share")], report["budget_pressure"], console, texts=("agent",))
    pv = report["protocol_violations"]
    _table(f"Protocol violations ({pv['total']})", [("kind", "kind"), ("violations", "violations"),
           ("conversations", "conversations")], pv["by_kind"], console, texts=("kind",), empty="none")
    tf = report["triage_first"]
    _table(f"Conversations to triage first ({shown_of(tf)})",
           [("conversation_id", "conversation"), ("class", "class"), ("tool_name", "tool"),
            ("n_unrecovered", "unrec."), ("previous_attempts", "earlier\ntries"),
            ("error_message", "first unrecovered error")], tf["items"], console,
           texts=("class", "tool_name", "error_message"), empty="no unrecovered error")
    rv = report["reviews"]
    if not rv["reviewed"]:
        console.print("[bold]Reviewer verdicts[/bold]: [dim]none imported (loopscope review sample --out DIR, then "
                      "loopscope review import DIR/reviews.csv)[/dim]")
        return
    _table(f"Reviewer verdicts vs computed ({rv['reviewed']} reviewed; generic_apology yes: {rv['generic_apology_yes']})",
           [("verdict", "verdict"), ("compared", "compared"), ("agree", "agree"), ("agreement", "agreement"), ("yes", "yes")],
           [{"verdict": k, **v} for k, v in rv["verdicts"].items()], console, texts=("verdict",))
    _table("Disagreements", [("conversation_id", "conversation"), ("verdict", "verdict"), ("reviewer", "reviewer"),
           ("computed", "computed"), ("notes", "notes")], rv["disagreements"], console,
           texts=("verdict", "notes"), empty="none")
