"""The collector's live OpenTelemetry metrics equal ``loopscope metrics`` on the records of the same run.

Each run records through a real SDK ``MeterProvider`` with an ``InMemoryMetricReader`` while the
collector writes its JSONL records; the records are then loaded with ``loopscope load`` and read
with ``loopscope metrics --format json`` (overall and ``--by agent``). Counts must be equal; the
median and p99 read from the histogram's buckets must lie in the interval docs/collector.md
gives, computed from the per-prompt counts this test reads from the files itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from typer.testing import CliRunner

from loopscope.cli.app import app
from loopscope.cli.demo.run import LOG_FILES, run_demo
from loopscope.cli.demo.scenarios import CONVERSATIONS
from loopscope.collectors import Collector, JsonlSink, MemorySink
from loopscope.collectors.metrics import OTHER, TOOL_CALLS_BUCKETS

_spec = importlib.util.spec_from_file_location("loopscope_live_metrics_support", Path(__file__).parent / "live_metrics_support.py")
support = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = support
_spec.loader.exec_module(support)
AGENTS, calls_per_prompt, finished_records = support.AGENTS, support.calls_per_prompt, support.finished_records
generated_loops, histogram, histogram_quantile = support.generated_loops, support.histogram, support.histogram_quantile
live_figures, points, quantile_interval = support.live_figures, support.points, support.quantile_interval

runner = CliRunner()
COUNTS = ("prompts", "open_prompts", "tool_calls", "errors", "recovered_errors", "replays", "error_classes")
RATES = ("recovery_rate", "replay_rate")


def cli_json(*args: str) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def offline(paths: list[Path], db: Path, by_agent: bool = False) -> Any:
    loaded = runner.invoke(app, ["load", *map(str, paths), "--db", str(db)], catch_exceptions=False)
    assert loaded.exit_code == 0, loaded.output
    return cli_json("metrics", "--db", str(db), "--format", "json", *(["--by", "agent"] if by_agent else []))


def assert_same_figures(live: dict[str, Any], off: dict[str, Any]) -> None:
    for key in COUNTS:
        assert live[key] == off[key], key
    for key in RATES:
        assert live[key] == pytest.approx(off[key]), key


def assert_quantiles(pts: dict[str, list[Any]], paths: list[Path], tmp: Path, agent: str | None = None) -> list[float]:
    """Median and p99 from the buckets vs the exact figures over the same (finished) prompts."""
    per_prompt = calls_per_prompt(paths)
    finished_file = finished_records(paths, tmp / f"finished-{agent}.jsonl")
    off = offline([finished_file], tmp / f"finished-{agent}.duckdb", by_agent=agent is not None)
    if agent is not None:
        off = next(g for g in off if g["group"] == agent)
        agents = {json.loads(line)["conversation_id"]: json.loads(line)["agent"] for p in paths for line in p.read_text().splitlines()}
        per_prompt = {k: v for k, v in per_prompt.items() if agents[k[0]] == agent}
    bounds, counts = histogram(pts, agent)
    assert bounds == list(TOOL_CALLS_BUCKETS)
    assert sum(counts) == len(per_prompt) == off["prompts"]
    gaps = []
    for q, key in ((0.5, "median_tool_calls_per_prompt"), (0.99, "p99_tool_calls_per_prompt")):
        estimate = histogram_quantile(q, bounds, counts)
        lo, hi = quantile_interval(q, list(per_prompt.values()), bounds)
        assert lo <= off[key] <= hi, (key, off[key], lo, hi)
        assert lo <= estimate <= hi, (key, estimate, lo, hi)
        gaps.append(abs(estimate - off[key]))
    return gaps


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


def resumed_prompts(agent: str | None = None) -> int:
    """Demo prompts whose process died mid-prompt and a restarted process finished (scenarios.py)."""
    return sum(
        1 for c in CONVERSATIONS for p in c.prompts if p.fate == "restart" and agent in (None, c.agent)
    )


def test_demo_agent_live_metrics_equal_the_offline_figures(tmp_path: Path, reader: InMemoryMetricReader) -> None:
    provider = MeterProvider(metric_readers=[reader])
    paths = run_demo(tmp_path / "logs", meter_provider=provider)
    pts = points(reader)
    off = offline(paths, tmp_path / "demo.duckdb")
    groups = offline(paths, tmp_path / "demo.duckdb", by_agent=True)
    for agent, off_figures in [(None, off), *((g["group"], g) for g in groups)]:
        live = live_figures(pts, agent)
        # A prompt resumed under its id by a restarted process exited there, while the dead
        # process never ended its own: in flight for that process's gauge (docs/collector.md).
        # The demo's processes share one MeterProvider, so the dead one's gauge stays.
        resumed = resumed_prompts(agent)
        assert live["open_prompts"] == off_figures["open_prompts"] + resumed
        assert live["prompts"] == off_figures["prompts"] + resumed
        live["open_prompts"], live["prompts"] = off_figures["open_prompts"], off_figures["prompts"]
        # The call the restarted process ran again under its id (its result was not saved in
        # the idempotency store) is a replay offline; live, the new process never saw the id.
        agent_paths = [p for p in paths if agent is None or p.name == LOG_FILES[agent]]
        reused, reused_failed = support.id_reuse_replays(agent_paths)
        assert reused_failed == 0
        assert live["replays"] + reused == off_figures["replays"]
        live["replays"] = off_figures["replays"]
        live["replay_rate"] = live["replays"] / live["tool_calls"] if live["tool_calls"] else None
        assert_same_figures(live, off_figures)
    # The demo has what matters here (sample_logs/EXPECTED.md): an open prompt (a crash),
    # aborted and gave-up errors, recoveries, replays, resumed prompts.
    assert off["open_prompts"] == 1 and off["replays"] == 3 and off["error_classes"]["aborted"] == 2
    assert resumed_prompts() == 2
    assert support.id_reuse_replays(paths) == (1, 0)
    assert_quantiles(pts, paths, tmp_path)


@pytest.mark.parametrize("history", [False, True], ids=["plain", "history"])
def test_generated_loops_live_metrics_equal_the_offline_figures(
    tmp_path: Path, reader: InMemoryMetricReader, history: bool
) -> None:
    provider = MeterProvider(metric_readers=[reader])
    log = tmp_path / "gen.jsonl"
    # history=True computes fingerprints on the host thread: the same call again under its id
    # is then a replay live too (docs/collector.md); without it the run reuses no id.
    col = Collector(JsonlSink(log), meter_provider=provider, history=history, provider="test")
    open_loops = generated_loops(col, seed=21 + history, conversations=90, id_reuse=history)
    col.close()
    assert col.stats.dropped == 0 and col.stats.internal_errors == 0
    pts = points(reader)
    off = offline([log], tmp_path / "gen.duckdb")
    # An open prompt that made no tool call wrote no record: offline it does not exist, live
    # it is in flight (docs/collector.md).
    silent = {agent: sum(1 for lp in open_loops if lp.tool_calls == 0 and lp.agent == agent) for agent in AGENTS}
    live = live_figures(pts)
    assert live["open_prompts"] == off["open_prompts"] + sum(silent.values())
    assert live["prompts"] == off["prompts"] + sum(silent.values())
    live["open_prompts"], live["prompts"] = off["open_prompts"], off["prompts"]
    assert_same_figures(live, off)
    # The run has every case the definitions distinguish.
    assert off["open_prompts"] == len(open_loops) - sum(silent.values()) > 0
    classes = off["error_classes"]
    assert min(classes.values()) > 0, classes
    assert off["replays"] > 0
    exits = {p.attributes["loopscope.agent.exit_reason"] for p in pts["loopscope.prompt.exits"]}
    assert {"end_turn", "budget_exceeded", "max_tokens", "error", "stop_sequence"} <= exits
    for group in offline([log], tmp_path / "gen.duckdb", by_agent=True):
        live = live_figures(pts, group["group"])
        assert live["open_prompts"] == group["open_prompts"] + silent[group["group"]]
        live["open_prompts"], live["prompts"] = group["open_prompts"], group["prompts"]
        assert_same_figures(live, group)
    assert {g["group"] for g in offline([log], tmp_path / "gen.duckdb", by_agent=True)} == set(AGENTS)
    median_gap, _ = assert_quantiles(pts, [log], tmp_path)
    assert median_gap < 1.0  # about 165 prompts, counts under 16: each count has its own bucket
    for agent in AGENTS:
        assert_quantiles(pts, [log], tmp_path, agent)


def test_id_reuse_without_history_counts_as_a_new_call_live(tmp_path: Path, reader: InMemoryMetricReader) -> None:
    """The documented limit: without history=True only flagged replays are replays live."""
    col = Collector(MemorySink(), meter_provider=MeterProvider(metric_readers=[reader]))
    with col.prompt("c", "p", agent="a") as loop:
        for _ in range(2):
            with loop.tool_call("t1", "search", {"q": 1}):
                pass
        loop.model_response("end_turn")
    assert live_figures(points(reader))["replays"] == 0
    reader2 = InMemoryMetricReader()
    col = Collector(MemorySink(), meter_provider=MeterProvider(metric_readers=[reader2]), history=True)
    with col.prompt("c", "p", agent="a") as loop:
        for args in ({"q": 1}, {"q": 1}, {"q": 2}):
            with loop.tool_call("t1", "search", args):
                pass
        loop.model_response("end_turn")
    assert live_figures(points(reader2))["replays"] == 1  # the collision ({"q": 2}) is a new call


def test_recovery_rule_scratchpad_same_step_and_replays(reader: InMemoryMetricReader) -> None:
    col = Collector(MemorySink(), meter_provider=MeterProvider(metric_readers=[reader]), scratchpad_tools=["think", "notes"])
    with col.prompt("c", "p1") as loop:
        loop.model_response("tool_use")
        with loop.tool_call("a", "search", catch=True) as call:
            call.fail("no such order")  # step 0: followed by a success in the same step only
        with loop.tool_call("b", "search"):
            pass
        loop.model_response("tool_use")
        with loop.tool_call("c", "notes"):  # a scratchpad tool: never a recovery
            pass
        with loop.tool_call("d", "refund", catch=True) as call:
            call.replayed()
            call.fail("already refunded")  # a failed replay: not an error
        loop.model_response("end_turn")
    with col.prompt("c", "p2") as loop:
        loop.model_response("tool_use")
        with loop.tool_call("e", "search", catch=True) as call:
            call.fail("bad id")
        loop.model_response("tool_use")
        with loop.tool_call("f", "search"):  # a later step: recovered
            pass
        loop.model_response("end_turn")
    live = live_figures(points(reader))
    assert live["errors"] == 2 and live["replays"] == 1 and live["tool_calls"] == 6
    assert live["error_classes"] == {"recovered": 1, "open": 0, "aborted": 0, "gave_up": 1}


def test_offline_agrees_on_a_custom_scratchpad_list(tmp_path: Path, reader: InMemoryMetricReader) -> None:
    log = tmp_path / "s.jsonl"
    col = Collector(JsonlSink(log), meter_provider=MeterProvider(metric_readers=[reader]), scratchpad_tools=["notes"])
    with col.prompt("c", "p") as loop:
        loop.model_response("tool_use")
        with loop.tool_call("a", "search", catch=True) as call:
            call.fail("no such order")
        loop.model_response("tool_use")
        with loop.tool_call("b", "notes"):
            pass
        with loop.tool_call("c", "think"):  # not a scratchpad tool in this collector: it recovers
            pass
        loop.model_response("end_turn")
    col.close()
    db = tmp_path / "s.duckdb"
    loaded = runner.invoke(app, ["load", str(log), "--db", str(db), "--scratchpad-tool", "notes"], catch_exceptions=False)
    assert loaded.exit_code == 0, loaded.output
    off = cli_json("metrics", "--db", str(db), "--format", "json")
    live = live_figures(points(reader))
    assert off["recovered_errors"] == live["recovered_errors"] == 1
    assert_same_figures(live, off)


def test_no_provider_builds_nothing(reader: InMemoryMetricReader) -> None:
    # No SDK anywhere (the global provider is the API's placeholder unless a test of this process
    # set one), a no-op provider, or metrics=False: the prompt carries no metrics state at all.
    from opentelemetry import metrics as metrics_api

    no_global = type(metrics_api.get_meter_provider()).__name__ == "_ProxyMeterProvider"
    for col in (
        *((Collector(MemorySink()),) if no_global else ()),
        Collector(MemorySink(), meter_provider=NoOpMeterProvider()),
        Collector(MemorySink(), meter_provider=MeterProvider(metric_readers=[reader]), metrics=False),
    ):
        with col.prompt("c", "p") as loop:
            assert loop._m is None
            with loop.tool_call("a", "search"):
                pass
    assert points(reader) == {}


def test_attribute_values_are_capped_and_tags_are_opt_in(reader: InMemoryMetricReader) -> None:
    col = Collector(
        MemorySink(), meter_provider=MeterProvider(metric_readers=[reader]), max_metric_values=3, metric_tags=["arm"]
    )
    with col.prompt("c", "p", agent="a", tags={"arm": "b", "user": "u-123"}) as loop:
        for i in range(5):  # the model invents tool names: five distinct, three kept
            with loop.tool_call(f"t{i}", f"tool_{i}"):
                pass
        loop.model_response("end_turn")
    calls = points(reader)["loopscope.tool.calls"]
    names = sorted(p.attributes["gen_ai.tool.name"] for p in calls)
    assert names == [OTHER, "tool_0", "tool_1", "tool_2"]
    assert sum(p.value for p in calls if p.attributes["gen_ai.tool.name"] == OTHER) == 2
    assert col.stats.metric_values_capped == 2
    assert all(p.attributes["loopscope.tag.arm"] == "b" and "loopscope.tag.user" not in p.attributes for p in calls)

    plain = InMemoryMetricReader()
    col = Collector(MemorySink(), meter_provider=MeterProvider(metric_readers=[plain]))
    with col.prompt("c", "p", tags={"arm": "b"}) as loop:
        with loop.tool_call("t", "search"):
            pass
    assert not any(k.startswith("loopscope.tag.") for p in points(plain)["loopscope.tool.calls"] for k in p.attributes)


class _Broken:
    """A MeterProvider whose histograms raise (each tool call and each exit records one)."""

    def get_meter(self, *a: Any, **k: Any) -> Any:
        return self

    def __getattr__(self, name: str) -> Any:
        if name.startswith("create_"):
            return lambda *a, **k: self
        raise AttributeError(name)

    def add(self, *a: Any, **k: Any) -> None:
        pass

    def record(self, *a: Any, **k: Any) -> None:
        raise RuntimeError("exporter exploded")


def test_a_broken_meter_never_reaches_the_loop() -> None:
    sink = MemorySink()
    col = Collector(sink, meter_provider=_Broken(), strict=False)
    with col.prompt("c", "p") as loop:
        with loop.tool_call("a", "search", catch=True) as call:
            call.fail("x")
        with loop.tool_call("b", "search"):
            pass
        loop.model_response("end_turn")
    assert [r["kind"] for r in sink.records] == ["tool_call", "tool_call", "loop_exit"]
    assert col.stats.internal_errors == 3  # two calls and the exit, each swallowed


def test_parallel_threads_count_every_call(reader: InMemoryMetricReader) -> None:
    col = Collector(MemorySink(), meter_provider=MeterProvider(metric_readers=[reader]))
    with col.prompt("c", "p") as loop:
        loop.model_response("tool_use")

        def work(k: int) -> None:
            for i in range(200):
                with loop.tool_call(f"{k}-{i}", "search", catch=True) as call:
                    if i % 10 == 0:
                        call.fail("busy")

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        loop.model_response("tool_use")
        with loop.tool_call("last", "search"):
            pass
        loop.model_response("end_turn")
    live = live_figures(points(reader))
    assert live["tool_calls"] == 801 and live["errors"] == 80
    assert live["error_classes"]["recovered"] == 80


def test_a_global_provider_set_after_the_collector_is_picked_up(tmp_path: Path) -> None:
    """As for spans: the host may set its MeterProvider after creating the collector (own process:
    the global provider can be set once)."""
    import subprocess

    script = """
import json
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from loopscope.collectors import Collector, MemorySink

col = Collector(MemorySink())
def one(pid):
    with col.prompt("c", pid) as loop:
        with loop.tool_call("t-" + pid, "search"):
            pass
        loop.model_response("end_turn")
        return loop._m is not None
before = one("p1")
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
after = one("p2")
calls = [p.value for rm in reader.get_metrics_data().resource_metrics for sm in rm.scope_metrics
         for m in sm.metrics if m.name == "loopscope.tool.calls" for p in m.data.data_points]
print(json.dumps([before, after, calls]))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env, check=True)
    assert json.loads(out.stdout) == [False, True, [1]]


def test_the_readme_example_exports_what_loopscope_metrics_reads(tmp_path: Path) -> None:
    """docs/examples/live_metrics.py (the README's section) as a user runs it: its /metrics page
    against ``loopscope metrics`` on the records it wrote."""
    import subprocess

    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "live_metrics.py"
    log = tmp_path / "live.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, str(example), "--port", "0", "--log", str(log)],
        capture_output=True, text=True, timeout=120, env=env, check=True, cwd=tmp_path,
    ).stdout
    page: dict[str, float] = {}
    for line in out.splitlines():
        name, value = line.split("{", 1)[0], float(line.rsplit(" ", 1)[1])
        page[name] = page.get(name, 0) + value
    off = offline([log], tmp_path / "live.duckdb")
    assert page["loopscope_tool_calls_total"] == off["tool_calls"] == 6
    assert page["loopscope_tool_errors_total"] == off["errors"] == 2
    assert page["loopscope_tool_replays_total"] == off["replays"] == 1
    assert page["loopscope_prompt_active"] == off["open_prompts"] == 1
    assert page["loopscope_prompt_tool_calls_count"] + page["loopscope_prompt_active"] == off["prompts"]
    recovered = [line for line in out.splitlines() if 'loopscope_error_class="recovered"' in line]
    assert [float(line.rsplit(" ", 1)[1]) for line in recovered] == [off["recovered_errors"]] == [1]
    # The README shows this output as it is.
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("<!-- SECTION:live-metrics -->") : readme.index("<!-- /SECTION:live-metrics -->")]
    shown = [line for line in section.splitlines() if line.startswith("loopscope_")]
    assert shown == out.splitlines()
    assert "python docs/examples/live_metrics.py" in section


def test_an_exponential_histogram_view_gives_quantiles_within_one_bucket() -> None:
    """An OTLP host may choose the SDK's exponential histogram for the per-prompt counts (a View;
    the Prometheus text format cannot carry it): 2,000 prompts of 0 to 400 calls, median and p99
    within one bucket's relative width (2^(2^-scale) - 1) of the exact figures."""
    import math
    import random

    from opentelemetry.sdk.metrics.view import ExponentialBucketHistogramAggregation, View

    reader = InMemoryMetricReader()
    view = View(instrument_name="loopscope.prompt.tool_calls", aggregation=ExponentialBucketHistogramAggregation())
    col = Collector(MemorySink(), meter_provider=MeterProvider(metric_readers=[reader], views=[view]))
    rng = random.Random(5)
    counts = []
    for i in range(2000):
        n = min(400, int(rng.lognormvariate(2.5, 1.0)))
        counts.append(n)
        with col.prompt("c", f"p{i}") as loop:
            for k in range(n):
                loop.record_tool_call(tool_call_id=f"{i}-{k}", tool_name="search")
            loop.model_response("end_turn")
    (point,) = points(reader)["loopscope.prompt.tool_calls"]
    base = 2 ** (2**-point.scale)
    xs = sorted(counts)
    for q in (0.5, 0.99):
        rank, cum = q * point.count, point.zero_count
        for i, c in enumerate(point.positive.bucket_counts):
            if cum + c >= rank:
                lo = base ** (point.positive.offset + i)
                estimate = lo + (lo * base - lo) * (rank - cum) / c
                break
            cum += c
        h = q * (len(xs) - 1)
        exact = xs[math.floor(h)] + (h - math.floor(h)) * (xs[min(math.floor(h) + 1, len(xs) - 1)] - xs[math.floor(h)])
        assert abs(estimate - exact) <= (base - 1) * exact, (q, estimate, exact, point.scale)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"scratchpad_tools": "think"},  # a string, not a list of names
        {"scratchpad_tools": ["think", 3]},
        {"metric_tags": "arm"},
        {"max_metric_values": 0},
        {"max_metric_values": True},
        {"meter_provider": object()},
    ],
)
def test_bad_metrics_configuration_is_refused_at_construction(kwargs: dict[str, Any]) -> None:
    from loopscope.collectors import CollectorConfigError

    with pytest.raises(CollectorConfigError):
        Collector(MemorySink(), **kwargs)
