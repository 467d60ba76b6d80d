"""Every ``--format json`` document matches its JSON Schema in docs/schemas/ (issue 12, "One vocabulary").

Each command runs through the CLI (Typer CliRunner) on sample_logs/, on the
real tau2-bench excerpts in tests/fixtures/tau2/, on the Claude Code and Codex
transcripts in tests/fixtures/transcripts/ (an id collision) and on a message
log with unflagged error texts and no timestamps (so the notices, the protocol
violations and the 'no timestamp' group are not empty), and its output is
validated against the schema the docs name for it (docs/json-output.md).
The figures schema (docs/schemas/figures.json) must list exactly the names
the code defines (``metrics.METRIC_KEYS`` and ``ERROR_CLASSES_KEY``), so the
docs and the code keep one vocabulary.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from typer.testing import CliRunner

from loopscope.analyses import metrics
from loopscope.analyses.recovery import ERROR_CLASSES
from loopscope.cli.app import app

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "docs" / "schemas"
SAMPLE_LOGS = REPO / "sample_logs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TAU2 = sorted((FIXTURES / "tau2").glob("*.json"))
TEXT_ERRORS = FIXTURES / "messages" / "openai_text_errors.jsonl"
TRANSCRIPTS = FIXTURES / "transcripts"  # Claude Code and Codex CLI sessions (one id collision)

runner = CliRunner()
needs_samples = pytest.mark.skipif(not (SAMPLE_LOGS / "EXPECTED.md").exists(), reason="sample_logs/ not generated")

FORMATS = FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    # jsonschema checks date-time only with an optional package; check it here so a
    # timestamp printed in another shape (a space, no zone) fails.
    if not isinstance(value, str):
        return True
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return "T" in value and parsed.tzinfo is not None


def _registry() -> Registry:  # type: ignore[type-arg]
    return Registry().with_resources(
        (p.name, Resource.from_contents(json.loads(p.read_text()))) for p in sorted(SCHEMAS.glob("*.json"))
    )


REGISTRY = _registry()


def validator(schema_name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / schema_name).read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=REGISTRY, format_checker=FORMATS)


def assert_valid(schema_name: str, document: Any) -> None:
    errors = sorted(validator(schema_name).iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{schema_name}: {list(e.absolute_path)}: {e.message}" for e in errors[:10])


def run_json(*args: str, exit_code: int = 0) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == exit_code, (args, result.stdout, result.stderr)
    return json.loads(result.stdout)


# ------------------------------------------------------------------ stores

@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    if not (SAMPLE_LOGS / "EXPECTED.md").exists():
        pytest.skip("sample_logs/ not generated")
    db = str(tmp_path_factory.mktemp("sample") / "sample.duckdb")
    out = run_json("load", str(SAMPLE_LOGS), "--db", db, "--format", "json")
    assert_valid("load.json", out)
    return db


@pytest.fixture(scope="module")
def tau2_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("tau2") / "tau2.duckdb")
    assert len(TAU2) == 3
    out = run_json("load", *map(str, TAU2), "--db", db, "--format", "json")
    assert_valid("load.json", out)
    assert [d["input_format"] for d in out["details"]] == ["messages"] * 3
    return db


@pytest.fixture(scope="module")
def text_errors_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("text") / "text.duckdb")
    assert_valid("load.json", run_json("load", str(TEXT_ERRORS), "--db", db, "--format", "json"))
    return db


@pytest.fixture(scope="module")
def transcripts_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("transcripts") / "transcripts.duckdb")
    out = run_json("load", str(TRANSCRIPTS), "--db", db, "--format", "json")
    assert_valid("load.json", out)
    assert {d["input_format"] for d in out["details"]} == {"claude-code", "codex"}
    return db


STORES = ["sample_db", "tau2_db", "text_errors_db", "transcripts_db"]


def _store(request: pytest.FixtureRequest, name: str) -> str:
    return str(request.getfixturevalue(name))


# ------------------------------------------------------------------ one vocabulary

def test_the_figures_schema_names_exactly_the_codes_figures() -> None:
    figures = json.loads((SCHEMAS / "figures.json").read_text())
    defs = figures["$defs"]
    figure_object = defs["figures_open"]
    assert list(figure_object["properties"]) == [*metrics.METRIC_KEYS, metrics.ERROR_CLASSES_KEY]
    assert figure_object["required"] == [*metrics.METRIC_KEYS, metrics.ERROR_CLASSES_KEY]
    assert defs["figure_name"]["enum"] == list(metrics.METRIC_KEYS)
    assert list(defs[metrics.ERROR_CLASSES_KEY]["properties"]) == list(ERROR_CLASSES)
    assert defs[metrics.ERROR_CLASSES_KEY]["additionalProperties"] is False
    # The rates are the figures that may be null and lie in [0, 1].
    for key in metrics.RATE_KEYS:
        assert defs[key]["minimum"] == 0 and defs[key]["maximum"] == 1 and "null" in defs[key]["type"]
    assert figures["unevaluatedProperties"] is False


def test_the_tool_health_schema_names_exactly_the_codes_per_tool_figures() -> None:
    defs = json.loads((SCHEMAS / "figures.json").read_text())["$defs"]
    tool = defs["tool_health"]
    assert list(tool["properties"]) == [*metrics.TOOL_KEYS, metrics.ERROR_CLASSES_KEY]
    assert tool["required"] == [*metrics.TOOL_KEYS, metrics.ERROR_CLASSES_KEY]
    assert tool["additionalProperties"] is False
    assert defs["tool_figure_name"]["enum"] == list(metrics.TOOL_KEYS)
    for key in metrics.TOOL_RATE_KEYS:
        assert defs[key]["minimum"] == 0 and defs[key]["maximum"] == 1 and "null" in defs[key]["type"]
    # A name shared with the prompt figures means the same thing: one definition in the schema too.
    assert all(tool["properties"][k] == {"$ref": f"#/$defs/{k}"} for k in metrics.TOOL_KEYS)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda d: d.update(calls=d.pop("tool_calls")), "a renamed figure"),
        (lambda d: d.update(p90_latency_ms=1.0), "an extra figure"),
        (lambda d: d.pop("tool_calls_without_latency"), "a missing figure"),
        (lambda d: d.update(error_rate=1.5), "a rate above 1"),
        (lambda d: d.update(p95_latency_ms="12"), "a latency as text"),
    ],
)
def test_the_tool_health_schema_rejects(change: Any, why: str) -> None:
    good = {key: 0 for key in metrics.TOOL_KEYS} | {
        metrics.ERROR_CLASSES_KEY: {c: 0 for c in ERROR_CLASSES}, "tool_name": "search", "scratchpad": False,
        "p50_latency_ms": None, "p95_latency_ms": None, "p99_latency_ms": None, "top_error_template": None,
        "recovery_rate": None, "conversation_recovery_rate": None,
    }
    assert_valid("metrics-by-tool.json", [good])
    change(good)
    with pytest.raises(ValidationError):
        validator("metrics-by-tool.json").validate([good])


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda d: d.update(recovered=d.pop("recovered_errors")), "a renamed figure"),
        (lambda d: d.update(median_tool_calls=d["median_tool_calls_per_prompt"]), "an extra figure"),
        (lambda d: d.pop("conversation_recovery_rate"), "a missing figure"),
        (lambda d: d["error_classes"].update(spun=0), "an extra error class"),
        (lambda d: d.update(recovery_rate=1.5), "a rate above 1"),
        (lambda d: d.update(errors="26"), "a count as text"),
        (lambda d: d.update(replays=-1), "a negative count"),
    ],
)
def test_the_figures_schema_rejects(change: Any, why: str) -> None:
    good = {key: 0 for key in metrics.METRIC_KEYS} | {
        metrics.ERROR_CLASSES_KEY: {c: 0 for c in ERROR_CLASSES},
        "recovery_rate": None, "conversation_recovery_rate": None, "replay_rate": None,
        "median_tool_calls_per_prompt": 0.0, "p99_tool_calls_per_prompt": 0.0,
    }
    assert_valid("metrics.json", good)
    change(good)
    with pytest.raises(ValidationError):
        validator("metrics.json").validate(good)


def test_a_week_or_cohort_with_a_renamed_figure_fails_too() -> None:
    week = {key: 0 for key in metrics.METRIC_KEYS} | {metrics.ERROR_CLASSES_KEY: {c: 0 for c in ERROR_CLASSES}}
    week |= {"group": "2026-W47", "recovered": week.pop("recovered_errors")}
    with pytest.raises(ValidationError, match="recovered"):
        validator("metrics-by.json").validate([week])


@pytest.mark.parametrize("store", STORES)
def test_metrics_and_audit_overall_agree_key_for_key(request: pytest.FixtureRequest, store: str) -> None:
    db = _store(request, store)
    for selection in ([], ["--agent", _first_agent(db)]):
        alone = run_json("metrics", "--db", db, "--format", "json", *selection)
        overall = run_json("audit", "--db", db, "--format", "json", *selection)["overall"]
        assert list(alone) == [*metrics.METRIC_KEYS, metrics.ERROR_CLASSES_KEY]
        assert {k: overall[k] for k in alone} == alone
        assert set(overall) - set(alone) == {"conversations"}
        checked = run_json("check", "--db", db, "--max-replay-rate", "1", "--format", "json", *selection)["figures"]
        assert checked == alone


def _first_agent(db: str) -> str:
    return str(run_json("metrics", "--db", db, "--by", "agent", "--format", "json")[0]["group"])


# ------------------------------------------------------------------ every document

@pytest.mark.parametrize("store", STORES)
def test_metrics_documents(request: pytest.FixtureRequest, store: str) -> None:
    db = _store(request, store)
    assert_valid("metrics.json", run_json("metrics", "--db", db, "--format", "json"))
    for by in metrics.GROUP_BY_CHOICES:
        rows = run_json("metrics", "--db", db, "--by", by, "--format", "json")
        assert rows
        assert_valid("metrics-by.json", rows)
    tools = run_json("metrics", "--db", db, "--by", metrics.BY_TOOL, "--format", "json")
    assert tools
    assert_valid("metrics-by-tool.json", tools)


@pytest.mark.parametrize("store", STORES)
def test_audit_document(request: pytest.FixtureRequest, store: str) -> None:
    db = _store(request, store)
    report = run_json("audit", "--db", db, "--format", "json")
    assert_valid("audit.json", report)
    assert report["tools"]["items"] and report["tools"]["total"] >= len(report["tools"]["items"])
    if store == "text_errors_db":
        assert {n["kind"] for n in report["notices"]} == {"unflagged_error_text", "no_timestamps"}
        assert report["protocol_violations"]["items"]
    if store == "transcripts_db":
        assert "id_collisions" in {n["kind"] for n in report["notices"]}
        assert "reused_tool_call_id" in {v["kind"] for v in report["protocol_violations"]["by_kind"]}


@pytest.mark.parametrize("store", STORES)
def test_unrecovered_and_triage_documents(request: pytest.FixtureRequest, store: str) -> None:
    db = _store(request, store)
    rows = run_json("unrecovered", "--db", db, "--format", "json")
    assert_valid("unrecovered.json", rows)
    assert_valid("unrecovered.json", run_json("unrecovered", "--db", db, "--never-resolved", "--format", "json"))
    conversations = [r["conversation_id"] for r in rows][:3]
    if store == "sample_db":
        conversations.append("c14-noname-corrective")  # an error resolved in a later prompt
        conversations.append("b07-replay-corrective")  # a replay
    if store == "text_errors_db":
        assert rows == []  # its errors are unflagged texts: counted as successes
        conversations = ["t-1", "t-2"]  # the fixture's ids (no timestamps: first_ts is 1970)
    if store == "transcripts_db":  # the conversation whose call reuses another call's id
        report = run_json("audit", "--db", db, "--format", "json")
        collided = [v["conversation_id"] for v in report["protocol_violations"]["items"]
                    if v["kind"] == "reused_tool_call_id"]
        assert collided
        doc = run_json("triage", collided[0], "--db", db, "--format", "json")
        assert any(c["is_id_collision"] for p in doc["prompts"] for s in p["steps"] for c in s["tool_calls"])
        conversations.append(collided[0])
    assert conversations
    for conversation in conversations:
        assert_valid("triage.json", run_json("triage", conversation, "--db", db, "--format", "json"))


@needs_samples
def test_triage_marks_a_later_resolution(sample_db: str) -> None:
    doc = run_json("triage", "c14-noname-corrective", "--db", sample_db, "--format", "json")
    calls = [c for p in doc["prompts"] for s in p["steps"] for c in s["tool_calls"]]
    resolved = [c for c in calls if c["resolved_later"]]
    assert [c["resolved_in_prompt"] for c in resolved] == ["c14-noname-corrective-p2"]


@needs_samples
def test_compare_and_check_documents(sample_db: str) -> None:
    doc = run_json("compare", "--db", sample_db, "--a", "agent:concierge", "--b", "agent:back_office", "--format", "json")
    assert_valid("compare.json", doc)
    assert {m["metric"] for m in doc["metrics"]} <= set(metrics.METRIC_KEYS)
    passed = run_json("check", "--db", sample_db, "--max-replay-rate", "0.5", "--format", "json")
    assert_valid("check.json", passed)
    failed = run_json(
        "check", "--db", sample_db, "--max-replay-rate", "0.01", "--min-conversation-recovery-rate", "0.9",
        "--max-generic-templates", "0", "--max-retry-loops", "0", "--max-double-executions", "0",
        "--format", "json", exit_code=3,
    )
    assert_valid("check.json", failed)
    assert {o["figure"] for o in failed["outcomes"]} >= {"replay_rate", "conversation_recovery_rate"}
    gated = run_json(
        "check", "--db", sample_db, "--tool", "check_availability", "--tool", "list_arrivals", "--max-error-rate", "0.1",
        "--max-p95-latency-ms", "100", "--since", "2026-11-16", "--format", "json", exit_code=3,
    )
    assert_valid("check.json", gated)
    assert [(o["tool_name"], o["figure"]) for o in gated["outcomes"]] == [
        ("check_availability", "error_rate"), ("list_arrivals", "error_rate"),
        ("check_availability", "p95_latency_ms"), ("list_arrivals", "p95_latency_ms")]
    assert set(gated["figures"]["tools"]) == {"check_availability", "list_arrivals"}


def test_tag_groupings_on_tau2(tau2_db: str, tmp_path: Path) -> None:
    # --by tag:KEY in metrics, audit (with the timelines --html adds) and check
    rows = run_json("metrics", "--db", tau2_db, "--by", "tag:model", "--format", "json")
    assert len(rows) == 3
    assert_valid("metrics-by.json", rows)
    report = run_json("audit", "--db", tau2_db, "--by", "tag:model", "--html", str(tmp_path / "a.html"),
                      "--limit", "3", "--format", "json")
    assert report["groups"]["items"] and report["timelines"]
    assert any(ch["means"] for w in report["weeks"] for ch in w["changes"].values())
    assert_valid("audit.json", report)
    gated = run_json("check", "--db", tau2_db, "--by", "tag:model", "--min-recovery-rate", "0.5", "--format", "json",
                     exit_code=3)
    assert {o["group"] for o in gated["outcomes"]} == set(gated["figures"]["groups"])
    assert_valid("check.json", gated)


def test_compare_on_tau2(tau2_db: str) -> None:
    doc = run_json("compare", "--db", tau2_db, "--a", "agent:langchain_agent", "--b", "agent:adaptive_agent",
                   "--format", "json")
    assert_valid("compare.json", doc)


@pytest.mark.parametrize("store", STORES)
def test_lint_documents(request: pytest.FixtureRequest, store: str) -> None:
    db = _store(request, store)
    assert_valid("lint-templates.json", run_json("lint", "--db", db, "--format", "json"))


def test_lint_rules_and_messages_documents(tmp_path: Path) -> None:
    assert_valid("lint-rules.json", run_json("lint", "--rules", "--format", "json"))
    one = run_json("lint", "--message", "Error: bad", "--message", "invalid date", "--format", "json", exit_code=3)
    assert_valid("lint-messages.json", one)
    messages = tmp_path / "errors.json"
    messages.write_text(json.dumps({"book_room": ["Error: bad"], "check_in": [
        "check_in '2026-13-01' is not a date: use YYYY-MM-DD, e.g. 2026-12-01"]}))
    per_tool = run_json("lint", "--messages", str(messages), "--format", "json", exit_code=3)
    assert_valid("lint-messages.json", per_tool)
    # the spellings since lint has verbs (issue 20): the same documents
    assert_valid("lint-rules.json", run_json("lint", "rules", "--format", "json"))
    assert run_json("lint", "check", "--message", "Error: bad", "--message", "invalid date", "--format", "json",
                    exit_code=3) == one
    assert run_json("lint", "check", "--messages", str(messages), "--format", "json", exit_code=3) == per_tool
    assert {row.get("tool") for row in per_tool} == {"book_room", "check_in"}


def test_load_quarantine_and_export_documents(tmp_path: Path) -> None:
    db = str(tmp_path / "q.duckdb")
    bad = tmp_path / "mixed.jsonl"
    good = (SAMPLE_LOGS / "back_office.jsonl").read_text().splitlines()[0] if SAMPLE_LOGS.exists() else None
    bad.write_text("\n".join([*([good] if good else []), '{"v": 1, "bad": true}', "not json", ""]))
    load = run_json("load", str(bad), str(TEXT_ERRORS), "--db", db, "--format", "json")
    assert_valid("load.json", load)
    again = run_json("load", str(bad), "--db", db, "--format", "json")
    assert_valid("load.json", again)
    assert again["details"][0]["status"] == "unchanged"
    rows = run_json("quarantine", "--db", db, "--format", "json")
    assert len(rows) == 2
    assert_valid("quarantine.json", rows)
    assert_valid("export.json", run_json("export", "--db", db, "--out", str(tmp_path / "out"), "--format", "json"))


@needs_samples
def test_review_documents(sample_db: str, tmp_path: Path) -> None:
    assert_valid("review-sample.json", run_json("review", "sample", "--db", sample_db, "--n", "4", "--seed", "1",
                                                 "--format", "json"))
    pack = tmp_path / "pack"
    doc = run_json("review", "sample", "--db", sample_db, "--n", "3", "--seed", "2", "--out", str(pack),
                   "--format", "json")
    assert_valid("review-sample.json", doc)
    assert doc["pack"]["files"]
    reviews = pack / "reviews.csv"
    with reviews.open(newline="") as fh:
        table = list(csv.DictReader(fh))
    table[0].update(recovered_cleanly="no", spun="yes", gave_up="no", generic_apology="no", notes="looped")
    table.append({**table[-1], "conversation_id": "", "notes": "no id"})  # rejected: exit 1
    with reviews.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    imported = run_json("review", "import", str(reviews), "--db", sample_db, "--format", "json", exit_code=1)
    assert_valid("review-import.json", imported)
    assert imported["imported"] == 1 and len(imported["errors"]) == 1
    assert_valid("audit.json", run_json("audit", "--db", sample_db, "--format", "json"))


def test_every_schema_is_used_and_every_document_has_one() -> None:
    names = {p.name for p in SCHEMAS.glob("*.json")}
    text = Path(__file__).read_text()
    assert {n for n in names if n != "figures.json" and f'"{n}"' not in text} == set()
    page = (REPO / "docs" / "json-output.md").read_text()
    assert {n for n in names if f"schemas/{n}" not in page} == set()


@needs_samples
def test_resolved_in_prompt_is_set_exactly_when_resolved_later(sample_db: str) -> None:
    rows = run_json("unrecovered", "--db", sample_db, "--format", "json")
    resolved = [r for r in rows if r["resolved_later"]]
    assert [r["resolved_in_prompt"] for r in resolved] == ["c14-noname-corrective-p2"]
    broken = [dict(resolved[0], resolved_in_prompt=None)]
    with pytest.raises(ValidationError):
        validator("unrecovered.json").validate(broken)
    never = run_json("unrecovered", "--db", sample_db, "--never-resolved", "--format", "json")
    assert len(never) == len(rows) - 1 and not any(r["resolved_later"] for r in never)
