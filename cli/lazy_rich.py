"""Defer the two rich modules Typer's help imports and loopscope's help never uses (issue 14).

``typer.rich_utils`` (imported for every ``--help`` and usage error) imports
``rich.markdown`` (markdown-it-py) and ``rich.traceback`` (pygments, attrs) at its top,
for help written in Markdown and for pretty tracebacks. loopscope's help is rich markup and
its tracebacks are off, yet the two imports are about half of what ``loopscope --help``
costs. ``defer()`` puts a stand-in for each module in ``sys.modules`` (only if it is not
imported yet): any use of it (an attribute, creating a ``Markdown`` or a ``Traceback``,
``Traceback.from_exception``) imports the real module and hands back the real thing, so
nothing behaves differently, only later.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

DEFERRED = {"rich.markdown": ("Markdown",), "rich.traceback": ("Traceback",)}


def _real(module: str) -> types.ModuleType:
    current = sys.modules.get(module)
    if isinstance(current, _Deferred) or current is None:
        sys.modules.pop(module, None)
        current = importlib.import_module(module)
    return current


class _StandInMeta(type):
    def __getattr__(cls, name: str) -> Any:  # class attributes: Traceback.from_exception, ...
        return getattr(getattr(_real(cls._module), cls.__name__), name)

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, getattr(_real(cls._module), cls.__name__))


def _stand_in(module: str, name: str) -> type:
    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        return getattr(_real(module), name)(*args, **kwargs)

    return _StandInMeta(name, (), {"__new__": __new__, "_module": module, "__module__": module})


class _Deferred(types.ModuleType):
    """A module imported on first real use."""

    def __init__(self, name: str, names: tuple[str, ...]) -> None:
        super().__init__(name)
        for attr in names:
            setattr(self, attr, _stand_in(name, attr))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(_real(self.__name__), name)


def defer() -> None:
    """Install the stand-ins for the modules in ``DEFERRED`` that are not imported yet."""
    for module, names in DEFERRED.items():
        if module not in sys.modules:
            sys.modules[module] = _Deferred(module, names)
