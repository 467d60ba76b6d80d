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

import datetime as dt
import hashlib
import html
import math
from collections.abc import Callable, Sequence
from typing import Any

from loopscope.analyses.stats import MIN_SAMPLE
from loopscope.analyses.untrusted import visible
from loopscope.cli.render.styles import (
    AUDIT_METRICS,
    AXIS_LABELS,
    SIGNIFICANT_MARK,
    TOOL_COLUMNS,
    change_parts,
    figure_text,
    LOW_CONFIDENCE_N as LOW_N,
    SERIES_ALL_COLOR as ALL_COLOR,
    SERIES_DASHES as DASHES,
    SERIES_MARKERS as MARKERS,
    SERIES_PALETTE as PALETTE,
    unflagged_note,
    is_rate,
    label as figure_label,
    shown_of,
)

# The chart and card titles: the figures' labels, capitalised as headings.
METRIC_TITLES = {metric: figure_label(metric)[0].upper() + figure_label(metric)[1:] for metric in AUDIT_METRICS}
# The x-axis labels are ISO weeks ("2026-W47"): about this many pixels each with the gap between them.
WEEK_LABEL_PX = 56
LABEL_STRIDES = (1, 2, 4, 8, 13, 26, 52, 104)

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
th{background:#f0f3f6;cursor:pointer;user-select:none;white-space:nowrap}td:first-child{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}
.sig{color:#b91c1c;font-weight:600}.up{color:#15803d}.down{color:#b91c1c}.muted{color:#6b7580}
code,.msg{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;white-space:pre-wrap;word-break:break-word}
.legend span{margin-right:14px;font-size:12px;white-space:nowrap;display:inline-flex;align-items:center;gap:4px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}.legend p{margin:0 0 6px}
a{color:#0b5cad}.note{color:#8a5a00;font-size:12px}article{border-top:1px solid #e7ebef;padding:8px 0}
article:target{background:#fff8e1}
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


def fmt_change(metric: str, change: dict[str, Any] | None, alpha: float = 0.05) -> str:
    """A week-over-week change as HTML: signed difference (and the mean that moved), p-value, flag.

    The tooltip names what was tested; a p-value without the flag says why (too few
    observations), as ``compare`` does.
    """
    parts = change_parts(metric, change, always_mean=True)
    if parts is None or change is None:
        return '<span class="muted">–</span>'
    text, ptxt, significant = parts
    ptxt = f" {ptxt}" if ptxt else ""
    tested = f"tested: {change.get('tested') or ''} ({change.get('test') or ''})"
    if significant:
        what = "distribution shift" if change.get("means") else "significant"
        return f'<span class="sig" title="{esc(tested)}">{esc(text)}{esc(ptxt)} {SIGNIFICANT_MARK} {what}</span>'
    why = unflagged_note(change, alpha)
    note = f' <span class="note">not flagged: {esc(why)}</span>' if why else ""
    return f'<span class="muted" title="{esc(tested)}">{esc(text)}{esc(ptxt)}</span>{note}'


def nice_step(span: float, ticks: int = 4) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about ``ticks`` intervals over ``span``."""
    raw = span / ticks if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw - 1e-12)


def week_start(week: str) -> dt.date:
    """``2026-W47`` -> the Monday it starts on (the time axis places weeks by it)."""
    year, number = week.split("-W")
    return dt.date.fromisocalendar(int(year), int(number), 1)


def label_stride(weeks_span: int, plot_width: float) -> int:
    """Every how many weeks an x label fits without overlapping its neighbours."""
    room = max(1, int(plot_width // WEEK_LABEL_PX))
    return next((s for s in LABEL_STRIDES if weeks_span // s + 1 <= room), LABEL_STRIDES[-1])


class Series:
    """One line of a chart: its label, value and counts per week, flags, and how it is drawn."""

    def __init__(self, label: str, points: dict[str, tuple[float | None, str, int | None]], flags: dict[str, bool],
                 index: int) -> None:
        self.label = label
        self.points = points  # week -> (value, the counts in words, the denominator n)
        self.flags = flags
        self.index = index  # 0: all prompts; 1..: the groups

    @property
    def color(self) -> str:
        return ALL_COLOR if self.index == 0 else PALETTE[(self.index - 1) % len(PALETTE)]

    @property
    def dash(self) -> str:
        return "" if self.index == 0 else DASHES[((self.index - 1) // len(PALETTE)) % len(DASHES)]

    @property
    def marker(self) -> str:
        return "circle" if self.index == 0 else MARKERS[(self.index - 1) % len(MARKERS)]


def _marker(shape: str, cx: float, cy: float, r: float, attrs: str) -> str:
    if shape == "square":
        return f'<rect x="{cx - r:.1f}" y="{cy - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}"{attrs}'
    if shape == "triangle":
        pts = f"{cx:.1f},{cy - r * 1.2:.1f} {cx - r * 1.1:.1f},{cy + r * 0.8:.1f} {cx + r * 1.1:.1f},{cy + r * 0.8:.1f}"
        return f'<polygon points="{pts}"{attrs}'
    if shape == "diamond":
        pts = f"{cx:.1f},{cy - r * 1.3:.1f} {cx + r * 1.1:.1f},{cy:.1f} {cx:.1f},{cy + r * 1.3:.1f} {cx - r * 1.1:.1f},{cy:.1f}"
        return f'<polygon points="{pts}"{attrs}'
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}"{attrs}'


def legend_swatch(series: Series) -> str:
    """A small line and marker in the series' colour, dash and shape, for the legend."""
    dash = f' stroke-dasharray="{series.dash}"' if series.dash else ""
    width = 3 if series.index == 0 else 2
    mark = _marker(series.marker, 14, 6, 3.5, f' fill="{series.color}"/>')
    return (f'<svg width="28" height="12" viewBox="0 0 28 12" aria-hidden="true"><line x1="1" x2="27" y1="6" y2="6" '
            f'stroke="{series.color}" stroke-width="{width}"{dash}/>{mark}</svg>')


def svg_chart(weeks: Sequence[str], series: Sequence[Series], metric: str, width: int = 520, height: int = 230) -> str:
    """An inline SVG line chart over time: x is each ISO week's Monday, labels thinned so they never overlap.

    One line per series, broken where a series has no prompt for a week or more; every value is a
    marker (a group present in one week is a marker, not a stray dot), hollow and faded when it
    rests on fewer than ``LOW_N`` trials; a ring marks a change flagged significant. Each marker's
    tooltip gives the value and the counts behind it.
    """
    left, right, top, bottom = 62, 16, 18, 44
    pw, ph = width - left - right, height - top - bottom
    values = [v for s in series for v, _, _ in s.points.values() if v is not None]
    top_value = max(values, default=0.0)
    if metric in ("recovery_rate", "conversation_recovery_rate"):
        step = 0.25
    elif is_rate(metric):
        step = nice_step(min(1.0, max(0.04, top_value)))
    else:
        step = nice_step(max(4.0, top_value))
    # Round ticks up to the first one above every value (a whole axis, never a cut-off point).
    lo, hi = 0.0, step * max(1, math.ceil(top_value / step - 1e-9) if top_value > 0 else 4)
    if is_rate(metric):
        hi = min(hi, 1.0) if top_value <= 1.0 else hi
    starts = {w: week_start(w) for w in weeks}
    first = min(starts.values()) if starts else dt.date(2000, 1, 3)
    span_weeks = max((d - first).days // 7 for d in starts.values()) if starts else 0

    def x_of(day: dt.date) -> float:
        if span_weeks == 0:
            return left + pw / 2
        pad = pw * 0.04
        return left + pad + (pw - 2 * pad) * ((day - first).days / 7) / span_weeks

    def y(v: float) -> float:
        return top + ph - (v - lo) / (hi - lo) * ph

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'role="img" class="chart" data-metric="{esc(metric)}" aria-label="{esc(METRIC_TITLES.get(metric, metric))}">']
    for k in range(round((hi - lo) / step) + 1):
        v = lo + step * k
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e3e7ec"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end" fill="#56606b">{esc(fmt(metric, v))}</text>')
    stride = label_stride(span_weeks, pw)
    parts.append('<g class="xaxis">')
    for k in range(0, span_weeks + 1, stride):
        day = first + dt.timedelta(weeks=k)
        iso = day.isocalendar()
        tick = x_of(day)
        parts.append(f'<line x1="{tick:.1f}" x2="{tick:.1f}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#9aa4af"/>')
        parts.append(f'<text x="{tick:.1f}" y="{height - bottom + 16}" font-size="10" text-anchor="middle" fill="#56606b">'
                     f'{iso[0]}-W{iso[1]:02d}</text>')
    parts.append("</g>")
    every = "" if stride == 1 else f", a label every {stride} weeks"
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 6}" font-size="10" text-anchor="middle" fill="#56606b">'
                 f'ISO week (time axis{every})</text>')
    parts.append(f'<text x="12" y="{top + ph / 2:.1f}" font-size="10" text-anchor="middle" fill="#56606b" '
                 f'transform="rotate(-90 12 {top + ph / 2:.1f})">{esc(AXIS_LABELS.get(metric, ""))}</text>')
    # values of the all-prompts line are written over its points when the labels have room
    write_values = stride == 1
    def present(s: Series) -> list[tuple[dt.date, str, float]]:
        return sorted((starts[w], w, v) for w, (v, _, _) in s.points.items() if v is not None and w in starts)

    # Lines first, the all-prompts line last so it stays on top of the groups' lines; then the
    # markers: all prompts' larger ones under the groups', so a week with one group shows both
    # (a black ring around the group's marker); the values and the significance rings on top.
    for s in reversed(series):
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        stroke = ' stroke-width="3"' if s.index == 0 else ' stroke-width="2"'
        runs: list[list[tuple[float, float]]] = []
        previous: dt.date | None = None
        for day, _, v in present(s):
            if previous is None or (day - previous).days > 7:
                runs.append([])
            runs[-1].append((x_of(day), y(v)))
            previous = day
        for run in runs:
            if len(run) > 1:
                path = " ".join(f"{px:.1f},{py:.1f}" for px, py in run)
                parts.append(f'<polyline points="{path}" fill="none" stroke="{s.color}"{stroke}{dash}/>')
    on_top: list[str] = []
    for s in series:
        for day, w, v in present(s):
            _, counts, n = s.points[w]
            low = n is not None and n < LOW_N
            cx, cy = x_of(day), y(v)
            fill = "#fff" if low else s.color
            opacity = ' opacity="0.45"' if low else ""
            tip = f"{s.label} {w}: {fmt(metric, v)} ({counts}{'; few, low confidence' if low else ''})"
            attrs = (f' fill="{fill}" stroke="{s.color}" stroke-width="1.5"{opacity} class="point{" low" if low else ""}" '
                     f'data-n="{"" if n is None else n}"><title>{esc(tip)}</title></{_tag(s.marker)}>')
            parts.append(_marker(s.marker, cx, cy, 5.5 if s.index == 0 else 3.6, attrs))
            if s.index == 0 and (write_values or w == weeks[-1]):
                on_top.append(f'<text x="{cx:.1f}" y="{cy - 10:.1f}" font-size="10" font-weight="600" '
                              f'text-anchor="middle" fill="{s.color}" class="value"{opacity}>{esc(fmt(metric, v))}</text>')
            if s.flags.get(w):
                on_top.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="9" fill="none" stroke="#b91c1c" stroke-width="2" class="flag"/>')
    parts.extend(on_top)
    parts.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="#9aa4af"/>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{top + ph}" y2="{top + ph}" stroke="#9aa4af"/>')
    parts.append("</svg>")
    return "".join(parts)


def _tag(shape: str) -> str:
    return {"square": "rect", "triangle": "polygon", "diamond": "polygon"}.get(shape, "circle")


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


def point_counts(metric: str, row: dict[str, Any]) -> tuple[str, int]:
    """The counts behind one weekly value, in words, and its denominator n (the trials the value rests on)."""
    if metric == "recovery_rate":
        return f"{row['recovered_errors']} of {row['errors']} errors recovered", row["errors"]
    if metric == "conversation_recovery_rate":
        done = row["recovered_errors"] + row["resolved_later_errors"]
        return f"{done} of {row['errors']} errors recovered or resolved later", row["errors"]
    if metric == "replay_rate":
        return f"{row['replays']} of {row['tool_calls']} tool calls replayed", row["tool_calls"]
    return f"{row['prompts']} prompts, {row['tool_calls']} tool calls", row["prompts"]


def chart_series(report: dict[str, Any], metric: str) -> tuple[str, list[Series]]:
    """All prompts, then one series per group: the ``--by`` tag's values when given, else the agents."""
    groups = report.get("groups")
    if groups:
        kind, rows = f"{groups['by']} value", [(g["group"], g["weeks"]) for g in groups["items"]]
    else:
        kind, rows = "agent", [(a["agent"], a["weeks"]) for a in report["agents"]]

    def one(label: str, weeks: list[dict[str, Any]], index: int) -> Series:
        points = {}
        for w in weeks:
            counts, n = point_counts(metric, w)
            points[w["week"]] = (w[metric], counts, n)
        flags = {w["week"]: bool(w["changes"].get(metric, {}).get("significant")) for w in weeks}
        return Series(label, points, flags, index)

    return kind, [one("all prompts", report["weeks"], 0)] + [one(label, weeks, i) for i, (label, weeks) in enumerate(rows, 1)]


def _charts(report: dict[str, Any]) -> str:
    weeks = [w["week"] for w in report["weeks"]]
    kind, series = chart_series(report, AUDIT_METRICS[0])  # the legend: the same series in every chart
    n_groups = len(series) - 1
    legend = [f'<div class="legend"><p class="muted">Lines: all prompts and one per {esc(kind)} '
              f'({n_groups}); x is time (weeks without prompts leave a gap). A hollow, faded point rests on fewer '
              f'than {LOW_N} trials (errors for the recovery rates, tool calls for the replay rate, prompts for tool '
              "calls): read it as low confidence. Hover a point for the counts behind it.</p>"]
    for sr in series:
        legend.append(f'<span class="series">{legend_swatch(sr)}{esc(sr.label)}</span>')
    legend.append('<span><i style="border:2px solid #b91c1c;background:none;border-radius:50%"></i>significant change vs previous week</span></div>')
    figs = []
    for metric, title in METRIC_TITLES.items():
        _, metric_series = chart_series(report, metric)
        figs.append(f"<figure><figcaption>{esc(title)}</figcaption>{svg_chart(weeks, metric_series, metric)}</figure>")
    return "".join(legend) + '<div class="charts">' + "".join(figs) + "</div>"


def _tools_title(tools: dict[str, Any]) -> str:
    return f"Tools ({shown_of(tools)} tool{'' if tools['total'] == 1 else 's'}, most called first)"


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


def anchor_id(conversation_id: str) -> str:
    """A safe, unique in-page anchor for a conversation (its id may hold any character)."""
    return "c-" + hashlib.sha256(conversation_id.encode("utf-8")).hexdigest()[:16]


def _when(value: Any) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC" if hasattr(value, "strftime") else str(value)


def _timelines_html(timelines: dict[str, dict[str, Any]], anchors: dict[str, str]) -> str:
    """Each listed conversation's story: its prompts, every tool call by step, the errors the model saw, the exits."""
    out = []
    for cid, t in timelines.items():
        rows = []
        for p in t["prompts"]:
            exit_ = p["loop_exit"]
            ended = (f"exit {esc(exit_['exit_reason'])}" if exit_ else "open: no loop_exit")
            calls = [c for st in p["steps"] for c in st["tool_calls"]]
            rows.append(f'<tr class="prompt"><td colspan="5"><b>prompt {esc(p["prompt_id"])}</b> · '
                        f'{esc(_when(p["first_ts"]))} · agent {esc(p["agent"])} · {len(calls)} tool call'
                        f'{"" if len(calls) == 1 else "s"} · {ended}</td></tr>')
            for st in p["steps"]:
                for c in st["tool_calls"]:
                    mark = " ◀ first unrecovered" if c.get("first_unrecovered") else ""
                    replay = " (replay)" if c.get("is_replay") else ""
                    error = esc(c.get("error_message") or c.get("error_type") or "") if c.get("is_error") else ""
                    rows.append(f'<tr><td class="n">{st["step"]}</td><td>{esc(c["tool_name"])}{replay}</td>'
                                f'<td>{esc(c["outcome"])}</td><td>{esc(c.get("class") or "")}{mark}</td>'
                                f'<td class="msg">{error}</td></tr>')
        head = "<tr><th>step</th><th>tool</th><th>outcome</th><th>class</th><th>error the model saw</th></tr>"
        out.append(f'<article id="{anchors[cid]}" class="timeline"><h3>{esc(cid)}</h3>'
                   f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table></article>")
    return "".join(out)


def _notices_html(notices: list[dict[str, Any]]) -> str:
    """What makes the figures mislead if unsaid, above everything else."""
    if not notices:
        return ""
    items = "".join(f"<li><b>{esc(n['message'])}</b><br>{esc(n['hint'])}</li>" for n in notices)
    return f'<section class="notices"><h2>Read this first</h2><ul>{items}</ul></section>'


def render_html(report: dict[str, Any]) -> str:
    """The whole page for an ``audit.audit`` report."""
    o = report["overall"]
    alpha = float(report["alpha"])
    last = report["weeks"][-1] if report["weeks"] else None
    timelines = report.get("timelines") or {}
    anchors = {cid: anchor_id(cid) for cid in timelines}

    def table(columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]],
              cell: Callable[[str, dict[str, Any]], str | None] | None = None, empty: str = "None.") -> str:
        # every conversation id links to its timeline at the end of the page
        def linked(key: str, row: dict[str, Any]) -> str | None:
            if key == "conversation_id" and row.get(key) is not None and str(row[key]) in anchors:
                cid = str(row[key])
                return f'<td><a href="#{anchors[cid]}" class="conv">{esc(cid)}</a></td>'
            return cell(key, row) if cell is not None else None

        return _table(columns, rows, linked, empty)

    cards = []
    for metric, title in METRIC_TITLES.items():
        change = last["changes"].get(metric) if last else None
        since = f" vs {esc(last['previous_week'])}" if last and last.get("previous_week") else ""
        cards.append(f'<div class="card"><div class="l">{esc(title)}</div><div class="v">{esc(fmt(metric, o[metric]))}</div>'
                     f'<div class="l">last week {esc(last["week"]) if last else "–"}{since}: {fmt_change(metric, change, alpha)}</div></div>')
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
            return f"<td>{fmt_change(metric, row['changes'].get(metric), alpha)}</td>"
        return None

    weeks_html = table(week_cols, report["weeks"], week_cell, "No prompt in the selection.")
    agents_html = "".join(
        f"<h3>{esc(a['agent'])}</h3>" + table(week_cols, a["weeks"], week_cell) for a in report["agents"])
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
        _section("Per week", weeks_html + '<p class="muted">Δ = change vs the previous week in the data. '
                 "Rates: two-proportion z-test on their counts. Tool calls per prompt: the Mann-Whitney U test "
                 "compares the whole distribution of tool calls per prompt of the two weeks, so it can flag a shift "
                 "while the median stays put (Δ median +0): the change of the mean tool calls per prompt is shown "
                 f"beside it as the figure that moved. {SIGNIFICANT_MARK} = p &lt; {esc(report['alpha'])}; a p-value "
                 f"below it without the mark comes from a week with fewer than {MIN_SAMPLE} observations (prompts "
                 "or trials), too few for the test's approximation: not flagged, as in loopscope compare.</p>", "weeks"),
        _section("Per agent", table(agent_cols, report["agents"]) + agents_html, "agents"),
        *([_section(f"Per {report['groups']['by']}", table(
            [("group", report["groups"]["by"]), *agent_cols[1:]], report["groups"]["items"])
            + "".join(f"<h3>{esc(g['group'])}</h3>" + table(week_cols, g["weeks"], week_cell)
                      for g in report["groups"]["items"]), "groups")] if report.get("groups") else []),
        _section(_tools_title(report["tools"]), _tools_html(report["tools"]), "tools"),
        _section("Error classes per tool", table(
            [("tool_name", "tool"), ("errors", "errors"), ("recovered", "recovered"), ("gave_up", "gave up"),
             ("aborted", "aborted"), ("open", "open"), ("recovery_rate", "recovery"), ("conversation_recovery_rate", "conv. recovery")], [{**b, **b["error_classes"]} for b in report["error_classes_by_tool"]],
            empty="No tool errors."), "classes"),
        _section(f"Generic error messages ({shown_of(gt)} template{'' if gt['total'] == 1 else 's'}, costliest first)", table(
            [("tool_name", "tool"), ("template", "template"), ("occurrences", "seen"), ("unrecovered", "unrecovered"),
             ("recovery_rate", "recovery"), ("rules", "rules"), ("rewrite", "rewrite direction")], gt["items"], msg_cell,
            "No generic error message."), "templates"),
        _section(f"Retry loops ({shown_of(rl)}, {rl['redundant_calls']} redundant calls)", table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("agent", "agent"), ("tool_name", "tool"),
             ("calls", "calls"), ("error_message", "message"), ("exit_reason", "exit")], rl["items"], msg_cell,
            "No retry loop.")
            + f"<h3>No-progress loops ({shown_of(npl)}: same call, same result)</h3>" + table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("agent", "agent"), ("tool_name", "tool"),
             ("calls", "calls"), ("exit_reason", "exit")], npl["items"], empty="No no-progress loop.")
            + f"<h3>Cycles ({shown_of(cy)}: A-B-A-B)</h3>" + table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("tool_name", "tool A"),
             ("other_tool_name", "tool B"), ("calls", "calls"), ("exit_reason", "exit")], cy["items"], empty="No cycle."),
            "loops"),
        _section(f"Replays ({shown_of(rp)}: {rp['short_circuited']} short-circuited, {rp['double_executions']} double "
                 f"execution{'s' if rp['double_executions'] != 1 else ''}) and duplicate executions ({shown_of(de)})", table(
            [("conversation_id", "conversation"), ("tool_call_id", "tool_call_id"), ("tool_name", "tool"),
             ("prompt_id", "prompt"), ("kind", "kind"), ("first_run_prompt_id", "first run in")], rp["items"],
            empty="No replay.") + table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("tool_name", "tool"),
             ("original_tool_call_id", "original call"), ("duplicates", "duplicates")], de["items"],
            empty="No duplicate execution."), "replays"),
        _section("Budget pressure per agent", table(
            [("agent", "agent"), ("prompts", "prompts"), ("median_tool_calls_per_prompt", "median"), ("p99_tool_calls_per_prompt", "p99"),
             ("max_tool_calls_seen", "max seen"), ("max_tool_calls", "budget"), ("p99_budget_ratio", "p99 / budget"),
             ("budget_exceeded", "budget exits"), ("budget_exceeded_share", "share")], report["budget_pressure"]),
            "budget"),
        _section(f"Protocol violations ({pv['total']})", table(
            [("kind", "kind"), ("violations", "violations"), ("conversations", "conversations")], pv["by_kind"],
            empty="No protocol violation.")
            + (f"<h3>The violations ({shown_of(pv)})</h3>" if pv["items"] else "") + table(
            [("conversation_id", "conversation"), ("prompt_id", "prompt"), ("tool_call_id", "tool_call_id"),
             ("kind", "kind"), ("detail", "detail")], pv["items"], msg_cell, ""), "protocol"),
        _section(f"Conversations to triage first ({shown_of(tf)})", table(
            [("conversation_id", "conversation"), ("class", "class"), ("tool_name", "tool"), ("n_unrecovered", "unrecovered"),
             ("previous_attempts", "earlier attempts"), ("error_message", "first unrecovered error"), ("last_ts", "last seen")],
            tf["items"], msg_cell, "No unrecovered error."), "triage"),
        _section(f"Reviewer verdicts ({rv['reviewed']} reviewed)", table(
            [("verdict", "verdict"), ("compared", "compared"), ("agree", "agree"), ("agreement", "agreement"), ("yes", "yes")],
            verdict_rows if rv["reviewed"] else [], empty="No review imported (loopscope review sample --out, then loopscope review import).")
            + (f'<p class="muted">generic_apology: {rv["generic_apology_yes"]} yes (no computed counterpart)</p>' if rv["reviewed"] else "")
            + table([("conversation_id", "conversation"), ("verdict", "verdict"), ("reviewer", "reviewer"),
                      ("computed", "computed"), ("notes", "notes")], rv["disagreements"], msg_cell,
                     "No disagreement." if rv["reviewed"] else ""), "reviews"),
        *([_section(f"Timelines ({len(timelines)} conversations listed above)", _timelines_html(timelines, anchors),
                    "timelines")] if timelines else []),
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
