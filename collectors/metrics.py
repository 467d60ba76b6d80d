"""The four dashboard metrics live: OpenTelemetry instruments recorded by the collector.

Through the OpenTelemetry **metrics API** only: the host chooses the MeterProvider (``Collector(
meter_provider=...)``, or the global one set with ``opentelemetry.metrics.set_meter_provider``).
With neither, each prompt costs one look at the global provider and each tool call one attribute
check: nothing is counted, nothing is built.

The figures follow the spec's definitions (docs/records.md, "The four dashboard metrics"), as the
offline analyses compute them (``loopscope.analyses.metrics``):

- ``loopscope.prompt.tool_calls`` (histogram, once per finished prompt): n = its tool calls;
  the median and p99 come from its buckets (:data:`TOOL_CALLS_BUCKETS`).
- ``loopscope.tool.calls``, ``loopscope.tool.errors`` (``is_error`` and not a replay),
  ``loopscope.tool.replays`` (``replayed: true``; with ``history=True`` also the same call again
  under an id already seen in the conversation).
- ``loopscope.tool.error_classes`` (when the prompt ends): its errors by class, ``recovered``
  (a later step of the prompt has a successful call of a tool that is not a scratchpad tool,
  and the exit is normal), ``aborted`` (abnormal exit) or ``gave_up`` (normal exit, no later
  success). Errors of prompts still open are the difference with ``loopscope.tool.errors``.
- ``loopscope.prompt.exits`` by exit reason, ``loopscope.prompt.active`` (prompts in flight:
  the live ``open_prompts``), ``gen_ai.execute_tool.duration`` (the GenAI conventions' tool
  latency histogram, seconds).

Attribute values come from the host and the model (tool names are the model's words): each
attribute keeps at most ``max_values`` distinct values per collector, later new values are
recorded as ``_OTHER`` and counted (``Collector.stats.metric_values_capped``). Record tags become
attributes only for the keys the user lists (``metric_tags=``).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Iterable, Mapping

from opentelemetry import metrics as otel_metrics

from loopscope.collectors import otel
from loopscope.collectors.records import NORMAL_EXITS

#: Spec default: the ``think`` tool does nothing in the world, so it never recovers an error.
DEFAULT_SCRATCHPAD_TOOLS = ("think",)
#: Distinct values kept per attribute (tool names, agents, exit reasons, error types, each tag key).
DEFAULT_MAX_VALUES = 100
#: The value recorded past the cap (as OpenTelemetry does for ``error.type``).
OTHER = "_OTHER"
#: Distinct error steps a prompt keeps pending (errors after its latest successful call); past it,
#: errors at new steps are counted as errors and judged unrecovered (counted in ``dropped``).
MAX_PENDING_STEPS = 4096

# Instrument names (OpenTelemetry naming: lowercase, dot namespaces, units apart; our own
# figures under ``loopscope.``, the GenAI conventions' tool duration under its own name).
PROMPT_TOOL_CALLS = "loopscope.prompt.tool_calls"
PROMPT_EXITS = "loopscope.prompt.exits"
PROMPT_ACTIVE = "loopscope.prompt.active"
TOOL_CALLS = "loopscope.tool.calls"
TOOL_ERRORS = "loopscope.tool.errors"
TOOL_REPLAYS = "loopscope.tool.replays"
TOOL_ERROR_CLASSES = "loopscope.tool.error_classes"
TOOL_DURATION = "gen_ai.execute_tool.duration"

# Attribute keys.
ERROR_CLASS = "loopscope.error.class"
RECOVERED, ABORTED, GAVE_UP = "recovered", "aborted", "gave_up"


def _buckets() -> tuple[float, ...]:
    """Half-integers: 0.5, 1.5, ..., 16.5, then 2^(1/8) apart up to 4096.5 (80 boundaries).

    Counts are whole numbers, so a boundary between two of them puts each count up to 16 alone
    in its bucket (k - 0.5, k + 0.5]: a quantile read from the buckets (linear interpolation
    inside one, as Prometheus's ``histogram_quantile`` does) is within 0.5 of the count at its
    rank. Above 16 a bucket holds the counts of a range at most 9% wide (2^(1/8) - 1 = 9.05%).
    """
    out = [k + 0.5 for k in range(17)]
    x = 16.0
    while out[-1] < 4096:
        x *= 2 ** (1 / 8)
        b = round(x) + 0.5
        if b > out[-1]:
            out.append(b)
    return tuple(out)


#: Bucket boundaries advised for ``loopscope.prompt.tool_calls`` (explicit buckets: the Prometheus
#: text format and its exporter carry no exponential histogram; see docs/collector.md).
TOOL_CALLS_BUCKETS = _buckets()
#: ``gen_ai.execute_tool.duration``: the GenAI conventions' duration boundaries, with three
#: below 10 ms (many tools answer in a few milliseconds).
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

try:  # the API's placeholder provider before the host sets one: metrics off
    from opentelemetry.metrics import _internal as _api
    from opentelemetry.metrics._internal import _ProxyMeterProvider as _Proxy
except ImportError:  # pragma: no cover - an API that moved it
    _api = _Proxy = None
# With this variable set, the API loads a provider on the first get_meter_provider() call.
_PROVIDER_FROM_ENV = "OTEL_PYTHON_METER_PROVIDER" in os.environ


def _global_provider() -> Any:
    """The global MeterProvider, or None while the host has set none (a module global read:
    ``get_meter_provider()`` looks the environment up on each call, 1 us a prompt)."""
    if _api is not None and not _PROVIDER_FROM_ENV:
        try:
            return _api._METER_PROVIDER
        except AttributeError:  # pragma: no cover - an API that renamed it
            pass
    return otel_metrics.get_meter_provider()


def _off(provider: Any) -> bool:
    if provider is None or isinstance(provider, otel_metrics.NoOpMeterProvider):
        return True
    if _Proxy is not None:
        return isinstance(provider, _Proxy)
    return type(provider).__name__ == "_ProxyMeterProvider"  # pragma: no cover


class _Capped:
    """At most ``limit`` distinct values; later new ones become :data:`OTHER`. Thread-safe enough:
    a race can let one or two values past the cap, never an unbounded number."""

    __slots__ = ("seen", "limit", "capped")

    def __init__(self, limit: int) -> None:
        self.seen: set[str] = set()
        self.limit = limit
        self.capped = 0

    def __call__(self, value: object) -> str:
        v = value if value.__class__ is str else str(value)
        if v in self.seen:
            return v
        if len(self.seen) < self.limit:
            self.seen.add(v)
            return v
        self.capped += 1
        return OTHER


class _SeenIds:
    """Tool-call ids per conversation with the (tool name, fingerprint) calls made under them.

    Bounded like the history: ``max_conversations`` (least recently used evicted) and
    ``max_ids`` per conversation (oldest dropped). Used only with ``history=True``, where the
    fingerprint is computed on the host thread anyway.
    """

    def __init__(self, max_conversations: int, max_ids: int) -> None:
        self.max_conversations = max_conversations
        self.max_ids = max_ids
        self._convs: OrderedDict[str, dict[str, set[tuple[str, Any]]]] = OrderedDict()
        self._lock = threading.Lock()
        self.dropped = 0

    def repeat(self, conversation_id: str, tool_call_id: Any, tool_name: str, fingerprint: Any) -> bool:
        """Whether this call was already made under this id in the conversation (a replay)."""
        key = (tool_name, fingerprint)
        with self._lock:
            ids = self._convs.get(conversation_id)
            if ids is None:
                ids = self._convs[conversation_id] = {}
                while len(self._convs) > self.max_conversations:
                    _, old = self._convs.popitem(last=False)
                    self.dropped += len(old)
            else:
                self._convs.move_to_end(conversation_id)
            calls = ids.get(tool_call_id)
            if calls is None:
                if len(ids) >= self.max_ids:
                    del ids[next(iter(ids))]
                    self.dropped += 1
                ids[tool_call_id] = {key}
                return False
            if key in calls:
                return True
            calls.add(key)  # an id collision: a new call (the analyses report it)
            return False


class _Instruments:
    """The instruments of one MeterProvider and the bounded attribute caches."""

    def __init__(self, provider: Any, version: str, max_values: int) -> None:
        meter = provider.get_meter(otel.SCOPE, version)
        self.prompt_tool_calls = meter.create_histogram(
            PROMPT_TOOL_CALLS,
            unit="{tool_call}",
            description="Tool calls per finished user prompt (the median and p99 of the dashboard).",
            explicit_bucket_boundaries_advisory=TOOL_CALLS_BUCKETS,
        )
        self.exits = meter.create_counter(PROMPT_EXITS, unit="{prompt}", description="Prompts finished, by exit reason.")
        self.active = meter.create_up_down_counter(
            PROMPT_ACTIVE, unit="{prompt}", description="Prompts started and not yet exited (open prompts)."
        )
        self.calls = meter.create_counter(TOOL_CALLS, unit="{tool_call}", description="Tool calls recorded.")
        self.errors = meter.create_counter(
            TOOL_ERRORS, unit="{error}", description="Tool calls whose result told the model of an error, replays excluded."
        )
        self.replays = meter.create_counter(TOOL_REPLAYS, unit="{tool_call}", description="Replayed tool calls.")
        self.error_classes = meter.create_counter(
            TOOL_ERROR_CLASSES,
            unit="{error}",
            description="Errors of finished prompts by class: recovered, aborted, gave_up.",
        )
        self.duration = meter.create_histogram(
            TOOL_DURATION,
            unit="s",
            description="Tool execution duration, retries included.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.agents = _Capped(max_values)
        self.tools = _Capped(max_values)
        self.reasons = _Capped(max_values)
        self.error_types = _Capped(max_values)
        self.tag_values: dict[str, _Capped] = {}
        self.max_values = max_values
        self._prompt_attrs: dict[tuple[Any, ...], dict[str, str]] = {}
        self._tool_attrs: dict[tuple[Any, ...], dict[str, str]] = {}

    @property
    def capped(self) -> int:
        return (
            self.agents.capped
            + self.tools.capped
            + self.reasons.capped
            + self.error_types.capped
            + sum(c.capped for c in list(self.tag_values.values()))
        )

    def prompt_attrs(self, agent: str, tags: Mapping[str, str] | None, tag_keys: tuple[str, ...]) -> dict[str, str]:
        key: tuple[Any, ...] = (self.agents(agent),)
        if tag_keys:
            values = []
            for k in tag_keys:
                v = tags.get(k) if tags else None
                if v is not None:
                    cap = self.tag_values.get(k)
                    if cap is None:
                        cap = self.tag_values.setdefault(k, _Capped(self.max_values))
                    v = cap(v)
                values.append(v)
            key += tuple(values)
        attrs = self._prompt_attrs.get(key)
        if attrs is None:
            attrs = {otel.AGENT_NAME: key[0]}
            for k, v in zip(tag_keys, key[1:]):
                if v is not None:
                    attrs[otel.TAG_PREFIX + k] = v
            # bounded: every part of the key is capped
            attrs = self._prompt_attrs.setdefault(key, attrs)
        return attrs

    def tool_attrs(self, prompt_attrs: dict[str, str], tool_name: object, error_type: object = None) -> dict[str, str]:
        tool = self.tools(tool_name)
        err = None if error_type is None else self.error_types(error_type)
        key = (id(prompt_attrs), tool, err)
        attrs = self._tool_attrs.get(key)
        if attrs is None:
            attrs = dict(prompt_attrs)
            attrs[otel.TOOL_NAME] = tool
            if err is not None:
                attrs[otel.ERROR_TYPE] = err
            attrs = self._tool_attrs.setdefault(key, attrs)
        return attrs


class LiveMetrics:
    """The collector's metrics: which provider, which instruments, the scratchpad tools, the tags.

    Built by :class:`~loopscope.collectors.core.Collector`; :meth:`prompt` returns a
    :class:`PromptMetrics` for each prompt while a real MeterProvider is configured, else None.
    """

    def __init__(
        self,
        meter_provider: Any = None,
        *,
        enabled: bool = True,
        scratchpad_tools: Iterable[str] = DEFAULT_SCRATCHPAD_TOOLS,
        tags: Iterable[str] = (),
        max_values: int = DEFAULT_MAX_VALUES,
        seen_ids: tuple[int, int] | None = None,
    ) -> None:
        self.enabled = bool(enabled)
        self.scratchpad_tools = frozenset(str(t) for t in scratchpad_tools)
        self.tag_keys = tuple(dict.fromkeys(str(t) for t in tags))
        self.max_values = max_values
        self._explicit = meter_provider
        self._by_provider: dict[int, tuple[Any, _Instruments]] = {}
        self._lock = threading.Lock()
        self.ids = _SeenIds(*seen_ids) if seen_ids is not None else None
        self.dropped = 0

    @property
    def capped(self) -> int:
        return sum(inst.capped for _, inst in list(self._by_provider.values()))

    def _instruments(self) -> _Instruments | None:
        if not self.enabled:
            return None
        provider = self._explicit
        if provider is None:
            provider = _global_provider()
        if _off(provider):
            return None
        entry = self._by_provider.get(id(provider))
        if entry is None or entry[0] is not provider:
            with self._lock:
                entry = self._by_provider.get(id(provider))
                if entry is None or entry[0] is not provider:
                    entry = (provider, _Instruments(provider, otel._version(), self.max_values))
                    self._by_provider[id(provider)] = entry
        return entry[1]

    def prompt(self, conversation_id: str, agent: str, tags: Mapping[str, str] | None) -> PromptMetrics | None:
        """The metrics of one prompt (its start is counted in ``loopscope.prompt.active``), or None when off."""
        inst = self._instruments()
        if inst is None:
            return None
        attrs = inst.prompt_attrs(agent, tags, self.tag_keys)
        inst.active.add(1, attrs)
        return PromptMetrics(self, inst, conversation_id, attrs)


#: ``PromptMetrics.call(fingerprint=...)`` default: the argument fingerprint is not known on the host thread.
UNKNOWN = object()


class PromptMetrics:
    """One prompt's live figures: what its exit needs to classify its errors, and nothing else.

    Memory: a few ints, a dict of tool attributes used by this prompt, and the errors still
    pending (steps after the latest successful call, at most :data:`MAX_PENDING_STEPS`).
    """

    __slots__ = ("_live", "_inst", "_conv", "_attrs", "_tools", "_max_ok", "_below", "_pending", "_errors", "_unjudged", "_lock")

    def __init__(self, live: LiveMetrics, inst: _Instruments, conversation_id: str, attrs: dict[str, str]) -> None:
        self._live = live
        self._inst = inst
        self._conv = conversation_id
        self._attrs = attrs
        self._tools: dict[Any, dict[str, str]] = {}
        self._max_ok = -1  # the latest step with a successful call of a non-scratchpad tool
        self._below = 0  # errors at a step before _max_ok: recovered if the exit is normal
        self._pending: dict[Any, int] = {}  # errors at or after _max_ok, by step
        self._errors = 0
        self._unjudged = 0
        self._lock = threading.Lock()

    def call(
        self,
        tool_call_id: Any,
        tool_name: Any,
        step: Any,
        is_error: bool,
        replayed: bool,
        latency_ms: float,
        error_type: Any = None,
        fingerprint: Any = UNKNOWN,
    ) -> None:
        """Count one tool call (after its record was handed to the sink)."""
        inst = self._inst
        attrs = self._tools.get(tool_name)
        if attrs is None:
            attrs = self._tools[tool_name] = inst.tool_attrs(self._attrs, tool_name)
        inst.calls.add(1, attrs)
        if is_error:
            inst.duration.record(latency_ms / 1000.0, inst.tool_attrs(self._attrs, tool_name, error_type or OTHER))
        else:
            inst.duration.record(latency_ms / 1000.0, attrs)
        ids = self._live.ids
        if ids is not None and fingerprint is not UNKNOWN:
            replayed = ids.repeat(self._conv, tool_call_id, str(tool_name), fingerprint) or replayed
        if replayed:
            inst.replays.add(1, attrs)
        if is_error:
            if replayed:
                return
            inst.errors.add(1, attrs)
            with self._lock:
                self._errors += 1
                if step < self._max_ok:
                    self._below += 1
                elif step in self._pending or len(self._pending) < MAX_PENDING_STEPS:
                    self._pending[step] = self._pending.get(step, 0) + 1
                else:
                    self._unjudged += 1
                    self._live.dropped += 1
        elif step > self._max_ok and tool_name not in self._live.scratchpad_tools:
            with self._lock:
                if step > self._max_ok:
                    self._max_ok = step
                    pending = self._pending
                    if pending:
                        for s in [s for s in pending if s < step]:
                            self._below += pending.pop(s)

    def exit(self, reason: str, tool_calls: int) -> None:
        """The prompt ended with ``reason``: its histogram point, exit, errors by class, active - 1."""
        inst = self._inst
        attrs = self._attrs
        inst.active.add(-1, attrs)
        inst.prompt_tool_calls.record(tool_calls, attrs)
        exit_attrs = dict(attrs)
        exit_attrs[otel.EXIT_REASON] = inst.reasons(reason)
        inst.exits.add(1, exit_attrs)
        with self._lock:
            errors, below = self._errors, self._below
        if not errors:
            return
        if reason in NORMAL_EXITS:
            if below:
                inst.error_classes.add(below, {**attrs, ERROR_CLASS: RECOVERED})
            if errors - below:
                inst.error_classes.add(errors - below, {**attrs, ERROR_CLASS: GAVE_UP})
        else:
            inst.error_classes.add(errors, {**attrs, ERROR_CLASS: ABORTED})
