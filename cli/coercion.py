"""Option values without pydantic: keeps a command on small data instant (issue 14).

Typer (>= 0.20) turns every option value into its Python type through a pydantic
``TypeAdapter``, built per parameter on first use: each command run imports pydantic
(about 0.1 s, a quarter of a run on sample_logs/) and builds a dozen adapters, to turn
``"json"`` into ``OutputFormat.json``. loopscope's options are plain types (str, int,
float, bool, Path, an Enum, lists of them), which Typer's own helpers coerce without pydantic.

``install(command)`` gives each such parameter of a command tree a coercer that takes
the plain route when the value is one of those types and parses cleanly, and hands
everything else to Typer's own coercion, so every error message (and any type this
module does not know) stays Typer's. It sets Typer's lazily built ``_runtime_param``;
a Typer without that attribute is left alone (slower, the same results).
"""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Any, get_args, get_origin

_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")

try:  # Typer's own pydantic-free helpers (the ones its adapters call)
    from typer._coercion import build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path
except ImportError:  # an older or newer Typer: no fast path, nothing to speed up or break
    build_runtime_param = None  # type: ignore[assignment]


class _Slow(Exception):
    """The value is not a plain case: Typer's own coercion decides (and words any error)."""


class FastCoercion:
    """Typer's ``RuntimeParam.coerce`` contract for plain annotations, pydantic only as the fallback."""

    def __init__(self, descriptor: Any) -> None:
        self.descriptor = descriptor
        self.info = descriptor.parameter_info
        annotation = descriptor.annotation
        self.leaf = get_args(annotation)[0] if get_origin(annotation) is list else annotation
        self._typer: Any = None

    @classmethod
    def handles(cls, descriptor: Any) -> bool:
        info = descriptor.parameter_info
        if descriptor.file_annotation is not None or getattr(info, "parser", None) is not None:
            return False
        annotation = descriptor.annotation
        if get_origin(annotation) is list:
            args = get_args(annotation)
            annotation = args[0] if len(args) == 1 else None
        return annotation in (str, int, float, bool, Path) or (isinstance(annotation, type) and issubclass(annotation, enum.Enum))

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        try:
            if multi:
                if isinstance(value, str) or not isinstance(value, (list, tuple)):
                    raise _Slow
                return [self._one(v, param, ctx) for v in value]
            return self._one(value, param, ctx)
        except _Slow:
            if self._typer is None:
                self._typer = build_runtime_param(self.descriptor)
            return self._typer.coerce(value, param=param, ctx=ctx)

    def _one(self, value: Any, param: Any, ctx: Any) -> Any:
        leaf, info = self.leaf, self.info
        if leaf is str:
            if isinstance(value, str):
                return value
            raise _Slow
        if leaf is bool:
            if isinstance(value, bool):
                return value
            raise _Slow
        if leaf is int or leaf is float:
            if isinstance(value, str) and (_INT_RE if leaf is int else _FLOAT_RE).fullmatch(value):
                number = leaf(value)
            elif isinstance(value, leaf) and not isinstance(value, bool):
                number = value
            else:
                raise _Slow
            if info.clamp or (info.min is not None and number < info.min) or (info.max is not None and number > info.max):
                raise _Slow
            return number
        if leaf is Path:
            if isinstance(value, str) and value:
                value = Path(value)
            if not isinstance(value, Path):
                raise _Slow
            path_type = info.path_type or Path
            try:
                return coerce_cli_path(value, info, path_type=path_type, param=param, ctx=ctx)
            except Exception:
                raise _Slow from None
        # an Enum: Typer's choice matching, as its adapter does it
        try:
            return coerce_cli_choice(value, choices=list(leaf), case_sensitive=info.case_sensitive, ctx=ctx)
        except ValueError:
            raise _Slow from None


def install_param(param: Any) -> Any:
    """Give ``param`` the fast coercer if it is a plain-typed Typer parameter; return it."""
    if build_runtime_param is None or param is None:
        return param
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or getattr(param, "_runtime_param", False) is not None:
        return param  # not a Typer parameter, or one Typer already built
    if FastCoercion.handles(descriptor):
        param._runtime_param = FastCoercion(descriptor)
    return param


def install(command: Any) -> None:
    """Give every plain-typed parameter of ``command`` (and its subcommands) the fast coercer."""
    for param in getattr(command, "params", ()):
        install_param(param)
    for sub in getattr(command, "commands", {}).values():
        install(sub)
