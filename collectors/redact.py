"""Secret redaction and length capping for error text.

Error messages often quote what failed: a URL with credentials, an ``Authorization`` header, a
config line. The model already saw that text, but the log must not keep it. Patterns cover common
key formats; the replacement keeps the surrounding words so the message stays readable for triage
and lint (``password=[REDACTED]``, ``Bearer [REDACTED]``).
"""

from __future__ import annotations

import re

MAX_ERROR_CHARS = 2000
REDACTED = "[REDACTED]"
_TRUNCATED = "... [truncated]"

_SECRET_KEYS = (
    r"(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|client[_-]?secret|secret|"
    r"access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token|token|"
    r"password|passwd|pwd|authorization|x-api-key)"
)
_SECRET_VALUE = r"(?!\[REDACTED\]|(?:Bearer|Basic|Token)\s)[^\s\"'&,;}]+"

# (pattern, replacement); order matters: specific formats first, generic key=value pairs last.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), r)
    for p, r in (
        # PEM private keys, whole block.
        (r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", REDACTED),
        # JSON Web Tokens: three base64url segments, the first one a JSON header.
        (r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*", REDACTED),
        # Anthropic (sk-ant-...), OpenAI (sk-..., sk-proj-...), Stripe (sk_live_, rk_test_, ...).
        # A digit is required, so hyphenated words ("sk-learn-pipeline") are left alone.
        (r"\bsk-(?=[A-Za-z_-]{0,64}[0-9])[A-Za-z0-9_-]{16,}", REDACTED),
        (r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{10,}", REDACTED),
        # AWS access key ids.
        (r"\b(?:AKIA|ASIA|AIDA|AROA)[0-9A-Z]{16}\b", REDACTED),
        # GitHub tokens (classic and fine-grained).
        (r"\bgh[pousr]_[A-Za-z0-9]{20,}", REDACTED),
        (r"\bgithub_pat_[A-Za-z0-9_]{20,}", REDACTED),
        # Slack tokens.
        (r"\bxox[abposr]-[A-Za-z0-9-]{10,}", REDACTED),
        # Slack incoming webhooks: the path is the credential.
        (r"(hooks\.slack\.com/services/)[A-Za-z0-9/_-]{8,}", r"\1" + REDACTED),
        # npm, Hugging Face and SendGrid tokens.
        (r"\bnpm_[A-Za-z0-9]{30,}", REDACTED),
        (r"\bhf_[A-Za-z0-9]{30,}", REDACTED),
        (r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", REDACTED),
        # Google API keys.
        (r"\bAIza[0-9A-Za-z_-]{30,}", REDACTED),
        # Authorization schemes: keep the scheme word, drop the credential. The credential must
        # hold a digit or symbol, so prose ("Basic authentication", "Token budget") is left alone.
        (r"\b([Bb]earer|Basic|Token)(\s+)(?=[A-Za-z._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{6,}", r"\1\2" + REDACTED),
        # user:password@host in URLs: keep the user, drop the password.
        # (bounded repeats and a word boundary: no quadratic backtracking on long words)
        (r"\b([A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@]{0,256}):[^\s@/]{1,256}@", r"\1:" + REDACTED + "@"),
        # key=value / "key": "value" / key: value pairs whose key names a secret. After ":" an
        # unquoted lowercase word followed by more words is prose ("token: expected a string").
        (
            r"(?i)(" + _SECRET_KEYS + r"[\"']?\s*=\s*[\"']?)" + _SECRET_VALUE,
            r"\1" + REDACTED,
        ),
        (
            r"(?i)(" + _SECRET_KEYS + r"[\"']?\s*:\s*(?:[\"']|(?-i:(?![a-z]+\s+[A-Za-z]))))" + _SECRET_VALUE,
            r"\1" + REDACTED,
        ),
    )
)


def redact_secrets(text: str) -> str:
    """Replace secrets in ``text`` with ``[REDACTED]``.

    Args:
        text: Any error text.

    Returns:
        The text with API keys, tokens, JWTs, URL passwords and secret-named key/value pairs
        replaced.
    """
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return text


def cap(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """Cut ``text`` to at most ``limit`` characters, marking the cut."""
    if len(text) <= limit:
        return text
    return text[: limit - len(_TRUNCATED)] + _TRUNCATED


def clean_error_text(text: object, redact: bool = True, limit: int = MAX_ERROR_CHARS) -> str:
    """The error text as it goes into a record: stringified, redacted (optional), capped.

    Very long text is cut before redaction (to 4x the limit) so a huge message costs bounded time;
    a secret that starts before the final limit is still wholly inside the pre-cut and redacted.
    """
    s = text if isinstance(text, str) else str(text)
    if redact:
        if len(s) > 4 * limit:
            s = s[: 4 * limit]
        s = redact_secrets(s)
    return cap(s, limit)
