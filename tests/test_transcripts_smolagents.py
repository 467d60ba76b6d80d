"""smolagents memory dumps (``--input-format smolagents``), through the CLI.

The fixtures are smolagents 1.26's own ``agent.memory.get_full_steps()`` /
``get_succinct_steps()`` / ``write_memory_to_messages()`` after real runs against a
scripted model on 127.0.0.1 (tests/fixtures/smolagents/make_smolagents_memory.py, which
says what each run does). Every expected figure is counted here by ``raw_count``, a
separate walk over the raw JSON that reads the steps as smolagents writes them (no
loopscope code), and checked against the script's story in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.cli.app import app

HERE = Path(__file__).resolve().parent / "fixtures" / "smolagents"
FULL = HERE / "toolcalling_full_steps.json"
SUCCINCT = HERE / "toolcalling_succinct_steps.json"
MESSAGES = HERE / "toolcalling_messages.json"
CODE = HERE / "codeagent_full_steps.json"

runner = CliRunner()


def run(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def load(*paths: Path, db: str = "store.duckdb", code: int = 0, fmt: str = "auto") -> dict[str, Any]:
    return json.loads(run("load", "--db", db, "--format", "json", "--input-format", fmt, *map(str, paths), code=code).stdout)


def metrics(db: str = "store.duckdb") -> dict[str, Any]:
    return json.loads(run("metrics", "--db", db, "--format", "json").stdout)


def query(sql: str, db: str = "store.duckdb") -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def raw_count(path: Path) -> dict[str, Any]:
    """Tasks, calls, errors and ends, counted straight from the steps smolagents wrote."""
    tasks: list[dict[str, Any]] = []
    for step in json.loads(path.read_text(encoding="utf-8")):
        if "task" in step:
            tasks.append({"calls": 0, "errors": 0, "end": None})
            continue
        task = tasks[-1]
        error = (step.get("error") or {}).get("type")
        if error == "AgentMaxStepsError":
            task["end"] = "budget_exceeded"
            continue
        # a step whose tool raised keeps its calls only in the model's output message
        calls = step["tool_calls"] or (step.get("model_output_message") or {}).get("tool_calls") or []
        calls = [c for c in calls if c["function"]["name"] != "final_answer"]
        task["calls"] += len(calls)
        task["errors"] += 1 if error and calls else 0
        if step.get("is_final_answer"):
            task["end"] = "end_turn"
    return {"tasks": len(tasks), "calls": [t["calls"] for t in tasks], "errors": [t["errors"] for t in tasks],
            "ends": [t["end"] for t in tasks]}


def test_toolcalling_agent_memory_loads_with_the_raw_counts() -> None:
    raw = raw_count(FULL)
    # the script's story: task 1 recovered, task 2 hit max_steps=3, task 3 gave up after a parallel pair
    assert raw == {"tasks": 3, "calls": [3, 3, 3], "errors": [1, 3, 1], "ends": ["end_turn", "budget_exceeded", "end_turn"]}
    summary = load(FULL)  # auto-detected
    assert summary["details"][0]["input_format"] == "smolagents"
    assert (summary["tool_calls"], summary["loop_exits"], summary["quarantined"], summary["protocol_violations"]) == (9, 3, 0, 0)
    figures = metrics()
    assert (figures["prompts"], figures["open_prompts"], figures["tool_calls"], figures["errors"]) == (3, 0, 9, 5)
    # task 1's error is followed by a success and a final answer; task 2's three end at the step
    # budget (abnormal); task 3's is followed by the final answer only
    assert figures["error_classes"] == {"recovered": 1, "open": 0, "aborted": 3, "gave_up": 1}
    assert query("SELECT prompt_id, exit_reason, steps, tool_calls, tool_errors FROM loop_exits ORDER BY prompt_id") == [
        ("task-1", "end_turn", 4, 3, 1),
        ("task-2", "budget_exceeded", 4, 3, 3),  # 3 action steps and the final-answer call smolagents makes
        ("task-3", "end_turn", 3, 3, 1),
    ]
    errors = query("SELECT tool_name, error_type, error_message FROM tool_calls WHERE is_error ORDER BY ts")
    assert [(n, t) for n, t, _ in errors] == [("refund_order", "ValueError")] * 4 + [("send_email", "ValueError")]
    assert "refund of 999 is more than the 40.0 paid" in errors[0][2]
    # the parallel pair of task 3 shares its step; times come from the steps' timing
    assert query("SELECT count(DISTINCT step) FROM tool_calls WHERE prompt_id = 'task-3' AND NOT is_error") == [(1,)]
    assert query("SELECT min(ts) > TIMESTAMP '2020-01-01' FROM tool_calls") == [(True,)]
    # a task spins on the same failing call: three errors, same tool, same arguments
    assert query("SELECT count(*) FROM tool_calls WHERE prompt_id = 'task-2' AND is_error") == [(3,)]


def test_succinct_steps_give_the_same_figures() -> None:
    assert raw_count(SUCCINCT) == raw_count(FULL)
    summary = load(SUCCINCT)
    assert (summary["details"][0]["input_format"], summary["tool_calls"], summary["loop_exits"]) == ("smolagents", 9, 3)
    assert metrics()["error_classes"] == {"recovered": 1, "open": 0, "aborted": 3, "gave_up": 1}


def test_code_agent_steps_are_python_interpreter_calls_with_a_notice() -> None:
    raw = raw_count(CODE)
    # one task: the code raises (ValueError from refund_order), the next code succeeds, then final_answer
    assert raw == {"tasks": 1, "calls": [3], "errors": [1], "ends": ["end_turn"]}
    summary = load(CODE)
    assert (summary["details"][0]["input_format"], summary["tool_calls"], summary["loop_exits"]) == ("smolagents", 3, 1)
    notice = next(n for n in summary["notices"] if n["kind"] == "code_actions")
    assert notice["count"] == 3 and "python_interpreter" in notice["message"]
    assert query("SELECT DISTINCT tool_name FROM tool_calls") == [("python_interpreter",)]
    figures = metrics()
    assert (figures["errors"], figures["recovered_errors"]) == (1, 1)
    assert "CodeAgent" in run("metrics", "--db", "store.duckdb", "--format", "json").stderr


def test_the_messages_dump_and_forced_formats_are_named() -> None:
    # write_memory_to_messages() drops the calls of a step whose tool raised: refused by name
    refused = run("load", "--db", "m.duckdb", str(MESSAGES), code=1)
    said = " ".join(refused.output.split())
    assert "smolagents agent messages" in said and "get_full_steps()" in said and "Traceback" not in said
    # the messages reader, forced on the steps, points to the smolagents reader
    forced = run("load", "--db", "f.duckdb", "--input-format", "messages", str(FULL), code=1)
    assert "--input-format smolagents" in " ".join(forced.output.split())


def test_a_dump_cut_short_keeps_the_steps_before_and_another_format_is_quarantined(tmp_path: Path) -> None:
    text = FULL.read_text(encoding="utf-8")
    cut = text.index('"step_number": 3')  # inside task 1's third step: 2 calls answered before it
    path = tmp_path / "cut.json"
    path.write_text(text[:cut], encoding="utf-8")
    summary = load(path)
    assert (summary["details"][0]["input_format"], summary["tool_calls"], summary["quarantined"]) == ("smolagents", 2, 1)
    bad = json.loads(run("quarantine", "--db", "store.duckdb", "--format", "json").stdout)
    assert len(bad) == 1 and "rest of the file were not read" in bad[0]["reason"] and bad[0]["line_no"] > 1
    assert metrics()["open_prompts"] == 1  # nothing said the run ended
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"foo": 1}, {"bar": 2}]), encoding="utf-8")
    forced = load(other, db="o.duckdb", fmt="smolagents", code=1)
    assert (forced["tool_calls"], forced["quarantined"]) == (0, 1)
