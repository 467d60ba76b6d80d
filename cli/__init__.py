"""The ``loopscope`` command line (Typer + rich), thin over ``loopscope.analyses``.

One module per verb; each command parses its options, makes one library call
and renders the result. ``app`` is the Typer application, ``main`` the console
script entry point.

``app`` and ``main`` are imported on first use, so that ``loopscope.cli.demo`` (the demo
agent, which uses only the collector) loads no Typer, rich or DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopscope.cli.app import app, main

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from loopscope.cli import app as _app_module

        return getattr(_app_module, name)
    raise AttributeError(f"module 'loopscope.cli' has no attribute {name!r}")
