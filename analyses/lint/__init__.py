"""Lint tool error messages: rules, verdicts, templates and their impact.

- ``lint_message(text)``: findings and the ``generic`` verdict for one message.
- ``RULES``: the catalog (stable ids, severity, reason, rewrite direction).
- ``template_of(text)``: the message with values replaced by placeholders.
- ``rank_templates(con, selection)``: templates per tool ranked by what they cost.
"""

from __future__ import annotations

from loopscope.analyses.lint.engine import Finding, LintResult, lint_message
from loopscope.analyses.lint.rules import RULES, RULES_BY_ID, Rule

__all__ = ["RULES", "RULES_BY_ID", "Finding", "LintResult", "Rule", "lint_message"]
