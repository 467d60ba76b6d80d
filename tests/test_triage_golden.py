"""Golden files: ``loopscope triage`` as rendered for the sample_logs/ scenarios.

One conversation per error class and per incident kind (recovered only,
gave_up, aborted, open, retry loop, replay short-circuited, replay executed
again, transient failure retried, tool switch, budget exceeded). tool_call ids
and timestamps are normalised (ids numbered, digits of times zeroed) so that a change in the demo's id scheme or
clock does not hide a change in what triage shows.

Regenerate after an intended change with::

    LOOPSCOPE_UPDATE_GOLDEN=1 python -m pytest tests/test_triage_golden.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

REPO = Path(__file__).resolve().parent.parent
SAMPLE_LOGS = REPO / "sample_logs"
GOLDEN = Path(__file__).resolve().parent / "fixtures" / "triage_golden"

SCENARIOS = [
    "c01-date-corrective",  # recovered: invalid date fixed on the next call
    "c02-date-blind",  # gave_up: three bad dates, then an answer without a booking
    "c05-date-crash",  # aborted: the loop crashed on the tool error (exit error)
    "c24-died-corrective",  # open: the process died after the first call of p2
    "c10-conflict-blind",  # retry loop: the same conflicting reservation three times
    "c09-conflict-corrective",  # recovered by switching tools
    "c14-noname-corrective",  # gave_up in p1 (asked the user), p2 fine
    "b05-deposit-corrective",  # transient_fail after 3 attempts, recovered
    "b07-replay-corrective",  # replays short-circuited by the idempotency layer
    "b08-replay-reexecuted-corrective",  # the same tool_call_id executed again
    "c18-budget-corrective",  # budget_exceeded, no tool error
]

_TOOLU = re.compile(r"\btoolu_[0-9a-f]+")
_TS = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?")


def normalise(text: str) -> str:
    """Number tool_call ids by first appearance and zero timestamps, keeping widths; drop trailing spaces."""
    ids: dict[str, str] = {}

    def _id(m: re.Match[str]) -> str:
        # same width as the id it replaces, so table and panel borders stay aligned
        width = len(m.group(0)) - len("toolu_")
        return ids.setdefault(m.group(0), f"toolu_{len(ids) + 1:0{width}d}")

    text = _TOOLU.sub(_id, text)
    text = _TS.sub(lambda m: re.sub(r"\d", "0", m.group(0)), text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


@pytest.fixture(scope="module")
def db(loaded_store_template: Callable[[Path], Path], tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("golden") / "sample.duckdb"
    shutil.copyfile(loaded_store_template(SAMPLE_LOGS), path)
    return str(path)


@pytest.mark.parametrize("conversation", SCENARIOS)
def test_triage_golden(db: str, conversation: str) -> None:
    result = CliRunner().invoke(app, ["triage", conversation, "--db", db], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    got = normalise(result.stdout)
    golden = GOLDEN / f"{conversation}.txt"
    if os.environ.get("LOOPSCOPE_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(got, encoding="utf-8")
    assert golden.exists(), f"missing {golden}: run with LOOPSCOPE_UPDATE_GOLDEN=1"
    assert got == golden.read_text(encoding="utf-8")


def _expected_first_unrecovered() -> dict[str, dict[str, object]]:
    # sample_logs/EXPECTED.md carries the hand-derived answer as a JSON block.
    text = (SAMPLE_LOGS / "EXPECTED.md").read_text(encoding="utf-8")
    block = text.split("<!-- first-unrecovered-json -->", 1)[1]
    body = block.split("```json", 1)[1].split("```", 1)[0]
    return json.loads(body)


def test_unrecovered_lists_exactly_the_expected_conversations(db: str) -> None:
    expected = _expected_first_unrecovered()
    result = CliRunner().invoke(app, ["unrecovered", "--db", db, "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert sorted(r["conversation_id"] for r in rows) == sorted(expected)
    for row in rows:
        want = expected[row["conversation_id"]]
        assert {k: row[k] for k in want} == want
    # newest first
    assert [r["last_ts"] for r in rows] == sorted((r["last_ts"] for r in rows), reverse=True)


@pytest.mark.parametrize("conversation", SCENARIOS)
def test_triage_json_matches_expected(db: str, conversation: str) -> None:
    expected = _expected_first_unrecovered().get(conversation)
    result = CliRunner().invoke(app, ["triage", conversation, "--db", db, "-f", "json"], catch_exceptions=False)
    first = json.loads(result.stdout)["first_unrecovered"]
    if expected is None:
        assert first is None
    else:
        assert {k: first[k] for k in expected} == expected
