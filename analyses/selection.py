"""Which prompts an analysis counts.

Metrics are "computed over a selection of records (a time window, an agent, a
cohort)". loopscope selects whole prompts, so a prompt is never split across
windows: a prompt is in the selection when its first record's ``ts`` is in
``[since, until)``, its agent is one of ``agents``, its tags contain every
``tags`` pair, and (when ``source_ids`` is set) one of its records came from
those files. Record-level facts (replay, error class) are computed over the
whole store first (see ``model``).

``Selection.where()`` returns a SQL condition over ``prompts_v`` (aliased
``p``) and its bound parameters. Only fixed SQL text is formatted in; every
value is a parameter.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace

from loopscope.analyses.errors import LoopscopeError

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$")


def parse_instant(text: str, *, option: str = "--since") -> dt.datetime:
    """Parse a date (``2026-11-21``) or an RFC 3339 timestamp into naive UTC.

    Raises:
        LoopscopeError: the text is neither.
    """
    raw = text.strip()
    try:
        if _DATE_RE.match(raw):
            return dt.datetime.fromisoformat(raw)
        value = dt.datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise LoopscopeError(
            f"{option} {text!r} is not a date or timestamp",
            hint=f"use a date like 2026-11-21 or a timestamp like 2026-11-21T08:00:00Z for {option}",
        ) from None
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def parse_iso_week(text: str) -> tuple[dt.datetime, dt.datetime]:
    """``2026-W47`` -> (Monday 00:00, next Monday 00:00), naive UTC."""
    m = _WEEK_RE.match(text.strip())
    if not m:
        raise LoopscopeError(f"--week {text!r} is not an ISO week", hint="use the form 2026-W47")
    try:
        start = dt.datetime.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
    except ValueError:
        raise LoopscopeError(f"--week {text!r} does not exist", hint="ISO weeks run from W01 to W52 or W53") from None
    return start, start + dt.timedelta(days=7)


def parse_tag(text: str) -> tuple[str, str]:
    """``deploy=v42`` -> ("deploy", "v42")."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise LoopscopeError(f"--tag {text!r} is not KEY=VALUE", hint="for example --tag deploy=v42")
    return key, value


@dataclass(frozen=True)
class Selection:
    """A filter on prompts. Empty means every prompt in the store."""

    since: dt.datetime | None = None
    until: dt.datetime | None = None
    agents: tuple[str, ...] = ()
    tags: tuple[tuple[str, str], ...] = ()
    source_ids: tuple[int, ...] | None = None
    conversation_ids: tuple[str, ...] = ()
    untagged: tuple[str, ...] = ()
    """Tag keys the prompt's records must *not* carry (the ``(untagged)`` group of ``--by tag:KEY``)."""
    extra: dict[str, str] = field(default_factory=dict, compare=False)
    store_sources: frozenset[int] | None = field(default=None, compare=False)
    """Every record in the store comes from one of these sources (``store.open_for_analysis`` checks it on
    small stores). When ``source_ids`` holds them all, "one of its records came from these files" holds
    for every prompt, and ``where`` leaves the condition out: the same rows, without a join per query."""

    def where(self, alias: str = "p") -> tuple[str, list[object]]:
        """SQL condition over ``prompts_v`` rows (as ``alias``) and its parameters."""
        if not alias.isidentifier():
            raise ValueError(f"bad alias {alias!r}")
        parts: list[str] = []
        params: list[object] = []
        if self.since is not None:
            parts.append(f"{alias}.first_ts >= ?")
            params.append(self.since)
        if self.until is not None:
            parts.append(f"{alias}.first_ts < ?")
            params.append(self.until)
        if self.agents:
            parts.append(f"list_contains(?, {alias}.agent)")
            params.append(list(self.agents))
        for key, value in self.tags:
            parts.append(f"json_extract_string({alias}.tags, ?) = ?")
            params.extend([_json_path(key), value])
        for key in self.untagged:
            parts.append(f"coalesce(json_extract_string({alias}.tags, ?), '') = ''")
            params.append(_json_path(key))
        if self.conversation_ids:
            parts.append(f"list_contains(?, {alias}.conversation_id)")
            params.append(list(self.conversation_ids))
        if self.source_ids is not None and not (
            self.store_sources is not None and self.store_sources <= set(self.source_ids)
        ):
            parts.append(
                f"""EXISTS (
                    SELECT 1 FROM tool_calls s
                    WHERE s.conversation_id = {alias}.conversation_id AND s.prompt_id = {alias}.prompt_id
                      AND list_contains(?, s.source_id)
                    UNION ALL
                    SELECT 1 FROM loop_exits s
                    WHERE s.conversation_id = {alias}.conversation_id AND s.prompt_id = {alias}.prompt_id
                      AND list_contains(?, s.source_id)
                )"""
            )
            params.extend([list(self.source_ids), list(self.source_ids)])
        return (" AND ".join(parts) or "TRUE"), params

    def calls_where(self, alias: str = "t") -> tuple[str, list[object]]:
        """SQL condition over tool-call rows (as ``alias``) by the selection's conversations alone, and its parameters.

        ``where`` filters the prompts; when the selection names conversations, this filters the tool
        calls by them too, so DuckDB prunes before a window over the calls instead of numbering every
        record in the store. One id is an equality: DuckDB pushes that (not ``list_contains``) into the
        views' aggregates and across the join to the prompts.
        """
        if not alias.isidentifier():
            raise ValueError(f"bad alias {alias!r}")
        if len(self.conversation_ids) == 1:
            return f"{alias}.conversation_id = ?", [self.conversation_ids[0]]
        if self.conversation_ids:
            return f"list_contains(?, {alias}.conversation_id)", [list(self.conversation_ids)]
        return "TRUE", []


UNTAGGED = "(untagged)"
"""The group of ``--by tag:KEY`` for prompts whose records do not carry the tag (or carry it empty)."""
TAG_PREFIX = "tag:"


@dataclass(frozen=True)
class GroupBy:
    """A grouping of prompts: ``day``, ``week``, ``agent`` or ``tag:KEY`` (the value of one tag).

    ``key_sql`` is the grouping expression over prompts (as ``alias``) with its
    bound parameters (the tag's key is a parameter, never SQL text); ``narrow``
    the selection of one group's prompts.
    """

    kind: str
    tag: str = ""

    @property
    def label(self) -> str:
        """As the user wrote it: ``agent``, ``tag:model``."""
        return TAG_PREFIX + self.tag if self.kind == "tag" else self.kind

    def key_sql(self, fixed: dict[str | None, str], alias: str = "p") -> tuple[str, list[object]]:
        """The grouping expression and its parameters; ``fixed`` holds the expressions of the other kinds."""
        if self.kind != "tag":
            return fixed[self.kind], []
        # an empty value counts as no tag (ClickHouse's JSON_VALUE gives '' for an absent key)
        return f"coalesce(nullif(json_extract_string({alias}.tags, ?), ''), '{UNTAGGED}')", [_json_path(self.tag)]

    def narrow(self, selection: Selection, value: str) -> Selection:
        """``selection`` limited to the prompts of the group ``value`` (agent or tag groups)."""
        if self.kind == "agent":
            return replace(selection, agents=(value,))
        if self.kind == "tag":
            if value == UNTAGGED:
                return replace(selection, untagged=(*selection.untagged, self.tag))
            return replace(selection, tags=(*selection.tags, (self.tag, value)))
        raise ValueError(f"cannot narrow a selection to one {self.kind}")


def parse_group_by(text: str, choices: tuple[str, ...], *, option: str = "--by") -> GroupBy:
    """``week`` / ``agent`` / ``tag:model`` -> ``GroupBy`` (``choices``: the plain kinds allowed here).

    Raises:
        LoopscopeError: neither one of ``choices`` nor ``tag:KEY`` with a key.
    """
    raw = text.strip()
    if raw.startswith(TAG_PREFIX):
        key = raw[len(TAG_PREFIX):]
        if not key:
            raise LoopscopeError(f"{option} {text!r} names no tag", hint=f"give the tag's key, e.g. {option} tag:model")
        return GroupBy("tag", key)
    if raw in choices:
        return GroupBy(raw)
    ways = ", ".join(f"{option} {c}" for c in choices)
    raise LoopscopeError(f"{option} {text!r} is not a grouping", hint=f"use {ways} or {option} tag:KEY (e.g. tag:model)")


def _json_path(key: str) -> str:
    # JSON path for one top-level key, quoted so any key text is inert.
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
