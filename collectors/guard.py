"""Internal-error policy: the collector never raises into the host loop.

Every public entry point funnels its own failures through :class:`Guard`. A failure is counted,
logged once per (place, exception type) to the ``loopscope`` logger, and swallowed -- unless strict
mode is on (``strict=True``, or ``strict=None`` with ``PYTEST_CURRENT_TEST`` or ``LOOPSCOPE_STRICT``
set), in which case it is re-raised so test suites catch collector bugs. Exceptions raised by the
host's own code (a tool that fails) are never routed here.
"""

from __future__ import annotations

import logging
import os
import threading

logger = logging.getLogger("loopscope")
# A library must not configure logging; the NullHandler avoids "no handler" noise.
logger.addHandler(logging.NullHandler())

_FALSE = ("", "0", "false", "no", "off")


def strict_from_env() -> bool:
    """Return True when the environment asks internal errors to re-raise."""
    if os.environ.get("PYTEST_CURRENT_TEST"):
        return True
    return os.environ.get("LOOPSCOPE_STRICT", "").strip().lower() not in _FALSE


class Guard:
    """Counts internal errors, logs each kind once, re-raises in strict mode.

    Args:
        strict: True re-raises, False never does, None (default) asks the environment at the
            moment of the error (see :func:`strict_from_env`).
    """

    def __init__(self, strict: bool | None = None) -> None:
        self.strict = strict
        self.internal_errors = 0
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def is_strict(self) -> bool:
        """Whether an internal error right now would be re-raised."""
        return strict_from_env() if self.strict is None else self.strict

    def once(self, key: str, level: int, msg: str, *args: object, exc_info: BaseException | None = None) -> None:
        """Log ``msg`` the first time ``key`` is seen by this guard."""
        with self._lock:
            if (key, "") in self._seen:
                return
            self._seen.add((key, ""))
        logger.log(level, msg, *args, exc_info=exc_info)

    def internal_error(self, where: str, exc: BaseException) -> None:
        """Record an internal failure at ``where``; re-raise it in strict mode.

        Must be called from inside the ``except`` block that caught ``exc``.
        """
        self.internal_errors += 1
        key = (where, type(exc).__name__)
        with self._lock:
            first = key not in self._seen
            self._seen.add(key)
        if first:
            logger.error(
                "loopscope: internal error in %s (%s); your loop keeps running, with less telemetry",
                where,
                type(exc).__name__,
                exc_info=exc,
            )
        if self.is_strict():
            raise exc
