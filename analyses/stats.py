"""Significance tests for "is this change larger than noise?", in plain Python.

loopscope flags a metric change (week over week in ``audit``, cohort A vs B in
``compare``) as significant when a two-sided test gives p < ``ALPHA`` (0.05).
Which test serves which figure:

- **Recovery rate** (recovered errors / errors) and **replay rate** (replays /
  tool calls): the *two-proportion z-test* with a pooled proportion
  (``two_proportion_test``). Each error (or tool call) is one Bernoulli trial.
- **Median and p99 tool calls per prompt**: the *Mann-Whitney U test*
  (``mann_whitney_u``) on the two samples of per-prompt tool-call counts,
  normal approximation with tie correction and continuity correction (the
  same as ``scipy.stats.mannwhitneyu(method="asymptotic")``). It asks whether
  one cohort's prompts tend to make more tool calls than the other's; it is a
  test of the whole distribution, so the same result is reported beside the
  median and the p99 (a shift confined to the top 1% may go unflagged).

Both are large-sample approximations: with fewer than ``MIN_SAMPLE`` trials
(or prompts) on a side the result is still computed but ``significant`` is
never set, and the result says why. No scipy: the normal tail is
``math.erfc``, exact to double precision, and the tests are a few lines each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

ALPHA = 0.05
# Below this many observations on a side the normal approximation is too rough
# to call anything significant.
MIN_SAMPLE = 5

TWO_PROPORTION = "two-proportion z-test"
MANN_WHITNEY = "Mann-Whitney U (normal approx., tie-corrected)"


@dataclass(frozen=True)
class TestResult:
    """The outcome of one two-sided test.

    Attributes:
        test: which test (``TWO_PROPORTION`` or ``MANN_WHITNEY``).
        statistic: z for the proportion test, U (of the first sample) for
            Mann-Whitney; None when the test cannot be computed.
        z: the standard normal score the p-value comes from.
        p_value: two-sided p-value; None when the test cannot be computed.
        significant: p_value < alpha and both samples have at least
            ``MIN_SAMPLE`` observations.
        note: why there is no result or no flag (empty sample, too few
            observations, no variation).
    """

    test: str
    statistic: float | None
    z: float | None
    p_value: float | None
    significant: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return asdict(self)


def normal_two_sided_p(z: float) -> float:
    """P(|Z| >= |z|) for a standard normal Z."""
    return math.erfc(abs(z) / math.sqrt(2.0))


def two_proportion_test(x1: int, n1: int, x2: int, n2: int, *, alpha: float = ALPHA) -> TestResult:
    """Two-sided two-proportion z-test of x1/n1 against x2/n2 (pooled variance).

    Args:
        x1: successes in the first sample (e.g. recovered errors).
        n1: trials in the first sample (e.g. errors).
        x2: successes in the second sample.
        n2: trials in the second sample.
        alpha: significance level.

    Returns:
        A ``TestResult``; ``p_value`` is None when a sample is empty.
    """
    if min(x1, x2) < 0 or x1 > n1 or x2 > n2:
        raise ValueError(f"bad counts {x1}/{n1}, {x2}/{n2}")
    if n1 == 0 or n2 == 0:
        return TestResult(TWO_PROPORTION, None, None, None, False, "a cohort has no trials")
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2))
    if se == 0.0:
        # Both proportions are 0 or both are 1: no difference to test.
        return TestResult(TWO_PROPORTION, 0.0, 0.0, 1.0, False, "no variation")
    z = (x1 / n1 - x2 / n2) / se
    p = normal_two_sided_p(z)
    return _result(TWO_PROPORTION, z, z, p, min(n1, n2), alpha)


def average_ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """1-based ranks of ``values`` with ties given their average rank.

    Returns:
        (ranks in input order, sizes of the tie groups with more than one member)
    """
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


@dataclass(frozen=True)
class Counts:
    """A sample given as (value, how many observations) pairs, ascending by value.

    What a ``GROUP BY value`` returns instead of every observation: a million
    prompts' tool-call counts are a few dozen pairs. ``mann_whitney_u`` ranks
    it per distinct value, with the same result as the list of observations.
    """

    pairs: tuple[tuple[float, int], ...]

    def __len__(self) -> int:
        return sum(n for _, n in self.pairs)


def _counts(sample: Sequence[float] | Counts) -> dict[float, int]:
    if isinstance(sample, Counts):
        out: dict[float, int] = {}
        for value, n in sample.pairs:
            out[value] = out.get(value, 0) + n
        return out
    found: dict[float, int] = {}
    for value in sample:
        found[value] = found.get(value, 0) + 1
    return found


def _rank_sum_of_counts(a: Sequence[float] | Counts, b: Sequence[float] | Counts) -> tuple[float, list[int]]:
    """``a``'s rank sum over the pooled sample and the tie group sizes, one step per distinct value.

    The ranks are average ranks (half-integers), so every partial sum is exact
    in floating point: the same sum as adding the observations' ranks one by one.
    """
    ca, cb = _counts(a), _counts(b)
    below = 0
    r1 = 0.0
    ties: list[int] = []
    for value in sorted(set(ca) | set(cb)):
        in_a = ca.get(value, 0)
        tied = in_a + cb.get(value, 0)
        r1 += in_a * (below + (tied + 1) / 2.0)
        if tied > 1:
            ties.append(tied)
        below += tied
    return r1, ties


def mann_whitney_u(a: Sequence[float] | Counts, b: Sequence[float] | Counts, *, alpha: float = ALPHA) -> TestResult:
    """Two-sided Mann-Whitney U test of sample ``a`` against sample ``b``.

    U is the statistic of ``a`` (the number of pairs where a's value is larger,
    ties counting one half). Either sample may be a ``Counts`` (value, count
    pairs): the same test, ranked per distinct value. The p-value uses the normal approximation with
    the tie-corrected variance and a continuity correction of 0.5.

    Returns:
        A ``TestResult``; ``p_value`` is None when a sample is empty.
    """
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return TestResult(MANN_WHITNEY, None, None, None, False, "a cohort has no prompts")
    if isinstance(a, Counts) or isinstance(b, Counts):
        r1, ties = _rank_sum_of_counts(a, b)
    else:
        ranks, ties = average_ranks([*a, *b])
        r1 = sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    mu = n1 * n2 / 2.0
    tie_term = sum(t**3 - t for t in ties) / (n * (n - 1)) if n > 1 else 0.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if var <= 0.0:
        return TestResult(MANN_WHITNEY, u1, 0.0, 1.0, False, "no variation")
    # Continuity correction: move |U - mu| half a step towards zero.
    z = max(abs(u1 - mu) - 0.5, 0.0) / math.sqrt(var)
    z = math.copysign(z, u1 - mu)
    p = normal_two_sided_p(z)
    return _result(MANN_WHITNEY, u1, z, p, min(n1, n2), alpha)


def _result(test: str, statistic: float, z: float, p: float, smallest: int, alpha: float) -> TestResult:
    if smallest < MIN_SAMPLE:
        return TestResult(test, statistic, z, p, False, f"fewer than {MIN_SAMPLE} observations in a cohort")
    return TestResult(test, statistic, z, p, p < alpha)
