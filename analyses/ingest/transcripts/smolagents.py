"""Hugging Face smolagents agent memory (``--input-format smolagents``).

smolagents keeps what an agent did in ``agent.memory``; users keep it as
``agent.memory.get_full_steps()`` (or ``get_succinct_steps()``, the same without
``model_input_messages``) dumped to a JSON list: one dict per memory step, in order
(``smolagents/memory.py``, 1.26):

- ``TaskStep`` ``{task, task_images}``: the task of one ``agent.run(task)``; runs with
  ``reset=False`` append to the same memory, so one file can hold several;
- ``ActionStep`` ``{step_number, timing {start_time, end_time}, tool_calls [{id, type,
  function {name, arguments}}], error (None or {type, message}), model_output_message,
  observations, token_usage {input_tokens, output_tokens}, is_final_answer, ...}``: one
  model call and what came of it;
- ``PlanningStep`` ``{plan, model_output_message, timing, token_usage, ...}``: a model call
  that writes a plan (no tool);
- ``SystemPromptStep`` ``{system_prompt}`` and ``FinalAnswerStep`` ``{output}`` when a user
  collected the steps of ``agent.run(stream=True)``.

Why a transcript reader and not the messages reader: the file is the step log of an
agent, like an OpenHands event stream, not a list of chat messages: the framework states
each step's calls, its error and the loop's end (final answer, step budget), with times.
``_session.Session`` already turns exactly these statements into records with the
transcript rules. (``write_memory_to_messages()`` is no log to read: it drops the calls of
a step whose tool raised, keeping only the error text; the messages reader names it.)

How steps become records:

- conversation = the file (``<folder>/<file name>``); agent ``smolagents``.
- prompt = a ``TaskStep`` (``prompt_id`` ``task-<n>``, n counted from 1 in the file).
- step = one model call: an ``ActionStep`` (also the one smolagents adds when
  ``max_steps`` is reached: it asks the model for a final answer) or a ``PlanningStep``;
  ``token_usage`` gives its tokens.
- tool call = an entry of the step's ``tool_calls``. When a tool raises, smolagents leaves
  ``tool_calls`` empty and keeps the calls only in ``model_output_message.tool_calls``:
  they are read from there. ``final_answer`` is not a call: it ends the loop.
  A ``CodeAgent`` step is one call of ``python_interpreter`` (its code as the argument):
  the tools the code calls are not in the memory, and the file gets one
  ``code_actions`` notice saying so.
- result: a step without ``error``: every call succeeded. A step whose ``error`` is a
  tool's (``AgentToolExecutionError``, ``AgentToolCallError``, ``AgentExecutionError``
  of a ``python_interpreter`` call): the call it names (``Error executing tool 'NAME'``;
  the only call when there is one) is an error, ``error_type`` the exception the tool
  raised as the message names it (``... with arguments {...}: ValueError: ...``), else the
  error's ``type`` (kept as ``smolagents_error``), the message what the model was told; the other calls of that step got no result the model
  saw (``missing_result``). ``latency_ms`` stays empty: smolagents times steps (the
  model call and the tools together), not tools.
- exit: ``is_final_answer`` (or a ``FinalAnswerStep``) -> ``end_turn``;
  ``AgentMaxStepsError`` -> ``budget_exceeded`` (``error_type`` ``max_steps``); a task
  followed by another task (or the end of a dumped list) with neither -> ``error`` (the
  run stopped without an answer: an exception left ``agent.run``), with the last step's
  error when it has one.
- time = ``timing.start_time`` (a call) and ``end_time`` (its result, the exit), epoch
  seconds; a task takes the start of its first step.

A JSON Lines file of the same step dicts (a ``step_callbacks`` log) is read the same
way, except that its last task may still be running (no exit is inferred at its end).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from loopscope.analyses.ingest.transcripts._lines import GZIP_MAGIC, RAW_CAP, _open
from loopscope.analyses.ingest.transcripts._session import Session
from loopscope.analyses.ingest.transcripts.openhands import _events, _first_event_text

AGENT = "smolagents"
FINAL_ANSWER = "final_answer"
CODE_TOOL = "python_interpreter"
# Step errors that are a tool's failure (what the model was told about its call).
TOOL_ERRORS = frozenset({"AgentToolExecutionError", "AgentToolCallError"})
NAMED_TOOL_RE = re.compile(r"(?:Error executing tool|Unknown tool) '?([^' ,]+)'?")
# The exception the tool (or the code) raised, inside smolagents' message.
RAISED_RE = re.compile(r"(?:\}|\)|due to): ([A-Za-z_][\w.]*): ")
NO_ANSWER = "the run stopped without a final answer (an exception left agent.run, or it was interrupted)"
_SNIFF_START_RE = re.compile(rb'^\s*(?:\[\s*)?\{\s*"(?:task|step_number|system_prompt|model_input_messages|plan)"\s*:')
_SNIFF_TASK_RE = re.compile(rb'"task_images"\s*:')
_SNIFF_ACTION_RE = re.compile(rb'"step_number"\s*:')
_SNIFF_TIMING_RE = re.compile(rb'"timing"\s*:')


NOT_STEPS = (
    "no smolagents memory step in this file (a TaskStep {task, task_images}, an ActionStep {step_number, timing, "
    "tool_calls, ...}, a PlanningStep {plan, ...}): it is another format; say which with --input-format "
    "(docs/inputs.md lists what loopscope reads)"
)


def sniff(head: bytes) -> bool:
    """Whether a file starts like smolagents memory steps (a JSON list of them, or one per line).

    The first step must be a ``TaskStep`` (``task`` and ``task_images``), an ``ActionStep``
    (``step_number`` and ``timing``), a ``SystemPromptStep`` or a ``PlanningStep``.
    """
    text = head.lstrip(b"\xef\xbb\xbf")
    if text.startswith(GZIP_MAGIC) or not _SNIFF_START_RE.match(text):
        return False
    first = _first_event_text(text)
    if b'"role"' in first[:200]:
        return False
    if _SNIFF_TASK_RE.search(first) and b'"task"' in first:
        return True
    if _SNIFF_ACTION_RE.search(first) and _SNIFF_TIMING_RE.search(first):
        return True
    return bool(re.match(rb'\s*\{\s*"system_prompt"\s*:', first)) and first.rstrip().endswith(b"}") and first.count(b'":') == 1


def _epoch(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    try:
        return datetime.fromtimestamp(float(value), tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _timing(step: Mapping[str, Any]) -> tuple[datetime | None, datetime | None]:
    timing = step.get("timing")
    if not isinstance(timing, dict):
        return None, None
    return _epoch(timing.get("start_time")), _epoch(timing.get("end_time"))


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw


def _calls(step: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(id, name, arguments) of the step's calls: ``tool_calls``, else the model output's."""
    listed = step.get("tool_calls")
    if not (isinstance(listed, list) and listed):
        message = step.get("model_output_message")
        listed = message.get("tool_calls") if isinstance(message, dict) else None
    out = []
    for call in listed if isinstance(listed, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = function.get("name") if isinstance(function.get("name"), str) else call.get("name")
        call_id = call.get("id")
        out.append((call_id if isinstance(call_id, str) else "", name if isinstance(name, str) and name else "(no name)",
                    _arguments(function.get("arguments", call.get("arguments")))))
    return out


def _kind(step: Mapping[str, Any]) -> str:
    if "step_number" in step and ("tool_calls" in step or "timing" in step or "error" in step):
        return "action"
    if "task" in step and isinstance(step.get("task"), str):
        return "task"
    if "plan" in step:
        return "planning"
    if "system_prompt" in step:
        return "system_prompt"
    if set(step) == {"output"}:
        return "final_answer"
    return "unknown"


class _Reader:
    def __init__(self, path: Path, listed: bool) -> None:
        self.path = path
        self.listed = listed
        self.session = Session(f"{path.parent.name}/{path.name}", AGENT)
        self.skipped: Counter[str] = Counter()
        self.tasks = 0
        self.known = 0  # steps of a kind smolagents writes (task, action, planning)
        self.code_actions = 0
        self.open = False  # the current task has steps and nothing ended it yet
        self.last_error: tuple[str | None, str | None] = (None, None)
        self.last_ts: datetime | None = None
        self.last_line = 0

    def _close(self) -> None:
        """The task before the next one (or the end of a dumped list) ended without an answer."""
        if self.open:
            error_type, message = self.last_error
            self.session.end("error", self.last_ts, self.last_line, source="no_final_answer",
                             error_type=error_type or "no_final_answer", error_message=message or NO_ANSWER)
        self.open = False

    def steps(self, items: list[tuple[int, Any]]) -> None:
        for i, (line_no, step) in enumerate(items):
            if not isinstance(step, dict):
                self.skipped[f"(a JSON {type(step).__name__}, not a step)"] += 1
                continue
            kind = _kind(step)
            self.known += kind in ("task", "action", "planning")
            if kind == "task":
                self._close()
                self.tasks += 1
                start = None
                for _, later in items[i + 1:i + 3]:  # a task has no time: the start of its first step
                    if isinstance(later, dict) and _kind(later) in ("action", "planning"):
                        start = _timing(later)[0]
                        break
                self.session.prompt(f"task-{self.tasks}", start, line_no)
            elif kind == "action":
                self._action(line_no, step)
            elif kind == "planning":
                start, end = _timing(step)
                self._response(f"line-{line_no}", start, line_no, step)
                self.last_ts, self.last_line = end or start, line_no
            elif kind == "final_answer":
                if self.open:
                    self.session.end("end_turn", self.last_ts, line_no, source="final_answer_step")
                    self.open = False
            elif kind == "system_prompt":
                self.skipped["SystemPromptStep"] += 1
            else:
                self.skipped[f"step with keys {','.join(sorted(map(str, step)))[:60]}"] += 1
        if self.listed:
            self._close()

    def _response(self, key: str, ts: datetime | None, line_no: int, step: Mapping[str, Any]) -> None:
        usage = step.get("token_usage")
        usage = usage if isinstance(usage, dict) else {}
        self.session.response(key, ts, line_no, input_tokens=usage.get("input_tokens"), output_tokens=usage.get("output_tokens"))
        self.open = True

    def _action(self, line_no: int, step: Mapping[str, Any]) -> None:
        session = self.session
        start, end = _timing(step)
        key = f"line-{line_no}"
        self._response(key, start, line_no, step)
        error = step.get("error") if isinstance(step.get("error"), dict) else None
        error_type = error.get("type") if error and isinstance(error.get("type"), str) else None
        message = error.get("message") if error and isinstance(error.get("message"), str) else ""
        self.last_error = (error_type, message or None) if error else (None, None)
        self.last_ts, self.last_line = end or start, line_no
        if error_type == "AgentMaxStepsError":
            session.end("budget_exceeded", end or start, line_no, source="max_steps", error_type="max_steps",
                        error_message=message or "Reached max steps.")
            self.open = False
            return
        calls = [c for c in _calls(step) if c[1] != FINAL_ANSWER]
        recorded = isinstance(step.get("tool_calls"), list) and bool(step.get("tool_calls"))
        failed: set[int] = set()
        if error is not None and calls:
            code = [i for i, c in enumerate(calls) if c[1] == CODE_TOOL]
            if error_type in TOOL_ERRORS or not recorded or code:
                if len(calls) == 1:
                    failed = {0}
                elif code:
                    failed = set(code)
                else:
                    named = NAMED_TOOL_RE.search(message)
                    match = [i for i, c in enumerate(calls) if named and c[1] == named.group(1)]
                    failed = {match[0]} if match else set(range(len(calls)))
        text = step.get("observations") if isinstance(step.get("observations"), str) else ""
        for i, (call_id, name, arguments) in enumerate(calls):
            if name == CODE_TOOL:
                self.code_actions += 1
            session.call(key, start, line_no, call_id, name, arguments)
            if i in failed:
                raised = RAISED_RE.search(message)
                session.result(call_id or f"line-{line_no}", end, line_no, message or str(error_type), True,
                               error_type=raised.group(1) if raised else error_type or "error",
                               extra={"latency_ms": None, "smolagents_error": error_type})
            elif error is None or recorded:
                session.result(call_id or f"line-{line_no}", end, line_no, text, False, extra={"latency_ms": None})
            # else: a call of a step that failed on another call: the model saw no result of it
        if step.get("is_final_answer") is True:
            session.end("end_turn", end or start, line_no, source="final_answer")
            self.open = False


def read(path: Path, options: Mapping[str, Any]) -> Any:
    """Read one dump of smolagents memory steps into v1 records.

    Args:
        path: a JSON list of steps (``get_full_steps()`` / ``get_succinct_steps()``), or one
            step per line (``.jsonl``); gzip allowed.
        options: not used; accepted for the reader protocol.

    Returns:
        A ``ReaderOutput``: records, protocol violations, bad lines (quarantined), and
        ``skipped_types``: steps the reader does not use, per kind.
    """
    from loopscope.analyses.ingest.transcripts import BadLine, ReaderOutput

    out = ReaderOutput()
    with _open(path) as f:
        listed = f.read(64).lstrip(b"\xef\xbb\xbf").lstrip().startswith(b"[")
    items = list(_events(path, out.bad, BadLine))
    reader = _Reader(path, listed and not out.bad)
    reader.steps(items)
    if items and not reader.known:
        out.bad.append(BadLine(items[0][0], NOT_STEPS, json.dumps(items[0][1], default=str)[:RAW_CAP]))
        return out
    records, violations = reader.session.finish()
    out.records.extend(records)
    out.violations.extend(violations)
    if reader.code_actions:
        out.finding(
            "code_actions",
            f"{path.name}: {reader.code_actions} code action(s) (smolagents CodeAgent steps): each "
            "counts as one call of python_interpreter; the tools the code called are not in the memory",
            reader.session.conversation_id,
        )
    out.skipped_types.update({f"smolagents {k}": v for k, v in reader.skipped.items()})
    return out
