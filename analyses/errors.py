"""Errors the analyses raise for the user to read.

``LoopscopeError`` is the one exception the CLI turns into a clean message
(a titled panel on stderr and exit code 1). Anything else that escapes a
command is an internal error (exit code 2).
"""

from __future__ import annotations


class LoopscopeError(Exception):
    """A user or data error: something the user can fix.

    Args:
        message: what failed, naming the input (file, line, id).
        hint: the next thing to try, often a command line.
    """

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class InputNotFound(LoopscopeError):
    """A path, glob or id the user named does not exist."""


class DatabaseError(LoopscopeError):
    """The DuckDB file cannot be opened or is not a loopscope database."""


class UnknownConversation(LoopscopeError):
    """A conversation id that is not in the database."""
