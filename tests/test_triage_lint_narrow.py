"""triage, unrecovered and lint stay readable in an 80-column terminal (and at 200).

The rich output is read by people on call in ordinary terminals: every id must
appear whole (copy-pasteable, never cut by an ellipsis or split across lines)
and the message must be there, not squeezed into a one-character column.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import EXIT_GATE_FAILED, app

HERE = Path(__file__).resolve().parent
SAMPLE_LOGS = HERE.parent / "sample_logs"


def invoke(args: list[str], columns: int) -> str:
    result = CliRunner().invoke(
        app, args, env={"COLUMNS": str(columns), "TERMINAL_WIDTH": str(columns)}, catch_exceptions=False
    )
    assert result.exit_code in (0, EXIT_GATE_FAILED), result.output
    return result.stdout


@pytest.fixture(scope="module")
def db(loaded_store_template: Callable[[Path], Path], tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("narrow") / "sample.duckdb"
    shutil.copyfile(loaded_store_template(SAMPLE_LOGS), path)
    return str(path)


@pytest.fixture(scope="module")
def unrecovered_rows(db: str) -> list[dict[str, str]]:
    out = invoke(["unrecovered", "--db", db, "--format", "csv"], 200)
    return list(csv.DictReader(io.StringIO(out)))


def _fits(out: str, columns: int) -> None:
    widths = [len(line.rstrip()) for line in out.splitlines()]
    assert max(widths) <= columns, f"a line is {max(widths)} wide"


@pytest.mark.parametrize("columns", [80, 200])
def test_unrecovered_keeps_ids_and_messages(db: str, unrecovered_rows: list[dict[str, str]], columns: int) -> None:
    out = invoke(["unrecovered", "--db", db], columns)
    _fits(out, columns)
    assert len(unrecovered_rows) == 7
    lines = out.splitlines()
    for row in unrecovered_rows:
        # each id whole on one line
        assert any(row["conversation_id"] in line for line in lines), row["conversation_id"]
        assert any(row["prompt_id"] in line for line in lines), row["prompt_id"]
        assert any(row["tool_name"] in line for line in lines)
        # the start of the message (first 30 characters) is on one line, not cut to a sliver
        head = " ".join(row["error_message"].split())[:30]
        assert any(head in line for line in lines), head
    assert "…" not in "".join(line for line in lines if "c17-soldout-blind" in line)


def test_unrecovered_narrow_is_stacked_and_wide_is_a_table(db: str) -> None:
    narrow = invoke(["unrecovered", "--db", db], 80)
    wide = invoke(["unrecovered", "--db", db], 200)
    assert "┃" not in narrow and "┃ last active" in wide
    assert "c02-date-blind  gave_up · last active 2026-10-26 11:40Z" in narrow


@pytest.mark.parametrize("columns", [80, 200])
def test_lint_ranking_keeps_tools_and_templates(db: str, columns: int) -> None:
    out = invoke(["lint", "--db", db], columns)
    _fits(out, columns)
    lines = out.splitlines()
    assert any("create_reservation" in line for line in lines)
    # the templates are readable: their first words are on one line
    assert any('{"error": "reservation_conflict", "message": "conflict"}' in line for line in lines)
    assert any('{"error": "no_rooms_available", "message": "no rooms"}' in line for line in lines)
    assert "Fix first:" in out
    # never a tool name broken mid-word
    assert not any(line.rstrip().endswith(("check_avai", "create_res")) for line in lines)


def test_lint_ranking_narrow_order_and_counts(db: str) -> None:
    out = invoke(["lint", "--db", db], 80)
    # the costliest template first, with its counts on the line below it
    first = out.index(" 1. check_availability")
    assert out.index("3 of 5 unrecovered · 40.0% recovered · 2 conversations") > first
    assert out.index(" 2. create_reservation") > first


@pytest.mark.parametrize("columns", [80, 200])
def test_lint_messages_readable(columns: int) -> None:
    out = invoke(["lint", "-m", "Failed", "-m", "Invalid date 'next friday'. Use YYYY-MM-DD, e.g. 2026-03-15."], columns)
    _fits(out, columns)
    assert "generic  Failed" in out
    assert "ok  Invalid date 'next friday'. Use YYYY-MM-DD, e.g. 2026-03-15." in out
    assert "LS101 error:" in out
    assert "1 of 2 messages generic; 1 with error-severity findings." in out


def test_lint_rules_ids_and_names_whole() -> None:
    out = invoke(["lint", "--rules"], 80)
    _fits(out, 80)
    for rule in ("LS101", "generic-wording", "invalid-without-expected", "LS130"):
        assert rule in out


@pytest.mark.parametrize("conversation", ["b08-replay-reexecuted-corrective", "c10-conflict-blind", "b07-replay-corrective"])
def test_triage_incidents_narrow(db: str, conversation: str) -> None:
    import json

    data = json.loads(invoke(["triage", conversation, "--db", db, "--format", "json"], 200))
    out = invoke(["triage", conversation, "--db", db], 80)
    _fits(out, 80)
    lines = out.splitlines()
    for r in data["replays"]:
        assert any(r["tool_call_id"] in line for line in lines)
        assert any(r["prompt_id"] in line for line in lines)
    for loop in data["retry_loops"]:
        assert any(loop["prompt_id"] in line for line in lines)
        assert any(f"{loop['tool_name']} × {loop['calls']} ({loop['redundant_calls']} redundant)" in line for line in lines)
    first = data["first_unrecovered"]
    if first:
        assert any(first["tool_call_id"] in line for line in lines)
    assert "…" not in "".join(line for line in lines if "toolu_" in line and "replay" in out.lower() and "run " in line)


def test_triage_double_execution_narrow(db: str) -> None:
    out = invoke(["triage", "b08-replay-reexecuted-corrective", "--db", db], 80)
    assert "double execution (not flagged" in out
    assert "replay: EXECUTED AGAIN" in out


class TestMessagesFileErrors:
    """--messages: every accepted shape, and bad files named with file and line."""

    def _run(self, path: Path) -> object:
        return CliRunner().invoke(app, ["lint", "--messages", str(path), "-f", "json"], catch_exceptions=False)

    def test_pretty_printed_body_is_one_message(self, tmp_path: Path) -> None:
        import json

        path = tmp_path / "body.json"
        path.write_text('{\n  "error": "not_found",\n  "message": "Failed"\n}\n', encoding="utf-8")
        result = self._run(path)
        rows = json.loads(result.stdout)
        assert len(rows) == 1 and json.loads(rows[0]["message"]) == {"error": "not_found", "message": "Failed"}
        assert rows[0]["generic"] is True and result.exit_code == EXIT_GATE_FAILED

    def test_bad_list_item_names_file_and_line(self, tmp_path: Path) -> None:
        path = tmp_path / "bad.json"
        path.write_text('[\n  "Failed",\n  {"error": "x"},\n  42\n]\n', encoding="utf-8")
        result = self._run(path)
        assert result.exit_code == 1
        assert "bad.json, line 4: item 2: expected a message (string or JSON object), got int" in " ".join(result.output.split()).replace("│ ", "").replace(" │", "")

    def test_non_utf8_names_file_and_line(self, tmp_path: Path) -> None:
        path = tmp_path / "bad.txt"
        path.write_bytes(b"Failed\nok line\n\xff\xfe bad\n")
        result = self._run(path)
        assert result.exit_code == 1 and "bad.txt, line 3: not UTF-8 text" in result.output


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("triage", ["Reads the conversation from the store", "loopscope triage c02-date-blind sample_logs/", "exits 1"]),
        ("unrecovered", ["Reads the store", "loopscope unrecovered sample_logs/", "loopscope triage CONVERSATION_ID"]),
        # lint has verbs (issue 20): the group's help teaches check's exit codes and every verb
        ("lint", ["Exit codes of lint check:", "0  no rule of severity error fired",
                  "loopscope lint check --messages errors.json --format json", "loopscope lint sample_logs/"]),
    ],
)
def test_help_teaches(command: str, expected: list[str]) -> None:
    out = invoke([command, "--help"], 100)
    for text in expected:
        assert text in out, text


class TestTriageErrors:
    """triage with an id that is not there: a panel with a hint that leads somewhere, exit 1."""

    def _run(self, *args: str) -> object:
        return CliRunner().invoke(app, ["triage", *args], catch_exceptions=False)

    def test_typo_suggests_the_closest_ids(self, db: str) -> None:
        result = self._run("c02-date-blnd", "--db", db)
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert "did you mean 'c02-date-blind'" in result.output

    def test_empty_store_says_load_first(self, tmp_path: Path) -> None:
        result = self._run("c02-date-blind", "--db", str(tmp_path / "new.duckdb"))
        assert result.exit_code == 1 and "holds no records" in result.output and "loopscope load PATH" in result.output

    def test_paths_without_logs_say_so(self, tmp_path: Path) -> None:
        folder = tmp_path / "logs"
        folder.mkdir()
        (folder / "notes.txt").write_text("not a log\n", encoding="utf-8")
        result = self._run("c02-date-blind", str(folder), "--db", ":memory:")
        assert result.exit_code == 1
        assert "the PATHs hold no log file loopscope reads" in " ".join(result.output.replace("│", " ").split())

    def test_paths_are_loaded_first(self) -> None:
        result = self._run("c02-date-blind", str(SAMPLE_LOGS / "concierge.jsonl"), "--db", ":memory:")
        assert result.exit_code == 0 and "first unrecovered" in result.stdout


def test_fix_first_says_what_the_message_lacks() -> None:
    """The checklist under "Fix first" is about this message, not the rule in general."""
    import json

    tau2 = HERE / "fixtures" / "tau2"
    rows = json.loads(invoke(["lint", str(tau2), "--db", ":memory:", "-f", "json"], 200))
    top = rows[0]
    assert top["template"] == "Error: Patient not found with provided name and date of birth"
    assert top["checklist"] == {"names_value": False, "remedy": False, "retry_guidance": False}
    out = invoke(["lint", str(tau2), "--db", ":memory:"], 200)
    assert "this message: ✗ names the value · ✗ says what is expected or what to do · ✗ says whether to retry" in out


def test_checklist_reads_each_part() -> None:
    from loopscope.analyses.lint.engine import checklist

    assert checklist("Failed") == {"names_value": False, "remedy": False, "retry_guidance": False}
    assert checklist("check_in '12/03/2026' is not a valid date") == {
        "names_value": True, "remedy": False, "retry_guidance": False,
    }
    assert checklist("Rate limit exceeded for key k_12. Retry after 60 seconds.") == {
        "names_value": True, "remedy": True, "retry_guidance": True,
    }
    body = '{"error": "invalid_date", "message": "bad date", "hint": "use YYYY-MM-DD", "is_retriable": true}'
    assert checklist(body)["remedy"] and checklist(body)["retry_guidance"]


def test_ranking_example_is_deterministic_on_ties(tmp_path: Path) -> None:
    """Two texts of one template, once each: the example is the smaller, on every run."""
    import json

    def call(i: int, message: str) -> dict[str, object]:
        return {
            "v": 1, "kind": "tool_call", "ts": f"2026-11-02T10:00:0{i}Z", "conversation_id": f"c{i}", "prompt_id": "p",
            "agent": "a", "trace_id": None, "span_id": None, "tool_call_id": f"t{i}", "tool_name": "book", "step": 0,
            "input_shape": {}, "args_fingerprint": None, "outcome": "permanent_fail", "is_error": True, "attempts": 1,
            "latency_ms": 1.0, "error_type": f"E{i}", "error_message": message, "replayed": False,
        }

    for order in ((1, 2), (2, 1)):
        texts = {1: "Room 'B-7' not found", 2: "Room 'A-3' not found"}
        path = tmp_path / f"logs{order[0]}.jsonl"
        path.write_text("".join(json.dumps(call(i, texts[i])) + "\n" for i in order), encoding="utf-8")
        rows = json.loads(invoke(["lint", str(path), "--db", ":memory:", "-f", "json"], 200))
        assert len(rows) == 1 and rows[0]["variants"] == 2
        assert rows[0]["example"] == "Room 'A-3' not found" and rows[0]["error_type"] == "E1"


def test_one_line_flattens_cuts_and_shows_controls() -> None:
    from loopscope.cli.render.output import one_line

    assert one_line("a\n  b\tc", 10) == "a b c"
    assert one_line("abcdefghij", 5) == "abcd…" and len(one_line("x" * 500, 80)) == 80
    assert one_line("red\x1b[31m", 40) == "red\\x1b[31m"
    assert one_line(None, 5) == ""


def test_plain_mapping_catalog(tmp_path: Path) -> None:
    import json

    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"book": ["Failed"], "search": ["No flight 'HAT999'. Use search_flights(origin, date)."]}),
                    encoding="utf-8")
    result = CliRunner().invoke(app, ["lint", "--messages", str(path), "-f", "json"], catch_exceptions=False)
    rows = json.loads(result.stdout)
    assert [(r["tool"], r["generic"]) for r in rows] == [("book", True), ("search", False)]
    assert result.exit_code == EXIT_GATE_FAILED  # LS101 on "Failed" is severity error
    table = invoke(["lint", "--messages", str(path)], 80)
    assert "generic  book: Failed" in table
