"""The ``loopscope`` command line (Typer + rich), thin over ``loopscope.analyses``.

One module per verb; each command parses its options, makes one library call
and renders the result. ``app`` is the Typer application, ``main`` the console
script entry point.

Both are imported on first use, so that ``loopscope.cli.demo`` (the demo agent, which
uses only the collector) loads no Typer, rich or DuckDB.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopscope.cli.app import app, main

__all__ = ["app", "main"]


class _Package(types.ModuleType):
    # ``loopscope.cli.app`` is both the submodule and the Typer application it defines. Importing the
    # submodule binds the package attribute ``app`` to the module; this property keeps
    # ``from loopscope.cli import app`` meaning the application, whatever was imported first.

    @property
    def app(self) -> Any:
        return importlib.import_module("loopscope.cli.app").app

    @app.setter
    def app(self, _module: Any) -> None:
        pass

    @property
    def main(self) -> Any:
        return importlib.import_module("loopscope.cli.app").main


sys.modules[__name__].__class__ = _Package
