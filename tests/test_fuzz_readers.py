"""Fuzzing every reader through ``loopscope load``: records, message arrays, OTLP.

Inputs start from real files (sample_logs/, tests/fixtures/messages/, tests/fixtures/otlp/)
and are mutated: hypothesis draws which lines change and how (any JSON value at any place, a
container swapped for a long string, bytes deleted / inserted / duplicated, a line cut short,
trailing commas, invalid UTF-8, control and bidi characters). Each example is one file of many
lines, loaded with a clean copy next to it. Invariants:

- no traceback: ``load`` exits 0 (CliRunner with ``catch_exceptions=False`` re-raises);
- records: every non-blank line is loaded or quarantined, exactly one of the two (by line number);
- message arrays and OTLP: a bad line is quarantined with its number, once per line (OTLP: at
  most once per span or log record of it);
- valid input is stored unaltered: unmutated record lines keep their fields; the clean copy's
  records equal those of a load of the clean file alone;
- time is linear in input size: 8x the hostile lines costs well under 64x the time.

Budget: the default (CI) runs a fixed, small number of examples per reader (about 30 s in all
on the 2-CPU build machine). ``LOOPSCOPE_FUZZ=long`` runs 25x more (``LOOPSCOPE_FUZZ_EXAMPLES=N``
sets the number per reader).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from loopscope.cli.app import app

_spec = importlib.util.spec_from_file_location("loopscope_test_json_mutation", Path(__file__).parent / "json_mutation.py")
assert _spec and _spec.loader
mutation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation)

REPO = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"
RECORD_LINES = (REPO / "sample_logs" / "concierge.jsonl").read_text(encoding="utf-8").splitlines()
MESSAGE_FILES = [FIX / "messages" / n for n in ("anthropic.jsonl", "per_turn.jsonl", "shapes.jsonl", "openai_text_errors.jsonl")]
OTLP_FILES = sorted((FIX / "otlp").glob("*.jsonl"))

LONG = os.environ.get("LOOPSCOPE_FUZZ") == "long"
EXAMPLES = int(os.environ.get("LOOPSCOPE_FUZZ_EXAMPLES") or (250 if LONG else 12))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
runner = CliRunner()

JSON = mutation.json_values(
    ["", "0", "-1", "NaN", "tool_call", "loop_exit", "ok", "2026-11-20T10:00:00Z", "\u202e", "z" * 50],
    ["v", "kind", "ts", "role", "content", "spans", "attributes", "value", "values", "messages", "x"],
)
NOISE = ["\x00", "\x1b[31m", "\u202e", "\ufeff", '"', "{", "}", "[", "]", ",", ":", "\\", "\\u", "\\ud800", "é", "\t"]


def mutate_text(line: str, rnd: random.Random) -> bytes:
    """One byte- or text-level mutation of a JSON line."""
    op = rnd.randrange(7)
    i = rnd.randrange(len(line) + 1)
    if op == 0:  # delete a span
        out = line[:i] + line[i + rnd.randrange(1, 20):]
    elif op == 1:  # insert noise
        out = line[:i] + rnd.choice(NOISE) + line[i:]
    elif op == 2:  # duplicate a span
        out = line[:i] + line[max(0, i - 10):i] + line[i:]
    elif op == 3:  # cut short
        out = line[:i]
    elif op == 4:  # trailing comma before the closing brace
        out = line.rstrip()[:-1] + ", }" if line.rstrip().endswith("}") else line + ","
    elif op == 5:  # invalid UTF-8 bytes
        data = line.encode("utf-8")
        j = min(i, len(data))
        return data[:j] + bytes([rnd.choice([0xFF, 0xC3, 0xE2, 0x80])]) + data[j:]
    else:  # a list swapped for a long string (the old list kept under another key)
        opens = [k for k, c in enumerate(line) if c == "["]
        k = rnd.choice(opens) if opens else i
        out = line[:k] + '"' + "z" * rnd.randrange(10, 5000) + '", "_": ' + line[k:]
    return out.encode("utf-8", "surrogatepass")


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def mutate_value(doc: Any, rnd: random.Random, value: Any) -> bytes:
    places = mutation.places([doc])
    if not places:
        return json.dumps(value).encode()
    if rnd.random() < 0.5:  # half the time a list or an object: where a wrong type costs the most
        places = [p for p in places if isinstance(_at(doc, p[1]), (list, dict))] or places
    _, path = rnd.choice(places)
    return json.dumps(mutation.replaced(doc, path, value), allow_nan=True).encode("utf-8", "surrogatepass")


def mutated_file(lines: list[str], seed: int, rate: float, value: Any) -> tuple[bytes, set[int]]:
    """The lines with some mutated; returns the file and the 1-based numbers of the changed lines."""
    rnd = random.Random(seed)
    out: list[bytes] = []
    changed: set[int] = set()
    for n, line in enumerate(lines, start=1):
        if rnd.random() < rate:
            data = mutate_value(json.loads(line), rnd, value) if rnd.random() < 0.5 else mutate_text(line, rnd)
            data = data.replace(b"\n", b" ").replace(b"\r", b" ")  # one line stays one line
            if data != line.encode("utf-8"):
                changed.add(n)
            out.append(data)
        else:
            out.append(line.encode("utf-8"))
    return b"\n".join(out) + b"\n", changed


def load(db: Path, *paths: Path, fmt: str | None = None) -> dict[str, Any]:
    args = ["load", "--db", str(db), "--format", "json", *map(str, paths)]
    if fmt:
        args += ["--input-format", fmt]
    res = runner.invoke(app, args, catch_exceptions=False)  # a traceback fails the test
    # exit 1 only for the one user error a fuzzed file may earn: nothing in it was a record
    assert res.exit_code == 0 or (res.exit_code == 1 and "yielded 0 records" in res.output), res.output
    assert "Traceback" not in res.output
    return json.loads(res.stdout)


def quarantine(db: Path) -> list[dict[str, str]]:
    res = runner.invoke(app, ["quarantine", "--db", str(db), "--format", "csv", "--limit", "1000000"],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return list(csv.DictReader(io.StringIO(res.stdout)))


def stored(db: Path, source_id: int | None = None) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        where = "" if source_id is None else f"WHERE source_id = {int(source_id)}"
        calls = con.execute(
            f"SELECT 'tool_call', line_no, conversation_id, prompt_id, tool_call_id, tool_name, step, outcome, "
            f"is_error, attempts, error_type, error_message FROM tool_calls {where}").fetchall()
        exits = con.execute(
            f"SELECT 'loop_exit', line_no, conversation_id, prompt_id, exit_reason, steps, tool_calls, tool_errors, "
            f"NULL, NULL, error_type, error_message FROM loop_exits {where}").fetchall()
    finally:
        con.close()
    return sorted(calls + exits, key=lambda r: (str(r[2]), str(r[3]), str(r[4]), str(r)))


def source_of(summary: dict[str, Any], path: Path) -> int:
    return next(d["source_id"] for d in summary["details"] if Path(d["path"]).name == path.name)


# -- records -------------------------------------------------------------------------------------

RECORD_FIELDS = {
    "tool_call": ("conversation_id", "prompt_id", "tool_call_id", "tool_name", "step", "outcome", "is_error",
                  "attempts", "error_type", "error_message"),
    "loop_exit": ("conversation_id", "prompt_id", "exit_reason", "steps", "tool_calls", "tool_errors", None, None,
                  "error_type", "error_message"),
}


def expected_row(n: int, rec: dict[str, Any]) -> tuple[Any, ...]:
    return (rec["kind"], n, *(rec.get(f) if f else None for f in RECORD_FIELDS[rec["kind"]]))


@FUZZ
@given(seed=st.integers(0, 2**32), rate=st.sampled_from([0.05, 0.3, 0.9]), value=JSON)
def test_records_reader_every_line_loaded_or_quarantined(tmp_path_factory: Any, seed: int, rate: float, value: Any) -> None:
    folder = tmp_path_factory.mktemp("rec")
    data, changed = mutated_file(RECORD_LINES, seed, rate, value)
    src = folder / "log.jsonl"
    src.write_bytes(data)
    db = folder / "t.duckdb"
    summary = load(db, src)
    lines = data.split(b"\n")[:-1]
    nonblank = {n for n, line in enumerate(lines, start=1) if line.strip()}
    bad = Counter(int(q["line_no"]) for q in quarantine(db))
    rows = stored(db)
    good = Counter(r[1] for r in rows)
    assert summary["loaded"] + summary["quarantined"] == len(nonblank)
    assert all(c == 1 for c in bad.values()) and all(c == 1 for c in good.values())  # once each
    assert set(bad) | set(good) == nonblank and not set(bad) & set(good)
    # every unmutated line is stored with exactly its fields
    want = {n: expected_row(n, json.loads(RECORD_LINES[n - 1])) for n in nonblank - changed}
    got = {r[1]: r for r in rows if r[1] in want}
    assert got == want


# -- message arrays ------------------------------------------------------------------------------

def lines_of(path: Path) -> list[str]:
    return [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


MESSAGE_LINES = [line for f in MESSAGE_FILES for line in lines_of(f)]
OTLP_LINES = [line for f in OTLP_FILES for line in lines_of(f)]


def reader_case(tmp: Path, lines: list[str], fmt: str, seed: int, rate: float, value: Any,
                per_line: list[int]) -> None:
    clean = tmp / "clean.jsonl"
    clean.write_text("\n".join(lines) + "\n", encoding="utf-8")
    alone = tmp / "alone.duckdb"
    baseline = stored(alone, source_of(load(alone, clean, fmt=fmt), clean))
    data, _ = mutated_file(lines, seed, rate, value)
    src = tmp / "fuzzed.jsonl"
    src.write_bytes(data)
    db = tmp / "t.duckdb"
    summary = load(db, src, clean, fmt=fmt)
    rows = quarantine(db)
    assert all(Path(q["path"]).name == "fuzzed.jsonl" for q in rows)  # the clean copy: nothing quarantined
    bad = Counter(int(q["line_no"]) if q["line_no"] else 0 for q in rows)
    total = len(data.split(b"\n")) - 1
    for n, count in bad.items():
        if n == 0:  # a whole-document reason (the file is not JSON Lines any more): once
            assert count == 1
            continue
        assert 1 <= n <= total and count <= max(1, per_line[n - 1]), (n, count)
    assert summary["quarantined"] == len(rows)
    # the clean copy, loaded next to the fuzzed file, is stored exactly as when loaded alone
    assert stored(db, source_of(summary, clean)) == baseline


def items_per_line(lines: list[str]) -> list[int]:
    out = []
    for line in lines:
        doc = json.loads(line)
        n = sum(len(sc.get("spans") or sc.get("logRecords") or [])
                for res in (doc.get("resourceSpans") or []) + (doc.get("resourceLogs") or [])
                for sc in res.get("scopeSpans") or res.get("scopeLogs") or [])
        out.append(n)
    return out


@FUZZ
@given(seed=st.integers(0, 2**32), rate=st.sampled_from([0.1, 0.5, 1.0]), value=JSON)
def test_message_reader_quarantines_each_bad_line_once_and_keeps_good_input(
    tmp_path_factory: Any, seed: int, rate: float, value: Any
) -> None:
    reader_case(tmp_path_factory.mktemp("msg"), MESSAGE_LINES, "messages", seed, rate, value, [1] * len(MESSAGE_LINES))


@FUZZ
@given(seed=st.integers(0, 2**32), rate=st.sampled_from([0.1, 0.5, 1.0]), value=JSON)
def test_otlp_reader_quarantines_each_bad_part_once_and_keeps_good_input(
    tmp_path_factory: Any, seed: int, rate: float, value: Any
) -> None:
    reader_case(tmp_path_factory.mktemp("otlp"), OTLP_LINES, "otlp", seed, rate, value, items_per_line(OTLP_LINES))


# -- time linear in input size -------------------------------------------------------------------

def hostile_lines(lines: list[str], n: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        line = lines[i % len(lines)]
        out.append(mutate_text(line, rnd).replace(b"\n", b" ") if i % 3 else line.encode())
    return b"\n".join(out) + b"\n"


@pytest.mark.xdist_group("timing")  # a timing ratio: never alongside another timing test (tests/conftest.py)
@pytest.mark.parametrize(("name", "lines", "fmt"), [("records", RECORD_LINES, None), ("messages", MESSAGE_LINES, "messages"),
                                                   ("otlp", OTLP_LINES, "otlp")])
def test_load_time_is_linear_in_input_size(tmp_path: Path, name: str, lines: list[str], fmt: str | None) -> None:
    """Guards against a quadratic path (one row per character was 192 s for one line): 8x the
    input must cost well under 64x the time. Loose on purpose: CI machines are noisy."""
    def cost(n: int, k: int) -> float:
        src = tmp_path / f"{name}-{n}-{k}.jsonl"
        src.write_bytes(hostile_lines(lines, n, seed=n))
        t = time.perf_counter()
        load(tmp_path / f"{name}-{n}-{k}.duckdb", src, fmt=fmt)
        return time.perf_counter() - t

    small = min(cost(150, k) for k in range(2))
    big = min(cost(1200, k) for k in range(2))
    assert big < 24 * small, (small, big)
