"""The Typer application, its error handling and command registration.

Error contract (all commands): a ``LoopscopeError`` prints a titled panel on
stderr and exits 1; a usage error exits 1; anything unexpected exits 2 with a
one-line message (the traceback only with ``--debug`` or ``LOOPSCOPE_DEBUG=1``).
A gate that ran and failed (``check`` thresholds, ``lint check`` findings)
exits 3, so a CI script can tell "the gate said no" from "the gate did not run".
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from loopscope.cli import lazy_rich

lazy_rich.defer()  # before Typer's help imports rich.markdown and rich.traceback, which it never uses here

import typer  # noqa: E402

try:  # noqa: E402  # typer >= 0.22 vendors click as typer._click and no longer installs click
    from typer._click import Context
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # older typer runs on click itself
    from click import ClickException, Context, UsageError  # type: ignore[no-redef]
from typer.core import TyperCommand, TyperGroup

from loopscope.analyses.errors import LoopscopeError
from loopscope.cli.render.output import inert, stderr_console

F = TypeVar("F", bound=Callable[..., Any])

# Exit codes, the same for every command. 1 and 2 are the project's fixed contract; a gate
# failure cannot reuse 1 (dbt's and ruff's "failure" code) because 1 already means a user or
# data error here, and a mistyped option must not read as "the thresholds were violated".
EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 2
EXIT_GATE_FAILED = 3
EXIT_CODES_HELP = (
    "[b]Exit codes[/b] (every command): [b]0[/b] ok; [b]1[/b] user or data error (a mistyped option, a bad file, "
    "an empty window); [b]2[/b] internal error (a bug in loopscope); [b]3[/b] a gate failed (check: a threshold "
    "violated; lint check: a finding of severity error); [b]130[/b] interrupted (Ctrl-C)."
)

_DEBUG = {"on": False}


class _Group(TyperGroup):
    """Usage errors are user errors: exit code 1, as everywhere in loopscope. Option values are
    coerced without pydantic where they are plain types (``loopscope.cli.coercion``)."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        from loopscope.cli.coercion import install

        install(self)  # here, not in __init__: Typer adds the completion options after that
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            exc.exit_code = EXIT_USER_ERROR
            raise

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            exc.exit_code = EXIT_USER_ERROR
            raise


    def get_help_option(self, ctx: Context) -> Any:
        from loopscope.cli.coercion import install_param

        return install_param(super().get_help_option(ctx))


class Command(TyperCommand):
    """Every loopscope command: its --help option (made at parse time) coerced without pydantic too."""

    def get_help_option(self, ctx: Context) -> Any:
        from loopscope.cli.coercion import install_param

        return install_param(super().get_help_option(ctx))


class DefaultVerbGroup(_Group):
    """A noun group whose main verb may be left out: ``loopscope lint sample_logs/`` is
    ``loopscope lint rank sample_logs/``. Anything that is not one of the group's verbs (a PATH,
    an option) goes to ``default_verb``; ``--help`` alone shows the group."""

    default_verb = ""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if self.default_verb and (not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names)):
            args = [self.default_verb, *args]
        return super().parse_args(ctx, args)


def noun_group(name: str, help_text: str, default_verb: str = "") -> typer.Typer:
    """A Typer group for a noun with several verbs, registered as ``loopscope NAME``."""
    cls = type(f"{name.title()}Group", (DefaultVerbGroup,), {"default_verb": default_verb}) if default_verb else _Group
    group = typer.Typer(help=help_text, cls=cls, no_args_is_help=not default_verb, rich_markup_mode="rich",
                        invoke_without_command=False)
    app.add_typer(group, name=name, rich_help_panel=PANELS.get(name))
    return group


app = typer.Typer(
    name="loopscope",
    cls=_Group,
    help="Make agent-loop failures visible: tool errors, spins and replays, from your logs.\n\n"
    "Start with [b]loopscope metrics sample_logs/[/b].",
    rich_markup_mode="rich",
    no_args_is_help=True,
    epilog=EXIT_CODES_HELP,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for internal errors."),
) -> None:
    """Make agent-loop failures visible: tool errors, spins and replays, from your logs."""
    _DEBUG["on"] = debug


def report_error(exc: LoopscopeError) -> None:
    """Print a user error as a titled panel on stderr."""
    from rich.panel import Panel

    body = inert(exc.message)
    if exc.hint:
        body += f"\n\n[dim]hint:[/dim] {inert(exc.hint)}"
    stderr_console().print(Panel(body, title="[red]loopscope: error[/red]", title_align="left", border_style="red"))


def _interrupted(exc: BaseException) -> bool:
    """Ctrl-C that reached DuckDB mid-statement: it ends the statement with its own error, not KeyboardInterrupt.

    (By name: this module does not import duckdb, which costs a command's start.)
    """
    name = type(exc).__name__
    return name == "InterruptException" or (isinstance(exc, RuntimeError) and str(exc) == "Query interrupted")


def handle_errors(fn: F) -> F:
    """Wrap a command: user errors exit 1 with a panel, internal errors exit 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LoopscopeError as exc:
            report_error(exc)
            raise typer.Exit(exc.exit_code) from None
        except (typer.Exit, typer.Abort, ClickException):
            raise
        except KeyboardInterrupt:
            stderr_console().print("interrupted")
            raise typer.Exit(130) from None
        except Exception as exc:  # the one place unexpected errors are caught
            if _interrupted(exc):
                stderr_console().print("interrupted")
                raise typer.Exit(130) from None
            if _DEBUG["on"] or os.environ.get("LOOPSCOPE_DEBUG"):
                raise
            stderr_console().print(
                f"[red]loopscope: internal error:[/red] {inert(type(exc).__name__)}: {inert(exc)}\n"
                "[dim]This is a bug in loopscope. Run again with --debug for the traceback and report it.[/dim]"
            )
            raise typer.Exit(EXIT_INTERNAL_ERROR) from None

    return wrapper  # type: ignore[return-value]


# --help groups the verbs by the job a user comes with; panels appear in this order.
PANEL_MEASURE = "Load and measure"
PANEL_INVESTIGATE = "Investigate an incident"
PANEL_REVIEW = "Review and gate"
PANEL_TRY = "Try it"
PANELS = {
    "load": PANEL_MEASURE,
    "metrics": PANEL_MEASURE,
    "quarantine": PANEL_MEASURE,
    "export": PANEL_MEASURE,
    "unrecovered": PANEL_INVESTIGATE,
    "triage": PANEL_INVESTIGATE,
    "lint": PANEL_INVESTIGATE,
    "audit": PANEL_REVIEW,
    "sample": PANEL_REVIEW,
    "review": PANEL_REVIEW,
    "compare": PANEL_REVIEW,
    "check": PANEL_REVIEW,
    "demo": PANEL_TRY,
}


def command(name: str, **kwargs: Any) -> Callable[[F], F]:
    """Register ``fn`` as ``loopscope NAME`` with the shared error handling."""
    kwargs.setdefault("rich_help_panel", PANELS.get(name))
    kwargs.setdefault("cls", Command)

    def register(fn: F) -> F:
        app.command(name, **kwargs)(handle_errors(fn))
        return fn

    return register


def deprecated_alias(old: str, new: str, fn: F) -> None:
    """Keep ``loopscope OLD`` working for scripts, hidden from --help, as ``fn`` (the command now
    spelled ``loopscope NEW``), with a one-line notice on stderr."""

    @functools.wraps(fn)
    def alias(*args: Any, **kwargs: Any) -> Any:
        deprecation_notice(f"loopscope {old}", f"loopscope {new}")
        return fn(*args, **kwargs)

    app.command(old, hidden=True, cls=Command)(handle_errors(alias))


def deprecation_notice(old: str, new: str) -> None:
    """One line on stderr: ``old`` is now spelled ``new`` (stdout stays the result)."""
    stderr_console().print(f"[yellow]note:[/yellow] '{old}' is now '{new}'; the old spelling still works for now",
                           soft_wrap=True)


def main() -> None:
    """Console-script entry point."""
    try:
        with _only_the_named_command(sys.argv[1:]):
            app()
    except SystemExit as exc:
        sys.exit(exc.code)
    finally:
        # The run is over; what follows is the interpreter's teardown, whose garbage collection walks
        # every object the imports made (DuckDB, Typer, rich: about 18 ms of every run). Frozen, they
        # are freed as usual (modules cleared, files and connections closed by their reference
        # counts) without that walk. Only objects caught in reference cycles stay unfreed, which
        # Python does not promise to free at exit anyway.
        gc.freeze()


@contextlib.contextmanager
def _only_the_named_command(args: list[str]) -> Iterator[None]:
    """Let Typer build only the command a run names first (issue 14: small data stays instant).

    Typer turns every registered command's signature into options before it parses anything
    (about 10 ms for loopscope's fifteen); a run such as ``loopscope metrics ...`` uses one.
    Anything else first (``--help``, ``--debug``, a mistyped name, no argument) builds them all,
    so help, suggestions and errors are Typer's own.
    """
    name = args[0] if args else ""
    commands = [c for c in app.registered_commands if c.name == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        yield
        return
    saved = app.registered_commands, app.registered_groups
    app.registered_commands, app.registered_groups = commands, groups
    try:
        yield
    finally:
        app.registered_commands, app.registered_groups = saved


# Command modules register themselves with @command on import. Each import is
# one verb; keep them in --help order.
from loopscope.cli import commands  # noqa: E402,F401
