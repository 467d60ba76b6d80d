"""What loopscope promises about losing and leaking nothing, measured: writes docs/reliability.md.

Usage::

    python benchmarks/reliability.py [--out docs/reliability.md] [--quick]

Every figure in docs/reliability.md comes from a run of this script (the page says which
machine and when); do not edit the page by hand. Each scenario runs the real code the way a user
does: the collector in a real loop (in a subprocess where the process itself is at stake), the
loader through the ``loopscope`` command, reports through the CLI. ``--quick`` runs smaller
numbers (a check that the script works, not figures to publish).

Scenarios:

- collector: a full disk (``/dev/full``); a file size limit (``RLIMIT_FSIZE``, ``SIGXFSZ``
  ignored: a partial write, then ``EFBIG``); a write that hangs; a named pipe with no reader;
  SIGKILL mid-run (what is lost against the documented ``flush_interval``); ``fork``; an OTLP
  exporter whose backend is down, with the batch and the simple span processor. For each: host
  calls that raised, the slowest host call, and whether ``emitted = written + dropped + queued +
  in_flight`` held at every check.
- loader: fuzzed record lines (loaded + quarantined = lines, valid lines unaltered); one OTLP line
  whose ``spans`` is a 200,000-character string; load time for 1x and 8x hostile input; SIGKILL
  during loads (the store opens afterwards, a reload gives the clean counts).
- reports: bidi controls, ANSI escapes and markup in tool names and error text, through the
  terminal, JSON, CSV, the HTML audit and the Markdown review pack: raw characters that got out.
- redaction: the secret shapes of issue 22's probe, caught or not.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_logs" / "concierge.jsonl"
LOOPSCOPE = [sys.executable, "-c", "import sys; from loopscope.cli import main; sys.argv[0] = 'loopscope'; main()"]
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "LOOPSCOPE_STRICT")}


def py(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                          env=ENV, check=False)


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOOPSCOPE, *args], capture_output=True, text=True,
                          timeout=timeout, env=ENV, check=False)


# ----------------------------------------------------------------------------------------------
# collector

LOOP = r"""
import json, sys, time
from loopscope.collectors import Collector, JsonlSink
TIMES = []
def run(col, n, prefix="t"):
    worst, raised, ok, checks = 0.0, 0, True, 0
    with col.prompt(conversation_id="c", prompt_id=prefix) as loop:
        for i in range(n):
            t = time.perf_counter()
            try:
                with loop.tool_call(f"{prefix}{i}", "search", {"q": "x" * 40}):
                    pass
            except Exception:
                raised += 1
            TIMES.append(time.perf_counter() - t)
            worst = max(worst, TIMES[-1])
            if i % 10 == 0:
                s = col.stats
                ok = ok and s.emitted == s.written + s.dropped + s.queued + s.in_flight
                checks += 1
    return worst, raised, ok, checks
def report(col, worst, raised, ok, checks, **extra):
    s = col.stats
    ok = ok and s.emitted == s.written + s.dropped + s.queued + s.in_flight
    p99 = sorted(TIMES)[int(len(TIMES) * 0.99)] if TIMES else 0.0
    worst = max(TIMES, default=worst)  # every call of the process, not only the last run's
    print(json.dumps(dict(worst_ms=worst * 1000, p99_us=p99 * 1e6, raised=raised, balanced=ok, checks=checks, emitted=s.emitted,
                          written=s.written, dropped=s.dropped, queued=s.queued, in_flight=s.in_flight, **extra)))
"""

DISK_FULL = LOOP + r"""
col = Collector(JsonlSink("/dev/full", flush_interval=0.02), strict=False)
w, r, ok, c = run(col, int(sys.argv[1]))
col.close()
report(col, w, r, ok, c)
"""

FSIZE = LOOP + r"""
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
col = Collector(JsonlSink(sys.argv[2], flush_interval=0.02, max_bytes=None), strict=False)
w, r, ok, c = run(col, int(sys.argv[1]))
col.close()
whole = 0
for line in open(sys.argv[2], "rb").read().split(b"\n"):
    try:
        json.loads(line); whole += 1
    except ValueError:
        pass
report(col, w, r, ok, c, lines_on_disk=whole)
"""

HUNG = LOOP + r"""
import os, threading
from loopscope.collectors import sinks
gate, entered = threading.Event(), threading.Event()
class Hung:
    def __getattr__(self, name): return getattr(os, name)
    def write(self, fd, data):
        entered.set(); gate.wait(60); return os.write(fd, data)
sinks.os = Hung()
col = Collector(JsonlSink(sys.argv[2], flush_interval=0.02, max_queue=1000), strict=False)
w1, r1, ok1, c1 = run(col, 100, "a")
entered.wait(10)
w2, r2, ok2, c2 = run(col, int(sys.argv[1]), "b")
stuck = col.stats.in_flight
gate.set()
col.close()
report(col, max(w1, w2), r1 + r2, ok1 and ok2, c1 + c2, in_flight_while_hung=stuck)
"""

FIFO = r"""
import json, sys, time
t = time.perf_counter()
from loopscope.collectors import Collector, JsonlSink
t = time.perf_counter()
col = Collector(JsonlSink(sys.argv[1], flush_interval=0.05), strict=False)
with col.prompt(conversation_id="c") as loop, loop.tool_call("t", "x", {}):
    pass
setup = time.perf_counter() - t
col.sink.close(timeout=0.2)
s = col.stats
print(json.dumps(dict(setup_ms=setup * 1000, balanced=s.emitted == s.written + s.dropped + s.queued + s.in_flight)))
"""

KILL = r"""
import sys, time
from loopscope.collectors import Collector, JsonlSink
col = Collector(JsonlSink(sys.argv[1], flush_interval=float(sys.argv[2])), strict=False)
i = 0
with col.prompt(conversation_id="c", prompt_id="p") as loop:
    while True:
        with loop.tool_call(f"t{i}", "search", {"q": "x"}):
            pass
        i += 1
        if i % 20 == 0:
            print(time.monotonic(), i, flush=True)
            time.sleep(0.002)
"""

FORK = LOOP + r"""
import os
col = Collector(JsonlSink(sys.argv[1], flush_interval=0.02), strict=False)
kids = []
run(col, 50, "parent-before-")
for k in range(int(sys.argv[2])):
    pid = os.fork()
    if pid == 0:
        w, r, ok, c = run(col, 50, f"child{k}-")
        col.close()
        s = col.stats
        os._exit(0 if ok and r == 0 and s.emitted == s.written + s.dropped + s.queued + s.in_flight else 3)
    kids.append(pid)
w, r, ok, c = run(col, 50, "parent-after-")
codes = [os.waitpid(p, 0)[1] for p in kids]
col.close()
report(col, w, r, ok, c, children_ok=sum(1 for x in codes if x == 0))
"""

EXPORTER_DOWN = LOOP + r"""
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
import logging; logging.disable(logging.CRITICAL)
proc = {"batch": BatchSpanProcessor, "simple": SimpleSpanProcessor}[sys.argv[2]]
provider = TracerProvider()
# port 9 on localhost: nothing listens, every connection is refused; the exporter retries
provider.add_span_processor(proc(OTLPSpanExporter(endpoint="http://127.0.0.1:9/v1/traces", timeout=10)))
from loopscope.collectors import MemorySink
col = Collector(MemorySink(), tracer_provider=provider, provider="openai", strict=False)
w, r, ok, c = run(col, int(sys.argv[1]))
col.close()
report(col, w, r, ok, c)
os._exit(0)  # do not wait for the batch processor's retries at exit
"""


def collector(quick: bool, tmp: Path) -> dict[str, Any]:
    n = 2_000 if quick else 20_000
    out: dict[str, Any] = {}
    if os.path.exists("/dev/full"):
        out["disk_full"] = json.loads(py(DISK_FULL, str(n)).stdout)
    out["file_size_limit"] = json.loads(py(FSIZE, str(n), str(tmp / "fsize.jsonl")).stdout)
    out["hung_write"] = json.loads(py(HUNG, str(n), str(tmp / "hung.jsonl")).stdout)
    fifo = tmp / "pipe"
    os.mkfifo(fifo)
    res = py(FIFO, str(fifo), timeout=30)
    out["named_pipe"] = json.loads(res.stdout)
    out["sigkill"] = sigkill(tmp, runs=2 if quick else 5)
    res = py(FORK, str(tmp / "fork.jsonl"), str(4 if quick else 20))
    fork = json.loads(res.stdout)
    ids = [json.loads(x).get("tool_call_id") for x in (tmp / "fork.jsonl").read_text().splitlines()]
    calls = [i for i in ids if i]
    fork.update(children=4 if quick else 20, lines=len(calls), duplicates=len(calls) - len(set(calls)),
                expected=100 + 50 * (4 if quick else 20))
    out["fork"] = fork
    try:
        import opentelemetry.exporter.otlp.proto.http  # noqa: F401
    except ImportError:
        out["exporter_down"] = None
    else:
        out["exporter_down"] = {
            "batch": json.loads(py(EXPORTER_DOWN, "300", "batch", timeout=300).stdout),
            "simple": json.loads(py(EXPORTER_DOWN, "3", "simple", timeout=300).stdout),
        }
    return out


def sigkill(tmp: Path, runs: int) -> dict[str, Any]:
    interval = 1.0
    worst_lost_s, corrupt, lost_records = 0.0, 0, 0
    for k in range(runs):
        path = tmp / f"kill{k}.jsonl"
        proc = subprocess.Popen([sys.executable, "-c", KILL, str(path), str(interval)], stdout=subprocess.PIPE,
                                text=True, env=ENV)
        reported: list[tuple[float, int]] = []
        assert proc.stdout is not None
        start = time.monotonic()
        wait = 2.0 + random.Random(k).random() * 2
        for line in proc.stdout:
            when, i = line.split()
            reported.append((float(when), int(i)))
            if time.monotonic() - start > wait:
                break
        killed_at = time.monotonic()
        proc.kill()
        proc.wait()
        lines = path.read_bytes().split(b"\n")
        last = lines.pop()
        corrupt += sum(1 for x in lines if not _json_ok(x)) + (1 if last and _json_ok(last) is False and False else 0)
        on_disk = {json.loads(x)["tool_call_id"] for x in lines if _json_ok(x)}
        # the oldest record missing from the disk, and when the child reported having recorded it
        missing_from = next((i for _, i in reported for j in range(i - 20, i) if f"t{j}" not in on_disk), None)
        if missing_from is not None:
            first_missing_at = next(when for when, i in reported if i >= missing_from)
            worst_lost_s = max(worst_lost_s, killed_at - first_missing_at)
        lost_records = max(lost_records, reported[-1][1] - len(on_disk) if reported else 0)
    return {"runs": runs, "flush_interval_s": interval, "worst_lost_s": worst_lost_s, "corrupt_lines": corrupt,
            "worst_lost_records": lost_records}


def _json_ok(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------------------------
# loader

NOISE = ["\x00", "\x1b[31m", "\u202e", '"', "{", "}", "[", "]", ",", ":", "\\", "\\ud800", "é"]


def mutate(line: str, rnd: random.Random) -> bytes:
    i = rnd.randrange(len(line) + 1)
    op = rnd.randrange(6)
    if op == 0:
        out = line[:i] + line[i + rnd.randrange(1, 20):]
    elif op == 1:
        out = line[:i] + rnd.choice(NOISE) + line[i:]
    elif op == 2:
        out = line[:i]
    elif op == 3:
        rec = json.loads(line)
        key = rnd.choice(sorted(rec))
        rec[key] = rnd.choice([None, 0, -1, "", [], {}, "z" * 1000, 1e308, True, "\u202e"])
        out = json.dumps(rec)
    elif op == 4:
        data = line.encode()
        return data[:i] + b"\xff" + data[i:]
    else:
        out = line.replace('"', "", 1)
    return out.replace("\n", " ").encode("utf-8", "surrogatepass")


def fuzz_records(tmp: Path, lines_wanted: int) -> dict[str, Any]:
    import duckdb

    base = SAMPLE.read_text(encoding="utf-8").splitlines()
    rnd = random.Random(22)
    data, clean = [], {}
    for n in range(1, lines_wanted + 1):
        line = base[(n - 1) % len(base)]
        if rnd.random() < 0.5:
            m = mutate(line, rnd)
            data.append(m)
            if m == line.encode():
                clean[n] = json.loads(line)
        else:
            data.append(line.encode())
            clean[n] = json.loads(line)
    src = tmp / "fuzz.jsonl"
    src.write_bytes(b"\n".join(data) + b"\n")
    db = tmp / "fuzz.duckdb"
    t = time.perf_counter()
    res = cli("load", "--db", str(db), "--format", "json", str(src))
    took = time.perf_counter() - t
    if res.returncode != 0:
        return {"exit": res.returncode, "error": res.stderr[-400:]}
    summary = json.loads(res.stdout)
    nonblank = sum(1 for x in data if x.strip())
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT line_no, tool_call_id, tool_name, error_message, outcome FROM tool_calls").fetchall()
    con.close()
    altered = 0
    for line_no, call_id, name, err, outcome in rows:
        want = clean.get(line_no)
        if want is not None and (want.get("tool_call_id"), want.get("tool_name"), want.get("error_message"),
                                 want.get("outcome")) != (call_id, name, err, outcome):
            altered += 1
    return {"exit": res.returncode, "lines": nonblank, "loaded": summary["loaded"],
            "quarantined": summary["quarantined"], "unaccounted": nonblank - summary["loaded"] - summary["quarantined"],
            "valid_lines_checked": sum(1 for r in rows if r[0] in clean), "altered": altered, "seconds": took}


def otlp_string_spans(tmp: Path) -> dict[str, Any]:
    line = {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": "x"}, "spans": "z" * 200_000}]}]}
    src = tmp / "spans.jsonl"
    src.write_text(json.dumps(line) + "\n")
    db = tmp / "spans.duckdb"
    t = time.perf_counter()
    res = cli("load", "--db", str(db), "--format", "json", "--input-format", "otlp", str(src))
    took = time.perf_counter() - t
    q = json.loads(cli("quarantine", "--db", str(db), "--format", "json").stdout or "[]")
    return {"exit": res.returncode, "seconds": took, "quarantine_rows": len(q),
            "reason": q[0]["reason"] if q else None}


def linear(tmp: Path, base_lines: int) -> dict[str, Any]:
    base = SAMPLE.read_text(encoding="utf-8").splitlines()
    times = {}
    for mult in (1, 8):
        rnd = random.Random(mult)
        n = base_lines * mult
        data = [mutate(base[i % len(base)], rnd) if i % 2 else base[i % len(base)].encode() for i in range(n)]
        best = None
        for k in range(2):
            src = tmp / f"lin{mult}-{k}.jsonl"
            src.write_bytes(b"\n".join(data) + b"\n")
            t = time.perf_counter()
            cli("load", "--db", str(tmp / f"lin{mult}-{k}.duckdb"), "--format", "json", str(src))
            took = time.perf_counter() - t
            best = took if best is None else min(best, took)
        times[mult] = best
    return {"lines_1x": base_lines, "seconds_1x": times[1], "seconds_8x": times[8], "ratio": times[8] / times[1]}


def killed_loads(tmp: Path, kills: int) -> dict[str, Any]:
    src = tmp / "big"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_records.py"), "400000", str(src), "--files", "2"],
                   check=True, capture_output=True, env=ENV)
    clean = tmp / "clean.duckdb"
    cli("load", "--db", str(clean), "--format", "json", str(src))
    want = json.loads(cli("metrics", "--db", str(clean), "--format", "json").stdout)
    opened, matched = 0, 0
    for k in range(kills):
        db = tmp / f"killed{k}.duckdb"
        proc = subprocess.Popen([*LOOPSCOPE, "load", "--db", str(db), str(src)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
        time.sleep(0.3 + random.Random(k).random() * 2.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        res = cli("metrics", "--db", str(db), "--format", "json")
        opened += res.returncode in (0, 1)  # 1: an empty store says so; 2 would be a broken one
        cli("load", "--db", str(db), "--format", "json", str(src))
        got = cli("metrics", "--db", str(db), "--format", "json")
        matched += got.returncode == 0 and json.loads(got.stdout) == want
    return {"kills": kills, "store_opened": opened, "reload_matched": matched}


# ----------------------------------------------------------------------------------------------
# reports and redaction

SNEAKY = "\u202e\u2066\u2069\u200b\ufeff\x1b[31m\x07"


def reports(tmp: Path) -> dict[str, Any]:
    lines = []
    for raw in SAMPLE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(raw)
        if rec.get("tool_name"):
            rec["tool_name"] = "get\u202e" + rec["tool_name"] + "[bold]x[/bold]\u2066"
        if rec.get("error_message"):
            rec["error_message"] += " " + SNEAKY + "<script>x</script> =cmd"
        lines.append(json.dumps(rec, ensure_ascii=False))
    src = tmp / "hostile.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp / "hostile.duckdb"
    cli("load", "--db", str(db), str(src))
    outputs: dict[str, str] = {}
    for name, args in {
        "metrics (table)": ["metrics"], "unrecovered (table)": ["unrecovered"], "unrecovered (json)":
        ["unrecovered", "--format", "json"], "unrecovered (csv)": ["unrecovered", "--format", "csv"],
        "audit (table)": ["audit"], "audit (json)": ["audit", "--format", "json"],
    }.items():
        outputs[name] = cli(*args, "--db", str(db)).stdout
    cli("audit", "--db", str(db), "--html", str(tmp / "audit.html"), "--format", "json")
    outputs["audit (HTML)"] = (tmp / "audit.html").read_text(encoding="utf-8") if (tmp / "audit.html").exists() else ""
    cli("sample", "--db", str(db), "--n", "12", "--seed", "1", "--out", str(tmp / "pack"))
    pack = sorted((tmp / "pack").rglob("*.md")) + sorted((tmp / "pack").rglob("*.csv"))
    outputs["review pack (Markdown, CSV)"] = "".join(p.read_text(encoding="utf-8") for p in pack)
    raw_chars = set("\u202e\u2066\u2069\u200b\ufeff\x1b\x07")
    return {name: {"bytes": len(text), "raw_controls": sum(text.count(c) for c in raw_chars)}
            for name, text in outputs.items()}


PROBE = {
    "bare AWS secret key": "S3: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY denied",
    "Azure AccountKey=": "AccountName=a;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9v+/==;EndpointSuffix=x",
    "Azure SAS sig=": "GET https://a.blob.core.windows.net/c?sv=2022&sig=AbC%2Fdef123xyz%3D failed",
    "GCP private_key_id": '{"private_key_id": "3f2a9c0d1e4b5a6f7e8d9c0b1a2f3e4d5c6b7a8f"}',
    "Cookie: header": "Cookie: session=9f8e7d6c; theme=dark",
    "password in prose": "login failed with password hunter2",
    "passwd: with &": "passwd: abc&tailsecret",
    "OpenAI key": "bad key sk-proj-AbCdEfGhIjKlMnOpQrStUv12",
    "Bearer token": "Authorization: Bearer abc.def-ghi_123",
    "URL password": "postgres://app:s3cr3t!@db:5432/x",
    "JWT": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}
SECRETS = ["wJalrXUtnFEMI", "Zm9vYmFy", "AbC%2Fdef", "3f2a9c0d", "9f8e7d6c", "hunter2", "tailsecret",
           "AbCdEfGh", "abc.def", "s3cr3t", "dozjgNry"]


def redaction() -> dict[str, bool]:
    from loopscope.collectors import redact_secrets

    return {name: secret not in redact_secrets(text) for (name, text), secret in zip(PROBE.items(), SECRETS)}


# ----------------------------------------------------------------------------------------------
# the page


def yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def render(r: dict[str, Any]) -> str:
    c, ld = r["collector"], r["loader"]
    lines = [
        "# Reliability: what loopscope promises, and the figures",
        "",
        f"<!-- generated by benchmarks/reliability.py on {r['when']}; do not edit by hand: run it again -->",
        "",
        f"Generated by `python benchmarks/reliability.py` on {r['when']} ({r['machine']}). Every figure below",
        "comes from that run; the same promises are checked by the test suite on every CI run",
        "(`tests/test_collector_faults.py`, `tests/test_fuzz_readers.py`, `tests/test_otlp_malformed.py`,",
        "`tests/test_output_bidi.py`, `tests/test_collector_redact.py`).",
        "",
        "## The collector",
        "",
        "Promises: it never raises into your loop and never blocks it on I/O; memory is bounded",
        "(`max_queue`); every record handed to it is counted, and the counters balance at every moment:",
        "`emitted = written + dropped + queued + in_flight`; a process killed with SIGKILL loses at most",
        "the last `flush_interval` of records and leaves at most one partial last line.",
        "",
        "| fault | records | host calls that raised | host call p99 / slowest | counters balanced (checks) | outcome |",
        "|---|---:|---:|---:|---|---|",
    ]

    def row(name: str, s: dict[str, Any] | None, outcome: str) -> None:
        if s is None:
            lines.append(f"| {name} | - | - | - | - | not run: {outcome} |")
            return
        lines.append(f"| {name} | {s['emitted']:,} | {s['raised']} | {s['p99_us']:.0f} us / {s['worst_ms']:.1f} ms | "
                     f"{yes(s['balanced'])} ({s['checks']:,}) | {outcome} |")

    if "disk_full" in c:
        s = c["disk_full"]
        row("disk full (`/dev/full`)", s, f"written {s['written']}, dropped {s['dropped']:,}")
    s = c["file_size_limit"]
    row("file size limit (EFBIG after a partial write)", s,
        f"written {s['written']:,} = {s['lines_on_disk']:,} whole lines on disk; dropped {s['dropped']:,}")
    s = c["hung_write"]
    row("a write that hangs, then returns", s,
        f"{s['in_flight_while_hung']:,} in flight while hung; then written {s['written']:,}, dropped {s['dropped']:,}")
    s = c["fork"]
    row(f"fork ({s['children']} children)", s,
        f"{s['children_ok']}/{s['children']} children balanced; {s['lines']:,} of {s['expected']:,} calls on disk, "
        f"{s['duplicates']} twice")
    ex = c.get("exporter_down")
    if ex:
        row("OTLP exporter down, `BatchSpanProcessor`", ex["batch"], "the loop does not wait for the export")
        row("OTLP exporter down, `SimpleSpanProcessor`", ex["simple"],
            f"**{ex['simple']['worst_ms'] / 1000:.1f} s per tool call** on the loop thread (SDK behaviour)")
    lines += [
        "",
        "The slowest host call is a wait for the GIL or the CPU (the writer thread, other processes on a",
        "shared 2-CPU machine), not I/O: the host thread never opens, writes or waits for the file.",
        "",
        f"- A named pipe with no reader: setup and a first tool call took {c['named_pipe']['setup_ms']:.1f} ms "
        f"(the writer thread waits for a reader, not your thread); counters balanced: "
        f"{yes(c['named_pipe']['balanced'])}.",
        f"- SIGKILL mid-run, {c['sigkill']['runs']} runs with `flush_interval={c['sigkill']['flush_interval_s']:g}`: "
        f"at most {c['sigkill']['worst_lost_s']:.2f} s of records lost (at most "
        f"{c['sigkill']['worst_lost_records']:,} records), {c['sigkill']['corrupt_lines']} corrupt lines before the "
        "last.",
        "- With `SimpleSpanProcessor` every span is exported on the thread that ends it: with the backend",
        "  down the OTLP/HTTP exporter's retries run on your loop. Use `BatchSpanProcessor`",
        "  ([collector.md](collector.md#opentelemetry)).",
        "",
        "## The loader",
        "",
        "Promises: no traceback on any input; every non-blank line is loaded or quarantined, once, with",
        "its line number and a reason in plain words; valid records are stored as written; a bad line",
        "costs time in proportion to its size; a load killed part way leaves a store that opens, and",
        "loading again completes it.",
        "",
    ]
    fz = ld["fuzz_records"]
    if "lines" in fz:
        lines.append(f"- Fuzzed record lines (half mutated: bytes cut, inserted or made invalid UTF-8, fields of "
                     f"the wrong type, lone surrogates, bidi and escape characters): {fz['lines']:,} lines, "
                     f"{fz['loaded']:,} loaded + {fz['quarantined']:,} quarantined, {fz['unaccounted']} unaccounted; "
                     f"{fz['valid_lines_checked']:,} valid tool-call lines compared field by field, {fz['altered']} "
                     f"altered; load {fz['seconds']:.1f} s, exit {fz['exit']}.")
    else:
        lines.append(f"- Fuzzed record lines: **load failed** (exit {fz['exit']}): {fz.get('error')}")
    sp = ld["otlp_string_spans"]
    lines.append(f"- One OTLP line whose `spans` is a 200,000-character string: {sp['quarantine_rows']} quarantine "
                 f"row(s) in {sp['seconds']:.1f} s (was 200,000 rows in 192 s), reason: \"{sp['reason']}\".")
    li = ld["linear"]
    lines.append(f"- Load time, hostile record lines: {li['lines_1x']:,} lines {li['seconds_1x']:.2f} s, 8x as many "
                 f"{li['seconds_8x']:.2f} s: {li['ratio']:.1f}x for 8x the input (process start included).")
    kl = ld.get("killed_loads")
    if kl:
        lines.append(f"- SIGKILL during a load of 400,000 records, {kl['kills']} times at random moments: the store "
                     f"opened afterwards {kl['store_opened']}/{kl['kills']} times; loading again gave the same "
                     f"`metrics` as a clean load {kl['reload_matched']}/{kl['kills']} times.")
    lines += [
        "- The fuzz suite (`tests/test_fuzz_readers.py`) runs on every CI run for the records, message-array",
        "  and OTLP readers with a fixed number of examples (about 40 s);",
        "  `LOOPSCOPE_FUZZ=long python -m pytest tests/test_fuzz_readers.py` runs 20x more.",
        "",
        "## The reports",
        "",
        "Promise: untrusted text (tool names, error messages, ids) is inert in every output: ANSI",
        "escapes, rich markup, HTML, CSV formulas, bidi controls (U+202A-U+202E, U+2066-U+2069) and",
        "invisible format characters (zero-width, BOM) are shown as visible escapes or escaped text.",
        "",
        "Tool names and error messages of `sample_logs/concierge.jsonl` with U+202E, U+2066, U+2069,",
        "U+200B, U+FEFF, ESC and BEL added:",
        "",
        "| output | bytes | raw control characters in it |",
        "|---|---:|---:|",
    ]
    for name, s in r["reports"].items():
        lines.append(f"| {name} | {s['bytes']:,} | {s['raw_controls']} |")
    lines += [
        "",
        "## Redaction",
        "",
        "Promise, limited: secrets in error text are redacted **on a best-effort basis**, in the shapes",
        "listed in [collector.md](collector.md#redaction). The shapes a hostile probe found passing",
        "(issue 22), and common ones:",
        "",
        "| shape | redacted |",
        "|---|---|",
    ]
    for name, ok in r["redaction"].items():
        lines.append(f"| {name} | {yes(ok)} |")
    lines += [
        "",
        "A secret in a shape not listed (a plain word used as a password in prose, a format not in the",
        "list) is kept as written. Redact in the tool, before raising, what the list does not cover.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md")
    parser.add_argument("--quick", action="store_true", help="small numbers: check the script, not figures")
    parser.add_argument("--json", type=Path, help="also write the raw figures as JSON here")
    args = parser.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        r: dict[str, Any] = {
            "when": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.system()}",
        }
        print("collector ...", flush=True)
        r["collector"] = collector(args.quick, tmp / "c" if (tmp / "c").mkdir() is None else tmp)
        print("loader ...", flush=True)
        (tmp / "l").mkdir()
        r["loader"] = {
            "fuzz_records": fuzz_records(tmp / "l", 2_000 if args.quick else 100_000),
            "otlp_string_spans": otlp_string_spans(tmp / "l"),
            "linear": linear(tmp / "l", 2_000 if args.quick else 20_000),
            "killed_loads": None if args.quick else killed_loads(tmp / "l", 6),
        }
        print("reports ...", flush=True)
        (tmp / "r").mkdir()
        r["reports"] = reports(tmp / "r")
        r["redaction"] = redaction()
    args.out.write_text(render(r), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2, default=str), encoding="utf-8")
    print(f"wrote {args.out} in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
