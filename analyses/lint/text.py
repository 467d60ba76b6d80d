"""What a lint rule can see in an error message.

``read_message`` parses one error text once into a ``MessageView``: the JSON
body (when the text is a JSON object), the prose a model would read, the
language, and the evidence the rules weigh:

- **specifics**: concrete values the text names (quoted values, ids, numbers,
  paths, URLs, field paths). A message that names the value it rejected gives
  the model something to change.
- **remedy**: the text says what is expected or what to do next (a constraint
  such as "must be", an expected format, an example, allowed values, a call to
  make). Boilerplate advice ("please try again", "please fix your mistakes")
  is removed first: it is the same for every error and tells the model nothing.
- **english**: rules about *wording* only judge English prose; a message in
  another language is never flagged for its wording (the structural rules,
  such as stack traces, HTML pages or secrets, still apply).

- **JSON bodies are read by their fields**, the way a model reads them: a
  wrapper whose ``error`` is empty and whose message sits in ``response`` or
  ``message`` is judged by that message; a string field that itself holds JSON
  or a Python-repr dict (``"{'message': 'Not Found'}"``, an SDK's
  ``Error code: 400 - {...}``) is opened and read the same way.
- **an imperative is a remedy**: a sentence that starts with a verb telling
  the caller what to do ("Start the engine first", "Provide only a file
  name"), "please <verb>", a precondition ("before", "first") or a list of
  valid values ("Valid room types: a, b").

Everything here is plain regular expressions over the text: deterministic,
fast, and reviewable next to the rule catalog (``rules.py``).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

# Prefixes that carry no information: "Error:", "ERROR:", "fatal:", "<error>…</error>".
_PREFIX_RE = re.compile(
    r"^\s*(?:(?:error|err|fatal|exception|warning|fehler|erreur)\s*(?:\[\w+\])?\s*(?::|-(?!\d))\s*|npm (?:ERR!|error)\s+|"
    r"\[(?:error|err|fatal)\]\s+)+",
    re.IGNORECASE,
)
_ERROR_TAG_RE = re.compile(r"</?error>", re.IGNORECASE)
# apt's and dpkg's one-letter severity: "E: Unable to locate package x", "W: ..."
_LETTER_PREFIX_RE = re.compile(r"^\s*(?-i:[EW]):\s+")
# Wrapper prefixes that name the error class or the plumbing, not the failing value: botocore's
# "An error occurred (NoSuchBucket) when calling the ListObjectsV2 operation: ", ToolBench's
# "Function executing from my_tools.x.api import f error...\n".
_WRAPPER_PREFIX_RE = re.compile(
    r"^\s*(?:an error occurred \(\w+\) when calling the \w+ operation(?: \([^)]*\))?:\s*|"
    r"function executing from [\w.]+ import \w+ error\.{0,3}\s*|"
    r"the tool execution failed with the following error:\s*)",
    re.IGNORECASE,
)

# Advice that is the same for every error, so it says nothing about this one.
BOILERPLATE_ADVICE_RE = re.compile(
    r"please fix (?:your|the) (?:mistakes?|errors?)(?: and try again)?|"
    r"(?:please )?try again(?: later)?|sorry(?: about that)?!?|"
    r"(?:please )?check the logs?(?: for (?:more )?details)?|"
    r"(?:please )?(?:check|verify|review) (?:your|the) (?:input|request|parameters|arguments|data)(?: and try again)?|"
    # "please check the connection / your network settings": the same for every failure to connect, naming nothing
    r"(?:please )?(?:check|verify|review) (?:your|the) (?:(?:internet |network )?connection|network(?: settings)?|"
    r"configuration|config|settings|setup)(?: and try again)?(?=[.!,;]|$)|"
    r"please contact (?:support|the administrator)|for further information visit \S+|"
    # asking to quote a reference to support: "Please include this ErrorId if you contact support: 1234"
    r"(?:please )?(?:include|quote|provide|mention) (?:this|the) [\w ]{0,20}?(?:id|reference|number|code)\b[^.\n]{0,40}|"
    # a link "for more info" is the same for every error of the API: "Go to https://... for more info."
    r"(?:please )?(?:go to|visit|see|refer to|check|read) \S+ for (?:more|further|additional) (?:info(?:rmation)?|details)\.?|"
    # "retry with a properly formatted JSON argument" restates the rejection; it names no fix
    r"(?:please )?(?:retry|try again) with (?:a |an )?(?:properly formatted|valid|correct|proper) [\w ]{0,30}?(?=[.!]|$)|"
    # "Please pass a valid API key", "Provide a correct value": asks for a valid one without saying what valid is
    r"(?:please )?(?:pass|provide|use|enter|supply|specify|give|send|set) (?:a |an |the )?(?:valid|correct|proper) "
    r"[\w ]{0,30}?(?=[.!]|$)",
    re.IGNORECASE,
)
# "Please modify it.", "Please adjust the selector.": asks to change what was rejected without saying to what, how or
# through what, so it is advice that names nothing (labelling rule 23); "Change it to a month between 01 and 12" says to
# what. Kept apart from BOILERPLATE_ADVICE_RE and run only when one of its verbs is in the text: most texts have none.
_CHANGE_VERBS = ("modify", "change", "fix", "correct", "adjust", "edit", "revise", "amend")
CHANGE_IT_RE = re.compile(
    r"\b(?:please )?(?:modify|change|fix|correct|adjust|edit|revise|amend) (?:it|them|(?:the|your|this|that) "
    r"(?:(?!(?:to|through|with|by|using|via|so|as|from|into|in|on|for|and|or|then)\b)[A-Za-z_]+ ?){1,3})(?=\s*(?:[.!]|$))",
    re.IGNORECASE,
)

QUOTED_RE = re.compile(
    # GNU's older quoting, `like this' ("syntax error near unexpected token `fi'"), before the plain forms
    # a quote does not open inside a word: the apostrophe of "Couldn't" or "card's" is no quote (a literal's
    # prefix, as in b'ab', is)
    r"`[^`'\n]{1,200}'(?![\w'])|(?:(?<![A-Za-z])|(?<=\b[bruBRU]))'[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|`[^`\n]{1,200}`|«[^»\n]{1,200}»|»[^«\n]{1,200}«|“[^”\n]{1,200}”|‘[^’\n]{1,200}’"
)
URL_RE = re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s'\"<>)\]]+", re.IGNORECASE)
EMAIL_RE = re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b")
# A relative path; a relative directory written with its trailing slash ("src/", "./pkg/") is one where perror(3)'s
# shape puts it, before the colon that heads the error text ("src/: No such file or directory", "lstat ./pkg/: ...").
PATH_RE = re.compile(r"(?:(?<![\w.])/[\w.\-]+(?:/[\w.\-]*)+|(?<=: )/[\w.\-]+(?=:|\s|$)|(?<=\s)/[\w.\-]+(?=: )|\b(?!and/or\b)[a-z][\w.\-]*/(?:[\w.\-]*\w\b|(?=: ))|\b[A-Za-z]:\\[^\s'\"]+|\b[\w\-]+(?:/[\w.\-]+)+\.\w{1,5}\b|(?<!\w)\.[a-z]\w+\b)")
# Tokens that are ids or code names: snake_case, camelCase, dotted, letters+digits mixed.
IDENT_RE = re.compile(
    r"\b(?:[A-Za-z]+_[A-Za-z0-9_]+|[a-z]+[A-Z]\w*|[A-Za-z]+[\-]?\d[\w\-]*|\d+[A-Za-z][\w\-]*|[A-Za-z]+(?:\.[A-Za-z_]\w*)+|\w+\[\d+\](?:\.\w+)*)\b"
)
# UPPER_SNAKE error codes classify the failure (CERTIFICATE_VERIFY_FAILED, ACCESS_TOKEN_EXPIRED); they name
# no value the model passed or could change, so they are not specifics. (Vendor codes such as ORA-00942
# cannot be told from ids such as PT-20451 by their shape, so they still count.)
ERROR_CODE_RE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
NUMBER_RE = re.compile(r"(?<![\w.])\$?\d+(?:[.,]\d+)?(?![\w])")
ISO_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+\-]\d{2}:?\d{2})?)?\b")

# A constraint or an expected form: the message says what valid looks like.
CONSTRAINT_RE = re.compile(
    r"\b(?:must|should|shall|(?:cannot|can ?not|can't|may not) (?:be|contain|start|end|exceed|include|have|use|"
    r"equal|precede|follow)|can only|may only|only \w+|needs? to|has to|have to|"
    r"at least|at most|no more than|no longer than|up to \d+|between \S+ and|"
    r"(?:maximum|minimum|max|min)(?: allowed)? (?:is|of|length|size|value|number|\d)|limit(?:ed)? (?:is|to|of)|"
    r"requires? (?:a|an|the|\w+_\w+|`)|(?<!\bthe )expected(?! (?:an? )?(?:(?:json|yaml|toml|xml) )?(?:value|token|expression)\b)|the expected (?!(?:format|schema|pattern|syntax|structure)\b)\w|expects?|expecting (?!value\b)|one of|"
    r"valid (?:values|options|types|formats?|ids?|\w+ (?:are|is))|(?:valid|allowed|accepted|supported|available|possible|permitted)\b[\w ]{0,30}(?=:)|"
    r"allowed (?:values|types|are|is)|accepted (?:values|formats?)|supported (?:values|formats?|types)|are supported|is supported|"
    r"(?:before|prior to) (?:calling|using|activating|sending|creating|running|you)|\w+ first\b|"
    r"(?:is|are) (?:an? )?\w+, not (?:an? )?\w+|"
    r"format(?:ted)? (?:is|as|like)|in the format|e\.g\.|for example|such as|looks? like)\b|"
    # a named standard is the expected form: "not a valid ISO 4217 code", "an E.164 number", "RFC 3339"
    r"(?-i:\b(?:ISO[ -]?\d{3,5}|RFC ?\d{3,5}|E\.164|IANA|POSIX|IEEE[ -]?\d{3,5}))\b|"
    # a usage line or a list of options states the expected form: "Usage: goto <line>", "Options: a, b, c"
    r"(?:^|\n|[.;]\s+)(?:usage|options|choices|candidates|alternatives)\s*:\s*\S",
    re.IGNORECASE,
)
# A next step: a call to make, a value to use, a wait.
NEXT_STEP_RE = re.compile(
    # a single verb is an instruction where a clause starts ("Invalid date format. Use YYYY-MM-DD.", "...; call
    # x first", "please provide"), not mid-noun-phrase ("Invalid Add File Line", "the Use case", "Set failed")
    # ("to" only when no failure or attempt precedes it: "Failed to call tool", "trying to use" report, not instruct)
    r"(?:^|[.!?;:,\n(]\s*|\b(?:please|then|or|and|(?<!failed )(?<!unable )(?<!trying )(?<!attempting )(?<!attempted )"
    r"(?<!tried )(?<!failure )to|first|instead)\s+)"
    r"(?:use|try (?!again\b)\w+|call|retry(?!\s*#?\d)|re-?run|provide|specify|pass|set|add|remove|change|check (?!the logs?)\w+|"
    r"verify|ensure|convert|reduce|wait|ask|choose|select|include)\b|"
    r"\b(?:make sure|instead|did you mean|perhaps you meant|you (?:can|may|should|need|must)|consider|suggest\w*|hint|"
    r"resets? at|retry[_ ]after|after \d+ ?(?:s|ms|sec\w*|min\w*))\b",
    re.IGNORECASE | re.MULTILINE,
)
# "should be a valid date or datetime" restates the rejection; it names no form (seed 002's blind case).
VACUOUS_CONSTRAINT_RE = re.compile(
    # a data type named is the expected form: "should be a valid list" is not vacuous
    r"\b(?:must|should) be (?:an? )?valid (?!integer|int|number|float|boolean|bool|url|uri|email|uuid|json|list|dict|"
    r"dictionary|string|str|array|object|tuple|set|mapping)\w+"
    r"(?: or (?:an? )?\w+)?(?=[\s,.;:]|$)",
    re.IGNORECASE,
)
# "X is required" says what to add only when X names something: "url is required", "An API key is required",
# "Parameter `old_str` is required"; "Authentication required" and "Arguments are required" do not.
REQUIRED_RE = re.compile(
    # the subject may be two words: "The name field is required" names "name"; "Required field missing" names nothing
    r"((?:[\w`'\".\-\[\]]+ )?[\w`'\".\-\[\]]+)\s+(?:is |are )?(?:required|missing)\b(?!\.\w)|"
    # ... a noun phrase, so no determiner inside it: "No account matches the given criteria" names no requirement
    r"\bno ((?:(?!(?:the|a|an|your|this|that|its|their)\b)[\w`'\".\-\[\]]+ ){0,2}"
    r"(?!(?:the|a|an|your|this|that|its|their)\b)[\w`'\".\-\[\]]+) (?:was |were )?(?:provided|given|specified|supplied|passed)\b",
    re.IGNORECASE,
)
# A sentence that starts with a verb in the imperative is an instruction to the caller.
IMPERATIVE_VERBS = (
    "start|stop|call|use|provide|pass|set|add|remove|delete|change|run|re-?run|read|open|create|try|check|verify|ensure|"
    "make|convert|reduce|increase|shorten|split|wait|ask|choose|select|pick|include|specify|enter|supply|give|send|"
    "submit|log ?in|sign ?in|authenticate|install|update|upgrade|enable|disable|cancel|finali[sz]e|confirm|review|"
    "rename|move|restart|look ?up|replace|escape|quote|wrap|retry|fix|correct|define|import|declare|close|save|go|"
    "switch|omit|append|prepend|encode|decode|upload|download|refresh|reconnect|resubmit|modify|edit|fetch|reserve|"
    "activate|deactivate|register|subscribe|search|list|query|book|limit|format|drop|view|raise|lower|commit|stash|pull|"
    "push|merge|rebase|login|grant|allow|contact|free|clear|poll|cast"
)
# What follows an imperative verb: an object or a place ("Start the engine", "Call finalize_invoice",
# "Provide only a file name"), so a noun at the start of a sentence ("Request aborted", "List index out of
# range", "Update failed") is not read as an instruction. After "please" any verb is an instruction.
_OBJECT = (
    r"(?:(?:the|a|an|your|it|its|them|this|that|these|those|only|all|any|each|every|one|another|more|less|fewer|some|"
    r"with|to|for|from|in|into|on|at|by|first|again|up|out|back|down|sure|you|valid|correct|different|new)\b|"
    # a whole word only: "Search index not loaded" is a noun phrase, not "Search in..."
    r"[A-Za-z]+_\w+|[A-Za-z]+\(|[`'\"<]|"
    # a file name: "delete memory.json", "Read config.yaml first"
    r"[\w\-]+\.[A-Za-z]{1,5}\b)"
)
IMPERATIVE_RE = re.compile(
    # two verbs joined by "or"/"and" share the object: "fix or delete memory.json", "commit and push the branch"
    rf"(?:(?:^|[.!?;\n]\s*|:\s+|\bthen\s+)(?:{IMPERATIVE_VERBS})(?:,? (?:or|and) (?:{IMPERATIVE_VERBS}))?\s+{_OBJECT}|"
    rf"\bplease\s+(?:{IMPERATIVE_VERBS})\b)",
    re.IGNORECASE,
)
# JSON keys that carry a remedy in a structured error body.
REMEDY_KEYS = frozenset(
    {
        "hint", "hints", "suggestion", "suggestions", "next_operation", "next_step", "next_steps", "remedy", "fix",
        "expected", "valid_values", "allowed_values", "retry_after", "retry_after_seconds", "retry_after_ms",
        "invalid_fields", "errors", "param", "field", "fields", "help", "retriesremaining", "retries_remaining", "loc",
    }
)

# Words that say only that something failed, or name a whole class of failure.
GENERIC_WORDS = frozenset(
    """
    error errors failed failure fail fails failing went wrong something unknown unexpected unexpectedly occurred
    occurs happened an a the internal server request requests invalid bad input inputs operation execution
    executing tool could not be processed processing while your our has had have with there was is issue
    problem format content of sorry oops unable to complete completed exception params parameters parameter
    arguments argument api service unavailable conflict authentication authorization permission permissions
    denied insufficient forbidden unauthorized access rate limit limits reached exceeded connection timed
    timeout out network for in this that it its an we on at status code response call data result resource
    found requested undefined null none
    """.split()
)
# "no such table: users": a short value after the last colon names what was looked up.
_TAIL_VALUE_RE = re.compile(r"\w[^:\n]*:\s+([^:\n]{1,60}?)\s*\.?\s*$", re.MULTILINE)
# "Table: orders not found": after a kind's colon, the token right before "not found" is the value looked up
_LOOKED_UP_RE = re.compile(r"\w:\s+([^\s:]+) (?:was )?(?:not found|does(?: not|n't) exist)\b", re.IGNORECASE)
# one token that holds colons itself is still the value: "No such object: nginx:latest", "Unresolvable: urn:x"
_COLON_TOKEN_RE = re.compile(r"[^\s:]+(?::[^\s:]+)+")
# "merge: nope - not something we can merge": an operand between a program's colon and its explanation
_OPERAND_RE = re.compile(
    r"^[\w.\-]+: (\S{1,40}) - \w|"
    # "bash: line 1: pyhton: command not found": the operand between a program's colons and its reason
    r"^(?:[\w.\-]+:(?: line \d+:)?|line \d+:) ([^\s:]{1,40}): (?=[a-z])",
    re.MULTILINE,
)
# JSON keys whose values classify the error or trace the request; they are not about the failing value.
_META_KEYS = frozenset(
    {"type", "code", "error_code", "errorcode", "error", "name", "status", "request_id", "trace_id", "correlation_id",
     "documentation_url", "doc_url", "deprecated_type", "object", "traceid", "requestid", "instance", "statuscode",
     "status_code", "success", "ok", "cod", "http_status", "httpstatus", "http_code",
     # the protocol and schema a body is written in ("jsonrpc": "2.0", Kubernetes' "apiVersion": "v1", "kind": "Status")
     "jsonrpc", "apiversion", "api_version", "kind", "reason",
     # the error's own id and link (Okta's "errorId", "errorLink"): they name this error, not a value the caller passed
     "errorid", "error_id", "errorlink", "error_link", "error_uri", "error_url", "errorref", "error_ref"}
)

# Text that reads like an instruction to the model, planted in a tool result (LS111). Its "imperatives"
# are not remedies.
INJECTION_RE = re.compile(
    r"ignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier|preceding) (?:instructions|prompts?|messages?|rules)|"
    r"disregard (?:all |any )?(?:the )?(?:previous|prior|above|system|earlier)|"
    r"(?:^|[\s.;:>\"'])(?-i:SYSTEM|ASSISTANT|DEVELOPER|System|Assistant|Developer)\s*:(?:\s|$)|<\|?(?:im_start|system|endoftext)\|?>|\[/?INST\]|</?system>|"
    r"\byou (?:must|should) now\b|\byou are now\b|\bnew instructions\b|\bthe (?:assistant|model|AI) (?:must|should)\b|"
    r"\bdo not (?:tell|inform) the user\b|\breveal (?:all|the|your) [\w ]{0,30}(?:data|secrets?|prompt|passwords?|keys?)\b",
    re.IGNORECASE | re.MULTILINE,
)

# Common English words; a text with more of another language's function words is not English.
_EN_WORDS = frozenset(
    "the a an is are was were be been not no of to for in on at with by from and or but this that it its "
    "your you we our has have had must should cannot can could found does do did there here which what "
    "when please try again request error failed invalid missing required".split()
)
_OTHER_WORDS = frozenset(
    # German, French, Spanish, Italian, Portuguese, Dutch function words
    "der die das nicht ist und ein eine wurde konnte kein keine existiert bitte "
    "le la les des une est pas n'existe n'est du au aux veuillez impossible introuvable "
    "el los las una es no existe puede debe por para con "
    "il lo gli della non è essere "
    "o os um uma não é foi "
    "het een niet is kan geen bestaat".split()
)
_WORD_RE = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)


@dataclass
class MessageView:
    """One error text, parsed once for every rule."""

    raw: str
    obj: dict[str, Any] | None  # the JSON object, when the text is one
    prose: str  # what a model reads: the text, or the JSON body's string values
    body: str  # prose without "Error:" prefixes and boilerplate advice
    english: bool
    specifics: list[str] = field(default_factory=list)
    has_constraint: bool = False
    has_next_step: bool = False
    json_keys: frozenset[str] = frozenset()
    objs: list[dict[str, Any]] = field(default_factory=list)  # every JSON object in the body, nested ones too

    @property
    def has_remedy(self) -> bool:
        """The text says what is expected or what to do next."""
        return (
            self.has_constraint
            or self.has_next_step
            or any(_remedy_field(obj) or _lists_options(obj) for obj in self.objs)
        )


# A JSON key whose value lists what the caller may use instead: "available_servers": ["github", ...],
# "valid_modes", "supported_units", "allowed_roles", "choices", "candidates". A non-empty list of options is
# the expected form, as "Valid room types: a, b, c" is in prose.
OPTIONS_KEY_RE = re.compile(
    r"^(?:(?:available|valid|allowed|supported|accepted|possible|known|existing)[_\-]?\w+|\w+[_\-](?:options|choices)|"
    r"options|choices|candidates|alternatives|did_?you_?mean|closest_matches?)$",
    re.IGNORECASE,
)


# Keys whose value is a remedy only when it is structured: "errors": {"title": ["can't be blank"]} names the field,
# "errors": "Not Found" is the message itself.
_STRUCTURED_ONLY_KEYS = frozenset({"errors", "fields"})
_FIELD_POINTER_KEYS = frozenset(
    {"field", "fields", "pointer", "source", "param", "parameter", "path", "loc", "location", "property", "attribute"}
)


# A JSON key that names what the call needed or expected: Slack's "needed": "chat:write", "required_scopes": [...],
# "expected_format": "YYYY-MM-DD". A non-empty text or list there is the expected form.
NEEDED_KEY_RE = re.compile(r"^(?:needed|required|expected|missing)(?:[_\-]\w+)?$|^\w+[_\-](?:needed|required|expected)$", re.I)


# A JSON key that states a bound with a number: "available": 2 beside "requested": 5, "max_results": 100.
LIMIT_KEY_RE = re.compile(r"^(?:available|remaining|allowed|capacity|quota|limit|max(?:imum)?|min(?:imum)?)(?:[_\-]\w+)?$", re.I)


def _field_pointers(item: dict[str, Any]) -> set[str]:
    """The keys of an error item that point at the input field it is about. A GraphQL error's "path" (beside its
    "locations" or "extensions", the spec's shape) is where in the response the error surfaced, the query's own
    field ("path": ["issue"]), not an input the caller gave."""
    keys = {str(k).lower() for k in item} & _FIELD_POINTER_KEYS
    if {str(k).lower() for k in item} & {"locations", "extensions"}:
        keys.discard("path")
    return keys


def _remedy_field(obj: dict[str, Any]) -> bool:
    for key, value in obj.items():
        name = str(key).lower()
        if LIMIT_KEY_RE.match(name) and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if NEEDED_KEY_RE.match(name) and isinstance(value, (str, list)) and value and not isinstance(value, bool):
            return True
        if name not in REMEDY_KEYS or value in (None, "", [], {}):
            continue
        if name in _STRUCTURED_ONLY_KEYS and not isinstance(value, (list, dict)):
            continue
        if name in _STRUCTURED_ONLY_KEYS and isinstance(value, list) and not any(
            isinstance(item, dict) and _field_pointers(item) for item in value
        ):
            continue  # "errors": [{"code": ..., "title": "Invalid access token"}] is the error list, not field errors
        return True
    return False


def _lists_options(obj: dict[str, Any]) -> bool:
    return any(
        OPTIONS_KEY_RE.match(str(key)) and isinstance(value, (list, dict)) and len(value) > 0 for key, value in obj.items()
    )


def parse_object(text: str) -> dict[str, Any] | None:
    """``text`` as an object: JSON, or a Python-repr dict (``{'message': 'Not Found'}``); else ``None``."""
    stripped = text.strip()
    if len(stripped) < 2 or stripped[0] != "{" or stripped[-1] != "}":
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        if len(stripped) > 20_000:
            return None
        try:
            value = ast.literal_eval(stripped)  # literals only: never evaluates code
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            return None
    return value if isinstance(value, dict) else None


# Words joined by underscores, no digit: a code's spelling ("not_found", "rate_limited"), not an identifier's value
_CODE_WORD_RE = re.compile(r"[a-z]+(?:_[a-z]+)+|[A-Z]+(?:_[A-Z]+)+")
# A tagged union's tags (Dropbox's API: ".tag": "malformed_path") and their chain in "error_summary"
_TAG_PATH_RE = re.compile(r"[a-z][a-z_]*(?:/[a-z][a-z_]*)*/?\.{0,2}")
_STATUS_KEYS = frozenset({"status", "statuscode", "status_code", "http_status"})
_REQUEST_KEYS = frozenset({"path", "timestamp", "method", "endpoint", "url", "uri", "time"})


# A wrapper's data field ("response", "data", "result"...) holds what the call returned; when nothing in it is keyed as
# a message, a status or an error ("{'feed': {'html': {'lang': 'en'}}, 'entries': []}"), it is a payload, not the
# message: its values are the page's data, not what went wrong with the call (the message is in the other fields)
_DATA_KEYS = frozenset({"response", "data", "result", "results", "body", "payload", "output"})
_MESSAGE_KEYS = frozenset(
    {"error", "errors", "message", "messages", "msg", "detail", "details", "description", "reason", "title", "status",
     "statuscode", "status_code", "code", "hint", "suggestion", "suggestions", "error_description", "error_message",
     "errormessage", "fault", "exception", "warning", "warnings", "text", "content"}
)


def _payload_without_message(value: Any, depth: int = 0) -> bool:
    """An object (or a list of them) in which no key, however deep, names a message, a status or an error."""
    if depth > 8:
        return False
    if isinstance(value, dict):
        return all(str(k).lower() not in _MESSAGE_KEYS and _payload_without_message(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_payload_without_message(item, depth + 1) for item in value)
    return True


def _as_payload(value: Any) -> Any:
    """A wrapper's data field as the object it holds: itself, or the JSON / Python-repr object a string spells."""
    if isinstance(value, str):
        return parse_object(value)
    return value if isinstance(value, (dict, list)) else None


def _strings(value: Any, out: list[str], keys: set[str], objs: list[dict[str, Any]], depth: int = 0) -> None:
    """Collect the prose a model reads from a JSON body: non-empty strings, nested bodies opened."""
    if depth > 8:
        return
    if isinstance(value, dict):
        objs.append(value)
        # a framework's default error body (timestamp, status, error, path: Spring Boot's, Nest's) describes the
        # request in its other fields ("path": "/api/orders"): the endpoint called, not a failing value
        lowered = {str(k).lower() for k in value}
        has_status = bool(lowered & _STATUS_KEYS) and "timestamp" in lowered
        for k, v in value.items():
            keys.add(str(k).lower())
            if str(k).lower() in _META_KEYS and isinstance(v, str) and " " not in v.strip():
                continue  # an error code or request id classifies the error; it names no failing value
            if str(k).lower() in {".tag", "error_summary"} and isinstance(v, str) and _TAG_PATH_RE.fullmatch(v.strip()):
                continue  # a tagged union's tag and its summary, the tags joined ("path/not_found/.."): codes
            if str(k).lower() == "id" and isinstance(v, str) and _CODE_WORD_RE.fullmatch(v.strip()):
                continue  # a body's id that is a code word ("id": "not_found", Heroku's) is the error's kind, not a value
            if has_status and str(k).lower() in _REQUEST_KEYS and isinstance(v, str):
                continue
            if str(k).lower() in _DATA_KEYS and len(value) > 1:
                payload = _as_payload(v)
                if payload and _payload_without_message(payload):
                    continue  # the data a wrapper returned beside its message is not the message
            _strings(v, out, keys, objs, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out, keys, objs, depth + 1)
    elif isinstance(value, str):
        text = value.strip()
        if len(text) >= 2 and text[0] == text[-1] == '"':
            try:  # a JSON-encoded string inside a string
                decoded = json.loads(text)
                text = decoded.strip() if isinstance(decoded, str) else text
            except ValueError:
                pass
        nested = parse_object(text)
        if nested is not None:
            _strings(nested, out, keys, objs, depth + 1)
        elif text:
            out.append(text)


def is_english(text: str) -> bool:
    """Cheap language check: mostly non-Latin letters, or more foreign function words, means not English."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return True
    if sum(1 for ch in letters if ord(ch) > 0x24F) > 0.3 * len(letters):
        return False
    words = [w.lower() for w in _WORD_RE.findall(text)]
    english = sum(1 for w in words if w in _EN_WORDS)
    other = sum(1 for w in words if w in _OTHER_WORDS and w not in _EN_WORDS)
    return not (other >= 2 and other > english)


# "status_code=400", "HTTP 500", "code: 404" classify the failure; they name no value the model passed.
STATUS_TOKEN_RE = re.compile(
    r"\b(?:status(?:[_ ]?code)?|http|error(?: code)?|code)\s*[=:]?\s*[1-5]\d\d\b|"
    # a number that labels the error is a code, whatever its range: "Error -3 while ...", "(code 7)", "errno 5"
    r"\b(?:error|errno|error code|return code)\s*[=:#]?\s*-?\d+\b|\((?:error |exit |return )?code:? -?\d+\)|"
    # a reference to quote to support names no value the caller passed: "Reference #18.2f3c.17000", "request id: 7f3a"
    r"\b(?:reference|ref|request[ _-]?id|trace[ _-]?id|correlation[ _-]?id|error[ _-]?id|incident(?: id)?)"
    r"(?: if you contact support)?\s*[#:=]?\s*#?[\w.\-]*\d[\w.\-]*(?: \(-?\d+\))?|"
    # "404 Project Not Found", "400 Bad request - ...": a status that leads a reason phrase
    r"^\s*[1-5]\d\d(?=\s+[^\n]*\b(?:not found|bad request|unauthori[sz]ed|forbidden|conflict|not allowed|gone|"
    r"unprocessable|too many requests|internal server error|unavailable|error)\b)",
    re.IGNORECASE | re.MULTILINE,
)


# kebab-case names ("feature-x", "left-pad") are values; English compounds ("non-pending", "read-only") are not.
KEBAB_RE = re.compile(
    r"\b(?!(?:non|re|pre|co|self|read|write|built|well|multi|sub|anti|un|in|out|over|under|long|short|high|low|"
    r"real|one|two|third|end|user|server|client|e|post|mid|semi|cross|auto)-)[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b"
)


# A function or call named in the text: "wrong number of arguments to function max()", "lower(integer, integer)".
CALL_RE = re.compile(r"\b[A-Za-z_][\w.]*\([^()\n]{0,40}\)")
# A value introduced by the attribute it was looked up by: "Entity with name Alice Smith not found".
ATTRIBUTE_VALUE_RE = re.compile(
    r"\b(?:with|for|by|on|in) (?:the )?(?:name|id|key|email|title|slug|code|username|sku|table|column|relation|"
    r"schema|database|role|user|file|directory|branch|repository|repo) ([^\s,.;:]+)|"
    # "Failed to parse URL from not a url": the input of a parse or conversion
    r"\b(?:parse|parsing|convert|converting|decode|decoding) [\w ]{1,20}? from (\S[^\n]{0,60})",
    re.IGNORECASE,
)


# An upper-case code is a value: a ticker (NVDA), an airport (JFK), a currency (EUR), a country (DE). Acronyms that
# name a kind of thing (ID, URL, API), errno names, log levels and shouted English words are not.
CODE_VALUE_RE = re.compile(r"(?<![\w\-./'\"`])[A-Z]{2,5}(?![\w\-'\"`])")
_ACRONYMS = frozenset(
    """
    ID IDS URL URLS URI API APIS UUID JSON XML HTML HTTP HTTPS SQL CSV TSV PDF PNG JPG JPEG GIF SVG MCP AWS GCP SSL TLS
    SSH DNS TCP UDP IP CPU GPU RAM OS UI CLI SDK JWT OTP PIN SMS CORS REST RPC GRPC GET POST PUT PATCH DELETE HEAD
    ERROR ERR FATAL WARN INFO DEBUG TRACE OK EOF NULL NONE NAN NA TRUE FALSE ASCII UTF LLM AI ISO UTC GMT DB VM KB MB GB
    TB ACL RBAC IAM OAUTH SAML SSO MFA TOTP CSRF XSS DOM CSS JS TS YAML TOML INI ENV PATH HOME USER TODO SHA MD RSA PEM
    FTP SMTP IMAP ZIP TAR GZ CRLF LF AM PM FAQ URN UTF NUL BOM EPERM EINTR EIO ENXIO EBADF EBUSY EXDEV EPIPE EROFS EDOM EFBIG
    GATEWAY SERVER
    """.split()
)


def _code_values(text: str) -> list[str]:
    letters = [ch for ch in text if ch.isalpha()]
    if not letters or sum(ch.isupper() for ch in letters) > 0.5 * len(letters):
        return []  # a shouted message: its capitals are not codes
    lead = re.match(r"\s*\S+", text)
    return [
        m.group(0)
        for m in CODE_VALUE_RE.finditer(text)
        if m.group(0) not in _ACRONYMS
        and m.group(0).lower() not in GENERIC_WORDS | _EN_WORDS
        and not (lead and m.start() < lead.end())  # "NOTE: ...", "ERROR ...": a leading label
    ]


# A command-line option the caller passed is a value: "ld: cannot find -lssl", "unknown option --hostt".
FLAG_RE = re.compile(r"(?<!\S)--?[A-Za-z][\w\-]*(?:=\S+)?")
# A diagnostic's indented detail line names its subject: "  symbol:   variable countt", "  location: class Main".
DETAIL_LINE_RE = re.compile(r"^[ \t]{2,}[A-Za-z][\w ]{0,20}:[ \t]+(\S[^\n]{0,80})$", re.MULTILINE)


# An exception's class, qualified or not ("ValueError", "binascii.Error", "csv.Error"), is a label, never a value.
EXCEPTION_CLASS_RE = re.compile(r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception|Warning)|(?:[A-Za-z_]\w*\.)+error")


_STREAMS = frozenset({"stdin", "stdout", "stderr", "-", "(standard input)"})


# a class name ("OSError", "sqlite3.OperationalError", "binascii.Error"), never the bare word ("Error 403")
_EXCEPTION_CLASS_TOKEN_RE = re.compile(
    r"\b(?:(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning)|(?:[A-Za-z_]\w*\.)+(?:[Ee]rror|Exception|Warning))\b"
)


# A program's command verb (its operation, command, subcommand or verb), rejected with its name as the one token after
# the noun: "Invalid operation purge", "Unknown command verb restat." (labelling rule 16: the program's own verbs are
# schema names, instructive once the value is given; an `action` argument's value is an enumeration: set Q's
# "Invalid action: swipe")
ACTION_VALUE_RE = re.compile(
    r"\b(?:unknown|invalid|unsupported|unrecogni[sz]ed|illegal|bad)(?: command)? (?:operation|verb|command|subcommand)s? "
    r"([A-Za-z][\w\-]*)(?=\s*[.!]?\s*$)",
    re.IGNORECASE | re.MULTILINE,
)
_KIND_TAIL_WORDS = frozenset("type types name names format formats mode modes value values kind id".split())


# A proper name in the place of the value a lookup looked for, between the kind and its "not found": "Location
# Springfield not found", "Airport Heathrow does not exist" (rule 3: the value looked up is named). A capitalised word
# elsewhere ("No links received from Firecrawl API", "from Postgres to MySQL") is as likely a product's name, and a
# title-cased message ("Order Not Found") capitalises every word.
_PROPER_NAME_VALUE_RE = re.compile(
    r"(?<=[a-z] )[A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})?(?= (?:was |is )?(?:not found|does(?: not|n't) exist)\b)"
)


def _proper_name_values(text: str) -> list[str]:
    if "not found" not in text and "exist" not in text:
        return []  # the pattern cannot match: skip scanning
    words = re.findall(r"[A-Za-z]{3,}", text)
    if sum(w[0].isupper() for w in words) > 0.5 * len(words):
        return []
    return _PROPER_NAME_VALUE_RE.findall(text)


def action_value(text: str) -> str | None:
    """The command verb a rejection names as its one unquoted token ("Unknown verb lsit" -> lsit), else None."""
    m = ACTION_VALUE_RE.search(text)
    if m is None:
        return None
    token = m.group(1)
    return None if token.lower() in GENERIC_WORDS | _EN_WORDS | _KIND_TAIL_WORDS else token


def find_specifics(text: str) -> list[str]:
    """Concrete values the text names (quoted values, ids, numbers, paths, URLs, upper-case codes)."""
    # the class and its module ("sqlite3.OperationalError") are removed before the text is read for values
    text = _EXCEPTION_CLASS_TOKEN_RE.sub("exception", text)
    return [value for value in _find_specifics(text) if not EXCEPTION_CLASS_RE.fullmatch(value)]


def _find_specifics(text: str) -> list[str]:
    found: list[str] = []
    text = STATUS_TOKEN_RE.sub(" ", text)
    found.extend(FLAG_RE.findall(text))
    # a character named after "character": "illegal character: ^", "unexpected character '}'"
    # (the clause's own comma after the word is punctuation: "unexpected character, expected a JSON value")
    found.extend(m.group(2) for m in re.finditer(r"\bcharacter(?::\s*|\s+)(['\"`]?)([^\s\w])\1(?=\s|$)", text, re.I))
    # the standard streams are no operand the caller named ("gzip: stdin: unexpected end of file")
    found.extend(v for a, b in _OPERAND_RE.findall(text) if (v := a or b).lower() not in _STREAMS)
    found.extend(_code_values(text))
    found.extend(KEBAB_RE.findall(text))
    if (action := action_value(text)) is not None:
        found.append(action)
    found.extend(_proper_name_values(text))
    found.extend(CALL_RE.findall(text))
    for m in ATTRIBUTE_VALUE_RE.finditer(text):
        value = m.group(1) or m.group(2)
        if value.lower() not in GENERIC_WORDS | _EN_WORDS:
            found.append(value)
    for regex in (QUOTED_RE, URL_RE, EMAIL_RE, ISO_DATE_RE, PATH_RE, IDENT_RE, NUMBER_RE):
        found.extend(m.group(0) for m in regex.finditer(text) if not ERROR_CODE_RE.fullmatch(m.group(0)))
    found.extend(m.group(1) for m in _LOOKED_UP_RE.finditer(text) if m.group(1).lower() not in GENERIC_WORDS | _EN_WORDS)
    tails = [(m.group(1), m.group(0)[: m.start(1) - m.start(0)]) for m in _TAIL_VALUE_RE.finditer(text)]
    for line in text.split("\n"):
        head, sep, token = line.rpartition(": ")
        token = token.strip().rstrip(".")
        if sep and head[:1].isalnum() and _COLON_TOKEN_RE.fullmatch(token):
            tails.append((token, head))
    for value, head_text in tails:
        words = _WORD_RE.findall(value.lower())
        head = set(_WORD_RE.findall(head_text.lower()))
        # "GitHub API Error: GitHub API error" repeats its prefix: a formatter's default, not a value.
        # a block on its own line after the colon is shown text ("...near line 42:\n    return total")
        one_token = len(value.split()) == 1 or "\n" in head_text
        if one_token and 0 < len(words) <= 3 and any(w not in GENERIC_WORDS for w in words) and not set(words) <= head:
            found.append(value)
    return found


# A logger's line header is plumbing, not content: Chromium's "[pid:tid:MMDD/HHMMSS.us:LEVEL:file.cc:line] ", glog's
# "E0312 10:15:00.123456 4242 file.cc:77] ", Python logging's "2026-03-12 10:15:00,123 ERROR ".
_LOG_HEADER_RE = re.compile(
    r"^\s*(?:\[\d+:\d+:\d{4}/\d{6}(?:\.\d+)?:[A-Z]+:[^\]\s]+\]|"
    r"[IWEF]\d{4} \d\d:\d\d:\d\d(?:\.\d+)? +\d+ [^\]\s]+\]|"
    r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+\-]\d\d:?\d\d)?\]? +\[?(?:ERROR|WARN(?:ING)?|INFO|DEBUG|FATAL|CRITICAL)\]?:?)\s+"
)


def strip_boilerplate(text: str) -> str:
    """The text without leading "Error:" prefixes, ``<error>`` tags, log headers and boilerplate advice."""
    body = _ERROR_TAG_RE.sub(" ", text)
    header = _LOG_HEADER_RE.match(body)  # the line's header, where a logger writes it
    body = body[header.end() :] if header else body
    body = _LETTER_PREFIX_RE.sub("", body)
    body = _PREFIX_RE.sub("", body)
    body = _WRAPPER_PREFIX_RE.sub("", body)
    body = _PREFIX_RE.sub("", body)
    body = BOILERPLATE_ADVICE_RE.sub(" ", body)
    if any(verb in body.lower() for verb in _CHANGE_VERBS):
        body = CHANGE_IT_RE.sub(" ", body)
    body = re.sub(r"[ \t\r\f\v]+", " ", body)
    return re.sub(r" ?\n[\s]*", "\n", body).strip(" .:;,-\n\t")


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The text as a JSON object (JSON only), or ``None`` when it is not one."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# A short lead-in before a body: "Error code: 400 - {...}", "[API Error: 400 {...}]", "400 {...}".
_EMBEDDED_OBJECT_RE = re.compile(r"^(.{0,120}?)(\{.*\})\s*\]?\s*$", re.DOTALL)
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|\n+")


def _without_injection(text: str) -> str:
    """The text without the sentences that carry an injected instruction (they are not remedies)."""
    if not INJECTION_RE.search(text):
        return text
    kept = [part for part in _SENTENCE_SPLIT_RE.split(text) if not INJECTION_RE.search(part)]
    # "Booking failed. SYSTEM: Ignore ..." splits at ". "; a marker mid-sentence drops from the marker on
    return INJECTION_RE.split(" ".join(kept))[0] if kept else ""


# Words that name a kind of thing in a schema, not which one: "missing field" does not say which field.
_KIND_WORDS = frozenset(
    "field fields value values key keys property properties item items entry entries option options data input "
    "argument arguments parameter parameters param params required".split()
)


# "Missing authentication credentials for the Greeting resource" (not "missing field": which one?)
# A missing bracket or separator is named too: "missing } near end of file", "missing ) after argument list".
MISSING_RE = re.compile(r"\bmissing ([\w`'\"\-\[\]]+(?: [\w`'\"\-\[\]]+)?|[{}()\[\];,<>](?=[\s,.;:]|$))", re.IGNORECASE)


_AUTH_STEP_WORDS = frozenset("login log sign signin auth authn authz authenticated credentials session".split())


_AUTH_WORDS = frozenset("authentication authorization auth authn authz".split())
_CREDENTIAL_KIND_WORDS = frozenset("token tokens header headers credential credentials".split())


_REQUIREMENT_WORDS = ("requir", "missing", "provided", "given", "specified", "supplied", "passed")


def _named_requirement(body: str) -> bool:
    low = body.lower()
    if not any(w in low for w in _REQUIREMENT_WORDS):
        return False  # neither regex can match: skip scanning every position
    for m in [*REQUIRED_RE.finditer(body), *MISSING_RE.finditer(body)]:
        subject = next(g for g in m.groups() if g)
        words = _WORD_RE.findall(subject.lower())
        # "Login required", "Sign-in required": an authentication step named only generically, like "Authentication
        # required" (labelling rules 5 and 19); "An API key is required" names which credential
        # "Required field missing", "value is required": which one? ("An API key is required" names a credential)
        kinds = _KIND_WORDS if m.re is MISSING_RE else (_KIND_WORDS - {"key", "keys"}) | _AUTH_STEP_WORDS
        bare = not re.match(r"\s*\w", body[m.end() :].split(".", 1)[0])  # nothing after it in its sentence
        if bare and set(words) & _AUTH_WORDS and set(words) <= _AUTH_WORDS | _AUTH_STEP_WORDS | _CREDENTIAL_KIND_WORDS:
            # "Missing Authentication Token" and no more: authentication's generic credential, neither which one, for
            # what ("... for the Greeting resource" says that), nor how to get it
            continue
        if subject[:1] in "`'\"{}()[];,<>" or any(w not in GENERIC_WORDS and w not in _EN_WORDS and w not in kinds for w in words):
            return True
    return False


# A sentence that reports a failure is not an instruction, even when it starts with a word that can be a verb:
# "Upload to S3 failed", "Search for flights returned an error", "Update to the record was unsuccessful".
_REPORTS_FAILURE_RE = re.compile(
    r"\b(?:failed|fails|failure|was unsuccessful|did not succeed|errored|returned an error|(?:is|was) not possible)\b",
    re.IGNORECASE,
)


def _instructs(body: str) -> bool:
    """An imperative sentence (or "please <verb>") that is not the report of a failure."""
    for m in IMPERATIVE_RE.finditer(body):
        end = re.search(r"[.!?;\n]", body[m.end() :])
        sentence = body[m.start() : m.end() + (end.start() if end else len(body))]
        if "please" in m.group(0).lower() or not _REPORTS_FAILURE_RE.search(sentence):
            return True
    return False


def _next_step(body: str) -> bool:
    """A next step that is not the head of a failure report: "Call failed", "Retry failed" and "Select failed" report
    what failed, as "Upload to S3 failed" does; "Call x first" and "...; retry after 30 s" are instructions."""
    for m in NEXT_STEP_RE.finditer(body):
        start = max(body.rfind(c, 0, m.start()) for c in ".!?;\n") + 1
        word = re.match(r"[^\w]*(\w+)", body[m.start() :])
        if word is None or body[start : m.start() + word.start(1)].strip():
            return True  # not the first word of its sentence: "please call", "Invalid date. Use YYYY-MM-DD"
        end = re.search(r"[.!?;\n]", body[m.end() :])
        sentence = body[start : m.end() + (end.start() if end else len(body))]
        if not _REPORTS_FAILURE_RE.search(sentence):
            return True
    return False


def _field_keys(objs: list[dict[str, Any]]) -> list[str]:
    """Keys that name fields: a validation body maps each field to its messages (``{'name': ['Missing data for
    required field.']}``, Rails' and marshmallow's shape), so the key is the field at fault."""
    found: list[str] = []
    for obj in objs:
        if obj and all(
            isinstance(v, list) and v and all(isinstance(x, str) for x in v) and str(k).lower() not in _PROSE_KEYS
            for k, v in obj.items()
        ):
            found.extend(str(k) for k in obj)
    return found


# Keys whose list holds the messages themselves, not one field's messages.
_PROSE_KEYS = frozenset({"errors", "error", "messages", "message", "detail", "details", "warnings", "non_field_errors"})


def _parse_error_list(text: str) -> dict[str, Any] | None:
    """A JSON array of error objects (``[{"message": ..., "errorCode": ...}]``) read as one body holding them."""
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return {"errors": value}
    return None


def read_message(text: str) -> MessageView:
    """Parse ``text`` into the view every rule reads."""
    obj = parse_object(text) or _parse_error_list(text)
    if obj is None and "{" in text:
        m = _EMBEDDED_OBJECT_RE.match(text.strip())
        if m is not None and len(_WORD_RE.findall(m.group(1))) <= 6:
            obj = parse_object(m.group(2))
    keys: set[str] = set()
    objs: list[dict[str, Any]] = []
    if obj is not None:
        parts: list[str] = []
        _strings(obj, parts, keys, objs)
        # Type URIs and documentation links identify the error class, not this error.
        prose = ". ".join(p.rstrip(". ") for p in parts if not URL_RE.fullmatch(p.strip()))
    else:
        prose = text
    body = strip_boilerplate(_without_injection(prose))
    view = MessageView(
        raw=text,
        obj=obj,
        prose=prose,
        body=body,
        english=is_english(prose),
        json_keys=frozenset(keys),
        objs=objs,
    )
    # the detail lines are read from the text as written: their indentation is what marks them
    view.specifics = find_specifics(body) + _field_keys(objs) + (DETAIL_LINE_RE.findall(text) if obj is None else [])
    view.has_constraint = bool(CONSTRAINT_RE.search(VACUOUS_CONSTRAINT_RE.sub(" ", body))) or _named_requirement(body)
    view.has_next_step = _next_step(body) or _instructs(body)
    return view
