"""The audit report as ONE self-contained HTML page: inline CSS, inline SVG charts, a little inline JS.

``render_html(report)`` takes the dict of ``audit.audit`` and returns the page.
Nothing is fetched: no CDN, no web font, no image file; a Content-Security-Policy
(``default-src 'none'``) makes the browser refuse any request the page could
make, so it opens offline and cannot leak. The charts of the four metrics over
the ISO weeks are inline SVG (one line for all prompts, one per agent; a
ringed point is a week-over-week change flagged significant). The inline
script only makes tables sortable by a click on a header.

Every text that comes from the logs (ids, tool and agent names, messages,
templates, notes) goes through ``esc``: control characters made visible, then
HTML-escaped (quotes included), so a hostile message renders as text.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import Any

from loopscope.analyses.untrusted import visible
from loopscope.cli.render.styles import (
    AUDIT_METRICS,
    AXIS_LABELS,
    SIGNIFICANT_MARK,
    TOOL_COLUMNS,
    change_parts,
    figure_text,
    is_rate,
    label as figure_label,
    shown_of,
)

# The chart and card titles: the figures' labels, capitalised as headings.
METRIC_TITLES = {metric: figure_label(metric)[0].upper() + figure_label(metric)[1:] for metric in AUDIT_METRICS}
PALETTE = ("#1f4e9c", "#c2410c", "#15803d", "#7c3aed", "#b91c1c", "#0e7490")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
header{background:#1b2533;color:#fff;padding:18px 28px}header h1{margin:0 0 4px;font-size:22px}
header p{margin:0;color:#c9d3e0}main{padding:16px 28px 40px;max-width:1280px}
section{background:#fff;border:1px solid #dde2e8;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:17px;margin:0 0 10px}h3{font-size:14px;margin:14px 0 6px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(220px,1fr));gap:12px}
.card{border:1px solid #dde2e8;border-radius:8px;padding:10px 14px;background:#fbfcfd}
.card .v{font-size:26px;font-weight:600}.card .l{color:#56606b;font-size:12px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px}
figure{margin:0}figcaption{font-weight:600;margin-bottom:4px}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid #e7ebef;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f3f6;cursor:pointer;user-select:none;white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}
.sig{color:#b91c1c;font-weight:600}.up{color:#15803d}.down{color:#b91c1c}.muted{color:#6b7580}
code,.msg{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;white-space:pre-wrap;word-break:break-word}
.legend span{margin-right:12px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
"""

SCRIPT = """
(function(){
  function key(td){var t=td.getAttribute('data-v');if(t===null)t=td.textContent;var n=parseFloat(t);return isNaN(n)?t.toLowerCase():n;}
  document.querySelectorAll('table.sortable').forEach(function(table){
    table.querySelectorAll('th').forEach(function(th,i){
      th.addEventListener('click',function(){
        var body=table.tBodies[0];if(!body)return;var rows=Array.prototype.slice.call(body.rows);
        var asc=th.getAttribute('data-asc')!=='1';th.setAttribute('data-asc',asc?'1':'0');
        rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]);return (x<y?-1:x>y?1:0)*(asc?1:-1);});
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
  document.body.setAttribute('data-ready','1');
})();
"""


def esc(text: object) -> str:
    """Untrusted text made inert for HTML (control characters visible, markup escaped)."""
    return html.escape(visible(text), quote=True)


def fmt(metric: str, value: float | None) -> str:
    """A metric value for display."""
    return figure_text(metric, value, null="–")


def fmt_change(metric: str, change: dict[str, Any] | None) -> str:
    """A week-over-week change as HTML: signed difference, p-value, flag (the terminal's words)."""
    parts = change_parts(metric, change)
    if parts is None:
        return '<span class="muted">–</span>'
    text, ptxt, significant = parts
    ptxt = f" {ptxt}" if ptxt else ""
    if significant:
        return f'<span class="sig">{esc(text)}{esc(ptxt)} {SIGNIFICANT_MARK} significant</span>'
    return f'<span class="muted">{esc(text)}{esc(ptxt)}</span>'


def nice_step(span: float, ticks: int = 4) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about ``ticks`` intervals over ``span``."""
    raw = span / ticks if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw - 1e-12)


def svg_chart(weeks: Sequence[str], series: Sequence[tuple[str, Sequence[float | None], Sequence[bool]]],
              metric: str, width: int = 520, height: int = 230) -> str:
    """An inline SVG line chart: one line per series over the weeks; ringed points are significant changes."""
    left, right, top, bottom = 62, 12, 18, 44
    pw, ph = width - left - right, height - top - bottom
    values = [v for _, vals, _ in series for v in vals if v is not None]
    top_value = max(values, default=0.0)
    if metric == "recovery_rate":
        step = 0.25
    elif is_rate(metric):
        step = nice_step(min(1.0, max(0.04, top_value)))
    else:
        step = nice_step(max(4.0, top_value))
    # Round ticks up to the first one above every value (a whole axis, never a cut-off point).
    lo, hi = 0.0, step * max(1, math.ceil(top_value / step - 1e-9) if top_value > 0 else 4)
    if is_rate(metric):
        hi = min(hi, 1.0) if top_value <= 1.0 else hi
    n = len(weeks)

    def x(i: int) -> float:
        return left + (pw * (i + 0.5) / n if n else 0)

    def y(v: float) -> float:
        return top + ph - (v - lo) / (hi - lo) * ph

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'role="img" class="chart" data-metric="{esc(metric)}" aria-label="{esc(METRIC_TITLES.get(metric, metric))}">']
    for k in range(round((hi - lo) / step) + 1):
        v = lo + step * k
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e3e7ec"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end" fill="#56606b">{esc(fmt(metric, v))}</text>')
    for i, w in enumerate(weeks):
        parts.append(f'<text x="{x(i):.1f}" y="{height - bottom + 16}" font-size="10" text-anchor="middle" fill="#56606b">{esc(w)}</text>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 6}" font-size="10" text-anchor="middle" fill="#56606b">ISO week</text>')
    parts.append(f'<text x="12" y="{top + ph / 2:.1f}" font-size="10" text-anchor="middle" fill="#56606b" '
                 f'transform="rotate(-90 12 {top + ph / 2:.1f})">{esc(AXIS_LABELS.get(metric, ""))}</text>')
    # The first series (all prompts) is drawn last, so it stays on top of the agents' lines.
    for si, (label, vals, flags) in reversed(list(enumerate(series))):
        color = PALETTE[si % len(PALETTE)]
        style = ' stroke-width="3"' if si == 0 else ' stroke-width="2" stroke-dasharray="5 3"'
        pts = [(x(i), y(v)) for i, v in enumerate(vals) if v is not None]
        if len(pts) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}"{style}/>')
        for i, v in enumerate(vals):
            if v is None:
                continue
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3.5" fill="{color}"><title>{esc(label)} {esc(weeks[i])}: {esc(fmt(metric, v))}</title></circle>')
            if si == 0:  # the all-prompts value, written above its point
                parts.append(f'<text x="{x(i):.1f}" y="{y(v) - 9:.1f}" font-size="10" font-weight="600" '
                             f'text-anchor="middle" fill="{color}" class="value">{esc(fmt(metric, v))}</text>')
            if i < len(flags) and flags[i]:
                parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="8" fill="none" stroke="#b91c1c" stroke-width="2" class="flag"/>')
    parts.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="#9aa4af"/>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{top + ph}" y2="{top + ph}" stroke="#9aa4af"/>')
    parts.append("</svg>")
    return "".join(parts)


def _table(columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]],
           cell: Callable[[str, dict[str, Any]], str] | None = None, empty: str = "None.") -> str:
    """A sortable table; ``columns`` are (key, header); ``cell`` may render a cell as trusted HTML."""
    if not rows:
        return f'<p class="muted">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for _, h in columns)
    body = []
    for r in rows:
        tds = []
        for key, _ in columns:
            if cell is not None:
                rendered = cell(key, r)
                if rendered is not None:
                    tds.append(rendered)
                    continue
            v = r.get(key)
            if isinstance(v, bool):
                v = "yes" if v else "no"
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                tds.append(f'<td class="n" data-v="{v}">{esc(fmt(key, v))}</td>')
            else:
                tds.append(f"<td>{esc('' if v is None else v)}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _section(title: str, body: str, sid: str) -> str:
    return f'<section id="{sid}"><h2>{esc(title)}</h2>{body}</section>'


def _weeks_text(weeks: Sequence[dict[str, Any]]) -> str:
    if not weeks:
        return ""
    first, last = weeks[0]["week"], weeks[-1]["week"]
    return f" · ISO week {first}" if first == last else f" · ISO weeks {first} to {last}"


def _window_text(sel: dict[str, Any]) -> str:
    parts = []
    if sel.get("since") or sel.get("until"):
        parts.append(f"from {sel.get('since') or '…'} to {sel.get('until') or '…'}")
    if sel.get("agents"):
        parts.append("agents " + ", ".join(sel["agents"]))
    if sel.get("tags"):
        parts.append("tags " + ", ".join(sel["tags"]))
    if sel.get("source_ids") is not None:
        n = len(sel["source_ids"])
        parts.append(f"{n} log file{'' if n == 1 else 's'}")
    return "; ".join(parts) or "all prompts"


def _charts(report: dict[str, Any]) -> str:
    weeks = [w["week"] for w in report["weeks"]]
    legend = ['<div class="legend">', f'<span><i style="background:{PALETTE[0]}"></i>all prompts</span>']
    for i, a in enumerate(report["agents"], 1):
        legend.append(f'<span><i style="background:{PALETTE[i % len(PALETTE)]}"></i>{esc(a["agent"])}</span>')
    legend.append('<span><i style="border:2px solid #b91c1c;background:none;border-radius:50%"></i>significant change vs previous week</span></div>')
    figs = []
    for metric, title in METRIC_TITLES.items():
        series = [("all prompts", [w[metric] for w in report["weeks"]],
                   [bool(w["changes"].get(metric, {}).get("significant")) for w in report["weeks"]])]
        for a in report["agents"]:
            by_week = {w["week"]: w for w in a["weeks"]}
            series.append((a["agent"], [by_week[w][metric] if w in by_week else None for w in weeks],
                           [bool(by_week[w]["changes"].get(metric, {}).get("significant")) if w in by_week else False for w in weeks]))
        figs.append(f"<figure><figcaption>{esc(title)}</figcaption>{svg_chart(weeks, series, metric)}</figure>")
    return "".join(legend) + '<div class="charts">' + "".join(figs) + "</div>"


def _tools_title(tools: dict[str, Any]) -> str:
    shown = f", the {len(tools['items'])} most called" if len(tools["items"]) < tools["total"] else ""
    return f"Tools ({tools['total']} tool{'' if tools['total'] == 1 else 's'}{shown})"


def _tools_html(tools: dict[str, Any]) -> str:
    """Per-tool health: the terminal's columns, headed by their labels, and the most frequent error template."""
    # The terminal's short headers (the figures' names are in --format json), then the template.
    headers = {"tool_calls": "calls", "error_rate": "error rate", "recovery_rate": "recovery",
               "conversation_recovery_rate": "conv. recovery"}
    columns = [(key, headers.get(key, short)) for key, short in TOOL_COLUMNS] + [
        ("top_error_template", "most frequent error template"), ("top_error_template_errors", "its errors")]

    def cell(key: str, row: dict[str, Any]) -> str | None:
        if key == "tool_name":
            note = ' <span class="muted">(scratchpad)</span>' if row["scratchpad"] else ""
            return f"<td>{esc(row['tool_name'])}{note}</td>"
        if key == "top_error_template":
            if row["top_error_template"] is None:
                return '<td class="muted">–</td>'
            return f'<td class="msg">{esc(row["top_error_template"] or "(no message)")}</td>'
        if row.get(key, 0) is None:  # a rate without a denominator, a latency without a sample
            return '<td class="n muted">–</td>'
        return None

    missing = sum(t["tool_calls_without_latency"] for t in tools["items"])
    note = (f'<p class="muted">{missing} call{"s" if missing != 1 else ""} without latency_ms, left out of the '
            "percentiles.</p>" if missing else "")
    return _table(columns, tools["items"], cell, "No tool call.") + note


def _notices_html(notices: list[dict[str, Any]]) -> str:
    """What makes the figures mislead if unsaid, above everything else."""
    if not notices:
        return ""
    items = "".join(f"<li><b>{esc(n['message'])}</b><br>{esc(n['hint'])}</li>" for n in notices)
    return f'<section class="notices"><h2>Read this first</h2><ul>{items}</ul></section>'


def render_html(report: dict[str, Any]) -> str:
    """The whole page for an ``audit.audit`` report."""
    o = report["overall"]
    last = report["weeks"][-1] if report["weeks"] else None
    cards = []
    for metric, title in METRIC_TITLES.items():
        change = last["changes"].get(metric) if last else None
        since = f" vs {esc(last['previous_week'])}" if last and last.get("previous_week") else ""
        cards.append(f'<div class="card"><div class="l">{esc(title)}</div><div class="v">{esc(fmt(metric, o[metric]))}</div>'
                     f'<div class="l">last week {esc(last["week"]) if last else "–"}{since}: {fmt_change(metric, change)}</div></div>')
    counts = (f"{o['prompts']} prompts ({o['open_prompts']} open) in {o['conversations']} conversations · "
              f"{o['tool_calls']} tool calls · {o['errors']} errors, {o['recovered_errors']} recovered, {o['resolved_later_errors']} more resolved later · {o['replays']} replays")

    week_cols = [("week", "week"), ("prompts", "prompts"), ("open_prompts", "open"), ("median_tool_calls_per_prompt", "median"),
                 ("p99_tool_calls_per_prompt", "p99"), ("errors", "errors"), ("recovery_rate", "recovery"), ("replay_rate", "replay"),
                 ("conversation_recovery_rate", "conv. recovery"),
                 ("chg_recovery_rate", "Δ recovery"), ("chg_median_tool_calls_per_prompt", "Δ median (rank test)"),
                 ("chg_replay_rate", "Δ replay")]

    def week_cell(key: str, row: dict[str, Any]) -> str | None:
        if key.startswith("chg_"):
            metric = key[4:]
            return f"<td>{fmt_change(metric, row['changes'].get(metric))}</td>"
        return None

    weeks_html = _table(week_cols, report["weeks"], week_cell, "No prompt in the selection.")
    agents_html = "".join(
        f"<h3>{esc(a['agent'])}</h3>" + _table(week_cols, a["weeks"], week_cell) for a in report["agents"])
    agent_cols = [("agent", "agent"), ("prompts", "prompts"), ("open_prompts", "open"), ("median_tool_calls_per_prompt", "median"),
                  ("p99_tool_calls_per_prompt", "p99"), ("errors", "errors"), ("recovery_rate", "recovery"),
                  ("conversation_recovery_rate", "conv. recovery"), ("replay_rate", "replay")]

    gt = report["generic_templates"]
    rl = report["retry_loops"]
    npl, cy = report["no_progress_loops"], report["cycles"]
    rp = report["replays"]
    de = report["duplicate_executions"]
    pv = report["protocol_violations"]
    tf = report["triage_first"]
    rv = report["reviews"]

    def msg_cell(key: str, row: dict[str, Any]) -> str | None:
        if key in ("template", "example", "error_message", "detail", "notes"):
            return f'<td class="msg">{esc(row.get(key) or "")}</td>'
        if key in ("rules", "tool_call_ids"):
            return f"<td>{esc(', '.join(row.get(key) or []))}</td>"
        return None

    verdict_rows = [{"verdict": k, **v} for k, v in rv["verdicts"].items()]
    body = [
        _section("The four metrics", '<div class="cards">' + "".join(cards) + f'</div><p class="muted">{esc(counts)}</p>', "metrics"),
        _section("Over time (ISO weeks)", _charts(report), "charts"),
        _section("Per week", weeks_html + '<p class="muted">Δ = change vs the previous week in the data; '
                 f"rates: two-proportion z-test, tool calls per prompt: Mann-Whitney U; ◆ = p &lt; {esc(report['alpha'])}.</p>", "weeks"),
        _section("Per agent", _table(agent_cols, report["agents"]) + agents_html, "agents"),
        _section(_tools_title(report["tools"]), _tools_html(report["tools"]), "tools"),
        _section("Error classes per tool", _table(
            [("tool_name", "tool"), ("errors", "errors"), ("recovered", "recovered"), ("gave_up", "gave up"),
             ("aborted", "aborted"), ("open", "open"), ("recovery_rate", "recovery"), ("conversation_recovery_rate", "conv. recovery")], [{**b, **b["error_classes"]} for b in report["error_classes_by_tool"]],
            empty="No tool errors."), "classes"),
        _section(f"Generic error messages ({gt['total']} templates, costliest first)", _table(
            [("tool_name", "tool"), ("template", "template"), ("occurrences", "seen"), ("unrecovered", "unrecovered"),
             ("recovery_rate", "recovery"), ("rules", "rules"), ("rewrite", "rewrite direction")], gt["items"], msg_cell,
            "No generic error message."), "templates"),
        _section(f"Retry loops ({shown_of(rl)}, {rl['redundant_calls']} redundant calls)", _table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("agent", "agent"), ("tool_name", "tool"),
             ("calls", "calls"), ("error_message", "message"), ("exit_reason", "exit")], rl["items"], msg_cell,
            "No retry loop.")
            + f"<h3>No-progress loops ({shown_of(npl)}: same call, same result)</h3>" + _table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("agent", "agent"), ("tool_name", "tool"),
             ("calls", "calls"), ("exit_reason", "exit")], npl["items"], empty="No no-progress loop.")
            + f"<h3>Cycles ({shown_of(cy)}: A-B-A-B)</h3>" + _table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("tool_name", "tool A"),
             ("other_tool_name", "tool B"), ("calls", "calls"), ("exit_reason", "exit")], cy["items"], empty="No cycle."),
            "loops"),
        _section(f"Replays ({shown_of(rp)}: {rp['short_circuited']} short-circuited, {rp['double_executions']} double "
                 f"execution{'s' if rp['double_executions'] != 1 else ''}) and duplicate executions ({shown_of(de)})", _table(
            [("conversation_id", "conversation"), ("tool_call_id", "tool_call_id"), ("tool_name", "tool"),
             ("prompt_id", "prompt"), ("kind", "kind"), ("first_run_prompt_id", "first run in")], rp["items"],
            empty="No replay.") + _table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("tool_name", "tool"),
             ("original_tool_call_id", "original call"), ("duplicates", "duplicates")], de["items"],
            empty="No duplicate execution."), "replays"),
        _section("Budget pressure per agent", _table(
            [("agent", "agent"), ("prompts", "prompts"), ("median_tool_calls_per_prompt", "median"), ("p99_tool_calls_per_prompt", "p99"),
             ("max_tool_calls_seen", "max seen"), ("max_tool_calls", "budget"), ("p99_budget_ratio", "p99 / budget"),
             ("budget_exceeded", "budget exits"), ("budget_exceeded_share", "share")], report["budget_pressure"]),
            "budget"),
        _section(f"Protocol violations ({shown_of(pv)})", _table(
            [("kind", "kind"), ("violations", "violations"), ("conversations", "conversations")], pv["by_kind"],
            empty="No protocol violation.") + _table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("tool_call_id", "tool_call_id"),
             ("kind", "kind"), ("detail", "detail")], pv["items"], msg_cell, ""), "protocol"),
        _section(f"Conversations to triage first ({shown_of(tf)})", _table(
            [("conversation_id", "conversation"), ("class", "class"), ("tool_name", "tool"), ("n_unrecovered", "unrecovered"),
             ("previous_attempts", "earlier attempts"), ("error_message", "first unrecovered error"), ("last_ts", "last seen")],
            tf["items"], msg_cell, "No unrecovered error."), "triage"),
        _section(f"Reviewer verdicts ({rv['reviewed']} reviewed)", _table(
            [("verdict", "verdict"), ("compared", "compared"), ("agree", "agree"), ("agreement", "agreement"), ("yes", "yes")],
            verdict_rows if rv["reviewed"] else [], empty="No review imported (loopscope review sample --out, then loopscope review import).")
            + (f'<p class="muted">generic_apology: {rv["generic_apology_yes"]} yes (no computed counterpart)</p>' if rv["reviewed"] else "")
            + _table([("conversation_id", "conversation"), ("verdict", "verdict"), ("reviewer", "reviewer"),
                      ("computed", "computed"), ("notes", "notes")], rv["disagreements"], msg_cell,
                     "No disagreement." if rv["reviewed"] else ""), "reviews"),
    ]
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        f"<title>loopscope audit</title><style>{CSS}</style></head><body>"
        f"<header><h1>loopscope audit</h1><p>{esc(_window_text(report['selection']))}{esc(_weeks_text(report['weeks']))} · alpha {esc(report['alpha'])}</p></header>"
        f"<main>{_notices_html(report.get('notices') or [])}{''.join(body)}</main><script>{SCRIPT}</script></body></html>\n"
    )
