"""Derive v1 records from one conversation's messages.

The rules (docs/inputs.md, "Conversation message arrays", explains them to users):

- A prompt starts at each user message that carries content (not one that only
  carries tool results, not a simulated user's own tool calls). Consecutive
  user messages with no model response between them are one prompt. Its
  ``prompt_id`` is ``m<index>``: the index of that user message in the
  conversation's messages list. Model responses before the first user message
  (a greeting) form a prompt of their own only when they call tools.
- ``step`` is the index of the model response within the prompt (0-based);
  the calls of one response share it (parallel tool use).
- One ``tool_call`` record per tool call that got a result: ``is_error`` by the
  stored flag or the ``--error-when`` conventions (``message_errors``),
  ``outcome`` ``permanent_fail`` / ``ok``, ``attempts`` 1 (a log cannot see
  retries inside a tool), ``error_message`` the result text (redacted and capped at 2,000
  characters by the collector's ``clean_error_text``), ``input_shape`` and
  ``args_fingerprint`` by the collector's ``shape_and_fingerprint``, ``result_fingerprint`` by its
  ``result_fingerprint`` of the result text (what ``call.returned(text)`` records).
- One ``loop_exit`` per prompt whose last model response has no tool call: the
  stored ``stop_reason`` / ``finish_reason`` (OpenAI ``stop``, ``length``,
  ``content_filter`` read as ``end_turn``, ``max_tokens``, ``refusal``), or
  ``end_turn`` inferred (``exit_inferred: true``). A prompt whose last
  response asked for tools is open (no ``loop_exit``): the loop never finished
  (unless a stored stop reason such as ``max_tokens`` cut that response short),
  unless the conversation's stored ``termination_reason`` says it was stopped
  from outside (tau2-bench: ``max_steps`` -> ``budget_exceeded``,
  ``too_many_errors`` / ``infrastructure_error`` -> ``error``), which then
  closes the LAST prompt only.
- Times are the stored message times; a message without one takes the last
  stored time before it, or, when none is stored, 1970-01-01T00:00:00Z plus its
  index in seconds; such records carry ``ts_synthetic: true``. A message whose
  only time is the one of the log line holding it (per-turn logs) takes that
  time, with ``ts_from_line: true``; such times give no latency or duration.
- Problems of the log itself are protocol violations, never fatal: a tool call
  with no result (``missing_result``), a result for an id nobody asked for
  (``unknown_result_id``), a second result for the same call
  (``duplicate_result``), a result that arrives after the model moved on
  (``result_out_of_order``), a call without an id (``missing_tool_call_id``), arguments
  that are not JSON (``invalid_arguments``: empty shape, null fingerprint), a part of a
  pydantic-ai or AI SDK UI message of a kind this reader does not know (``unread_part``), a
  prompt whose last response stopped with Anthropic's ``pause_turn`` and was never resumed
  (``unresumed_pause_turn``: ``pause_turn`` goes on, as a tool call does; such a prompt with no
  tool call makes no record, so this is how it shows).
  An id that a later call uses again is kept as it is: the analyses decide,
  the same way for every input format, whether the later call is a replay
  (same tool and arguments) or an id collision (a new call, reported as
  ``reused_tool_call_id``).
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Optional

from loopscope.analyses.ingest.calls import SYNTHETIC_EPOCH, TOOL_STOP_REASONS, CallBook, loop_exit_fields, record_head
from loopscope.analyses.ingest.messages.errors import ErrorRules, classify, error_type_from_text
from loopscope.analyses.ingest.messages.gemini import FINISH_REASONS, NOTES_KEY
from loopscope.analyses.ingest.messages.turns import (
    AssistantTurn,
    ToolCallRequest,
    ToolResult,
    UnreadPart,
    UserText,
    as_chat_messages,
    message_timestamp,
    message_turns,
    parse_timestamp,
)
from loopscope.collectors.redact import clean_error_text
from loopscope.collectors.shape import result_fingerprint, shape_and_fingerprint

# Where the messages reader puts the time of the log line a message came in (per-turn logs).
LINE_TIME_KEY = "_loopscope_line_time"
# OpenAI finish_reason -> the record format's exit_reason; other values are kept as-is.
# Gemini's finishReason values (STOP, MAX_TOKENS, SAFETY...) likewise (gemini.FINISH_REASONS).
STOP_REASON_MAP = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal", **FINISH_REASONS}
# tau2-bench termination_reason -> (exit_reason, error_type) for a last prompt stopped from outside.
TERMINATION_EXITS = {
    "max_steps": ("budget_exceeded", "max_steps"),
    "too_many_errors": ("error", "too_many_errors"),
    "infrastructure_error": ("error", "infrastructure_error"),
    # a model-call log (calllog) whose conversation's last logged call failed and was not retried
    "model_call_failed": ("error", "model_call_failed"),
    # SWE-agent ``info.exit_status``: the agent ends its run with a ``submit`` tool call, so the
    # last prompt's last response asked for a tool; ``submitted`` is that normal end. A forced
    # end is ``exit_<why>``, and ``submitted (exit_<why>)`` an autosubmission after one.
    "submitted": ("end_turn", None),
    "exit_cost": ("budget_exceeded", "exit_cost"),
    "exit_context": ("max_tokens", "exit_context"),
    "exit_format": ("error", "exit_format"),
    "exit_error": ("error", "exit_error"),
    "exit_command_timeout": ("error", "exit_command_timeout"),
    "exit_total_execution_time": ("budget_exceeded", "exit_total_execution_time"),
}
# Ends that do not stop a running loop (the user or agent ended the conversation between prompts).
NORMAL_TERMINATIONS = frozenset({"user_stop", "agent_stop"})


def termination_exit(reason: str) -> tuple[str, Optional[str]]:
    """(exit_reason, error_type) for a stored harness end (tau2-bench ``termination_reason``, SWE-agent ``exit_status``)."""
    if reason in TERMINATION_EXITS:
        return TERMINATION_EXITS[reason]
    if reason.startswith("limit:"):  # Inspect AI: the sample hit a message, token, time or cost limit
        return "budget_exceeded", reason.replace(":", "_", 1)
    if reason == "sample_error":  # Inspect AI: the sample ended on an error
        return "error", "sample_error"
    forced = re.fullmatch(r"submitted \((exit_\w+)\)", reason)  # SWE-agent: autosubmitted after a forced end
    if forced:
        return TERMINATION_EXITS.get(forced.group(1), ("error", forced.group(1)))
    return reason, reason


def _shape(request: ToolCallRequest) -> tuple[dict[str, str], Optional[str]]:
    if not request.arguments_valid:
        return {}, None
    try:
        return shape_and_fingerprint(request.arguments)
    except RecursionError:  # nested too deeply to serialise: as good as not JSON
        return {}, None


@dataclass
class _Call:
    request: ToolCallRequest
    call_id: str
    prompt: _Prompt
    step: int
    turn: AssistantTurn
    result: Optional[ToolResult] = None
    is_error: bool = False


@dataclass
class _Prompt:
    prompt_id: str
    start_index: int
    start_ts: Optional[datetime]
    turns: list[AssistantTurn] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)


@dataclass
class ConversationResult:
    """Records (in log order) and protocol violations of one conversation."""

    records: list[dict[str, Any]]
    violations: list[dict[str, Any]]
    # Results with no stored flag whose text reads like an error, counted as successes.
    unflagged_error_texts: int = 0
    # Calls of tools the provider ran (Anthropic server tools, MCP connector) and their errors:
    # not agent tool calls, counted for the reader's note on a file with no other call.
    provider_calls: int = 0
    provider_errors: int = 0


class _Deriver(CallBook[_Call]):
    """Walks one conversation's turns once and collects records and violations."""

    def __init__(
        self,
        conversation_id: str,
        agent: str,
        rules: ErrorRules,
        termination_reason: Optional[str],
        tags: Optional[dict[str, str]],
    ) -> None:
        super().__init__(conversation_id)
        self.agent = agent
        self.rules = rules
        self.termination_reason = termination_reason
        self.tags = tags
        self.prompts: list[_Prompt] = []
        self.current: Optional[_Prompt] = None
        self.latest_turn: Optional[AssistantTurn] = None
        self.keyed: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
        self.times: dict[int, tuple[datetime, Optional[str]]] = {}
        self.unflagged_error_texts = 0

    # -- helpers ---------------------------------------------------------
    def time_of(self, index: int) -> tuple[datetime, Optional[str]]:
        """(time, how it was made: None (stored), 'synthetic' or 'line') of message ``index``."""
        return self.times[index]

    def common(self, kind: str, prompt_id: str, moment: datetime, made: Optional[str]) -> dict[str, Any]:
        record = record_head(kind, moment, self.conversation_id, prompt_id, self.agent)
        if self.tags:
            record["tags"] = dict(self.tags)
        if made == "synthetic":
            record["ts_synthetic"] = True
        elif made == "line":
            record["ts_from_line"] = True
        return record

    # -- events ----------------------------------------------------------
    def on_user(self, turn: UserText) -> None:
        if self.current is not None and not self.current.turns:
            return  # a second user message before any response: same prompt
        self.current = _Prompt(f"m{turn.index}", turn.index, turn.ts)
        self.prompts.append(self.current)

    def on_assistant(self, turn: AssistantTurn) -> None:
        if self.current is None:
            if not turn.calls:
                return  # a greeting before the first user message: no loop ran
            self.current = _Prompt(f"m{turn.index}", turn.index, turn.ts)
            self.prompts.append(self.current)
        prompt = self.current
        step = len(prompt.turns)
        prompt.turns.append(turn)
        self.latest_turn = turn
        for position, request in enumerate(turn.calls):
            call_id = request.id
            if not call_id:
                call_id = f"m{turn.index}.{position}"
                self.violation(
                    "missing_tool_call_id",
                    f"tool call {request.name!r} in message {turn.index} has no id; using {call_id!r}",
                    prompt.prompt_id,
                    call_id,
                )
            if not request.arguments_valid:
                self.violation(
                    "invalid_arguments",
                    f"arguments of {request.name!r} in message {turn.index} are not JSON; no fingerprint",
                    prompt.prompt_id,
                    call_id,
                )
            call = _Call(request, call_id, prompt, step, turn)
            prompt.calls.append(call)
            self.asked(call_id, call)

    def on_result(self, result: ToolResult) -> None:
        prompt_id = self.current.prompt_id if self.current else None
        call = self.answered(result.call_id, f"message {result.index}", "no model response", prompt_id)
        if call is None:
            return
        call.result = result
        if call.turn is not self.latest_turn or call.prompt is not self.current:
            self.violation(
                "result_out_of_order",
                f"result in message {result.index} for the call in message {call.turn.index} "
                "arrived after the conversation moved on",
                call.prompt.prompt_id,
                call.call_id,
            )
        self.keyed.append(((result.index, 0, len(self.keyed)), self.tool_call_record(call, result)))

    # -- records ---------------------------------------------------------
    def tool_call_record(self, call: _Call, result: ToolResult) -> dict[str, Any]:
        moment, made = self.time_of(result.index)
        record = self.common("tool_call", call.prompt.prompt_id, moment, made)
        verdict = classify(result.text, result.flag, self.rules)
        latency = None
        if result.ts is not None and call.turn.ts is not None and result.ts >= call.turn.ts:
            latency = (result.ts - call.turn.ts).total_seconds() * 1000.0
        reads_as_error = verdict.is_error or verdict.text_reports_error
        # An error with an empty result (Anthropic allows a tool_result with no content) has no text.
        # Redacted and capped as the collector does: a log keeps no secret the tool echoed.
        message = clean_error_text(result.text) if reads_as_error and result.text.strip() else None
        # The collector's own shape and digest, so a call logged by both has one fingerprint.
        shape, fingerprint = _shape(call.request)
        record.update(
            {
                "tool_call_id": call.call_id,
                "tool_name": call.request.name,
                "step": call.step,
                "input_shape": shape,
                "args_fingerprint": fingerprint,
                "outcome": "permanent_fail" if verdict.is_error else "ok",
                "is_error": verdict.is_error,
                "attempts": 1,
                "latency_ms": latency,
                "error_type": result.error_type or (error_type_from_text(result.text) if reads_as_error else None),
                "error_message": message,
                "replayed": False,
                # The collector's digest of the result text the model saw (records.md, optional field).
                "result_fingerprint": result_fingerprint(result.text),
                "message_index": result.index,
                "call_message_index": call.turn.index,
            }
        )
        call.is_error = verdict.is_error
        if verdict.is_error:
            record["error_source"] = verdict.source
        elif verdict.text_reports_error:
            record["text_reports_error"] = True
            if result.flag is None:
                self.unflagged_error_texts += 1
        return record

    def exit_for(self, prompt: _Prompt, is_last: bool) -> Optional[tuple[str, str, Optional[str]]]:
        """(exit_reason, source, error_type) for a prompt, or None when it stays open."""
        last = prompt.turns[-1]
        stored = STOP_REASON_MAP.get(last.stop_reason or "", last.stop_reason)
        # With tool calls, only a stop that cuts the loop short (max_tokens, refusal, ...) ends it;
        # some servers report "stop" on a response that asked for tools: the loop goes on.
        ends_loop = stored and stored not in TOOL_STOP_REASONS and not (last.calls and stored in ("end_turn", "stop_sequence"))
        if ends_loop:
            return str(stored), "stored", None
        if not last.calls and stored != "pause_turn":
            return "end_turn", "inferred", None
        reason = self.termination_reason
        if is_last and reason and reason not in NORMAL_TERMINATIONS:
            exit_reason, error_type = termination_exit(reason)
            return exit_reason, "termination_reason", error_type
        return None

    def loop_exit_record(self, prompt: _Prompt, is_last: bool) -> None:
        if not prompt.turns:
            return  # the user spoke last and no response followed: nothing ran
        decided = self.exit_for(prompt, is_last)
        if decided is None:
            last = prompt.turns[-1]
            if last.stop_reason == "pause_turn" and not last.calls:
                # The server paused a long turn; the client sends the conversation back and the model
                # continues it in a new response. The log ends before that: the loop never finished.
                self.violation(
                    "unresumed_pause_turn",
                    f"the response in message {last.index} stopped with pause_turn and the conversation was not "
                    "sent back to continue it: the prompt has no loop_exit",
                    prompt.prompt_id,
                )
            return
        exit_reason, source, error_type = decided
        results = [c for c in prompt.calls if c.result is not None]
        last_index = prompt.turns[-1].index
        if source == "termination_reason":  # stopped after its last message, whatever that was
            last_index = max([last_index] + [c.result.index for c in results if c.result is not None])
        moment, made = self.time_of(last_index)
        record = self.common("loop_exit", prompt.prompt_id, moment, made)
        ended_outside = source == "termination_reason" and exit_reason not in ("end_turn", "stop_sequence")
        record.update(loop_exit_fields(
            exit_reason=exit_reason, steps=len(prompt.turns), calls=results,
            input_tokens=[t.input_tokens for t in prompt.turns if t.input_tokens is not None],
            output_tokens=[t.output_tokens for t in prompt.turns if t.output_tokens is not None],
            start=prompt.start_ts, end=None if made else moment, error_type=error_type,
            error_message=(
                f"the conversation was ended from outside the loop: termination_reason={self.termination_reason}"
                if ended_outside else None
            ),
            inferred=source == "inferred", source=source,
        ))
        record["message_index"] = last_index
        if source == "stored" and prompt.turns[-1].stop_reason != exit_reason:
            record["stop_reason_stored"] = prompt.turns[-1].stop_reason
        self.keyed.append(((last_index, 1, len(self.keyed)), record))

    def run(self, messages: list[Any]) -> ConversationResult:
        last_stored: Optional[datetime] = None
        turns = []
        for index, message in as_chat_messages(messages):
            stored = message_timestamp(message) if isinstance(message, dict) else None
            line_time = parse_timestamp(message.get(LINE_TIME_KEY)) if isinstance(message, dict) else None
            if stored is not None:
                last_stored = stored
                self.times[index] = (stored, None)
            elif line_time is not None:
                self.times[index] = (line_time, "line")
            elif last_stored is not None:
                self.times[index] = (last_stored, "synthetic")
            else:
                self.times[index] = (SYNTHETIC_EPOCH + timedelta(seconds=index), "synthetic")
            turns.extend(message_turns(message, index))
            for kind, detail in message.get(NOTES_KEY, ()) if isinstance(message, dict) else ():
                self.violation(kind, detail)  # what a Gemini content held that makes no turn
        for turn in turns:
            if isinstance(turn, UserText):
                self.on_user(turn)
            elif isinstance(turn, AssistantTurn):
                self.on_assistant(turn)
            elif isinstance(turn, UnreadPart):
                self.violation(
                    "unread_part",
                    f"message {turn.index}: {turn.what} is not one loopscope reads; skipped (a tool call or result "
                    "in it is not counted)",
                    self.current.prompt_id if self.current else None,
                )
            else:
                self.on_result(turn)
        for call in self.unanswered():
            where = f"asked for in message {call.turn.index}"
            self.violation("missing_result", f"tool call {call.request.name!r} {where} never got a result", call.prompt.prompt_id, call.call_id)
        for position, prompt in enumerate(self.prompts):
            self.loop_exit_record(prompt, is_last=position == len(self.prompts) - 1)
        self.keyed.sort(key=lambda item: item[0])
        answers = [turn for turn in turns if isinstance(turn, AssistantTurn)]
        return ConversationResult([record for _, record in self.keyed], self.violations, self.unflagged_error_texts,
                                  sum(t.provider_calls for t in answers), sum(t.provider_errors for t in answers))


def conversation_records(
    messages: list[Any],
    *,
    conversation_id: str,
    agent: str = "default",
    rules: Optional[ErrorRules] = None,
    termination_reason: Optional[str] = None,
    tags: Optional[dict[str, str]] = None,
) -> ConversationResult:
    """Derive the v1 records and protocol violations of one conversation.

    Args:
        messages: the conversation's messages, in order (provider-shaped dicts).
        conversation_id: the id every record gets.
        agent: the agent name every record gets.
        rules: the ``--error-when`` conventions (default: the stored flag only).
        termination_reason: how the harness ended the conversation, when stored
            (tau2-bench); it can close the last prompt (see the module docstring).
        tags: labels copied onto every record.

    Returns:
        The records in log order and the protocol violations found.
    """
    deriver = _Deriver(conversation_id, agent, rules or ErrorRules(), termination_reason, tags)
    return deriver.run(messages)
