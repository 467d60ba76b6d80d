"""Bidi controls and invisible format characters in log text reach no output raw (issue 22, item 7).

A tool name with U+202E (right-to-left override) displays reversed ("Trojan Source"); the
terminal already showed such characters as escapes, the HTML audit and the Markdown review
pack did not. Here every output of the user's path is checked on the audit fixture with those
characters put into tool names and error messages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.analyses.untrusted import UNSAFE_RE, visible
from loopscope.cli.app import app
from loopscope.cli.render.output import plain

FIXTURE = Path(__file__).parent / "fixtures" / "audit" / "cohorts.jsonl"
runner = CliRunner()
# RLO, LRE, RLE, PDF, LRO, isolates LRI/RLI/FSI/PDI, marks, zero-width space/joiners, word joiner, BOM.
SNEAKY = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u200b\u200c\u200d\u2060\ufeff"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    src = tmp_path / "bidi.jsonl"
    lines = []
    for raw in FIXTURE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(raw)
        if rec.get("tool_name"):
            rec["tool_name"] = "get\u202e" + rec["tool_name"] + "\u2066x\u2069"
        if rec.get("error_message"):
            rec["error_message"] = rec["error_message"] + " " + SNEAKY + "gnp.exe"
        lines.append(json.dumps(rec, ensure_ascii=False))
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = tmp_path / "t.duckdb"
    res = runner.invoke(app, ["load", str(src), "--db", str(path)])
    assert res.exit_code == 0, res.output
    return path


def assert_inert(text: str, where: str) -> None:
    raw = [f"U+{ord(c):04X}" for c in set(text) if c in SNEAKY]
    assert not raw, f"{where}: raw {raw}"


def test_one_definition_covers_every_sneaky_character() -> None:
    assert all(UNSAFE_RE.fullmatch(c) for c in SNEAKY)
    assert visible("a\u202eb") == plain("a\u202eb") == "a\\u202eb"
    assert visible("tab\tand\nnewline é 中") == "tab\tand\nnewline é 中"


def test_html_audit_shows_bidi_controls_as_escapes(db: Path, tmp_path: Path) -> None:
    page = tmp_path / "audit.html"
    res = runner.invoke(app, ["audit", "--db", str(db), "--html", str(page), "--format", "json", "--limit", "20"])
    assert res.exit_code == 0, res.output
    html = page.read_text(encoding="utf-8")
    assert_inert(html, "audit HTML")
    assert "get\\u202e" in html
    assert_inert(res.stdout, "audit JSON")


def test_review_pack_shows_bidi_controls_as_escapes(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "pack"
    res = runner.invoke(app, ["sample", "--db", str(db), "--week", "2026-W46", "--n", "19", "--seed", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    files = [out / "index.md", out / "reviews.csv", *sorted((out / "conversations").glob("*.md"))]
    text = "".join(f.read_text(encoding="utf-8") for f in files)
    for f in files:
        assert_inert(f.read_text(encoding="utf-8"), f.name)
    assert "\\u202e" in text


@pytest.mark.parametrize(
    "args",
    [["audit", "--limit", "20"], ["audit", "--format", "json"], ["unrecovered"], ["unrecovered", "--format", "json"],
     ["unrecovered", "--format", "csv"], ["metrics", "--format", "csv"]],
    ids=lambda a: " ".join(a),
)
def test_terminal_json_and_csv_outputs(db: Path, args: list[str]) -> None:
    res = runner.invoke(app, [*args, "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert_inert(res.stdout, " ".join(args))
