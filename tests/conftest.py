"""Shared test setup: a fixed terminal width and an isolated environment."""

from __future__ import annotations

import os

# Typer/rich read the width at import time; fix it before anything imports them.
os.environ["TERMINAL_WIDTH"] = "200"
os.environ["COLUMNS"] = "200"

import shutil  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

# The bytecode cache on, for this process and the Python processes the tests start. With
# PYTHONDONTWRITEBYTECODE=1 (this machine's shells set it; docs/performance.md) nothing writes
# __pycache__: every pytest worker rewrites the asserts of every test module from source, and
# every `python -m loopscope` / agent subprocess compiles loopscope's modules again (about 5 s
# of CPU per worker and 0.05 s per subprocess). The caches go where Python and pytest put them
# (__pycache__, ignored by git); what a test checks does not depend on them.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

REPO = Path(__file__).resolve().parent.parent
SAMPLE_LOGS = REPO / "sample_logs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in its own folder with no loopscope settings from outside."""
    monkeypatch.chdir(tmp_path)
    for var in ("LOOPSCOPE_DB", "LOOPSCOPE_DEBUG", "NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERMINAL_WIDTH", "200")
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(autouse=True, scope="session")
def _loopscope_command_built_once() -> Iterator[None]:
    """``CliRunner().invoke(app, ...)`` builds the click command of loopscope's app once per test
    process, not at every call.

    Typer's CliRunner turns every registered command's signature into click options on each
    ``invoke`` (about 10 ms for loopscope's commands, some thousands of calls in the suite). That
    command depends only on what is registered: it is kept, and built again whenever the app's
    registered commands, groups or callback are not the same objects. Other Typer apps (the tests'
    one-command shells) are built at each call, as before; ``loopscope`` run as a program builds
    its own (cli/app.py main()), and the tests that run it as a subprocess still do. Patched after
    collection, so the test modules have imported loopscope.cli.app (and its lazy rich) first.
    """
    import typer.testing

    build = typer.testing._get_command
    kept: list[Any] = [(), None]  # [what was registered, the command built from it]

    def get_command(typer_app: Any) -> Any:
        cli_app = sys.modules.get("loopscope.cli.app")
        if cli_app is None or typer_app is not getattr(cli_app, "app", None):
            return build(typer_app)
        registered = (typer_app, typer_app.registered_callback, *typer_app.registered_commands, None,
                      *typer_app.registered_groups)
        if len(kept[0]) != len(registered) or any(a is not b for a, b in zip(kept[0], registered)):
            kept[:] = [registered, build(typer_app)]
        return kept[1]

    typer.testing._get_command = get_command  # type: ignore[attr-defined]
    yield
    typer.testing._get_command = build  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def loaded_store_template(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Path]:
    """``loaded_store_template(source)``: the store file holding ``loopscope load source``.

    The load runs through the CLI once per test process (its exit code checked). The file is
    shared: copy it before changing it (``loaded_store`` does).
    """
    templates: dict[str, Path] = {}

    def template(source: Path) -> Path:
        key = str(Path(source).resolve())
        if key not in templates:
            from typer.testing import CliRunner

            from loopscope.cli.app import app

            path = tmp_path_factory.mktemp("loaded-store") / "store.duckdb"
            res = CliRunner().invoke(app, ["load", key, "--db", str(path)])
            assert res.exit_code == 0, res.output
            templates[key] = path
        return templates[key]

    return template


@pytest.fixture
def loaded_store(loaded_store_template: Callable[[Path], Path], tmp_path: Path) -> Callable[[Path], Path]:
    """``loaded_store(source)``: a store file in ``tmp_path`` holding ``loopscope load source``.

    The load runs through the CLI once per test process (``loaded_store_template``); each test gets
    its own copy of that store file, to read or change. For tests whose subject is what is done
    with a loaded store, not the load (a load's own results are tested on fresh stores).
    """

    def make(source: Path, name: str = "t.duckdb") -> Path:
        path = tmp_path / name
        if path.exists():
            raise FileExistsError(path)
        shutil.copyfile(loaded_store_template(source), path)
        return path

    return make


@pytest.fixture
def span_recorder() -> Iterator[tuple[Any, Any]]:
    """``(tracer_provider, exporter)``: an OpenTelemetry SDK provider that keeps every finished span
    in the in-memory exporter (``exporter.get_finished_spans()``); shut down after the test."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


@pytest.fixture
def wait_for() -> Callable[..., None]:
    """``wait_for(cond, timeout=10.0)``: poll ``cond()`` every 10 ms until it is true; the test
    fails ("timed out") if it is still false after ``timeout`` seconds."""

    def wait(cond: Callable[[], object], timeout: float = 10.0) -> None:
        end = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < end, "timed out"
            time.sleep(0.01)

    return wait


# --------------------------------------------------------------------------- parallel runs (pytest-xdist)
#
# The README's command runs the suite on every core (``-n logical``; addopts has ``--dist loadgroup``). Two rules keep
# that safe and cheap:
#
# - A test module with a module- or class-scoped fixture runs whole on one worker (its own
#   ``xdist_group``, named after the file): the expensive setup is built once, as in a serial run,
#   and the module's tests keep their order. Other tests are spread one by one.
# - Tests that compare timings (linear-time guards, the collector's "the host thread never waits"
#   guards) carry ``@pytest.mark.xdist_group("timing")``: one worker runs them one after another,
#   so two timing tests never compete with each other for the two cores. A new timing test
#   takes the same mark.
#
# Without ``-n`` (one process) none of this changes anything.
#
# Generated examples: the property tests whose every example loads a store and runs the
# analyses on it (test_metrics_property, test_tools_property, test_triage_property,
# test_triage_first_property, test_timelines_batched's random stores and
# test_clickhouse_conformance's portable views) run half the examples they ran until
# 2026-11-27: together they were about a quarter of the suite's CPU. The examples are drawn
# afresh on every run (no fixed seed), so successive runs still cover what the former count
# covered; the regressions they found stay as explicit @example cases. For a deeper search
# (before a release, after changing the loader or a view): LOOPSCOPE_PROPERTY_EXAMPLES=full
# runs the former counts (and LOOPSCOPE_FUZZ=long 20x more for test_fuzz_readers).
# test_loader_fast_path keeps its 80 (twice that with =full): its check that both paths got
# lines failed at 40.


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too, so --strict-markers accepts the mark where pytest-xdist is not installed.
    config.addinivalue_line("markers", "xdist_group(name): run these tests on one pytest-xdist worker")


def _module_scoped_setup(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        fixturedefs[-1].scope in ("module", "class", "package")
        for fixturedefs in info.name2fixturedefs.values()
        if fixturedefs
    )


# The longest tests outside any group (5-25 s each on this 2-core machine, 2026-11-27), dispatched
# first under -n: in collection order some came last, and one worker ran them while the other had
# finished (5-10 s of a run's wall time). Only the order in which the workers get them changes.
LONG_FIRST = (
    "tests/test_loader_fast_path.py::test_fast_path_and_full_validation_store_the_same_for_any_lines",
    "tests/test_prometheus_rules.py::test_promtool_unit_tests_fire_on_a_sustained_move_and_not_on_a_spike",
    "tests/test_metrics_property.py::",
    "tests/test_live_metrics_prometheus.py::",
    "tests/test_load_facts.py::test_incremental_loads_give_what_one_load_gives",
    "tests/test_fuzz_readers.py::test_message_reader_quarantines_each_bad_line_once_and_keeps_good_input",
    "tests/test_tools_property.py::",
    "tests/test_fuzz_readers.py::test_otlp_reader_quarantines_each_bad_part_once_and_keeps_good_input",
    "tests/test_triage_property.py::",
    "tests/test_lint_property.py::",
    "tests/test_triage_first_property.py::",
    "tests/test_audit_browser.py::",
    "tests/test_otlp_thirdparty.py::",
)


def _dispatch_rank(item: pytest.Item) -> int:
    if any(item.iter_markers("xdist_group")):
        return len(LONG_FIRST)
    return next((i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)), len(LONG_FIRST))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns the marks into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    modules = {item.path for item in items if _module_scoped_setup(item)}
    for item in items:
        if item.path in modules and not any(item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(item.path.name))
    if getattr(config.option, "loadgroup", False):  # a pytest-xdist worker under --dist loadgroup
        items.sort(key=_dispatch_rank)  # stable: every other test keeps its place


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")  # after pytest-xdist's own hook
def pytest_collection_modifyitems_xdist_group_suffix(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a pytest-xdist worker under ``--dist loadgroup``: each marked test's node id ends in
    ``@group``, which is what the controller schedules by.

    pytest-xdist (3.8) appends it by setting ``item._nodeid``; pytest 9.2 reads node ids from
    ``item._id`` instead, so there the suffix never appeared and every group was ignored: the
    module-scoped setups were built on both workers and the "timing" tests ran alongside each
    other. Here the suffix is added where it is missing (nothing is done where xdist's works).
    """
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest before 9.2: pytest-xdist's suffix is in place
        return
    for item in items:
        marks = item.iter_markers("xdist_group")
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix) and isinstance(getattr(item, "_id", None), NodeId):
            item._id = NodeId.parse(item.nodeid + suffix)
