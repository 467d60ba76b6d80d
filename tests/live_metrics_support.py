"""Shared by the live-metrics tests: generated agent loops, the metric reader's figures, the quantile bound.

``generated_loops`` drives a real :class:`Collector` through everything the spec's figures
depend on: errors recovered in a later step, errors followed only by a success in the same step
(not a recovery) or by a ``think`` call (never a recovery), errors followed by nothing, flagged
replays (failed ones too), the same call again under its id (a replay, seen live only with
``history=True``) and an id reused for a different call (a collision: a new call), calls recorded
with ``record_tool_call``, parallel calls on threads, budget exits, ``max_tokens``, exceptions
escaping the prompt (``error``) and prompts left open. The figures are never computed here: the
tests compare what the collector exported with what ``loopscope metrics`` says about the records
the same collector wrote.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from loopscope.collectors import Collector
from loopscope.collectors.metrics import (
    PROMPT_ACTIVE,
    PROMPT_EXITS,
    PROMPT_TOOL_CALLS,
    TOOL_CALLS,
    TOOL_ERROR_CLASSES,
    TOOL_ERRORS,
    TOOL_REPLAYS,
)

AGENTS = ("support", "billing", "triage")
TOOLS = ("search", "get_order", "refund", "send_email")


class _Flaky(Exception):
    pass


def generated_loops(col: Collector, seed: int, conversations: int = 60, id_reuse: bool = False) -> list[Any]:
    """Run ``conversations`` generated conversations through ``col``; returns the prompts left open."""
    rng = random.Random(seed)
    open_loops: list[Any] = []
    pool = ThreadPoolExecutor(3)
    try:
        for c in range(conversations):
            conv = f"gen-{seed}-{c:03d}"
            agent = AGENTS[c % len(AGENTS)]
            made: list[tuple[str, str, dict[str, Any]]] = []  # calls of the conversation: (id, tool, args)
            for p in range(rng.randint(1, 3)):
                _prompt(col, rng, pool, conv, f"p{p}", agent, made, open_loops, id_reuse)
    finally:
        pool.shutdown(wait=True)
    return open_loops


def _prompt(col, rng, pool, conv, prompt_id, agent, made, open_loops, id_reuse) -> None:  # noqa: ANN001, PLR0912
    budget = rng.choice([None, 4, 8, 30])
    loop = col.prompt(conv, prompt_id, agent=agent, max_tool_calls=budget, tags={"arm": rng.choice("ab")})
    ending = rng.choices(["end_turn", "max_tokens", "raise", "open", "stop_sequence"], [60, 8, 8, 10, 6])[0]
    steps = rng.choice([0, 1, 1, 2, 3, 4, 6, 9])
    counter = 0
    try:
        for step in range(steps):
            loop.model_response("tool_use", input_tokens=100, output_tokens=20)
            width = rng.choice([1, 1, 1, 2, 3])
            if loop.over_budget(width):
                loop.exit("budget_exceeded")
                return
            plans = []
            for _ in range(width):
                counter += 1
                plans.append(_plan(rng, conv, prompt_id, counter, made, id_reuse))
            if width > 1 and rng.random() < 0.6:
                list(pool.map(lambda plan: _run(loop, plan, step), plans))
            else:
                for plan in plans:
                    _run(loop, plan, step)
        if ending == "open":
            open_loops.append(loop)  # never exits: an open prompt
            return
        if ending == "raise":
            try:
                with loop:
                    raise RuntimeError("the model API went away")
            except RuntimeError:
                pass
            return
        loop.model_response(ending)
        loop.close()
    finally:
        if not loop.closed and ending != "open":
            loop.close()


def _plan(rng, conv, prompt_id, counter, made, id_reuse) -> dict[str, Any]:  # noqa: ANN001
    roll = rng.random()
    if made and roll < 0.08:  # the idempotency layer short-circuits a call already made
        tid, tool, args = rng.choice(made)
        return {"id": tid, "tool": tool, "args": args, "replayed": True, "fail": rng.random() < 0.3}
    if id_reuse and made and roll < 0.16:  # the same call dispatched again under its id: a replay
        tid, tool, args = rng.choice(made)
        return {"id": tid, "tool": tool, "args": dict(args), "fail": rng.random() < 0.3}
    if id_reuse and made and roll < 0.20:  # the id reused for another call: a collision, a new call
        tid, tool, _ = rng.choice(made)
        return {"id": tid, "tool": tool, "args": {"q": f"other-{counter}"}, "fail": rng.random() < 0.5}
    tool = "think" if roll > 0.88 else rng.choice(TOOLS)
    args = {"q": f"{conv}/{prompt_id}/{counter % 4}", "n": counter % 3}
    tid = f"toolu_{conv}_{prompt_id}_{counter}"
    made.append((tid, tool, args))
    how = rng.choices(["ok", "fail", "raise", "retry", "record"], [55, 25, 6, 6, 8])[0]
    return {"id": tid, "tool": tool, "args": args, "fail": how in ("fail", "raise"), "how": how}


def _run(loop, plan: dict[str, Any], step: int) -> None:  # noqa: ANN001
    how = plan.get("how", "ok")
    if how == "record":
        loop.record_tool_call(
            tool_call_id=plan["id"],
            tool_name=plan["tool"],
            arguments=plan["args"],
            step=step,
            is_error=plan["fail"],
            latency_ms=12.5,
            error_type="timeout" if plan["fail"] else None,
            error_message="timed out after 10 s; retry with a smaller page" if plan["fail"] else None,
        )
        return
    with loop.tool_call(plan["id"], plan["tool"], plan["args"], step=step, catch=True) as call:
        if plan.get("replayed"):
            call.replayed("cached result")
        if how == "retry":
            call.attempt_failed(_Flaky("503"))
        if how == "raise":
            raise _Flaky("upstream refused the order id")
        if plan["fail"]:
            call.fail("Error: order id must look like ORD-123", error_type="invalid_argument")


# -- what the metric reader holds --


def points(reader: Any) -> dict[str, list[Any]]:
    """Metric name -> its data points (cumulative), from an SDK ``InMemoryMetricReader``."""
    out: dict[str, list[Any]] = defaultdict(list)
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out[m.name].extend(m.data.data_points)
    return out


def _sum(pts: dict[str, list[Any]], name: str, agent: str | None, **where: str) -> int:
    total = 0
    for p in pts.get(name, ()):
        a = p.attributes
        if agent is not None and a.get("gen_ai.agent.name") != agent:
            continue
        if any(a.get(k) != v for k, v in where.items()):
            continue
        total += p.value
    return int(total)


def live_figures(pts: dict[str, list[Any]], agent: str | None = None) -> dict[str, Any]:
    """The spec's figures (counts and rates) as the exported instruments give them."""
    calls = _sum(pts, TOOL_CALLS, agent)
    errors = _sum(pts, TOOL_ERRORS, agent)
    replays = _sum(pts, TOOL_REPLAYS, agent)
    classes = {
        cls: _sum(pts, TOOL_ERROR_CLASSES, agent, **{"loopscope.error.class": cls})
        for cls in ("recovered", "aborted", "gave_up")
    }
    active = _sum(pts, PROMPT_ACTIVE, agent)
    finished = _sum(pts, PROMPT_EXITS, agent)
    return {
        "prompts": finished + active,
        "open_prompts": active,
        "tool_calls": calls,
        "errors": errors,
        "recovered_errors": classes["recovered"],
        "recovery_rate": classes["recovered"] / errors if errors else None,
        "replays": replays,
        "replay_rate": replays / calls if calls else None,
        "error_classes": {
            "recovered": classes["recovered"],
            "open": errors - sum(classes.values()),
            "aborted": classes["aborted"],
            "gave_up": classes["gave_up"],
        },
    }


def histogram(pts: dict[str, list[Any]], agent: str | None = None) -> tuple[list[float], list[int]]:
    """(upper bounds, counts per bucket) of ``loopscope.prompt.tool_calls``, summed over attribute sets."""
    bounds: list[float] | None = None
    counts: list[int] = []
    for p in pts.get(PROMPT_TOOL_CALLS, ()):
        if agent is not None and p.attributes.get("gen_ai.agent.name") != agent:
            continue
        if bounds is None:
            bounds, counts = list(p.explicit_bounds), [0] * len(p.bucket_counts)
        assert list(p.explicit_bounds) == bounds
        counts = [a + b for a, b in zip(counts, p.bucket_counts)]
    return (bounds or []), counts


def histogram_quantile(q: float, bounds: list[float], counts: list[int]) -> float:
    """Prometheus ``histogram_quantile`` over explicit buckets (the estimate a dashboard shows).

    Rank ``q * count``; the first bucket whose cumulative count reaches it; linear interpolation
    inside it from its lower bound (0 for the first bucket); a first bucket with upper bound <= 0
    returns that bound; the +Inf bucket returns the highest finite bound.
    """
    upper = [*bounds, math.inf]
    total = sum(counts)
    rank = q * total
    cum = 0
    for i, c in enumerate(counts):
        if cum + c >= rank and c:
            if upper[i] == math.inf:
                return upper[i - 1]
            if i == 0 and upper[0] <= 0:
                return upper[0]
            lo = 0.0 if i == 0 else upper[i - 1]
            return lo + (upper[i] - lo) * (rank - cum) / c
        cum += c
    return math.nan


def bucket_edges(value: float, bounds: list[float]) -> tuple[float, float]:
    """(lower, upper) bound of the bucket holding ``value``."""
    lo = 0.0
    for b in bounds:
        if value <= b:
            return (lo if b > 0 else b), b
        lo = b
    return bounds[-1], math.inf


def quantile_interval(q: float, values: list[int], bounds: list[float]) -> tuple[float, float]:
    """Where both the exact ``quantile_cont`` and the bucket estimate must lie (docs/collector.md).

    The estimate lies in the bucket of the order statistic at rank ceil(q*n); the exact figure
    between the order statistics at ranks floor(h)+1 and floor(h)+2 (h = q*(n-1)). So both lie
    between the lower edge of the bucket of the lowest of these and the upper edge of the bucket
    of the highest.
    """
    xs = sorted(values)
    n = len(xs)
    h = q * (n - 1)
    ranks = [max(1, math.ceil(q * n)), math.floor(h) + 1, min(n, math.floor(h) + 2)]
    lo_v, hi_v = xs[min(ranks) - 1], xs[max(ranks) - 1]
    return bucket_edges(lo_v, bounds)[0], bucket_edges(hi_v, bounds)[1]


def calls_per_prompt(paths: list[Path], finished_only: bool = True) -> dict[tuple[str, str], int]:
    """Counted from the JSONL files, independently of loopscope: tool_call records per prompt."""
    n: Counter[tuple[str, str]] = Counter()
    exited: set[tuple[str, str]] = set()
    for path in paths:
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            key = (rec["conversation_id"], rec["prompt_id"])
            if rec["kind"] == "tool_call":
                n[key] += 1
            else:
                exited.add(key)
                n[key] += 0
    return {k: v for k, v in n.items() if k in exited or not finished_only}


def finished_records(paths: list[Path], out: Path) -> Path:
    """The records of prompts that have a ``loop_exit`` (what the live histogram covers), in one file."""
    exited = set(calls_per_prompt(paths))
    lines = [
        line
        for path in paths
        for line in path.read_text().splitlines()
        if (json.loads(line)["conversation_id"], json.loads(line)["prompt_id"]) in exited
    ]
    out.write_text("\n".join(lines) + "\n")
    return out


def id_reuse_replays(paths: list[Path]) -> tuple[int, int]:
    """(replays, failed replays) that are repeats of the same call under its id without ``replayed: true``.

    Counted from the files (order: ts, then position), independently of loopscope: what a
    collector sees live only with ``history=True``, and only within its own process.
    """
    recs = []
    for path in paths:
        for i, line in enumerate(path.read_text().splitlines()):
            rec = json.loads(line)
            if rec["kind"] == "tool_call":
                recs.append((rec["ts"], str(path), i, rec))
    recs.sort(key=lambda r: (r[0], r[1], r[2]))
    seen: set[tuple[Any, ...]] = set()
    n = failed = 0
    for *_, rec in recs:
        key = (rec["conversation_id"], rec["tool_call_id"], rec["tool_name"], rec["args_fingerprint"])
        if key in seen and not rec["replayed"]:
            n += 1
            failed += bool(rec["is_error"])
        seen.add(key)
    return n, failed
