"""Two cohorts side by side: every dashboard metric, its difference and its significance.

A cohort is a ``Selection`` written as a **cohort spec**: comma-separated
``KEY:VALUE`` terms, all of which must hold (``--a`` / ``--b`` may also be
repeated, one term or several per option):

=====================  ====================================================
``tag:KEY=VALUE``      prompts whose records carry this tag (several: all)
``agent:NAME``         prompts of this agent type (several: any of them)
``week:2026-W47``      prompts that started in this ISO week (UTC)
``since:WHEN``         prompts that started at or after a date / timestamp
``until:WHEN``         prompts that started before a date / timestamp
``conversation:ID``    these conversations (several: any of them)
``file:PATH``          prompts with a record loaded from this file, or from
                       a file under this folder (several: any). ``file:``
                       takes the rest of its option, commas included, so
                       give it its own ``--a``/``--b``.
=====================  ====================================================

Examples: ``--a tag:mode=blind --b tag:mode=corrective``,
``--a week:2026-W46 --b week:2026-W47``, ``--a agent:concierge,since:2026-11-01``.

Each metric is tested as documented in ``stats``: the rates with the
two-proportion z-test, the per-prompt tool-call distributions (median, p99)
with Mann-Whitney U; ``difference`` is always B minus A. The tests assume two
independent samples: ``overlap`` counts the prompts both cohorts select (the
CLI warns when it is not 0).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from loopscope.analyses import stats
from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.cohorts import Figures, figures, tool_call_counts
from loopscope.analyses.selection import Selection, parse_instant, parse_iso_week, parse_tag
from loopscope.analyses.store.freshness import facts_ready

SPEC_KEYS = ("tag", "agent", "week", "since", "until", "conversation", "file")

# Files the store loaded from: exactly this path, or anything under this folder.
SOURCES_FOR_PATH_SQL = """
SELECT source_id FROM sources
WHERE path = $path OR starts_with(path, $folder)
ORDER BY source_id
"""

# Prompts both cohorts select (the tests assume two independent samples). {prompts}: prompt_facts
# when fresh (the same rows), else prompts_v, as cohorts reads them.
OVERLAP_SQL = "SELECT count(*) FROM {prompts} p WHERE ({a}) AND ({b})"

SPEC_HINT = (
    "a cohort is comma-separated KEY:VALUE terms, e.g. tag:mode=blind, agent:concierge, week:2026-W47, "
    "since:2026-11-01,until:2026-11-08, conversation:ID, file:PATH"
)


def parse_cohort(
    specs: list[str],
    con: duckdb.DuckDBPyConnection | None = None,
    *,
    option: str = "--a",
    within: Selection | None = None,
    resolve_files: bool = True,
) -> Selection:
    """Turn cohort spec strings (one or several ``--a`` values) into a Selection.

    Args:
        specs: the option values; each holds one or more comma-separated terms.
        con: the store, needed only to resolve ``file:`` terms to loaded files.
        option: the option name, for error messages.
        within: the base selection both cohorts lie in: only its files count (its
            ``source_ids``, e.g. the PATHs just loaded; a ``file:`` term narrows
            it further), and its window, agents and tags hold too.
        resolve_files: False checks the spec's syntax only (``file:`` terms
            are not looked up, no store needed): the CLI does this before
            loading PATHs, so a typo fails at once.

    Raises:
        LoopscopeError: an empty spec, an unknown key, a malformed value, a
            time window given twice, or a ``file:`` that was never loaded.
    """
    terms: list[str] = []
    for spec in specs:
        rest = spec.strip()
        while rest:
            if rest.startswith("file:"):
                terms.append(rest)
                break
            head, _, rest = rest.partition(",")
            rest = rest.strip()
            if head.strip():
                terms.append(head.strip())
    if not terms:
        raise LoopscopeError(f"{option} is empty", hint=SPEC_HINT)
    sel = Selection()
    base_sources = within.source_ids if within is not None else None
    agents: list[str] = []
    tags: list[tuple[str, str]] = []
    convs: list[str] = []
    sources: list[int] | None = None
    file_terms: list[str] = []
    for term in terms:
        key, sep, value = term.partition(":")
        key = key.strip().lower()
        if not sep or key not in SPEC_KEYS or not value.strip():
            raise LoopscopeError(f"{option} {term!r} is not a cohort term", hint=SPEC_HINT)
        value = value.strip()
        if key == "tag":
            tags.append(parse_tag(value))
        elif key == "agent":
            agents.append(value)
        elif key == "conversation":
            convs.append(value)
        elif key == "week":
            start, end = parse_iso_week(value)
            sel = _window(sel, option, term, since=start, until=end)
        elif key == "since":
            sel = _window(sel, option, term, since=parse_instant(value, option=f"{option} since:"))
        elif key == "until":
            sel = _window(sel, option, term, until=parse_instant(value, option=f"{option} until:"))
        elif key == "file" and resolve_files:
            sources = [*(sources or []), *_sources_for(con, value, option)]
            file_terms.append(term)
    source_ids = _intersect(base_sources, sources)
    if source_ids == () and sources:
        # Loaded once, but not among the PATHs this command was given: the
        # cohorts lie within those files, so the term selects nothing there.
        raise LoopscopeError(
            f"{option} {', '.join(file_terms)}: not among the PATHs given (the cohorts lie within them)",
            hint="give that file as a PATH too, or give no PATH to compare over everything in --db",
        )
    sel = replace(
        sel,
        agents=tuple(dict.fromkeys(agents)),
        tags=tuple(tags),
        conversation_ids=tuple(dict.fromkeys(convs)),
        source_ids=source_ids,
        extra={"spec": ",".join(terms)},
    )
    return sel if within is None else _within(sel, within, option)


def _within(sel: Selection, base: Selection, option: str) -> Selection:
    """``sel`` narrowed to ``base``'s window, agents and tags (both must hold)."""
    agents = sel.agents
    if base.agents:
        agents = tuple(a for a in sel.agents if a in base.agents) if sel.agents else base.agents
        if not agents:
            raise LoopscopeError(f"{option} names no agent among --agent {', '.join(base.agents)}",
                                 hint="drop --agent, or use an agent: term it allows")
    since = max((t for t in (sel.since, base.since) if t is not None), default=None)
    until = min((t for t in (sel.until, base.until) if t is not None), default=None)
    tags = tuple(dict.fromkeys((*base.tags, *sel.tags)))
    return replace(sel, since=since, until=until, agents=agents, tags=tags)


def _intersect(base: tuple[int, ...] | None, sources: list[int] | None) -> tuple[int, ...] | None:
    if sources is None:
        return base
    unique = tuple(dict.fromkeys(sources))
    return unique if base is None else tuple(s for s in unique if s in base)


def _window(sel: Selection, option: str, term: str, *, since: dt.datetime | None = None, until: dt.datetime | None = None) -> Selection:
    if (since is not None and sel.since is not None) or (until is not None and sel.until is not None):
        raise LoopscopeError(
            f"{option} {term!r} sets a time bound that is already set",
            hint="give one week: term, or one since: and one until:",
        )
    return replace(sel, since=since if since is not None else sel.since, until=until if until is not None else sel.until)


def _sources_for(con: duckdb.DuckDBPyConnection | None, value: str, option: str) -> list[int]:
    if con is None:
        raise ValueError("file: terms need the store")
    path = Path(value).expanduser().resolve()
    rows = con.execute(SOURCES_FOR_PATH_SQL, {"path": str(path), "folder": str(path) + "/"}).fetchall()
    if not rows:
        raise LoopscopeError(
            f"{option} file:{value} matches no loaded file",
            hint="load it first (pass it as a PATH argument or run loopscope load), and check the path",
        )
    return [r[0] for r in rows]


@dataclass(frozen=True)
class MetricComparison:
    """One metric in both cohorts."""

    metric: str
    a: float | None
    b: float | None
    difference: float | None
    test: stats.TestResult | None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON: the fields (``test`` as a dict or None), then ``significant``."""
        return {**asdict(self), "significant": bool(self.test and self.test.significant)}


@dataclass(frozen=True)
class Comparison:
    """The result of ``compare``: both cohorts' figures and each metric's comparison."""

    label_a: str
    label_b: str
    a: Figures
    b: Figures
    metrics: list[MetricComparison] = field(default_factory=list)
    alpha: float = stats.ALPHA
    overlap: int = 0

    def metric(self, name: str) -> MetricComparison:
        """The comparison of one metric by name."""
        return next(m for m in self.metrics if m.metric == name)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (every figure)."""
        return {
            "a": {"cohort": self.label_a, **self.a.to_dict()},
            "b": {"cohort": self.label_b, **self.b.to_dict()},
            "alpha": self.alpha,
            "overlap_prompts": self.overlap,
            "metrics": [m.to_dict() for m in self.metrics],
        }


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def compare_figures(
    a: Figures, b: Figures, counts_a: list[int], counts_b: list[int], *, alpha: float = stats.ALPHA
) -> list[MetricComparison]:
    """Compare two cohorts' figures metric by metric (B minus A), with tests.

    Args:
        a: figures of cohort A.
        b: figures of cohort B.
        counts_a: tool calls per prompt in A (for Mann-Whitney).
        counts_b: the same for B.
        alpha: significance level.
    """
    dist = stats.mann_whitney_u(counts_a, counts_b, alpha=alpha)
    rec = stats.two_proportion_test(a.recovered_errors, a.errors, b.recovered_errors, b.errors, alpha=alpha)
    conv = stats.two_proportion_test(
        a.recovered_errors + a.resolved_later_errors, a.errors,
        b.recovered_errors + b.resolved_later_errors, b.errors, alpha=alpha,
    )
    rep = stats.two_proportion_test(a.replays, a.tool_calls, b.replays, b.tool_calls, alpha=alpha)
    rows = [
        ("median_tool_calls_per_prompt", a.median_tool_calls_per_prompt, b.median_tool_calls_per_prompt, dist),
        ("p99_tool_calls_per_prompt", a.p99_tool_calls_per_prompt, b.p99_tool_calls_per_prompt, dist),
        ("recovery_rate", a.recovery_rate, b.recovery_rate, rec),
        ("conversation_recovery_rate", a.conversation_recovery_rate, b.conversation_recovery_rate, conv),
        ("replay_rate", a.replay_rate, b.replay_rate, rep),
        ("open_prompts", a.open_prompts, b.open_prompts, None),
        ("prompts", a.prompts, b.prompts, None),
        ("errors", a.errors, b.errors, None),
    ]
    return [MetricComparison(name, va, vb, _diff(va, vb), test) for name, va, vb, test in rows]


def compare(
    con: duckdb.DuckDBPyConnection,
    a: Selection,
    b: Selection,
    *,
    label_a: str = "A",
    label_b: str = "B",
    alpha: float = stats.ALPHA,
) -> Comparison:
    """Compute both cohorts' figures and compare every metric.

    Raises:
        LoopscopeError: a cohort selects no prompt.
    """
    fa, fb = figures(con, a), figures(con, b)
    for label, fig in ((label_a, fa), (label_b, fb)):
        if fig.prompts == 0:
            raise LoopscopeError(
                f"cohort {label} selects no prompt",
                hint="check the spec against the data: loopscope metrics --by week / --by agent shows what is there",
            )
    rows = compare_figures(fa, fb, tool_call_counts(con, a), tool_call_counts(con, b), alpha=alpha)
    where_a, params_a = a.where("p")
    where_b, params_b = b.where("p")
    prompts = "prompt_facts" if facts_ready(con) else "prompts_v"
    overlap = con.execute(OVERLAP_SQL.format(prompts=prompts, a=where_a, b=where_b), [*params_a, *params_b]).fetchone()[0]
    return Comparison(label_a, label_b, fa, fb, rows, alpha, int(overlap))
