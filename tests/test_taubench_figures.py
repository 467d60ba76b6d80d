"""Figures on real tau-bench trajectories (tests/fixtures/taubench/), counted twice.

tau-bench's published gpt-4o airline trajectories reuse a ``tool_call_id`` for a new, different
call (an id collision: a new call, reported as ``reused_tool_call_id``), sometimes issue the same
call again under its id (a replay), and mark errors only in the result text (``Error: ...``).
The excerpt is loaded through the CLI as a user would (``load FILE --error-when prefix``, no
``--messages-key``: the reader finds ``[].traj`` by itself) and every figure is compared with a
count made here straight from the raw JSON, with no loopscope code, by a plain reading of the spec:

- each ``traj`` is one conversation; a prompt starts at a ``user`` message, and the
  ``assistant`` messages after it are its steps (0, 1, ...); a user message nobody answered
  (the simulated user's last word) runs no loop. A prompt ends normally when its last
  assistant message has no ``tool_calls``; otherwise it is open (no loop exit);
- a tool call is an entry of an assistant message's ``tool_calls``; its result is the next
  ``tool`` message with that ``tool_call_id``; an error when the result text starts with ``Error:``;
- the same call again (same id, function name and canonical arguments) earlier in the
  trajectory makes it a replay; the same id on another call is an id collision;
- an error (not a replay) is recovered when a later step of its prompt has a successful call of
  a tool other than ``think`` and the prompt ended normally; an unrecovered error is resolved
  later when a later prompt has a successful, non-replay call of the same tool.

The literal numbers are asserted too, so a change in either count shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.cli.app import app

EXCERPT = Path(__file__).resolve().parent / "fixtures" / "taubench" / "gpt-4o-airline.json"
runner = CliRunner()


def count_by_hand(path: Path, scratchpad: tuple[str, ...] = ("think",)) -> dict[str, int]:
    """The figures of a tau-bench trajectories file, from its raw JSON (see the module docstring)."""
    totals = dict(
        prompts=0, open_prompts=0, tool_calls=0, errors=0, replays=0, collisions=0, recovered=0, resolved_later=0
    )
    for trajectory in json.loads(path.read_text()):
        msgs = trajectory["traj"]
        prompts: list[list[list[dict[str, Any]]]] = []  # prompt -> steps -> calls
        seen: dict[str, list[tuple[str, str]]] = {}  # id -> the calls made under it so far
        for i, m in enumerate(msgs):
            if m["role"] == "user":
                if not prompts or prompts[-1]:
                    prompts.append([])
            elif m["role"] == "assistant":
                step = []
                for c in m.get("tool_calls") or []:
                    name = c["function"]["name"]
                    call = (name, json.dumps(json.loads(c["function"]["arguments"]), sort_keys=True))
                    result = next(r for r in msgs[i + 1:] if r["role"] == "tool" and r["tool_call_id"] == c["id"])
                    replay = call in seen.get(c["id"], [])
                    step.append(
                        {
                            "tool": name,
                            "error": (result["content"] or "").startswith("Error:"),
                            "replay": replay,
                            "collision": c["id"] in seen and not replay,
                        }
                    )
                    seen.setdefault(c["id"], []).append(call)
                prompts[-1].append(step)
        prompts = [p for p in prompts if p]
        for pi, steps in enumerate(prompts):
            normal = not steps[-1]  # the last response called no tool
            totals["prompts"] += 1
            totals["open_prompts"] += not normal
            for s, step in enumerate(steps):
                for c in step:
                    totals["tool_calls"] += 1
                    totals["replays"] += c["replay"]
                    totals["collisions"] += c["collision"]
                    if not c["error"] or c["replay"]:
                        continue
                    totals["errors"] += 1
                    later_in_prompt = [d for st in steps[s + 1:] for d in st]
                    later_prompts = [d for p in prompts[pi + 1:] for st in p for d in st]
                    if normal and any(not d["error"] and d["tool"] not in scratchpad for d in later_in_prompt):
                        totals["recovered"] += 1
                    elif any(d["tool"] == c["tool"] and not d["error"] and not d["replay"] for d in later_prompts):
                        totals["resolved_later"] += 1
    return totals


# counted by hand above, and checked once against the conversations' text
EXPECTED = dict(
    prompts=46, open_prompts=2, tool_calls=82, errors=16, replays=2, collisions=9, recovered=4, resolved_later=7
)


def test_independent_count_of_the_excerpt() -> None:
    assert count_by_hand(EXCERPT) == EXPECTED
    # the excerpt exercises the scratchpad rule: one error is followed in its prompt only by a
    # successful think call, which would make it "recovered" if think counted
    assert count_by_hand(EXCERPT, scratchpad=())["recovered"] == EXPECTED["recovered"] + 1


def test_figures_through_the_cli_match_the_independent_count(tmp_path: Path) -> None:
    by_hand = count_by_hand(EXCERPT)
    db = str(tmp_path / "t.duckdb")
    load = runner.invoke(app, ["load", str(EXCERPT), "--error-when", "prefix", "--db", db, "--format", "json"])
    assert load.exit_code == 0, load.output
    summary = json.loads(load.stdout)
    assert (summary["tool_calls"], summary["quarantined"]) == (by_hand["tool_calls"], 0)

    metrics = runner.invoke(app, ["metrics", "--db", db, "--format", "json"])
    assert metrics.exit_code == 0, metrics.output
    m = json.loads(metrics.stdout)
    assert {
        k: m[k]
        for k in ("prompts", "open_prompts", "tool_calls", "errors", "replays", "recovered_errors", "resolved_later_errors")
    } == {
        "prompts": by_hand["prompts"],
        "open_prompts": by_hand["open_prompts"],
        "tool_calls": by_hand["tool_calls"],
        "errors": by_hand["errors"],
        "replays": by_hand["replays"],
        "recovered_errors": by_hand["recovered"],
        "resolved_later_errors": by_hand["resolved_later"],
    }
    assert (m["tool_calls"], m["errors"], m["replays"], m["recovered_errors"], m["resolved_later_errors"]) == (82, 16, 2, 4, 7)
    assert m["recovery_rate"] == by_hand["recovered"] / by_hand["errors"] == 0.25
    assert m["conversation_recovery_rate"] == (by_hand["recovered"] + by_hand["resolved_later"]) / by_hand["errors"]
    assert m["replay_rate"] == by_hand["replays"] / by_hand["tool_calls"]
    assert sum(m["error_classes"].values()) == by_hand["errors"]

    audit = runner.invoke(app, ["audit", "--db", db, "--format", "json"])
    assert audit.exit_code == 0, audit.output
    report = json.loads(audit.stdout)
    assert {k: v for k, v in report["overall"].items() if k != "conversations"} == m
    assert report["overall"]["conversations"] == 5
    kinds = {row["kind"]: row["violations"] for row in report["protocol_violations"]["by_kind"]}
    assert kinds == {"reused_tool_call_id": by_hand["collisions"]} == {"reused_tool_call_id": 9}
    # the two same-call repeats are replays (each ran: its own result), never collisions
    assert report["replays"]["total"] == by_hand["replays"]
    assert sorted(r["tool_name"] for r in report["replays"]["items"]) == ["search_direct_flight", "think"]
