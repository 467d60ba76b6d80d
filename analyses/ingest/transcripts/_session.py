"""One coding-agent session as v1 records: the part both transcript readers share.

A reader (``claude_code``, ``codex``) walks its file line by line and tells a
``Session`` what happened, in file order:

- ``prompt(prompt_id, ts)``: a real user message (the reader decides which are);
- ``response(step_key, ts, ...)``: (part of) one model response; every line of
  one response carries the same ``step_key`` (Claude Code: ``message.id``;
  Codex: the run of response items between two tool outputs);
- ``call(step_key, ts, call_id, name, arguments)``: a tool call of that response;
- ``result(call_id, ts, text, is_error, ...)``: the output of a call;
- ``end(reason, ts, ...)``: the agent loop of the current prompt ended in a way
  the file states (interrupted, an API error, a finished turn).

``finish()`` returns the records and protocol violations. The rules:

- ``step`` is the index of the response within its prompt (0-based); the calls
  of one response share it.
- One ``tool_call`` record per call that got a result: ``is_error`` as the reader
  decided, ``outcome`` ``permanent_fail`` / ``ok``, ``attempts`` 1, ``replayed``
  false (a transcript cannot see retries inside a tool or an idempotency layer),
  ``input_shape`` and ``args_fingerprint`` by the collector's own function,
  ``error_message`` the output text of an error, redacted and capped by the
  collector's own function (nothing else of the output is kept); ``latency_ms``
  the output's time minus the call's time.
- One ``loop_exit`` per prompt: the reason the reader stated with ``end``;
  else, when the prompt's last response asked for no tool, its stored stop
  reason, or ``end_turn`` inferred (``exit_inferred: true``). A prompt whose last
  response asked for tools and that nothing ended stays open (no ``loop_exit``).
- A call id seen again on another call (another tool name or other arguments) is
  an id collision: protocol violation ``reused_tool_call_id`` naming both calls;
  the later record is a new call. The same call under the same id again stays a
  replay (the analyses count it). Also reported: ``missing_result`` (a call
  with no output: no record), ``unknown_result_id``, ``duplicate_result``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from loopscope.analyses.ingest.calls import (
    SYNTHETIC_EPOCH,
    TOOL_STOP_REASONS,
    CallBook,
    loop_exit_fields,
    parse_iso_ts,
    record_head,
)
from loopscope.collectors.redact import clean_error_text
from loopscope.collectors.shape import shape_and_fingerprint


def parse_ts(value: Any) -> datetime | None:
    """An ISO 8601 time as the transcripts write it (``...Z``); None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    return parse_iso_ts(value)


@dataclass
class _Call:
    call_id: str
    name: str
    shape: dict[str, str]
    fingerprint: str | None
    step: int
    prompt: _Prompt
    ts: datetime | None
    line_no: int
    extra: dict[str, Any]
    done: bool = False
    is_error: bool = False


@dataclass
class _Prompt:
    prompt_id: str
    start_ts: datetime | None
    steps: dict[str, int] = field(default_factory=dict)
    steps_with_calls: set[str] = field(default_factory=set)
    last_step: str | None = None
    last_response_ts: datetime | None = None
    last_response_line: int = 0
    last_response_synthetic: bool = False
    stop_reasons: dict[str, str] = field(default_factory=dict)
    input_tokens: dict[str, int] = field(default_factory=dict)
    output_tokens: dict[str, int] = field(default_factory=dict)
    calls: list[_Call] = field(default_factory=list)
    ended: tuple[str, datetime | None, str | None, str | None, str] | None = None
    end_line: int = 0
    end_synthetic: bool = False


class Session(CallBook[_Call]):
    """Collects the events of one conversation and derives its records (see the module docstring)."""

    def __init__(self, conversation_id: str, agent: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(conversation_id)
        self.agent = agent
        self.extra = dict(extra or {})
        self.prompts: list[_Prompt] = []
        self.current: _Prompt | None = None
        self.by_id: dict[str, _Call] = {}
        self.keyed: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
        self.last_ts: datetime | None = None
        self.call_extra: dict[str, dict[str, Any]] = {}
        self._records_by_call: dict[str, list[dict[str, Any]]] = {}

    # -- time ------------------------------------------------------------
    def _moment(self, ts: datetime | None, line_no: int) -> tuple[datetime, bool]:
        """(time, synthetic?): a line without a time takes the last time before it."""
        if ts is not None:
            self.last_ts = ts if self.last_ts is None or ts > self.last_ts else self.last_ts
            return ts, False
        if self.last_ts is not None:
            return self.last_ts, True
        return SYNTHETIC_EPOCH + timedelta(seconds=line_no), True

    # -- events ----------------------------------------------------------
    def prompt(self, prompt_id: str, ts: datetime | None, line_no: int) -> None:
        """A real user message: a new prompt, unless no response came since the last one."""
        if self.current is not None and not self.current.steps and self.current.ended is None:
            return  # two user messages before any response: one prompt
        self._moment(ts, line_no)
        self.current = _Prompt(prompt_id, ts)
        self.prompts.append(self.current)

    def _ensure_prompt(self, ts: datetime | None, line_no: int) -> _Prompt:
        if self.current is None:
            # A response before any user message (a resumed session, a sidechain that starts
            # with the model): its own prompt, so the calls are not lost.
            self.current = _Prompt(f"line-{line_no}", ts)
            self.prompts.append(self.current)
        return self.current

    def response(
        self,
        step_key: str,
        ts: datetime | None,
        line_no: int,
        *,
        stop_reason: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> None:
        """(Part of) one model response; several lines may share ``step_key``."""
        prompt = self._ensure_prompt(ts, line_no)
        if prompt.ended is not None:
            # the model went on after the file said the loop ended: the end was not the end
            prompt.ended = None
        if step_key not in prompt.steps:
            prompt.steps[step_key] = len(prompt.steps)
        prompt.last_step = step_key
        moment, synthetic = self._moment(ts, line_no)
        prompt.last_response_ts = moment
        prompt.last_response_line = line_no
        prompt.last_response_synthetic = synthetic
        if stop_reason:
            prompt.stop_reasons[step_key] = stop_reason
        # Streamed lines repeat a response's usage as it grows: keep the largest seen.
        if isinstance(input_tokens, int) and not isinstance(input_tokens, bool):
            prompt.input_tokens[step_key] = max(prompt.input_tokens.get(step_key, 0), input_tokens)
        if isinstance(output_tokens, int) and not isinstance(output_tokens, bool):
            prompt.output_tokens[step_key] = max(prompt.output_tokens.get(step_key, 0), output_tokens)

    def add_tokens(self, input_tokens: Any, output_tokens: Any) -> None:
        """Token use reported apart from the responses (Codex ``token_count``): added to the current prompt."""
        prompt = self.current
        if prompt is None:
            return
        for value, totals in ((input_tokens, prompt.input_tokens), (output_tokens, prompt.output_tokens)):
            if isinstance(value, int) and not isinstance(value, bool):
                key = f"#{len(totals)}"
                totals[key] = value

    def call(
        self,
        step_key: str,
        ts: datetime | None,
        line_no: int,
        call_id: str,
        name: str,
        arguments: Any,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """A tool call asked for in the response ``step_key``."""
        self.response(step_key, ts, line_no)
        prompt = self.current
        assert prompt is not None
        prompt.steps_with_calls.add(step_key)
        try:
            shape, fingerprint = shape_and_fingerprint(arguments)
        except RecursionError:  # nested too deeply to serialise: as good as not JSON
            shape, fingerprint = {}, None
        if not call_id:
            call_id = f"line-{line_no}"
            self.violation("missing_tool_call_id", f"tool call {name!r} on line {line_no} has no id; using {call_id!r}", prompt.prompt_id, call_id)
        call = _Call(call_id, name, shape, fingerprint, prompt.steps[step_key], prompt, ts, line_no, dict(extra or {}))
        earlier = self.by_id.get(call_id)
        if earlier is not None and (earlier.name != name or earlier.fingerprint != fingerprint):
            self.violation(
                "reused_tool_call_id",
                f"tool call id {call_id!r} on line {line_no} ({name!r}) was already used on line {earlier.line_no} "
                f"by another call ({earlier.name!r}{'' if earlier.name != name else ', other arguments'}); "
                "the later one counts as a new call",
                prompt.prompt_id,
                call_id,
            )
        self.by_id[call_id] = call
        prompt.calls.append(call)
        self.asked(call_id, call)

    def annotate_call(self, call_id: str, extra: dict[str, Any]) -> None:
        """Fields to add to a call's record, known from another line (e.g. the subagent it started)."""
        self.call_extra.setdefault(call_id, {}).update(extra)

    def result(
        self,
        call_id: str,
        ts: datetime | None,
        line_no: int,
        text: str,
        is_error: bool,
        *,
        error_type: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """The output of call ``call_id``."""
        prompt_id = self.current.prompt_id if self.current else None
        call = self.answered(call_id, f"line {line_no}", "no model response in this file", prompt_id)
        if call is None:
            return
        call.done = True
        call.is_error = is_error
        moment, synthetic = self._moment(ts, line_no)
        record = self._common("tool_call", call.prompt.prompt_id, moment, synthetic)
        latency = None
        if ts is not None and call.ts is not None and ts >= call.ts:
            latency = (ts - call.ts).total_seconds() * 1000.0
        message = clean_error_text(text) if is_error and text.strip() else None
        record.update(
            {
                "tool_call_id": call.call_id,
                "tool_name": call.name,
                "step": call.step,
                "input_shape": call.shape,
                "args_fingerprint": call.fingerprint,
                "outcome": "permanent_fail" if is_error else "ok",
                "is_error": is_error,
                "attempts": 1,
                "latency_ms": latency,
                "error_type": error_type if is_error else None,
                "error_message": message,
                "replayed": False,
                "transcript_line": line_no,
                "call_transcript_line": call.line_no,
            }
        )
        record.update(call.extra)
        record.update(extra or {})
        self.keyed.append(((line_no, 0, len(self.keyed)), record))
        self._records_by_call.setdefault(call.call_id, []).append(record)

    def end(
        self,
        reason: str,
        ts: datetime | None,
        line_no: int,
        *,
        source: str,
        error_type: str | None = None,
        error_message: str | None = None,
    ) -> None:
        """The file says the current prompt's loop ended (the first statement wins)."""
        prompt = self.current
        if prompt is None or prompt.ended is not None:
            return
        if not prompt.steps and reason in ("end_turn", "stop_sequence"):
            return  # a turn that made no model call: nothing ran
        moment, synthetic = self._moment(ts, line_no)
        message = clean_error_text(error_message) if error_message else None
        prompt.ended = (reason, moment, error_type, message, source)
        prompt.end_line = line_no
        prompt.end_synthetic = synthetic

    # -- records ---------------------------------------------------------
    def _common(self, kind: str, prompt_id: str, moment: datetime, synthetic: bool) -> dict[str, Any]:
        record = record_head(kind, moment, self.conversation_id, prompt_id, self.agent)
        if synthetic:
            record["ts_synthetic"] = True
        record.update(self.extra)
        return record

    def _exit(self, prompt: _Prompt) -> None:
        if not prompt.steps and prompt.ended is None:
            return  # the user spoke last and no response followed: nothing ran
        results = [c for c in prompt.calls if c.done]
        if prompt.ended is not None:
            reason, moment, error_type, message, source = prompt.ended
            line = prompt.end_line
            inferred = False
            synthetic = prompt.end_synthetic
        else:
            last = prompt.last_step or ""
            stored = prompt.stop_reasons.get(last)
            if last in prompt.steps_with_calls:
                if not stored or stored in TOOL_STOP_REASONS or stored in ("end_turn", "stop_sequence"):
                    return  # asked for tools and nothing says the loop ended: open
            elif stored in TOOL_STOP_REASONS:
                return
            reason = stored or "end_turn"
            source = "stored" if stored else "inferred"
            inferred = not stored
            moment, error_type, message, line = prompt.last_response_ts, None, None, prompt.last_response_line
            synthetic = prompt.last_response_synthetic
        if moment is None:
            moment, synthetic = SYNTHETIC_EPOCH, True
        record = self._common("loop_exit", prompt.prompt_id, moment, synthetic)
        record.update(loop_exit_fields(
            exit_reason=reason, steps=len(prompt.steps), calls=results,
            input_tokens=list(prompt.input_tokens.values()), output_tokens=list(prompt.output_tokens.values()),
            start=None if synthetic else prompt.start_ts, end=moment,
            error_type=error_type, error_message=message, inferred=inferred, source=source,
        ))
        # after the prompt's own records, whatever line stated the end
        self.keyed.append(((max([line] + [c.line_no for c in results]), 1, len(self.keyed)), record))

    def finish(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The records in file order and the protocol violations."""
        for call_id, extra in self.call_extra.items():
            for record in self._records_by_call.get(call_id, []):
                record.update(extra)
        for call in self.unanswered():
            where = f"on line {call.line_no}"
            self.violation("missing_result", f"tool call {call.name!r} {where} never got a result in this file", call.prompt.prompt_id, call.call_id)
        for prompt in self.prompts:
            self._exit(prompt)
        self.keyed.sort(key=lambda item: item[0])
        return [record for _, record in self.keyed], self.violations
