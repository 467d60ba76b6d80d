"""``loopscope lint`` end to end: ranking on logs, linting texts, the catalog."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

HERE = Path(__file__).resolve().parent
SAMPLE_LOGS = HERE.parent / "sample_logs"
TAU2 = HERE / "fixtures" / "tau2"

runner = CliRunner()


def run(*args: str) -> Any:
    return runner.invoke(app, ["lint", *args], catch_exceptions=False)


def _call(conv: str, prompt: str, step: int, tool: str, *, is_error: bool, message: str | None = None,
          outcome: str | None = None, ts: str = "2026-11-02T10:00:00Z") -> dict[str, Any]:
    return {
        "v": 1, "kind": "tool_call", "ts": ts, "conversation_id": conv, "prompt_id": prompt, "agent": "support",
        "trace_id": None, "span_id": None, "tool_call_id": f"{conv}-{prompt}-{step}-{tool}", "tool_name": tool,
        "step": step, "input_shape": {}, "args_fingerprint": None,
        "outcome": outcome or ("permanent_fail" if is_error else "ok"), "is_error": is_error, "attempts": 1,
        "latency_ms": 5.0, "error_type": None, "error_message": message, "replayed": False,
    }


def _exit(conv: str, prompt: str, reason: str = "end_turn", ts: str = "2026-11-02T10:00:05Z") -> dict[str, Any]:
    return {
        "v": 1, "kind": "loop_exit", "ts": ts, "conversation_id": conv, "prompt_id": prompt, "agent": "support",
        "trace_id": None, "span_id": None, "exit_reason": reason, "steps": 3, "tool_calls": 2, "tool_errors": 1,
        "max_tool_calls": 25, "input_tokens": None, "output_tokens": None, "duration_ms": 10.0,
        "error_type": None, "error_message": None,
    }


@pytest.fixture()
def logs(tmp_path: Path) -> Path:
    """Known answers.

    get_order: "Error: Order A-1 not found" / "... A-2 ..." (one template), 3 errors in 3
    conversations: c1 recovered (later ok call, normal exit), c2 gave up, c3 aborted.
    lookup: "Failed" twice in c4, never recovered (open prompt): 2 unrecovered, 1 conversation.
    refund: "Error: refund window closed" returned with is_error false: a silent error.
    """
    records = [
        _call("c1", "p1", 0, "get_order", is_error=True, message="Error: Order A-1 not found"),
        _call("c1", "p1", 1, "get_order", is_error=False),
        _exit("c1", "p1"),
        _call("c2", "p1", 0, "get_order", is_error=True, message="Error: Order A-2 not found"),
        _exit("c2", "p1"),
        _call("c3", "p1", 0, "get_order", is_error=True, message="Error: Order B-77 not found"),
        _exit("c3", "p1", reason="max_tokens"),
        _call("c4", "p1", 0, "lookup", is_error=True, message="Failed"),
        _call("c4", "p1", 1, "lookup", is_error=True, message="Failed"),
        _call("c5", "p1", 0, "refund", is_error=False, message="Error: refund window closed", outcome="ok"),
        _exit("c5", "p1"),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


class TestRanking:
    """Templates per tool, costliest first, with known counts."""

    def test_json(self, logs: Path) -> None:
        result = run(str(logs), "--db", ":memory:", "--format", "json")
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)
        assert [(r["tool_name"], r["kind"], r["occurrences"], r["unrecovered"], r["conversations"]) for r in rows] == [
            ("get_order", "error", 3, 2, 3),
            ("lookup", "error", 2, 2, 1),
            ("refund", "silent", 1, 0, 1),
        ]
        order = rows[0]
        assert order["template"] == "Error: Order <id> not found"
        assert order["variants"] == 3 and order["recovered_errors"] == 1
        assert order["recovery_rate"] == pytest.approx(1 / 3)
        assert order["classes"] == {"open": 0, "aborted": 1, "gave_up": 1}
        assert order["generic"] is False  # names the order id
        lookup = rows[1]
        assert lookup["generic"] is True and lookup["rules"] == ["LS101"] and lookup["example"] == "Failed"
        assert lookup["classes"] == {"open": 2, "aborted": 0, "gave_up": 0} and lookup["recovery_rate"] == 0
        assert "LS130" in rows[2]["rules"] and rows[2]["recovery_rate"] is None

    def test_min_count_and_tool(self, logs: Path) -> None:
        rows = json.loads(run(str(logs), "--db", ":memory:", "-f", "json", "--min-count", "2").stdout)
        assert [r["tool_name"] for r in rows] == ["get_order", "lookup"]
        rows = json.loads(run(str(logs), "--db", ":memory:", "-f", "json", "--tool", "lookup").stdout)
        assert [r["tool_name"] for r in rows] == ["lookup"]

    def test_since_until_select_prompts(self, logs: Path) -> None:
        rows = json.loads(run(str(logs), "--db", ":memory:", "-f", "json", "--since", "2026-11-03").stdout)
        assert rows == []
        rows = json.loads(run(str(logs), "--db", ":memory:", "-f", "json", "--until", "2026-11-03").stdout)
        assert len(rows) == 3

    def test_csv(self, logs: Path) -> None:
        result = run(str(logs), "--db", ":memory:", "-f", "csv")
        rows = list(csv.DictReader(io.StringIO(result.stdout)))
        assert rows[1]["tool_name"] == "lookup" and rows[1]["rules"] == "LS101" and rows[1]["unrecovered"] == "2"

    def test_table(self, logs: Path) -> None:
        result = run(str(logs), "--db", ":memory:")
        assert result.exit_code == 0
        out = result.stdout
        assert out.index("get_order") < out.index("lookup") < out.index("refund")
        assert "Error: Order <id> not found" in out and "(silent)" in out
        assert "Fix first: lookup: Failed" in out
        # the template behind "Fix first" explains itself: what triggered the rule and this message rewritten
        fix = out[out.index("Fix first:") :]
        assert "because: only generic words ('Failed')" in fix
        assert "this one:" in fix

    def test_json_rows_carry_evidence_and_suggestion(self, logs: Path) -> None:
        rows = json.loads(run(str(logs), "--db", ":memory:", "-f", "json").stdout)
        lookup = next(r for r in rows if r["tool_name"] == "lookup")
        assert lookup["evidence"].startswith("only generic words ('Failed')")
        assert lookup["suggestion"].startswith('"<what failed>')
        assert lookup["notes"] == []
        order = next(r for r in rows if r["tool_name"] == "get_order")
        assert order["generic"] is False and order["notes"] == []

    def test_next_generic_templates_explain_themselves_and_other_languages_are_noted(self, tmp_path: Path) -> None:
        records = [
            _call("d1", "p1", 0, "book", is_error=True, message="Something went wrong"),
            _call("d1", "p1", 1, "book", is_error=True, message="Something went wrong"),
            _call("d2", "p1", 0, "pay", is_error=True, message="Payment could not be processed"),
            _call("d3", "p1", 0, "find", is_error=True, message="Order not found"),
            _call("d4", "p1", 0, "db", is_error=True, message="FEHLER:  Relation »users« existiert nicht"),
        ]
        path = tmp_path / "more.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        out = run(str(path), "--db", ":memory:").stdout
        assert "Fix first: book: Something went wrong" in out
        why = out[out.index("Why the next generic templates were flagged") :]
        assert "pay: Payment could not be processed" in why and "find: Order not found" in why
        assert why.count("because:") == 2 and why.count("this one:") == 2
        assert "1 template not in English" in out
        rows = json.loads(run(str(path), "--db", ":memory:", "-f", "json").stdout)
        german = next(r for r in rows if r["tool_name"] == "db")
        assert german["generic"] is False and "not English" in german["notes"][0]

    def test_untrusted_text_is_inert(self, tmp_path: Path) -> None:
        hostile = "[bold red]pwned[/bold red] \x1b[31mred\x1b[0m"
        path = tmp_path / "h.jsonl"
        path.write_text(
            json.dumps(_call("h1", "p1", 0, "t[x]", is_error=True, message=hostile)) + "\n", encoding="utf-8"
        )
        out = run(str(path), "--db", ":memory:").stdout
        assert "[bold red]pwned[/bold red]" in out and "\x1b" not in out and "\\x1b" in out

    def test_empty_store(self) -> None:
        # A store with no record is nothing to lint: said (exit 1), not "No tool errors" (a silent zero).
        result = run("--db", ":memory:")
        assert result.exit_code == 1 and "holds no records" in " ".join(result.output.split())
        assert "No tool errors" not in result.output


def test_blind_mode_flagged_and_corrective_hints_not_on_sample_logs() -> None:
    """Done-when: the demo's blind-mode messages are generic, its corrective ones are not."""
    by_mode: dict[str, list[bool]] = {}
    for path in sorted(SAMPLE_LOGS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("kind") != "tool_call" or not record.get("is_error"):
                continue
            mode = (record.get("tags") or {}).get("mode")
            result = run("-f", "json", "--message", record["error_message"])
            by_mode.setdefault(mode, []).append(json.loads(result.stdout)[0]["generic"])
    assert by_mode["blind"] and all(by_mode["blind"])
    assert by_mode["corrective"] and not any(by_mode["corrective"])


def test_patient_not_found_ranks_first_on_tau2_medical_triage() -> None:
    """Done-when: the never-recovered 'Patient not found' template tops the real tau2 excerpt."""
    result = run(str(TAU2), "--db", ":memory:", "-f", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    top = rows[0]
    assert top["tool_name"] == "find_patient_by_name_dob"
    assert top["template"] == "Error: Patient not found with provided name and date of birth"
    assert top["occurrences"] == top["unrecovered"] == 20  # see tests/fixtures/tau2/README.md
    assert top["generic"] is True and "LS104" in top["rules"]


class TestMessages:
    """--message / --messages: lint texts before they ship."""

    def test_exit_code_follows_error_severity(self) -> None:
        assert run("--message", "Failed").exit_code == 3
        assert run("--message", "Invalid date format. Use YYYY-MM-DD.").exit_code == 0
        # generic but only warning-level: passes unless --strict
        assert run("-m", "Too many reservations").exit_code == 0
        assert run("-m", "Too many reservations", "--strict").exit_code == 3

    def test_json_shape(self) -> None:
        result = run("-f", "json", "-m", "Failed", "-m", "File not found: src/config.ts")
        rows = json.loads(result.stdout)
        assert [r["generic"] for r in rows] == [True, False]
        assert set(rows[0]) == {"message", "generic", "findings", "notes"}
        assert rows[0]["findings"][0]["rule_id"] == "LS101"
        assert set(rows[0]["findings"][0]) == {"rule_id", "severity", "reason", "rewrite", "evidence", "suggestion"}
        assert "'Failed'" in rows[0]["findings"][0]["evidence"]

    def test_findings_explain_themselves_in_the_terminal(self) -> None:
        out = run("-m", "Order not found", "-m", "Unknown room type 'premium'").stdout
        # what triggered the rule, and a rewrite that reuses the message's own nouns
        assert "because: 'not found' with no value named" in out
        assert "No order '<order id>'" in out
        assert "because: 'Unknown room type 'premium''" in out
        assert "Unknown room type 'premium'; expected <format or allowed values>" in out

    def test_non_english_is_said_not_silently_passed(self) -> None:
        rows = json.loads(run("-f", "json", "-m", "FEHLER:  Relation »users« existiert nicht").stdout)
        assert rows[0]["generic"] is False and rows[0]["notes"] and "not English" in rows[0]["notes"][0]
        out = run("-m", "FEHLER:  Relation »users« existiert nicht").stdout
        assert "note: not English" in out
        # the verdict line does not read as a pass
        assert out.startswith("not judged") and "1 not judged (not English)" in out

    def test_lines_file(self, tmp_path: Path) -> None:
        path = tmp_path / "errors.txt"
        path.write_text("Failed\n\nUser not found. Try search_users first.\n", encoding="utf-8")
        rows = json.loads(run("--messages", str(path), "-f", "json").stdout)
        assert [r["message"] for r in rows] == ["Failed", "User not found. Try search_users first."]

    def test_json_list_file(self, tmp_path: Path) -> None:
        path = tmp_path / "errors.json"
        path.write_text(json.dumps(["Rate limit exceeded. Retry after 60 seconds.", {"error": 404}]), encoding="utf-8")
        result = run("--messages", str(path), "-f", "json")
        rows = json.loads(result.stdout)
        assert [r["generic"] for r in rows] == [False, True] and result.exit_code == 3

    def test_tool_catalog_file(self, tmp_path: Path) -> None:
        path = tmp_path / "tools.json"
        catalog = {"tools": [{"name": "book", "errors": ["Failed", {"error": "x", "hint": "Use YYYY-MM-DD"}]}]}
        path.write_text(json.dumps(catalog), encoding="utf-8")
        rows = json.loads(run("--messages", str(path), "-f", "json").stdout)
        assert [(r["tool"], r["generic"]) for r in rows] == [("book", True), ("book", False)]

    def test_one_json_body_per_line(self, tmp_path: Path) -> None:
        path = tmp_path / "bodies.jsonl"
        path.write_text('{"error": 404}\n{"error": "x", "hint": "use a date like 2026-03-15"}\n', encoding="utf-8")
        rows = json.loads(run("--messages", str(path), "-f", "json").stdout)
        assert len(rows) == 2 and rows[0]["generic"] and not rows[1]["generic"]

    def test_bad_files_are_clear_errors(self, tmp_path: Path) -> None:
        missing = run("--messages", str(tmp_path / "nope.txt"))
        assert missing.exit_code == 1 and "nope.txt" in missing.output
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"tools": "x"}), encoding="utf-8")
        result = run("--messages", str(bad))
        assert result.exit_code == 1 and "'tools' must be a list" in result.output
        empty = tmp_path / "empty.txt"
        empty.write_text("\n\n", encoding="utf-8")
        assert "no messages" in run("--messages", str(empty)).output

    def test_paths_and_messages_together_are_a_usage_error(self, logs: Path) -> None:
        result = run(str(logs), "--message", "Failed")
        assert result.exit_code == 1 and "not both" in result.output

    def test_table_escapes_markup(self) -> None:
        result = run("-m", "[red]Failed[/red]")
        assert "[red]Failed[/red]" in result.stdout and "generic" in result.stdout

    def test_csv(self) -> None:
        rows = list(csv.DictReader(io.StringIO(run("-f", "csv", "-m", "Failed").stdout)))
        [row] = rows
        assert {k: row[k] for k in ("tool", "message", "generic", "rules", "severities", "notes")} == {
            "tool": "", "message": "Failed", "generic": "True", "rules": "LS101", "severities": "error", "notes": "",
        }
        assert row["evidence"].startswith("LS101: only generic words ('Failed')")


def test_rules_catalog() -> None:
    rows = json.loads(run("--rules", "-f", "json").stdout)
    assert [r["rule_id"] for r in rows][:3] == ["LS101", "LS102", "LS103"]
    table = run("--rules").stdout
    assert "LS130" in table and "silent-error" in table
