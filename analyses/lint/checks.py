"""The checks behind the lint rules: vocabularies and one function per rule.

Each ``check_*(view, ctx)`` answers whether its rule fires on a parsed message
(``text.MessageView``) given what is known about the call (``Context``). The
vocabularies are families of wording (HTTP reason phrases, runtime exception
messages, transient-failure words), never individual messages; the catalog
that ties each check to an id, severity, reason and rewrite is ``rules.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loopscope.analyses.lint.text import (
    STATUS_TOKEN_RE,
    VACUOUS_CONSTRAINT_RE,
    ATTRIBUTE_VALUE_RE,
    CONSTRAINT_RE,
    IDENT_RE,
    PATH_RE,
    QUOTED_RE,
    URL_RE,
    EMAIL_RE,
    GENERIC_WORDS,
    IMPERATIVE_RE,
    INJECTION_RE,
    NUMBER_RE,
    MessageView,
    _instructs,
    action_value,
    find_specifics,
)


@dataclass(frozen=True)
class Context:
    """What is known about the call besides its text."""

    is_error: bool = True
    outcome: str | None = None


# --- vocabularies (families of wording, not individual messages) --------------------

_WORD_RE = re.compile(r"[^\W\d_]+", re.UNICODE)

HTTP_REASONS = (
    "bad request|unauthori[sz]ed|payment required|forbidden|not found|method not allowed|not acceptable|"
    "request timeout|conflict|gone|precondition failed|payload too large|unsupported media type|"
    "unprocessable (?:entity|content)|too many requests|internal server error|not implemented|bad gateway|"
    "service (?:temporarily )?unavailable|gateway time-?out|"
    # the rest of RFC 9110's reason phrases, and RFC 2616's older names for two of them
    "request entity too large|(?:request-)?uri too long|range not satisfiable|expectation failed|misdirected request|"
    "length required|proxy authentication required|upgrade required|precondition required|"
    "request header fields too large|unavailable for legal reasons|http version not supported|insufficient storage"
)
BARE_STATUS_RE = re.compile(
    rf"^(?:(?:http(?: error)?|status|status code|error|code)\s*)?(?:[1-5]\d\d\s*:?\s*(?:{HTTP_REASONS}|i'm a teapot)?|(?:{HTTP_REASONS}))$|"
    rf"^(?:request failed with |response )?status code (?:is |was |of )?[1-5]\d\d$|^(?:http )?[1-5]\d\d\s+(?:{HTTP_REASONS})$|"
    # a bare error code: "error code: 1020", "SSL: CERTIFICATE_VERIFY_FAILED"
    r"^(?:error |status )?code:?\s*[\w\-]+$|^(?:[\w ]{1,20}:\s*)?(?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)$",
    re.IGNORECASE,
)
NOT_FOUND_RE = re.compile(
    r"\bnot (?:be )?found\b|\bdoes(?: not|n't) exist\b|\bno such\b|\bcould not (?:be )?found?\b|"
    r"\bcould ?n[o']t find\b|\bcan(?:no|')t find\b|\bunknown \w+\b|\bno \w+ (?:found|matching|matches)\b",
    re.IGNORECASE,
)
INVALID_RE = re.compile(
    r"\binvalid\b|\bnot (?:a )?valid\b|\bnot understood\b|\bmalformed\b|\bmisplaced\b|\bunrecogni[sz]ed\b|\bunsupported\b|\bunhandled\b|\billegal\b|"
    r"\bwrong (?:format|type|value)\b|\bbad (?:value|format|parameter|argument|input)\b|"
    # "unknown room type 'deluxe'" rejects a value; "unknown parameter: colour" names a schema element, whose
    # valid names the model already has (the tool list and input schema), so it is not a rejection of a value.
    r"\bunknown (?!(?:tool|function|method|parameter|param|argument|arg|field|property|key|option|flag|command|"
    r"column|table)s?\b)[\w ]{1,30}(?:'[^']*'|\"[^\"]*\"|: \S+)|"
    # "unknown service prime_video": an unquoted value that is an identifier
    r"\bunknown (?!(?:tool|function|method|parameter|param|argument|arg|field|property|key|option|flag|command|"
    r"column|table)s?\b)\w+ (?=[\w\-]*[_\d])[\w\-]+|"
    # "gzip: h.txt: unknown suffix": a program's operand, then the kind of value it did not recognise
    r"(?m:^[\w.\-]+: [^\s:]+: unknown (?!(?:tool|function|method|parameter|param|argument|arg|field|property|key|"
    r"option|flag|command|column|table)s?\b)\w+)",
    re.IGNORECASE,
)
# Rejections whose subject is a name in the schema (argument, field, tool...) or an id: naming the value is
# enough, because the schema lists the valid names and an id is looked up, not formatted.
NAMED_SCHEMA_OR_ID_RE = re.compile(
    r"\b(?:tool|function|method|parameter|param|argument|arg|field|property|key|option|flag|command|column|table|"
    # a program's command verb: "Unknown operation 'rename'" (labelling rule 16)
    r"operation|verb|"
    r"endpoint|id|ids|identifier|name|ref|reference|object name|symbol|ticker|code|slug|handle|username|sku|"
    # a name in a language's or a tool's grammar: its valid names are in the documentation the model read
    r"operator|keyword|directive|variable|attribute|setting|subcommand|builtin|macro|"
    # a name the build or task file defines: "unknown target 'instal'", "No such task: lnt"
    r"target|task|recipe|script|stage|job|"
    # an entity the caller named and the system looks up (a user, a branch, a container...): like an id, its
    # valid values are found by a lookup, not learnt from a format (labelling rules 3 and 16)
    r"user|group|owner|account|host|branch|tag|commit|revision|repository|repo|container|image|volume|pod|namespace|"
    r"bucket|project|package|module|workspace|channel|organi[sz]ation|org|team|member|device|instance|cluster)s?\b"
    r"[^.\n]{0,30}?(?:'[^']+'|\"[^\"]+\"|`[^`]+`|‘[^’]+’|“[^”]+”|:\s*\S+)|"
    # the value first: "'sha999' is an invalid command", "\"x\" is not a valid tool name"
    r"(?:'[^']+'|\"[^\"]+\"|`[^`']+'|`[^`]+`|‘[^’]+’)(?::| is) (?:an? )?(?:invalid|unknown|unrecognized|not an? (?:valid|known)) "
    r"(?:tool|function|method|parameter|argument|field|property|key|option|flag|command|column|table|name|id|"
    r"identifier|user|branch|package|operator|keyword|variable|setting|subcommand)s?\b(?! names?\b)",
    re.IGNORECASE,
)
# A short statement of a specific state of a named thing is clear ("Your card was declined.", "Customer
# already has an overdue bill", "Path not in workspace."): the vague rule is for statements that say only
# that something went wrong ("Payment could not be processed", "Number of passengers does not match").
STATE_RE = re.compile(
    # a negated participle is the failed outcome ("The repository was not deleted"), not a state of the thing
    # "incorrect" is a state when said of a named thing ("Your card's security code is incorrect"); "Incorrect
    # padding" names a defect of an input it does not name
    # ... but a credential said to be incorrect ("Your API key is incorrect", "AuthToken was incorrect") is rejected, as
    # "Invalid API key" is: an authentication gap, not a state (labelling rule 15)
    r"\b(?:already|(?<!key )(?<!keys )(?<!token )(?<!tokens )(?<!password )(?<!secret )(?<!credentials )(?:is|are|was|were) incorrect|(?<!not )(?<!not be )(?<!n't be )(?<!not been )(?:declined|expired|blocked|"
    r"locked|disabled|suspended|closed|cancell?ed|archived|deleted)|not in|outside|no (?:more|longer)|not enough|in progress|(?:the )?user (?:denied|rejected|declined|cancell?ed)|"
    r"(?:denied|rejected|cancell?ed) by the user|insufficient (?:\w+ ){0,2}(?:balance|funds|credit)|is not (?:active|enabled|"
    r"verified|pending|delivered|finali[sz]ed|open)|(?:has|have|includes?|contains?) no(?! (?:permissions?|access|rights?|privileges?|scopes?)\b)|does not have(?! (?:the )?(?:required |necessary |sufficient |enough )?(?:access\b|scopes?\b|"
    r"(?:permissions?|rights?|privileges?)\b(?! to (?!the |this |that |your |its |an? )\w)))|is empty|read-only|in use|revoked|"
    # a classification ("File is not a zip file"), a capability ("Operation MatMult is not supported"), a
    # comparison that says which way to change ("INSERT has more expressions than target columns") or a fact
    # with its agent ("The last commit was not made by aider"): each says what is wrong, not only that it is
    r"(?:is|are) not an? (?!valid\b|proper\b|correct\b|well)\w+|"
    # a capability of a named thing; "You are not allowed to do that" names none
    r"(?<!\byou )(?<!\bit )(?<!\bthat )(?:is|are) not (?:supported|allowed|permitted)|"
    # ... and its policy, said as a verb: "Membership level does not allow free bags", "This plan doesn't support exports"
    r"(?<!\byou )(?<!\bit )(?<!\bthat )(?<!\bthis )does(?: not|n't) (?:allow|permit|support|accept) (?:an? |the )?(?!(?:this|that|it|them|these|those)\b)[a-z]\w*|(?:more|fewer|less) \w+(?: \w+)? than|"
    # a comparison between two named quantities ("Balance is less than budget limit") or an operation bounded by a
    # named limit ("Cannot fill gas above the tank capacity"): each says which way to change
    r"\b(?:less|more|greater|fewer|lower|higher|smaller|larger|bigger|shorter|longer|later|earlier|older|newer) than (?:the |its |your )?[a-z_]\w*|"
    r"(?:cannot|can't|can ?not) \w+(?: \w+)? (?:above|below|beyond|over|past|more than|less than|outside) (?:the |its |your )?\w+|"
    r"(?:was|were|is|are) not \w+ by|nothing to \w+|"
    # a mismatch between two named things ("Loyalty number does not match the passenger name"); a bare "does not
    # match" says only that something is wrong
    r"does(?: not|n't) match (?:the |its |your |any |an? )?[a-z_]\w*|"
    # the operand an operation needs is absent: "No previous running command to interact with", "No changes to save"
    r"^no (?!permissions?\b|access\b|rights?\b|authori\w+|credentials?\b)(?:\w+ ){1,3}to (?!access\b)\w+|"
    # what is wrong with the input of an operation: "Cannot calculate mean of an empty list" (not an empty response)
    r"(?:of|on|from|with|to|in|for) (?:an? |the )?empty (?!response|reply|result|body|output|answer)\w+|"
    # ... or a sign the operation cannot take: "Square root of a negative number is undefined", "log of a non-positive"
    r"(?:of|on|from|with|to|for) (?:an? |the )?(?:negative|non-positive|non-negative|non-integer|non-numeric) \w+|(?:working tree|index) (?:is )?clean|"
    # the absence of a named thing in a named place ("no previous page in the history"), a named defect
    # ("parentheses () not balanced", "unterminated string")
    # ("in this city", "in that folder": a place named only by a demonstrative is not named, rule 3)
    r"no (?:\w+ ){1,2}in (?!(?:this|that)\b)(?:the )?\w+|not balanced|unbalanced|unterminated|unmatched|unclosed|"
    # a time on the wrong side of now: "Cannot book a flight departing in the past", "date is in the future"
    r"in the (?:past|future)|"
    # a version comparison: "compiled by a more recent version of the Java Runtime"
    r"\b(?:more|less) recent (?:version|release)\b|"
    # a value's sign, said of it: "timeout value is negative"
    r"(?:is|are|was|were) (?:negative|non-positive|zero)\b|"
    # a membership the caller lacks, with what it is in: "You are not subscribed to this API", "not a member of #ops"
    r"not (?:subscribed|enrolled|registered|a member) (?:to|in|of|for|with) (?:the |this |that |your )?\w+|"
    # the state it is in, named: "because it has a status of succeeded", "is in state 'draft'"
    r"(?:has|with|in) (?:a |the )?(?:status|state) (?:of )?['\"`]?[a-z_]+|"
    # a program's refusal with what it refuses ("refusing to merge unrelated histories"): a policy, stated
    r"refus(?:e|es|ed|ing) to \w+ \w+)\b",
    re.IGNORECASE,
)
# "Failed to read content of existing file: /x": says what failed, on what, but not why or what to do.
FAILURE_CLAUSE_RE = re.compile(
    # "Error calling tool 'x'", "Exception while reading resource 'y'": an error in the middle of an operation;
    # "cannot open \"x.csv\"" with nothing after its target reports a failure as "could not" does
    r"^(?:failed|unable|could ?n[o']t|can(?:no|')t(?= \w+ \S+\s*$)|(?:error|exception)(?: occurred)?(?: while| during| when| in)?(?= \w+ing\b))(?: to)? (\w+)\b[^:\n]*?(?::\s*|\s+-\s+|\s+)?"
    r"(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)

# Rust's io::Error and others write the errno's number after its text: "Permission denied (os error 13)".
OS_ERROR_NUMBER_RE = re.compile(r"\s*\((?:os error|errno:?) \d+\)", re.IGNORECASE)
# The C library's texts for the errnos a file operation meets (strerror): with the path they failed on, a cause.
ERRNO_TEXTS = (
    "no such file or directory|permission denied|file exists|not a directory|is a directory|directory not empty|"
    "no space left on device|read-only file system|operation not permitted"
)
# A runtime message that names what the caller got wrong: the argument to drop or add, the name its code used,
# the module it imported, the file an OS call failed on (errno name and path). The fix is evident.
NAMES_CALLER_VALUE_RE = re.compile(
    r"unexpected keyword argument '[^']+'|missing \d+ required (?:positional |keyword-only )?arguments?: '|"
    r"unexpected (?:extra )?arguments? \(?['\"]?[^\s)'\"]+|"
    r"\bname '[^']+' is not defined|^\s*(?:[A-Z]\w*Error:\s*)?[\w$]+ is not defined\s*$|no module named '[^']+'|cannot find module '[^']+'|"
    r"\[Errno \d+\] [^:\n]+: '[^']+'|^\s*E[A-Z]{2,}: [^,\n]+, \w+ '[^']+'|"
    r"does not match format '[^']+'|"
    # an OS error's text after the path it failed on: "stat /nonexistent: no such file or directory"
    rf"(?:^|\s)(?:/[\w.\-]+)+/?: (?:{ERRNO_TEXTS})\b|"
    # a relative path operand before its errno text: "cat: src/: Is a directory", "rm: build/out: Permission denied",
    # maybe with the operation between them as GNU tar writes it ("tar: notes: Cannot stat: No such file or directory")
    rf"^[\w.\-]+: (?!(?:stdin|stdout|stderr|-):)(?:\.{{0,2}}/)?[\w.\-][\w.\-/]*: (?:Cannot \w+: )?(?:{ERRNO_TEXTS})\b",
    re.IGNORECASE | re.MULTILINE,
)
# "invalid integer: ten" names its expected form: scalar types have one obvious spelling.
SELF_DESCRIBING_RE = re.compile(
    r"\b(?:invalid|not an?|not a valid)\s+(?:integer|int|number|float|boolean|bool)\b|"
    r"\bnot an? (?:valid )?(?:[\w,]+ ){0,3}(?:dictionary|dict|object|list|array|string|mapping|tuple)\b|"
    # "Invalid count value: -1", "invalid literal for int() with base 10: '0x1A'": numbers have one spelling
    r"\binvalid (?:count|size|length|limit|offset|index|port|amount|quantity)(?: value)?\b|\binvalid literal for\b",
    re.IGNORECASE,
)
# The numeric kinds of SELF_DESCRIBING_RE: "Invalid count value: -1" explains itself once the value is shown;
# "Invalid length" alone shows nothing (labelling rule 4)
NUMERIC_KIND_RE = re.compile(
    r"invalid (?:count|size|length|limit|offset|index|port|amount|quantity)(?: value)?", re.IGNORECASE
)
# Kinds of value with one standard form: rejecting a named one ("Invalid URL \"htps://x\"") says enough.
# Registries the model knows (IANA time zones, URL schemes, encodings) count too: "unknown url type: 'x'",
# "Invalid timezone: 'No time zone found with key X'", "invalid input syntax for type json".
STANDARD_FORM_RE = re.compile(
    r"\b(?:invalid|unknown|unsupported|not an?|not a valid|not valid|invalid input syntax for(?: type)?)\s+"
    r"(?:url|uri|email(?: address)?|uuid|json|url (?:type|scheme)|(?:url |uri )?(?:protocol|scheme)|time ?zone|encoding|charset|locale|"
    r"(?:hash|digest) (?:type|algorithm|function)|iso ?format(?: string)?|iso[ -]?8601(?: date| datetime| string)?|"
    r"(?:big|small|tiny)?int(?:eger)?|numeric|decimal|real|double precision|float\d*|bool(?:ean)?|"
    # published grammars: a version (PEP 440, semver) and its specifiers, an IP address, a host name, a regular
    # expression, a MIME type, a CIDR block, a port number
    r"(?:semver |semantic )?version(?: (?:string|number|specifier|constraint|range))?|(?:version )?specifier|"
    r"requirement(?: specifier)?|ip(?:v[46])?(?: address)?|host ?name|domain name|regex|regular expression|"
    r"(?:mime|media|content) type|cidr(?: block| notation)?|port(?: number)?)\b",
    re.IGNORECASE,
)

# "[Errno 98] Address already in use", "EISDIR: illegal operation on a directory, read": an errno and its text.
ERRNO_RE = re.compile(
    r"^\s*(?:[A-Za-z]\w*(?:Error|Exception): )?(?:\[Errno -?\d+\]|(?-i:E[A-Z]{2,}):)\s*(?P<rest>[^\n]*)$", re.IGNORECASE
)
INTERNAL_ERROR_RE = re.compile(r"^internal (?:server )?error\s*[:\-]\s*\S", re.IGNORECASE)
EXCEPTION_NAME_RE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault)\b")
EXCEPTION_LINE_RE = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:\(.*\))?\s*$", re.MULTILINE)
# Runtime messages written for the programmer, not the caller (Python, JavaScript, JSON decoders).
RUNTIME_MESSAGE_RE = re.compile(
    # an attribute the caller's code named on a value ("'str' object has no attribute 'startwith'") is its own name,
    # as an undefined name is (rule 1); a None value and a dunder the syntax implied ('__setitem__') are internals
    r"object has no attribute(?! '(?!__)[A-Za-z_]\w*')|'?NoneType'?|index (?:\d+ )?out of range|division by zero|can only concatenate|"
    # an operation on a null value, in any runtime's words, is internals as 'NoneType' is (rule 2): Ruby's "undefined
    # method `upcase' for nil", Lua's "attempt to index a nil value", PHP's "Call to a member function f() on null",
    # Go's "nil pointer dereference" and "nil map", Swift's "found nil while unwrapping", the JVM's "because "x" is null"
    # (one alternative behind a look at its first letter: the regex runs on every message)
    r"\b(?=[uacfnb])(?:undefined method [`'][^'\n]+' for nil\b|attempt to (?:index|concatenate|perform arithmetic on|compare)(?: a)? nil\b|"
    r"(?:call to a member function \w+\(\)|attempt to read property \S+|array offset on value of type) (?:on )?null\b|"
    r"nil (?:pointer dereference|map)\b|found nil while (?:implicitly )?unwrapping\b|because \S+ is null\b)|"
    # the runtime's own container ("pop from empty list", "dictionary is empty"), not a named one ("Recipient list
    # is empty", a state of the caller's input)
    r"(?<![\w,] )(?<!\w)(?:dictionary|list|deque|set|heap|queue|stack) is empty|from (?:an )?empty (?:list|deque|dict|set)|"
    r"codec can't (?:decode|encode)|not supported between instances of|"
    r"unsupported operand type|is not (?:subscriptable|callable|iterable)\b|is not a function|"
    # numeric overflow in a conversion ("int too large to convert to float"): the program's number types
    r"\btoo (?:large|big|small) to convert\b|\bout of memory\b|\bheap space\b|\b(?:cannot|unable to|failed to) allocate\b|"
    # arrays whose shapes do not fit: "operands could not be broadcast together with shapes (3,) (4,)"
    r"\bbroadcast together\b|\bnon-numeric argument to (?:binary|unary|mathematical) (?:operator|function)\b|"
    r"\bcannot unmarshal \w+ into Go value of type\b|\bcannot be cast to\b|\bunable to cast object of type\b|"
    r"\bcannot cast\b(?=[^\n]{0,30}\btype\b)|\bdivided? by zero\b|"
    # Rust's unwrap of an absent value: "called `Option::unwrap()` on a `None` value"
    r"\bcalled `?(?:Option|Result)::(?:unwrap|expect)(?:_err)?\(\)`? on an? `?(?:None|Err)\b|"
    # a null reference and an uninitialised member, in any runtime's words
    r"\bobject reference not set to an instance\b|\b(?:has|have) not been initiali[sz]ed\b|"
    r"\blocal variable '?\w+'? (?:referenced before assignment|where it is not associated)|\bcannot access local variable\b|"
    # a type clash between the types of an expression ("incompatible types: String cannot be converted to int",
    # "cannot compare string with numeric type (i64)"): the program's types, not the caller's domain (rule 20)
    r"\bincompatible types\b|"
    # an operation refused for its operands' types, named as types only: "with string dtype", "no kernel matching input
    # types (int64, string)", "for argument types: INT64, STRING" (rule 20)
    r"\bwith (?:an? )?\w+ dtype\b|\b(?:input|argument|operand) types?:? \(?[\w<>\[\]]+(?:, ?[\w<>\[\]]+)+\)?|\b(?:cannot|can't|can not) (?:compare|add|subtract|multiply|divide|concatenate|combine)"
    r" (?:an? )?(?:str|string|int|integer|float|numeric|number|bool|boolean|null|date|datetime|list|array|object)"
    r"(?: type)? (?:with|and|to) |"
    r"cannot (?:read|set|destructure) propert(?:y|ies)\b[^\n]{0,40}?\bof '?(?:undefined|null)\b|undefined is not|maximum recursion depth|"
    r"is not JSON serializable|invalid syntax|can't compare|"
    r"unexpected token .{1,3} in JSON|expecting value\b|unexpected end of (?:JSON )?input|"
    r"unhashable type|null ?pointer|<[\w.]+(?: [\w.]+)?(?: object)? at 0x[0-9a-f]+\b[^<>\n]*>|segmentation fault|stack overflow|exceeded \d+ redirects|"
    # a class repr on its own is internals; one in parentheses right after a value annotates that value's type ("1
    # (<class 'int'>) is not equal to ... 2 (<class 'int'>)"), which is the value shown, not the runtime's state
    r"(?<![\w'\"] \()<class '[\w.]+'>|"
    r"\b\w+Pool\(host=|"
    # a builtin sequence's lookup ("3 is not in list", "substring not found") and byte layouts ("unpack requires a
    # buffer of 4 bytes"): the program's containers, not the caller's domain
    r"\bnot in (?:list|tuple)\b|\bsubstring not found\b|\bmath (?:domain|range) error\b|"
    # Python's object model ("'float' object cannot be interpreted as an integer", "expected str instance, int
    # found", "dictionary update sequence element #0") and jq's typed evaluation ("Cannot iterate over null",
    # 'string ("x") and number (1) cannot be added'): the program's types, not the caller's domain
    r"'\w+' object (?:is not|has no(?! attribute '(?!__)[A-Za-z_]\w*')|cannot|does not)\b|\bexpected \w+ instance\b|\bsequence (?:item|element) #?\d+\b|"
    r"\bcannot (?:iterate over|index) (?:null|number|string|boolean|array|object)\b|"
    r"\b(?:null|number|string|boolean|array|object) \([^)\n]*\) and (?:null|number|string|boolean|array|object) \([^)\n]*\) cannot be \w+|\bbuffer of \d+ bytes?\b|\bbuffer (?:overflow|too small)\b",
    re.IGNORECASE,
)

STACK_RE = re.compile(
    r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+|^\s*at [\w$.<>]+ \(?[^\s()]+:\d+(?::\d+)?\)?|"
    r"^\s*at [\w$.<>]+ \((?:<anonymous>|native)\)\s*$|"
    r"^\s*at [\w$.]+\([\w$]+\.(?:java|kt|scala):\d+\)|\b[\w\-/\\]+\.(?:py|js|mjs|ts|tsx|java|go|rb|cs|php|rs|kt|scala|cpp|c)"
    r":\d+|goroutine \d+ \[|panicked at|"
    # a source location written file(line): "at main.c(1338)", MSVC's "app.cpp(12)"
    r"\b[\w\-/\\]+\.(?:c|cc|cpp|h|hpp|cs|java|go|rs)\(\d+\)|"
    # a stack's heading on a line of its own opens a trace whatever its frames look like: PHP's "Stack trace:", CMake's
    # "Call Stack (most recent call first):", Rust's "stack backtrace:"
    r"(?i:^[ \t]*(?:call stack|stack ?trace|stack traceback|(?:stack )?backtrace)(?: \(most recent call (?:first|last)\))?:[ \t]*$)",
    re.MULTILINE,
)
# One frame of a stack in the shape a runtime prints it; two or more of them are a trace (rule 7), whatever the
# language, while one alone may be a diagnostic's position ("main.rb:3:in `<main>': ...") or prose.
FRAME_RE = re.compile(
    # Ruby: the innermost frame heads the message, the callers follow as "from file:line:in `method'" (2.x-3.3 quote
    # with a backtick, 3.4 with an apostrophe; the file may be "-e", "(irb)" or "<internal:kernel>")
    r"^[ \t]*(?:from )?\S+:\d+:in [`'][^'\n]*'|"
    # PHP: "#0 /app/cart.php(14): array_sum('3,4')", "#1 [internal function]: f()", "#2 {main}"
    r"^#\d+ (?:\S[^\n]*\(\d+\): |\[internal function\]: |\{main\}[ \t]*$)|"
    # Lua: "\tapp.lua:8: in function 'notify'", "\t[C]: in ?", "(command line):1: in main chunk"
    r"^[ \t]*(?:\[C\]|[^\n:]+:\d+): in (?:main chunk|function\b|metamethod\b|upvalue\b|local\b|field\b|method\b|\?)|"
    # .NET and the JVM without a source file: "   at Shop.Cart.Checkout() in /src/Cart.cs:line 42",
    # "\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)"
    r"^[ \t]+at [\w.$`<>\[\],/+|-]+\([^()\n]*\)(?: in \S[^\n]*:line \d+)?[ \t]*$|"
    # gdb and the sanitizers: "#1  0x00007ffff79f3fb2 in raise () from /lib/...", "    #0 0x55e4c2 in use_cache (...)"
    r"^[ \t]*#\d+ +0x[0-9a-fA-F]+ in \S",
    re.MULTILINE,
)
STACK_KEYS = frozenset({"stack", "stacktrace", "stack_trace", "traceback", "backtrace", "exception_stack"})

HTML_RE = re.compile(r"^\s*(?:<!doctype html|<html\b|<\?xml)|<(?:html|head|body|title)\b[^>]*>", re.IGNORECASE)
# An HTML fragment without <html>/<body>: two or more block tags ("<h1>Bad Request</h1><p>...</p>").
HTML_BLOCK_TAG_RE = re.compile(r"</?(?:h[1-6]|p|pre|center|hr|div|table|ul|li|br|span|a)\b[^>]*>", re.IGNORECASE)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\ufffd]")

TRANSIENT_RE = re.compile(
    r"\b429\b|\b50[234]\b|\b529\b|(?<!set a )(?<!set the )(?<![a-z])rate.?limit(?:ed|ing|s)?(?![a-z])|too many requests|throttl|overloaded|timed ?out\b|time out\b|"
    # "timeout" as the name of a setting ("timeout value is negative", "timeout parameter") is no event
    r"\btimeout\b(?!\s*(?:value|values|param\w*|setting|option|field|arg\w*|must|should|=|:\s*-?\d))|"
    r"deadline exceeded|connection (?:reset|refused|aborted|closed|issue|error|failure|failed|lost|dropped)|"
    # the connection's endpoint between its noun and its fate: "The connection to the server db:5432 was refused"
    r"\bconnection to (?:the )?(?:server |host )?\S{1,80} (?:was|has been) (?:refused|reset|closed|lost|dropped)\b|"
    r"lost (?:the )?connection|connect error|disconnect(?:ed)?\b|empty reply from (?:the )?server|econn(?:reset|refused|aborted)|"
    r"server has gone away|"
    r"etimedout|socket hang up|broken pipe|service (?:temporarily )?unavailable|temporarily unavailable|"
    r"\b(?:site|server|host|service|backend|upstream|endpoint|api|gateway) (?:is )?(?:temporarily )?"
    r"(?:unavailable|down|unreachable)\b|\bunreachable\b|"
    r"(?:failed|unable|could ?n[o']t|can(?:no|')t) (?:to )?connect|couldn't connect|"
    r"name or service not known|temporary failure in name resolution|could not resolve host|\benotfound\b|\beai_again\b|name[_ ]not[_ ]resolved|unknown ?host(?:exception)?\b|"
    r"(?:remote end|peer|server) closed (?:the |an? )?(?:idle )?connection|remote ?disconnected|unexpected eof|eof occurred|"
    r"(?:remote end|peer|server) hung up|"
    r"bad gateway|gateway time-?out|(?:database|table|resource) is locked|lock contention|deadlock",
    re.IGNORECASE,
)
RETRY_GUIDANCE_RE = re.compile(
    # "retry" is guidance unless it is a program's label of its own retrying ("bash: fork: retry: Resource ...")
    r"retry(?!:)|try again (?:later|in|after)|please try again later|wait\b|resets? at|backoff|"
    r"(?:call|run|send)\b[^.\n]{0,40}\bagain\b|"
    r"is_retri?able|retry_after",
    re.IGNORECASE,
)

SECRET_RES = (
    re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z\-_]{35}\b"),
    re.compile(r"-----BEGIN (?:[A-Z ]+ )?PRIVATE KEY-----"),
    re.compile(r"\b[Bb]earer\s+[A-Za-z0-9\-._~+/]{20,}=*"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token)\s*[=:]\s*['\"]?[^\s'\"*]{6,}"),
)
SSN_RE = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
CARD_RE = re.compile(r"\b(?:\d[ \-]?){13,19}\b")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# --- checks -------------------------------------------------------------------------


# "ParseError", "OperationalError": an exception class classifies the failure, as "error" does; it is no content.
EXCEPTION_CLASS_TOKEN_RE = re.compile(r"\b(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b")


# A token that mixes letters and digits is a value (an id, a hash, a version), never a word: "7f3a9c2e" is no "f a c e"
_MIXED_TOKEN_RE = re.compile(r"[^\s\d]*\d[^\s]*")


def _content_words(view: MessageView) -> list[str]:
    body = _MIXED_TOKEN_RE.sub(" ", EXCEPTION_CLASS_TOKEN_RE.sub(" ", view.body))
    return [w for w in _WORD_RE.findall(body.lower()) if w not in GENERIC_WORDS]


# What happened on the wire, as opposed to a word such as "timeout" used as the name of a setting or program.
_TRANSIENT_EVENT_RE = re.compile(
    r"\b(?:429|50[234]|529)\b|timed? out\b|connection (?:reset|refused|aborted|closed)|econn\w+|"
    r"\bconnection to (?:the )?(?:server |host )?\S{1,80} (?:was|has been) (?:refused|reset|closed|lost|dropped)\b|"
    # a rate limit that was hit, not a setting called "rate limit" ("must be provided together to set a rate limit")
    r"rate.?limit(?:ed|ing)?\b(?! ?(?:window|count|setting|config\w*|polic\w+|value|field|param\w*))(?!\s+(?:must|should|is required))|"
    r"too many requests|unavailable|overloaded|name or service not known|name resolution|resolve host|enotfound|eai_again|name[_ ]not[_ ]resolved|unknown ?host(?:exception)?\b|"
    r"lost (?:the )?connection|connect error|connection (?:failure|failed|lost|dropped)|disconnect(?:ed)?\b|empty reply from|"
    r"server has gone away|"
    r"timeout (?:\d+\s*m?s )?exceeded|timeout expired|\w*timeout(?:error|exception)|request timeout|unreachable|"
    r"closed (?:the |an? )?(?:idle )?connection|remote ?disconnected|unexpected eof|hung up|"
    r"\b(?:is|are|went) down\b",
    re.IGNORECASE,
)


def _transient_named(view: MessageView) -> bool:
    # several rules ask; the answer is a function of the view, so it is computed once per message
    cached = view.__dict__.get("_transient_named")
    if cached is None:
        cached = view.__dict__["_transient_named"] = _transient_named_uncached(view)
    return cached


def _transient_named_uncached(view: MessageView) -> bool:
    if not (TRANSIENT_RE.search(view.prose) or (view.obj is not None and _status(view) in {429, 502, 503, 504, 529})):
        return False
    # A rejected input ("timeout: invalid time interval 'abc'") is a validation error whatever words it uses.
    # So is a constraint on a setting ("timeout must be a positive integer").
    if ((INVALID_RE.search(view.body) and view.specifics) or view.has_constraint) and not _TRANSIENT_EVENT_RE.search(
        view.prose
    ):
        return False
    return True


def _status(view: MessageView) -> int | None:
    for obj in view.objs:
        for key in ("status", "status_code", "statusCode", "code", "error", "cod", "http_status"):
            value = obj.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
            if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
                return int(value)
    return None


# a whole message that is one snake_case code or one number ("Err: -1" after its prefix)
SNAKE_CODE_RE = re.compile(r"[a-z]+(?:_[a-z]+)+|-?\d{1,6}")


def check_bare_status(view: MessageView, ctx: Context) -> bool:
    body = view.body
    if not body:
        return view.obj is not None and _status(view) is not None
    # The text is a status code or reason phrase and nothing else, maybe behind a short label ("EdenAI Server: ").
    label = re.match(r"^[\w .\-]{1,30}:\s+(?=\S)", body)
    # a process's bare exit status ("exit status 1") is a code too: which command, and why?
    bare = BARE_STATUS_RE.match(body) or (label and BARE_STATUS_RE.match(body[label.end():])) or EXIT_CODE_RE.fullmatch(body)
    # the whole message is one machine code in snake_case ("invalid_grant", "channel_not_found"); after a label
    # the same shape is the value ("no such table: order_items")
    bare = bare or SNAKE_CODE_RE.fullmatch(body)
    if bare and re.search(r"\b(?:no such|unknown|not found|invalid|unsupported|unrecogni[sz]ed)\b[^:\n]*:\s*\S+$", body, re.I):
        bare = None  # "no such function: DATE_TRUNC": after a lookup's label the code-shaped token is the value
    return bool(bare) and (bool(NUMBER_RE.search(body)) or not view.has_remedy)


def errno_without_subject(body: str) -> str | None:
    """An OS error that names its errno but not the path or address it failed on, else ``None``."""
    m = ERRNO_RE.match(body)
    if m is None:
        return None
    rest = m.group("rest")
    return m.group(0).strip() if not find_specifics(rest) else None


def check_bare_exception(view: MessageView, ctx: Context) -> bool:
    if NAMES_CALLER_VALUE_RE.search(view.body) and not RUNTIME_MESSAGE_RE.search(view.body):
        return False  # "got an unexpected keyword argument 'cabin'": names what to change
    if errno_without_subject(view.body):
        return True  # "[Errno 98] Address already in use": which address?
    runtime = RUNTIME_MESSAGE_RE.search(view.body)
    # "invalid resource_id, must be an integer ...: strconv.Atoi: parsing "abc": invalid syntax": the message
    # states the expected form, then, after a colon, the runtime text as its cause; that is not a runtime message
    constraint = CONSTRAINT_RE.search(view.body)
    # 'Invalid format for "task_list". Expected a list but got <class 'str'>.': the field, the expected form,
    # then the type received written as a repr; that is a validation message, not a runtime one
    received = runtime is not None and runtime.group(0).startswith("<class")
    if received and constraint and constraint.start() < runtime.start() and QUOTED_RE.search(view.body[: constraint.start()]):
        runtime = None
    # a runtime message followed by what to do ("out of memory ...; reduce the batch size") has a way forward
    if runtime and view.has_next_step and _instructs(view.body[runtime.end():]):
        runtime = None
    if runtime and not (constraint and ": " in view.body[constraint.end() : runtime.start()]):
        return True
    if INTERNAL_ERROR_RE.match(re.sub(r"^(?:(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception):\s*)+", "", view.body)):
        return True  # "internal error: gqlClient is required ...": the server's own fault, nothing for the caller
    if _runtime_class_without_caller_value(view):
        return True
    if view.has_remedy and not EXCEPTION_LINE_RE.search(view.prose):
        return False
    head = view.body.split("\n", 1)[0].strip()
    if EXCEPTION_NAME_RE.match(head):
        tail = head.split(":", 1)[1] if ":" in head else ""
        tail = re.sub(r"^\s*|\(.*\)$", "", tail)
        # "KeyError: 'x'": the exception names a key or value, not what was wrong with the request
        # (a quoted sentence, "'No time zone found with key X'", is a message, judged as one).
        quoted_words = [m.group(0) for m in QUOTED_RE.finditer(tail) if " " not in m.group(0).strip()]
        # "KeyError: 0", "IndexError: 3": a bare number is a key as much as a quoted word is
        bare = len(_WORD_RE.findall(QUOTED_RE.sub(" ", tail))) <= 1 and (
            quoted_words or not tail.strip() or bool(re.fullmatch(r"\s*-?\d+\s*", tail))
        )
        # ... unless the class itself says what went wrong ("UnknownTimeZoneError: 'Mars/Olympus'"): a class
        # named only by the runtime's generic words (KeyError, LookupError, RuntimeError) says nothing
        if bare and (not tail.strip() or not _domain_class(EXCEPTION_NAME_RE.match(head).group(0))):
            return True
    if EXCEPTION_LINE_RE.search(view.prose):
        return True
    for obj in view.objs[:1]:
        for key in ("error", "type", "name", "exception"):
            value = obj.get(key)
            if isinstance(value, str) and EXCEPTION_NAME_RE.fullmatch(value.strip()):
                return True
    return False


# The runtime's own exception classes (Python's builtins, JavaScript's, .NET's System.*, Java's java.lang.*, Go's
# runtime panic), heading the message, maybe behind a program's label ("sklearn: ValueError: ...").
RUNTIME_CLASS_HEAD_RE = re.compile(
    # (not AssertionError, whose message a test author wrote, nor the argument-validation classes of Java and .NET)
    r"^(?:[\w.\-]+: )?(?:(?:builtins\.)?(?:Value|Type|Index|Key|Attribute|Runtime|ZeroDivision|Overflow|Recursion|"
    r"NotImplemented|UnboundLocal|Memory|Buffer|Lookup|Arithmetic|EOF|Unicode\w*|System|Range|Reference)Error|StopIteration|"
    r"System\.(?:[A-Z]\w*\.)*(?!\w*Argument)[A-Z]\w*Exception|java\.lang\.(?!\w*Argument)[A-Z]\w*(?:Exception|Error)|"
    r"panic: runtime error)(?::\s*|\s*$)"
)


def _runtime_class_without_caller_value(view: MessageView) -> bool:
    """A runtime exception whose message names nothing the caller passed: its numbers, shapes and sizes are the
    program's ("index 5 is out of bounds for axis 0 with size 3", "not enough values to unpack (expected 3, got 2)")."""
    m = RUNTIME_CLASS_HEAD_RE.match(view.body)
    # what the program expected ("expected 3, got 2") is its own contract, not a remedy; an instruction is one
    if m is None or _instructs(view.body) or NAMES_CALLER_VALUE_RE.search(view.body):
        return False
    tail = view.body[m.end():]
    if _tool_wording(m.group(0), tail):
        return False
    if re.search(
        r"\b(?:is|are|was|were) (?:negative|non-positive|zero)\b|\bdoes(?: not|n't) match (?:the )?[a-z]\w*|"
        r"\b(?:more|less) recent\b|\b(?:newer|older) than\b",
        tail,
    ):
        return False  # "timeout value is negative", "length of values (3) does not match length of index (4)": said of named things
    if UNCLOSED_CONSTRUCT_RE.search(tail) and not POSITION_RE.search(tail):
        return False  # "No closing quotation": a construct of the caller's own input left open, which it can close
    if re.search(r"\d+(?:[.:]\d+){2,}|\d/\d", tail):
        return False  # an address or a version it was given ("10.0.0.1/24 has host bits set")
    # a value introduced by the attribute it was looked up by is the caller's, a number too ("no task with id 77")
    if any((a.group(1) or "").lower() not in GENERIC_WORDS for a in ATTRIBUTE_VALUE_RE.finditer(tail) if a.group(1)):
        return False
    # numbers, shapes and the runtime's own type names ('float', 'NoneType') are the program's, not the caller's
    values = [
        v for v in find_specifics(tail)
        if not re.fullmatch(r"[\d.,:;x\-\[\]() ]+", v) and not BUILTIN_TYPE_RE.fullmatch(v.strip("'\"`"))
        and not re.fullmatch(r"[a-z]+(?:-[a-z]+)+", v)  # an English compound ("zero-size", "out-of-bounds")
    ]
    return not values


# Python's builtin classes that no JavaScript runtime raises. CPython words its own messages in lower case ("list index
# out of range", "month must be in 1..12"); a capitalised sentence that names a thing by its proper name ("User Alice
# already in the users list") is a tool's own message raised with the builtin class, and one that states a
# precondition on the caller's input ("Cannot choose from an empty sequence") is rule 18's.
_PYTHON_ONLY_CLASS_RE = re.compile(
    r"^(?:[\w.\-]+: )?(?:builtins\.)?(?:Value|Index|Key|Attribute|Runtime|ZeroDivision|Overflow|Recursion|NotImplemented|"
    r"UnboundLocal|Memory|Buffer|Lookup|Arithmetic|EOF|Unicode\w*|System)Error\b"
)


def _tool_wording(head: str, tail: str) -> bool:
    """Whether a builtin exception's message is the program's own account of what the caller gave, not the runtime's
    internals: after a Python-only class, a capitalised sentence naming a thing by its proper name or stating a
    precondition on the input ("Cannot choose from an empty sequence"); a requirement said of a named thing ("Currency code
    is required", not "a real number is required"); a rejected value shown after its label ("Invalid count value:
    -1"); an argument named before what it expected ("key: expected bytes or bytearray")."""
    if _PYTHON_ONLY_CLASS_RE.match(head) and re.match(r"[A-Z][a-z]", tail):
        if re.search(r"\s[A-Z][a-z]+\b", tail) or re.match(r"Cannot \w+ [\w ]{0,30}?\ban? empty \w+", tail):
            return True
        # a capitalised sentence that states a constraint on the input ("Amount must be positive", "Passenger name
        # cannot be empty") is the tool's rule for the caller, not the runtime's account of its own state
        # (a state is not enough: the runtime capitalises some of its own, "This event loop is already running")
        if CONSTRAINT_RE.search(VACUOUS_CONSTRAINT_RE.sub(" ", tail)) and not re.search(
            r"\b(?:expected|expects?|expecting)\b", tail, re.I
        ):
            return True
    if re.search(r"(?:^|[.;:]\s+)(?!(?:an?|the|it|this)\s)[A-Za-z][\w ]{0,40}? (?:is|are) required\b", tail):
        return True
    if re.search(r"\binvalid [a-z][\w ]{0,30}?: ?\S", tail, re.IGNORECASE):
        return True
    return bool(re.match(r"[a-z_]\w*: expected\b", tail))


# the runtime's own type names, Python's and the C library's beneath it ("out of range for platform time_t")
BUILTIN_TYPE_RE = re.compile(
    r"int|float|str|bytes|bool|list|dict|tuple|set|frozenset|NoneType|object|complex|type|function|"
    r"(?:Py_)?s?size_t|time_t|off_t|u?int(?:8|16|32|64)_t|u?intptr_t|ptrdiff_t"
)


# The words of the runtime's own exception classes: KeyError, IndexError, LookupError, RuntimeError, OSError...
_RUNTIME_CLASS_WORDS = frozenset(
    "key index attribute value type lookup runtime assertion os io environment reference range syntax name not "
    "implemented unicode decode encode overflow zero division memory recursion stop iteration base exception error "
    "internal client server http request response api service generic unknown fatal system exit keyboard interrupt "
    "cancelled canceled".split()
)


def _domain_class(name: str) -> bool:
    """The exception class names a domain ("UnknownTimeZoneError", "InvalidVersion"), not only a runtime category."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", name.split(".")[-1])
    return any(w.lower() not in _RUNTIME_CLASS_WORDS for w in words)


# "The specified bucket does not exist": the value looked up is referred to, not named.
UNNAMED_REFERENCE_RE = re.compile(
    r"\b(?:the|this|that|your) (?:specified|provided|given|requested|supplied|selected|referenced) \w+", re.IGNORECASE
)


# "get_project: project was not found": the tool or operation the message comes from, then the message.
OPERATION_LABEL_RE = re.compile(r"^[A-Za-z_][\w.\-]*:\s+(?=[A-Za-z])")


def check_not_found_unnamed(view: MessageView, ctx: Context) -> bool:
    if not view.english or not NOT_FOUND_RE.search(view.body) or view.has_remedy:
        return False
    if NAMES_CALLER_VALUE_RE.search(view.body):
        return False  # "ls: notes: No such file or directory": the operand before the errno text is what was missing
    label = OPERATION_LABEL_RE.match(view.body)
    if label and not find_specifics(view.body[label.end():]):
        return True
    if UNNAMED_REFERENCE_RE.search(view.body):
        # named only if a quoted value, path or URL appears (an operation name or error code is not the value)
        return not (QUOTED_RE.search(view.body) or PATH_RE.search(view.body) or URL_RE.search(view.body))
    return not view.specifics


# A rejection that shows neither the value (only "the specified/provided/given X") nor the form it failed (only "the
# schema", "the format", "the pattern"): "The specified alg value is not allowed", "The provided document does not match
# the schema" (labelling rules 3 and 4); a mismatch with a named thing ("does not match the passenger name") is a state
REJECTED_UNSHOWN_RE = re.compile(
    r"\b(?:the|this|that|your) (?:specified|provided|given|requested|supplied|selected) [\w ]{1,30}? (?:is|are) not "
    r"(?:allowed|permitted|accepted)\b|"
    r"\b(?:does|do)(?: not|n't) (?:match|conform to|comply with) (?:the |its |an? )?(?:(?:expected|required|allowed|valid|"
    r"defined|declared|json|table|key) )?(?:schema|format|pattern|regex|regular expression|syntax)\b(?!\s*[:'\"`(])",
    re.IGNORECASE,
)


def _rejected_unshown(view: MessageView) -> re.Match[str] | None:
    m = REJECTED_UNSHOWN_RE.search(view.body)
    # "The specified log level 'verbose' is not allowed" shows the value
    return None if m is None or (m.group(0)[:3].lower() in ("the", "thi", "tha", "you") and QUOTED_RE.search(view.body)) else m


def check_invalid_without_expected(view: MessageView, ctx: Context) -> bool:
    # "Input should be a valid date" rejects the value as "invalid date" does, and names no form either
    unshown = _rejected_unshown(view)
    rejects = INVALID_RE.search(view.body) or VACUOUS_CONSTRAINT_RE.search(view.body) or unshown
    if not view.english or not rejects or SELF_DESCRIBING_RE.search(view.body):
        return False
    if NAMES_CALLER_VALUE_RE.search(view.body):
        return False  # "EISDIR: illegal operation on a directory, unlink '/tmp'": errno, operation and path
    if re.search(r"\b(?:perhaps|maybe|possibly|probably|likely)\b[^.;\n]{0,60}?\b(?:is|are) (?:invalid|wrong|incorrect)\b", view.body, re.I):
        return False  # "Could not route to /zones/..., perhaps your object identifier is invalid?": a diagnosis, no rejection
    # the value of a standard form must be given, quoted or after a colon ("unknown url type: ftp2"), not just any
    # name ("Invalid JSON argument used with github for create_issue" does not show the JSON)
    form = STANDARD_FORM_RE.search(view.body)
    # ... or an identifier right after the form ("unsupported hash type sha999")
    after = view.body[form.end() :] if form is not None else ""
    given = form is not None and bool(
        QUOTED_RE.search(view.body) or re.search(r":\s+\S", after) or re.match(r"\s+[\w.\-]*\d[\w.\-]*", after)
    )
    if NAMED_SCHEMA_OR_ID_RE.search(view.body) or given or action_value(view.body):
        return False
    # "Unknown resource: 'data://users/42'": the value is an address (URI, path), looked up like an id, not a
    # value of an enumeration; naming it is enough
    if re.search(r"\bunknown\b", view.body, re.IGNORECASE) and re.search(r"\b[a-z][\w+.\-]*://\S", view.body, re.IGNORECASE):
        return False
    # a parser's rejected character or token, shown (rule 11): "illegal character: ^", "unexpected token '}'"
    if re.search(r"\b(?:character|char|token)s?\b:?\s*(?:['\"`‘][^'\"`’\n]{1,20}['\"`’]|[^\s\w](?=\s|$))", view.body, re.I):
        return False
    # a rejection that says why ("Invalid code: this code has been revoked", "hunk for path 'x' is empty"); a mismatch
    # with a schema or format that is not shown is no state
    if STATE_RE.search(view.body) and not unshown:
        return False
    # "Invalid request" rejects nothing in particular: that is generic wording (LS101), not a rejected value
    return not view.has_remedy and bool(view.specifics or _content_words(view))


# A Python syntax-error report: one frame in the model's own code ("<string>", "<stdin>"), the line and a
# caret, then what is wrong. It points at the fix; it is not a stack trace.
SYNTAX_REPORT_RE = re.compile(
    r"^\s*File \"<(?:string|stdin|unknown|input)>\", line \d+\n.*\n\s*\^+\s*\n(?:SyntaxError|IndentationError|TabError): .+",
    re.DOTALL,
)


# A compiler's or linter's diagnostic heads with the source position it is about ("a.c:1:20: error: ...",
# rustc's " --> b.rs:1:12"): one location in the code the model wrote, pointing at the fix; not a stack of frames.
DIAGNOSTIC_LOCATION_RE = re.compile(
    r"^[\w.\-/\\]+:\d+(?::\d+)?: (?:fatal )?(?:error|warning|note)\b|^\s*--> [\w.\-/\\]+:\d+(?::\d+)?\s*$|"
    # Go's compiler gives file, line and column and no severity: "./main.go:5:2: undefined: x"
    r"^\.{0,2}/?[\w.\-/\\]+\.\w{1,5}:\d+:\d+: (?=\S)|"
    # Ruby heads its message with the one place it happened: "main.rb:3:in `<main>': undefined ..." (later
    # "from x.rb:2:in ..." lines are still frames)
    r"^[\w.\-/\\]+\.rb:\d+:in `[^'\n]+': (?=\S)",
    re.MULTILINE,
)


def check_stack_trace(view: MessageView, ctx: Context) -> bool:
    if "Traceback" not in view.raw and SYNTAX_REPORT_RE.match(view.raw):
        return False
    text = view.raw if "Traceback" in view.raw else DIAGNOSTIC_LOCATION_RE.sub(" ", view.raw)
    if STACK_RE.search(text) or view.json_keys & STACK_KEYS:
        return True
    return "\n" in view.raw and len(FRAME_RE.findall(view.raw)) >= 2


def check_html_or_blob(view: MessageView, ctx: Context) -> bool:
    text = view.raw
    if HTML_RE.search(text) or len(HTML_BLOCK_TAG_RE.findall(text)) >= 3:
        return True
    if text and len(_CONTROL_RE.findall(text)) > max(2, len(text) // 20):
        return True
    stripped = text.rstrip()
    # a cut-off JSON document; "[ERROR] Failed to ..." opens with a log level, not with JSON
    json_like = re.match(r"\s*(?:\{\s*[\"'}]|\[\s*[\"{\[\d\-\]])", stripped) is not None
    if len(stripped) >= 200 and (stripped.endswith(("...", "…")) or (json_like and view.obj is None and stripped[-1] not in "}]")):
        return True
    return False


def check_transient_reached_model(view: MessageView, ctx: Context) -> bool:
    # outcome transient_fail means the tool did retry and gave up: reporting it is right.
    if not ctx.is_error or ctx.outcome == "transient_fail":
        return False
    return _transient_named(view)


def check_transient_no_guidance(view: MessageView, ctx: Context) -> bool:
    if not _transient_named(view):
        return False
    if RETRY_GUIDANCE_RE.search(view.prose) or view.json_keys & {"is_retriable", "retry_after", "retry_after_seconds", "retryable"}:
        return False
    if _instructs(view.body) or RECOVERY_RE.search(view.body):
        return False  # "... or have a connection issue. Try a different URL or approach.": a way forward
    return True


# How to recover from a transient failure other than waiting: "bash ... must be restarted", "reconnect first".
RECOVERY_RE = re.compile(
    r"\b(?:must|needs? to|should|has to) be (?:restarted|reconnected|re-?opened|re-?started|re-?initiali[sz]ed)\b|"
    r"\b(?:restart|reconnect|re-?open|re-?initiali[sz]e)\b(?= (?:the|it|your|a|with)\b)",
    re.IGNORECASE,
)


def _retry_guided(view: MessageView) -> bool:
    """A transient failure that says to try again later: for a transient failure, that is the remedy (seed 001)."""
    return _transient_named(view) and bool(RETRY_GUIDANCE_RE.search(view.prose))


def check_generic_wording(view: MessageView, ctx: Context) -> bool:
    if not view.english or view.specifics or view.has_remedy or _retry_guided(view):
        return False
    return not _content_words(view)


# "apiClient not available", "Runtime not initialized": the tool's own component is not ready; the caller can
# neither name nor change it, so naming the component (even as an identifier) is no remedy
INTERNAL_NOT_READY_RE = re.compile(
    r"^[\w.\- ]{1,40}? (?:is |was |are )?(?:not (?:available|initiali[sz]ed|loaded|ready|set up)|unavailable|uninitiali[sz]ed)$",
    re.IGNORECASE,
)


# Where in an input a parser stopped: "line 1, column 8", "at position 4", "(char 5)".
POSITION_RE = re.compile(
    r"\b(?:(?:at )?line \d+\s*[,:]?\s*)?(?:column|col|char|character|position|pos|offset) \d+\b(?:\s*\(char \d+\))?|"
    # an input's name and a line number heading the message: "(standard_in) 2: syntax error", "<stdin>:3: parse error"
    r"^\s*(?:\([\w.\-]+\)|<[\w.\-]+>|-|stdin|standard[ _]input)(?: |:)\d+(?::\d+)?:(?=\s)|"
    # a shell's script line: "sh: 1: Syntax error: ...", "bash: line 3: syntax error ..."
    r"^\s*(?:[\w.\-/]*sh): (?:line )?\d+:(?=\s)",
    re.IGNORECASE | re.MULTILINE,
)
# A closing token of the caller's own input named as missing: "No closing quotation", "'[' was never closed"; like
# "missing )", it says what to add (labelling rule 11)
UNCLOSED_CONSTRUCT_RE = re.compile(
    r"\bno closing (?:quot\w+|quotes?|bracket|brace|paren\w*|tag|delimiter)\b|\bwas never closed\b", re.IGNORECASE
)
PARSE_RE = re.compile(
    r"\b(?:pars(?:e|er|ing)|syntax|token|tag|literal|delimiter|decod\w+|unterminated|unbalanced|unmatched|unclosed)\b|"
    r"(?:Decode|Parse|Parser|Syntax|Scanner|Expat)Error\b",
    re.IGNORECASE,
)


def _only_a_position(view: MessageView) -> bool:
    """A parser's message whose only value is where it stopped: the model cannot see that input (labelling rule 11)."""
    if not PARSE_RE.search(view.body) or not POSITION_RE.search(view.body):
        return False
    # the exception's class ("json.decoder.JSONDecodeError") is a label, not a value
    return not find_specifics(EXCEPTION_CLASS_TOKEN_RE.sub(" ", POSITION_RE.sub(" ", view.body)))


_STATE_FILLER = frozenset("exists exist is are was were be been action available valid active".split())
# the state words that say nothing of what is in the state ("Insufficient Balance" names the balance)
_BARE_STATE_WORDS = frozenset(
    "already expired blocked locked disabled suspended closed cancelled canceled archived deleted declined revoked "
    "in progress use read only empty is are was were no longer more".split()
)


# A state said of a named subject in one copular sentence: "Account is frozen.", "The event is sold out", "Device is not
# paired". The predicate says how the thing the call named stands, which is what went wrong (labelling rule 15), unless
# it only judges the input (invalid, wrong, missing, too long), reports a failure or a fault of the runtime's own objects.
COPULAR_STATE_RE = re.compile(
    r"^(?:the |your |this |that |my |our )?(?P<subject>[A-Za-z][\w'\-]*(?: [\w'\-]+){0,3}?) "
    r"(?:is|are|was|were|has been|have been)(?: currently| already| now| still)? "
    r"(?P<predicate>(?:not |no longer )?[a-z][\w\-]*(?: [a-z][\w\-]*){0,2})[.!]?$",
    re.IGNORECASE,
)
_JUDGEMENT_RE = re.compile(
    r"\b(?:invalid|incorrect|wrong|bad|missing|unknown|required|null|none|nil|undefined|malformed|corrupt\w*|broken|"
    r"unsupported|unavailable|busy|down|unreachable|too|denied|forbidden|unauthori[sz]ed|allowed|permitted|valid|"
    r"found|defined|exceeded|failed|failing|out of range|out of bounds|iterable|callable|subscriptable|serializable|"
    r"readable|writable|possible|available|ready|initiali[sz]ed|set|specified|provided|supported|recogni[sz]ed|"
    r"implemented|error|problem|issue|a problem|"
    # an authentication gap ("User is not logged in") needs its next step (rule 15), a state does not
    r"logged|signed|authenticated|authori[sz]ed)\b",
    re.IGNORECASE,
)
# subjects that name no thing the call passed: the call itself, its parts in general, the plumbing
_UNNAMED_SUBJECTS = frozenset(
    "it this that something request operation input inputs value values data response result results server service "
    "api system parameter parameters argument arguments field fields key object connection socket stream pipe network "
    "there action call process".split()
)


def _copular_state(body: str) -> re.Match[str] | None:
    m = COPULAR_STATE_RE.match(body.strip())
    if m is None:
        return None
    subject = _WORD_RE.findall(m.group("subject").lower())
    # "No user is logged in": a subject that is an absence names nothing
    if not subject or subject[0] in {"no", "none", "nothing", "nobody"} or subject[-1] in _UNNAMED_SUBJECTS:
        return None
    if all(w in GENERIC_WORDS for w in subject):
        return None
    return None if _JUDGEMENT_RE.search(m.group("predicate")) else m


def check_vague(view: MessageView, ctx: Context) -> bool:
    if view.english and INTERNAL_NOT_READY_RE.match(view.body) and not view.has_remedy and not _transient_named(view):
        return True
    position_only = _only_a_position(view)
    specific = view.specifics and not position_only
    # a parser's defect ("Unterminated string", "nothing to repeat") is no state when a position is all it shows;
    # without one, a closing token named as missing ("No closing quotation") is what "missing )" is: what to add
    state = None if position_only else (
        STATE_RE.search(view.body) or UNCLOSED_CONSTRUCT_RE.search(view.body) or _copular_state(view.body)
    )
    # "Expired", "Already exists", "Action blocked": a state of no named thing, in a word or three
    if (
        state
        and len(_WORD_RE.findall(view.body)) <= 3
        and set(_WORD_RE.findall(state.group(0).lower())) <= _BARE_STATE_WORDS
        and not [w for w in _WORD_RE.findall(STATE_RE.sub(" ", view.body).lower()) if w not in GENERIC_WORDS | _STATE_FILLER]
    ):
        state = None
    if not view.english or specific or view.has_remedy or state or _retry_guided(view):
        return False
    self_describing = SELF_DESCRIBING_RE.search(view.body)
    if self_describing and not NUMERIC_KIND_RE.fullmatch(self_describing.group(0)):
        return False  # "not a valid key, value dictionary" names the expected form; "Invalid length" names no value
    if NAMES_CALLER_VALUE_RE.search(view.body):
        return False  # "ReferenceError: lodash is not defined": the name the caller's code used
    # Long prose usually explains itself; the rule targets short statements with nothing to act on. A parser's
    # account of where it stopped is longer and still shows nothing (labelling rule 11).
    return 0 < len(_content_words(view)) <= (20 if position_only else 8)


# "Background process history lookup failed for PID 4242", "Path resolution failed", "Command '[...]' returned
# non-zero exit status 1": the failure and its target, no cause.
FAILED_AFTER_RE = re.compile(
    r"^(?P<what>[^\n]{1,120}?) (?:failed|was unsuccessful|returned non-zero exit status \d+|returned \d+ exit status|"
    r"returned (?:no (?:results?|data|output|response)|nothing|an empty (?:result|response))|"
    r"(?:exited|failed|completed|finished|terminated) with (?:exit |return )?(?:code|status) \[?\d+\]?)(?!\w)(?: (?:for|on|with|at|in))?(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)


# A conversion between named types: the target type is a standard form, so with the value shown the fix is evident.
TYPED_CONVERSION_RE = re.compile(
    r"\bconver(?:t|ting|sion)\b[^\n]{0,60}?\bto [`'\"]?(?:int|integer|[iu](?:8|16|32|64|128)|int(?:8|16|32|64)|u?int\d*|"
    r"float(?:32|64)?|f32|f64|double|decimal|number|numeric|bool(?:ean)?|json|date|datetime|timestamp|time)\b",
    re.IGNORECASE,
)


# An HTTP client's rendering of a server error on the URL it called (requests': "500 Server Error: Internal Server Error
# for url: https://..."), maybe inside its exception's repr: the server's fault on the target, no cause (rule 22)
SERVER_ERROR_RENDERING_RE = re.compile(
    r"(?:\b\w*Error\(['\"])?\b5\d\d Server Error: [^\n]*? for url: \S+?(?:['\"]\))?(?=[.;]?(?:\s|$))", re.IGNORECASE
)


def check_failure_without_cause(view: MessageView, ctx: Context) -> bool:
    if not view.english or view.has_remedy:
        return False
    if SERVER_ERROR_RENDERING_RE.search(view.body) and not _transient_named(view):
        # what follows the failure, once the server's error on the URL is taken out, must give the cause
        left = SERVER_ERROR_RENDERING_RE.sub(" ", view.body)
        report = FAILURE_REPORT_RE.search(left)
        after = left[report.end():] if report else left
        if not [w for w in _content_words_of(_without_values(after)) if w not in _OPERATION_WORDS]:
            return True
    # a chain of failure reports whose last link is only an exit status ("... failed: ...: exit status 1")
    head, sep, last = view.body.rpartition(": ")
    if sep and EXIT_CODE_RE.fullmatch(last.strip(" .")) and FAILURE_REPORT_RE.search(head) and not _transient_named(view):
        return True
    if NAMES_CALLER_VALUE_RE.search(view.body) and not RUNTIME_MESSAGE_RE.search(view.body):
        return False  # "Error reading file: [Errno 21] Is a directory: 'src'": an errno with its path is the cause (rule 12)
    before = FAILURE_CLAUSE_RE.match(view.body)
    m = before or FAILED_AFTER_RE.match(view.body)
    if m is None and not _transient_named(view):
        return _failure_reported_without_cause(view)
    if m is None or _transient_named(view):
        return False
    if before:
        # "Could not read certificate from j.pem\nUnable to load certificate": a later sentence that reports a
        # failure again restates it; it is not the cause, so only the other sentences can give one
        sentences = re.split(r"(?<=[.!?])\s+|\n+", view.body)
        kept = [sentences[0], *(x for x in sentences[1:] if not FAILURE_CLAUSE_RE.match(x.strip()))]
        if len(kept) < len(sentences):
            m = before = FAILURE_CLAUSE_RE.match("\n".join(kept)) or before
    if before and before.group(1).lower() in {"find", "locate"}:
        return False  # "Could not find user 'bob'": a lookup that missed, judged as not-found (LS104)
    if before and re.fullmatch(r"GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS", before.group(1)) and before.group("rest").startswith("/"):
        return False  # "Cannot GET /api/v1/userz": a web framework's route lookup that missed, with the route named
    if TYPED_CONVERSION_RE.search(view.body) and (QUOTED_RE.search(view.body) or re.search(r"\[[^\]]+\]", view.body)):
        return False  # "conversion from `str` to `i64` failed ... values: ["x"]": the types and the value are the cause
    # "UNIQUE constraint failed: users.email": the thing that failed is a named rule, which is the cause
    if not before and re.search(r"\b(?:constraint|assertion|precondition)\b", m.group("what"), re.IGNORECASE):
        return False
    rest = ELSEWHERE_RE.sub(" ", m.group("rest"))  # "due to 2 previous errors" points elsewhere: no cause
    # the runtime's errno number after its text ("Permission denied (os error 13)", Rust's io::Error) belongs to the
    # errno, as "[Errno 13]" does: the text is read as the errno text it is
    rest = OS_ERROR_NUMBER_RE.sub("", rest)
    if not before and "\n" in rest.strip():
        # "patch failed: a.txt:1\nerror: a.txt: patch does not apply": a later line that reports the failure again
        # restates it, as a later sentence does after "Could not ..."
        first, *later = rest.split("\n")
        rest = "\n".join([first, *(x for x in later if not FAILURE_REPORT_RE.search(x))])
    if ": " in rest and re.fullmatch(rf"(?:{ERRNO_TEXTS})", rest.rsplit(": ", 1)[1].strip(" ."), re.IGNORECASE) and (
        PATH_RE.search(rest) or QUOTED_RE.search(rest)
    ):
        return False  # "Could not open /var/db.sqlite: permission denied": the errno text on its path is the cause
    if ": " in rest and re.fullmatch(rf"(?:{ERRNO_TEXTS})", rest.rsplit(": ", 1)[1].strip(" ."), re.IGNORECASE) and not find_specifics(
        rest.rsplit(": ", 1)[0]
    ):
        return True  # "Failed to read file for post-processing: Is a directory": an errno text without its path (rule 12)
    if before and ": " in rest:
        # "Failed to retrieve the token with message: DefaultAzureCredential failed to retrieve a token from the included
        # credentials": a cause that reports the same failure again, by another component, restates it (rule 21)
        cause = rest.rsplit(": ", 1)[1]
        again = re.search(rf"\b(?:failed to|could not|couldn't|unable to|cannot|can't) {re.escape(before.group(1))}\b(?P<tail>.*)$", cause, re.I)
        if again and not (
            find_specifics(again.group("tail")) or STATE_RE.search(cause) or NOT_FOUND_RE.search(cause) or _transient_named(view)
            or re.search(r"\b(?:because|due to|since|caused by|[45]\d\d)\b|(?-i:\bE[A-Z]{3,}\b)", cause, re.I)
        ):
            return True
    if before and ": " in rest and _uninformative_cause(rest.split(": ", 1)[1]):
        return True  # "Error getting database size: Authentication required.", "...: command terminated with exit code 127"
    if before and ": " in rest:
        # "unable to open database '/tmp': unable to open database file": a cause that only repeats the failure
        target, cause = rest.rsplit(": ", 1)
        whole = rest.split(": ", 1)[1]  # the cause may hold its own label's colon: "No element found for selector: #x"
        if any(NOT_FOUND_RE.search(c) and find_specifics(c) for c in (cause, whole)):
            return False  # '...: namespaces "staging" not found': a lookup that missed, with its value, is the cause
        said = set(_content_words_of(view.body[: m.start("rest")] + " " + target))
        balanced = target.count("(") == target.count(")")
        words = _content_words_of(QUOTED_RE.sub(" ", cause))
        if balanced and words and not [w for w in words if w not in said]:
            return True
    # a client-error status on the named target says what was wrong with it (404: it does not exist); a server
    # error (500) is the server's fault and says nothing the caller can act on
    # ("Upload failed with status code 413" names no target: the status is then only a status, rule 13)
    cause = re.search(r"\b4\d\d\b|(?-i:\bE[A-Z]{3,}\b)|\b(?:because|due to|since|caused by)\b", EXIT_CODE_RE.sub(" ", rest), re.IGNORECASE)
    if cause and (not re.fullmatch(r"4\d\d", cause.group(0)) or find_specifics(STATUS_TOKEN_RE.sub(" ", view.body))):
        return False
    if before and ": " in rest and _value_only(rest.rsplit(": ", 1)[1]):
        # "failed to resolve git reference: refs/heads/x": after the colon comes the target (a value), no cause;
        # a failed conversion to a standard type ("could not convert string to float: 'x'") explains itself
        if not re.search(r"\bconvert\b.*\bto (?:int|integer|float|number|bool|boolean|json|date)\b", view.body, re.I):
            return True
    # what is left after the target (a path, URL, quoted value, id or number) must say why it failed;
    # after "X failed for ...", one noun naming the target ("for PID 4242") is still the target
    if before:
        # "Failed to parse manifest 'app.yaml'": the words before the first value describe the target
        # (the object of the verb); only what follows the target can be the cause
        # the first value is read whole: a URL's host ("example.com" in https://example.com/docs) is not a value of its own
        found = [(m.start(), -m.end()) for regex in (PATH_RE, URL_RE, QUOTED_RE, IDENT_RE, NUMBER_RE) for m in [regex.search(rest)] if m]
        if found:
            rest = rest[-min(found)[1]:]
    # "for user bob", "with name Alice": a value introduced by the attribute it was looked up by is the target
    for attribute in ATTRIBUTE_VALUE_RE.finditer(view.body):
        value = attribute.group(1) or ""
        rest = re.sub(rf"\b(?:{'|'.join(_ATTRIBUTE_NAMES)})\s+{re.escape(value)}\b", " ", rest) if value else rest
    for regex in (PATH_RE, URL_RE, QUOTED_RE, IDENT_RE, NUMBER_RE):
        rest = regex.sub(" ", rest)
    # a short parenthetical after the target still describes it: "could not compile `app` (bin "app")"
    rest = re.sub(r"\(\s*(?:\w+\s*){0,2}\)", " ", rest)
    # after "X failed:" the colon introduces the cause, so one word there is already one ("... failed: invalid
    # URL scheme 'htp'"); after "X failed for ..." one noun naming the target ("for PID 4242") is still the target
    after_colon = not before and re.match(r"\s*[:;]", m.group("rest")) is not None
    # a status's reason phrase is the status in words ("... status code 413 and error: Request Entity Too Large")
    rest = re.sub(rf"\b(?:{HTTP_REASONS})\b", " ", rest, flags=re.IGNORECASE)
    return len(_content_words_of(rest)) <= (0 if before or after_colon else 1)


# A failure reported anywhere in a sentence: "Booking BK-1 could not be updated", "Error processing request for
# user 42", "Payment for order 7781 was not successful", "Tool execution error in get_weather".
FAILURE_REPORT_RE = re.compile(
    r"\b(?:failed|failure|fail(?:s|ing)?|error(?:ed)?|could ?n[o']t (?:be )?\w+|unable to \w+|(?:was|were) (?:not |un)successful|"
    r"(?:raised|threw|thrown) an? (?:exception|error)|returned (?:an? )?(?:error|status)?:? ?5\d\d|abort(?:ed|ing)|"
    r"exception(?= (?:in|while|during|when|occurred)\b)|"
    # a negated outcome of the operation is its failure: "Order 552 was not deleted", "The files were not saved"
    r"(?:was|were)(?: not|n't) (?!found\b|made by\b)(?:\w+ed|sent|paid|built|run|done|written|taken)\b|"
    r"can(?:no|')t (?:process|complete|perform|handle|execute|fulfil+) |did not succeed|went wrong|unexpected(?:ly)? (?:error|problem|issue|failure|happened)|something unexpected|"
    r"(?:could|can) not be (?:performed|completed|processed|done)|(?:does|did) not apply)\b",
    re.IGNORECASE,
)
# "syntax error", "decode error", "validation error": the kind of error names what went wrong; other rules judge
# whether the message also names where (labelling rule 11). "Processing error", "execution error" name only an
# operation.
_CAUSE_KIND_RE = re.compile(
    r"\b(?:syntax|type|parse|parsing|parser|decode|decoding|encoding|validation|schema|format|quota|memory|disk|"
    r"overflow|ssl|tls|certificate|dns|integrity|constraint|duplicate|checksum|permission|authentication|"
    r"authori[sz]ation|urlopen)\s+error\b",
    re.IGNORECASE,
)
# "could not be decoded as utf-8", "failed to convert to integer": the standard form it was read as is the cause.
_STANDARD_TARGET_RE = re.compile(
    r"\b(?:as|to|into) (?:an? )?(?:utf-?\d+|ascii|latin-?1|json|xml|yaml|toml|csv|int(?:eger)?|u?int(?:8|16|32|64|128)|"
    r"[iuf](?:8|16|32|64|128)|float(?:16|32|64)?|double|number|date|datetime|bool(?:ean)?)\b",
    re.IGNORECASE,
)
# What a sentence says after its failure, when it gives the cause: "...: disk quota exceeded", "... because ...".
_CAUSE_SEPARATOR_RE = re.compile(r":\s+|\s+-+\s+|;\s+|\b(?:because|due to|since|caused by|as a result of)\b", re.IGNORECASE)


ELSEWHERE_RE = re.compile(
    r"\b(?:due to|because of|caused by|see) (?:the |some )?(?:\d+ )?(?:previous|above|earlier|prior|other|\w+ion)? ?errors?\b",
    re.IGNORECASE,
)


def _failure_reported_without_cause(view: MessageView) -> bool:
    """The text reports that something failed, and on what, but nothing says why or what to do.

    The values it names (an id, a path, a number) are what it failed *on*, not *what went wrong*; a cause is a
    state, an errno, a named rule, or words after the failure that the failure's own sentence did not already say.
    """
    body = view.body
    report = FAILURE_REPORT_RE.search(body)
    if report is None or view.has_remedy or STATE_RE.search(body) or _retry_guided(view):
        return False
    if NAMES_CALLER_VALUE_RE.search(body) or ERRNO_RE.match(body) or re.search(r"\b(?:constraint|assertion)\b", body, re.I):
        return False
    if NOT_FOUND_RE.search(body) or re.search(r"\b(?:could ?n[o']t|can(?:no|')t|unable to) (?:find|locate)\b", body, re.I):
        return False  # "Couldn't find package 'x'": a lookup that missed, judged as not-found (LS104) wherever it sits
    if re.search(r"(?-i:\bE[A-Z]{3,}\b)", body):
        return False  # an errno name is a cause
    if _CAUSE_KIND_RE.search(body) or _STANDARD_TARGET_RE.search(body):
        return False
    if not view.specifics and not _content_words(view):
        return False  # "Failed", "An error occurred": only generic words, which LS101 explains
    if DIAGNOSTIC_LOCATION_RE.search(view.raw):
        return False  # "a.go:3:1: error: undefined: x": "error" is the diagnostic's severity, not a report
    head = body[: report.end()]
    said = set(_content_words_of(_without_values(head)))
    # a cause that points at errors reported elsewhere says nothing: "due to compilation errors", "see previous errors"
    tail = ELSEWHERE_RE.sub(" ", body[report.end() :])
    sep = _CAUSE_SEPARATOR_RE.search(tail)
    cause = tail[sep.end() :] if sep else ""
    # the other sentences may give the cause; a sentence that reports a failure again does not
    rest = [x for x in re.split(r"(?<=[.!?])\s+|\n+", tail[: sep.start()] if sep else tail)[1:] if not FAILURE_REPORT_RE.search(x)]
    new = [w for w in _content_words_of(_without_values(" ".join([cause, *rest]))) if w not in said]
    if new:
        return False
    # what the failure's sentence itself says beyond "failed" and the target it names
    words = [w for w in _content_words_of(_without_values(FAILURE_REPORT_RE.sub(" ", head + " " + tail))) if w not in _OPERATION_WORDS]
    return len(words) <= 3


# Words that say which operation was under way, not why it failed: "while processing", "when calling".
_OPERATION_WORDS = frozenset(
    "while when during processing process calling call executing execution performing perform running run handling "
    "attempting trying action tool something happened server encountered".split()
)


def _without_values(text: str) -> str:
    for regex in (URL_RE, PATH_RE, QUOTED_RE, IDENT_RE, NUMBER_RE, re.compile(r"\b\w+=\S+|\b0x[0-9a-fA-F]+\b")):
        text = regex.sub(" ", text)
    return text


_ATTRIBUTE_NAMES = ("name", "id", "key", "email", "title", "slug", "code", "username", "sku", "user", "file", "account")


# "exit code 127", "exit status 2": a process's exit status, not an HTTP status
EXIT_CODE_RE = re.compile(
    r"\bexit(?:ed)? (?:with )?(?:return |exit )?(?:code|status):? \[?-?\d+\b\]?|\breturned -?\d+ exit status\b", re.IGNORECASE
)
# Words a cause can consist of without saying anything: "Authentication required", "command terminated with
# exit code 127", "access denied" (which credential, which permission, why did the command fail?)
_EMPTY_CAUSE_WORDS = frozenset(
    "required missing needed command process terminated exited exit killed returned non zero nonzero aborted "
    "code status".split()
)


def _uninformative_cause(cause: str) -> bool:
    """The text after a failure's colon names no value and says nothing but that it failed or was refused."""
    text = EXIT_CODE_RE.sub(" ", cause)
    if find_specifics(text):
        return False
    words = [w for w in _WORD_RE.findall(text.lower()) if w not in GENERIC_WORDS and w not in _EMPTY_CAUSE_WORDS]
    return bool(_WORD_RE.findall(cause)) and not words


def _value_only(text: str) -> bool:
    """The text is a value (a path, ref, URL, quoted value, id or number) and says nothing about a cause."""
    token = text.strip().rstrip(".")
    if not token:
        return False
    if " " not in token and re.fullmatch(r"[\w.\-/:@~]+", token) and re.search(r"[/.\-_:@\d]", token):
        return True
    bare = token
    for regex in (URL_RE, PATH_RE, QUOTED_RE, IDENT_RE, NUMBER_RE):
        bare = regex.sub(" ", bare)
    return not _WORD_RE.findall(bare)


def _content_words_of(text: str) -> list[str]:
    return [
        w for w in _WORD_RE.findall(text.lower()) if w not in GENERIC_WORDS and w not in _TARGET_WORDS and w not in _ATTEMPT_WORDS
    ]


# How often it was tried is not why it failed: "Task 91 failed after 3 attempts", "Retry 3/3 failed"
_ATTEMPT_WORDS = frozenset("after attempts attempt retries retry retried tries tried times".split())


# Words that name the kind of target of a failure, not its cause ("file", "directory", "content").
_TARGET_WORDS = frozenset(
    "file files directory folder path content contents existing url page record item document element field column "
    "table row node resource object entry key value".split()
)


def check_injection(view: MessageView, ctx: Context) -> bool:
    return bool(INJECTION_RE.search(view.raw))


def check_secret_or_pii(view: MessageView, ctx: Context) -> bool:
    text = view.raw
    if any(r.search(text) for r in SECRET_RES):
        return True
    if EMAIL_RE.search(text) or SSN_RE.search(text):
        return True
    for m in CARD_RE.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits) and len(set(digits)) > 1:
            return True
    return False


def _is_error_body(view: MessageView) -> bool:
    return view.obj is not None and bool(
        view.json_keys & {"error", "errors", "status", "type", "code", "detail", "title", "message"}
    )


def check_json_no_retriable(view: MessageView, ctx: Context) -> bool:
    return _is_error_body(view) and not view.json_keys & {"is_retriable", "retriable", "retryable", "is_retryable"}


def check_json_no_suggestions(view: MessageView, ctx: Context) -> bool:
    return _is_error_body(view) and not view.json_keys & {"suggestions", "suggestion", "hint", "hints", "next_steps", "remedy"}


_PRECONDITION_RE = re.compile(
    r"precondition|not[-_ ]finali[sz]ed|required_status|must be \w+ before|conflict|already[-_ ]", re.IGNORECASE
)
# the body names the call to make first: "Call finalize_invoice before calling send_invoice"
_NAMED_CALL_RE = re.compile(r"\bcall(?:ing)? [A-Za-z]+_\w+|\bcall(?:ing)? \w+\(", re.IGNORECASE)


def _type_text(view: MessageView) -> str:
    assert view.obj is not None
    return " ".join(str(view.obj.get(k, "")) for k in ("type", "code", "error", "title"))


def _is_precondition(view: MessageView) -> bool:
    status = _status(view)
    return status in {409, 412, 428} or bool(
        _PRECONDITION_RE.search(view.prose + " " + _type_text(view) + " " + " ".join(view.json_keys))
    )


def _is_validation(view: MessageView) -> bool:
    status = _status(view)
    return status in {400, 422} or bool(re.search(r"valid|missing|required|param", _type_text(view), re.IGNORECASE))


def check_json_validation_fields(view: MessageView, ctx: Context) -> bool:
    if not _is_error_body(view) or not _is_validation(view) or _is_precondition(view):
        return False
    fields = view.obj.get("invalid_fields") if view.obj else None
    if not isinstance(fields, list) or not fields:
        return True
    return not all(isinstance(f, dict) and str(f.get("field", "")).startswith("/") for f in fields)


def check_json_precondition(view: MessageView, ctx: Context) -> bool:
    if not _is_error_body(view) or "next_operation" in view.json_keys or _NAMED_CALL_RE.search(view.prose):
        return False
    return _is_precondition(view)


def check_json_5xx_trace(view: MessageView, ctx: Context) -> bool:
    if not _is_error_body(view):
        return False
    status = _status(view)
    server_side = (status is not None and status >= 500) or bool(
        re.search(r"internal|api_error|server_error|overloaded", " ".join(str(v) for v in _type_values(view)), re.IGNORECASE)
    )
    return server_side and not view.json_keys & {"trace_id", "traceid", "request_id", "requestid", "correlation_id", "x-request-id"}


def _type_values(view: MessageView) -> list[object]:
    assert view.obj is not None
    values: list[object] = []
    for key in ("type", "code", "error"):
        value = view.obj.get(key)
        values.append(value.get("type") if isinstance(value, dict) else value)
    return values


_FAILURE_START_RE = re.compile(r"^\s*(?:error\b|exception\b|traceback\b|fatal:)", re.IGNORECASE)


def check_silent_error(view: MessageView, ctx: Context) -> bool:
    if ctx.is_error:
        return False
    if ctx.outcome in ("transient_fail", "permanent_fail"):
        return True
    return bool(_FAILURE_START_RE.match(view.raw))
