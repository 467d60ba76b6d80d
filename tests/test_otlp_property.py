"""The OTLP reader never crashes: any value put anywhere in a real export is read or reported.

Starts from the captured OpenInference export (tests/fixtures/otlp/), replaces the value at a
random place (an id, a time, an attribute value, a whole span, a status...) with a random JSON
value, and reads the file: ``read`` returns (records that are plain JSON, bad lines with
numbers), it never raises.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope.analyses.ingest import otlp

_spec = importlib.util.spec_from_file_location("loopscope_test_json_mutation", Path(__file__).parent / "json_mutation.py")
assert _spec and _spec.loader
mutation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation)

CAPTURED = Path(__file__).parent / "fixtures" / "otlp" / "openai_agents_openinference.jsonl"
LINES = [json.loads(line) for line in CAPTURED.read_text(encoding="utf-8").splitlines() if line.strip()]

JSON = mutation.json_values(
    ["", "0", "2", "NaN", "Infinity", "-1", "99999999999999999999999", "STATUS_CODE_ERROR", "zz"],
    ["stringValue", "intValue", "doubleValue", "kvlistValue", "arrayValue", "values", "key", "value", "x"],
)


PLACES = mutation.places(LINES)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PLACES), JSON), min_size=1, max_size=3))
def test_any_value_anywhere_is_read_or_reported(tmp_path_factory: Any, edits: list[tuple[tuple[int, tuple[Any, ...]], Any]]) -> None:
    lines = mutation.edited(LINES, edits)
    file = tmp_path_factory.mktemp("otlp") / "spans.jsonl"
    file.write_text("".join(json.dumps(line, allow_nan=True) + "\n" for line in lines), encoding="utf-8")
    out = otlp.read(file, {})  # never raises
    json.dumps(out.records, default=str)
    assert all(bad.line_no is not None and 1 <= bad.line_no <= len(lines) for bad in out.bad)
    for record in out.records:
        assert record["kind"] in ("tool_call", "loop_exit") and isinstance(record["ts"], str)
