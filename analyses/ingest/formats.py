"""Input formats: which reader turns a file into loopscope v1 records.

Six formats reach the one store:

- ``records``: loopscope record format v1 JSON Lines (what the collector
  writes). The loader parses these itself, in DuckDB (``ingest.records``).
- ``messages``: conversation message arrays (Anthropic / OpenAI shapes),
  read by ``loopscope.analyses.ingest.messages``.
- ``otlp``: OpenTelemetry spans as OTLP JSON (Lines), read by
  ``loopscope.analyses.ingest.otlp``.
- ``claude-code``, ``codex``, ``gemini-cli``, ``openhands``, ``smolagents``: agent session transcripts, read by
  ``loopscope.analyses.ingest.transcripts.claude_code`` / ``.codex`` / ``.openhands`` / ``.smolagents``.

The reader protocol (``messages``, ``otlp`` and any later format): a module
``loopscope.analyses.ingest.<format>`` with

    read(path: Path, options: Mapping[str, Any]) -> ReaderOutput

and optionally ``sniff(head: bytes) -> bool`` (does this start of a file look
like your format?) used by ``--input-format auto``. ``ReaderOutput.records``
are v1 records as dicts (unknown fields allowed, kept in ``extra``); the
loader validates them with the same SQL as JSONL records, so a reader never
writes to the store itself. Required fields: ``v`` (1), ``kind``, ``ts``,
``conversation_id``, ``prompt_id``; for ``tool_call`` also ``tool_call_id``,
``tool_name``, ``step``, ``outcome``, ``is_error``; for ``loop_exit``
``exit_reason``. Records are kept in the order given (that order is the
"position in the input" that breaks ``ts`` ties).

Readers are looked up lazily by name, so the loader works whichever reader
modules exist.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopscope.analyses.errors import LoopscopeError

FORMATS = ("records", "messages", "otlp", "claude-code", "codex", "gemini-cli", "openhands", "smolagents")
INPUT_FORMATS = ("auto",) + FORMATS
# Formats whose reader lives elsewhere than ``loopscope.analyses.ingest.<format>``.
MODULES = {
    "claude-code": "loopscope.analyses.ingest.transcripts.claude_code",
    "codex": "loopscope.analyses.ingest.transcripts.codex",
    "gemini-cli": "loopscope.analyses.ingest.transcripts.gemini_cli",
    "openhands": "loopscope.analyses.ingest.transcripts.openhands",
    "smolagents": "loopscope.analyses.ingest.transcripts.smolagents",
}
# Asked before the generic formats: a coding-agent transcript also has "role" keys.
TRANSCRIPT_FORMATS = ("claude-code", "codex", "gemini-cli", "openhands", "smolagents")


def module_name(fmt: str) -> str:
    """The module that reads ``fmt``."""
    return MODULES.get(fmt, f"loopscope.analyses.ingest.{fmt}")


@dataclass(frozen=True)
class BadLine:
    """An input line (or element) a reader could not use, for the quarantine.

    Attributes:
        line_no: 1-based line number in the file (None when not line based).
        reason: what is wrong, in words a user can act on.
        raw: the offending text (the loader caps it).
    """

    line_no: int | None
    reason: str
    raw: str = ""


@dataclass
class ReaderOutput:
    """What a reader made of one file.

    Attributes:
        records: v1 records (dicts), in input order.
        violations: protocol problems, each a dict with keys
            ``conversation_id``, ``prompt_id``, ``tool_call_id``, ``kind``,
            ``detail`` (stored in ``protocol_violations``).
        bad: lines that could not be read (stored in ``quarantine``).
        skipped_types: lines of types the reader does not know, skipped (not
            errors), counted per type for the load summary.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    skipped_types: dict[str, int] = field(default_factory=dict)

    def finding(self, kind: str, detail: str, conversation_id: str | None = None) -> None:
        """A finding about the whole file (or one conversation of it), not one prompt or call: a violation
        of ``kind`` whose ``detail`` starts with the file's name (``notices`` reads the count after it)."""
        self.violations.append(
            {"conversation_id": conversation_id, "prompt_id": None, "tool_call_id": None, "kind": kind, "detail": detail}
        )


def reader_module(fmt: str) -> Any:
    """The module implementing ``fmt`` (``messages``, ``otlp``, ...).

    Raises:
        LoopscopeError: ``fmt`` is unknown or its reader is not installed.
    """
    if fmt not in FORMATS or fmt == "records":
        raise LoopscopeError(
            f"unknown input format {fmt!r}",
            hint="use --input-format auto, records, messages, otlp, claude-code, codex, gemini-cli, openhands or smolagents",
        )
    name = module_name(fmt)
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise LoopscopeError(
            f"this loopscope has no reader for the {fmt!r} input format",
            hint="load loopscope record files (--input-format records), or upgrade loopscope",
        ) from None
    if not callable(getattr(module, "read", None)):
        raise LoopscopeError(f"the {fmt!r} reader has no read() function", hint="this is a bug in loopscope")
    return module


def _json_lines(head: bytes) -> list[Any]:
    """The values of the complete lines in ``head`` (None for a line that does not parse)."""
    values: list[Any] = []
    for raw in head.split(b"\n")[:-1] or head.split(b"\n"):
        line = raw.strip()
        if not line:
            continue
        try:
            values.append(json.loads(line.decode("utf-8")))
        except (UnicodeDecodeError, ValueError, RecursionError):
            values.append(None)
    return values


def _sniffed(fmt: str, head: bytes) -> bool:
    try:
        module = importlib.import_module(module_name(fmt))
    except ImportError:
        return False
    sniff = getattr(module, "sniff", None)
    if not callable(sniff):
        return False
    try:
        return bool(sniff(head))
    except Exception:  # a reader's guess must never stop a load
        return False


def detect_format(path: Path, head: bytes) -> str:
    """Guess the format of a file from its first bytes (decompressed).

    loopscope records win when one of the first lines is a v1 record; then a
    Claude Code, Codex CLI, OpenHands or smolagents transcript when its reader's ``sniff`` says so; OTLP when it
    carries ``resourceSpans``; message arrays when the first line is a JSON
    array, a ``.json`` file starts with ``[``, or the first object has
    ``messages`` or ``role``. Otherwise each
    reader's ``sniff`` is asked, and the fallback is ``records`` (so bad lines
    end in the quarantine, with reasons, rather than being ignored).
    """
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    values = _json_lines(text)
    # One v1 record among the first lines is enough: a damaged first line
    # must not send a records file to another reader.
    if any(isinstance(x, dict) and "v" in x and "kind" in x for x in values):
        return "records"
    for fmt in TRANSCRIPT_FORMATS:
        if _sniffed(fmt, head):
            return fmt
    first = values[0] if values else None
    if isinstance(first, dict):
        if "v" in first and "kind" in first:
            return "records"
        if "resourceSpans" in first or "resource_spans" in first:
            return "otlp"
        if "messages" in first or "role" in first:
            return "messages"
    if isinstance(first, list) or (text.startswith(b"[") and ".json" in path.name.lower() and ".jsonl" not in path.name.lower()):
        return "messages"
    for fmt in ("otlp", "messages"):
        if _sniffed(fmt, head):
            return fmt
    return "records"


# Formats loopscope does not read, recognised by the keys of a file's first JSON object, so a
# file that yields no record says what it looks like instead of a wrong diagnosis per line.
# (name, keys that must all be present, what to do)
UNREAD_FORMATS: tuple[tuple[str, frozenset[str], str], ...] = (
    ("Berkeley Function Calling Leaderboard (BFCL) results", frozenset({"id", "result"}),
     "BFCL results hold the model's answers, not an agent loop's tool executions: there is nothing to measure"),
    ("an OpenAI Batch API output", frozenset({"custom_id", "response"}),
     "extract the conversations (messages arrays) and load those with --input-format messages"),
    ("a LangSmith run export", frozenset({"run_type", "inputs", "outputs"}),
     "export the runs as OpenTelemetry (OTLP JSON) or as messages arrays"),
    ("a Langfuse trace export", frozenset({"observations"}),
     "export the traces as OpenTelemetry (OTLP JSON) or as messages arrays"),
    ("an OpenAI chat completion response", frozenset({"choices", "object"}),
     "load the conversations' messages arrays instead (--input-format messages)"),
)
FORMAT_NAMES = {
    "records": "loopscope records (JSON Lines, v1)",
    "messages": "conversation message arrays",
    "otlp": "OpenTelemetry spans or logs (OTLP JSON)",
    "claude-code": "a Claude Code session",
    "codex": "a Codex CLI session",
    "gemini-cli": "a Gemini CLI chat",
    "openhands": "an OpenHands event stream",
    "smolagents": "smolagents memory steps",
}


def looks_like(head: bytes) -> tuple[str, str] | None:
    """(what a file looks like, what to do) for a known format loopscope does not read, else None."""
    if head.startswith(b"PK\x03\x04"):  # a zip archive: its first entry's name follows the local header
        if any(name in head for name in (b"_journal/", b"header.json", b"samples/")):
            return (
                "an Inspect AI .eval log (a zip archive)",
                "convert it to JSON with: inspect log convert FILE --to json --output-dir DIR, and load the .json",
            )
        return "a zip archive", "unzip it and load the files inside"
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    values = _json_lines(text)
    first = values[0] if values else None
    if first is None and text.startswith(b"{"):
        try:
            first = json.loads(text.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            first = None
    if isinstance(first, list) and first and isinstance(first[0], dict):
        first = first[0]
    if not isinstance(first, dict):
        return None
    for name, keys, todo in UNREAD_FORMATS:
        if keys <= first.keys():
            return name, todo
    return None


@dataclass(frozen=True)
class Fruitless:
    """A file that was read (new or changed) and yielded no record: what it looks like and what to do."""

    path: str
    input_format: str
    quarantined: int
    looks_like: str | None
    hint: str
    protocol_violations: int = 0

    def message(self) -> str:
        """One sentence naming the file and why nothing came of it."""
        if self.looks_like:
            return (f"{self.path} looks like {self.looks_like}, a format loopscope does not read: "
                    f"0 records ({self.quarantined} lines quarantined)")
        violations = f", {self.protocol_violations} protocol violations" if self.protocol_violations else ""
        return (f"{self.path} yielded 0 records when read as {FORMAT_NAMES.get(self.input_format, self.input_format)} "
                f"({self.quarantined} lines quarantined{violations})")


NO_RECORD_HINT = (
    "see why with loopscope quarantine; if it is another format, say which with --input-format "
    "records|messages|otlp|claude-code|codex|gemini-cli|openhands|smolagents (docs/inputs.md lists what loopscope reads)"
)
"""What to do about a file that gave no record."""
NOTHING_QUARANTINED_HINT = (
    "every line was read and none was bad, but nothing in it makes a record: no user prompt answered, "
    "no tool call with a result{violations}; if it is another format, say which with --input-format "
    "records|messages|otlp|claude-code|codex|gemini-cli|openhands|smolagents (docs/inputs.md lists what loopscope reads)"
)
"""What to do about a file that gave no record and had no bad line (its quarantine is empty)."""
OTLP_NO_AGENT_SPANS_HINT = (
    "its spans were read, but none of them is a tool or agent span in a convention loopscope reads: "
    "a model SDK instrumented alone emits chat spans only, and a framework's tool spans must carry "
    "one of the keys in docs/inputs.md ('The alias map', e.g. gen_ai.operation.name = execute_tool)"
)
"""What to do about an OTLP file whose spans hold no tool or agent span (its ``no_agent_spans`` violation)."""


def fruitless_before(details: list[Any]) -> list[Any]:
    """The files of a load that are unchanged since an earlier load of them, and hold no record from it.

    Read again, such a file would be ``fruitless_files``' (a coding-agent session with no prompt aside,
    which is nothing wrong).
    """
    return [
        d for d in details
        if d.status == "unchanged" and not d.loaded and not d.skipped and d.input_format not in TRANSCRIPT_FORMATS
    ]


def fruitless_files(details: list[Any]) -> list[Fruitless]:
    """The files of a load (``LoadSummary.details``) that were read and gave no record."""
    from loopscope.analyses.ingest.files import UnreadableFile, read_head

    found = []
    for d in details:
        if d.status not in ("new", "replaced", "grown", "rotated") or d.loaded or d.skipped:
            continue
        if d.input_format in TRANSCRIPT_FORMATS and not d.quarantined:
            continue  # a session with no prompt (opened and closed) or Claude Code's housekeeping: nothing wrong
        try:
            seen = looks_like(read_head(Path(d.path)))
        except UnreadableFile:
            seen = None
        violations = int(getattr(d, "protocol_violations", 0) or 0)
        if seen is not None:
            hint = seen[1]
        elif d.quarantined:
            hint = NO_RECORD_HINT
        elif d.input_format == "otlp" and violations:  # the OTLP reader's one violation: no_agent_spans
            hint = OTLP_NO_AGENT_SPANS_HINT
        else:  # its quarantine is empty: pointing there would show nothing
            hint = NOTHING_QUARANTINED_HINT.format(
                violations=f" (it has {violations} protocol violations instead: tool calls and results that do not "
                "pair up, e.g. results answering calls the file does not hold, or a gateway's logged calls that are "
                "no chat, such as embeddings)" if violations else "")
        found.append(Fruitless(d.path, d.input_format, d.quarantined, seen[0] if seen else None, hint, violations))
    return found
