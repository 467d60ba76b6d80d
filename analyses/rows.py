"""Small helpers the incident analyses share for turning query results into Python values."""

from __future__ import annotations

import json
from typing import Any

import duckdb


def fetch_dicts(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every row of an executed query as a dict keyed by column name."""
    names = [d[0] for d in cur.description or []]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def json_object(text: str | None) -> dict[str, Any] | None:
    """A JSON object stored as text (``input_shape``, ``tags``); anything else is None (unknown)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
