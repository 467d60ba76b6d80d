"""Files an analysis writes for the user (the audit's HTML page): checked before the work, written whole.

The rendering stays in ``loopscope.cli.render``; what may be written where, and what a
failure tells the user, is decided here once.
"""

from __future__ import annotations

from pathlib import Path

from loopscope.analyses.errors import LoopscopeError


def check_output_file(path: Path, option: str) -> None:
    """Fail before any work when ``path`` cannot be written: a folder, or in a folder that does not exist.

    Raises:
        LoopscopeError: naming the option, the path and what to give instead.
    """
    if path.is_dir() or not path.parent.is_dir():
        raise LoopscopeError(f"cannot write {path}: " + ("it is a folder" if path.is_dir() else f"no folder {path.parent}"),
                             hint=f"give a file path in an existing folder, e.g. {option} audit.html")


def write_output_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8.

    Raises:
        LoopscopeError: the file cannot be written (the reason the system gave).
    """
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise LoopscopeError(f"cannot write {path}: {exc.strerror}", hint="check the folder exists and is writable") from None
