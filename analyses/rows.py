"""Small helpers the incident analyses share for turning query results into Python values."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import duckdb


def fetch_dicts(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every row of an executed query as a dict keyed by column name."""
    names = [d[0] for d in cur.description or []]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def class_dict(record: Any, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """A dataclass as a plain dict for JSON/CSV, its ``error_class`` field named ``class``.

    The user-facing name is ``class`` (a Python keyword, hence the field name);
    the field order is kept, and the fields in ``drop`` are left out.
    """
    return {("class" if k == "error_class" else k): v for k, v in asdict(record).items() if k not in drop}


def json_object(text: str | None) -> dict[str, Any] | None:
    """A JSON object stored as text (``input_shape``, ``tags``); anything else is None (unknown)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
