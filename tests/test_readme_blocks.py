"""The README's main console examples print what the README shows.

The quick start (``metrics sample_logs/``), the message-array examples (tau2-bench, text-marked
errors), the OpenTelemetry exports example and the CI gate are run through the CLI, command by
command, in a folder holding copies of the files they name, and each command's output (stdout and
stderr, as a terminal shows them) is compared with the lines under it in the README. Blocks are
found by their first command, so moving or rewording the prose around them does not matter; a
block that is renamed or dropped fails here by name.

Comparison: at the README's width (COLUMNS=100, whatever the terminal running the tests), with
runs of whitespace collapsed, so column alignment and where a long line wraps do not matter but
every figure, label, note and line of the output does. A ``$ echo $?`` line checks the previous
command's exit code, as does ``CMD >/dev/null 2>&1; echo $?`` the exit code of CMD.
"""

from __future__ import annotations

import difflib
import glob
import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.cli.app import app

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"

BLOCKS = [  # the first command of each guarded block, as the README spells it
    pytest.param("loopscope metrics sample_logs/", id="quick-start"),
    pytest.param("loopscope load --db tau2.duckdb tests/fixtures/tau2/*.json", id="tau2"),
    pytest.param("loopscope load --db chat.duckdb --input-format messages --error-when prefix "
                 "tests/fixtures/messages/openai_text_errors.jsonl", id="text-errors"),
    pytest.param("loopscope load --db otel.duckdb tests/fixtures/otlp/openai_agents_*.jsonl", id="otlp"),
    pytest.param("loopscope check sample_logs/ --db :memory: --min-recovery-rate 0.6 --max-p99-tool-calls 25 "
                 "--max-replay-rate 0.05", id="check-gate"),
]
COPIED = ["sample_logs", "tests/fixtures/tau2", "tests/fixtures/messages", "tests/fixtures/otlp"]


def console_blocks(text: str) -> list[list[str]]:
    """Every ```console block of a Markdown text, as its lines."""
    return [m.group(1).split("\n") for m in re.finditer(r"^```console\n(.*?)\n^```$", text, re.M | re.S)]


def steps(block: list[str]) -> list[tuple[str, list[str]]]:
    """A block as (command, the output lines shown under it) pairs."""
    out: list[tuple[str, list[str]]] = []
    for line in block:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def normalised(lines: list[str]) -> list[str]:
    """The words of some lines, in order: alignment, blank lines and where a line wraps do not count."""
    return " ".join(" ".join(lines).split()).split(" ") if any(l.strip() for l in lines) else []


def the_block(first_command: str) -> list[str]:
    found = [b for b in console_blocks(README.read_text()) if b and b[0] == "$ " + first_command]
    assert len(found) == 1, f"README.md has {len(found)} console blocks starting with `$ {first_command}`"
    return found[0]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for rel in COPIED:
        shutil.copytree(REPO / rel, tmp_path / rel)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")  # the README's width
    monkeypatch.setenv("TERMINAL_WIDTH", "100")
    return tmp_path


@pytest.mark.parametrize("first_command", BLOCKS)
def test_readme_block_prints_what_the_readme_shows(first_command: str, workdir: Path) -> None:
    runner = CliRunner()
    last_code: int | None = None
    for command, shown in steps(the_block(first_command)):
        if command == "echo $?":
            assert last_code is not None
            assert [str(last_code)] == [l.strip() for l in shown if l.strip()], f"exit code after: {command}"
            continue
        code_only = command.endswith("; echo $?")  # `CMD >/dev/null 2>&1; echo $?`: only its exit code
        if code_only:
            command = command.removesuffix("; echo $?").replace(">/dev/null", "").replace("2>&1", "")
        argv = shlex.split(command)
        assert argv[0] == "loopscope", command
        args = [m for a in argv[1:] for m in (sorted(glob.glob(a)) if "*" in a else [a])]
        result = runner.invoke(app, args, catch_exceptions=False)
        last_code = result.exit_code
        if code_only:
            assert [str(last_code)] == [l.strip() for l in shown if l.strip()], f"exit code of: {command}"
            continue
        printed = result.output.split("\n")
        if normalised(printed) != normalised(shown):
            diff = "\n".join(difflib.unified_diff(shown, [l.rstrip() for l in printed], "README.md", "printed",
                                                  lineterm=""))
            pytest.fail(f"`$ {command}` prints other than README.md shows (whitespace aside):\n{diff}")
