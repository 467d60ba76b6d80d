"""Seed 000 at run time: the recovery block, the loop signal and result_fingerprint, in real loops.

The docs' Anthropic and OpenAI loops run as written against scripted clients; a blind model
(that repeats its failing call) is stopped by the ``on_loop="exit"`` policy, a model that reads
the block changes course. The loop signal and the offline queries (``analyses.loops``,
``incidents.retry_loops``) are run on the same random call sequences and must find the same loops.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import random
import tracemalloc
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.analyses import hints as analyses_hints
from loopscope.analyses import incidents, loops
from loopscope.analyses.selection import Selection
from loopscope.analyses.store import connect
from loopscope.cli.app import app
from loopscope.collectors import Collector, JsonlSink, MemorySink
from loopscope.collectors import hints as collector_hints
from loopscope.collectors.history import CYCLE, NO_PROGRESS, RETRY_LOOP

_spec = importlib.util.spec_from_file_location("loopscope_test_example_clients_runtime", Path(__file__).parent / "example_clients.py")
assert _spec and _spec.loader
clients = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(clients)
EX_A = clients.load("anthropic_loop", "loopscope_runtime_example_")
EX_O = clients.load("openai_loop", "loopscope_runtime_example_")


def a_tools(*calls: tuple[str, str, dict]) -> NS:
    blocks = [NS(type="tool_use", id=i, name=n, input=a) for i, n, a in calls]
    return NS(stop_reason="tool_use", content=blocks, usage=NS(input_tokens=10, output_tokens=5))


def context_blocks(request: dict) -> list[str]:
    """The [Error Recovery Context] text blocks of the last user message of an Anthropic request."""
    last = request["messages"][-1]["content"]
    return [b["text"] for b in last if isinstance(b, dict) and b.get("type") == "text"]


# ------------------------------------------------------------------ the catalog is one catalog


def test_triage_lint_and_collector_read_one_catalog() -> None:
    assert analyses_hints.HINTS is collector_hints.HINTS
    assert analyses_hints.suggestions_for is collector_hints.suggestions_for


# ------------------------------------------------------------------ the documented loops


def test_anthropic_loop_blind_model_is_stopped_by_policy_and_sees_the_block(tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(log), history=True)
    bad = {"city": "Paris", "date": "tomorrow"}
    # A blind model: it repeats the same call whatever it is told.
    client, create = clients.anthropic_client([lambda req, i=i: a_tools((f"toolu_{i}", "get_weather", bad)) for i in range(10)])
    with pytest.raises(EX_A.LoopDetectedError, match="retry loop: get_weather failed 3 times"):
        EX_A.run_agent_loop(client, col, "conv-blind", "Weather in Paris tomorrow?", [], prompt_id="p1")
    col.close()
    # Three failing calls, then the policy stopped the loop before a fourth model call.
    assert len(create.requests) == 3
    blocks = [context_blocks(r) for r in create.requests[1:]]
    assert [len(b) for b in blocks] == [1, 1]
    first, second = blocks[0][0], blocks[1][0]
    error = "Invalid date format 'tomorrow'. Use YYYY-MM-DD, e.g. 2026-11-23."
    assert first.startswith("[Error Recovery Context]\nOperation: get_weather(<arguments ")
    assert f"Error: {error}\nError type: ToolInputError" in first
    assert "Previous attempts (this session): 0" in first
    assert "Previous attempts (this session): 1\n  1. get_weather(<arguments " in second
    assert f"[step 0] → {error}" in second
    for s in analyses_hints.suggestions_for("ToolInputError", error, "get_weather"):
        assert f"  - {s}" in second
    # The block never reaches the log; the exit says why the loop stopped (spec: exit_reason error).
    recs = clients.records(log)
    assert "Recovery Context" not in log.read_text(encoding="utf-8")
    exit_ = recs[-1]
    assert (exit_["kind"], exit_["exit_reason"], exit_["error_type"]) == ("loop_exit", "error", "loop_detected")
    assert exit_["error_message"] == "retry loop: get_weather failed 3 times with the same arguments"
    assert (exit_["tool_calls"], exit_["tool_errors"]) == (3, 3)


def test_anthropic_loop_model_that_reads_the_block_changes_course(tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(log), history=True)

    def reads_block(req: dict) -> NS:
        (block,) = context_blocks(req)
        assert "Convert natural-language dates to ISO 8601" in block
        return a_tools(("toolu_2", "get_weather", {"city": "Paris", "date": "2026-11-27"}))

    client, create = clients.anthropic_client(
        [
            lambda req: a_tools(("toolu_1", "get_weather", {"city": "Paris", "date": "tomorrow"})),
            reads_block,
            lambda req: clients.a_text("14°C, light rain."),
        ]
    )
    assert EX_A.run_agent_loop(client, col, "conv-ok", "Weather?", [], prompt_id="p1") == "14°C, light rain."
    col.close()
    recs = clients.records(log)
    ok = [r for r in recs if r["kind"] == "tool_call" and not r["is_error"]]
    (failed,) = [r for r in recs if r["kind"] == "tool_call" and r["is_error"]]
    # result_fingerprint: the digest of the text the model saw, on the successful call only.
    expected = hashlib.sha256("Paris on 2026-11-27: 14°C, light rain".encode()).hexdigest()
    assert [r["result_fingerprint"] for r in ok] == [expected]
    assert "result_fingerprint" not in failed  # the tool raised: no result was handed over
    assert recs[-1]["exit_reason"] == "end_turn"


def test_openai_loop_blind_model_stopped_and_block_is_the_tool_message(tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(log), history=True)
    args = '{"city": "Paris", "date": "next friday"}'
    create = clients.ScriptedClient(
        [lambda req, i=i: clients.o_resp(None, [clients.o_call(f"call_{i}", "get_weather", args)], "tool_calls") for i in range(10)]
    )
    client = NS(chat=NS(completions=NS(create=create)))
    messages: list = []
    with pytest.raises(EX_O.LoopDetectedError):
        EX_O.run_openai_agent_loop(client, col, "conv-o", "Weather?", messages, prompt_id="p1")
    col.close()
    tool_msgs = [m["content"] for m in messages if m["role"] == "tool"]
    assert len(tool_msgs) == 3
    assert all(m.startswith("[Error Recovery Context]\n") for m in tool_msgs)
    assert "Error: Invalid date format 'next friday'." in tool_msgs[0]
    assert "Previous attempts (this session): 2\n" in tool_msgs[2]
    exit_ = clients.records(log)[-1]
    assert (exit_["exit_reason"], exit_["error_type"]) == ("error", "loop_detected")


# ------------------------------------------------------------------ the manual API


def _col(**kw: Any) -> tuple[Collector, MemorySink]:
    sink = MemorySink()
    return Collector(sink, history=True, **kw), sink


def test_block_lists_the_latest_attempts_at_the_same_target_and_says_how_many_are_left_out() -> None:
    col, _ = _col()
    with col.prompt("c", prompt_id="p1") as loop:
        for i in range(12):
            loop.model_response("tool_use")
            with loop.tool_call(f"t{i}", "edit_file", {"path": "src/config.ts", "content": f"v{i}"}, catch=True) as call:
                raise FileNotFoundError(f"File not found: src/config.ts (try {i})")
            # Another target: never listed among this one's attempts.
            with loop.tool_call(f"o{i}", "edit_file", {"path": "src/other.ts", "content": "x"}, catch=True):
                raise FileNotFoundError("File not found: src/other.ts")
    block = call.recovery_context()
    assert block is not None
    lines = block.splitlines()
    assert lines[1] == "Operation: edit_file(path='src/config.ts')"
    assert lines[2] == "Error: File not found: src/config.ts (try 11)"
    assert "Previous attempts (this session): 11" in lines
    assert "  (6 earlier attempts not listed)" in lines
    listed = [line for line in lines if line.startswith("  ") and ". edit_file(" in line]
    assert [line.split(".", 1)[0].strip() for line in listed] == ["7", "8", "9", "10", "11"]
    assert "try 10)" in listed[-1] and "other.ts" not in block
    assert call.recovery_context(max_attempts=0).count("edit_file(") == 1
    assert len(block) < 2000 + 5 * 300 + 600
    # A successful call has no block.
    with col.prompt("c") as loop:
        with loop.tool_call("ok", "edit_file", {"path": "a"}) as ok:
            pass
    assert ok.recovery_context() is None


def test_previous_attempts_span_prompts_of_the_conversation_only() -> None:
    col, _ = _col()
    for conv, prompt in (("c1", "p1"), ("c2", "p1"), ("c1", "p2")):
        with col.prompt(conv, prompt_id=prompt) as loop:
            with loop.tool_call("t", "get_order", {"order_id": "A-1"}, catch=True) as call:
                raise KeyError("order A-1 not found")
    block = call.recovery_context()
    assert "Operation: get_order(order_id='A-1')" in block
    assert "Previous attempts (this session): 1\n  1. get_order(order_id='A-1') [prompt p1, step 0]" in block


def test_without_history_the_block_says_attempts_are_not_tracked() -> None:
    col = Collector(MemorySink())
    with col.prompt("c") as loop:
        with loop.tool_call("t", "search", '{"query": "x"}', catch=True) as call:
            raise TimeoutError("search timed out after 30 s")
    block = call.recovery_context()
    assert "Operation: search(query='x')" in block
    assert "Previous attempts (this session): not tracked" in block
    assert "timeouts are often transient" in block
    assert loop.spinning() is None  # no history, no policy: no counters


def test_block_does_not_repeat_an_error_label_the_tool_text_already_has() -> None:
    col = Collector(MemorySink(), history=True)
    with col.prompt("c") as loop:
        with loop.tool_call("t1", "book", {"seats": 3}, catch=True) as call:
            call.fail("Error: not enough seats", error_type="ValueError")
        with loop.tool_call("t2", "book", {"seats": 2}, catch=True) as plain:
            plain.fail("Errors in fields: seats", error_type="ValueError")
    block = call.recovery_context()
    assert "Error: not enough seats" in block and "Error: Error:" not in block
    assert "Error: Errors in fields: seats" in plain.recovery_context()  # only a whole "Error:" label


def test_no_progress_loop_and_cycle_signals() -> None:
    col, _ = _col()
    with col.prompt("c") as loop:
        for i in range(4):
            loop.model_response("tool_use")
            with loop.tool_call(f"e{i}", "exec", {"cmd": "ls /nope"}) as call:
                call.returned("")
            spin = loop.spinning()
            assert (spin is None) == (i < 2)
        assert (spin.kind, spin.tool_name, spin.calls) == (NO_PROGRESS, "exec", 4)
        # Different results: progress.
        loop.model_response("tool_use")
        with loop.tool_call("e5", "exec", {"cmd": "ls /"}) as call:
            call.returned("bin etc")
        assert loop.spinning() is None
    with col.prompt("c") as loop:
        seen = []
        for i, (tool, args) in enumerate([("a", {"x": 1}), ("b", {"y": 1})] * 3):
            loop.model_response("tool_use")
            with loop.tool_call(f"t{i}", tool, args) as call:
                call.returned(f"r{i}")  # distinct results: not a no-progress loop
            spin = loop.spinning()
            seen.append(None if spin is None else (spin.kind, spin.tool_name, spin.other_tool_name, spin.calls))
        assert seen == [None, None, None, (CYCLE, "a", "b", 4), (CYCLE, "a", "b", 5), (CYCLE, "a", "b", 6)]
        assert [s.kind for s in loop.loops()] == [CYCLE]


def test_warn_policy_logs_once_per_loop_and_keeps_the_loop_open(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # test_import_hygiene runs import-linter in this process, whose logging setup disables the
    # loggers that exist by then (test_collector_guard fails after it for the same reason).
    monkeypatch.setattr(logging.getLogger("loopscope"), "disabled", False)
    col, sink = _col()
    with caplog.at_level(logging.WARNING, logger="loopscope"):
        with col.prompt("c", on_loop="warn") as loop:
            for i in range(5):
                loop.model_response("tool_use")
                with loop.tool_call(f"t{i}", "pay", {"amount": 5}, catch=True):
                    raise ValueError("amount does not add up")
                spin = loop.spinning()
            assert spin.kind == RETRY_LOOP and spin.calls == 5 and not spin.stop and not loop.closed
            loop.model_response("end_turn")
    warnings = [r for r in caplog.records if "retry loop: pay failed" in r.getMessage()]
    assert len(warnings) == 1
    col.flush()
    assert sink.records[-1]["exit_reason"] == "end_turn"


def test_exit_policy_works_without_history_and_a_stopped_loop_stays_stopped() -> None:
    col = Collector(MemorySink())
    with col.prompt("c", on_loop="exit") as loop:
        for i in range(3):
            loop.model_response("tool_use")
            with loop.tool_call(f"t{i}", "pay", None, catch=True):
                raise ValueError("amount does not add up")  # null fingerprint: the message groups them
        spin = loop.spinning()
        assert spin.stop and loop.closed and loop.exit_reason == "error"
        assert loop.spinning().stop  # asking again does not write a second exit
    col.flush()
    assert [r["kind"] for r in col.sink.records].count("loop_exit") == 1


# ------------------------------------------------------------------ never raises, bounded


class Evil:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")


def test_never_raises_into_the_host_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    col = Collector(MemorySink(), history=True, strict=False)
    with col.prompt("c", on_loop="exit") as loop:
        # Arguments that cannot be fingerprinted: the record and the loop go on.
        with loop.tool_call("t1", "write", {"path": Evil()}, catch=True) as call:
            raise OSError("disk full")
        assert call.recovery_context() is None  # its fingerprint cannot be computed: counted, None
        assert loop.spinning() is None
        # A broken block builder and a broken history.
        import loopscope.collectors.tool_call as tc

        monkeypatch.setattr(tc, "recovery_block", lambda *a, **k: 1 / 0)
        with loop.tool_call("t2", "write", {"path": "a"}, catch=True) as call:
            raise OSError("disk full")
        assert call.recovery_context() is None
        monkeypatch.setattr(col._history, "add", lambda *a: 1 / 0)
        with loop.tool_call("t3", "write", {"path": "a"}, catch=True) as call:
            raise OSError("disk full")
        monkeypatch.setattr(type(loop._watch), "current", lambda *a: 1 / 0)
        assert loop.spinning() is None
        assert loop.loops() == []
    assert col.stats.internal_errors >= 3
    assert loop.tool_calls == 3  # every call recorded


def test_strict_mode_reraises_for_test_suites() -> None:
    col = Collector(MemorySink(), history=True, strict=True)
    with col.prompt("c") as loop:
        with loop.tool_call("t", "x", None, catch=True) as call:
            raise OSError("boom")
        call._loop = None  # break the call
        with pytest.raises(AttributeError):
            call.recovery_context()


def test_history_memory_is_bounded_and_drops_are_counted() -> None:
    col, _ = _col(max_history_conversations=3, max_history_calls=5)
    for c in range(10):
        with col.prompt(f"c{c}") as loop:
            for i in range(8):
                with loop.tool_call(f"t{i}", "read", {"path": f"f{i}"}):
                    pass
    assert len(col._history) == 15 and col._history.conversations == 3
    assert (col.stats.history_evicted, col.stats.history_dropped) == (7, 80 - 15)


def test_history_does_not_keep_argument_values() -> None:
    col = Collector(MemorySink(), history=True, max_history_conversations=50, max_history_calls=20)
    big = "x" * 5000
    tracemalloc.start()
    try:
        for c in range(60):
            with col.prompt(f"c{c}") as loop:
                for i in range(25):
                    with loop.tool_call(f"t{i}", "write_file", {"path": big + str(i), "content": big}, catch=True):
                        raise OSError(big)
        col.sink.records.clear()  # what the sink holds is the sink's; the history is what we measure
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(col._history) == 1000
    # 1,000 entries with 120-character targets and 160-character error lines: well under 2 MB
    # (60 x 25 calls of 10 KB arguments would be 15 MB).
    assert held < 2_000_000, held


# ------------------------------------------------------------------ run time and offline agree


CALLS = [
    ("read", {"path": "a"}),
    ("read", {"path": "b"}),
    ("exec", {"cmd": "ls"}),
    ("exec", '{"cmd": not json'),  # null fingerprint
]


def _random_prompt(rng: random.Random) -> list[tuple[str, Any, bool, str | None, bool]]:
    out = []
    for _ in range(rng.randint(3, 25)):
        tool, args = rng.choice(CALLS[: rng.choice((2, 3, 4))])
        failed = rng.random() < 0.4
        result = None if failed else rng.choice(("", "same", None))
        replayed = not failed and rng.random() < 0.15  # short-circuited: not part of no-progress loops or cycles
        out.append((tool, args, failed, result, replayed))
    return out


def test_run_time_signal_and_offline_queries_find_the_same_loops(tmp_path: Path) -> None:
    rng = random.Random(18)
    log = tmp_path / "l.jsonl"
    col = Collector(JsonlSink(log), history=True)
    runtime: set[tuple] = set()
    for c in range(60):
        with col.prompt(f"c{c}", prompt_id="p") as loop:
            for i, (tool, args, failed, result, replayed) in enumerate(_random_prompt(rng)):
                loop.model_response("tool_use")
                with loop.tool_call(f"t{i}", tool, args, catch=True) as call:
                    if failed:
                        raise ValueError(rng.choice(("bad", "worse")))
                    if replayed:
                        call.replayed(result)
                    if result is not None:
                        call.returned(result)
            for s in loop.loops():
                runtime.add((f"c{c}", s.kind, s.tool_name, s.args_fingerprint, s.other_tool_name, s.other_args_fingerprint, s.calls))
    col.close()
    db = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["load", str(log), "--db", str(db)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    con = connect(db)
    offline = set()
    for r in incidents.retry_loops(con, Selection()):
        offline.add((r.conversation_id, RETRY_LOOP, r.tool_name, r.args_fingerprint, None, None, r.calls))
    for r in loops.no_progress_loops(con, Selection()):
        offline.add((r.conversation_id, NO_PROGRESS, r.tool_name, r.args_fingerprint, None, None, r.calls))
    for r in loops.cycles(con, Selection()):
        offline.add((r.conversation_id, CYCLE, r.tool_name, r.args_fingerprint, r.other_tool_name, r.other_args_fingerprint, r.calls))
    con.close()
    kinds = {k[1] for k in offline}
    assert kinds == {RETRY_LOOP, NO_PROGRESS, CYCLE}, kinds  # the data exercises all three
    assert runtime == offline


# ------------------------------------------------------------------ the demo, with and without the block


def test_demo_blind_conversations_with_the_block_spin_less(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--recovery-context"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "blind_context.jsonl" in result.stdout
    text = (out / "blind_context.jsonl").read_text(encoding="utf-8")
    assert "Recovery Context" not in text  # the block goes to the model, never to the log
    db = str(tmp_path / "d.duckdb")
    assert CliRunner().invoke(app, ["load", str(out), "--db", db]).exit_code == 0
    con = connect(db)
    try:
        blind = Selection(tags=(("mode", "blind"),))
        context = Selection(tags=(("mode", "blind+context"),))
        counts = {
            name: (len(incidents.retry_loops(con, sel)), con.execute(
                "SELECT count(*) FROM tool_calls WHERE is_error AND json_extract_string(tags, '$.mode') = ?", [mode]
            ).fetchone()[0])
            for name, sel, mode in (("blind", blind, "blind"), ("context", context, "blind+context"))
        }
    finally:
        con.close()
    # Counted from the scripted policies: book_lost_race retries the same booking 3 times blind and
    # goes back to check_availability with the block; the date and room-name guessing stops sooner.
    assert counts == {"blind": (1, 15), "context": (0, 8)}


# ------------------------------------------------------------------ triage and audit, records and message arrays


SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schemas"


def assert_schema(name: str, document: Any) -> None:
    """The document matches docs/schemas/NAME (its items included: the sample data has none)."""
    from jsonschema import Draft202012Validator, FormatChecker
    from referencing import Registry, Resource

    registry = Registry().with_resources(
        (p.name, Resource.from_contents(json.loads(p.read_text()))) for p in sorted(SCHEMAS.glob("*.json"))
    )
    validator = Draft202012Validator(json.loads((SCHEMAS / name).read_text()), registry=registry,
                                     format_checker=FormatChecker())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    assert not errors, errors[:5]


def _chat(conv: str, calls: list[tuple[str, dict, str]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    for i, (name, args, result) in enumerate(calls):
        cid = f"{conv}-call{i}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": cid, "content": result})
    messages.append({"role": "assistant", "content": "Done."})
    return {"conversation_id": conv, "messages": messages}


def test_triage_and_audit_show_no_progress_loops_and_cycles_from_records_and_message_arrays(tmp_path: Path) -> None:
    # Message arrays: 4 identical exec calls with an empty result (nanobot#2298's shape), and an
    # A-B-A-B-A cycle of two reads (5 calls: one cycle of 5) whose results change each time (with the
    # same result, the three reads of "a" would also be a no-progress loop).
    chats = tmp_path / "chats.jsonl"
    chats.write_text(
        json.dumps(_chat("m-np", [("exec", {"cmd": "ls /nope"}, "")] * 4)) + "\n"
        + json.dumps(_chat("m-cy", [("read", {"path": p}, f"text of {p}, version {i}") for i, p in enumerate("ababa")])) + "\n",
        encoding="utf-8",
    )
    # Collector records: 3 identical successful calls with the same result, handed over with returned().
    log = tmp_path / "records.jsonl"
    col = Collector(JsonlSink(log))
    with col.prompt("r-np", prompt_id="p1") as loop:
        for i in range(3):
            loop.model_response("tool_use")
            with loop.tool_call(f"t{i}", "poll_job", {"job_id": "j1"}) as call:
                call.returned({"status": "pending"})
        loop.model_response("end_turn")
    col.close()
    db = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    assert runner.invoke(app, ["load", "--db", db, "--input-format", "messages", str(chats)]).exit_code == 0
    assert runner.invoke(app, ["load", "--db", db, str(log)]).exit_code == 0

    def triage(conv: str) -> dict[str, Any]:
        res = runner.invoke(app, ["triage", conv, "--db", db, "--format", "json"], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)

    np_m, cy_m, np_r = triage("m-np"), triage("m-cy"), triage("r-np")
    for doc in (np_m, cy_m, np_r):
        assert_schema("triage.json", doc)
    assert [(n["tool_name"], n["calls"], n["redundant_calls"]) for n in np_m["no_progress_loops"]] == [("exec", 4, 3)]
    assert np_m["no_progress_loops"][0]["result_fingerprint"] == hashlib.sha256(b"").hexdigest()
    assert np_m["cycles"] == [] and cy_m["no_progress_loops"] == []
    assert [(c["tool_name"], c["other_tool_name"], c["calls"]) for c in cy_m["cycles"]] == [("read", "read", 5)]
    assert cy_m["cycles"][0]["args_fingerprint"] != cy_m["cycles"][0]["other_args_fingerprint"]
    assert [(n["tool_name"], n["calls"]) for n in np_r["no_progress_loops"]] == [("poll_job", 3)]
    # The table view names them too.
    text = runner.invoke(app, ["triage", "m-cy", "--db", db], catch_exceptions=False).stdout
    assert "1 cycle" in text and "No-progress loops and cycles" in text

    res = runner.invoke(app, ["audit", "--db", db, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert_schema("audit.json", report)
    assert (report["no_progress_loops"]["total"], report["no_progress_loops"]["redundant_calls"]) == (2, 3 + 2)
    assert (report["cycles"]["total"], report["cycles"]["redundant_calls"]) == (1, 3)
    res = runner.invoke(app, ["check", "--db", db, "--max-no-progress-loops", "1", "--max-cycles", "0"])
    assert res.exit_code == 3
    assert "VIOLATED no_progress_loops 2" in res.stdout and "VIOLATED cycles 1" in res.stdout


def _kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _span(span_id: str, parent: str, name: str, start_ms: int, end_ms: int, attrs: dict[str, str]) -> dict[str, Any]:
    t0 = 1_790_000_000_000_000_000
    return {
        "traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": span_id, "parentSpanId": parent, "name": name,
        "kind": 1, "startTimeUnixNano": str(t0 + start_ms * 1_000_000), "endTimeUnixNano": str(t0 + end_ms * 1_000_000),
        "attributes": [_kv(k, v) for k, v in attrs.items()], "status": {}, "events": [],
    }


def test_otlp_tool_spans_with_their_result_give_result_fingerprint_and_a_no_progress_loop(tmp_path: Path) -> None:
    agent = _span("AA00000000000001", "", "invoke_agent", 0, 100, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "o-np"})
    tools = [
        _span(f"BB0000000000000{i}", "AA00000000000001", "execute_tool exec", 10 * i + 1, 10 * i + 5, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "exec", "gen_ai.tool.call.id": f"c{i}",
            "gen_ai.tool.call.arguments": '{"cmd": "ls /nope"}', "gen_ai.tool.call.result": ""})
        for i in range(1, 4)
    ]
    path = tmp_path / "spans.jsonl"
    line = {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": [agent, *tools]}]}]}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    db = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    res = runner.invoke(app, ["load", "--db", db, "--input-format", "otlp", str(path)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["triage", "o-np", "--db", db, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    loops_found = json.loads(res.stdout)["no_progress_loops"]
    assert [(n["tool_name"], n["calls"], n["result_fingerprint"]) for n in loops_found] == [
        ("exec", 3, hashlib.sha256(b"").hexdigest())
    ]


def test_framework_hooks_get_the_block_and_the_policy_through_record_tool_call() -> None:
    """A framework that times calls itself (record_tool_call) gets the same block and policy."""
    col, sink = _col()
    blocks = []
    with col.prompt("c-hook", prompt_id="p1", on_loop="exit") as loop:
        for i in range(5):
            loop.model_response("tool_use")
            loop.record_tool_call(
                tool_call_id=f"h{i}", tool_name="search", arguments={"query": "hotel paris"},
                is_error=True, error_type="RateLimitError", error_message="429 Too Many Requests", latency_ms=3.0,
            )
            blocks.append(loop.recovery_context(max_attempts=1))
            spin = loop.spinning()
            if spin is not None and spin.stop:
                break
    assert len(blocks) == 3 and spin.kind == RETRY_LOOP
    assert "Operation: search(query='hotel paris')" in blocks[2]
    assert "Previous attempts (this session): 2\n  (1 earlier attempt not listed)\n  2. search(query='hotel paris')" in blocks[2]
    assert "Wait for the retry-after delay" in blocks[2]
    col.flush()
    assert (sink.records[-1]["exit_reason"], sink.records[-1]["error_type"]) == ("error", "loop_detected")
    with col.prompt("c-hook") as loop:
        assert loop.recovery_context() is None  # no failed call yet


def test_parallel_tool_calls_from_threads_count_exactly() -> None:
    from concurrent.futures import ThreadPoolExecutor

    col = Collector(MemorySink(), history=True, max_history_calls=10_000)
    with col.prompt("c-par", on_loop="warn") as loop:
        loop.model_response("tool_use")

        def one(i: int) -> None:
            with loop.tool_call(f"t{i}", "fetch", {"url": "https://example.com/down"}, catch=True):
                raise ConnectionError("connection reset by peer")

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(one, range(400)))
        spin = loop.spinning()
    assert col.stats.internal_errors == 0
    assert (spin.kind, spin.calls) == (RETRY_LOOP, 400)
    assert len(col._history) == 400 and loop.tool_errors == 400


def test_the_target_shown_in_the_block_is_redacted_and_capped() -> None:
    col, _ = _col()
    url = "https://api.example.com/v1/items?api_key=sk-ant-abcdef0123456789abcdef&page=" + "9" * 500
    with col.prompt("c") as loop:
        for i in range(2):
            with loop.tool_call(f"t{i}", "fetch", {"url": url}, catch=True) as call:
                raise PermissionError("403 Forbidden")
    block = call.recovery_context()
    operation = block.splitlines()[1]
    assert operation.startswith("Operation: fetch(url='https://api.example.com/v1/items?api_key=[REDACTED]")
    assert "sk-ant" not in block and len(operation) < 160
    assert "Previous attempts (this session): 1" in block  # the same (capped) target both times
