"""The OTLP reader never crashes: any value put anywhere in a real export is read or reported.

Starts from the captured OpenInference export (tests/fixtures/otlp/), replaces the value at a
random place (an id, a time, an attribute value, a whole span, a status...) with a random JSON
value, and reads the file: ``read`` returns (records that are plain JSON, bad lines with
numbers), it never raises.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope.analyses.readers import otlp

CAPTURED = Path(__file__).parent / "fixtures" / "otlp" / "openai_agents_openinference.jsonl"
LINES = [json.loads(line) for line in CAPTURED.read_text(encoding="utf-8").splitlines() if line.strip()]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6)
    | st.sampled_from(["", "0", "2", "NaN", "Infinity", "-1", "99999999999999999999999", "STATUS_CODE_ERROR", "zz"]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(
        st.sampled_from(["stringValue", "intValue", "doubleValue", "kvlistValue", "arrayValue", "values", "key", "value", "x"]),
        c, max_size=3),
    max_leaves=8,
)


def _places(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _places(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _places(value, path + (i,))
    return out


PLACES = [(n, p) for n, line in enumerate(LINES) for p in _places(line) if p]


def _replaced(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = _replaced(node[path[0]], path[1:], value)
    return copy


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PLACES), JSON), min_size=1, max_size=3))
def test_any_value_anywhere_is_read_or_reported(tmp_path_factory: Any, edits: list[tuple[tuple[int, tuple[Any, ...]], Any]]) -> None:
    lines = list(LINES)
    for (n, path), value in edits:
        try:
            lines[n] = _replaced(lines[n], path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed that place
    file = tmp_path_factory.mktemp("otlp") / "spans.jsonl"
    file.write_text("".join(json.dumps(line, allow_nan=True) + "\n" for line in lines), encoding="utf-8")
    out = otlp.read(file, {})  # never raises
    json.dumps(out.records, default=str)
    assert all(bad.line_no is not None and 1 <= bad.line_no <= len(lines) for bad in out.bad)
    for record in out.records:
        assert record["kind"] in ("tool_call", "loop_exit") and isinstance(record["ts"], str)
