"""Why a rule fired, and this message rewritten.

Every finding carries two texts besides the rule's general reason and rewrite direction:

- ``evidence``: the words in the message that triggered the rule, or what the rule
  looked for and did not find ("'not found' with no value named; looked for an id, a
  quoted value or a lookup hint: none").
- ``suggestion``: this message rewritten along the rule's direction, reusing the
  message's own nouns and values, with ``<...>`` where only the tool author knows
  what to write ("No order '<the order id looked up>'. ...").

Secrets are never echoed: LS112's evidence names the kind of data, not its value.
"""

from __future__ import annotations

import re

from loopscope.analyses.lint import checks as c
from loopscope.analyses.lint.text import (
    GENERIC_WORDS,
    INJECTION_RE,
    QUOTED_RE,
    MessageView,
)

_WORD_RE = re.compile(r"[^\W\d_]+", re.UNICODE)
_STOP = frozenset(
    "the a an is are was were be been not no of to for in on at with by from and or but this that it its your you "
    "we our has have had must should cannot can could does do did there here which what when please been being "
    "any some all such than then only also".split()
)
_MAX = 120


def _clip(text: str, width: int = _MAX) -> str:
    one = re.sub(r"\s+", " ", text).strip()
    return one if len(one) <= width else one[: width - 1].rstrip() + "…"


def _q(text: str) -> str:
    return "'" + _clip(text, 60) + "'"


def _nouns(view: MessageView) -> list[str]:
    """The message's own content words, in order: what the rewrite talks about."""
    seen: list[str] = []
    for word in _WORD_RE.findall(QUOTED_RE.sub(" ", view.body)):
        low = word.lower()
        if low in GENERIC_WORDS or low in _STOP or len(low) < 3 or low in seen:
            continue
        seen.append(low)
    return seen


def _subject(view: MessageView, default: str = "value") -> str:
    nouns = _nouns(view)
    return " ".join(nouns[:2]) if nouns else default


# What a lookup that missed was looking for: the head of the clause before "not found" ("Patient
# not found with provided name" -> patient), or the object of "could not find" ("Couldn't find that
# app" -> app).
_MISSED_BEFORE_RE = re.compile(
    r"([^\W\d_][^.:;!?\n]*?)\s+(?:was |is |were |are |could |can |does |do )?(?:not|n't|never) (?:be )?(?:found|exists?)\b",
    re.IGNORECASE,
)
_MISSED_AFTER_RE = re.compile(
    r"\b(?:could ?n[o']t|cannot|can't|unable to|did ?n[o']t|failed to) (?:find|locate) "
    r"(?:the |that |this |a |an |any |your )?([^\W\d_]+)",
    re.IGNORECASE,
)


def _looked_up(view: MessageView) -> str | None:
    """The noun a lookup that missed was looking for, from the message's own words (None when unsure)."""
    text = QUOTED_RE.sub(" ", view.body)
    m = _MISSED_AFTER_RE.search(text)
    if m:
        word = m.group(1).lower()
        return word if word not in _STOP and word not in GENERIC_WORDS else None
    m = _MISSED_BEFORE_RE.search(text)
    if not m:
        return None
    for word in _WORD_RE.findall(m.group(1).rsplit(": ", 1)[-1]):
        low = word.lower()
        if low in _STOP or low in {"error", "requested", "specified", "given", "provided"}:
            continue
        return low if len(low) >= 3 else None
    return None


def _first(regex: re.Pattern[str], text: str) -> str | None:
    m = regex.search(text)
    return m.group(0) if m else None


def evidence(rule_id: str, view: MessageView, ctx: c.Context) -> str:
    """The words that triggered ``rule_id``, or what it looked for and did not find."""
    body = view.body
    if rule_id == "LS101":
        words = _WORD_RE.findall(body)
        shown = _q(" ".join(words)) if words else "no text at all"
        return f"only generic words ({shown}); looked for a value, a field or a next step: none"
    if rule_id == "LS102":
        head = c.RUNTIME_CLASS_HEAD_RE.match(body)
        if head and not c.RUNTIME_MESSAGE_RE.search(body) and c._runtime_class_without_caller_value(view):
            return (
                f"{_q(head.group(0).rstrip(': '))} is the runtime's own exception and the message names no value the "
                "caller passed (its numbers, sizes and types are the program's); looked for a value, a path or a "
                "next step: none"
            )
        hit = _first(c.RUNTIME_MESSAGE_RE, body) or _first(c.EXCEPTION_NAME_RE, body.split("\n", 1)[0].strip())
        hit = hit or _first(c.EXCEPTION_LINE_RE, view.prose) or "an exception name"
        return f"{_q(hit)} is a runtime/exception message written for the programmer"
    if rule_id == "LS103":
        status = c._status(view)
        shown = body or (str(status) if status is not None else "")
        return f"{_q(shown)} is only a status or code; looked for what was wrong and what to change: none"
    if rule_id == "LS104":
        hit = _first(c.NOT_FOUND_RE, body) or "not found"
        ref = _first(c.UNNAMED_REFERENCE_RE, body)
        named = f" ({_q(ref)} refers to the value without naming it)" if ref else ""
        return f"{_q(hit)} with no value named{named}; looked for an id, a quoted value or how to find one: none"
    if rule_id == "LS105":
        hit = _first(c.INVALID_RE, body) or _first(c.REJECTED_UNSHOWN_RE, body) or "invalid"
        return f"{_q(hit)}; looked for the expected format, the allowed values or an example: none"
    if rule_id == "LS106":
        if c._only_a_position(view):
            where = _first(c.POSITION_RE, body) or "a position"
            return (
                f"the only value is where the parser stopped ({_q(where.strip())}), in input the model cannot see; "
                "looked for the token at fault or what was expected there: none"
            )
        words = [w for w in _WORD_RE.findall(body.lower()) if w not in GENERIC_WORDS]
        return (
            f"a short statement ({_q(' '.join(words) or body)}); looked for a value, a field, a limit or a next "
            "step: none"
        )
    if rule_id == "LS107":
        hit = _first(c.STACK_RE, view.raw)
        frame = None if hit is not None else _first(c.FRAME_RE, view.raw)
        if frame is not None and not view.json_keys & c.STACK_KEYS:
            return f"{_q(frame.strip())} and the frames after it: a stack trace"
        if hit is None:
            keys = sorted(view.json_keys & c.STACK_KEYS)
            return f"a stack trace in the body's {_q(keys[0]) if keys else 'stack'} field"
        return f"{_q(hit)}: a stack frame or source location"
    if rule_id == "LS108":
        hit = _first(c.HTML_RE, view.raw) or _first(c.HTML_BLOCK_TAG_RE, view.raw)
        if hit:
            return f"{_q(hit)}: HTML markup, not a message"
        return "binary/control characters or a truncated blob instead of text"
    if rule_id in ("LS109", "LS110"):
        hit = _first(c.TRANSIENT_RE, view.prose) or f"status {c._status(view)}"
        if rule_id == "LS109":
            return f"{_q(hit)} is a transient failure; looked for whether or when to retry (retry, wait, retry_after): none"
        return f"{_q(hit)} reached the model (outcome: {ctx.outcome or 'not recorded'})"
    if rule_id == "LS111":
        return f"{_q(_first(INJECTION_RE, view.raw) or 'instruction')} reads like an instruction to the model"
    if rule_id == "LS112":
        if any(r.search(view.raw) for r in c.SECRET_RES):
            kind = "a credential-shaped token"
        elif c.EMAIL_RE.search(view.raw):
            kind = "an email address"
        elif c.SSN_RE.search(view.raw):
            kind = "a social security number"
        else:
            kind = "a card number"
        return f"{kind} in the text (not repeated here)"
    if rule_id == "LS113":
        m = c.FAILURE_CLAUSE_RE.match(body)
        return f"{_q(m.group(0) if m else body)} says what failed; looked for why (a reason, errno or status) or a next step: none"
    if rule_id == "LS120":
        return "no is_retriable (or retryable) key in the JSON body"
    if rule_id == "LS121":
        return "no suggestions (or hint, next_steps) key in the JSON body"
    if rule_id == "LS122":
        return "a validation error (status 400/422 or 'valid'/'missing'/'param' in its type) without invalid_fields naming each field by JSON pointer"
    if rule_id == "LS123":
        return "a precondition or conflict without next_operation and without a named call ('call x_y first')"
    if rule_id == "LS124":
        return f"status {c._status(view) or '5xx'} without trace_id or request_id"
    if rule_id == "LS130":
        why = f"outcome is {ctx.outcome}" if ctx.outcome in ("transient_fail", "permanent_fail") else "the text starts with an error word"
        return f"is_error is false but {why}"
    return ""


def suggestion(rule_id: str, view: MessageView, default: str) -> str:
    """This message rewritten along ``rule_id``'s direction, reusing its own nouns and values."""
    body = _clip(view.body.rstrip(" ."))
    subject = _subject(view)
    if rule_id == "LS101":
        if _nouns(view):
            return f"\"{subject}: <which {subject} and what was wrong with it>; <what to do next>.\""
        return "\"<what failed> '<the value it failed on>': <why>; <what to do next>.\""
    if rule_id == "LS102":
        key = re.match(r"KeyError: ['\"]([^'\"]+)['\"]", body)
        if key:
            return f"\"<the record> has no '{key.group(1)}'; pass {key.group(1)} (<where to get it>).\""
        return "\"<what the tool could not do, in the caller's terms>; <whether retrying can help>.\" (log the exception with a trace id)"
    if rule_id == "LS103":
        status = c._status(view)
        head = f"{status} " if status is not None else ""
        return f"\"{head}{body or 'error'}: <what was wrong with the request>; <what to change>.\""
    if rule_id == "LS104":
        thing = _looked_up(view) or _subject(view, "record")
        return f"\"No {thing} '<{thing} id>'. <what a valid one looks like>; use <lookup tool> to find one.\""
    if rule_id == "LS105":
        return f"\"{body}; expected <format or allowed values>, e.g. <example>.\""
    if rule_id == "LS106":
        return f"\"{body}: <the {subject} value or limit involved>; <next step>.\""
    if rule_id == "LS113":
        return f"\"{body}: <why it failed>; <what to do next>.\""
    if rule_id == "LS109":
        return f"\"{body}. Retry after <N> seconds with the same arguments.\""
    if rule_id in ("LS107", "LS108"):
        status = c._status(view)
        code = f" ({status})" if status is not None else ""
        return f"\"<what the tool could not do>{code}; <retry or not>. (trace_id <id>)\""
    return default
