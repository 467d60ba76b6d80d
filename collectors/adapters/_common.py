"""What every adapter shares (no framework imported here)."""

from __future__ import annotations


class LoopDetected(Exception):
    """The prompt was spinning and ``on_loop="exit"`` stopped the run (``loop_exit`` is written:
    ``exit_reason: "error"``, ``error_type: "loop_detected"``). Raised out of the framework's run."""
