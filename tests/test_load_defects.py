"""Loader and store defects found by adversarial testing (issue 22, items 1, 3, 4 and 6).

Each test failed before its fix: a --db naming an existing file that is not a
DuckDB database; secrets in JSON Lines records from a writer other than the
collector; a store written by a newer loopscope; JSON that is not strict
(trailing commas). All go through the CLI, as a user would.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

_spec = importlib.util.spec_from_file_location("loopscope_test_load_cli_support", Path(__file__).parent / "load_cli_support.py")
assert _spec and _spec.loader
_support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_support)
rec, line, invoke = _support.rec, _support.line, _support.invoke


def words(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ 1. --db naming a file that is not DuckDB


@pytest.mark.parametrize("name", ["x.jsonl", "x.duckdb", "notes.txt", "x.db"])
def test_db_naming_an_existing_non_duckdb_file_is_refused_and_left_untouched(tmp_path: Path, name: str) -> None:
    log = tmp_path / "app.jsonl"
    log.write_text(line() + line(tool_call_id="t2", step=1))
    other = tmp_path / name
    other.write_text(line(tool_call_id="mine") * 50)  # a JSON Lines file: the arguments swapped
    before = other.read_bytes()
    result = invoke("load", str(log), "--db", str(other))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    text = words(result.output)
    assert "not a DuckDB database" in text and name in text
    assert other.read_bytes() == before
    assert not Path(str(other) + ".wal").exists()
    # Reads are refused the same way.
    result = invoke("metrics", "--db", str(other))
    assert result.exit_code == 1 and "not a DuckDB database" in words(result.output)
    assert other.read_bytes() == before


def test_db_naming_a_real_store_still_works_and_an_empty_file_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_text(line())
    db = tmp_path / "s.duckdb"
    assert invoke("load", str(log), "--db", str(db)).exit_code == 0
    assert invoke("load", str(log), "--db", str(db)).exit_code == 0  # an existing store opens
    empty = tmp_path / "empty.duckdb"  # DuckDB refuses an empty file too: said, and left as it is
    empty.write_bytes(b"")
    result = invoke("load", str(log), "--db", str(empty))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert empty.read_bytes() == b""


# ------------------------------------------------------------------ 4. a store written by a newer loopscope


def _store(tmp_path: Path) -> Path:
    log = tmp_path / "app.jsonl"
    log.write_text(line())
    db = tmp_path / "s.duckdb"
    assert invoke("load", str(log), "--db", str(db)).exit_code == 0
    return db


def _changed_store_refuses_a_load(tmp_path: Path, change: str) -> tuple[Path, str]:
    """A store with one record, changed by the SQL ``change`` as a newer loopscope would; loading
    one more record into it exits 1. Returns the store and the message's words."""
    db = _store(tmp_path)
    con = duckdb.connect(str(db))
    con.execute(change)
    con.close()
    more = tmp_path / "more.jsonl"
    more.write_text(line(tool_call_id="t9"))
    result = invoke("load", str(more), "--db", str(db))
    assert result.exit_code == 1, result.output
    return db, words(result.output)


def test_store_with_an_unknown_migration_is_refused_for_writes_and_warned_for_reads(tmp_path: Path) -> None:
    db, text = _changed_store_refuses_a_load(
        tmp_path, "INSERT INTO _loopscope_migrations (name) VALUES ('m999_from_the_future')"
    )
    assert "written by a newer loopscope" in text and "m999_from_the_future" in text and "upgrade" in text
    assert "internal error" not in text
    result = invoke("metrics", "--db", str(db), "--format", "json")
    assert result.exit_code == 0, result.output
    assert "written by a newer loopscope" in words(result.stderr)
    assert json.loads(result.stdout)["tool_calls"] == 1
    # Nothing was written: the new file's record is not there.
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM tool_calls").fetchone() == (1,)
    con.close()


def test_store_with_an_extra_column_is_refused_for_writes(tmp_path: Path) -> None:
    db, text = _changed_store_refuses_a_load(tmp_path, "ALTER TABLE tool_calls ADD COLUMN cost_usd DOUBLE")
    assert "written by a newer loopscope" in text and "tool_calls.cost_usd" in text
    result = invoke("metrics", "--db", str(db))
    assert result.exit_code == 0 and "written by a newer loopscope" in words(result.stderr)


# ------------------------------------------------------------------ 6. strict JSON


@pytest.mark.parametrize(
    "bad",
    [
        line()[:-2] + ",}\n",  # a trailing comma in the record
        line()[:-2] + ', "note": [1, 2,]}\n',  # in an unknown field's array
        line(tags={"a": "b"}).replace('"b"}', '"b",}'),  # in tags
        line()[:-2] + ', "x": {"y": 1,}}\n',  # in a nested object of an unknown field
        json.dumps(rec(), separators=(",", ":"))[:-1] + ",}\n",  # compact, as the collector writes
    ],
    ids=["record", "unknown_array", "tags", "unknown_nested", "compact"],
)
def test_trailing_commas_are_quarantined_as_malformed_json(tmp_path: Path, bad: str) -> None:
    log = tmp_path / "app.jsonl"
    log.write_text(line(tool_call_id="good") + bad + line(tool_call_id="good2", step=2))
    db = tmp_path / "s.duckdb"
    result = invoke("load", "--db", str(db), "--format", "json", str(log))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["loaded"], out["quarantined"]) == (2, 1), bad
    con = duckdb.connect(str(db), read_only=True)
    reasons = con.execute("SELECT line_no, reason FROM quarantine").fetchall()
    con.close()
    assert reasons == [(2, "malformed JSON (a trailing comma: JSON allows none)")]


def test_commas_inside_strings_are_not_trailing_commas(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_text(
        line(error_message="a,}", is_error=True, outcome="permanent_fail")
        + line(tool_call_id="t2", tags={"k": "x, ]"}, note='say ",}" and \\",]')
    )
    db = tmp_path / "s.duckdb"
    out = json.loads(invoke("load", "--db", str(db), "--format", "json", str(log)).stdout)
    assert (out["loaded"], out["quarantined"]) == (2, 0)


# ------------------------------------------------------------------ 3. secrets in JSON Lines from any writer

SECRETS = {
    "OpenAI key sk-proj-abc123def456ghi789jkl012 rejected": "OpenAI key [REDACTED] rejected",
    "GET https://u:hunter2pass@api.example.com/v1 -> 401": "GET https://u:[REDACTED]@api.example.com/v1 -> 401",
    'config {"password": "hunter2", "user": "bob"}': 'config {"password": "[REDACTED]", "user": "bob"}',
    "Authorization: Bearer abc.def-ghi_123 refused": "Authorization: Bearer [REDACTED] refused",
}


@pytest.mark.parametrize("compact", [True, False], ids=["collector_layout", "other_writer"])
def test_jsonl_error_text_is_redacted_at_load_like_the_other_readers(tmp_path: Path, compact: bool) -> None:
    lines = []
    for i, text in enumerate(SECRETS):
        tc = rec(tool_call_id=f"t{i}", step=i, is_error=True, outcome="permanent_fail", error_message=text)
        lines.append(json.dumps(tc, separators=(",", ":")) if compact else json.dumps(tc))
    exit_rec = {
        "v": 1, "kind": "loop_exit", "ts": "2026-11-20T10:00:09Z", "conversation_id": "c1", "prompt_id": "p1",
        "exit_reason": "error", "error_message": "token=abcd1234efgh5678 leaked",
    }
    lines.append(json.dumps(exit_rec))
    log = tmp_path / "other.jsonl"
    log.write_text("\n".join(lines) + "\n")
    db = tmp_path / "s.duckdb"
    result = invoke("load", "--db", str(db), str(log))
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(db), read_only=True)
    stored = [r[0] for r in con.execute("SELECT error_message FROM tool_calls ORDER BY seq").fetchall()]
    exit_message = con.execute("SELECT error_message FROM loop_exits").fetchone()
    con.close()
    assert stored == list(SECRETS.values())
    assert exit_message == ("token=[REDACTED] leaked",)
    # What reports print comes from the store: the secret is nowhere in the triage timeline.
    shown = invoke("triage", "c1", "--db", str(db), "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert "hunter2" not in shown.stdout and "abcd1234efgh5678" not in shown.stdout


# ------------------------------------------------------------------ migrations: one module, contiguous, in order


def test_migrations_are_numbered_without_gaps_and_run_in_that_order_on_a_fresh_store(tmp_path: Path) -> None:
    from loopscope.analyses.store import connect
    from loopscope.analyses.store.migrations import MIGRATIONS

    names = [name for name, _ in MIGRATIONS]
    assert [int(n[1:4]) for n in names] == list(range(1, len(names) + 1))
    con = connect(tmp_path / "s.duckdb")
    applied = [r[0] for r in con.execute("SELECT name FROM _loopscope_migrations ORDER BY rowid").fetchall()]
    con.close()
    assert applied == names


def test_a_store_migrated_under_the_old_names_upgrades_without_running_them_again(tmp_path: Path) -> None:
    """Before issue 20, reviews were m030 (written first) and prompt facts m004: a store has either name set."""
    from loopscope.analyses.store import connect
    from loopscope.analyses.store.migrations import MIGRATIONS, RENAMED

    db = _store(tmp_path)
    con = duckdb.connect(str(db))
    new_to_old = {new: old for old, new in RENAMED.items()}
    con.execute("DELETE FROM _loopscope_migrations")
    for name, _ in MIGRATIONS:
        con.execute("INSERT INTO _loopscope_migrations (name) VALUES (?)", [new_to_old.get(name, name)])
    con.close()
    con = connect(db)  # would fail with "table reviews already exists" if m004_reviews ran again
    applied = {r[0] for r in con.execute("SELECT name FROM _loopscope_migrations").fetchall()}
    con.close()
    assert applied == {name for name, _ in MIGRATIONS} | set(RENAMED)  # old names kept for older versions
    more = tmp_path / "more.jsonl"
    more.write_text(line(tool_call_id="t9"))
    assert invoke("load", str(more), "--db", str(db)).exit_code == 0  # not taken for a newer store


@pytest.mark.parametrize(
    "bad",
    [
        line()[:-2] + ', "x_score": NaN}\n',
        line()[:-2] + ', "x": {"y": [1, -Infinity]}}\n',
        json.dumps(rec(), separators=(",", ":"))[:-1] + ',"x_score":nan}\n',  # compact, as the collector writes
    ],
    ids=["unknown_field", "nested", "compact"],
)
def test_nan_and_infinity_in_unknown_fields_are_quarantined(tmp_path: Path, bad: str) -> None:
    """JSON numbers are finite: NaN in a known field was refused already; in an unknown one it reached extra."""
    log = tmp_path / "app.jsonl"
    log.write_text(line(tool_call_id="good") + bad + line(tool_call_id="info", tool_name="Infinity_nan", note="NaN"))
    db = tmp_path / "s.duckdb"
    out = json.loads(invoke("load", "--db", str(db), "--format", "json", str(log)).stdout)
    assert (out["loaded"], out["quarantined"]) == (2, 1), bad
    con = duckdb.connect(str(db), read_only=True)
    reasons = con.execute("SELECT line_no, reason FROM quarantine").fetchall()
    con.close()
    assert reasons == [(2, "malformed JSON (NaN or Infinity: JSON numbers are finite)")]
