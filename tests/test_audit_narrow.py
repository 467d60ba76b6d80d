"""The audit's tables on an 80-column terminal: every column kept, every id and tool name whole.

At 80 columns rich used to drop the tool column of "Error classes per tool" and cut every heading
('erro…', 'recover…'), and to fold ids and tool names letter by letter in the other tables
('check_availabil' / 'ity', 'send' / '_con' / 'firm'). Free text (templates, error messages) is
what gives way: it wraps, and a word too wide for its column is cut with "…".
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
WIDTH = 80

# title (start of its line) -> the words of its column headers (a header may take two lines)
TABLES = {
    "Most frequent error template per tool": "tool errors most frequent error template",
    "Error classes per tool": "tool errors recovered gave up aborted open recov % resolved later conv %",
    "Generic error messages": "tool template seen unrec. recovery rules",
    "Retry loops": "conversation / prompt tool calls exit message",
    "Replays": "conversation / prompt tool_call_id tool kind",
    "Duplicate executions": "conversation / prompt tool duplicates",
    "Budget pressure per agent": "agent prompts p99 max seen budget p99/budget budget exits share",
    "Conversations to triage first": "conversation class tool unrec. earlier tries first unrecovered error",
}
# the tables whose ids alone are wider than 80 columns (a 35-character conversation id beside a
# 28-character tool_call_id): their lines may pass the terminal's width, never cut an id
WIDER_THAN_80 = {"Replays"}


def _items(value: Any) -> list[dict[str, Any]]:
    return value["items"] if isinstance(value, dict) else value


def _sections(text: str) -> dict[str, list[str]]:
    """Each table's lines, from its title to the next table's title."""
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        title = next((t for t in TABLES if line.startswith(t)), None)
        if title is None and line[:1].isupper():
            current = None  # another section (its own title, or "…: none")
        if title is not None:
            current = title
            found[current] = []
        if current is not None:
            found[current].append(line)
    return found


@pytest.fixture(scope="module")
def narrow_audit(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, list[str]], dict[str, Any]]:
    db = str(tmp_path_factory.mktemp("narrow") / "s.duckdb")
    res = CliRunner(env={"COLUMNS": str(WIDTH)}).invoke(app, ["audit", str(SAMPLE_LOGS), "--db", db])
    assert res.exit_code == 0, res.output
    report = CliRunner().invoke(app, ["audit", "--db", db, "--format", "json"])
    assert report.exit_code == 0, report.output
    return _sections(res.stdout), json.loads(report.stdout)


# title -> (the report's list, the fields the table shows that must stay whole)
SHOWN = {
    "Most frequent error template per tool": ("tools", ("tool_name",)),
    "Error classes per tool": ("error_classes_by_tool", ("tool_name",)),
    "Generic error messages": ("generic_templates", ("tool_name", "rules")),
    "Retry loops": ("retry_loops", ("conversation_id", "prompt_id", "tool_name")),
    "Replays": ("replays", ("conversation_id", "prompt_id", "tool_call_id", "tool_name")),
    "Duplicate executions": ("duplicate_executions", ("conversation_id", "prompt_id", "tool_name")),
    "Budget pressure per agent": ("budget_pressure", ("agent",)),
    "Conversations to triage first": ("triage_first", ("conversation_id", "tool_name", "class")),
}


def _ids(report: dict[str, Any], title: str) -> set[str]:
    """What the table shows that must stay whole: ids, tool and agent names, classes, rule ids."""
    key, fields = SHOWN[title]
    items = _items(report[key])
    if key == "tools":
        items = [t for t in items if t["errors"]]  # the templates table lists the tools with errors
    shown: set[str] = set()
    for item in items:
        for field in fields:
            value = item[field]
            shown.update(value if isinstance(value, list) else [str(value)])
    return shown


@pytest.mark.parametrize("title", list(TABLES))
def test_each_audit_table_keeps_its_columns_and_whole_ids_at_80_columns(
    title: str, narrow_audit: tuple[dict[str, list[str]], dict[str, Any]]
) -> None:
    sections, report = narrow_audit
    assert title in sections, f"{title!r} missing from the audit at {WIDTH} columns"
    lines = sections[title]
    rule = next(i for i, line in enumerate(lines) if line.strip().startswith("─"))
    header_words = " ".join(lines[1:rule]).split()
    assert not [w for w in header_words if "…" in w], lines[1:rule]  # no heading cut
    for word in TABLES[title].split():  # every column, its whole heading
        assert word in header_words, f"{title}: column word {word!r} missing from {lines[1:rule]}"
    body = "\n".join(lines[rule + 1 :])
    ids = _ids(report, title)
    assert ids, title  # sample_logs has rows in every one of these tables
    for value in ids:  # on one line, as one token: never folded, never cut
        assert re.search(rf"(?<!\S){re.escape(value)}(?!\S)", body.replace(",", " ")), f"{title}: {value!r} not whole"
    if title not in WIDER_THAN_80:
        too_long = [line for line in lines if len(line.rstrip()) > WIDTH]
        assert not too_long, f"{title}: lines past {WIDTH} columns: {too_long[:2]}"


def test_long_free_text_gives_way_on_a_narrow_terminal(narrow_audit: tuple[dict[str, list[str]], dict[str, Any]]) -> None:
    # the first unrecovered errors wrap in the columns the ids leave; a word too wide is cut with "…"
    sections, report = narrow_audit
    body = "\n".join(sections["Conversations to triage first"])
    assert "…" in body
    first = _items(report["triage_first"])[0]["error_message"]
    words = [w for w in first.split() if len(w) <= 14]
    assert words and all(w in body for w in words)  # the short words of the message are all there
