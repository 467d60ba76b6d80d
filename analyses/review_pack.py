"""The review pack a sample is written to: Markdown to read, a CSV to fill in.

``write_pack(con, sample, out_dir)`` writes

- ``conversations/NNN-<id>.md``: one file per sampled conversation, its triage
  timeline (``triage.triage``): every prompt's tool calls, each error with the
  message the model saw and **what the model did next** (retried the same
  call, retried with other arguments, switched tool, or stopped), the exit,
  and the first unrecovered error with its recovery context;
- ``index.md``: how the sample was drawn and a table linking every file;
- ``reviews.csv``: one row per conversation with the computed facts and blank
  verdict columns (``recovered_cleanly``, ``spun``, ``gave_up``,
  ``generic_apology``: yes / no; ``notes``) for ``loopscope review import``.

Log text is untrusted: inline values are escaped for Markdown and HTML
(``md_inline``), whole messages go in tilde fences longer than any tilde run
they contain (``md_fence``), and control characters are made visible, so no
message can inject markup, links, HTML or terminal escapes into the pack.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from loopscope.analyses import triage as triage_mod
from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.review_csv import CSV_COLUMNS, CSV_FORMULA_START, VERDICT_COLUMNS
from loopscope.analyses.sampling import Sample
from loopscope.analyses.untrusted import visible

_MD_SPECIAL_RE = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")
_SLUG_RE = re.compile(r"[^A-Za-z0-9_-]+")


def md_inline(text: object) -> str:
    """Untrusted text as inert inline Markdown: one line, HTML and Markdown escaped."""
    flat = " ".join(visible(text).split())
    flat = _MD_SPECIAL_RE.sub(r"\\\1", flat)
    return flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def md_fence(text: object, info: str = "text") -> str:
    """Untrusted text as a fenced block nothing inside can close."""
    body = visible(text)
    longest = max((len(run) for run in re.findall(r"~+", body)), default=0)
    fence = "~" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def csv_safe(text: str) -> str:
    """A cell a spreadsheet will not run as a formula (``'`` prefix, undone on import)."""
    return "'" + text if text.startswith(CSV_FORMULA_START) else text


def slug(conversation_id: str) -> str:
    """A file-name-safe form of an id (the index prefix keeps names unique)."""
    return (_SLUG_RE.sub("_", conversation_id).strip("_") or "conversation")[:60]


@dataclass(frozen=True)
class Pack:
    """Where the pack was written."""

    out_dir: Path
    index: Path
    reviews_csv: Path
    files: list[Path]


def after_error(calls: list[triage_mod.ToolCallEntry], error: triage_mod.ToolCallEntry,
                exit_: triage_mod.LoopExit | None) -> str:
    """What the model did after ``error``: the parallel calls of its own step, then the prompt's later steps.

    A call the model asked for in the same response as the failing one (the same step) is
    said first: "made no further tool call" alone would hide that a parallel sibling succeeded.
    """
    siblings = [c for c in calls if c.step == error.step and c is not error]
    same_step = ""
    if siblings:
        outcomes = ", ".join(
            f"{md_inline(c.tool_name)} → "
            + (f"error ({md_inline(c.error_class or 'error')})" if c.is_error else "ok")
            for c in siblings
        )
        same_step = f"in the same step (parallel calls) also called {outcomes}; then "
    later = [c for c in calls if c.step > error.step]
    if not later:
        if exit_ is None:
            return same_step + "made no further tool call, and the prompt has no loop_exit (the run died or is still open)"
        return same_step + f"made no further tool call; the loop exited with {md_inline(exit_.exit_reason)}"
    nxt_step = later[0].step
    parts = []
    for c in (c for c in later if c.step == nxt_step):
        if c.tool_name == error.tool_name and c.args_fingerprint and c.args_fingerprint == error.args_fingerprint:
            what = "retried the same call (same arguments)"
        elif c.tool_name == error.tool_name:
            what = "retried the tool with changed arguments"
        else:
            what = f"switched to {md_inline(c.tool_name)}"
        result = f"error again ({md_inline(c.error_class or 'error')})" if c.is_error else "ok"
        parts.append(f"{what} at step {c.step} → {result}")
    return same_step + "; ".join(parts)


def conversation_markdown(t: triage_mod.Triage, candidate: Any, number: int) -> str:
    """The Markdown review page of one triaged conversation."""
    lines = [
        f"# {number:03d} · conversation {md_inline(t.conversation_id)}",
        "",
        f"- stratum: **{candidate.stratum}**; computed class: **{candidate.computed_class}**",
        f"- agent: {md_inline(candidate.agent)}; prompts: {candidate.prompts}; tool calls: {candidate.tool_calls}; "
        f"errors: {candidate.errors} ({candidate.unrecovered} unrecovered)",
        f"- retry loops: {len(t.retry_loops)}; replays: {len(t.replays)} "
        f"({sum(1 for r in t.replays if r.double_execution)} double executions)",
        "",
    ]
    for p in t.prompts:
        tags = ", ".join(f"{md_inline(k)}={md_inline(v)}" for k, v in (p.tags or {}).items())
        lines += [f"## Prompt {md_inline(p.prompt_id)}", "",
                  f"started {p.first_ts:%Y-%m-%d %H:%M:%S} UTC · agent {md_inline(p.agent)}" + (f" · {tags}" if tags else ""), ""]
        calls = p.tool_calls
        if calls:
            lines += ["| step | tool | outcome | error | class | replay |", "|---:|---|---|---|---|---|"]
            for c in calls:
                err = md_inline(c.error_type or ("error" if c.is_error else "")) if c.is_error else ""
                mark = " **(first unrecovered)**" if c.first_unrecovered else ""
                replay = ("short-circuited" if c.replayed else "executed again") if c.is_replay else ""
                lines.append(f"| {c.step} | {md_inline(c.tool_name)} | {md_inline(c.outcome)} | {err} | "
                             f"{md_inline(c.error_class or '')}{mark} | {replay} |")
            lines.append("")
        for c in (c for c in calls if c.is_error):
            lines += [f"**Error at step {c.step}, {md_inline(c.tool_name)}** ({md_inline(c.error_class or 'replay')}): "
                      "the model saw", "", md_fence(c.error_message or "(no message)"), "",
                      f"After it, the model {after_error(calls, c, p.loop_exit)}.", ""]
        if p.loop_exit is None:
            lines += ["**Exit:** none logged (open prompt).", ""]
        else:
            e = p.loop_exit
            budget = f" of a budget of {e.max_tool_calls}" if e.max_tool_calls is not None else ""
            lines += [f"**Exit:** {md_inline(e.exit_reason)} ({'normal' if e.normal else 'abnormal'}) "
                      f"after {p.n_tool_calls} tool call{'' if p.n_tool_calls == 1 else 's'}{budget}.", ""]
            if e.error_message:
                lines += [md_fence(e.error_message), ""]
    if t.recovery_context:
        lines += ["## First unrecovered error", "", md_fence(t.recovery_context), ""]
    lines += ["## Verdict", "",
              "Fill in this conversation's row of `reviews.csv`: recovered_cleanly, spun, gave_up, "
              "generic_apology (yes / no) and notes.", ""]
    return "\n".join(lines)


def index_markdown(sample: Sample, rows: list[dict[str, Any]], window: str) -> str:
    """The pack's index page."""
    lines = [
        "# Review sample", "",
        f"- window: {md_inline(window)}",
        f"- seed: {sample.seed} (redraw with `--seed {sample.seed}`); asked for {sample.n}, drew {len(rows)}",
        "- strata (available → drawn): " + "; ".join(
            f"{s} {sample.available[s]} → {sample.allocation[s]}" for s in sample.available),
        "",
        "Read each conversation, then fill in `reviews.csv` and run `loopscope review import reviews.csv`.",
        "",
        "| # | conversation | stratum | computed class | errors | file |",
        "|---:|---|---|---|---:|---|",
    ]
    for i, (c, row) in enumerate(zip(sample.conversations, rows), 1):
        lines.append(f"| {i} | {md_inline(c.conversation_id)} | {c.stratum} | {c.computed_class} | {c.errors} | "
                     f"[{row['file']}]({row['file']}) |")
    return "\n".join(lines) + "\n"


def write_pack(con: duckdb.DuckDBPyConnection, sample: Sample, out_dir: Path, *, window: str = "",
               force: bool = False) -> Pack:
    """Write the review pack of ``sample`` into ``out_dir``.

    Raises:
        LoopscopeError: ``out_dir`` already holds a reviews.csv (filled-in
            verdicts would be lost) and ``force`` is not set, or it is a file.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise LoopscopeError(f"--out {out_dir} is a file", hint="give a folder for the review pack")
    if not out_dir.exists() and out_dir.parent.exists() and not out_dir.parent.is_dir():
        raise LoopscopeError(f"--out {out_dir}: {out_dir.parent} is a file", hint="give a folder for the review pack")
    if (out_dir / "reviews.csv").exists() and not force:
        raise LoopscopeError(
            f"{out_dir / 'reviews.csv'} already exists; writing the pack would overwrite its verdicts",
            hint="import it first (loopscope review import), choose another --out, or pass --force",
        )
    conv_dir = out_dir / "conversations"
    try:
        conv_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LoopscopeError(f"cannot create --out {out_dir}: {exc.strerror}",
                             hint="give a folder you can write to, e.g. --out review-w47/") from None
    files: list[Path] = []
    rows: list[dict[str, Any]] = []
    for i, c in enumerate(sample.conversations, 1):
        t = triage_mod.triage(con, c.conversation_id)
        path = conv_dir / f"{i:03d}-{slug(c.conversation_id)}.md"
        path.write_text(conversation_markdown(t, c, i), encoding="utf-8")
        files.append(path)
        rows.append({
            "conversation_id": c.conversation_id, "stratum": c.stratum, "computed_class": c.computed_class,
            "computed_spun": "yes" if t.retry_loops else "no", "computed_gave_up": "yes" if c.gave_up else "no",
            "file": f"conversations/{path.name}",
        })
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow([csv_safe(visible(row.get(col, ""))) for col in CSV_COLUMNS])
    reviews = out_dir / "reviews.csv"
    reviews.write_text(buf.getvalue(), encoding="utf-8")
    index = out_dir / "index.md"
    index.write_text(index_markdown(sample, rows, window), encoding="utf-8")
    return Pack(out_dir, index, reviews, files)
