"""Read OpenTelemetry exports (OTLP JSON Lines) into v1 records.

Accepted files are the OTLP "file exporter" format: one ``TracesData`` /
``LogsData`` object per line, as written by the OpenTelemetry Collector's
``file`` exporter (``format: json``, its default) and by the Python package
``opentelemetry-exporter-otlp-json-file``. The encoding rules are OTLP/JSON's:
trace and span ids are case-insensitive hex (lowercased here, ``""`` means
none), int64 values are decimal strings (numbers are accepted too), enums are
integers, and unknown fields are ignored.

This module decodes lines into plain ``Span`` / ``LogRecord`` objects; which of
them are tool calls and agent loops is decided in ``otlp_genai`` (the alias map
of OTel ``gen_ai.*``, OpenInference and OpenLLMetry keys).

Per line:

- ``{"resourceSpans": ...}`` and ``{"resourceLogs": ...}``: decoded.
- ``{"resourceMetrics": ...}``: skipped without complaint (not records).
- anything else (not JSON, JSON that is not an object, an object without
  those keys, a malformed span inside an otherwise good line): a bad line,
  with its number and a reason; the rest of the file still loads.

A binary file (the Collector's ``proto`` / ``zstd`` formats, which put a
4-byte length before each message) is refused as a whole with a
``UnreadableFile`` (a ``LoopscopeError``) naming the file, since no line of it can be read:
the load skips it and goes on with the other files.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopscope.analyses.ingest import jsontext
from loopscope.analyses.ingest.files import UnreadableFile

if TYPE_CHECKING:  # the package __init__ is imported lazily by read(); see there
    from loopscope.analyses.ingest.formats import ReaderOutput

# How much of a bad line is kept for the quarantine table.
RAW_CAP = 2_000
# A line that starts like an OTLP JSON object: enough for format detection.
_OTLP_HEAD = re.compile(rb'^\s*\{\s*"resource(Spans|Logs|Metrics|_spans|_logs|_metrics)"\s*:')
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

SIGNAL_KEYS = ("resourceSpans", "resourceLogs", "resourceMetrics")
SNAKE_SIGNAL_KEYS = ("resource_spans", "resource_logs", "resource_metrics")
# A file with no OTLP line is tried as one JSON document up to this size.
MAX_DOCUMENT_BYTES = 256 * 2**20


@dataclass
class Span:
    """One decoded span, with its attributes as plain Python values."""

    trace_id: str | None
    span_id: str | None
    parent_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attrs: dict[str, Any]
    events: list[tuple[str, int | None, dict[str, Any]]]
    status_code: int
    status_message: str | None
    resource: dict[str, Any]
    scope: str | None
    line_no: int


@dataclass
class LogRecord:
    """One decoded log record (an event when ``event_name`` is set)."""

    time_ns: int | None
    trace_id: str | None
    span_id: str | None
    event_name: str | None
    severity: int
    body: Any
    attrs: dict[str, Any]
    resource: dict[str, Any]
    scope: str | None
    line_no: int


@dataclass
class Decoded:
    """Everything read from one file, before conversion to records."""

    spans: list[Span] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    # (line_no, reason, raw): lines or items that could not be read.
    bad: list[tuple[int, str, str]] = field(default_factory=list)
    metrics_lines: int = 0


def sniff(first_bytes: bytes) -> bool:
    """Whether a file's first bytes look like OTLP JSON Lines.

    Args:
        first_bytes: the start of the file (a few hundred bytes are enough).

    Returns:
        True when the first line opens with a ``resourceSpans``,
        ``resourceLogs`` or ``resourceMetrics`` key, and also for the
        Collector's binary (proto / zstd) files, so that ``read`` gets to
        refuse them with a clear message instead of another reader
        quarantining every "line" of them.
    """
    if _OTLP_HEAD.match(first_bytes.lstrip(b"\xef\xbb\xbf")):
        return True
    reason = binary_reason(first_bytes)
    return reason is not None and ("protobuf" in reason or "zstd" in reason)


def binary_reason(first_bytes: bytes) -> str | None:
    """Say why a file is binary OTLP (or some other binary), or None if it is text.

    Args:
        first_bytes: the start of the file.

    Returns:
        A sentence for an error message, or None when the bytes look like text.
    """
    head = first_bytes[:64]
    if not head:
        return None
    if head[4:8] == _ZSTD_MAGIC or head[:4] == _ZSTD_MAGIC:
        return "it is zstd-compressed (the Collector file exporter's 'zstd' compression)"
    # Collector 'proto' format: a 4-byte big-endian length, then a protobuf
    # message whose first field (resource_spans/logs/metrics) is tag 0x0a. A length under
    # 512 MiB starts with a control byte, which text never does: without that test a text file
    # whose first line has four characters ("oops\n", or blank lines) passed for protobuf.
    # (The lengths whose first byte is TAB to CR, 151-235 MiB, are left to the checks below.)
    if (len(head) > 4 and head[4] == 0x0A and int.from_bytes(head[:4], "big") > 0
            and (head[0] < 0x09 or 0x0D < head[0] < 0x20)):
        return "it looks like length-prefixed protobuf (the Collector file exporter's 'proto' format)"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # a character cut at the end of the sample is fine
            return "it is not UTF-8 text"
    if any(b < 0x09 or 0x0D < b < 0x20 for b in head):
        return "it contains binary control bytes"
    return None


def hex_id(value: Any) -> str | None:
    """An OTLP trace/span id as lowercase hex; ``""``, all-zero and missing -> None.

    OTLP/JSON writes ids as hex (any case); plain proto3 JSON writes bytes as base64,
    which is accepted too (a 16- or 32-character all-hex string is read as hex).
    """
    if not isinstance(value, str) or not value:
        return None
    text = value.lower()
    if not (len(text) in (16, 32) and re.fullmatch(r"[0-9a-f]+", text)):
        try:
            text = base64.b64decode(value, validate=True).hex()
        except ValueError:
            return None
    return None if not text or set(text) == {"0"} else text


def _number(raw: Any, kind: type) -> Any:
    """An int64 / double as OTLP/JSON writes it (a number or its decimal text; "NaN" too).

    A value that is not one is kept as it was written: one odd attribute must not cost the
    whole span.
    """
    if isinstance(raw, (int, float, str)) and not isinstance(raw, bool):
        try:
            return kind(raw)
        except (TypeError, ValueError, OverflowError):
            return raw
    return raw


class Malformed(ValueError):
    """A field of the wrong JSON type, said in plain words (``spans is a string, not a list``)."""


_KINDS = {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a number", float: "a number"}


def _kind(value: Any) -> str:
    return "null" if value is None else _KINDS.get(type(value), type(value).__name__)


def _as_list(value: Any, where: str) -> list[Any]:
    """``value`` when it is a JSON array; absent/null is empty; anything else is :class:`Malformed`."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise Malformed(f"{where} is {_kind(value)}, not a list")


def _as_obj(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` when it is a JSON object; absent/null is empty; anything else is :class:`Malformed`."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    raise Malformed(f"{where} is {_kind(value)}, not an object")


def any_value(value: Any) -> Any:
    """Decode an OTLP ``AnyValue`` into a plain Python value (kvlist -> dict, array -> list)."""
    if not isinstance(value, Mapping) or not value:
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return _number(value["intValue"], int)
    if "doubleValue" in value:
        return _number(value["doubleValue"], float)
    if "arrayValue" in value:
        values = _as_list(_as_obj(value["arrayValue"], "arrayValue").get("values"), "arrayValue.values")
        return [any_value(v) for v in values]
    if "kvlistValue" in value:
        return attributes(_as_obj(value["kvlistValue"], "kvlistValue").get("values"), "kvlistValue.values")
    if "bytesValue" in value:
        return value["bytesValue"]  # base64 text: kept as the exporter wrote it
    return None


def attributes(items: Any, where: str = "attributes") -> dict[str, Any]:
    """Decode an OTLP ``KeyValue`` list into a dict (later duplicates win).

    Raises:
        Malformed: ``items`` is not a list (a string would otherwise be read character by character).
    """
    out: dict[str, Any] = {}
    for item in _as_list(items, where):
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value"))
    return out


# Enum names, for files written by a plain proto3 JSON printer (OTLP/JSON itself uses integers).
ENUM_NAMES = {
    "STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2,
    "SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5,
}


def _int(value: Any, default: int | None = None) -> int | None:
    if value is None or value == "":
        return default
    if isinstance(value, str) and value in ENUM_NAMES:
        return ENUM_NAMES[value]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise Malformed(f"{_kind(value)} where a whole number was expected")
    try:
        return int(value)
    except (ValueError, OverflowError):
        raise Malformed(f"{str(value)[:40]!r} is not a whole number") from None


def _enum(value: Any) -> int:
    """An enum field (span kind, status code, severity); an unreadable one counts as unset (0)."""
    try:
        return _int(value, 0) or 0
    except (TypeError, ValueError):
        return 0


def _event_time(value: Any) -> int | None:
    try:
        return _time(value)
    except (TypeError, ValueError):
        return None  # an event's time is not used; a bad one must not cost the span


# Nanoseconds at 9999-12-31T23:59:59Z: a later (or negative) time is not one a record can carry.
MAX_TIME_NS = 253_402_300_799 * 10**9


def _time(value: Any) -> int | None:
    """A ``...TimeUnixNano`` field: None when unset (absent or 0), ValueError when not a time."""
    ns = _int(value)
    if not ns:
        return None
    if not 0 < ns <= MAX_TIME_NS:
        raise ValueError(f"time {value!r} is not nanoseconds between 1970 and 9999")
    return ns


def _camel(obj: Any) -> Any:
    """snake_case proto field names -> OTLP/JSON's lowerCamelCase, recursively (dict keys only)."""
    if isinstance(obj, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): _camel(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_camel(v) for v in obj]
    return obj


def _span(raw: Mapping[str, Any], resource: dict[str, Any], scope: str | None, line_no: int) -> Span:
    status = _as_obj(raw.get("status"), "status")
    start = _time(raw.get("startTimeUnixNano"))  # 0 means unset, as for log times
    end = _time(raw.get("endTimeUnixNano"))
    if start is None and end is None:
        raise ValueError("span has no startTimeUnixNano/endTimeUnixNano")
    # One of the two is enough to place the span (a span cut short still happened then);
    # its latency is then 0.
    start, end = start or end, end or start
    span_id = hex_id(raw.get("spanId"))
    if span_id is None:
        raise ValueError("span has no spanId")
    return Span(
        trace_id=hex_id(raw.get("traceId")),
        span_id=span_id,
        parent_id=hex_id(raw.get("parentSpanId")),
        name=str(raw.get("name") or ""),
        kind=_enum(raw.get("kind")),
        start_ns=start,
        end_ns=end,
        attrs=attributes(raw.get("attributes")),
        events=[
            (str(e.get("name") or ""), _event_time(e.get("timeUnixNano")), attributes(e.get("attributes")))
            for e in _as_list(raw.get("events"), "events")
            if isinstance(e, Mapping)
        ],
        status_code=_enum(status.get("code")),
        status_message=status.get("message") or None,
        resource=resource,
        scope=scope,
        line_no=line_no,
    )


def _log(raw: Mapping[str, Any], resource: dict[str, Any], scope: str | None, line_no: int) -> LogRecord:
    attrs = attributes(raw.get("attributes"))
    # timeUnixNano is optional (0/absent = unknown); the SDK often only sets observedTimeUnixNano.
    time_ns = _time(raw.get("timeUnixNano")) or _time(raw.get("observedTimeUnixNano"))
    # Older SDKs put the event name in the attribute ``event.name``.
    event_name = raw.get("eventName") or attrs.get("event.name") or None
    return LogRecord(
        time_ns=time_ns,
        trace_id=hex_id(raw.get("traceId")),
        span_id=hex_id(raw.get("spanId")),
        event_name=event_name,
        severity=_enum(raw.get("severityNumber")),
        body=any_value(raw.get("body")),
        attrs=attrs,
        resource=resource,
        scope=scope,
        line_no=line_no,
    )


def _walk(obj: Mapping[str, Any], line_no: int, raw_line: str) -> Decoded:
    """Decode one TracesData / LogsData object; a malformed item is a bad entry, the rest is kept.

    Raises:
        TypeError, AttributeError, ValueError: the line's structure itself is wrong
        (nothing of it is kept then).
    """
    out = Decoded()
    for signal, scopes_key, items_key, build in (
        ("resourceSpans", "scopeSpans", "spans", _span),
        ("resourceLogs", "scopeLogs", "logRecords", _log),
    ):
        legacy_key = scopes_key.replace("scope", "instrumentationLibrary")
        # The containers must be lists of objects: a string in their place (read character by
        # character it cost one quarantine row per character) makes the whole line bad, once.
        for r, res in enumerate(_as_list(obj.get(signal), signal)):
            at = f"{signal}[{r}]"
            res = _as_obj(res, at)
            resource = attributes(_as_obj(res.get("resource"), f"{at}.resource").get("attributes"),
                                  f"{at}.resource.attributes")
            # OTLP before 0.15 called scopes "instrumentation libraries"; old exports still exist.
            scopes = [(f"{at}.{k}[{j}]", sc) for k in (scopes_key, legacy_key)
                      for j, sc in enumerate(_as_list(res.get(k), f"{at}.{k}"))]
            for where, sc in scopes:
                sc = _as_obj(sc, where)
                lib = sc.get("scope") or sc.get("instrumentationLibrary")
                scope = _as_obj(lib, f"{where}.scope").get("name") or None
                for i, item in enumerate(_as_list(sc.get(items_key), f"{where}.{items_key}")):
                    if not isinstance(item, Mapping):
                        raise Malformed(f"{where}.{items_key}[{i}] is {_kind(item)}, not an object")
                    try:
                        decoded = build(item, resource, scope, line_no)
                    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
                        out.bad.append((line_no, f"{items_key}[{i}] (scope {scope!r}): {exc}", raw_line[:RAW_CAP]))
                        continue
                    (out.spans if signal == "resourceSpans" else out.logs).append(decoded)  # type: ignore[arg-type]
    return out


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as fh:
        head = fh.read(2)
    opener = gzip.open if head == _GZIP_MAGIC else open
    with opener(path, "rb") as fh:  # type: ignore[operator]
        for i, line in enumerate(fh, start=1):
            yield i, line


def _whole_document(path: Path, lines_out: Decoded) -> Decoded:
    """No line was OTLP: maybe the file is one pretty-printed OTLP JSON document (an OTLP/HTTP
    request body saved to disk), or the SDK's console exporter output, which is not OTLP."""
    size = path.stat().st_size
    if size <= MAX_DOCUMENT_BYTES:
        opener = gzip.open if _is_gzip(path) else open
        with opener(path, "rb") as fh:  # type: ignore[operator]
            text = fh.read().decode("utf-8", errors="replace")
        try:
            doc = jsontext.loads(text)
        except (json.JSONDecodeError, RecursionError):
            doc = None
        docs = doc if isinstance(doc, list) else [doc]
        if docs and all(isinstance(d, dict) and any(k in d for k in SIGNAL_KEYS + SNAKE_SIGNAL_KEYS) for d in docs):
            out = Decoded()
            for d in docs:
                d = _camel(d) if any(k in d for k in SNAKE_SIGNAL_KEYS) else d
                try:
                    part = _walk(d, 1, "")
                except Malformed as exc:  # the document is bad as a whole: quarantined once
                    return Decoded(bad=[(1, f"malformed OTLP document: {exc}", text[:RAW_CAP])])
                except RecursionError:
                    return Decoded(bad=[(1, "JSON nested too deeply to read", text[:RAW_CAP])])
                except (TypeError, AttributeError, ValueError) as exc:
                    return Decoded(bad=[(1, f"malformed OTLP document: {exc}", text[:RAW_CAP])])
                out.spans += part.spans
                out.logs += part.logs
                out.bad += part.bad
            return out
        if '"context": {' in text[:4096] and '"trace_id": "0x' in text[:4096]:
            raise UnreadableFile(  # skipped and named; the other files of the load still load
                f"{path}: line 1: not OTLP: this is the OpenTelemetry SDK's console exporter output "
                "(export with FileSpanExporter instead)",
                hint="export with opentelemetry-exporter-otlp-json-file (FileSpanExporter) or an OTLP "
                "Collector's file exporter instead of ConsoleSpanExporter.",
            )
    return lines_out


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


def decode_file(path: Path) -> Decoded:
    """Decode every line of an OTLP JSON Lines file (plain or gzip).

    Args:
        path: the file.

    Returns:
        Spans, log records and bad lines, in file order.

    Raises:
        UnreadableFile: the file is binary (e.g. the Collector's proto format).
    """
    out = Decoded()
    lines_read = 0
    for line_no, data in _lines(path):
        lines_read = line_no
        if line_no == 1:
            reason = binary_reason(data[:64])
            if reason:
                raise UnreadableFile(  # skipped and named; the other files of the load still load
                    f"{path}: line 1: not OTLP JSON Lines: {reason} (configure the exporter with format: json)",
                    hint="loopscope reads OTLP JSON Lines only; configure the Collector's file exporter "
                    "with 'format: json' (and no compression), or use opentelemetry-exporter-otlp-json-file.",
                )
        text = data.decode("utf-8", errors="replace").strip()
        if not text:
            continue
        try:
            obj = jsontext.loads(text)
        except json.JSONDecodeError as exc:
            out.bad.append((line_no, f"not JSON: {exc.msg} at column {exc.colno}", text[:RAW_CAP]))
            continue
        except RecursionError:
            out.bad.append((line_no, "JSON nested too deeply to read", text[:RAW_CAP]))
            continue
        if isinstance(obj, dict) and any(k in obj for k in SNAKE_SIGNAL_KEYS):
            obj = _camel(obj)  # a plain proto3 JSON printer keeping field names
        if not isinstance(obj, dict) or not any(k in obj for k in SIGNAL_KEYS):
            keys = ", ".join(sorted(obj)[:5]) if isinstance(obj, dict) else type(obj).__name__
            out.bad.append(
                (line_no, f"not an OTLP line: no resourceSpans/resourceLogs key (found: {keys})", text[:RAW_CAP])
            )
            continue
        if "resourceMetrics" in obj and not ("resourceSpans" in obj or "resourceLogs" in obj):
            out.metrics_lines += 1
            continue
        try:
            part = _walk(obj, line_no, text)
        except Malformed as exc:
            out.bad.append((line_no, f"malformed OTLP structure: {exc}", text[:RAW_CAP]))
            continue
        except RecursionError:
            out.bad.append((line_no, "JSON nested too deeply to read", text[:RAW_CAP]))
            continue
        except (TypeError, AttributeError, ValueError) as exc:
            out.bad.append((line_no, f"malformed OTLP structure: {exc}", text[:RAW_CAP]))
            continue
        out.spans += part.spans
        out.logs += part.logs
        out.bad += part.bad
    if lines_read > 1 and not (out.spans or out.logs or out.metrics_lines) and out.bad:
        return _whole_document(path, out)

    return out


def read(path: Path, options: Mapping[str, Any]) -> ReaderOutput:
    """Read an OTLP JSON Lines file into v1 records (the reader protocol).

    Args:
        path: a traces or logs file written by an OTLP file exporter (plain or gzip).
        options: reader options from the loader; none are used by this reader.

    Returns:
        A ``ReaderOutput``: ``tool_call`` / ``loop_exit`` records (each prompt's
        tool calls in step order, then its exit), bad lines, and a
        ``no_agent_spans`` violation when spans were read but none of them is a
        tool or agent span (so an empty load is explained, not silent).

    Raises:
        UnreadableFile: the file is binary (the Collector's proto / zstd formats).
    """
    # Deferred: the package __init__ and the conversion module import this one.
    from loopscope.analyses.ingest.formats import BadLine, ReaderOutput
    from loopscope.analyses.ingest.otlp.genai import spans_to_records
    from loopscope.analyses.ingest.otlp.logs import logs_to_records

    decoded = decode_file(Path(path))
    span_records, span_bad = spans_to_records(decoded.spans)
    pairs = span_records + logs_to_records(decoded.logs)
    bad = decoded.bad + span_bad
    out = ReaderOutput(records=[rec for _, rec in pairs], bad=[BadLine(n, r, raw) for n, r, raw in bad])
    if not pairs and (decoded.spans or decoded.logs):
        out.finding(
            "no_agent_spans",
            f"{path}: {len(decoded.spans)} spans and {len(decoded.logs)} log records read, "
            "none of them a tool or agent span; instrumentations of a model SDK alone emit chat spans "
            "only (see docs/inputs.md, 'OpenTelemetry exports')",
        )
    return out
