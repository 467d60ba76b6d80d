"""The significance tests of loopscope.analyses.stats against reference values.

Reference p-values were computed with scipy 1.17.1
(``scipy.stats.mannwhitneyu(a, b, method="asymptotic")`` and
``2 * scipy.stats.norm.sf(|z|)``) and are pasted here, so the suite needs no scipy.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope.analyses import stats


def test_two_proportion_matches_reference() -> None:
    r = stats.two_proportion_test(30, 40, 18, 40)
    assert r.test == stats.TWO_PROPORTION
    assert r.z == pytest.approx(2.7386127875258306, rel=1e-12)
    assert r.p_value == pytest.approx(0.00616989932054416, rel=1e-9)
    assert r.significant


def test_two_proportion_not_significant() -> None:
    r = stats.two_proportion_test(45, 100, 60, 110)
    assert r.z == pytest.approx(-1.3816985594155142, rel=1e-12)
    assert r.p_value == pytest.approx(0.16706427691489423, rel=1e-9)
    assert not r.significant


def test_two_proportion_edge_cases() -> None:
    empty = stats.two_proportion_test(0, 0, 3, 10)
    assert empty.p_value is None and not empty.significant and "no trials" in empty.note
    same = stats.two_proportion_test(10, 10, 7, 7)
    assert same.p_value == 1.0 and not same.significant
    small = stats.two_proportion_test(4, 4, 0, 4)
    assert small.p_value is not None and small.p_value < 0.05
    assert not small.significant and "fewer than" in small.note
    with pytest.raises(ValueError):
        stats.two_proportion_test(5, 4, 0, 4)


def test_mann_whitney_matches_reference() -> None:
    a = [0, 1, 1, 2, 3, 3, 3, 5, 8, 13]
    b = [1, 2, 2, 2, 4, 4, 6, 7, 9, 15, 20, 21]
    r = stats.mann_whitney_u(a, b)
    assert r.statistic == 38.5
    assert r.p_value == pytest.approx(0.16386574698904588, rel=1e-9)
    assert not r.significant


def test_mann_whitney_heavy_ties_matches_reference() -> None:
    r = stats.mann_whitney_u([3, 3, 3, 3, 3, 4], [3, 3, 3, 5, 5, 5, 5])
    assert r.statistic == 10.5
    assert r.p_value == pytest.approx(0.0971740071195831, rel=1e-9)


def test_mann_whitney_clear_shift_is_significant() -> None:
    r = stats.mann_whitney_u([1, 2, 2, 3, 1, 2, 3, 2], [9, 8, 12, 10, 11, 9, 14, 10])
    assert r.significant and r.z < 0


def test_mann_whitney_degenerate() -> None:
    assert stats.mann_whitney_u([], [1, 2]).p_value is None
    flat = stats.mann_whitney_u([2, 2, 2, 2, 2], [2, 2, 2, 2, 2])
    assert flat.p_value == 1.0 and not flat.significant


def test_average_ranks() -> None:
    ranks, ties = stats.average_ranks([10, 20, 10, 30, 20, 20])
    assert ranks == [1.5, 4.0, 1.5, 6.0, 4.0, 4.0]
    assert sorted(ties) == [2, 3]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=25),
    st.lists(st.integers(0, 30), min_size=1, max_size=25),
)
def test_mann_whitney_properties(a: list[int], b: list[int]) -> None:
    ab = stats.mann_whitney_u(a, b)
    ba = stats.mann_whitney_u(b, a)
    # U_a + U_b = n_a * n_b and the test is symmetric.
    assert ab.statistic + ba.statistic == pytest.approx(len(a) * len(b))
    assert ab.p_value == pytest.approx(ba.p_value)
    assert 0.0 <= ab.p_value <= 1.0
    # U counts the pairs where a wins (ties one half).
    brute = sum((x > y) + 0.5 * (x == y) for x in a for y in b)
    assert ab.statistic == pytest.approx(brute)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 200), st.integers(1, 200), st.data())
def test_two_proportion_properties(n1: int, n2: int, data: st.DataObject) -> None:
    x1 = data.draw(st.integers(0, n1))
    x2 = data.draw(st.integers(0, n2))
    r = stats.two_proportion_test(x1, n1, x2, n2)
    s = stats.two_proportion_test(x2, n2, x1, n1)
    assert 0.0 <= r.p_value <= 1.0
    assert r.p_value == pytest.approx(s.p_value)
    assert math.copysign(1, r.z) == math.copysign(1, -s.z) or r.z == 0


@settings(max_examples=200, deadline=None)
@given(
    a=st.lists(st.integers(min_value=0, max_value=12), max_size=60),
    b=st.lists(st.integers(min_value=0, max_value=12), max_size=60),
)
def test_mann_whitney_of_value_counts_equals_the_test_of_the_observations(a: list[int], b: list[int]) -> None:
    """The audit's samples come as (value, prompts) pairs from a GROUP BY: exactly the same test."""
    counts_a = stats.Counts(tuple(sorted(Counter(a).items())))
    counts_b = stats.Counts(tuple(sorted(Counter(b).items())))
    assert len(counts_a) == len(a) and len(counts_b) == len(b)
    assert stats.mann_whitney_u(counts_a, counts_b) == stats.mann_whitney_u(a, b)
    assert stats.mann_whitney_u(counts_a, b) == stats.mann_whitney_u(a, b)
