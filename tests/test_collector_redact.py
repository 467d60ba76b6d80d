"""Secrets are redacted from error text; the text stays readable; length is capped."""

from __future__ import annotations

import pytest
from loopscope.collectors import MAX_ERROR_CHARS, clean_error_text, redact_secrets

# Test-only fake credentials shaped like the real formats.
CASES = [
    ("Anthropic key sk-ant-api03-Zx9_aaaaBBBBccccDDDDeeee rejected", "Anthropic key [REDACTED] rejected"),
    (
        "OpenAI: Incorrect API key provided: sk-proj-AbCdEfGhIjKlMnOpQrStUv12",
        "OpenAI: Incorrect API key provided: [REDACTED]",
    ),
    ("legacy sk-1234567890abcdefghijklmn", "legacy [REDACTED]"),
    ("stripe sk_live_51HxxxxxxxxxxxxYyy failed", "stripe [REDACTED] failed"),
    ("AWS AKIAIOSFODNN7EXAMPLE denied", "AWS [REDACTED] denied"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789 expired", "token [REDACTED] expired"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "[REDACTED]"),
    ("slack xoxb-123456789012-abcdefghijkl", "slack [REDACTED]"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstuv", "google [REDACTED]"),
    ("401 with header Authorization: Bearer abc.def-ghi_123", "401 with header Authorization: Bearer [REDACTED]"),
    ("Basic dXNlcjpwYXNzd29yZA== was refused", "Basic [REDACTED] was refused"),
    (
        "connect postgres://app:s3cr3t!@db.internal:5432/x failed",
        "connect postgres://app:[REDACTED]@db.internal:5432/x failed",
    ),
    (
        "GET https://user:pa55@api.example.com/v1?api_key=abc123&q=paris -> 403",
        "GET https://user:[REDACTED]@api.example.com/v1?api_key=[REDACTED]&q=paris -> 403",
    ),
    ('config {"password": "hunter2", "user": "bob"}', 'config {"password": "[REDACTED]", "user": "bob"}'),
    (
        "token=abc123; secret: xyz; passwd=p; apikey=k1",
        "token=[REDACTED]; secret: [REDACTED]; passwd=[REDACTED]; apikey=[REDACTED]",
    ),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U bad",
        "jwt [REDACTED] bad",
    ),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- leaked", "[REDACTED] leaked"),
    # Realistic messages from SDKs and tools, as they appear in tool errors.
    (
        "AuthenticationError: Error code: 401 - invalid x-api-key sk-ant-api03-AbCdEf0123456789_-AbCdEf01234567",
        "AuthenticationError: Error code: 401 - invalid x-api-key [REDACTED]",
    ),
    ("stripe: No such customer; key rk_live_51H8xYzAbCdEf0123456789abcdef", "stripe: No such customer; key [REDACTED]"),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key=[REDACTED]"),
    ("AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY: [REDACTED]"),
    (
        "git clone https://x-access-token:ghs_AbCdEf0123456789AbCdEf0123456789AbCd@github.com/o/r failed",
        "git clone https://x-access-token:[REDACTED]@github.com/o/r failed",
    ),
    (
        "POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX -> 404",
        "POST https://hooks.slack.com/services/[REDACTED] -> 404",
    ),
    (
        "GET https://api.example.com/v1/users?user=bob&password=hunter2&page=2 returned 403",
        "GET https://api.example.com/v1/users?user=bob&password=[REDACTED]&page=2 returned 403",
    ),
    ("redis://:s3cretP%40ss@cache:6379/0 connection refused", "redis://:[REDACTED]@cache:6379/0 connection refused"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "[REDACTED]",
    ),
    ("npm ERR! 401 token npm_AbCdEf0123456789AbCdEf0123456789AbCd", "npm ERR! 401 token [REDACTED]"),
    ("HF: Invalid token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "HF: Invalid token [REDACTED]"),
    ("sendgrid SG.AbCdEfGhIjKlMnOpQrStUv.AbCdEfGhIjKlMnOpQrStUvWxYz0123 401", "sendgrid [REDACTED] 401"),
    ("password: correcthorse", "password: [REDACTED]"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_secret_formats_are_redacted(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Invalid date format. Use YYYY-MM-DD.",
        "User not found. Try search_users first to find the right ID.",
        "Rate limit exceeded. Retry after 60 seconds.",
        "Room type 'suite' is unknown; valid: single, double, family.",
        "task-1234 failed at https://example.com/path",
        "Token limit of 4096 exceeded",
        "Token budget exceeded; Basic authentication failed; Bearer authentication required",
        "Task sk-learn-model-training-pipeline failed",
        "token: expected a non-empty string",
        "password must be at least 8 characters",
        "KeyError: 'session_token'",
        "field 'password' is required",
        "see https://docs.example.com/errors#token for details",
        "Bearer token expired; refresh it",
    ],
)
def test_ordinary_error_text_is_untouched(text: str) -> None:
    assert redact_secrets(text) == text


def test_cap_and_redaction_together() -> None:
    secret = "sk-ant-api03-" + "A" * 40
    text = "x" * 1990 + secret + "y" * 20_000
    out = clean_error_text(text)
    assert len(out) == MAX_ERROR_CHARS and "AAAA" not in out and out.endswith("[truncated]")
    assert clean_error_text("short") == "short"
    assert clean_error_text(ValueError("v")) == "v"


# Shapes a hostile probe found passing (issue 22), and the ones gitleaks / detect-secrets name.
WIDER = [
    ("S3 said: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY is invalid", "S3 said: [REDACTED] is invalid"),
    (
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYg==;EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED];EndpointSuffix=core.windows.net",
    ),
    (
        "GET https://acme.blob.core.windows.net/c/b?sv=2022-11-02&se=2026-01-01&sp=r&sig=AbC%2Fdef123xyz%3D -> 403",
        "GET https://acme.blob.core.windows.net/c/b?sv=2022-11-02&se=2026-01-01&sp=r&sig=[REDACTED] -> 403",
    ),
    (
        'Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=abcDEF123+/xyz=',
        "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=[REDACTED]",
    ),
    (
        'bad credentials {"type": "service_account", "private_key_id": "3f2a9c0d1e4b5a6f7e8d9c0b1a2f3e4d5c6b7a8f"}',
        'bad credentials {"type": "service_account", "private_key_id": "[REDACTED]"}',
    ),
    ("request headers: Cookie: session=9f8e7d6c; theme=dark", "request headers: Cookie: [REDACTED]"),
    ('headers {"Cookie": "sid=abc123; csrftoken=xyz"}', 'headers {"Cookie": "[REDACTED]"}'),
    ("Set-Cookie: sid=abc123; Path=/; HttpOnly", "Set-Cookie: [REDACTED]"),
    ("login failed with password hunter2 for bob", "login failed with password [REDACTED] for bob"),
    ("the password is s3cret! (rotated)", "the password is [REDACTED] (rotated)"),
    ("passwd: abc&def&ghi", "passwd: [REDACTED]"),
    ("AWS ABIAIOSFODNN7EXAMPL2 and A3TXIOSFODNN7EXAMPL3", "AWS [REDACTED] and [REDACTED]"),
]


@pytest.mark.parametrize(("text", "expected"), WIDER)
def test_wider_secret_shapes_are_redacted(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a9c0d1e4b5a6f7e8d9c0b1a2f3e4d5c6b7a8f not found",  # a git hash: hex, lower case
        "fingerprint 2a6c60ef284f199e24941b35c46c1b99c82037b66d1755ad3fa34d09e26fdafa",
        "password must be at least 8 characters",
        "password reset required; password is wrong",
        "cookie banner not dismissed",
        "the signature check failed (sig mismatch)",
        "id 0f8fad5b-d9cb-469f-a165-70867728950e",
    ],
)
def test_wider_rules_leave_ordinary_text(text: str) -> None:
    assert redact_secrets(text) == text


@pytest.mark.xdist_group("timing")  # a timing ratio: never alongside another timing test (tests/conftest.py)
def test_redaction_time_is_linear_in_the_text() -> None:
    import time

    def cost(n: int) -> float:
        text = ("a" * 39 + "/") * (n // 40) + "password " + "x" * n
        t = time.thread_time()  # CPU time of this thread: other jobs on a busy machine do not count
        redact_secrets(text)
        return time.thread_time() - t

    small, big = min(cost(20_000) for _ in range(5)), min(cost(160_000) for _ in range(5))
    assert big < 8 * small * 3  # 8x the text: well under the 64x of a quadratic pass


# The gates (needles a rule's match must contain) only skip work: with or without them, the same
# text comes out. Texts are built from pieces of every secret shape, their near misses, separators
# and prose, in any case, so that gates, replacements and later rules meet in every order.
_PIECES = [
    "sk-ant-api03-AbCdEf0123456789_-AbCdEf", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "rk_test_abcdefghij12",
    "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nat",
    "ghp_0123456789abcdefghijABCDEFGHIJ", "github_pat_11ABCDEFG0123456789_abcdef", "xoxb-1234567890-abcdefghij",
    "hooks.slack.com/services/T000/B000/XXXXXXXX", "npm_0123456789abcdefghijABCDEFGHIJ0123",
    "hf_0123456789abcdefghijABCDEFGHIJ0123", "SG.abcdefghijklmnop0123.qrstuvwxyz0123456789",
    "AIzaSyA0123456789abcdefghijABCDEFGHIJ", "Bearer abc.def-123", "Basic dXNlcjpwYXNz", "Token budget",
    "https://user:hunter2@example.com/x", "AccountKey=abc+def/ghi==;", "?sv=2020&sig=abcDEF%2B123&se=1",
    "Cookie: session=abc; id=1", "api_key=abc123", "\"password\": \"s3cr3t!\"", "token: expected a string",
    "password must be at least 8 characters", "the password is s3cret!", "pwd x9y8z7",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----", "secret", "key", "=", ":", " ", "\n",
    "Error:", "not found", "OPENAI_API_KEY=", "x-api-key: abcdef123", "[REDACTED]", "passphrase=",
    "pa\u017f\u017fword=hunter2", "api_\u212aey=abc123", "\u00e9t\u00e9",
]


def _redact_without_gates(text: str) -> str:
    from loopscope.collectors.redact import _RULES

    for pattern, repl, _gate in _RULES:
        text = pattern.sub(repl, text)
    return text


def test_the_gates_skip_work_never_a_secret() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    piece = st.sampled_from(_PIECES).flatmap(
        lambda p: st.sampled_from([p, p.lower(), p.upper()]))

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.lists(piece, max_size=12).map("".join))
    def check(text: str) -> None:
        assert redact_secrets(text) == _redact_without_gates(text)

    check()
    for text in _PIECES:
        assert redact_secrets(text) == _redact_without_gates(text)
