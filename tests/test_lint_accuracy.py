"""Precision and recall of the ``generic`` verdict on real, hand-labelled error messages.

Five files in tests/fixtures/, each line ``{message, label, source, note}`` with the source and
licence of the message (see docs/lint.md, "Accuracy" for the labelling rules):

- ``error_messages.jsonl``, ``error_messages_fresh.jsonl``: the first 198 messages (tau2-bench,
  MCP servers, SDKs, API docs, runtimes, the seeds);
- ``error_messages_real.jsonl``: 138 messages added for issue 13 (tau2-bench domain tools,
  gemini-cli, openhands-aci, SWE-agent, ToolBench RapidAPI observations, runtimes, RFC 9457);
- ``error_messages_untuned.jsonl`` (set A, 64), ``..._untuned2`` (set B, 38), ``..._untuned3``
  (set C, 35) and ``..._untuned4`` (set D, 41): labelled after the issue-13 rules were written,
  each committed before it was evaluated; A and B were then used for one tuning round each; C and
  D were first tuned on in session 12, with set E;
- ``error_messages_untuned5.jsonl`` (set E, 82) and ``error_messages_heldout.jsonl`` (set H, 55):
  137 messages labelled and committed (222a149) before any rule ran on them, split by SHA-1
  divisible by 3. **Set H is held out**: no tuning step looks at its messages or its misses; only
  its aggregate figures are read, and they are what the docs report as the untuned result;
- ``error_messages_untuned6.jsonl`` (set I, 50): labelled and committed (e65bd02) as a second held-out
  set, evaluated once (0.538 / 0.583), then used for one tuning round: it is a tuning set now;
- ``error_messages_untuned7.jsonl`` (set J, 45): labelled and committed (9d543b5) after that round as a
  third held-out set, evaluated once (0.857 / 0.600), then used for one tuning round;
- ``error_messages_untuned8.jsonl`` (set K, 39): labelled and committed (cd3992b) after that round as a
  fourth held-out set, evaluated once (0.588 / 0.769), then used for one tuning round;
- ``error_messages_heldout_l.jsonl`` (set L, 34): labelled and committed (40e6f02) after the last
  change to the rules of session 12 and **held out**: evaluated once, never tuned on;
- session 13: ``error_messages_untuned9.jsonl`` (set M, 88: BFCL multi-turn tools, ToolSandbox, Roo-Code,
  command-line tools, Python libraries, HTTP API bodies) and ``error_messages_untuned10.jsonl`` (set O,
  31: continue.dev, fastmcp, supabase-mcp, AgentBench, LLM API bodies) were labelled and committed
  (32de38e, 9b710c7) before the rules ran on them, evaluated once, then used for one tuning round each;
  the SHA-1 third of both batches is ``error_messages_heldout_n.jsonl`` (set N, 68), **held out**:
  never read message by message; its aggregate was read after round 2 (0.857 / 0.900) and at the end;
- ``error_messages_untuned11.jsonl`` (set P, 40: mongodb/sentry/redis MCP servers, OpenHands,
  anthropic-quickstarts) was labelled and committed (f806764, 9e4f619), evaluated once, then used for a
  third tuning round; its SHA-1 third plus a last batch (b5ecf15: kubernetes-mcp-server, firecrawl,
  stripe agent-toolkit) is ``error_messages_heldout_q.jsonl`` (set Q, 29), **held out**: evaluated once,
  after the last rule change.

After their evaluation sets N and Q were used for a fourth tuning round (like I, J and K in session 12),
and ``error_messages_heldout_r.jsonl`` (set R, 33: browser-automation, weather, Discord, SendGrid and
LangChain texts quoted in public repositories; CPython, polars, DuckDB, Node, jq and git run here) was
labelled and committed (d7cbae9) before that round, held out whole, and evaluated once after it; it was
then used for a fifth round, after ``error_messages_heldout_s.jsonl`` (set S, 17: pydantic, click, CPython
stdlib, sqlite3, git and Node run here) was labelled and committed (257a9ff), **held out** whole, and
evaluated once after that round.

Session 14: ``error_messages_untuned12.jsonl`` (set T, 42) and ``error_messages_heldout_u.jsonl`` (set U, 31,
**held out**): one batch labelled and committed (8b6bf7c) before any rule ran on it, split by SHA-1 divisible
by 3; T was evaluated once and tuned on; U was evaluated once, after the last rule change. The aggregates of
H, L and S (never their messages) were read after each session-14 change, as a guard. U was then used for
a second round, after ``error_messages_heldout_v.jsonl`` (set V, 32, **held out** whole) was labelled and
committed (22f0cc9); V was evaluated once, after that round.

Until session 14, sets H, L, S and V were the only ones no tuning step had looked at message by message. Session 15
(issue 13) listed the errors of every set, these four included, and tuned on V; its changes moved L and S as well.
No set is blind any more: the honest estimate for a new source is the next set nobody here has read.

``error_messages_heldout_w.jsonl`` (set W, 134) is that next set: real messages labelled blind by a second engineer
who never saw the rules (committed on branch lintlabel, 73e9bbc), evaluated once by the lead with main's rules
(88997d3: 0.756 / 0.723) and session 15's (0.702 / 0.702), then tuned on (it is a tuning set now).

``error_messages_dev_linttune2.jsonl`` (57): the linttune2 session's own development set from sources no other file drew on
(block/goose's text editor, letta's memory tools, agno's calculator, CSV and coding tools), labelled and committed
(921e35d) before any rule ran on it and kept blind while the session changed the rules; its first look was 0.769 / 0.833
with main's rules and 0.750 / 0.750 with the session's, and it was then tuned on. ``error_messages_dev2_linttune2.jsonl``
(21: semantic-kernel's core plugins, aiohttp's client errors, mini-swe-agent's observation templates) was labelled and
committed (c907612) before the session's last rules ran on it: one blind look, 0.875 / 0.700 with main's rules and the
same with the session's; then tuned on.

``error_messages_heldout_x.jsonl`` (set X, 165): session 16's blind set, labelled independently by two engineers who never
saw the rules (``label``, and ``second_label`` / ``second_note``: they agree on 161 of 165), evaluated once with main's rules
(0.622 / 0.561) and the session's (0.605 / 0.561); then tuned on in session 17 (linttune3: 0.800 / 0.878, a tuning figure).

``error_messages_heldout_y.jsonl`` (set Y, 134): session 17's blind set, labelled twice, independently and blind (134 of 134
agree), evaluated once with main's rules (0.667 / 0.571) and linttune3's (0.684 / 0.619); then tuned on in session 17's round
on Y (linttune4: three principles, 0.762 / 0.762, a tuning figure). The next blind set is the estimate.

Splits of the first three files: the **held-out third** is every message whose SHA-1 is divisible
by 3 (a fixed, content-derived choice); the rest is **development**, which the rules were tuned on.

``python tests/test_lint_accuracy.py --errors`` lists every set's false alarms and misses (reading it makes a set a
tuning set). ``python tests/test_lint_accuracy.py docs/lint.md`` rewrites the figures table in docs/lint.md
from these files; ``test_docs_figures_are_current`` fails when the table is stale, so the
figures in the docs are always the ones the current rules produce.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from loopscope.analyses.lint import lint_message

FIXTURES = Path(__file__).parent / "fixtures"
TUNED_FILES = ("error_messages.jsonl", "error_messages_fresh.jsonl", "error_messages_real.jsonl")
SET_A = "error_messages_untuned.jsonl"
SET_B = "error_messages_untuned2.jsonl"
SET_C = "error_messages_untuned3.jsonl"
SET_D = "error_messages_untuned4.jsonl"
SET_E = "error_messages_untuned5.jsonl"
SET_I = "error_messages_untuned6.jsonl"
SET_J = "error_messages_untuned7.jsonl"
# Held out until session 14; session 15 read its errors (see the module docstring).
SET_H = "error_messages_heldout.jsonl"
SET_K = "error_messages_untuned8.jsonl"
SET_L = "error_messages_heldout_l.jsonl"
SET_M = "error_messages_untuned9.jsonl"
SET_O = "error_messages_untuned10.jsonl"
# Held out for rounds 1-3 of session 13, evaluated once, then tuned on (see the module docstring).
SET_N = "error_messages_heldout_n.jsonl"
SET_P = "error_messages_untuned11.jsonl"
SET_Q = "error_messages_heldout_q.jsonl"
SET_R = "error_messages_heldout_r.jsonl"
# Held out until session 14; session 15 read its errors (see the module docstring).
SET_S = "error_messages_heldout_s.jsonl"
# Session 14: the batch of 8b6bf7c; set T was tuned on once; its SHA-1 third, set U, is held out.
SET_T = "error_messages_untuned12.jsonl"
# Held out for session 14's first round, evaluated once (0.769 / 0.714), then tuned on once.
SET_U = "error_messages_heldout_u.jsonl"
# Labelled before the second round of session 14, evaluated once, then tuned on in session 15.
SET_V = "error_messages_heldout_v.jsonl"
# Labelled blind by a second engineer (lintlabel 73e9bbc), evaluated once with main's and session 15's rules, then tuned on.
SET_W = "error_messages_heldout_w.jsonl"
# Session linttune2's own development set (goose, letta, agno tools), labelled before any rule ran on it and kept blind
# until its first look (main's rules 0.769 / 0.833); then tuned on.
SET_DEV2 = "error_messages_dev_linttune2.jsonl"
# A second one (semantic-kernel, aiohttp, mini-swe-agent), labelled before the session's last rules ran on it; one blind
# look with main's and the branch's rules (both 0.875 / 0.700); then tuned on.
SET_DEV3 = "error_messages_dev2_linttune2.jsonl"
# Session 16: labelled blind, independently, by two engineers who never saw the rules (agreement 0.976, kappa 0.94);
# evaluated once with main's rules (0.622 / 0.561), linttune2's (0.605 / 0.561) and the learned baseline (0.526 / 0.488);
# then tuned on in session 17 (linttune3): a tuning set.
SET_X = "error_messages_heldout_x.jsonl"
# Session 17: labelled blind, independently, by two engineers who never saw the rules (134 of 134 agree), from 36 sources
# no earlier set used; evaluated once with main's rules (0.667 / 0.571) and linttune3's (0.684 / 0.619); then tuned on
# (linttune4: 0.762 / 0.762, a tuning figure). A new blind set must follow it.
SET_Y = "error_messages_heldout_y.jsonl"
DOCS = Path(__file__).parent.parent / "docs" / "lint.md"
START, END = "<!-- ACCURACY:START -->", "<!-- ACCURACY:END -->"

# Floors that guard against regressions (the aim, precision >= 0.95 and recall >= 0.9 on messages the
# rules never saw, is met only where docs/lint.md says so).
FLOORS = {
    "development": (0.95, 0.95),
    "held-out third": (0.9, 0.9),
    "set A": (0.9, 0.95),
    "set B": (0.85, 0.95),
    "set C": (0.95, 0.95),
    "set D": (0.95, 0.95),
    "set E": (0.95, 0.95),
    "set I": (0.95, 0.95),
    "set J": (0.95, 0.95),
    "set K": (0.95, 0.95),
    "set H": (0.9, 0.95),
    "set L": (0.95, 0.95),
    "set M": (0.95, 0.95),
    "set O": (0.95, 0.95),
    "set N": (0.95, 0.95),
    "set P": (0.95, 0.95),
    "set Q": (0.95, 0.95),
    "set R": (0.95, 0.9),
    "set S": (0.95, 0.95),
    "set T": (0.95, 0.9),
    "set U": (0.95, 0.95),
    "set V": (0.95, 0.95),
    "set W": (0.85, 0.9),
    "linttune2 dev": (0.8, 0.8),
    "linttune2 dev 2": (0.8, 0.8),
    # tuned on in session 17 (linttune3): the floor is the tuned figure (0.800 / 0.878), not an estimate
    "set X": (0.8, 0.87),
    # tuned on in session 17's round on Y (linttune4): the floor is the tuned figure (0.762 / 0.762), a tuning figure;
    # its first look, 0.684 / 0.619 with the rules of linttune3, is the estimate it gave
    "set Y": (0.76, 0.76),
}


def _rows(name: str) -> list[dict[str, str]]:
    path = FIXTURES / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _held_out(message: str) -> bool:
    return int(hashlib.sha1(message.encode("utf-8")).hexdigest(), 16) % 3 == 0


def splits() -> dict[str, list[dict[str, str]]]:
    """Every evaluation set by name, in the order the docs table lists them."""
    tuned = [row for name in TUNED_FILES for row in _rows(name)]
    return {
        "development": [r for r in tuned if not _held_out(r["message"])],
        "held-out third": [r for r in tuned if _held_out(r["message"])],
        "set A": _rows(SET_A),
        "set B": _rows(SET_B),
        "set C": _rows(SET_C),
        "set D": _rows(SET_D),
        "set E": _rows(SET_E),
        "set I": _rows(SET_I),
        "set J": _rows(SET_J),
        "set K": _rows(SET_K),
        "set H": _rows(SET_H),
        "set L": _rows(SET_L),
        "set M": _rows(SET_M),
        "set O": _rows(SET_O),
        "set N": _rows(SET_N),
        "set P": _rows(SET_P),
        "set Q": _rows(SET_Q),
        "set R": _rows(SET_R),
        "set S": _rows(SET_S),
        "set T": _rows(SET_T),
        "set U": _rows(SET_U),
        "set V": _rows(SET_V),
        "set W": _rows(SET_W),
        "linttune2 dev": _rows(SET_DEV2),
        "linttune2 dev 2": _rows(SET_DEV3),
        "set X": _rows(SET_X),
        "set Y": _rows(SET_Y),
    }


def scores(rows: list[dict[str, str]]) -> dict[str, float | int]:
    """Precision and recall of the ``generic`` verdict, with the counts behind them."""
    tp = fp = fn = 0
    for row in rows:
        predicted = lint_message(row["message"]).generic
        actual = row["label"] == "generic"
        tp += predicted and actual
        fp += predicted and not actual
        fn += actual and not predicted
    return {
        "n": len(rows),
        "generic": tp + fn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
    }


_WHAT = {
    "development": "two thirds of the first three files; the rules were tuned on it",
    "held-out third": "SHA-1 divisible by 3; first looked at with the rules of 89a2528 (0.887 / 0.940), then tuned once (7608325)",
    "set A": "labelled at 40ef815; first evaluated with the rules of 7608325 (0.737 / 0.700), then tuned once (a2c34f6)",
    "set B": "labelled at cea8352; first evaluated with the rules of a2c34f6 (0.583 / 0.700), then tuned once (9c1d1b3)",
    "set C": "labelled at ef66ed4; first evaluated with the rules of 9c1d1b3 (0.714 / 0.714), tuned once in session 12",
    "set D": "labelled at f397a13; first evaluated with the rules of 9c1d1b3 (0.625 / 0.500), tuned once in session 12",
    "set E": "labelled at 222a149; first evaluated with the rules of 696fe31 (0.607 / 0.810), tuned once in session 12",
    "set I": "labelled at e65bd02 as a second held-out set; first evaluated with the rules of 78e4160 (0.538 / 0.583), then tuned once in session 12",
    "set K": "labelled at cd3992b as a fourth held-out set; first evaluated with the rules of 2ca9b42 (0.588 / 0.769), then tuned once in session 12",
    "set J": "labelled at 9d543b5 as a third held-out set; first evaluated with the rules of 5f8610a (0.857 / 0.600), then tuned once in session 12",
    "set H": "labelled at 222a149, held out until session 14: 0.929 / 0.867 with the rules of 696fe31, 0.933 / 0.933 with 78e4160, 0.938 / 1.000 with 9dba1a9; session 15 read its errors (no longer blind)",
    "set L": "labelled at 40e6f02, held out until session 14: 0.889 / 0.615 at its first evaluation, 1.000 / 0.846 with 9dba1a9; session 15 read its errors and its figure moved with session 15's families (no longer blind)",
    "set M": "labelled at 32de38e; first evaluated with the rules of 37133e3 (0.821 / 0.885), then tuned once (191909e)",
    "set O": "labelled at 9b710c7; first evaluated with the rules of 191909e (0.889 / 0.667), then tuned once (9c132c6)",
    "set N": "SHA-1 third of the first two session-13 batches (32de38e, 9b710c7), held out for three rounds: 0.857 / 0.900 with the rules of 9c132c6 and of f394124; then tuned once",
    "set P": "labelled at f806764 and 9e4f619; first evaluated with the rules of 9c132c6 (0.733 / 1.000), then tuned once (f394124)",
    "set Q": "SHA-1 third of set P's batches plus b5ecf15, held out: 0.889 / 0.727 with the rules of f394124; then tuned once",
    "set R": "labelled at d7cbae9, held out for round 4: 1.000 / 0.556 with the rules of 7eae950; then tuned once",
    "set S": "labelled at 257a9ff, held out whole until session 14: 1.000 / 0.714 after round 5 of session 13, 1.000 / 0.857 with 9dba1a9; session 15 read its errors and its figure moved with session 15's families (no longer blind)",
    "set T": "labelled at 8b6bf7c (session 14); first evaluated with the rules of b763113 (0.600 / 0.429), then tuned once",
    "set U": "SHA-1 third of set T's batch (8b6bf7c), held out for round 1 of session 14: 0.769 / 0.714 with the rules of 4e53a21 (0.733 / 0.786 with b763113); then tuned once",
    "set V": "labelled at 22f0cc9, held out whole and evaluated once with 9dba1a9 (0.500 / 0.500; 0.500 / 0.500 with 4e53a21, 0.375 / 0.375 with b763113); tuned on in session 15 (no longer held out)",
    "set W": "labelled blind at 73e9bbc (branch lintlabel) by a second engineer who never saw the rules; evaluated once: 0.756 / 0.723 with main's rules (88997d3), 0.702 / 0.702 with session 15's (f881dee); then tuned on (no longer held out)",
    "linttune2 dev": "labelled at 921e35d by the linttune2 session before any rule ran on it (goose, letta, agno tools); kept blind until its first look: 0.769 / 0.833 with main's rules (bb00bd2), 0.750 / 0.750 with the branch's (3cfc814); then tuned on",
    "set X": "labelled blind at 323b5ba (branch lintx) from 46 sources not used before, and again by a second engineer (second_label: agreement 0.976, kappa 0.94); evaluated once: 0.622 / 0.561 with the rules of bb00bd2, 0.605 / 0.561 with linttune2's (6a10af6), the learned baseline 0.526 / 0.488; then tuned on (linttune3): a tuning figure",
    "set Y": "labelled blind in session 17 from 36 sources not used before (Ruby, PHP, Lua, Go, tsc, hg, svn, uv, ripgrep, rsync, etcd, memcached, SQLAlchemy, Puppeteer, Qwen-Agent, adk, crush, MCP servers for Atlassian, Grafana, Exa, Tavily, API-Bank, eight HTTP APIs), twice, independently (second_label: 134 of 134 agree); evaluated once: 0.667 / 0.571 with the rules of 4297f3c, 0.684 / 0.619 with linttune3's (d623d98), the learned baseline 0.737 / 0.333; then tuned on (linttune4, three principles): a tuning figure",
    "linttune2 dev 2": "labelled at c907612 by the linttune2 session before its last rules ran on it (semantic-kernel's core plugins, aiohttp's client errors, mini-swe-agent's templates); one blind look: 0.875 / 0.700 with main's rules and with the branch's (c907612); then tuned on",
}


def figures_markdown() -> str:
    lines = [
        "| set | n | generic | precision | recall | fp | fn | what it is |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, rows in splits().items():
        s = scores(rows)
        lines.append(
            f"| {name} | {s['n']} | {s['generic']} | {s['precision']:.3f} | {s['recall']:.3f} | {s['fp']} | {s['fn']} "
            f"| {_WHAT[name]} |"
        )
    return "\n".join(lines) + "\n"


def render(doc: str) -> str:
    head, _, rest = doc.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{figures_markdown()}{END}{tail}"


def test_fixtures_are_well_formed() -> None:
    every = [row for name in (*TUNED_FILES, SET_A, SET_B, SET_C, SET_D, SET_E, SET_I, SET_J, SET_K, SET_H, SET_L, SET_M, SET_O, SET_N, SET_P, SET_Q, SET_R, SET_S, SET_T, SET_U, SET_V, SET_W, SET_DEV2, SET_DEV3) for row in _rows(name)]
    messages = [row["message"] for row in every]
    assert len(every) >= 1225
    # the held-out file is a third of the session-12 messages, chosen by content, not by looking
    held = _rows(SET_H)
    assert len(held) >= 50 and all(_held_out(row["message"]) for row in held)
    assert not any(_held_out(row["message"]) for row in _rows(SET_E))
    # session 13: set N is the SHA-1 third of its two batches, sets M and O the rest
    assert len(_rows(SET_N)) >= 60 and all(_held_out(row["message"]) for row in _rows(SET_N))
    assert not any(_held_out(row["message"]) for name in (SET_M, SET_O, SET_P, SET_T) for row in _rows(name))
    assert all(_held_out(row["message"]) for row in _rows(SET_U))
    assert len(set(messages)) == len(messages), "messages must be distinct across all files"
    for row in every:
        assert row["label"] in ("generic", "instructive"), row
        assert row["source"].strip(), row
    # the issue-13 files say why each message got its label
    for name in (TUNED_FILES[2], SET_A, SET_B, SET_C, SET_D, SET_E, SET_I, SET_J, SET_K, SET_H, SET_L, SET_M, SET_O, SET_N, SET_P, SET_Q, SET_R, SET_S, SET_T, SET_U, SET_V, SET_W, SET_DEV2, SET_DEV3, SET_X, SET_Y):
        assert all(row["note"].strip() for row in _rows(name)), name
    # every distinct error result of the tau2-bench files is in the set
    assert sum("tau2-bench" in row["source"] for row in _rows(TUNED_FILES[0])) >= 22


def test_precision_and_recall_of_the_generic_verdict(capsys) -> None:  # type: ignore[no-untyped-def]
    report = {name: scores(rows) for name, rows in splits().items()}
    with capsys.disabled():
        for name, s in report.items():
            print(f"\nlint accuracy [{name}] n={s['n']} precision={s['precision']:.3f} recall={s['recall']:.3f}")
    for name, (min_precision, min_recall) in FLOORS.items():
        s = report[name]
        assert s["precision"] >= min_precision and s["recall"] >= min_recall, (name, s)


def test_docs_figures_are_current() -> None:
    doc = DOCS.read_text(encoding="utf-8")
    assert START in doc and END in doc
    assert render(doc) == doc, "run: python tests/test_lint_accuracy.py docs/lint.md"


def test_non_english_and_remedied_messages_are_not_flagged_for_saying_error() -> None:
    for text in (
        "FEHLER:  Relation »users« existiert nicht",
        "Erreur : le champ « date » doit être au format AAAA-MM-JJ",
        "Error: invalid date 'next friday'. Use YYYY-MM-DD, e.g. 2026-03-15.",
        "Error: room_type must be one of 'single', 'double', 'suite'.",
    ):
        assert not lint_message(text).generic, text


def test_scores_hold_when_each_template_counts_once(capsys) -> None:  # type: ignore[no-untyped-def]
    """A few texts share a template (nine "Patient <id> not found" from tau2-bench).

    Counting each template once keeps a rule that happens to suit one frequent
    template from carrying the score.
    """
    from loopscope.analyses.lint.templates import template_of

    firsts: dict[str, dict[str, str]] = {}
    for row in splits()["development"] + splits()["held-out third"]:
        firsts.setdefault(template_of(row["message"]), row)
    assert len(firsts) >= 250
    s = scores(list(firsts.values()))
    with capsys.disabled():
        print(f"\nlint accuracy [one per template] n={s['n']} precision={s['precision']:.3f} recall={s['recall']:.3f}")
    assert s["precision"] >= 0.9 and s["recall"] >= 0.9


def errors_report() -> str:
    """Every set's figures and its false alarms (FP) and misses (FN), with the rules that fired."""
    out: list[str] = []
    for name, rows in splits().items():
        s = scores(rows)
        out.append(f"{name}: n={s['n']} generic={s['generic']} precision={s['precision']:.3f} recall={s['recall']:.3f}")
        for row in rows:
            result = lint_message(row["message"])
            if result.generic != (row["label"] == "generic"):
                kind = "FP" if result.generic else "FN"
                out.append(f"  {kind} {result.rule_ids} {row['message'][:200]!r}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--errors"]:
        # the reporting mode: reading it makes every set a tuning set (see the module docstring)
        sys.stdout.write(errors_report())
    else:
        target = Path(sys.argv[1] if len(sys.argv) > 1 else DOCS)
        target.write_text(render(target.read_text(encoding="utf-8")), encoding="utf-8")
