"""ShareGPT conversations with function calls (LLaMA-Factory's layout: APIGen-MT, glaive, xLAM 2.0) through the CLI.

The public excerpt is LLaMA-Factory's own demo data (tests/fixtures/public_logs/README.md); its
counts were made by a separate script over the raw JSON: 16 conversations, 45 ``human`` turns,
11 ``function_call`` turns of one call each, 11 ``observation`` turns, no error text. Before this
reader, the file was one quarantined line ("no conversation found") and nothing loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loopscope.cli.app import app

HERE = Path(__file__).resolve().parent
GLAIVE = HERE / "fixtures" / "public_logs" / "llamafactory_glaive_toolcall_en_demo_excerpt.json"

runner = CliRunner()


def run(*args: str) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_llamafactory_glaive_demo_is_read() -> None:
    m = run("metrics", "--db", ":memory:", "--format", "json", str(GLAIVE))
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"], m["replays"]) == (45, 0, 11, 0, 0)
    load = run("load", "--db", "g.duckdb", "--format", "json", str(GLAIVE))
    assert (load["quarantined"], load["tool_calls"]) == (0, 11)
    assert load["details"][0]["input_format"] == "messages"


def _turn(who: str, value: Any) -> dict[str, Any]:
    return {"from": who, "value": value if isinstance(value, str) else json.dumps(value)}


CONVERSATION = [
    _turn("human", "Cancel reservation ABC123"),
    _turn("function_call", {"name": "get_reservation_details", "arguments": {"reservation_id": "ABC123"}}),
    _turn("observation", "Error: reservation not found"),
    _turn("function_call", {"name": "get_reservation_details", "arguments": {"reservation_id": "ABC124"}}),
    _turn("observation", {"reservation_id": "ABC124", "status": "active"}),
    _turn("gpt", "Found it. Shall I cancel it?"),
    _turn("human", "yes"),
    # two calls in one turn, and one observation holding both results in order
    _turn("function_call", [{"name": "cancel_reservation", "arguments": {"reservation_id": "ABC124"}},
                            {"name": "notify", "arguments": "{\"channel\": \"email\"}"}]),
    _turn("observation", ["Error: cannot cancel within 24 hours of departure", "sent"]),
    _turn("gpt", "Sorry, I cannot cancel it."),
]


def test_apigen_style_records_with_errors_and_parallel_calls(tmp_path: Path) -> None:
    # prompt 1: lookup (Error), lookup again (ok): recovered; prompt 2: cancel (Error) and notify (ok)
    # in one turn, then the model gives up: 2 prompts, 4 calls, 2 errors, 1 recovered, 1 gave_up
    path = tmp_path / "apigen.json"
    path.write_text(json.dumps([{"conversations": CONVERSATION, "system": "policy", "tools": "[]"}], indent=1))
    m = run("metrics", "--db", ":memory:", "--format", "json", str(path))
    assert (m["tool_calls"], m["errors"]) == (4, 0)  # no error flag: text only
    m = run("metrics", "--db", ":memory:", "--format", "json", "--error-when", "prefix", str(path))
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (2, 4, 2, 1)
    assert m["error_classes"]["gave_up"] == 1
    rows = run("unrecovered", "--db", ":memory:", "--format", "json", "--error-when", "prefix", str(path))
    assert [(r["tool_name"], r["error_message"]) for r in rows] == [
        ("cancel_reservation", "Error: cannot cancel within 24 hours of departure")]


def test_jsonl_records_with_ids_and_a_turn_loopscope_does_not_know(tmp_path: Path) -> None:
    lines = [{"id": "c-1", "conversations": CONVERSATION},
             {"id": "c-2", "conversations": [_turn("human", "hi"), _turn("function_call", "not json"),
                                             _turn("observation", "ok"), _turn("critic", "fine"), _turn("gpt", "done")]}]
    path = tmp_path / "sharegpt.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    load = run("load", "--db", "s.duckdb", "--format", "json", str(path))
    assert (load["quarantined"], load["tool_calls"]) == (0, 5)
    import duckdb

    con = duckdb.connect("s.duckdb", read_only=True)
    try:
        rows = con.execute(
            "SELECT conversation_id, tool_name, args_fingerprint IS NULL FROM tool_calls ORDER BY conversation_id, seq"
        ).fetchall()
    finally:
        con.close()
    assert [r[0] for r in rows] == ["c-1"] * 4 + ["c-2"]
    # a call whose value is not JSON: no name, no fingerprint, still a call with its result
    assert rows[-1][1:] == ("unknown", True)
