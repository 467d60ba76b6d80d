"""docs/lint.md lists the rule catalog as the code defines it."""

from __future__ import annotations

from pathlib import Path

from loopscope.analyses.lint import RULES
from loopscope.analyses.lint.docs import main, render

DOC = Path(__file__).resolve().parent.parent / "docs" / "lint.md"


def test_rules_section_is_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert render(text) == text, "run: python -m loopscope.analyses.lint.docs docs/lint.md"
    assert main([str(DOC), "--check"]) == 0
    for rule in RULES:
        assert f"### {rule.id} {rule.name}" in text


def test_check_detects_a_stale_section(tmp_path: Path) -> None:
    stale = tmp_path / "lint.md"
    stale.write_text("intro\n<!-- RULES:START -->\nold\n<!-- RULES:END -->\nend\n", encoding="utf-8")
    assert main([str(stale), "--check"]) == 1
    assert main([str(stale)]) == 0
    assert main([str(stale), "--check"]) == 0
    assert stale.read_text(encoding="utf-8").endswith("<!-- RULES:END -->\nend\n")
