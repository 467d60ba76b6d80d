"""Property tests: input_shape / args_fingerprint over arbitrary JSON arguments."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope.collectors import args_fingerprint, input_shape

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
ARGS = st.dictionaries(st.text(max_size=8), JSON, max_size=6)
TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}


@settings(max_examples=60, deadline=None)
@given(ARGS)
def test_shape_names_every_key_with_a_json_type_and_no_values(args: dict) -> None:
    shape = input_shape(args)
    assert set(shape) == set(args) and set(shape.values()) <= TYPES
    # The JSON-string form (OpenAI) gives the same shape and fingerprint.
    text = json.dumps(args)
    assert input_shape(text) == shape
    assert args_fingerprint(text) == args_fingerprint(args)


@settings(max_examples=60, deadline=None)
@given(ARGS)
def test_fingerprint_ignores_key_order_and_is_sha256_of_canonical_json(args: dict) -> None:
    reordered = dict(reversed(list(args.items())))
    assert args_fingerprint(reordered) == args_fingerprint(args)
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert args_fingerprint(args) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
