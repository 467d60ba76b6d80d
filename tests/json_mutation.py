"""Test helper: put any JSON value at any place of real documents (reader fuzz tests).

Loaded by file path (tests/ is not a package), like reference.py.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def json_values(words: list[str], keys: list[str]) -> st.SearchStrategy[Any]:
    """Small random JSON values, biased towards ``words`` (strings) and ``keys`` (object keys)."""
    return st.recursive(
        st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6) | st.sampled_from(words),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(keys), c, max_size=3),
        max_leaves=8,
    )


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, path + (i,))
    return out


def places(docs: list[Any]) -> list[tuple[int, tuple[Any, ...]]]:
    """Every (document index, path) below the documents' roots."""
    return [(n, p) for n, doc in enumerate(docs) for p in _paths(doc) if p]


def replaced(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of ``node`` with ``value`` at ``path`` (the rest shared)."""
    if not path:
        return value
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = replaced(node[path[0]], path[1:], value)
    return copy



def edited(docs: list[Any], edits: list[tuple[tuple[int, tuple[Any, ...]], Any]]) -> list[Any]:
    """A copy of ``docs`` with each ((document index, path), value) edit applied in turn; an edit
    whose place an earlier edit removed is skipped."""
    out = list(docs)
    for (n, path), value in edits:
        try:
            out[n] = replaced(out[n], path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed that place
    return out
