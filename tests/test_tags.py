"""Tags as the comparison dimension: what the tau2 reader keeps, ``load --tag``, ``--by tag:KEY``.

Expected figures are counted here from the raw tau2-bench JSON (tests/fixtures/tau2), not by
loopscope: a tool call is one entry of an assistant message's ``tool_calls``; the model is
``info.agent_info.llm`` or, in the community file without ``info``, its top-level ``model``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

TAU2 = Path(__file__).resolve().parent / "fixtures" / "tau2"
FILES = sorted(TAU2.glob("*.json"))
SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
runner = CliRunner()


def _raw(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _model(doc: dict[str, Any]) -> str:
    return doc.get("info", {}).get("agent_info", {}).get("llm") or doc["model"]


def _domain(doc: dict[str, Any]) -> str:
    return doc.get("info", {}).get("environment_info", {}).get("domain_name") or doc["domain"]


def _tool_calls(doc: dict[str, Any]) -> int:
    return sum(len(m.get("tool_calls") or []) for s in doc["simulations"] for m in s["messages"]
               if m["role"] == "assistant")


def _invoke(*args: str) -> Any:
    res = runner.invoke(app, list(args))
    return res


def _groups(db: str, by: str, *extra: str) -> dict[str, dict[str, Any]]:
    res = _invoke("metrics", "--db", db, "--by", by, "--format", "json", *extra)
    assert res.exit_code == 0, res.output
    return {row["group"]: row for row in json.loads(res.stdout)}


@pytest.fixture()
def tau2_db(tmp_path: Path) -> str:
    db = str(tmp_path / "tau2.duckdb")
    res = _invoke("load", *map(str, FILES), "--db", db)
    assert res.exit_code == 0, res.output
    return db


def test_tau2_files_keep_model_and_domain_as_tags(tau2_db: str) -> None:
    calls_by_model: Counter[str] = Counter()
    calls_by_domain: Counter[str] = Counter()
    for path in FILES:
        doc = _raw(path)
        calls_by_model[_model(doc)] += _tool_calls(doc)
        calls_by_domain[_domain(doc)] += _tool_calls(doc)
    assert len(calls_by_model) == 3  # claude-opus-4-6, claude-sonnet-4-5, openai/gpt-oss-120b

    by_model = _groups(tau2_db, "tag:model")
    assert {k: v["tool_calls"] for k, v in by_model.items()} == dict(calls_by_model)
    by_domain = _groups(tau2_db, "tag:domain")
    assert {k: v["tool_calls"] for k, v in by_domain.items()} == dict(calls_by_domain)
    assert _groups(tau2_db, "tag:framework").keys() == {"tau2-bench"}
    # the groups split the prompts: together they are every prompt, once
    overall = json.loads(_invoke("metrics", "--db", tau2_db, "--format", "json").stdout)
    assert sum(v["prompts"] for v in by_model.values()) == overall["prompts"]
    # and --tag selects one of them
    one = json.loads(_invoke("metrics", "--db", tau2_db, "--tag", "model=claude-sonnet-4-5", "--format", "json").stdout)
    assert one["tool_calls"] == calls_by_model["claude-sonnet-4-5"]


def test_a_prompt_without_the_tag_is_untagged(tau2_db: str) -> None:
    # only the gpt-4.1 / gpt-oss files name a user simulator model; the community file does not
    by_user = _groups(tau2_db, "tag:user_model")
    medical = _raw(TAU2 / "adaptive_agent_medical_triage_opus46_cascata.json")
    assert by_user["(untagged)"]["tool_calls"] == _tool_calls(medical)
    assert set(by_user) == {"(untagged)", "gpt-4.1", "openai/gpt-oss-120b"}


def test_load_tag_adds_a_tag_that_wins_over_the_files(tmp_path: Path) -> None:
    db = str(tmp_path / "t.duckdb")
    sonnet = TAU2 / "claude-sonnet-4-5_airline_default_gpt4.1_1trials.json"
    medical = TAU2 / "adaptive_agent_medical_triage_opus46_cascata.json"
    assert _invoke("load", str(sonnet), "--db", db, "--tag", "model=sonnet-run-b", "--tag", "arm=b").exit_code == 0
    assert _invoke("load", str(medical), "--db", db, "--tag", "arm=a").exit_code == 0
    by_model = _groups(db, "tag:model")
    assert {k: v["tool_calls"] for k, v in by_model.items()} == {
        "sonnet-run-b": _tool_calls(_raw(sonnet)),
        "claude-opus-4-6": _tool_calls(_raw(medical)),
    }
    by_arm = _groups(db, "tag:arm")
    assert {k: v["tool_calls"] for k, v in by_arm.items()} == {"b": _tool_calls(_raw(sonnet)), "a": _tool_calls(_raw(medical))}
    # the file's own tags are kept beside the added ones
    assert _groups(db, "tag:domain").keys() == {"airline", "medical_triage"}


def test_load_tag_on_records_files(tmp_path: Path) -> None:
    # sample_logs/ are collector records that already carry a tag (mode=blind|corrective)
    db = str(tmp_path / "s.duckdb")
    assert _invoke("load", str(SAMPLE_LOGS), "--db", db, "--tag", "deploy=v42").exit_code == 0
    overall = json.loads(_invoke("metrics", "--db", db, "--format", "json").stdout)
    tagged = json.loads(_invoke("metrics", "--db", db, "--tag", "deploy=v42", "--format", "json").stdout)
    assert tagged == overall and overall["prompts"] > 0
    modes = _groups(db, "tag:mode")
    in_files = {json.loads(line).get("tags", {}).get("mode") for f in SAMPLE_LOGS.glob("*.jsonl")
                for line in f.read_text(encoding="utf-8").splitlines() if line.strip()}
    assert set(modes) == in_files - {None}
    assert sum(m["prompts"] for m in modes.values()) == overall["prompts"]


def test_load_tag_says_when_a_file_was_already_loaded(tmp_path: Path) -> None:
    db = str(tmp_path / "again.duckdb")
    assert _invoke("load", str(SAMPLE_LOGS), "--db", db).exit_code == 0
    again = _invoke("load", str(SAMPLE_LOGS), "--db", db, "--tag", "deploy=v43")
    assert again.exit_code == 0
    assert "keep their tags" in " ".join(again.stderr.split())
    res = _invoke("metrics", "--db", db, "--tag", "deploy=v43")
    assert res.exit_code == 1 and "no prompt has tag deploy=v43" in " ".join(res.output.split())


@pytest.mark.parametrize("bad", ["deploy", "=v42"])
def test_load_tag_must_be_key_value(tmp_path: Path, bad: str) -> None:
    res = _invoke("load", str(SAMPLE_LOGS), "--db", str(tmp_path / "x.duckdb"), "--tag", bad)
    assert res.exit_code == 1
    assert "is not KEY=VALUE" in res.output
    assert "records loaded" not in res.output  # refused before any work


@pytest.mark.parametrize("by", ["tag:", "model", "tag"])
def test_by_rejects_what_is_not_a_grouping(tau2_db: str, by: str) -> None:
    res = _invoke("metrics", "--db", tau2_db, "--by", by)
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    assert "tag:model" in res.output  # the hint shows the form


def test_by_tag_key_is_a_bound_value_not_sql(tau2_db: str) -> None:
    res = _invoke("metrics", "--db", tau2_db, "--by", "tag:x') OR 1=1 --", "--format", "json")
    assert res.exit_code == 0, res.output
    assert [row["group"] for row in json.loads(res.stdout)] == ["(untagged)"]


def test_check_gates_each_tag_value(tau2_db: str) -> None:
    # The medical-triage excerpt's 26 errors are never recovered (fixtures/tau2/README.md): its
    # model fails a 50% minimum; the sonnet file's one error is recovered in its prompt.
    res = _invoke("check", "--db", tau2_db, "--by", "tag:model", "--min-recovery-rate", "0.5", "--format", "json")
    assert res.exit_code == 3, res.output
    doc = json.loads(res.stdout)
    status = {o["group"]: o["status"] for o in doc["outcomes"]}
    assert status["claude-opus-4-6"] == "violated"
    assert status["claude-sonnet-4-5"] == "ok"
    assert set(status) == {"claude-opus-4-6", "claude-sonnet-4-5", "openai/gpt-oss-120b"}
    assert doc["figures"]["by"] == "tag:model"
    assert doc["figures"]["groups"]["claude-opus-4-6"]["recovery_rate"] == 0
    table = _invoke("check", "--db", tau2_db, "--by", "tag:model", "--min-recovery-rate", "0.5")
    lines = [line for line in table.stdout.splitlines() if line.startswith(("OK", "VIOLATED", "SKIPPED"))]
    assert len(lines) == 3
    assert any(line.startswith("VIOLATED") and "model=claude-opus-4-6: recovery_rate 0.0%" in line for line in lines)
    # one group only: the gate passes
    only = _invoke("check", "--db", tau2_db, "--by", "tag:model", "--tag", "model=claude-sonnet-4-5",
                   "--min-recovery-rate", "0.5")
    assert only.exit_code == 0, only.output


def test_audit_by_tag_has_one_series_per_value(tau2_db: str) -> None:
    res = _invoke("audit", "--db", tau2_db, "--by", "tag:model", "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["groups"]["by"] == "tag:model"
    calls = Counter()
    for path in FILES:
        calls[_model(_raw(path))] += _tool_calls(_raw(path))
    assert {g["group"]: g["tool_calls"] for g in doc["groups"]["items"]} == dict(calls)
    for g in doc["groups"]["items"]:
        assert sum(w["prompts"] for w in g["weeks"]) == g["prompts"]
    table = _invoke("audit", "--db", tau2_db, "--by", "tag:model")
    assert "Per tag:model" in table.stdout
    assert "claude-opus-4-6" in table.stdout
    plain = json.loads(_invoke("audit", "--db", tau2_db, "--format", "json").stdout)
    assert plain["groups"] is None
