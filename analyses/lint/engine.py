"""Run the rule catalog over one error message.

``lint_message(text)`` returns a ``LintResult``: the findings of every rule
that fires, and the ``generic`` verdict (a finding of a rule whose
``generic`` flag is set: the text leaves the model guessing what went wrong or
what to do next). The wording fallbacks (generic wording, vague) only fire
when no more specific wording rule already explains the message, so each
message gets the most precise finding.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from loopscope.analyses.hints import Hint, match
from loopscope.analyses.lint.explain import evidence, suggestion
from loopscope.analyses.lint.rules import FALLBACK_RULES, RULES, Context
from loopscope.analyses.lint.checks import RETRY_GUIDANCE_RE
from loopscope.analyses.lint.text import MessageView, read_message


# Rules whose advice depends on the error family: their rewrite comes from the
# recovery catalog entry the message matches (an invalid *date* gets the date advice).
HINT_BACKED_RULES = frozenset({"LS103", "LS104", "LS105", "LS109"})


# A family whose advice does not fit the rule: "Unknown room type 'premium'" matches the lookup family,
# but LS105's advice (say what a valid value looks like) is the one that applies.
_UNFIT_FAMILIES = {"LS105": frozenset({"not_found"}), "LS104": frozenset({"validation", "date_format"})}


def _rewrite(rule_id: str, default: str, family: Hint | None) -> str:
    if rule_id in HINT_BACKED_RULES and family is not None and family.key not in _UNFIT_FAMILIES.get(rule_id, ()):
        return family.rewrite
    return default


# Said in the output when a message is not English prose, so a quiet verdict is not read as a pass.
NOT_ENGLISH_NOTE = (
    "not English: the wording rules (LS101, LS104, LS105, LS106, LS113) were not applied; the structural rules "
    "(status, exception, stack trace, HTML, secrets, injection, JSON fields) were"
)


@dataclass(frozen=True)
class Finding:
    """One rule that fired on a message.

    ``reason`` and ``rewrite`` are the rule's (the same for every message);
    ``evidence`` says what in this message triggered it (or what the rule looked
    for and did not find) and ``suggestion`` is this message rewritten along
    the rule's direction, reusing its own nouns.
    """

    rule_id: str
    severity: str
    reason: str
    rewrite: str
    evidence: str = ""
    suggestion: str = ""


@dataclass(frozen=True)
class LintResult:
    """The verdict on one message."""

    message: str
    generic: bool
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def has_error(self) -> bool:
        """A rule of severity ``error`` fired (``loopscope lint --message`` exits 1)."""
        return any(f.severity == "error" for f in self.findings)

    @property
    def rule_ids(self) -> list[str]:
        """Ids of the rules that fired, in catalog order."""
        return [f.rule_id for f in self.findings]

    def to_dict(self) -> dict[str, object]:
        """``{message, generic, findings: [{rule_id, severity, reason, rewrite, evidence, suggestion}], notes}``."""
        return {
            "message": self.message,
            "generic": self.generic,
            "findings": [asdict(f) for f in self.findings],
            "notes": list(self.notes),
        }


def lint_message(text: str, *, is_error: bool = True, outcome: str | None = None) -> LintResult:
    """Lint one error text.

    Args:
        text: the error message as the model saw it (plain text or a JSON body).
        is_error: whether the tool result was marked as an error; ``False`` with
            a failure in the text or outcome is a silent error (LS130).
        outcome: the collector's ``outcome`` for the call, when known
            (``ok``, ``retried``, ``transient_fail``, ``permanent_fail``).

    Returns:
        The findings and the ``generic`` verdict.
    """
    return lint_view(read_message(text or ""), text, is_error=is_error, outcome=outcome)


def lint_view(view: MessageView, text: str, *, is_error: bool = True, outcome: str | None = None) -> LintResult:
    """``lint_message`` of a text already read (``read_message(text or "")``): a caller that also
    wants its ``checklist_of`` reads it once."""
    ctx = Context(is_error=is_error, outcome=outcome)
    fired = [rule for rule in RULES if rule.id not in FALLBACK_RULES and rule.check(view, ctx)]
    if not any(rule.generic for rule in fired):
        fired += [rule for rule in RULES if rule.id in FALLBACK_RULES and rule.check(view, ctx)]
        fired.sort(key=lambda rule: RULES.index(rule))
    # A silent error's text is judged as an error text only when it was meant as one;
    # success payloads are not error messages, so wording rules stay quiet for them.
    if not is_error and not any(rule.id == "LS130" for rule in fired):
        fired = [rule for rule in fired if not rule.generic]
    family = match(None, view.prose) if any(rule.id in HINT_BACKED_RULES for rule in fired) else None
    findings = []
    for rule in fired:
        rewrite = _rewrite(rule.id, rule.rewrite, family)
        findings.append(
            Finding(rule.id, rule.severity, rule.reason, rewrite, evidence(rule.id, view, ctx), suggestion(rule.id, view, rewrite))
        )
    notes = [NOT_ENGLISH_NOTE] if not view.english and view.body else []
    return LintResult(message=text, generic=any(rule.generic for rule in fired), findings=findings, notes=notes)


CHECKLIST_ITEMS = {
    "names_value": "names the value",
    "remedy": "says what is expected or what to do",
    "retry_guidance": "says whether to retry",
}


def checklist(text: str) -> dict[str, bool]:
    """What an error text already gives the model, after seed 003's rewrite checklist.

    The rewrite direction of a finding is general; this says which parts this
    particular text has and which it lacks, as the rules read it: the value or
    field it failed on (``names_value``), the expected form or a next step
    (``remedy``), and whether or when to retry (``retry_guidance``).
    """
    return checklist_of(read_message(text or ""))


def checklist_of(view: MessageView) -> dict[str, bool]:
    """``checklist`` of a text already read (``read_message``)."""
    return {
        "names_value": bool(view.specifics),
        "remedy": view.has_remedy,
        "retry_guidance": bool(RETRY_GUIDANCE_RE.search(view.raw)),
    }
