"""A static catalog of recovery suggestions, keyed by error type and message.

When a tool call fails, the model needs to know which of three recovery
patterns applies (seed 003): **retry unchanged** (a transient failure: 429,
503, timeout, lock contention), **modify and retry** (a validation failure:
fix the named argument) or **use a different tool** (a precondition is not
met, the value has to be looked up first, or the tool itself is broken).

The catalog maps an error to one of those patterns and to a few suggestions
written for the model, the way seed 000's ``RECOVERY_HINTS`` and seed 002's
``ERROR_HINTS`` do. It is deliberately static: no inference, deterministic
output, reviewable in one file. Three consumers read it:

- the collector's run-time block (``call.recovery_context()`` in
  :mod:`loopscope.collectors.recovery`), injected into the next model call
  after a failed tool call, whose *target* (the argument that names what the
  operation acted on) comes from ``TARGET_ARGUMENTS``;
- triage's "Error Recovery Context" block (``suggestions_for``), which shows
  the suggestions a harness could have injected after the failing call;
- the lint rules (``loopscope.analyses.lint``), whose rewrite directions for
  tool authors come from the ``rewrite`` field of the same entries, so the
  advice to the model and the advice to the tool author cannot disagree.

Entries are tried in catalog order and the first match wins, so specific
entries (an invalid date) come before general ones (any validation error).
An entry matches when the error type equals one of its ``types`` (compared
case-insensitively, ignoring ``_``, ``-`` and spaces) or when its pattern
matches the error type or the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RETRY_UNCHANGED = "retry_unchanged"
MODIFY_AND_RETRY = "modify_and_retry"
USE_DIFFERENT_TOOL = "use_different_tool"
RECOVERY_PATTERNS = (RETRY_UNCHANGED, MODIFY_AND_RETRY, USE_DIFFERENT_TOOL)


@dataclass(frozen=True)
class Hint:
    """One catalog entry.

    Attributes:
        key: stable name of the error family (``rate_limited``, ``not_found``, ...).
        recovery: one of ``RECOVERY_PATTERNS``.
        types: error types / codes that select this entry (exception classes,
            HTTP statuses, stable error codes, errno names).
        pattern: regex (case-insensitive) tried on the error type and message.
        suggestions: what the model should try next; ``{tool}`` is replaced by
            the tool's name (or "the tool").
        rewrite: what the tool author's error message should say instead, so the
            model would not need a harness hint at all.
    """

    key: str
    recovery: str
    types: tuple[str, ...]
    pattern: re.Pattern[str]
    suggestions: tuple[str, ...]
    rewrite: str


def _p(regex: str) -> re.Pattern[str]:
    return re.compile(regex, re.IGNORECASE)


HINTS: tuple[Hint, ...] = (
    Hint(
        key="rate_limited",
        recovery=RETRY_UNCHANGED,
        types=("RateLimitError", "TooManyRequests", "rate_limit_exceeded", "rate_limited", "429", "ThrottlingException"),
        pattern=_p(r"\b429\b|rate.?limit|too many requests|throttl|quota exceeded|slow down"),
        suggestions=(
            "Wait for the retry-after delay (or a few seconds) and call {tool} again with the same arguments",
            "Do not change the arguments: the request itself was valid",
            "If it keeps failing, tell the user the service is busy instead of calling it in a loop",
        ),
        rewrite="retry rate limits inside the tool with backoff; if they still reach the model, say so and when "
        "to retry, e.g. 'Rate limit exceeded. Retry after 60 seconds with the same arguments.'",
    ),
    Hint(
        key="timeout",
        recovery=RETRY_UNCHANGED,
        types=("TimeoutError", "Timeout", "ReadTimeout", "ConnectTimeout", "APITimeoutError", "ETIMEDOUT", "504",
               "DeadlineExceeded", "deadline_exceeded"),
        pattern=_p(r"timed?\s?out|\btimeout\b|deadline exceeded|\b504\b|gateway time-?out"),
        suggestions=(
            "Call {tool} again once with the same arguments: timeouts are often transient",
            "If it times out again, reduce the scope of the request (fewer items, a smaller range)",
            "Break the task into smaller steps",
        ),
        rewrite="retry timeouts inside the tool; if one still reaches the model, say how long it waited and "
        "whether a smaller request would help, e.g. 'search timed out after 30 s; retry, or narrow the date range'",
    ),
    Hint(
        key="connection",
        recovery=RETRY_UNCHANGED,
        types=("ConnectionError", "APIConnectionError", "ConnectionResetError", "ConnectionRefusedError",
               "ECONNRESET", "ECONNREFUSED", "EPIPE", "BrokenPipeError", "RemoteDisconnected"),
        pattern=_p(r"connection (reset|refused|aborted|closed|error)|econn(reset|refused)|broken pipe|"
                   r"network (error|unreachable)|remote end closed|temporarily unavailable"),
        suggestions=(
            "Call {tool} again with the same arguments after a short wait: the connection failed, not the request",
            "If it fails again, tell the user the service cannot be reached right now",
        ),
        rewrite="retry connection failures inside the tool with backoff; if they persist, say that the service "
        "is unreachable and whether to retry later, e.g. 'billing API unreachable (connection reset); retry in 30 s'",
    ),
    Hint(
        key="unavailable",
        recovery=RETRY_UNCHANGED,
        types=("InternalServerError", "ServiceUnavailable", "ServiceUnavailableError", "BadGateway", "overloaded_error",
               "api_error", "500", "502", "503", "529"),
        pattern=_p(r"\b50[0-3]\b|\b529\b|service unavailable|bad gateway|internal server error|overloaded|"
                   r"server error|upstream"),
        suggestions=(
            "Retry {tool} once with the same arguments after a few seconds: this is a server-side failure",
            "Do not change the arguments to work around it; if it persists, tell the user and continue without it",
        ),
        rewrite="retry 5xx responses inside the tool; when one still reaches the model, say it is a server-side "
        "failure, whether retrying may help, and include a trace id for the operator",
    ),
    Hint(
        key="file_not_found",
        recovery=MODIFY_AND_RETRY,
        types=("FileNotFoundError", "ENOENT", "NoSuchFile", "file_not_found", "NotADirectoryError", "IsADirectoryError"),
        pattern=_p(r"no such file|file not found|filenotfound|enoent|path (does not|doesn't) exist|not a directory|"
                   r"is a directory"),
        suggestions=(
            "Verify the file path exists (list the directory or search for the file name)",
            "Check for typos in the directory or file name, and whether the path should be absolute",
            "The file may have been moved or renamed earlier in this session",
        ),
        rewrite="name the path that was not found and how to find valid ones, e.g. "
        "\"File not found: src/config.ts. Use list_directory('src') to see the files that exist.\"",
    ),
    Hint(
        key="permission",
        recovery=USE_DIFFERENT_TOOL,
        types=("PermissionError", "PermissionDenied", "PermissionDeniedError", "EACCES", "EPERM", "Forbidden",
               "AccessDenied", "AccessDeniedException", "403", "forbidden", "permission_error"),
        pattern=_p(r"permission denied|access (is )?denied|forbidden|\b403\b|not (authori[sz]ed|allowed|permitted)|"
                   r"outside (of )?(the )?allowed|sandbox"),
        suggestions=(
            "Do not retry unchanged: permissions will not change between calls",
            "Check whether the target is inside the directories or resources the tool may access",
            "Use a different target or tool, or ask the user to grant access",
        ),
        rewrite="say which resource was refused and what is allowed, e.g. "
        "\"Access denied: /etc/passwd is outside the allowed directories (/workspace). Use a path under /workspace.\"",
    ),
    Hint(
        key="auth",
        recovery=USE_DIFFERENT_TOOL,
        types=("AuthenticationError", "Unauthorized", "NotAuthenticated", "401", "authentication_error",
               "invalid_api_key", "ExpiredToken"),
        pattern=_p(r"\b401\b|unauthori[sz]ed|authentication|invalid api key|api key|credentials|expired token|"
                   r"token (has )?expired|not logged in"),
        suggestions=(
            "Do not retry: the tool's credentials are missing or invalid, which the model cannot fix",
            "Tell the user that {tool} is not authorised and continue without it",
        ),
        rewrite="say that the tool's credentials failed and that retrying will not help, without echoing the "
        "credential, e.g. 'GitHub token rejected (401); ask the operator to refresh GITHUB_TOKEN. Do not retry.'",
    ),
    Hint(
        key="date_format",
        recovery=MODIFY_AND_RETRY,
        types=("invalid_date_format", "InvalidDate", "invalid_date"),
        pattern=_p(r"(invalid|not a valid|bad|malformed|unrecogni[sz]ed|unparseable)\s+(\w+\s+)?(date|time|datetime)|"
                   r"(date|time)\s+(format|is invalid|is not valid)|does not match format"),
        suggestions=(
            "Convert natural-language dates to ISO 8601 (YYYY-MM-DD, e.g. 2026-03-15) before calling {tool}",
            "Resolve relative dates ('next friday') against today's date first",
        ),
        rewrite="name the field, the value received and the expected format with an example, e.g. "
        "\"check_in 'next friday' is not a valid date: use YYYY-MM-DD, e.g. 2026-03-15.\"",
    ),
    Hint(
        key="syntax",
        recovery=MODIFY_AND_RETRY,
        types=("SyntaxError", "JSONDecodeError", "ParseError", "parse_error", "invalid_json", "YAMLError"),
        pattern=_p(r"invalid syntax|syntax error|parse error|could not parse|failed to parse|unexpected token|"
                   r"expecting value|unterminated|invalid json|malformed json"),
        suggestions=(
            "Fix the syntax of the argument the message points at (quotes, brackets, escaping) and call {tool} again",
            "Send a smaller, simpler value first to confirm the expected syntax",
        ),
        rewrite="say which argument failed to parse, where (line/column), and what was expected, e.g. "
        "\"query: unexpected ')' at column 14; expected a value after '='.\"",
    ),
    Hint(
        key="conflict",
        recovery=USE_DIFFERENT_TOOL,
        types=("Conflict", "ConflictError", "409", "412", "reservation_conflict", "already_exists", "AlreadyExists",
               "FileExistsError", "PreconditionFailed", "precondition_failed", "failed_precondition"),
        pattern=_p(r"\b409\b|\b412\b|conflict|already (exists|taken|booked|been)|precondition|"
                   r"must be \w+ before|not in (a |the )?\w+ (state|status)|state (is|was) \w+|stale"),
        suggestions=(
            "Refresh the current state with a read or list call before trying again",
            "Call the prerequisite operation first, then retry {tool}",
            "Do not repeat the same call: the state it expects is not there",
        ),
        rewrite="say which state is required and which call gets there, e.g. \"Invoice inv_123 is 'draft'; "
        "call finalize_invoice(invoice_id='inv_123') before send_invoice.\"",
    ),
    Hint(
        key="limit",
        recovery=MODIFY_AND_RETRY,
        types=("LimitExceeded", "limit_exceeded", "QuotaExceeded", "insufficient_funds", "no_rooms_available",
               "PayloadTooLarge", "413"),
        pattern=_p(r"too (many|large|long|big)|limit (exceeded|reached)|exceed(s|ed)? (the )?(limit|maximum)|"
                   r"not enough|insufficient|no (more )?\w+ available|\b413\b|out of (stock|range)"),
        suggestions=(
            "Reduce the request (fewer items, a smaller amount or range) to fit the limit",
            "Choose an alternative (another option, date or resource) and call {tool} again",
            "If no alternative fits, tell the user which limit was hit",
        ),
        rewrite="name the limit and the value that exceeded it, and an alternative, e.g. "
        "'Too many reservations: user has 5, the maximum is 5. Cancel one with cancel_reservation first.'",
    ),
    Hint(
        key="not_found",
        recovery=USE_DIFFERENT_TOOL,
        types=("NotFound", "NotFoundError", "ResourceNotFound", "ResourceNotFoundException", "404", "not_found",
               "resource_missing", "KeyError", "LookupError", "DoesNotExist", "ObjectDoesNotExist"),
        pattern=_p(r"not found|\b404\b|does not exist|doesn't exist|no such|unknown \w+|could not find|"
                   r"cannot find|can't find|no \w+ (found|matching|with)"),
        suggestions=(
            "Check the value you passed for typos and formatting; compare it with values returned earlier",
            "Look the value up with a search or list tool instead of guessing it",
            "If no tool can find it, ask the user to confirm the value rather than retrying variations",
        ),
        rewrite="name the value that was looked up and how to find a valid one, e.g. "
        "\"No patient 'PT-20451'. Patient ids look like PT-12345; use find_patient(name, dob) to get one.\"",
    ),
    Hint(
        key="validation",
        recovery=MODIFY_AND_RETRY,
        types=("ValidationError", "ValueError", "InvalidArgument", "invalid_argument", "invalid_request_error",
               "BadRequest", "BadRequestError", "UnprocessableEntityError", "400", "422", "missing_required_field",
               "TypeError"),
        pattern=_p(r"\binvalid\b|not (a )?valid|\brequired\b|\bmissing\b|must (be|have|not)|expected|malformed|"
                   r"unsupported|not supported|\b4(00|22)\b|bad request|does not add up|mismatch|out of bounds"),
        suggestions=(
            "Fix the argument the message names and call {tool} again; re-read the tool's input schema",
            "Use the expected format or one of the allowed values the message gives",
            "If a required value is missing, ask the user for it instead of inventing one",
        ),
        rewrite="name the field, what was received, and what is expected (format, allowed values or an example), "
        "e.g. \"room_type 'premium' is not valid; use one of 'single', 'double', 'suite'.\"",
    ),
    Hint(
        key="tool_bug",
        recovery=USE_DIFFERENT_TOOL,
        types=("AttributeError", "IndexError", "NameError", "ZeroDivisionError", "NullPointerException",
               "UnboundLocalError", "AssertionError", "RuntimeError", "RecursionError", "NotImplementedError"),
        pattern=_p(r"has no attribute|nonetype|index out of range|is not defined|division by zero|"
                   r"null ?pointer|undefined is not|cannot read propert|not implemented|traceback"),
        suggestions=(
            "This looks like a bug inside {tool}, not a problem with your arguments: retry unchanged at most once",
            "Try a different tool for the same goal, or tell the user the operation failed",
        ),
        rewrite="catch internal exceptions inside the tool and return a stable, sanitised error that says what the "
        "tool could not do and whether retrying can help; log the traceback with a trace id instead",
    ),
)

FALLBACK_SUGGESTIONS: tuple[str, ...] = (
    "Read the error for the field or value it names and change that argument before calling {tool} again",
    "If the error gives no clue, try a different tool or ask the user instead of repeating the same call",
)

#: Argument names that identify what an operation acts on (its *target*), most specific first:
#: the seed-000 block groups previous attempts by operation (the tool) and target, so
#: ``edit_file(path="src/config.ts", content=...)`` and ``edit_file(path="src/config.ts",
#: content=<other>)`` are two attempts at the same target. A call with none of these arguments
#: is identified by its whole arguments' fingerprint instead.
TARGET_ARGUMENTS: tuple[str, ...] = (
    "path", "file_path", "filepath", "file", "filename", "file_name", "directory", "dir",
    "url", "uri", "endpoint", "table", "resource", "key", "name", "id", "query", "command", "cmd",
)
_TARGET_SUFFIXES = ("_id", "_path", "_url", "_name")
_TARGET_SCALARS = (str, int, float)


def target_argument(arguments: object) -> str | None:
    """The name of the argument that identifies an operation's target, or None.

    The first of ``TARGET_ARGUMENTS`` present with a scalar value wins; else the first argument
    (in the caller's order) whose name ends in ``_id``, ``_path``, ``_url`` or ``_name``.
    """
    if not isinstance(arguments, dict):
        return None
    for name in TARGET_ARGUMENTS:
        value = arguments.get(name)
        if value is not None and isinstance(value, _TARGET_SCALARS) and not isinstance(value, bool):
            return name
    for name, value in arguments.items():
        if (
            isinstance(name, str)
            and name.endswith(_TARGET_SUFFIXES)
            and isinstance(value, _TARGET_SCALARS)
            and not isinstance(value, bool)
        ):
            return name
    return None


_BY_KEY = {hint.key: hint for hint in HINTS}


def _norm_type(text: str) -> str:
    return re.sub(r"[\s_\-.]", "", text).lower()


_LEADING_EXCEPTION_RE = re.compile(r"^(?:Error:\s*)?((?:\w+\.)*\w*(?:Error|Exception|Exit|Interrupt))\b")

_TYPE_INDEX: dict[str, Hint] = {}
for _hint in HINTS:
    for _t in _hint.types:
        _TYPE_INDEX.setdefault(_norm_type(_t), _hint)


def hint(key: str) -> Hint:
    """The catalog entry named ``key`` (``KeyError`` if there is none)."""
    return _BY_KEY[key]


def match(error_type: str | None, error_message: str | None) -> Hint | None:
    """The catalog entry for an error, or ``None`` when nothing matches.

    An exact (normalised) error type wins over a message pattern, except that a
    message matching a more specific entry earlier in the catalog (an invalid
    date under a ``ValueError``) takes precedence.
    """
    by_type = None
    if not error_type and error_message:
        # "KeyError: 'created_by'": a bare exception text names its own type.
        lead = _LEADING_EXCEPTION_RE.match(error_message.strip())
        error_type = lead.group(1) if lead else None
    if error_type:
        # "builtins.KeyError", "openai.RateLimitError": the last dotted part names the class.
        short = error_type.rsplit(".", 1)[-1]
        by_type = _TYPE_INDEX.get(_norm_type(error_type)) or _TYPE_INDEX.get(_norm_type(short))
    text = " ".join(part for part in (error_type, error_message) if part)
    for entry in HINTS:
        if by_type is not None and entry is by_type:
            return entry
        if text and entry.pattern.search(text):
            return entry
    return by_type


def recovery_pattern(error_type: str | None, error_message: str | None) -> str | None:
    """``retry_unchanged``, ``modify_and_retry``, ``use_different_tool`` or ``None``."""
    entry = match(error_type, error_message)
    return entry.recovery if entry else None


def suggestions_for(error_type: str | None, error_message: str | None, tool_name: str | None = None) -> list[str]:
    """Recovery suggestions for the model after a failed tool call.

    Args:
        error_type: exception class or stable error code (may be ``None``).
        error_message: the error text the model saw (may be ``None``).
        tool_name: the failing tool, named in the suggestions when given.

    Returns:
        Two to three suggestions, never empty: the matching catalog entry's,
        or general advice when nothing matches.
    """
    entry = match(error_type, error_message)
    templates = entry.suggestions if entry else FALLBACK_SUGGESTIONS
    tool = tool_name or "the tool"
    return [text.replace("{tool}", tool) for text in templates]
