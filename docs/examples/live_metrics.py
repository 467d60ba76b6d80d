"""The four dashboard metrics live: a loop exports them to Prometheus through OpenTelemetry.

Run it: ``python docs/examples/live_metrics.py`` (needs ``pip install opentelemetry-sdk
opentelemetry-exporter-prometheus``). It serves http://127.0.0.1:9464/metrics (``--port``),
runs three prompts and prints the loopscope lines of that page; ``--serve`` keeps serving for a
Prometheus to scrape (docs/prometheus.md). tests/test_live_metrics.py runs it.
"""

from __future__ import annotations

import argparse
import time
import urllib.request

from opentelemetry import metrics
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import start_http_server

from loopscope.collectors import Collector


def run_loops(collector: Collector) -> None:
    # 1. An error the model recovers from in its next step.
    with collector.prompt(conversation_id="c-1", agent="support", max_tool_calls=25) as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("toolu_01", "get_order", {"order_id": "A-1"}, catch=True) as call:
            call.fail("Error: order_id must look like ORD-123", error_type="invalid_argument")
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("toolu_02", "get_order", {"order_id": "ORD-123"}):
            pass
        loop.model_response(stop_reason="end_turn")
    # 2. A call the idempotency layer had already run (a replay), then a refund that fails and
    #    only a `think` call after it (a scratchpad tool: never a recovery).
    with collector.prompt(conversation_id="c-1", agent="support", max_tool_calls=25) as loop:
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("toolu_02", "get_order", {"order_id": "ORD-123"}) as call:
            call.replayed(result="cached order")
        with loop.tool_call("toolu_03", "refund", {"order_id": "ORD-123"}, catch=True) as call:
            call.fail("Error: refund window closed on 2026-11-01", error_type="refund_window_closed")
        loop.model_response(stop_reason="tool_use")
        with loop.tool_call("toolu_04", "think", {"thought": "tell the user"}):
            pass
        loop.model_response(stop_reason="end_turn")
    # 3. A prompt still running: in flight.
    loop = collector.prompt(conversation_id="c-2", agent="billing")
    loop.model_response(stop_reason="tool_use")
    with loop.tool_call("toolu_05", "get_invoice", {"invoice_id": "INV-9"}):
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=9464, help="0: any free port")
    ap.add_argument("--log", default="loopscope.jsonl", help="the collector's records file")
    ap.add_argument("--serve", action="store_true", help="keep serving /metrics until interrupted")
    ns = ap.parse_args(argv)

    # The host chooses the MeterProvider and its exporter (loopscope uses the metrics API only).
    server, _ = start_http_server(ns.port, addr="127.0.0.1")
    metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))

    collector = Collector(ns.log, provider="anthropic")  # scratchpad_tools=("think",) by default
    run_loops(collector)
    collector.close()

    url = f"http://127.0.0.1:{server.server_port}/metrics"
    page = urllib.request.urlopen(url, timeout=10).read().decode()  # noqa: S310 - our own endpoint
    for line in page.splitlines():
        if line.startswith("loopscope_") and "_bucket" not in line:
            # The otel_scope_* labels the exporter adds are the same on every line: left out here.
            name, _, rest = line.partition("{")
            labels = ",".join(kv for kv in rest.split("} ")[0].split(",") if not kv.startswith("otel_scope"))
            print(f"{name}{{{labels}}} {rest.split('} ')[1]}")
    if ns.serve:
        print(f"serving {url}; Ctrl-C to stop")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
