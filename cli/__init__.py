"""The ``loopscope`` command line (Typer + rich), thin over ``loopscope.analyses``.

One module per verb; each command parses its options, makes one library call
and renders the result. ``app`` is the Typer application, ``main`` the console
script entry point.
"""

from loopscope.cli.app import app, main

__all__ = ["app", "main"]
