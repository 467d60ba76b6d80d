"""Cost of the collector per tool call, next to baselines measured in the same run.

Usage::

    python benchmarks/collector_bench.py [--calls 1000000] [--batch 5000] [--out DIR]

What is measured (each call timed alone with ``perf_counter_ns``; the timer's own cost, measured
the same way around an empty statement, is subtracted; p50/p99 in ns):

1. ``collector+jsonl``: ``with loop.tool_call(id, name, args): pass`` with a :class:`JsonlSink` --
   the host-thread cost: the ToolCall object, two clock reads, the record dict, a shallow copy of
   the arguments, one deque append. Shape, fingerprint, timestamp formatting, JSON encoding and
   the write happen on the writer thread, so calls run in batches of ``--batch`` (below the
   queue bound, so nothing is dropped) and the queue is drained between batches, untimed.
2. ``bare json+write``: what a synchronous logger would do on the host thread for the same record:
   compute shape and fingerprint, ``json.dumps`` the full record, write the line to a buffered
   file.
3. ``writer throughput``: records per second the writer path (finish + encode + append) sustains,
   timed over the drains of run 1. If the host records faster than this for longer than the queue
   lasts, records are dropped (counted), never blocking.
4. With an OpenTelemetry SDK ``TracerProvider`` + ``BatchSpanProcessor`` exporting to a no-op
   exporter (its queue also drained between batches, untimed): the collector (span + record) next
   to a bare SDK span with the same name and attributes (``start_as_current_span`` + the
   end-of-call attributes), and a bare span with no attributes.
5. The collector with tracing and a Logs SDK (``LoggerProvider`` + ``BatchLogRecordProcessor``
   to a no-op exporter): the added cost of the ``loopscope.tool_call`` log record, next to a bare
   SDK log record with the same body and attributes.
6. The dashboard metrics (``collectors/metrics.py``): the collector with no MeterProvider (metrics
   off), and with an SDK ``MeterProvider`` + ``PeriodicExportingMetricReader`` (a no-op exporter,
   exporting every second on its own thread), next to the bare SDK instrument calls a successful
   tool call makes (``loopscope.tool.calls`` add + ``gen_ai.execute_tool.duration`` record, same
   attributes) and one bare counter add. Besides the p50 of each call's wall time, the host
   thread's CPU time per call (``thread_time_ns`` around each timed batch, the same timer loop
   around an empty call subtracted): the figure to trust on a loaded machine. Per prompt, the cost
   of opening and closing a prompt with and without metrics (its histogram point, exit, active
   gauge). ``--only-metrics`` runs this part alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loopscope.collectors import Collector, CollectorStats, JsonlSink, PromptLoop
from loopscope.collectors.records import finish
from loopscope.collectors.shape import shape_and_fingerprint
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

ARGS = {"check_in": "2026-12-01", "nights": 3, "room_type": "double", "guests": 2}
pc = time.perf_counter_ns


class NoopLogExporter(LogRecordExporter):
    def export(self, batch):  # noqa: ANN001, ANN201
        return LogRecordExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        pass


class NoopExporter(SpanExporter):
    def export(self, spans):  # noqa: ANN001, ANN201
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


class NoopMetricExporter(MetricExporter):
    def export(self, metrics_data, timeout_millis: float = 10_000, **kwargs):  # noqa: ANN001, ANN003, ANN201
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs) -> None:  # noqa: ANN003
        pass


def percentiles(ns: list[int], overhead: int) -> tuple[float, float]:
    ns.sort()
    p50 = ns[len(ns) // 2] - overhead
    p99 = ns[min(len(ns) - 1, int(len(ns) * 0.99))] - overhead
    return max(p50, 0), max(p99, 0)


def timer_overhead(n: int) -> int:
    out = []
    for _ in range(n):
        t = pc()
        out.append(pc() - t)
    out.sort()
    return out[len(out) // 2]


def run_batched(
    calls: int, batch: int, one: Callable[[int], None], between: Callable[[], None]
) -> tuple[list[int], float]:
    """Time each call; run ``between`` (untimed, but its wall time is returned) after each batch."""
    times: list[int] = []
    append = times.append
    between_s = 0.0
    done = 0
    while done < calls:
        n = min(batch, calls - done)
        for i in range(done, done + n):
            t = pc()
            one(i)
            append(pc() - t)
        done += n
        t0 = time.perf_counter()
        between()
        between_s += time.perf_counter() - t0
    return times, between_s


def collector_call(
    path: Path, batch: int, calls: int, **providers: object
) -> tuple[JsonlSink, Collector, PromptLoop, Callable[[int], None]]:
    """A collector writing to a JsonlSink at ``path`` (its queue above one batch, no timed flush),
    one open prompt after a ``tool_use`` response, and the call to time:
    ``with loop.tool_call(id, "book_room", ARGS): pass``. Returns (sink, collector, loop, call)."""
    sink = JsonlSink(path, max_queue=batch + 10, flush_interval=3600, max_bytes=None)
    col = Collector(sink, strict=False, **providers)
    loop = col.prompt(conversation_id="bench", prompt_id="p", agent="bench")
    loop.model_response(stop_reason="tool_use")
    tool_call = loop.tool_call
    ids = [f"toolu_{i:08d}" for i in range(min(calls, 100_000))]
    nid = len(ids)

    def one(i: int) -> None:
        with tool_call(ids[i % nid], "book_room", ARGS):
            pass

    return sink, col, loop, one


def close_all(loop: PromptLoop, col: Collector) -> CollectorStats:
    """Close the prompt, then the collector; the collector's stats from between the two."""
    loop.close()
    st = col.stats
    col.close()
    return st


def bench_jsonl(calls: int, batch: int, tmp: Path) -> dict:
    sink, col, _, one = collector_call(tmp / "bench.jsonl", batch, calls)
    times, drain_s = run_batched(calls, batch, one, sink.flush)
    st = col.stats
    col.close()
    assert st.dropped == 0 and st.sink_errors == 0, st
    return {"times": times, "writer_s": drain_s, "written": st.written}


def bench_bare(calls: int, batch: int, tmp: Path) -> list[int]:
    f = open(tmp / "bare.jsonl", "w", encoding="utf-8")  # noqa: SIM115
    dumps = json.dumps
    wall, perf = time.time, time.perf_counter
    ids = [f"toolu_{i:08d}" for i in range(min(calls, 100_000))]
    nid = len(ids)

    def one(i: int) -> None:
        t0 = perf()
        shape, fp = shape_and_fingerprint(ARGS)
        rec = {
            "v": 1,
            "kind": "tool_call",
            "ts": wall(),
            "conversation_id": "bench",
            "prompt_id": "p",
            "agent": "bench",
            "trace_id": None,
            "span_id": None,
            "tool_call_id": ids[i % nid],
            "tool_name": "book_room",
            "step": 0,
            "input_shape": shape,
            "args_fingerprint": fp,
            "outcome": "ok",
            "is_error": False,
            "attempts": 1,
            "latency_ms": (perf() - t0) * 1000.0,
            "error_type": None,
            "error_message": None,
            "replayed": False,
        }
        finish(rec)  # the same timestamp formatting the collector's writer does
        f.write(dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")

    times, _ = run_batched(calls, batch, one, f.flush)
    f.close()
    return times


def sdk_provider(batch: int) -> tuple[TracerProvider, BatchSpanProcessor]:
    provider = TracerProvider(shutdown_on_exit=False)
    # A queue that holds a whole batch, drained (untimed) between batches like the JSONL queue:
    # otherwise the processor drops spans when full and the cheaper drop path skews the figures.
    bsp = BatchSpanProcessor(NoopExporter(), max_queue_size=batch + 1024)
    provider.add_span_processor(bsp)
    return provider, bsp


def bench_tracing(calls: int, batch: int, tmp: Path) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    ids = [f"toolu_{i:08d}" for i in range(min(calls, 100_000))]
    nid = len(ids)

    # Bare SDK span, no attributes.
    provider, bsp = sdk_provider(batch)
    tracer = provider.get_tracer("bare")
    with tracer.start_as_current_span("invoke_agent bench"):

        def bare(i: int) -> None:
            with tracer.start_as_current_span("execute_tool book_room", kind=SpanKind.INTERNAL):
                pass

        out["bare SDK span"], _ = run_batched(calls, batch, bare, bsp.force_flush)
    provider.shutdown()

    # Bare SDK span with the same attributes the collector sets.
    provider, bsp = sdk_provider(batch)
    tracer = provider.get_tracer("bare")
    with tracer.start_as_current_span("invoke_agent bench"):

        def bare_attrs(i: int) -> None:
            with tracer.start_as_current_span(
                "execute_tool book_room",
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "book_room",
                    "gen_ai.tool.call.id": ids[i % nid],
                    "gen_ai.tool.type": "function",
                    "gen_ai.conversation.id": "bench",
                    "loopscope.prompt.id": "p",
                    "loopscope.tool.step": 0,
                    "loopscope.tool.input_shape": '{"check_in":"string","guests":"integer","nights":"integer",'
                    '"room_type":"string"}',
                },
            ) as span:
                span.set_attributes({"loopscope.tool.outcome": "ok", "loopscope.tool.attempts": 1})

        out["bare SDK span, same attributes"], _ = run_batched(calls, batch, bare_attrs, bsp.force_flush)
    provider.shutdown()

    # The collector with tracing on (span + record to the JSONL sink).
    provider, bsp = sdk_provider(batch)
    sink, col, loop, traced = collector_call(tmp / "traced.jsonl", batch, calls, tracer_provider=provider)

    def drain() -> None:
        sink.flush()
        bsp.force_flush()

    out["collector+jsonl, tracing on"], _ = run_batched(calls, batch, traced, drain)
    st = close_all(loop, col)
    provider.shutdown()
    assert st.dropped == 0 and st.sink_errors == 0, st

    # Bare SDK log record with the body and attributes the collector's tool_call record has.
    log_provider = LoggerProvider(shutdown_on_exit=False)
    blp = BatchLogRecordProcessor(NoopLogExporter(), max_queue_size=batch + 1024)
    log_provider.add_log_record_processor(blp)
    logger = log_provider.get_logger("bare")
    # Emitted in a live span's context, as the collector does (the SDK then copies the span's ids).
    span_provider, _ = sdk_provider(batch)
    span_ctx = trace.set_span_in_context(span_provider.get_tracer("bare").start_span("execute_tool book_room"))
    body = {
        "conversation_id": "bench",
        "prompt_id": "p",
        "agent": "bench",
        "tool_call_id": "toolu_00000000",
        "tool_name": "book_room",
        "step": 0,
        "input_shape": {"check_in": "string", "nights": "integer", "room_type": "string", "guests": "integer"},
        "outcome": "ok",
        "is_error": False,
        "attempts": 1,
        "latency_ms": 0.001,
        "replayed": False,
    }

    def bare_log(i: int) -> None:
        logger.emit(
            timestamp=time.time_ns(),
            context=span_ctx,
            severity_number=SeverityNumber.INFO,
            severity_text="INFO",
            body=body,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "book_room",
                "gen_ai.tool.call.id": ids[i % nid],
                "gen_ai.tool.type": "function",
                "gen_ai.conversation.id": "bench",
            },
            event_name="loopscope.tool_call",
        )

    out["bare SDK log record, same body"], _ = run_batched(calls, batch, bare_log, blp.force_flush)
    log_provider.shutdown()
    span_provider.shutdown()

    # The collector with tracing, plus a Logs SDK: one loopscope.tool_call log record per call.
    provider, bsp = sdk_provider(batch)
    log_provider = LoggerProvider(shutdown_on_exit=False)
    blp = BatchLogRecordProcessor(NoopLogExporter(), max_queue_size=batch + 1024)
    log_provider.add_log_record_processor(blp)
    sink, col, loop, logged = collector_call(
        tmp / "logged.jsonl", batch, calls, tracer_provider=provider, logger_provider=log_provider
    )

    def drain_all() -> None:
        sink.flush()
        bsp.force_flush()
        blp.force_flush()

    out["collector+jsonl, tracing + logs on"], _ = run_batched(calls, batch, logged, drain_all)
    st = close_all(loop, col)
    provider.shutdown()
    log_provider.shutdown()
    assert st.dropped == 0 and st.sink_errors == 0 and st.internal_errors == 0, st
    return out


def run_cpu(calls: int, batch: int, one: Callable[[int], None], between: Callable[[], None]) -> tuple[list[int], int]:
    """Like :func:`run_batched`, also returning the host thread's CPU ns spent in the timed batches."""
    times: list[int] = []
    append = times.append
    cpu = 0
    tt = time.thread_time_ns
    done = 0
    while done < calls:
        n = min(batch, calls - done)
        c0 = tt()
        for i in range(done, done + n):
            t = pc()
            one(i)
            append(pc() - t)
        cpu += tt() - c0
        done += n
        between()
    return times, cpu


def meter_provider() -> tuple[MeterProvider, PeriodicExportingMetricReader]:
    reader = PeriodicExportingMetricReader(NoopMetricExporter(), export_interval_millis=1000)
    return MeterProvider(metric_readers=[reader], shutdown_on_exit=False), reader


def bench_metrics(calls: int, batch: int, tmp: Path) -> dict[str, tuple[list[int], int]]:
    """Rows of part 6: (per-call wall ns, host-thread CPU ns in all) per measurement."""
    out: dict[str, tuple[list[int], int]] = {}
    ids = [f"toolu_{i:08d}" for i in range(min(calls, 100_000))]
    nid = len(ids)
    out["empty call (timer loop)"] = run_cpu(calls, batch, lambda i: None, lambda: None)

    def collector_rows(name: str, provider: object) -> None:
        sink, col, loop, one = collector_call(tmp / f"{len(out)}.jsonl", batch, calls, meter_provider=provider)
        out[name] = run_cpu(calls, batch, one, sink.flush)
        st = close_all(loop, col)
        assert st.dropped == 0 and st.internal_errors == 0, st

    collector_rows("collector+jsonl, metrics off", None)
    provider, reader = meter_provider()
    collector_rows("collector+jsonl, metrics on", provider)
    provider.shutdown()

    provider, reader = meter_provider()
    meter = provider.get_meter("bare")
    counter = meter.create_counter("bare.calls", unit="{tool_call}")
    hist = meter.create_histogram("bare.duration", unit="s", explicit_bucket_boundaries_advisory=[0.001 * 2**k for k in range(17)])
    attrs = {"gen_ai.agent.name": "bench", "gen_ai.tool.name": "book_room"}

    def bare_pair(i: int) -> None:
        counter.add(1, attrs)
        hist.record(0.0002, attrs)

    def bare_add(i: int) -> None:
        counter.add(1, attrs)

    out["bare SDK counter add + histogram record"] = run_cpu(calls, batch, bare_pair, lambda: None)
    out["bare SDK counter add"] = run_cpu(calls, batch, bare_add, lambda: None)
    provider.shutdown()

    # Per prompt: open, one call, close (the prompt's histogram point, exit, active gauge).
    prompts = max(calls // 10, 1000)
    for name, prov in (("prompt+1 call, metrics off", None), ("prompt+1 call, metrics on", "sdk")):
        provider = meter_provider()[0] if prov else None
        sink = JsonlSink(tmp / f"p{len(out)}.jsonl", max_queue=2 * batch + 10, flush_interval=3600, max_bytes=None)
        col = Collector(sink, strict=False, meter_provider=provider)

        def one_prompt(i: int) -> None:
            loop = col.prompt(conversation_id="bench", prompt_id=ids[i % nid], agent="bench")
            loop.model_response(stop_reason="tool_use")
            with loop.tool_call(ids[i % nid], "book_room", ARGS):
                pass
            loop.model_response(stop_reason="end_turn")
            loop.close()

        out[name] = run_cpu(prompts, batch, one_prompt, sink.flush)
        col.close()
        if provider is not None:
            provider.shutdown()
    return out


def report_metrics(rows: dict[str, tuple[list[int], int]], calls: int, overhead: int) -> None:
    prompts = max(calls // 10, 1000)
    empty_cpu = rows["empty call (timer loop)"][1] / calls
    print(f"\n{'dashboard metrics (part 6)':<44} {'p50 ns':>9} {'p99 ns':>9} {'CPU ns':>9}")
    cpu: dict[str, float] = {}
    p50: dict[str, float] = {}
    for name, (times, cpu_ns) in rows.items():
        n = prompts if name.startswith("prompt") else calls
        p50[name], p99 = percentiles(times, overhead)
        cpu[name] = cpu_ns / n - empty_cpu
        print(f"{name:<44} {p50[name]:>9.0f} {p99:>9.0f} {cpu[name]:>9.0f}")
    bare = "bare SDK counter add + histogram record"
    for what, d in (("CPU", cpu), ("p50", p50)):
        added = d["collector+jsonl, metrics on"] - d["collector+jsonl, metrics off"]
        r = added / d[bare]
        print(
            f"metrics on adds {added:.0f} ns {what} per call: {r:.2f}x the bare instruments' own cost "
            f"({d[bare]:.0f} ns), {added / d['bare SDK counter add']:.2f}x one bare counter add "
            f"(target <= 1.2x the bare instruments: {'met' if r <= 1.2 else 'NOT met'})"
        )
    added = cpu["prompt+1 call, metrics on"] - cpu["prompt+1 call, metrics off"]
    print(f"metrics on adds {added:.0f} ns CPU per prompt with one call (prompt open/close included)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1_000_000, help="tool calls per measurement (default 1,000,000)")
    ap.add_argument("--batch", type=int, default=5_000, help="calls between untimed queue drains")
    ap.add_argument("--skip-tracing", action="store_true")
    ap.add_argument("--only-metrics", action="store_true", help="run part 6 (the dashboard metrics) alone")
    ns = ap.parse_args(argv)
    calls, batch = ns.calls, ns.batch
    if ns.only_metrics:
        with tempfile.TemporaryDirectory() as d:
            overhead = timer_overhead(200_000)
            t_start = time.perf_counter()
            rows = bench_metrics(calls, batch, Path(d))
            print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {calls:,} calls per row; timer overhead {overhead} ns")
            report_metrics(rows, calls, overhead)
            print(f"total {time.perf_counter() - t_start:.1f} s")
        return 0

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        overhead = timer_overhead(200_000)
        rows: list[tuple[str, float, float]] = []
        t_start = time.perf_counter()
        jl = bench_jsonl(calls, batch, tmp)
        rows.append(("collector+jsonl (host thread)",) + percentiles(jl["times"], overhead))
        rows.append(("bare shape+json.dumps+write",) + percentiles(bench_bare(calls, batch, tmp), overhead))
        if not ns.skip_tracing:
            for name, times in bench_tracing(calls, batch, tmp).items():
                rows.append((name,) + percentiles(times, overhead))
        metric_rows = bench_metrics(calls, batch, tmp)
        total_s = time.perf_counter() - t_start

    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {calls:,} calls per row, "
        f"batches of {batch:,}; timer overhead {overhead} ns subtracted"
    )
    print(f"{'measurement':<36} {'p50 ns':>9} {'p99 ns':>9}")
    for name, p50, p99 in rows:
        print(f"{name:<36} {p50:>9.0f} {p99:>9.0f}")
    by = {name: (p50, p99) for name, p50, p99 in rows}
    c, b = by["collector+jsonl (host thread)"], by["bare shape+json.dumps+write"]
    print(
        f"\ncollector+jsonl vs bare json+write, p50: {c[0] / b[0]:.2f}x  (target: <= 1500 ns p50: "
        f"{'met' if c[0] <= 1500 else 'NOT met'})"
    )
    print(
        f"writer thread: {jl['written'] / jl['writer_s']:,.0f} records/s "
        f"({jl['writer_s'] * 1e9 / jl['written']:.0f} ns per record: finish + encode + write)"
    )
    if not ns.skip_tracing:
        t = by["collector+jsonl, tracing on"]
        for base in ("bare SDK span, same attributes", "bare SDK span"):
            r = t[0] / by[base][0]
            print(f"tracing on vs {base}, p50: {r:.2f}x")
        r = t[0] / by["bare SDK span, same attributes"][0]
        print(f"(target: <= 1.2x a bare SDK span with the same attributes: {'met' if r <= 1.2 else 'NOT met'})")
        added = by["collector+jsonl, tracing + logs on"][0] - t[0]
        r = added / by["bare SDK log record, same body"][0]
        print(f"logs on adds {added:.0f} ns p50 per call: {r:.2f}x a bare SDK log record with the same body")
    report_metrics(metric_rows, calls, overhead)
    print(f"total {total_s:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
