"""One definition of the characters untrusted text must not carry raw into any output.

Log text (tool names, error messages, ids) is untrusted. Control characters can act on a
terminal (ANSI escapes, C1 CSI); bidirectional controls (U+202A-U+202E embeddings and overrides,
U+2066-U+2069 isolates, U+200E/U+200F/U+061C marks) reorder what a reader sees ("Trojan Source",
CVE-2021-42574), so a tool name can display reversed; zero-width and other invisible format
characters (U+200B-U+200D, U+2060-U+2064, U+FEFF) hide text or make two different names look
the same. Every output (terminal, JSON, CSV, HTML audit, Markdown review pack) shows them as
visible escapes instead, using :data:`UNSAFE_RE` / :func:`visible` from here.
"""

from __future__ import annotations

import re

# Bidirectional controls and invisible format characters (a regex character-class body).
BIDI_AND_INVISIBLE = "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
# C0 controls except tab and newline, DEL, C1 controls, and the characters above.
UNSAFE_RE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_AND_INVISIBLE}]")


def escape_char(match: re.Match[str]) -> str:
    """``\\xNN`` for a control character up to U+00FF, ``\\uNNNN`` beyond."""
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: object) -> str:
    """Untrusted text with every control, bidi and invisible format character as a visible escape."""
    return UNSAFE_RE.sub(escape_char, "" if text is None else str(text))
