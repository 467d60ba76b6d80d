"""Options shared by several commands, defined once.

The selection bundle: every analysis command reads the same way. ``@selection_options``
adds these parameters to a command (one place, so they are spelled, documented and
grouped in ``--help`` identically everywhere) and hands the command one ``Scope``:

- PATHs: log files, folders or globs to load first (then the command reports on exactly them);
- ``--db``: the store;
- how to read PATHs: ``--input-format``, ``--scratchpad-tool`` and the message-array reader's
  ``--messages-key``/``--id-key``/``--error-when``/``--agent-name`` (the options ``load`` takes);
- which prompts (``window=True``): ``--since``/``--until`` or ``--week``, ``--agent``, ``--tag``.

``load`` takes the same reading options with PATHs required; ``triage`` (one conversation,
whatever its time) takes them without the window.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer

from loopscope.cli.render.output import OutputFormat

if TYPE_CHECKING:
    from loopscope.analyses.selection import Selection
    from loopscope.analyses.store import Analysis
    from loopscope.cli.common import NameQuarantined

F = TypeVar("F", bound=Callable[..., Any])

PANEL_INPUT = "Input: the store and how PATHs are read"
PANEL_MESSAGES = "Conversation message arrays (--input-format messages, docs/inputs.md)"
PANEL_WINDOW = "Which prompts"

DbOption = Annotated[
    Optional[str],
    typer.Option(
        "--db",
        envvar="LOOPSCOPE_DB",
        help="DuckDB file to use (created if missing). [dim]:memory:[/dim] for a throwaway store. "
        "Or ClickHouse: [dim]clickhouse://user@host:8123/db[/dim], [dim]clickhouses://[/dim] (TLS), "
        "[dim]chdb:///path[/dim] (docs/clickhouse.md). Default: ./loopscope.duckdb.",
        show_default=False,
        rich_help_panel=PANEL_INPUT,
    ),
]
FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="Output: a rich [b]table[/b] for people, [b]json[/b] or [b]csv[/b] for scripts."),
]
PathsArgument = Annotated[
    Optional[list[Path]],
    typer.Argument(
        help="Log files, directories (searched recursively) or globs to load first. "
        "Without them, the command reads what is already in --db.",
        show_default=False,
    ),
]
RequiredPathsArgument = Annotated[
    list[Path],
    typer.Argument(help="Log files, directories (searched recursively) or globs.", show_default=False),
]
SinceOption = Annotated[
    Optional[str],
    typer.Option("--since", help="Only prompts that started at or after this date or RFC 3339 timestamp (UTC).",
                 show_default=False, rich_help_panel=PANEL_WINDOW),
]
UntilOption = Annotated[
    Optional[str],
    typer.Option("--until", help="Only prompts that started before this date or timestamp (UTC).",
                 show_default=False, rich_help_panel=PANEL_WINDOW),
]
WeekOption = Annotated[
    Optional[str],
    typer.Option("--week", help="Only prompts that started in this ISO week (UTC), e.g. 2026-W47. "
                 "Instead of --since/--until.", show_default=False, rich_help_panel=PANEL_WINDOW),
]
AgentOption = Annotated[
    Optional[list[str]],
    typer.Option("--agent", help="Only this agent type (repeat for several).", show_default=False,
                 rich_help_panel=PANEL_WINDOW),
]
TagOption = Annotated[
    Optional[list[str]],
    typer.Option("--tag", help="Only prompts whose records carry this tag, as KEY=VALUE (repeat to require several).",
                 show_default=False, rich_help_panel=PANEL_WINDOW),
]
InputFormatOption = Annotated[
    str,
    typer.Option(
        "--input-format",
        help="How to read PATHs: [b]auto[/b] (detect per file), [b]records[/b] (loopscope JSONL), "
        "[b]messages[/b] (conversation message arrays), [b]otlp[/b] (OpenTelemetry JSON Lines), "
        "[b]claude-code[/b] (~/.claude/projects sessions), [b]codex[/b] (~/.codex/sessions rollouts), "
        "[b]gemini-cli[/b] (~/.gemini/tmp/*/chats sessions), "
        "[b]openhands[/b] (OpenHands event streams / trajectories), "
        "[b]smolagents[/b] (smolagents agent.memory.get_full_steps() dumps).",
        rich_help_panel=PANEL_INPUT,
    ),
]
ScratchpadToolOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--scratchpad-tool",
        help="A tool that does nothing in the world (a scratchpad such as [b]think[/b]): its success never "
        "counts as recovering an error. Repeat for several; replaces the store's set (default: think), which "
        "every command then uses. [b]--scratchpad-tool ''[/b] clears it.",
        show_default=False,
        rich_help_panel=PANEL_INPUT,
    ),
]
MessagesKeyOption = Annotated[
    Optional[str],
    typer.Option(
        "--messages-key",
        help="Where each conversation's messages list is, as dotted keys with [] for 'each element' "
        "(e.g. [b]simulations[].messages[/b]). Default: detected.",
        rich_help_panel=PANEL_MESSAGES,
        show_default=False,
    ),
]
IdKeyOption = Annotated[
    Optional[str],
    typer.Option(
        "--id-key",
        help="The conversation id's key in each conversation (dotted keys allowed). "
        "Default: conversation_id, id, session_id or thread_id.",
        rich_help_panel=PANEL_MESSAGES,
        show_default=False,
    ),
]
ErrorWhenOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--error-when",
        help="When a tool result without an error flag is an error: [b]flag[/b] (default: "
        "never), [b]prefix[/b] (text starts with 'Error:'), [b]json-error-key[/b] (a JSON body with an "
        "\"error\" key) or [b]regex:PATTERN[/b]. Repeat to combine.",
        rich_help_panel=PANEL_MESSAGES,
        show_default=False,
    ),
]
AgentNameOption = Annotated[
    Optional[str],
    typer.Option(
        "--agent-name",
        help="The agent name for every record. Default: the file's agent name, else 'default'.",
        rich_help_panel=PANEL_MESSAGES,
        show_default=False,
    ),
]

# The bundle, in --help order: (parameter name, annotation, default).
_INPUT_PARAMS: tuple[tuple[str, Any, Any], ...] = (
    ("db", DbOption, None),
    ("input_format", InputFormatOption, "auto"),
    ("scratchpad_tool", ScratchpadToolOption, None),
    ("messages_key", MessagesKeyOption, None),
    ("id_key", IdKeyOption, None),
    ("error_when", ErrorWhenOption, None),
    ("agent_name", AgentNameOption, None),
)
_WINDOW_PARAMS: tuple[tuple[str, Any, Any], ...] = (
    ("since", SinceOption, None),
    ("until", UntilOption, None),
    ("week", WeekOption, None),
    ("agent", AgentOption, None),
    ("tag", TagOption, None),
)
READER_OPTION_KEYS = ("messages_key", "id_key", "error_when", "agent_name")
"""The reader options handed to ``load_paths`` (the message-array reader's)."""


@dataclass(frozen=True)
class Scope:
    """What one analysis reads: the store, the PATHs to load first and how, and the window.

    ``window()`` parses the window (call it before any work, so a typo fails fast);
    ``open()`` opens the store, loads the PATHs and yields an ``Analysis``.
    """

    paths: tuple[Path, ...] = ()
    db: str | None = None
    input_format: str = "auto"
    reader_options: Mapping[str, Any] = field(default_factory=dict)
    scratchpad_tools: tuple[str, ...] | None = None
    since: str | None = None
    until: str | None = None
    week: str | None = None
    agents: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def window(self) -> Selection:
        """The window as a ``Selection`` (all prompts when no window option was given).

        Raises:
            LoopscopeError: a bad date, week or tag, or --week with --since/--until.
        """
        from loopscope.cli.common import window_selection

        return window_selection(self.since, self.until, self.agents, self.tags, self.week)

    def describe_window(self) -> str:
        """The window in words, for a report's header."""
        if self.week:
            return self.week
        if self.since or self.until:
            return f"{self.since or '…'} to {self.until or '…'}"
        return "all loaded prompts"

    @contextmanager
    def open(self, selection: Selection | None = None, *, status: str = "analysing",
             require_records: bool = True, name_quarantined: NameQuarantined = "all") -> Iterator[Analysis]:
        """Open the store, load the PATHs (progress bar on a terminal), apply --scratchpad-tool; always close.

        ``selection`` defaults to ``window()``. The body of the ``with`` is the analysis: on a
        terminal a transient ``status`` spinner appears on stderr when it runs longer than a second.
        """
        from loopscope.cli.common import analysis_store, working

        wanted = self.window() if selection is None else selection
        with analysis_store(self.db, self.paths, self.input_format, wanted, self.reader_options,
                            require_records=require_records, name_quarantined=name_quarantined) as opened:
            if self.scratchpad_tools is not None:
                from loopscope.analyses.store.facts import set_scratchpad_tools

                set_scratchpad_tools(opened.con, list(self.scratchpad_tools))
            from loopscope.analyses.store.freshness import checked_once

            # the analysis writes no record: the facts' freshness is checked once, at its first ask
            with checked_once(opened.con), working(status):
                yield opened


def _scope_from(kwargs: dict[str, Any], window: bool) -> Scope:
    reader = {k: kwargs.pop(k) for k in READER_OPTION_KEYS}
    scratchpad = kwargs.pop("scratchpad_tool")
    return Scope(
        paths=tuple(kwargs.pop("paths") or ()),
        db=kwargs.pop("db"),
        input_format=kwargs.pop("input_format"),
        reader_options={k: v for k, v in reader.items() if v},
        scratchpad_tools=None if scratchpad is None else tuple(scratchpad),
        since=kwargs.pop("since") if window else None,
        until=kwargs.pop("until") if window else None,
        week=kwargs.pop("week") if window else None,
        agents=tuple(kwargs.pop("agent") or ()) if window else (),
        tags=tuple(kwargs.pop("tag") or ()) if window else (),
    )


def selection_options(*, window: bool = True, paths_required: bool = False) -> Callable[[F], F]:
    """Give a command the selection bundle: its ``scope`` parameter receives a ``Scope``.

    The command declares ``scope: Scope`` (anywhere among its parameters) and its own
    options; the bundle's PATHs argument follows the command's own arguments, the
    bundle's options follow its own, in their help panels.

    Args:
        window: also the --since/--until/--week/--agent/--tag window (not for ``triage``).
        paths_required: PATHs must be given (``load``).
    """

    def decorate(fn: F) -> F:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name != "scope"]
        paths = ("paths", RequiredPathsArgument, inspect.Parameter.empty) if paths_required else ("paths", PathsArgument, None)
        bundle = (paths, *_INPUT_PARAMS, *(_WINDOW_PARAMS if window else ()))
        taken = {p.name for p in own} & {name for name, _, _ in bundle}
        if taken:
            raise TypeError(f"{fn.__name__}: parameters {sorted(taken)} belong to the selection bundle")
        kw = inspect.Parameter.KEYWORD_ONLY
        args = [p.replace(kind=kw) for p in own if _is_argument(p)]
        opts = [p.replace(kind=kw) for p in own if not _is_argument(p)]
        added = [inspect.Parameter(name, kw, annotation=ann, default=default) for name, ann, default in bundle]
        params = [*args, added[0], *opts, *added[1:]]

        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            scope = _scope_from(kwargs, window)
            return fn(scope=scope, **kwargs)

        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        del wrapper.__wrapped__  # typer reads the signature above, not the function's own
        return wrapper  # type: ignore[return-value]

    return decorate


def _is_argument(param: inspect.Parameter) -> bool:
    meta = getattr(param.annotation, "__metadata__", ())
    return any(isinstance(m, typer.models.ArgumentInfo) for m in meta)
