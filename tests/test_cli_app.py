"""The CLI shell: help, panels, and the exit-code contract shared by every command."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from loopscope.analyses.errors import LoopscopeError
from loopscope.cli.app import PANELS, app, handle_errors

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


def _registered() -> set[str]:
    names = {c.name for c in app.registered_commands}
    names |= {g.name for g in app.registered_groups}
    return names


def test_every_command_has_a_panel_and_teaching_help() -> None:
    assert _registered() == set(PANELS)
    out = runner.invoke(app, ["--help"])
    assert out.exit_code == 0
    for panel in set(PANELS.values()):
        assert panel in out.output
    for name in PANELS:
        res = runner.invoke(app, [name, "--help"])
        assert res.exit_code == 0, name
        assert "Usage:" in res.output and len(res.output.splitlines()) > 5, name


def test_every_command_is_documented() -> None:
    docs = (REPO / "README.md").read_text() + "".join(p.read_text() for p in (REPO / "docs").glob("*.md"))
    for name in PANELS:
        assert f"loopscope {name}" in docs, f"loopscope {name} is not documented"


def test_usage_errors_exit_1() -> None:
    assert runner.invoke(app, ["no-such-verb"]).exit_code == 1
    assert runner.invoke(app, ["metrics", "--no-such-option"]).exit_code == 1
    assert runner.invoke(app, ["metrics", "--format", "yaml"]).exit_code == 1


def _shell(fn) -> typer.Typer:  # a one-command app using the shared error handling
    shell = typer.Typer()
    shell.command()(handle_errors(fn))
    return shell


def test_user_errors_exit_1_with_the_hint_and_no_traceback() -> None:
    def bad() -> None:
        raise LoopscopeError("no such file: x.jsonl", hint="check the path")

    res = CliRunner().invoke(_shell(bad), [])
    assert res.exit_code == 1
    assert "no such file: x.jsonl" in res.output and "check the path" in res.output
    assert "Traceback" not in res.output


def test_internal_errors_exit_2_with_a_one_line_message(monkeypatch) -> None:
    def broken() -> None:
        raise RuntimeError("\x1b[31mboom[/red]")

    res = CliRunner().invoke(_shell(broken), [])
    assert res.exit_code == 2
    assert "internal error" in res.output and "Traceback" not in res.output
    assert "\x1b" not in res.output


def test_a_failed_gate_exits_3_distinct_from_a_mistyped_option(tmp_path) -> None:
    """CI reads the code: 3 is "the gate ran and said no", 1 is "the gate did not run" (issue 20)."""
    from pathlib import Path

    logs = str(Path(__file__).resolve().parent.parent / "sample_logs")
    failed = runner.invoke(app, ["check", logs, "--db", ":memory:", "--min-recovery-rate", "0.99"])
    assert failed.exit_code == 3 and "VIOLATED" in failed.output
    passed = runner.invoke(app, ["check", logs, "--db", ":memory:", "--min-recovery-rate", "0.01"])
    assert passed.exit_code == 0 and "check passed" in passed.output
    mistyped = runner.invoke(app, ["check", logs, "--db", ":memory:", "--min-recovery-rat", "0.99"])
    assert mistyped.exit_code == 1
    assert runner.invoke(app, ["lint", "--message", "Failed"]).exit_code == 3
    assert runner.invoke(app, ["lint", "--mesage", "Failed"]).exit_code == 1


def test_root_help_states_the_exit_codes() -> None:
    out = " ".join(runner.invoke(app, ["--help"]).output.replace("│", " ").split())
    assert "Exit codes" in out and "3 a gate failed" in out
