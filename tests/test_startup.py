"""Small data stays instant (issue 14): what a command on sample_logs/ does not import or build.

Not a timing test (benchmarks/startup_bench.py times it): these check the causes. A command
parses its options without pydantic (cli/coercion.py) to the same values Typer's pydantic
route gives, --help loads no DuckDB, and a command on small data loads no polars.
"""

from __future__ import annotations

import enum
import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from loopscope.cli.app import app
from loopscope.cli.coercion import FastCoercion, install

REPO = Path(__file__).resolve().parent.parent
SAMPLE = str(REPO / "sample_logs")
ENTRY = "import sys; from loopscope.cli import main; sys.argv[0] = 'loopscope'; main()"
# what got imported (cli/lazy_rich.py's stand-ins for modules not imported yet do not count)
PROBE = ENTRY.replace("main()", "\ntry:\n    main()\nfinally:\n    print(json.dumps(sorted({m.split('.')[0] for m, v in sys.modules.items() if type(v).__name__ != '_Deferred'})), file=sys.stderr)")


def _modules(*args: str) -> tuple[set[str], str]:
    code = "import json\n" + PROBE
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd="/",
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})
    assert proc.returncode in (0, 3), proc.stderr
    return set(json.loads(proc.stderr.strip().splitlines()[-1])), proc.stdout


def test_help_loads_no_duckdb_pydantic_or_polars() -> None:
    loaded, out = _modules("--help")
    assert "Load and measure" in out
    assert not loaded & {"duckdb", "pydantic", "polars", "pyarrow", "markdown_it", "pygments"}


def test_deferred_rich_modules_give_the_real_thing_on_use() -> None:
    """cli/lazy_rich.py: rich.markdown and rich.traceback load when used, and behave as themselves."""
    code = """
import io, sys
from loopscope.cli import lazy_rich
lazy_rich.defer()
from rich.markdown import Markdown
from rich.traceback import Traceback
from rich.console import Console
assert "markdown_it" not in sys.modules and "pygments" not in sys.modules
md = Markdown("# Title\\n\\n**bold** text")
import rich.markdown as real
assert type(md) is real.Markdown and isinstance(md, Markdown) and real.Heading
out = io.StringIO()
Console(file=out, width=40).print(md)
assert "Title" in out.getvalue() and "bold text" in out.getvalue()
try:
    1 / 0
except ZeroDivisionError as exc:
    tb = Traceback.from_exception(type(exc), exc, exc.__traceback__)
assert type(tb).__module__ == "rich.traceback" and isinstance(tb, Traceback)
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert proc.stdout.strip() == "ok", proc.stderr


def test_a_markdown_help_still_renders_through_the_deferred_module() -> None:
    import loopscope.cli.app  # noqa: F401  (installs the stand-ins in this process)

    md_app = typer.Typer(rich_markup_mode="markdown")

    @md_app.command()
    def hello() -> None:
        """Say **hello** in `code`."""

    res = CliRunner().invoke(md_app, ["--help"], env={"COLUMNS": "80"})
    assert res.exit_code == 0 and "Say hello in code" in " ".join(res.output.split())


def test_json_output_loads_no_rich() -> None:
    loaded, out = _modules("metrics", SAMPLE, "--db", ":memory:", "-f", "json", "--week", "2026-W47")
    assert json.loads(out)["prompts"] == 11
    assert not loaded & {"rich", "pydantic", "polars", "pyarrow"}


@pytest.mark.parametrize("args", [["metrics", SAMPLE, "--db", ":memory:", "--week", "2026-W47"],
                                  ["audit", SAMPLE, "--db", ":memory:", "--limit", "3"],
                                  ["lint", "check", "-m", "Failed"]], ids=lambda a: a[0])
def test_a_command_on_small_data_loads_no_pydantic_or_polars(args: list[str]) -> None:
    loaded, out = _modules(*args)
    assert out.strip()
    assert not loaded & {"pydantic", "polars", "pyarrow"}


class Color(enum.Enum):
    red = "red"
    blue = "blue"


def _typer_param(annotation: object, **option: object):
    """A parameter as Typer builds it, for a one-option command."""
    from typing import Annotated

    shell = typer.Typer()

    def one(x=None):  # noqa: ANN001, ANN202 - annotated below, with the case's type
        pass

    one.__annotations__ = {"x": Annotated[annotation, typer.Option("--x", **option)]}
    shell.command()(one)

    command = typer.main.get_command(shell)
    [param] = [p for p in command.params if p.name == "x"]
    return param, command


@pytest.mark.parametrize(
    ("annotation", "option", "values"),
    [
        (str, {}, ["json", "", "ünï", "--x"]),
        (int, {}, ["5", "-3", "+7", "007", 12]),
        (int, {"min": 1}, ["1", "50"]),
        (float, {}, ["0.5", "1", "-2.5e3", ".5", 0.25]),
        (Color, {}, ["red", "blue", Color.red]),
        (Path, {}, ["sample_logs", "/tmp/x.duckdb", "a b/c", Path("p")]),
        (Path, {"file_okay": False}, ["/no/such/folder"]),
        (list[str], {}, [["a", "b"], ["think"], [""]]),
        (list[Path], {}, [["x.jsonl", "logs/"]]),
        (bool, {}, [True, False]),
    ],
    ids=lambda v: getattr(v, "__name__", None) or str(v)[:20],
)
def test_fast_coercion_gives_typers_values(annotation: object, option: dict, values: list) -> None:
    from typer._coercion import build_runtime_param

    param, command = _typer_param(annotation, **option)
    assert FastCoercion.handles(param.type_descriptor)
    fast, typers = FastCoercion(param.type_descriptor), build_runtime_param(param.type_descriptor)
    ctx = command.make_context("one", [], resilient_parsing=True)
    for value in values:
        got, want = fast.coerce(value, param, ctx), typers.coerce(value, param=param, ctx=ctx)
        assert got == want and type(got) is type(want), value


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["unrecovered", "--limit", "abc"], "valid integer"),
        (["quarantine", "--limit", "0"], "greater than or equal to 1"),
        (["metrics", "--format", "yaml"], "'yaml' is not one of"),
        (["check", "--min-recovery-rate", "most"], "valid number"),
    ],
)
def test_values_that_do_not_parse_get_typers_own_error(args: list[str], message: str) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1 and message in " ".join(res.output.replace("│", " ").split())


def test_every_option_of_every_command_takes_the_fast_route() -> None:
    """A new option of another type would silently bring pydantic back: this names it."""
    root = typer.main.get_command(app)
    install(root)
    slow = []

    def walk(cmd, path):  # noqa: ANN001, ANN202
        for p in cmd.params:
            if getattr(p, "type_descriptor", None) is not None and not isinstance(p._runtime_param, FastCoercion):
                slow.append(f"{path} {p.name}")
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(root, "loopscope")
    assert slow == []


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, cwd="/",
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})


def test_a_run_builds_only_the_command_it_names() -> None:
    """cli/app.py main(): Typer builds the options of the named command only; everything else is Typer's as before."""
    code = ENTRY.replace("main()", """
import typer.main
built = []
_orig = typer.main.get_command_from_info
def spy(*args, **kw):
    info = kw.get("command_info") or args[0]
    built.append(info.name)
    return _orig(*args, **kw)
typer.main.get_command_from_info = spy
from loopscope.cli.app import app
before = (list(app.registered_commands), list(app.registered_groups))
try:
    main()
finally:
    assert (app.registered_commands, app.registered_groups) == before  # restored
    print("BUILT", sorted(set(built)), file=sys.stderr)""")

    def built(*args: str) -> tuple[int, list[str], str]:
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd="/",
                              env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})
        names = [line for line in proc.stderr.splitlines() if line.startswith("BUILT")]
        assert names, proc.stderr
        return proc.returncode, json.loads(names[-1][len("BUILT "):].replace("'", '"')), proc.stdout + proc.stderr

    code_, names, out = built("metrics", SAMPLE, "--db", ":memory:", "-f", "json")
    assert code_ == 0 and names == ["metrics"], out
    assert json.loads(out[: out.rindex("}") + 1])["prompts"] == 41
    code_, names, out = built("lint", "check", "-m", "Invalid date 'x'. Use YYYY-MM-DD.")
    assert code_ == 0 and "check" in names and "metrics" not in names, out
    # --help, a mistyped command, an option first: every command, as Typer always did
    code_, names, out = built("--help")
    assert code_ == 0 and {"metrics", "audit", "check"} <= set(names) and "Load and measure" in out
    code_, names, out = built("metrix")
    assert code_ == 1 and "Did you mean 'metrics'" in out and "audit" in names
    code_, names, out = built("--debug", "metrics", SAMPLE, "--db", ":memory:")
    assert code_ == 0 and "audit" in names and "prompts" in out
