"""The command structure is regular (issue 20): one selection bundle on every analysis, nouns with
verbs as groups, the old spellings still working with a one-line notice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from loopscope.cli.app import app

REPO = Path(__file__).resolve().parent.parent
SAMPLE = str(REPO / "sample_logs")
MESSAGES = REPO / "tests" / "fixtures" / "messages"
runner = CliRunner()

READING = {"--db", "--input-format", "--scratchpad-tool", "--messages-key", "--id-key", "--error-when", "--agent-name"}
WINDOW = {"--since", "--until", "--week", "--agent", "--tag"}
ANALYSES = [("metrics",), ("unrecovered",), ("lint", "rank"), ("audit",), ("review", "sample"), ("compare",),
            ("check",), ("export",)]


def _command(path: tuple[str, ...]):  # the click command behind `loopscope PATH...`
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return cmd


def _options(path: tuple[str, ...]) -> set[str]:
    return {opt for p in _command(path).params for opt in p.opts if opt.startswith("--")}


def _has_paths(path: tuple[str, ...]) -> bool:
    return any(p.name == "paths" and p.param_type_name == "argument" for p in _command(path).params)


@pytest.mark.parametrize("path", ANALYSES, ids=" ".join)
def test_every_analysis_takes_the_whole_bundle(path: tuple[str, ...]) -> None:
    assert READING | WINDOW <= _options(path)
    assert _has_paths(path)


@pytest.mark.parametrize("path", [("load",), ("triage",)], ids=" ".join)
def test_load_and_triage_read_paths_the_same_way_without_a_window(path: tuple[str, ...]) -> None:
    options = _options(path)
    # load's --tag is its own: it adds a tag to what it loads (there is no window to filter)
    own = {"--tag"} if path == ("load",) else set()
    assert READING <= options and not ((WINDOW - own) & options)
    assert _has_paths(path)
    if own:
        tag = next(p for p in _command(path).params if "--tag" in p.opts)
        assert tag.help.startswith("Add this tag")


def test_the_bundle_is_spelled_and_documented_once() -> None:
    helps = {}
    for path in [*ANALYSES, ("load",), ("triage",)]:
        for p in _command(path).params:
            if path == ("load",) and p.opts[0] == "--tag":
                continue  # load's own --tag (adds a tag), checked above
            if p.opts[0] in READING | WINDOW:
                helps.setdefault(p.opts[0], set()).add(p.help)
    assert {flag: len(texts) for flag, texts in helps.items()} == {flag: 1 for flag in READING | WINDOW}


def _json(*args: str) -> object:
    res = runner.invoke(app, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_week_is_the_window_of_its_days_on_every_command() -> None:
    # ISO week 2026-W47 is Monday 2026-11-16 to Sunday 2026-11-22
    week = _json("metrics", SAMPLE, "--db", ":memory:", "--week", "2026-W47")
    days = _json("metrics", SAMPLE, "--db", ":memory:", "--since", "2026-11-16", "--until", "2026-11-23")
    everything = _json("metrics", SAMPLE, "--db", ":memory:")
    assert week == days and week["prompts"] < everything["prompts"]
    for verb in (["unrecovered"], ["lint", "rank"]):
        w = _json(*verb, SAMPLE, "--db", ":memory:", "--week", "2026-W47")
        d = _json(*verb, SAMPLE, "--db", ":memory:", "--since", "2026-11-16", "--until", "2026-11-23")
        assert w == d, verb
    gate = runner.invoke(app, ["check", SAMPLE, "--db", ":memory:", "--week", "2026-W47", "--max-open-prompts", "0"])
    assert gate.exit_code == 3 and "VIOLATED" in gate.stdout  # the week has the one open prompt


def test_reader_options_reach_every_command_not_only_load() -> None:
    # openai_text_errors.jsonl counted by hand in test_messages_cli: 2 prompts, 5 calls, 3 errors, 1 recovered
    path = str(MESSAGES / "openai_text_errors.jsonl")
    m = _json("metrics", path, "--db", ":memory:", "--input-format", "messages", "--error-when", "prefix")
    assert (m["prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (2, 5, 3, 1)
    plain = _json("metrics", path, "--db", ":memory:", "--input-format", "messages")
    assert plain["errors"] == 0
    rows = _json("unrecovered", path, "--db", ":memory:", "--error-when", "prefix")
    assert [(r["conversation_id"], r["tool_call_id"]) for r in rows] == [("t-2", "call_4")]


def test_scratchpad_tool_applies_to_the_analysis(tmp_path: Path) -> None:
    # one prompt: lookup fails, think succeeds, end_turn. think is a scratchpad by default: no recovery.
    head = {"v": 1, "ts": "2026-11-02T10:00:00Z", "conversation_id": "c", "prompt_id": "p", "agent": "a"}
    call = {**head, "kind": "tool_call", "attempts": 1, "replayed": False}
    lines = [
        {**call, "tool_call_id": "1", "tool_name": "lookup", "step": 0, "outcome": "permanent_fail", "is_error": True,
         "error_message": "No order '7'"},
        {**call, "tool_call_id": "2", "tool_name": "think", "step": 1, "outcome": "ok", "is_error": False},
        {**head, "kind": "loop_exit", "exit_reason": "end_turn"},
    ]
    log = tmp_path / "one.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    default = _json("metrics", str(log), "--db", ":memory:")
    assert (default["tool_calls"], default["errors"], default["recovered_errors"]) == (2, 1, 0)
    assert _json("metrics", str(log), "--db", ":memory:", "--scratchpad-tool", "")["recovered_errors"] == 1


def test_compare_window_narrows_both_cohorts() -> None:
    base = ("compare", SAMPLE, "--db", ":memory:")
    windowed = _json(*base, "--week", "2026-W47", "--a", "tag:mode=blind", "--b", "tag:mode=corrective")
    spelled = _json(*base, "--a", "tag:mode=blind,week:2026-W47", "--b", "tag:mode=corrective,week:2026-W47")
    whole = _json(*base, "--a", "tag:mode=blind", "--b", "tag:mode=corrective")
    assert windowed["metrics"] == spelled["metrics"] != whole["metrics"]
    clash = runner.invoke(app, [*base, "--agent", "concierge", "--a", "agent:back_office", "--b", "agent:concierge"])
    assert clash.exit_code == 1 and "names no agent among --agent concierge" in clash.output


def test_lint_is_a_noun_with_verbs_and_rank_is_the_default() -> None:
    assert set(_command(("lint",)).commands) == {"rank", "check", "rules"}
    short = runner.invoke(app, ["lint", SAMPLE, "--db", ":memory:", "-f", "json"])
    spelled = runner.invoke(app, ["lint", "rank", SAMPLE, "--db", ":memory:", "-f", "json"])
    assert short.exit_code == spelled.exit_code == 0
    assert json.loads(short.stdout) == json.loads(spelled.stdout) and json.loads(short.stdout)
    assert short.stderr == spelled.stderr == ""
    checked = runner.invoke(app, ["lint", "check", "-m", "Failed", "-f", "json"])
    assert checked.exit_code == 3 and json.loads(checked.stdout)[0]["generic"] is True and checked.stderr == ""
    assert runner.invoke(app, ["lint", "check", "-m", "Invalid date 'x'. Use YYYY-MM-DD."]).exit_code == 0
    nothing = runner.invoke(app, ["lint", "check"])
    assert nothing.exit_code == 1 and "nothing to check" in nothing.output
    rules = runner.invoke(app, ["lint", "rules", "-f", "json"])
    assert rules.exit_code == 0 and json.loads(rules.stdout)[0]["rule_id"] == "LS101" and rules.stderr == ""


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [
        (["lint", "--message", "Failed"], ["lint", "check", "--message", "Failed"], 3),
        (["lint", "-m", "Failed", "--strict"], ["lint", "check", "-m", "Failed", "--strict"], 3),
        (["lint", "--rules"], ["lint", "rules"], 0),
        (["sample", SAMPLE, "--db", ":memory:", "--n", "3", "--seed", "1"],
         ["review", "sample", SAMPLE, "--db", ":memory:", "--n", "3", "--seed", "1"], 0),
    ],
)
def test_old_spellings_still_work_with_one_line_notice(old: list[str], new: list[str], code: int) -> None:
    before, after = runner.invoke(app, [*old, "-f", "json"]), runner.invoke(app, [*new, "-f", "json"])
    assert before.exit_code == after.exit_code == code
    assert json.loads(before.stdout) == json.loads(after.stdout)
    notice = before.stderr.strip().splitlines()
    assert len(notice) == 1 and "is now 'loopscope " + " ".join(new[:2 if new[0] in ("lint", "review") else 1]) in notice[0]
    assert "is now" not in after.stderr


def test_old_spellings_are_hidden_from_help() -> None:
    root = runner.invoke(app, ["--help"], env={"COLUMNS": "120"}).stdout
    assert "│ sample " not in root and "│ review " in root and "│ lint " in root
    rank = runner.invoke(app, ["lint", "rank", "--help"], env={"COLUMNS": "120"}).stdout
    assert "--rules" not in rank and "--message " not in rank and "--strict" not in rank and "--week" in rank
