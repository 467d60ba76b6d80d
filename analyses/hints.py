"""The static recovery-hint catalog, re-exported from :mod:`loopscope.collectors.hints`.

The catalog lives in ``collectors`` because the collector builds the seed-000
``[Error Recovery Context]`` block at run time (``call.recovery_context()``) from
the same entries ``triage`` and the lint rules use; ``collectors`` may not import
``analyses``, while ``analyses`` may import ``collectors``. One catalog, three readers.
"""

from loopscope.collectors.hints import (
    FALLBACK_SUGGESTIONS,
    HINTS,
    MODIFY_AND_RETRY,
    RECOVERY_PATTERNS,
    RETRY_UNCHANGED,
    TARGET_ARGUMENTS,
    USE_DIFFERENT_TOOL,
    Hint,
    hint,
    match,
    recovery_pattern,
    suggestions_for,
    target_argument,
)

__all__ = [
    "FALLBACK_SUGGESTIONS",
    "HINTS",
    "MODIFY_AND_RETRY",
    "RECOVERY_PATTERNS",
    "RETRY_UNCHANGED",
    "TARGET_ARGUMENTS",
    "USE_DIFFERENT_TOOL",
    "Hint",
    "hint",
    "match",
    "recovery_pattern",
    "suggestions_for",
    "target_argument",
]
