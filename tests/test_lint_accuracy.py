"""Precision and recall of the ``generic`` verdict on real, hand-labelled error messages.

tests/fixtures/error_messages.jsonl holds distinct error texts from the
tau2-bench conversations (MIT, (c) Sierra Research), public API docs, the code
of MCP servers, SDKs and tools, and the seed documents, each labelled
generic / instructive by reading it (see docs/lint.md, "Accuracy"). The rules
were written from the seeds' principles on a development split; the held-out
split (every message whose SHA-1 is divisible by 3) was not looked at while
writing them, and its numbers are reported separately.

tests/fixtures/error_messages_fresh.jsonl holds 36 more real messages
(kubectl, docker, npm, pip, botocore, Slack, Twilio, FastAPI, Django, git,
ssh, Lambda, OpenAI...) labelled after the rules were frozen and evaluated
once; its numbers are printed too, and it counts in the overall figures.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from loopscope.analyses.lint import lint_message

FIXTURE = Path(__file__).parent / "fixtures" / "error_messages.jsonl"
FRESH = Path(__file__).parent / "fixtures" / "error_messages_fresh.jsonl"
MIN_PRECISION = 0.9
MIN_RECALL = 0.8


def _rows(path: Path = FIXTURE) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _held_out(message: str) -> bool:
    return int(hashlib.sha1(message.encode("utf-8")).hexdigest(), 16) % 3 == 0


def _scores(rows: list[dict[str, str]]) -> tuple[float, float, int]:
    tp = fp = fn = 0
    for row in rows:
        predicted = lint_message(row["message"]).generic
        actual = row["label"] == "generic"
        tp += predicted and actual
        fp += predicted and not actual
        fn += actual and not predicted
    return tp / (tp + fp), tp / (tp + fn), len(rows)


def test_fixture_is_well_formed() -> None:
    rows = _rows()
    messages = [row["message"] for row in rows + _rows(FRESH)]
    assert len(rows) >= 120
    assert len(set(messages)) == len(messages), "messages must be distinct"
    for row in rows:
        assert row["label"] in ("generic", "instructive"), row
        assert row["source"].strip(), row
    # every distinct error result of the tau2-bench files is in the set
    assert sum("tau2-bench" in row["source"] for row in rows) >= 22


def test_precision_and_recall_of_the_generic_verdict(capsys) -> None:  # type: ignore[no-untyped-def]
    rows = _rows()
    fresh = _rows(FRESH)
    dev = [r for r in rows if not _held_out(r["message"])]
    held = [r for r in rows if _held_out(r["message"])]
    report = {}
    for name, part in (("all", rows + fresh), ("development", dev), ("held-out", held), ("fresh", fresh)):
        precision, recall, n = _scores(part)
        report[name] = (precision, recall)
        with capsys.disabled():
            print(f"\nlint accuracy [{name}] n={n} precision={precision:.3f} recall={recall:.3f}")
    precision, recall = report["all"]
    assert precision >= MIN_PRECISION, report
    assert recall >= MIN_RECALL, report
    held_precision, held_recall = report["held-out"]
    assert held_precision >= MIN_PRECISION and held_recall >= MIN_RECALL, report


def test_non_english_and_remedied_messages_are_not_flagged_for_saying_error() -> None:
    for text in (
        "FEHLER:  Relation »users« existiert nicht",
        "Erreur : le champ « date » doit être au format AAAA-MM-JJ",
        "Error: invalid date 'next friday'. Use YYYY-MM-DD, e.g. 2026-03-15.",
        "Error: room_type must be one of 'single', 'double', 'suite'.",
    ):
        assert not lint_message(text).generic, text


def test_scores_hold_when_each_template_counts_once(capsys) -> None:  # type: ignore[no-untyped-def]
    """The set has a few texts of one template (nine "Patient <id> not found" from tau2-bench).

    Counting each template once keeps a rule that happens to suit one frequent
    template from carrying the score.
    """
    from loopscope.analyses.lint.templates import template_of

    firsts: dict[str, dict[str, str]] = {}
    for row in _rows() + _rows(FRESH):
        firsts.setdefault(template_of(row["message"]), row)
    assert len(firsts) >= 120
    precision, recall, n = _scores(list(firsts.values()))
    with capsys.disabled():
        print(f"\nlint accuracy [one per template] n={n} precision={precision:.3f} recall={recall:.3f}")
    assert precision >= MIN_PRECISION and recall >= MIN_RECALL
