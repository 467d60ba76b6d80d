"""End to end: a real Prometheus scrapes a loop's metrics and its PromQL agrees with ``loopscope metrics``.

The demo agent and generated loops run with a MeterProvider whose readers are the
``opentelemetry-exporter-prometheus`` reader (served on 127.0.0.1 by prometheus_client) and an
in-memory reader. A Prometheus server (the Debian package's binary) on 127.0.0.1, with a random
free port, a temporary storage folder, a 1-second scrape interval and docs/prometheus's rules
loaded, scrapes it. Then, through its HTTP API:

- the four figures in their since-start form (docs/prometheus.md) equal ``loopscope metrics
  --format json`` on the records the same run wrote (counts exactly; median and p99 within the
  bucket interval of docs/collector.md, and equal to the reference estimator over the in-memory
  reader's buckets);
- every rule of docs/prometheus/loopscope-rules.yml loaded without error, and every query of the
  Grafana dashboard runs and returns series (the loops run in two batches with scrapes between
  them, so that rate() has two samples).

The server is always killed (bounded waits). Skipped, with the reason printed, only where the
``prometheus`` binary is not installed (``apt-get install prometheus``; .ci/run installs it).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"loopscope_{name}", Path(__file__).parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


support = _load("live_metrics_support")
rules_test = _load("test_prometheus_rules")
RULES = rules_test.RULES
PROMETHEUS, pytestmark = rules_test.needs_binary("prometheus", "end-to-end scrape not run")
runner = CliRunner()

# The four figures over everything since the process started (docs/prometheus.md); the
# dashboard and the alerts use the same expressions over rate() windows.
SINCE_START = {
    "median_tool_calls_per_prompt": "histogram_quantile(0.5, sum by (le) (loopscope_prompt_tool_calls_bucket))",
    "p99_tool_calls_per_prompt": "histogram_quantile(0.99, sum by (le) (loopscope_prompt_tool_calls_bucket))",
    "recovery_rate": 'sum(loopscope_tool_error_classes_total{loopscope_error_class="recovered"}) / sum(loopscope_tool_errors_total)',
    "replay_rate": "sum(loopscope_tool_replays_total) / sum(loopscope_tool_calls_total)",
    "tool_calls": "sum(loopscope_tool_calls_total)",
    "errors": "sum(loopscope_tool_errors_total)",
    "replays": "sum(loopscope_tool_replays_total)",
    "recovered_errors": 'sum(loopscope_tool_error_classes_total{loopscope_error_class="recovered"})',
    "open_prompts": "sum(loopscope_prompt_active)",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 5) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - 127.0.0.1 only
        return json.loads(r.read())


class Prom:
    def __init__(self, base: str) -> None:
        self.base = base

    def query(self, expr: str) -> list[dict[str, Any]]:
        body = get(f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        assert body["status"] == "success", body
        return body["data"]["result"]

    def scalar(self, expr: str) -> float | None:
        result = self.query(expr)
        assert len(result) <= 1, result
        return float(result[0]["value"][1]) if result else None


@pytest.fixture
def prometheus(tmp_path: Path):  # noqa: ANN201
    """A loop's metrics served on 127.0.0.1, and a Prometheus server scraping them every second."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()
    memory = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry), memory])
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    target = f"127.0.0.1:{server.server_port}"
    port = free_port()
    config = tmp_path / "prometheus.yml"
    shutil.copy(RULES, tmp_path / RULES.name)
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files:\n  - {RULES.name}\n"
        f"scrape_configs:\n  - job_name: loop\n    static_configs:\n      - targets: ['{target}']\n"
    )
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(  # noqa: S603
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=1h",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/-/ready", timeout=2):  # noqa: S310
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"prometheus did not start: {(tmp_path / 'prometheus.log').read_text()[-2000:]}")
                time.sleep(0.2)
        yield provider, memory, Prom(base)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
        server.shutdown()
        server.server_close()


def wait_for_scrape(prom: Prom, tool_calls: int) -> None:
    """Until Prometheus has scraped ``tool_calls`` calls (60 s at most)."""
    deadline = time.monotonic() + 60
    while prom.scalar(SINCE_START["tool_calls"]) != tool_calls:
        assert time.monotonic() < deadline, "prometheus never scraped the expected values"
        time.sleep(0.3)


def offline(paths: list[Path], db: Path) -> dict[str, Any]:
    loaded = runner.invoke(app, ["load", *map(str, paths), "--db", str(db)], catch_exceptions=False)
    assert loaded.exit_code == 0, loaded.output
    result = runner.invoke(app, ["metrics", "--db", str(db), "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_prometheus_scrapes_the_four_figures_of_loopscope_metrics(tmp_path: Path, prometheus: Any) -> None:
    from loopscope.collectors import Collector, JsonlSink

    provider, memory, prom = prometheus
    log = tmp_path / "gen.jsonl"
    # One collector, no restart (a process restart is what the demo test covers): counts exact.
    col = Collector(JsonlSink(log), meter_provider=provider, history=True, provider="test")
    # Two batches with scrapes in between, so that rate() over the run has two samples to use.
    open_loops = support.generated_loops(col, seed=7, conversations=30, id_reuse=True)
    wait_for_scrape(prom, support.live_figures(support.points(memory))["tool_calls"])
    time.sleep(1.5)
    open_loops += support.generated_loops(col, seed=8, conversations=30, id_reuse=True)
    col.close()
    silent = sum(1 for lp in open_loops if lp.tool_calls == 0)
    off = offline([log], tmp_path / "gen.duckdb")
    finished = offline([support.finished_records([log], tmp_path / "finished.jsonl")], tmp_path / "finished.duckdb")

    wait_for_scrape(prom, off["tool_calls"])  # the run is over: nothing changes now
    time.sleep(1.5)  # one more scrape of the final values

    got = {key: prom.scalar(expr) for key, expr in SINCE_START.items()}
    for key in ("tool_calls", "errors", "replays", "recovered_errors"):
        assert got[key] == off[key], key
    assert got["open_prompts"] == off["open_prompts"] + silent
    assert got["replay_rate"] == pytest.approx(off["replay_rate"])
    assert got["recovery_rate"] == pytest.approx(off["recovery_rate"])
    # Median and p99: Prometheus's histogram_quantile over finished prompts, in the documented
    # interval around the exact figures, and equal to the tests' reference estimator.
    bounds, counts = support.histogram(support.points(memory))
    per_prompt = list(support.calls_per_prompt([log]).values())
    for q, key in ((0.5, "median_tool_calls_per_prompt"), (0.99, "p99_tool_calls_per_prompt")):
        lo, hi = support.quantile_interval(q, per_prompt, bounds)
        assert lo <= finished[key] <= hi
        assert lo <= got[key] <= hi, (key, got[key], finished[key])
        assert got[key] == pytest.approx(support.histogram_quantile(q, bounds, counts))

    # Per agent, the same since-start figures against metrics --by agent.
    by_agent = json.loads(
        runner.invoke(app, ["metrics", "--db", str(tmp_path / "gen.duckdb"), "--format", "json", "--by", "agent"]).stdout
    )
    calls = {r["metric"]["gen_ai_agent_name"]: float(r["value"][1]) for r in prom.query("sum by (gen_ai_agent_name) (loopscope_tool_calls_total)")}
    rates = {
        r["metric"]["gen_ai_agent_name"]: float(r["value"][1])
        for r in prom.query(
            'sum by (gen_ai_agent_name) (loopscope_tool_error_classes_total{loopscope_error_class="recovered"})'
            " / sum by (gen_ai_agent_name) (loopscope_tool_errors_total)"
        )
    }
    assert {g["group"]: g["tool_calls"] for g in by_agent} == calls
    assert {g["group"]: g["recovery_rate"] for g in by_agent} == pytest.approx(rates)

    # The rules file loaded in a real server, no rule in error; every dashboard query runs.
    groups = get(f"{prom.base}/api/v1/rules")["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) == 15 and all(r.get("lastError", "") == "" and r["health"] in ("ok", "unknown") for r in rules)
    queries = rules_test.dashboard_queries()
    empty = [title for title, expr in queries if not prom.query(expr)]
    assert not empty and len(queries) >= 14
