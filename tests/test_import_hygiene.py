"""The layering holds: every module imports, collectors pulls in no heavy dependency, analyses never the CLI.

Static: the import-linter contracts in pyproject.toml (``lint-imports``). Dynamic: fresh
interpreters that import every module of a package (found by walking the folders) and list
what got loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("duckdb", "polars", "rich", "typer", "click", "opentelemetry.sdk")
# Modules that need an optional extra (pyproject.toml), and the packages it brings.
CLICKHOUSE_EXTRA = ("sqlglot", "clickhouse_connect", "chdb")
OPTIONAL_EXTRAS = {"loopscope.analyses.store.clickhouse": CLICKHOUSE_EXTRA,
                   "loopscope.analyses.store.clickhouse_sql": CLICKHOUSE_EXTRA}
PACKAGES = {"loopscope.collectors": REPO / "collectors", "loopscope.analyses": REPO / "analyses", "loopscope.cli": REPO / "cli"}


def modules_of(package: str) -> list[str]:
    """Every module of ``package`` by walking its folder (not by importing it)."""
    root = PACKAGES[package]
    names = []
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join((package, *parts)))
    return names


def _import_all(names: list[str], watch: tuple[str, ...]) -> dict[str, object]:
    code = textwrap.dedent(
        """
        import importlib, json, sys, traceback
        names, watch = json.loads(sys.argv[1]), json.loads(sys.argv[2])
        failed = {}
        for name in names:
            try:
                importlib.import_module(name)
            except Exception:
                failed[name] = traceback.format_exc(limit=3)
        print(json.dumps({"failed": failed, "loaded": [m for m in watch if m in sys.modules]}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code, json.dumps(names), json.dumps(list(watch))],
                         check=True, capture_output=True, text=True, cwd="/")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # a module of an optional extra may fail for that extra's package only (when it is not installed)
    result["failed"] = {
        name: tb for name, tb in result["failed"].items()
        if not any(tb.rstrip().endswith(f"No module named '{pkg}'") for pkg in OPTIONAL_EXTRAS.get(name, ()))
    }
    return result


def test_the_walk_finds_the_modules() -> None:
    names = modules_of("loopscope.analyses")
    assert "loopscope.analyses" in names and "loopscope.analyses.lint.ranking" in names and len(names) > 30
    assert "loopscope.cli.render.styles" in modules_of("loopscope.cli")


def test_collector_import_loads_no_heavy_dependency() -> None:
    result = _import_all(modules_of("loopscope.collectors"), HEAVY + ("loopscope.analyses", "loopscope.cli"))
    assert result == {"failed": {}, "loaded": []}


def test_analyses_do_not_import_cli() -> None:
    result = _import_all(modules_of("loopscope.analyses"), ("loopscope.cli",))
    assert result == {"failed": {}, "loaded": []}


def test_every_cli_module_imports() -> None:
    result = _import_all(modules_of("loopscope.cli"), ())
    assert result["failed"] == {}


def _lint_imports(config: Path) -> int:
    from importlinter.cli import lint_imports

    # lint-imports configures logging (dictConfig disables every existing logger): put it back,
    # or the collector's warnings vanish for every test that runs after this one
    import logging

    root = logging.getLogger()
    saved = ({name: lg.disabled for name, lg in root.manager.loggerDict.items() if isinstance(lg, logging.Logger)},
             root.handlers[:], root.level)
    try:
        return lint_imports(config_filename=str(config))
    finally:
        for name, lg in root.manager.loggerDict.items():
            if isinstance(lg, logging.Logger):
                lg.disabled = saved[0].get(name, False)
        root.handlers[:] = saved[1]
        root.setLevel(saved[2])


def test_import_linter_contracts_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert _lint_imports(REPO / "pyproject.toml") == 0


def test_import_linter_reports_a_broken_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the same machinery on a contract the tree does break (cli imports analyses): it must say so
    config = tmp_path / "broken.toml"
    config.write_text(textwrap.dedent(
        """
        [tool.importlinter]
        root_packages = ["loopscope.analyses", "loopscope.cli"]

        [[tool.importlinter.contracts]]
        name = "cli does not import analyses (false on purpose)"
        type = "forbidden"
        source_modules = ["loopscope.cli.commands"]
        forbidden_modules = ["loopscope.analyses"]
        """
    ), encoding="utf-8")
    monkeypatch.chdir(REPO)
    assert _lint_imports(config) == 1
