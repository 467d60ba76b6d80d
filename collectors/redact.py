"""Secret redaction and length capping for error text.

Error messages often quote what failed: a URL with credentials, an ``Authorization`` header, a
config line. The model already saw that text, but the log must not keep it. Patterns cover common
key formats; the replacement keeps the surrounding words so the message stays readable for triage
and lint (``password=[REDACTED]``, ``Bearer [REDACTED]``).

Redaction is best effort: a secret in a shape not listed here passes. The shapes follow public
secret-scanning catalogues, read as references (no code taken): gitleaks' default rules
(``config/gitleaks.toml``, MIT licence) for key prefixes (AWS ``A3T``/``ABIA``/``ACCA``, Stripe
``prod``) and Yelp's detect-secrets plugins (Apache-2.0) for the Azure storage key and the bare AWS
secret key (40 base64 characters). The expressions are written here, as data, one per shape, and
stay linear in the text's length (bounded repeats, no nested quantifiers).
"""

from __future__ import annotations

import re

MAX_ERROR_CHARS = 2000
REDACTED = "[REDACTED]"
_TRUNCATED = "... [truncated]"

_SECRET_KEYS = (
    r"(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|client[_-]?secret|secret|"
    r"access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token|token|"
    r"private[_-]?key(?:[_-]?id)?|account[_-]?key|shared[_-]?access[_-]?key|"
    r"password|passwd|passphrase|pwd|authorization|x-api-key)"
)
_SECRET_VALUE = r"(?!\[REDACTED\]|(?:Bearer|Basic|Token)\s)[^\s\"'&,;}]+"
# After ":" (a config line, a header) "&" is part of the value, not a query-string separator.
_SECRET_VALUE_COLON = r"(?!\[REDACTED\]|(?:Bearer|Basic|Token)\s)[^\s\"',;}]+"
# 40 base64 characters standing alone, with upper and lower case letters and a digit: the shape
# of an AWS secret access key (detect-secrets' AWS plugin). Hex digests (lower case only) and
# words are left alone.
_B64_40 = r"[A-Za-z0-9/+]"

# (pattern, replacement, needles); order matters: specific formats first, generic key=value pairs
# last. ``needles``: lower-case substrings of which a match must contain one (a rule is skipped
# when the lower-cased text has none: most error text holds no secret, and the case-insensitive
# key=value rules cost about 1 ms per 5 KB of text when scanned, 3 ms for all rules together), or
# a pattern the text must match first (the bare AWS key), or None (always run).
_KEYWORDS = ("key", "secret", "token", "pass", "pwd", "authorization")
_RULES: tuple[tuple[re.Pattern[str], str, tuple[str, ...] | re.Pattern[str] | None], ...] = tuple(
    (re.compile(p), r, g)
    for p, r, g in (
        # PEM private keys, whole block.
        (r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", REDACTED, ("private key",)),
        # JSON Web Tokens: three base64url segments, the first one a JSON header.
        (r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*", REDACTED, ("eyj",)),
        # Anthropic (sk-ant-...), OpenAI (sk-..., sk-proj-...), Stripe (sk_live_, rk_test_, ...).
        # A digit is required, so hyphenated words ("sk-learn-pipeline") are left alone.
        (r"\bsk-(?=[A-Za-z_-]{0,64}[0-9])[A-Za-z0-9_-]{16,}", REDACTED, ("sk-",)),
        (r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{10,}", REDACTED, ("k_live_", "k_test_")),
        # AWS access key ids (prefixes as in gitleaks' aws-access-token rule, plus AIDA/AROA).
        (r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b", REDACTED,
         ("a3t", "akia", "asia", "abia", "acca", "aida", "aroa")),
        # A bare AWS secret access key.
        (
            r"(?<![A-Za-z0-9/+=])(?=" + _B64_40 + r"{0,39}[0-9])(?=" + _B64_40 + r"{0,39}[a-z])(?="
            + _B64_40 + r"{0,39}[A-Z])" + _B64_40 + r"{40}(?![A-Za-z0-9/+=])",
            REDACTED,
            re.compile(_B64_40 + r"{40}"),
        ),
        # Azure connection strings (AccountKey=, SharedAccessKey=, SharedAccessSignature=) and
        # SAS tokens (the sig= signature of a query string).
        (
            r"(?i)\b((?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*)[^;\s\"'<>]+",
            r"\1" + REDACTED,
            ("accountkey", "sharedaccess"),
        ),
        (r"((?:^|[?&;\s])sig=)[^&\s\"';<>]+", r"\1" + REDACTED, ("sig=",)),
        # Cookie headers: the whole value (every cookie in it).
        (r"(?i)\b((?:set-)?cookie[\"']?\s*:\s*[\"']?)(?!\[REDACTED\])[^\r\n\"']+", r"\1" + REDACTED, ("cookie",)),
        # GitHub tokens (classic and fine-grained).
        (r"\bgh[pousr]_[A-Za-z0-9]{20,}", REDACTED, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
        (r"\bgithub_pat_[A-Za-z0-9_]{20,}", REDACTED, ("github_pat_",)),
        # Slack tokens.
        (r"\bxox[abposr]-[A-Za-z0-9-]{10,}", REDACTED, ("xox",)),
        # Slack incoming webhooks: the path is the credential.
        (r"(hooks\.slack\.com/services/)[A-Za-z0-9/_-]{8,}", r"\1" + REDACTED, ("hooks.slack.com/services/",)),
        # npm, Hugging Face and SendGrid tokens.
        (r"\bnpm_[A-Za-z0-9]{30,}", REDACTED, ("npm_",)),
        (r"\bhf_[A-Za-z0-9]{30,}", REDACTED, ("hf_",)),
        (r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", REDACTED, ("sg.",)),
        # Google API keys.
        (r"\bAIza[0-9A-Za-z_-]{30,}", REDACTED, ("aiza",)),
        # Authorization schemes: keep the scheme word, drop the credential. The credential must
        # hold a digit or symbol, so prose ("Basic authentication", "Token budget") is left alone.
        (r"\b([Bb]earer|Basic|Token)(\s+)(?=[A-Za-z._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{6,}", r"\1\2" + REDACTED,
         ("bearer", "basic", "token")),
        # user:password@host in URLs: keep the user, drop the password.
        # (bounded repeats and a word boundary: no quadratic backtracking on long words)
        (r"\b([A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@]{0,256}):[^\s@/]{1,256}@", r"\1:" + REDACTED + "@", ("://",)),
        # key=value / "key": "value" / key: value pairs whose key names a secret. After ":" an
        # unquoted lowercase word followed by more words is prose ("token: expected a string").
        (
            r"(?i)(" + _SECRET_KEYS + r"[\"']?\s*=\s*[\"']?)" + _SECRET_VALUE,
            r"\1" + REDACTED,
            _KEYWORDS,
        ),
        (
            r"(?i)(" + _SECRET_KEYS + r"[\"']?\s*:\s*(?:[\"']|(?-i:(?![a-z]+\s+[A-Za-z]))))" + _SECRET_VALUE_COLON,
            r"\1" + REDACTED,
            _KEYWORDS,
        ),
        # Prose: "password hunter2", "the password is s3cret!". The word after must hold a digit or
        # a symbol, so "password must be at least 8 characters" is left alone.
        (
            r"(?i)\b(pass(?:word|wd|phrase)|pwd)((?:\s+(?:is|was|set\s+to))?\s+)"
            r"(?!\[REDACTED\])(?=[^\s\"',;]{0,200}[0-9!@#$%^*+/~])[^\s\"',;]{4,200}",
            r"\1\2" + REDACTED,
            ("pass", "pwd"),
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
    # Gates compare lower-case ASCII; case-insensitive patterns also match a few non-ASCII letters
    # as ASCII ones (the long s as "s", the Kelvin sign as "k"): non-ASCII text runs every rule.
    gated = text.isascii()
    low = text.lower()
    for pattern, repl, gate in _RULES:
        if gate is not None and gated:
            if isinstance(gate, tuple):
                if not any(needle in low for needle in gate):
                    continue
            elif gate.search(text) is None:
                continue
        text, n = pattern.subn(repl, text)
        if n and gated:
            low = text.lower()  # the gates of later rules look at the text as it is now
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
