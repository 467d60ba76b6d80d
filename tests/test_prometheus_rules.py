"""The Prometheus rules and the Grafana dashboard in docs/: promtool checks and unit-tests them.

- ``promtool check rules`` on docs/prometheus/loopscope-rules.yml;
- ``promtool test rules`` on docs/prometheus/loopscope-rules.test.yml: each alert fires for a
  sustained move of its metric (after an hour) and stays quiet on a 15-minute spike;
- every query of docs/grafana/loopscope-dashboard.json parses as PromQL (promtool, each query
  as a recording rule) and uses only metric names the collector exports, read from the real
  exporter's output (opentelemetry-exporter-prometheus) after a loop that uses every instrument.

Skipped, with the reason printed, only where promtool is not installed (``apt-get install
prometheus``; .ci/run installs it).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RULES = REPO / "docs" / "prometheus" / "loopscope-rules.yml"
RULES_TEST = REPO / "docs" / "prometheus" / "loopscope-rules.test.yml"
DASHBOARD = REPO / "docs" / "grafana" / "loopscope-dashboard.json"


def needs_binary(name: str, unchecked: str) -> tuple[str | None, pytest.MarkDecorator]:
    """``name``'s path on PATH, and a mark skipping a test where it is not installed.

    The reason is also warned, so that it is printed in the warnings summary, not only in -rs.
    tests/test_live_metrics_prometheus.py uses it for the ``prometheus`` binary.
    """
    path = shutil.which(name)
    reason = f"{name} not installed (apt-get install prometheus): {unchecked}"
    if path is None:
        warnings.warn(reason, stacklevel=2)
    return path, pytest.mark.skipif(path is None, reason=reason)


PROMTOOL, needs_promtool = needs_binary("promtool", "Prometheus rules and dashboard queries not checked")

# A metric name in PromQL (ours are always followed by a selector or a range), a label name in a
# grouping or a matcher.
METRIC = re.compile(r"\b((?:loopscope|gen_ai)_[a-z0-9_]+)\b(?=\s*[{\[])")
GROUPING = re.compile(r"\bby \(([^)]*)\)")
MATCHER = re.compile(r"[{,]\s*([a-z_][a-z0-9_]*)\s*(?:=~|!=|!~|=)\s*\"")
# The values the dashboard's variables take when the queries are checked.
VARIABLES = {"$agent": ".*", "$window": "30m"}


def promtool(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=timeout, check=False)


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL with the variables substituted) of every target of every panel."""
    dash = json.loads(DASHBOARD.read_text())
    out = []
    for panel in dash["panels"]:
        for target in panel.get("targets", ()):
            expr = target["expr"]
            for var, value in VARIABLES.items():
                expr = expr.replace(var, value)
            out.append((panel["title"], expr))
    return out


def exported_names() -> tuple[set[str], set[str]]:
    """Metric and label names in the exporter's text output after a loop that touched every instrument."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.sdk.metrics import MeterProvider
    from prometheus_client import CollectorRegistry, generate_latest

    from loopscope.collectors import Collector, MemorySink

    registry = CollectorRegistry()
    col = Collector(MemorySink(), meter_provider=MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)]))
    with col.prompt("c", "p", agent="a") as loop:
        loop.model_response("tool_use")
        with loop.tool_call("t1", "search", catch=True) as call:
            call.fail("no such order")
        with loop.tool_call("t2", "search") as call:
            call.replayed()
        loop.model_response("tool_use")
        with loop.tool_call("t3", "search"):
            pass
        loop.model_response("end_turn")
    text = generate_latest(registry).decode()
    samples = [line for line in text.splitlines() if line and not line.startswith("#")]
    names = {line.split("{", 1)[0].split(" ", 1)[0] for line in samples}
    labels = {m for line in samples for m in re.findall(r'[{,]([a-z_][a-z0-9_]*)="', line)}
    return names, labels


@needs_promtool
def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 15 rules found" in result.stdout


@needs_promtool
@pytest.mark.slow  # promtool evaluates 7 days of 5-minute samples: about 17 s of CPU
def test_promtool_unit_tests_fire_on_a_sustained_move_and_not_on_a_spike() -> None:
    result = promtool("test", "rules", str(RULES_TEST))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
    # The unit tests cover the four alerts, each firing for its *_moved agent only.
    text = RULES_TEST.read_text()
    for alert in re.findall(r"- alert: (\w+)", RULES.read_text()):
        assert f"alertname: {alert}" in text
    assert text.count("exp_alerts: []") == 8 and text.count("gen_ai_agent_name: ") == 12


@needs_promtool
def test_dashboard_queries_parse_as_promql(tmp_path: Path) -> None:
    queries = dashboard_queries()
    assert len(queries) >= 14
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"dashboard:query_{i}", "expr": q} for i, (_, q) in enumerate(queries)]}]}
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(json.dumps(rules))  # JSON is YAML
    result = promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    # A broken query is caught the same way.
    rules["groups"][0]["rules"].append({"record": "dashboard:broken", "expr": "sum by (le (rate(x[5m]))"})
    path.write_text(json.dumps(rules))
    assert promtool("check", "rules", str(path)).returncode != 0


def test_dashboard_and_rules_use_only_exported_metric_names() -> None:
    exported, labels = exported_names()
    assert {
        "loopscope_prompt_tool_calls_bucket",
        "loopscope_tool_calls_total",
        "loopscope_tool_errors_total",
        "loopscope_tool_replays_total",
        "loopscope_tool_error_classes_total",
        "loopscope_prompt_exits_total",
        "loopscope_prompt_active",
        "gen_ai_execute_tool_duration_seconds_bucket",
    } <= exported
    used = {name for _, q in dashboard_queries() for name in METRIC.findall(q)}
    used |= set(METRIC.findall(RULES.read_text()))
    assert used and used <= exported, used - exported
    texts = [q for _, q in dashboard_queries()] + [RULES.read_text()]
    used_labels = {name.strip() for t in texts for group in GROUPING.findall(t) for name in group.split(",")}
    used_labels |= {name for t in texts for name in MATCHER.findall(t)}
    assert {"gen_ai_agent_name", "gen_ai_tool_name", "loopscope_error_class", "loopscope_agent_exit_reason", "le"} <= used_labels
    assert used_labels <= labels | {"le"}, used_labels - labels
    # The four figures' names and the per-tool panels are all there.
    titles = [p["title"] for p in json.loads(DASHBOARD.read_text())["panels"]]
    for needle in ("1. Median", "2. p99", "3. Tool-error-to-model-recovery", "4. Replayed", "Error rate per tool", "Tool latency p95"):
        assert any(t.startswith(needle) for t in titles), needle
