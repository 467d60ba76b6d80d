"""The demo agent loop, instrumented with the collector, and ``run_demo``.

A raw Anthropic-style ``tool_use`` loop: call the model, run every
``tool_use`` block of its response (parallel calls share a step), hand the
results back as ``tool_result`` blocks, until the model answers in text.
Each agent type is one "process" with its own collector writing its own
JSONL file; a simulated crash drops the process (its open prompt never gets a
``loop_exit``) and a new collector takes over the same file, as a restarted
service would.

Everything that could vary between runs is fixed: the wall and perf clocks
are a fake clock that tools and model calls advance by scripted amounts, ids
come from hashes and counters, and spans go to a no-op tracer provider (so a
global OpenTelemetry SDK in the host process cannot put random trace ids in
the files). Two runs write byte-identical files.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from opentelemetry.trace import NoOpTracerProvider

from loopscope.collectors import Collector, JsonlSink
from loopscope.collectors.core import PromptLoop
from loopscope.cli.demo.hotel import Hotel, HotelError, blind_result, corrective_result
from loopscope.cli.demo.model import ScriptedModel, Text, ToolUse
from loopscope.cli.demo.scenarios import AGENT_BUDGETS, CONVERSATIONS, ConversationSpec, PromptSpec

PROVIDER = "anthropic"
MODEL = "scripted-hotel-model"
# Corrective mode enriches at most this many errors per prompt (seed 002's MAX_TOOL_RETRIES).
MAX_TOOL_RETRIES = 2
# Seconds between a loop's exit and the user's next prompt in the same conversation.
USER_THINK_S = 75
# Milliseconds a crashed service takes to come back.
RESTART_MS = 4000
LOG_FILES = {"concierge": "concierge.jsonl", "back_office": "back_office.jsonl"}


class DemoClock:
    """A fake clock in whole milliseconds: ``wall()`` is epoch seconds, ``perf()`` seconds since start."""

    def __init__(self) -> None:
        self.ms = 0
        self._epoch_ms = 0

    def set(self, when: dt.datetime) -> None:
        """Jump to ``when`` (never backwards)."""
        target = int(when.timestamp() * 1000)
        if target < self._epoch_ms + self.ms and self._epoch_ms:
            raise ValueError(f"demo clock cannot go back to {when.isoformat()}")
        if not self._epoch_ms:
            self._epoch_ms = target
        else:
            self.ms = target - self._epoch_ms

    def advance_ms(self, ms: int) -> None:
        """Let ``ms`` milliseconds pass."""
        self.ms += ms

    def wall(self) -> float:
        """Epoch seconds (the collector's ``wall_clock``)."""
        return (self._epoch_ms + self.ms) / 1000

    def perf(self) -> float:
        """Monotonic seconds (the collector's ``perf_clock``)."""
        return self.ms / 1000


class CrashedTurn(Exception):
    """Crash mode: a tool error escaped the agent loop (the user sees a failure)."""


class _ProcessDied(Exception):
    """The simulated process died mid-prompt (no loop_exit is written)."""


@dataclass
class _Process:
    """One running service: a collector writing one agent's log file."""

    path: Path
    clock: DemoClock
    ids: itertools.count  # type: ignore[type-arg]
    collector: Collector | None = None
    history: bool = False
    meter_provider: Any = None  # the dashboard metrics' MeterProvider (None: the global one)

    def start(self) -> Collector:
        self.collector = Collector(
            JsonlSink(self.path, max_bytes=None),
            tracer_provider=NoOpTracerProvider(),
            wall_clock=self.clock.wall,
            perf_clock=self.clock.perf,
            new_id=lambda: f"demo-{next(self.ids):06d}",
            strict=True,
            history=self.history,
            meter_provider=self.meter_provider,
        )
        return self.collector

    def stop(self) -> None:
        if self.collector is None:
            return
        self.collector.close()
        stats = self.collector.stats
        if stats.dropped or stats.sink_errors or stats.written != stats.emitted:
            raise RuntimeError(f"demo log {self.path} is incomplete: {stats}")
        self.collector = None


@dataclass
class _Harness:
    """The agent loop for one conversation (its hotel, mode and idempotency store)."""

    spec: ConversationSpec
    hotel: Hotel
    clock: DemoClock
    idempotency: dict[str, str] = field(default_factory=dict)
    context: bool = False  # inject call.recovery_context() after each error (blind mode)

    def run_prompt(self, process: _Process, index: int, prompt: PromptSpec) -> None:
        """Run one prompt to its exit, a crash, or the simulated death of the process."""
        spec = self.spec
        prompt_id = f"{spec.conversation_id}-p{index + 1}"
        model = ScriptedModel(prompt.policy, id_seed=f"{spec.conversation_id}/{prompt_id}")
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt.text}]
        loop = self._open(process, prompt_id)
        try:
            self._loop(loop, model, messages, prompt, resume_step=None)
        except HotelError as exc:  # crash mode: nothing catches the tool's exception
            loop.exit("error", exc)
            raise CrashedTurn(str(exc)) from exc
        except _ProcessDied:
            if prompt.fate == "died":
                process.stop()  # the process is gone; its loop never exits
                process.start()  # ...and the service comes back for the next user
                return
            # Restart: a new process resumes the prompt from the checkpointed messages
            # (the user message and the response whose tool calls were interrupted).
            process.stop()
            process.start()
            self.clock.advance_ms(RESTART_MS)
            loop = self._open(process, prompt_id)
            self._loop(loop, model, messages[:2], prompt, resume_step=0)
        loop.close()

    def _open(self, process: _Process, prompt_id: str) -> PromptLoop:
        spec = self.spec
        assert process.collector is not None
        return process.collector.start_prompt(
            conversation_id=spec.conversation_id,
            prompt_id=prompt_id,
            agent=spec.agent,
            max_tool_calls=AGENT_BUDGETS[spec.agent],
            provider=PROVIDER,
            model=MODEL,
            tags={"mode": spec.mode + ("+context" if self.context else ""), "scenario": spec.scenario},
        )

    def _loop(
        self, loop: PromptLoop, model: ScriptedModel, messages: list[dict[str, Any]], prompt: PromptSpec,
        resume_step: int | None,
    ) -> None:
        errors = 0
        while True:
            if resume_step is not None and loop.steps == 0:
                # Re-deliver the checkpointed response: no model call is made (or billed).
                response = model.transcript[resume_step]
                loop.model_response(stop_reason=response.stop_reason, input_tokens=0, output_tokens=0)
            else:
                response = model.create(messages)
                self.clock.advance_ms(response.latency_ms)
                loop.model_response(
                    stop_reason=response.stop_reason,
                    input_tokens=response.usage.input_tokens,
                    output_tokens=response.usage.output_tokens,
                )
                messages.append({"role": "assistant", "content": [_block(b) for b in response.content]})
            if response.stop_reason != "tool_use":
                return
            event = prompt.events.get(loop.step)
            if event is not None and resume_step is None:
                event(self.hotel)
            results = []
            contexts = []
            for block in response.content:
                if not isinstance(block, ToolUse):
                    continue
                if loop.over_budget():
                    loop.exit("budget_exceeded")
                    return
                remember = not (prompt.idempotency_lost and resume_step is None)
                content, is_error, context = self._call(loop, block, errors, remember)
                errors += is_error
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": content, "is_error": is_error})
                if context:
                    contexts.append({"type": "text", "text": context})
            results += contexts  # seed 000: the blocks right after the tool results
            dying = prompt.fate != "exit" and resume_step is None and loop.step == prompt.last_step
            if dying:
                raise _ProcessDied
            messages.append({"role": "user", "content": results})

    def _call(self, loop: PromptLoop, block: ToolUse, errors: int, remember: bool) -> tuple[str, bool, str | None]:
        """Run one tool_use block through the idempotency layer; returns (content, is_error, recovery block).

        ``remember=False`` models a crash between running the tool and saving
        its result in the idempotency store: a resumed run executes it again.
        """
        crash = self.spec.mode == "crash"
        with loop.tool_call(block.id, block.name, block.input) as call:
            stored = self.idempotency.get(block.id)
            if stored is not None:
                self.clock.advance_ms(3)  # an idempotency-store lookup
                call.replayed(stored)
                return stored, False, None
            try:
                content = self.hotel.execute(block.name, block.input, on_retry=call.attempt_failed)
            except HotelError as exc:
                if crash:
                    raise
                if self.spec.mode == "blind":
                    text = blind_result(exc)
                else:
                    text = corrective_result(exc, errors_before=errors, max_retries=MAX_TOOL_RETRIES)
                call.fail(text, error_type=exc.code, transient=exc.transient)
            else:
                if remember:
                    self.idempotency[block.id] = content
                return content, False, None
        return text, True, call.recovery_context() if self.context else None


def _block(block: ToolUse | Text) -> dict[str, Any]:
    return asdict(block)


def run_demo(out_dir: str | Path, meter_provider: Any = None) -> list[Path]:
    """Run every demo conversation and write the agents' JSONL logs into ``out_dir``.

    Existing demo log files in ``out_dir`` are replaced; nothing else there is touched.

    Args:
        out_dir: The folder to write ``concierge.jsonl`` and ``back_office.jsonl`` to
            (created when missing).
        meter_provider: OpenTelemetry MeterProvider for the collectors' live metrics (None:
            the global one, a no-op unless the host set one).

    Returns:
        The paths written, in a fixed order.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    clock = DemoClock()
    processes: dict[str, _Process] = {}
    for agent, name in LOG_FILES.items():
        path = out / name
        path.unlink(missing_ok=True)
        processes[agent] = _Process(path, clock, itertools.count(1), meter_provider=meter_provider)
    for process in processes.values():
        process.start()
    try:
        for spec in sorted(CONVERSATIONS, key=lambda s: s.start):
            run_conversation(spec, clock, processes[spec.agent])
    finally:
        for process in processes.values():
            process.stop()
    return [p.path for p in processes.values()]


CONTEXT_LOG = "blind_context.jsonl"
CONTEXT_SUFFIX = "-ctx"


def run_blind_with_context(out_dir: str | Path) -> Path:
    """Run the blind-mode conversations again, injecting ``call.recovery_context()`` after each error.

    Writes ``blind_context.jsonl`` into ``out_dir``: the same conversations, ids suffixed ``-ctx``,
    tagged ``mode: blind+context``, recorded by a collector with ``history=True``. Compare with the
    blind cohort of :func:`run_demo`'s logs (``loopscope compare --a tag:mode=blind --b
    tag:mode=blind+context``). The model is scripted: it follows whatever hint it is given, so this
    shows the plumbing, not how much a real model would gain.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / CONTEXT_LOG
    path.unlink(missing_ok=True)
    clock = DemoClock()
    process = _Process(path, clock, itertools.count(1), history=True)
    process.start()
    try:
        for spec in sorted((s for s in CONVERSATIONS if s.mode == "blind"), key=lambda s: s.start):
            run_conversation(replace(spec, conversation_id=spec.conversation_id + CONTEXT_SUFFIX), clock, process, context=True)
    finally:
        process.stop()
    return path


def run_conversation(spec: ConversationSpec, clock: DemoClock, process: _Process, context: bool = False) -> None:
    """Play one conversation's prompts in order; a crash ends the conversation."""
    clock.set(spec.start)
    hotel = Hotel(advance_ms=clock.advance_ms, gateway_failures=spec.gateway_failures)
    if spec.setup is not None:
        spec.setup(hotel)
    harness = _Harness(spec, hotel, clock, context=context)
    for index, prompt in enumerate(spec.prompts):
        if index:
            clock.advance_ms(USER_THINK_S * 1000)
        try:
            harness.run_prompt(process, index, prompt)
        except CrashedTurn:
            return


def describe(paths: list[Path]) -> dict[str, Any]:
    """Counts per written file (records, tool calls, loop exits), for the CLI's summary."""
    summary: dict[str, Any] = {}
    for path in paths:
        kinds = {"tool_call": 0, "loop_exit": 0}
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                kinds[json.loads(line)["kind"]] += 1
        summary[str(path)] = kinds
    return summary
