"""Reader for conversation message arrays (``--input-format messages``).

A file holds conversations as JSON or JSON Lines:

- one conversation object per file or per line, ``{"id": ..., "messages": [...]}``;
- a JSON list of such objects, or a bare list of messages (one conversation);
- a container, found with ``messages_key`` (``--messages-key``), a small
  selector of dotted keys where ``[]`` means "each element": tau2-bench's
  ``{..., "simulations": [{"id", "messages": [...]}, ...]}`` is
  ``simulations[].messages`` (detected by itself), and tau-bench's
  ``[{"task_id", "trial", "traj": [...]}, ...]`` (its ``historical_trajectories/``)
  is ``[].traj`` (detected by itself too);
- a per-message log (JSON Lines, one message per line, each carrying its
  conversation id), or per-turn lines holding a conversation's new messages or
  a snapshot of the whole array so far: lines of one conversation are joined
  (a line that extends the previous array replaces it, any other is appended).

The conversation id is ``id_key`` (``--id-key``) in the conversation object,
else the first of ``conversation_id``, ``id``, ``session_id``, ``thread_id``,
else ``<folder>/<file name>#<n>``. The agent is ``agent_name`` (``--agent-name``), else
the conversation's or file's ``agent`` name (tau2-bench:
``info.agent_info.implementation``), else ``"default"``.

``message_records`` turns each conversation into v1 records.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Optional

from loopscope.analyses.ingest import jsontext
from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.ingest.files import UnreadableFile
from loopscope.analyses.ingest.formats import BadLine, ReaderOutput
from loopscope.analyses.ingest.messages import calllog, gemini, responses_items, sharegpt
from loopscope.analyses.ingest.transcripts.openhands import ONE_EVENT
from loopscope.analyses.ingest.messages.errors import ErrorRules, parse_error_when
from loopscope.analyses.ingest.messages.records import LINE_TIME_KEY, conversation_records
from loopscope.analyses.ingest.messages.turns import (
    TIMESTAMP_KEYS,
    is_ai_sdk4_message,
    is_ai_sdk_ui_message,
    is_pydantic_ai_message,
    langchain_message,
    parse_timestamp,
)

ID_KEYS = ("conversation_id", "id", "session_id", "thread_id")
RAW_CAP = 2000
# The reader decodes a whole file at once (lines of one conversation may be far apart): a
# 90 MiB conversation takes about 1 GB in the reader. Past this size a file is refused.
MAX_FILE_BYTES = 256 * 2**20
TOO_DEEP = "JSON nested too deeply to read (deeper than Python's recursion limit)"
# Markers of a conversation log in the first bytes of a pretty-printed JSON file; the last
# two are tau2-bench's run settings, which come before its (long) simulations.
SNIFF_MARKERS = (
    b'"messages"', b'"simulations"', b'"role"', b'"termination_reason"', b'"agent_info"', b'"user_info"', b'"traj"',
    b'"history"', b'"trajectory"',  # SWE-agent .traj (its trajectory steps come first)
    b'"conversations"',  # ShareGPT (sharegpt)
    b'"parts"', b'"contents"', b'"candidates"',  # Gemini contents (model_dump() writes parts before role)
    b'"part_kind"',  # a pydantic-ai message history
    # OpenAI Responses API items, and a logged Responses call that sends only its new items
    b'"function_call"', b'"function_call_output"', b'"output_text"', b'"previous_response_id"',
)
# A ToolBench / StableToolBench answer file starts with its search tree, whose nodes carry these.
TREE_MARKERS = (b'"node_type"', b'"is_terminal"')
# An Inspect AI eval log (.json) starts with its eval header; its samples come last.
INSPECT_MARKERS = (b'"eval"', b'"run_id"', b'"task"')


class _Conversation:
    """One conversation found in a file, before derivation."""

    def __init__(self, messages: list[Any], obj: Any, ordinal: int, line_no: Optional[int] = None) -> None:
        self.messages = messages
        self.line_no = line_no  # where it starts (None: a whole JSON document)
        self.raw: list[Any] = messages  # as read, before _stamped: snapshots compare against it
        self.obj = obj if isinstance(obj, dict) else {}
        self.ordinal = ordinal
        self.cid: Optional[str] = None  # set when the id is not in ``obj`` (a model-call log's threads)


def sniff(head: bytes) -> bool:
    """Whether the first bytes of a file look like a conversation log (a JSON document)."""
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    return text.startswith((b"{", b"[")) and (
        any(marker in text for marker in SNIFF_MARKERS)
        or all(marker in text for marker in TREE_MARKERS)
        or all(marker in text for marker in INSPECT_MARKERS)
    )


def parse_selector(selector: str) -> tuple[list[tuple[str, bool]], list[str]]:
    """Split ``a.b[].c.d`` into the path to the conversation objects and the path to messages.

    Returns:
        ``(outer, inner)``: ``outer`` is a list of ``(key, each)`` steps up to
        and including the last ``[]``; ``inner`` the plain keys after it.

    Raises:
        LoopscopeError: an empty or malformed selector.
    """
    if not selector or not selector.strip():
        raise LoopscopeError("--messages-key is empty", "Give dotted keys, e.g. --messages-key simulations[].messages.")
    steps: list[tuple[str, bool]] = []
    for part in selector.strip().split("."):
        each = part.endswith("[]")
        key = part[:-2] if each else part
        if ("[" in key or "]" in key) or (not key and not each):
            raise LoopscopeError(
                f"--messages-key {selector!r}: cannot read {part!r}",
                "Use dotted keys and [] for 'each element', e.g. simulations[].messages or conversations[].turns.",
            )
        steps.append((key, each))
    last_each = max((i for i, (_, each) in enumerate(steps) if each), default=-1)
    return steps[: last_each + 1], [key for key, _ in steps[last_each + 1 :]]


def _walk(value: Any, steps: list[tuple[str, bool]]) -> list[Any]:
    current = [value]
    for key, each in steps:
        nxt: list[Any] = []
        for item in current:
            if key:
                item = item.get(key) if isinstance(item, dict) else None
            if each:
                nxt.extend(item if isinstance(item, list) else [])
            elif item is not None:
                nxt.append(item)
        current = nxt
    return current


def _select(root: Any, selector: str) -> list[tuple[Any, Any]]:
    """(conversation object, messages) pairs selected by ``selector`` in ``root``."""
    outer, inner = parse_selector(selector)
    roots = root if isinstance(root, list) and (not outer or outer[0][0]) else [root]
    pairs = []
    for start in roots:
        for obj in _walk(start, outer):
            messages = _walk(obj, [(key, False) for key in inner])
            pairs.append((obj, messages[0] if messages else None))
    return pairs


RESPONSES_ITEM_TYPES = ("function_call", "function_call_output", "reasoning", "message")


LANGCHAIN_TYPES = ("human", "ai", "tool", "system", "AIMessageChunk")


def _is_message(value: Any) -> bool:
    """A chat message, an OpenAI Responses API item, a pydantic-ai message, a LangChain serialized message, or a Gemini content."""
    if not isinstance(value, dict):
        return False
    if "role" in value or value.get("type") in RESPONSES_ITEM_TYPES or is_pydantic_ai_message(value) or gemini.is_gemini(value) \
            or responses_items.is_item(value):
        return True
    data = value.get("data")
    kind = data.get("type") if isinstance(data, dict) and "content" in data else value.get("type")
    return kind in LANGCHAIN_TYPES and ("content" in value or isinstance(data, dict))


def _auto(root: Any) -> Optional[list[tuple[Any, Any]]]:
    """Conversations in ``root`` when its shape is unambiguous, else None."""
    if isinstance(root, dict):
        sims = root.get("simulations")
        if isinstance(sims, list) and all(isinstance(s, dict) and "messages" in s for s in sims):
            return [(s, s["messages"]) for s in sims]  # tau2-bench results
        if isinstance(root.get("messages"), list):
            return [(root, root["messages"])]
        contents = root.get("contents")
        if isinstance(contents, list) and contents and all(gemini.is_gemini(c) for c in contents):
            return [(root, contents)]  # a Gemini generateContent request body / saved history
        convs = root.get("conversations")
        if isinstance(convs, list) and convs and all(sharegpt.is_turn(t) for t in convs):
            return [(root, sharegpt.to_messages(convs))]  # ShareGPT: {conversations: [{from, value}]}
        if isinstance(convs, list) and all(isinstance(c, dict) and "messages" in c for c in convs):
            return [(c, c["messages"]) for c in convs]
        samples = root.get("samples")
        if isinstance(root.get("eval"), dict) and isinstance(samples, list) and samples:
            return [_inspect_sample(root["eval"], sample) for sample in samples if isinstance(sample, dict)]
        history = root.get("history")
        if isinstance(history, list) and history and all(_is_message(m) for m in history):
            return [(root, history)]  # SWE-agent .traj: one run, its model conversation in history
        return None
    if isinstance(root, list):
        if not root:
            return []
        if all(_is_message(m) for m in root):
            return [(_history_object(root), root)]  # a bare messages list
        if all(sharegpt.is_turn(t) for t in root):
            return [({}, sharegpt.to_messages(root))]  # a bare list of ShareGPT turns
        if all(isinstance(c, dict) and isinstance(c.get("conversations"), list) and c["conversations"]
               and all(sharegpt.is_turn(t) for t in c["conversations"]) for c in root):
            return [(c, sharegpt.to_messages(c["conversations"])) for c in root]  # ShareGPT records (APIGen-MT)
        if all(isinstance(c, dict) and isinstance(c.get("messages"), list) for c in root):
            return [(c, c["messages"]) for c in root]
        if all(isinstance(c, dict) and isinstance(c.get("traj"), list) for c in root):
            return [(c, c["traj"]) for c in root]  # tau-bench results (historical_trajectories/)
        if all(isinstance(c, list) for c in root):
            return [({}, c) for c in root]
    return None


def _history_object(messages: list[Any]) -> dict[str, Any]:
    """The conversation object of a bare list: a pydantic-ai history names its conversation on every message."""
    if not all(is_pydantic_ai_message(m) for m in messages):
        return {}
    ids = [m.get("conversation_id") for m in messages]
    if all(_is_id(cid) for cid in ids) and len({str(cid) for cid in ids}) == 1:
        return {"conversation_id": ids[0]}
    return {}  # none, or several: the file's name is the conversation


def _is_response(message: Any) -> bool:
    """A model response: an assistant message, a pydantic-ai ``ModelResponse`` or a Gemini ``model`` content."""
    return isinstance(message, dict) and (message.get("role") in ("assistant", "model") or (
        is_pydantic_ai_message(message) and message["kind"] == "response") or (
        gemini.is_gemini(message) and "role" not in message))


def _has_structured_calls(messages: list[Any]) -> bool:
    """Whether any message holds a tool call or result in a shape this reader knows."""
    for m in map(langchain_message, messages):
        if not isinstance(m, dict):
            continue
        if is_pydantic_ai_message(m) and any(
            isinstance(p, dict) and p.get("part_kind") in ("tool-call", "tool-return", "retry-prompt") for p in m["parts"]
        ):
            return True
        if is_ai_sdk_ui_message(m) and any(p["type"] == "dynamic-tool" or p["type"].startswith("tool-") for p in m["parts"]):
            return True
        if is_ai_sdk4_message(m) and (m.get("toolInvocations") or any(
            p["type"] == "tool-invocation" for p in m.get("parts") or []
        )):
            return True
        if m.get("tool_calls") or m.get("function_call") or m.get("role") in ("tool", "function"):
            return True
        if m.get("type") in ("function_call", "function_call_output") or gemini.has_calls(m) \
                or responses_items.is_client_call(m) or responses_items.is_client_output(m):
            return True
        content = m.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result", "tool-call", "tool-result") for b in content):
            return True
    return False


def _text_action_agent(root: Any) -> Optional[str]:
    """The name of a coding-agent trajectory whose model writes its actions in the text, else None.

    SWE-agent (``.traj``: ``history``) and mini-swe-agent (``.traj.json``: ``messages`` with
    ``trajectory_format`` or ``info.mini_version``) log either tool calls (function calling) or
    a text action (a command block the harness parses); only the first is a tool call here.
    """
    if not isinstance(root, dict):
        return None
    info = root.get("info") if isinstance(root.get("info"), dict) else {}
    history = root.get("history")
    if isinstance(history, list) and (
        "trajectory" in root or any(isinstance(m, dict) and "message_type" in m for m in history)
    ):
        name, messages = "a SWE-agent trajectory (.traj)", root["history"]
    elif isinstance(root.get("messages"), list) and (
        str(root.get("trajectory_format", "")).startswith("mini-swe-agent") or "mini_version" in info
    ):
        name, messages = "a mini-swe-agent trajectory (.traj.json)", root["messages"]
    else:
        return None
    has_model = any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages)
    return name if has_model and not _has_structured_calls(messages) else None


OPENHANDS_TODO = (
    "load it with --input-format openhands (or auto, which detects it): that reader maps each action's "
    "tool_call_metadata to a tool call and its observation to the result"
)
OPENHANDS_V1_TODO = (
    "loopscope reads OpenHands V0 event streams (--input-format openhands), not V1 ({kind: \"...Event\"}) yet; "
    "export the run's spans with OpenTelemetry (--input-format otlp)"
)


def _openhands_v1_event(value: Any) -> bool:
    kind = value.get("kind") if isinstance(value, dict) else None
    return isinstance(kind, str) and kind.endswith("Event") and "source" in value and "role" not in value


def _openhands_event(value: Any) -> bool:
    """An OpenHands event: V0 ``{source, action | observation, args | extras}``, V1 ``{kind: "...Event"}``."""
    if not isinstance(value, dict) or "role" in value:
        return False
    if value.get("source") in ("agent", "user", "environment") and ("action" in value or "observation" in value):
        return True
    kind = value.get("kind")
    return isinstance(kind, str) and kind.endswith("Event") and "source" in value


SMOLAGENTS_ROLES = frozenset({"tool-call", "tool-response"})
SMOLAGENTS_TODO = (
    "dump the agent's memory steps instead, json.dump(agent.memory.get_full_steps(), f, default=str), and load "
    "that (--input-format smolagents, or auto, which detects it): its steps keep every call, the failed ones too"
)


def _smolagents_messages(root: list[Any]) -> bool:
    """smolagents' ``write_memory_to_messages()``: roles ``tool-call`` / ``tool-response``, calls as text."""
    return any(isinstance(m, dict) and isinstance(m.get("role"), str) and m["role"] in SMOLAGENTS_ROLES for m in root)


def _smolagents_steps(root: list[Any]) -> bool:
    """smolagents memory steps (``get_full_steps()``): ``TaskStep`` / ``ActionStep`` dicts."""
    steps = sum(isinstance(m, dict) and "role" not in m and (
        ("task" in m and "task_images" in m) or ("step_number" in m and "timing" in m)) for m in root)
    return steps * 2 > len(root)


def _refusal(what: str, todo: str) -> UnreadableFile:
    # the load names the file and shows the message only: what to do goes in it too
    return UnreadableFile(f"{what}. What to do: {todo}", todo)


def _out_of_scope(root: Any) -> Optional[UnreadableFile]:
    """A refusal for a known agent log this reader must not read as conversations, else None."""
    if isinstance(root, list) and root and sum(map(_openhands_event, root)) * 2 > len(root):
        todo = OPENHANDS_V1_TODO if sum(map(_openhands_v1_event, root)) * 2 > len(root) else OPENHANDS_TODO
        return _refusal("an OpenHands event stream (actions and observations, not chat messages)", todo)
    if isinstance(root, list) and root and _smolagents_steps(root):
        return _refusal("smolagents memory steps (agent.memory.get_full_steps()), not chat messages",
                        "load it with --input-format smolagents (or auto, which detects it)")
    if isinstance(root, list) and root and _smolagents_messages(root):
        return _refusal(
            "smolagents agent messages (write_memory_to_messages(): roles tool-call and tool-response): the calls "
            "are Python text, and a step whose tool raised keeps only the error text, not the call",
            SMOLAGENTS_TODO,
        )
    if not isinstance(root, dict):
        return None
    answer = root.get("answer_generation")
    if isinstance(answer, dict) and ("tree" in root or "train_messages" in answer):
        return _refusal(
            "a ToolBench / StableToolBench answer file (answer_generation, the tree of tries), not one agent loop: "
            "its train_messages are prefixes of one chain, one training sample per model call, so read as "
            "conversations every call would count once per later sample, and the tree's abandoned branches ran too",
            "to measure the final chain, save it as a messages list and load that: "
            "jq '.answer_generation.train_messages[-1]' FILE > chain.json && "
            "loopscope load --input-format messages --error-when json-error-key chain.json "
            "(ToolBench tool results are JSON with an \"error\" key)",
        )
    agent = _text_action_agent(root)
    if agent:
        return _refusal(
            f"{agent} whose model wrote its actions as text (no tool_calls in it): loopscope reads structured tool "
            "calls only, so it would find no tool call and count every observation as a user prompt; nothing loaded",
            "run the agent with function calling (SWE-agent's function_calling parser, a tool-calling model in "
            "mini-swe-agent) to get trajectories loopscope can read",
        )
    return None


def _too_big(path: Path) -> UnreadableFile:
    # UnreadableFile: the load skips this file, names it, loads the others and exits 1.
    return UnreadableFile(
        f"{path}: more than the messages reader's {MAX_FILE_BYTES / 2**20:g} MiB per file (it holds a whole "
        "file in memory, about 10 times its size); split it into smaller files and load those",
        "Split it into smaller files and load them together, e.g. for JSON Lines: "
        "split -l 10000 FILE part- ; for one JSON document: jq -c '.simulations[]' FILE | split -l 1000 - part-",
    )


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped; refused above ``MAX_FILE_BYTES`` (checked before reading it all)."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if gz:
        with gzip.open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    else:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise _too_big(path)
        data = path.read_bytes()
    if len(data) > MAX_FILE_BYTES:
        raise _too_big(path)
    return data


def _decode(data: bytes, where: str) -> tuple[Optional[str], str]:
    """(text, "") or (None, why it is not UTF-8)."""
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte 0x{data[exc.start]:02x} at byte {exc.start + 1} of the {where})"


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines with their numbers, one at a time (no second copy of a big file)."""
    # split on \n only: JSON strings may hold U+2028 and other separators str.splitlines() breaks on
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    line_no = 0
    while start <= len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line_no += 1
        line = data[start:end]
        if line.strip():
            yield line_no, line
        start = end + 1


def _inspect_sample(header: dict[str, Any], sample: dict[str, Any]) -> tuple[Any, Any]:
    """(conversation object, messages) of one Inspect AI sample.

    A sample's ``id`` is its dataset row and repeats across epochs and runs, so the
    conversation is the sample's ``uuid`` when stored, else ``<eval_id>/<id>/epoch<n>``.
    Its messages carry no time: they take the eval's ``created``. A sample stopped by a limit (``limit: {type}``) or by an error (``error``) is a harness
    stop: it closes the last prompt when that prompt would otherwise be open.
    """
    obj = dict(sample)
    run = header.get("eval_id") or header.get("run_id") or header.get("task_id") or "inspect"
    obj["conversation_id"] = sample.get("uuid") or f"{run}/{sample.get('id')}/epoch{sample.get('epoch', 1)}"
    limit = sample.get("limit")
    if isinstance(limit, dict) and limit.get("type"):
        obj["termination_reason"] = f"limit:{limit['type']}"
    elif sample.get("error"):
        obj["termination_reason"] = "sample_error"
    if isinstance(header.get("model"), str):
        obj.setdefault("model", header["model"])
    if not any(parse_timestamp(sample.get(key)) for key in TIMESTAMP_KEYS) and parse_timestamp(header.get("created")):
        # Inspect keeps no time on messages: they take the eval's start (ts_from_line), so
        # --since / --until and weekly views place the run, not 1970
        obj["created"] = header["created"]
    return obj, sample.get("messages")


def _is_id(value: Any) -> bool:
    """A usable conversation id: text or an integer (not a boolean, which is an int in Python)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool) and value != ""


def _explicit_id(obj: Any, id_key: Optional[str]) -> Optional[str]:
    """The conversation id stored in ``obj`` (``id_key``, a dotted path, or the usual keys)."""
    if not isinstance(obj, dict):
        return None
    for key in (id_key,) if id_key else ID_KEYS:
        found = _walk(obj, [(k, False) for k in key.split(".")])
        if found and _is_id(found[0]):
            return str(found[0])
    return None


def _conversation_id(obj: Any, id_key: Optional[str], path: Path, ordinal: int) -> str:
    # the folder too: same-named files in dated folders must not merge their conversations
    return _explicit_id(obj, id_key) or f"{path.resolve().parent.name}/{path.name}#{ordinal}"


def _file_agent(root: Any) -> Optional[str]:
    if not isinstance(root, dict):
        return None
    if isinstance(root.get("agent"), str):
        return root["agent"]
    info = root.get("info")
    agent_info = info.get("agent_info") if isinstance(info, dict) else None
    if isinstance(agent_info, dict) and isinstance(agent_info.get("implementation"), str):
        return agent_info["implementation"]
    return None


def _dig(value: Any, *keys: str) -> Optional[str]:
    """The text at ``value[k1][k2]...``, or None (absent, empty or not text)."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) and value else None


def file_tags(root: Any) -> dict[str, str]:
    """The tags a reader can see in a benchmark's result file: ``model``, ``domain``, ``user_model``, ``framework``.

    tau2-bench results (``{info, simulations}``): ``model`` is ``info.agent_info.llm``,
    ``user_model`` ``info.user_info.llm`` (the user simulator), ``domain``
    ``info.environment_info.domain_name``; community submissions in the same layout
    without ``info`` name them ``model`` and ``domain`` at the top. ``framework`` is the
    harness whose layout the file has: ``tau2-bench``, or ``tau-bench`` for its
    ``historical_trajectories`` lists. Nothing is guessed: a tag the file does not name is left out.
    """
    tags: dict[str, str] = {}
    if isinstance(root, dict) and isinstance(root.get("simulations"), list):
        tags["framework"] = "tau2-bench"
        found = {
            "model": _dig(root, "info", "agent_info", "llm") or _dig(root, "model"),
            "user_model": _dig(root, "info", "user_info", "llm"),
            "domain": _dig(root, "info", "environment_info", "domain_name") or _dig(root, "domain"),
        }
        tags.update({k: v for k, v in found.items() if v is not None})
    elif isinstance(root, list) and root and all(isinstance(c, dict) and isinstance(c.get("traj"), list) for c in root):
        tags["framework"] = "tau-bench"
    return tags


def _time_of(obj: Any) -> Optional[Any]:
    """The stored time of a conversation object or per-turn line, as written (None if none)."""
    if isinstance(obj, dict):
        for key in TIMESTAMP_KEYS:
            if parse_timestamp(obj.get(key)) is not None:
                return obj[key]
    return None


def _stamped(messages: list[Any], stamp: Optional[Any]) -> list[Any]:
    """Messages without a time of their own take the time of the line / object that holds them."""
    if stamp is None:
        return list(messages)
    return [
        {**m, LINE_TIME_KEY: stamp} if isinstance(m, dict) and not any(k in m for k in TIMESTAMP_KEYS) else m
        for m in messages
    ]


def _call_times(root: dict[str, Any]) -> tuple[Optional[Any], Optional[Any]]:
    """When a logged model call was sent and its reply came (each: its own key, else the line's time)."""
    line = _time_of(root)
    if line is None:
        line = calllog.response_created(root)  # a Responses API response: created_at
    sent, got = (
        next((root[k] for k in keys if parse_timestamp(root.get(k)) is not None), None)
        for keys in (calllog.SENT_TIME_KEYS, calllog.REPLY_TIME_KEYS)
    )
    sent = sent if sent is not None else line
    return sent, got if got is not None else sent


class _Collector:
    """Gathers the conversations of one file, in order, joining lines of one conversation."""

    def __init__(self, path: Path, id_key: Optional[str]) -> None:
        self.path = path
        self.id_key = id_key
        self.conversations: list[_Conversation] = []
        self.by_id: dict[str, _Conversation] = {}
        self.anonymous_log: Optional[_Conversation] = None
        self.threads = calllog.Threads()  # a model-call log's lines (calllog)
        self.branches = 0
        self.not_chat: dict[str, int] = {}  # logged calls that are no chat, per call type (calllog.not_chat_call)
        self.no_reply = 0  # logged calls with no reply (a failed request): not read
        self.no_previous = 0  # Responses API calls whose previous_response_id is not in the log

    def _unused(self, cid: Optional[str]) -> Optional[str]:
        """``cid``, or ``cid#<n>`` when a conversation of this file has it already (a session whose opening
        call was sent twice, read as two conversations, must not merge them); None stays None."""
        if cid is None:
            return None
        taken = {c.cid for c in self.conversations if c.cid}
        n, name = 1, cid
        while name in taken:
            n += 1
            name = f"{cid}#{n}"
        return name

    def cid(self, conv: _Conversation) -> str:
        return conv.cid or _conversation_id(conv.obj, self.id_key, self.path, conv.ordinal)

    def add_call(self, root: dict[str, Any], history: list[Any], reply: dict[str, Any], line_no: Optional[int]) -> None:
        """One logged model call (calllog): continue the conversation it extends, else start one."""
        session = _explicit_id(root, self.id_key) if self.id_key else calllog.session_id(root)
        previous, response_id = calllog.responses_ids(root)
        if previous is not None and not self.threads.knows_response(previous):
            self.no_previous += 1  # its conversation's start is not in this log
        conv, new, branch, mark = self.threads.add(history, reply, session, previous)
        if previous is not None and conv is not None and len(new) == len(history) + 1:
            shared = conv.messages  # it goes on from a stored response: what came before is that conversation
        else:
            shared = history[: len(history) + 1 - len(new)]
        if branch and not _has_structured_calls(shared):
            # the same opening (system prompt, a user's first words) and no tool call yet: another
            # conversation that starts alike, or a retried first call; nothing would count twice
            conv, new, branch = None, history + [reply], False
        sent, got = _call_times(root)
        messages = _stamped(new[:-1], sent) + _stamped(new[-1:], got)
        if conv is not None and not branch:
            conv.messages.extend(messages)
        else:
            parent = conv
            conv = _Conversation(messages, {}, len(self.conversations) + 1, line_no)
            if parent is not None:
                self.branches += 1
                conv.cid = f"{self.cid(parent)}/branch-{self.branches}"
            else:
                conv.cid = self._unused(session or calllog.trace_id(root))
            self.conversations.append(conv)
        self.threads.record(conv, mark, response_id)
        conv.obj.pop("termination_reason", None)  # a failed call before this one was retried: the loop went on

    def failed_call(self, root: dict[str, Any], history: list[Any], line_no: Optional[int]) -> bool:
        """A logged call with no reply: the loop stopped on it (unless a later call goes on from the same
        point). When it continues no conversation of this file, its history is read as one (its first
        call, or one whose earlier calls are in another file), as a call with a reply would be.

        Returns False, reading nothing, for a history that continues nothing and ends with a model
        response: no request (a request ends with what the model is to answer), but a finished
        conversation with an empty ``response`` or a failure ``status``: read as a conversation."""
        session = _explicit_id(root, self.id_key) if self.id_key else calllog.session_id(root)
        conv, new = self.threads.add_failed(history, session, calllog.responses_ids(root)[0])
        if new is None:  # a failed retry of an earlier point of a conversation: nothing new in it
            self.no_reply += 1
            return True
        if conv is None:
            last = history[-1] if history else None
            if not isinstance(last, dict) or (last.get("role") or last.get("type")) in ("assistant", "ai", "model"):
                return False
            conv = _Conversation([], {}, len(self.conversations) + 1, line_no)
            conv.cid = self._unused(session or calllog.trace_id(root))
            self.conversations.append(conv)
            self.threads.start_failed(conv, history, session)
            new = history
        self.no_reply += 1
        conv.messages.extend(_stamped(new, _call_times(root)[0]))
        conv.obj["termination_reason"] = "model_call_failed"
        return True

    def add(self, obj: Any, messages: list[Any], joinable: bool, line_no: Optional[int] = None) -> None:
        ordinal = len(self.conversations) + 1
        stamp = _time_of(obj)
        cid = _explicit_id(obj, self.id_key) if joinable else None
        if cid is not None:
            known = self.by_id.get(cid)
            if known is not None:
                if messages[: len(known.raw)] == known.raw:  # a snapshot of the whole array so far
                    known.messages = known.messages + _stamped(messages[len(known.raw) :], stamp)
                    known.raw = list(messages)
                else:  # the new messages of a turn
                    known.messages.extend(_stamped(messages, stamp))
                    known.raw.extend(messages)
                return
        conv = _Conversation(_stamped(messages, stamp), obj, ordinal, line_no)
        conv.raw = list(messages)
        if cid is not None:
            self.by_id[cid] = conv
        self.conversations.append(conv)

    def add_message_line(self, message: dict[str, Any], line_no: Optional[int] = None) -> None:
        """A per-message log line: group by the conversation id it carries (or one per file)."""
        keys = (self.id_key,) if self.id_key else ID_KEYS[:1] + ID_KEYS[2:]
        cid = next((str(message[k]) for k in keys if _is_id(message.get(k))), None)
        if cid is None:
            if self.anonymous_log is None:
                self.anonymous_log = _Conversation([], {}, len(self.conversations) + 1, line_no)
                self.conversations.append(self.anonymous_log)
            self.anonymous_log.messages.append(message)
            return
        conv = self.by_id.get(cid)
        if conv is None:
            conv = _Conversation([], {"conversation_id": cid}, len(self.conversations) + 1, line_no)
            self.by_id[cid] = conv
            self.conversations.append(conv)
        conv.messages.append(message)


def _no_messages(selector: Optional[str], root: Any = None, document: bool = False) -> str:
    if isinstance(root, dict) and "v" in root and "kind" in root:
        return "a loopscope record, not a conversation: load this file with --input-format records"
    if isinstance(root, dict) and ("resourceSpans" in root or "resourceLogs" in root):
        return "an OpenTelemetry export, not a conversation: load this file with --input-format otlp"
    if document and _openhands_event(root) and not _openhands_v1_event(root):
        return ONE_EVENT  # the whole file is one event
    if _openhands_event(root):
        todo = OPENHANDS_V1_TODO if _openhands_v1_event(root) else OPENHANDS_TODO
        return f"an OpenHands event (action / observation), not a chat message: {todo}"
    if isinstance(root, dict) and isinstance(root.get("eval"), dict) and not root.get("samples"):
        return (
            "an Inspect AI eval log with no samples (the run logged none: log_samples off, or it was "
            "written header-only): there are no messages to read; log the samples and load that log"
        )
    if selector:
        return f"--messages-key {selector!r} selects no messages list here"
    return "no conversation found (no messages list at a known place); pass --messages-key, e.g. simulations[].messages"


def _gather(root: Any, line_no: Optional[int], selector: Optional[str], coll: _Collector, out: ReaderOutput, raw: str, jsonl: bool) -> None:
    if jsonl and selector is None and _is_message(root):
        coll.add_message_line(root, line_no)
        return
    if selector is None:
        kind = calllog.not_chat_call(root)
        if kind is not None:  # a gateway's embedding / image / moderation call: no conversation in it
            coll.not_chat[kind] = coll.not_chat.get(kind, 0) + 1
            return
        calls = [root] if isinstance(root, dict) else root if isinstance(root, list) else []
        entries = [calllog.call_entry(c) for c in calls]
        if entries and all(e is not None for e in entries):  # a model-call log: history + reply per call
            for call, (history, reply) in zip(calls, entries):
                if reply is not None:
                    coll.add_call(call, history, reply, line_no)
                elif not coll.failed_call(call, history, line_no):
                    coll.add(call, history, joinable=jsonl, line_no=line_no)
            return
    pairs = _select(root, selector) if selector else _auto(root)
    if not pairs:
        if pairs is None or selector:
            out.bad.append(BadLine(line_no, _no_messages(selector, root, document=not jsonl), raw[:RAW_CAP]))
        return
    for obj, messages in pairs:
        if not isinstance(messages, list):
            out.bad.append(BadLine(line_no, _no_messages(selector), raw[:RAW_CAP]))
            continue
        coll.add(obj, messages, joinable=jsonl, line_no=line_no)


def _is_json_line(raw: bytes) -> bool:
    try:
        json.loads(raw.decode("utf-8-sig"))
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return False
    return True


def read(path: Path, options: Mapping[str, Any]) -> ReaderOutput:
    """Read the conversations in ``path`` and derive their v1 records.

    Args:
        path: a JSON or JSON Lines file (gzip allowed).
        options: ``messages_key``, ``id_key``, ``error_when`` (a convention or
            a list of them), ``agent_name``, ``tags`` (a dict, over the tags the
            file names: ``file_tags``); all optional.

    Returns:
        Records in file order, protocol violations, and the lines that could
        not be read (the file keeps loading past them).

    Raises:
        LoopscopeError: an invalid option (selector, ``--error-when``).
    """
    selector = options.get("messages_key") or None
    id_key = options.get("id_key") or None
    rules: ErrorRules = parse_error_when(options.get("error_when"))
    if selector:
        parse_selector(selector)  # fail fast on a malformed selector
    out = ReaderOutput()
    data = _read_bytes(path)
    text, why = _decode(data, "file")
    coll = _Collector(path, id_key)
    root: Any = None
    try:
        if text is None:
            raise ValueError(why)
        root = jsontext.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        text = None  # memory: the lines are read from the bytes
        first = next(_lines(data), None)
        if first is None or not _is_json_line(first[1]):  # a broken JSON document, not JSON Lines
            reason = why or (TOO_DEEP if isinstance(exc, RecursionError) else f"not JSON: {exc}")
            out.bad.append(BadLine(getattr(exc, "lineno", None), reason, data[:RAW_CAP].decode("utf-8", "replace")))
            return out
        for line_no, raw in _lines(data):
            line, line_why = _decode(raw, "line")
            if line is None:
                out.bad.append(BadLine(line_no, line_why, raw[:RAW_CAP].decode("utf-8", "replace")))
                continue
            try:
                value = jsontext.loads(line)
            except json.JSONDecodeError as line_exc:
                out.bad.append(BadLine(line_no, f"not JSON: {line_exc.msg} (column {line_exc.colno})", line[:RAW_CAP]))
                continue
            except RecursionError:
                out.bad.append(BadLine(line_no, TOO_DEEP, line[:RAW_CAP]))
                continue
            try:
                _gather(value, line_no, selector, coll, out, line, jsonl=True)
            except RecursionError:
                out.bad.append(BadLine(line_no, TOO_DEEP, line[:RAW_CAP]))
    else:
        head, data, text = text[:RAW_CAP], b"", None  # memory: only the parsed document is needed now
        refusal = None if selector else _out_of_scope(root)
        if refusal is not None:
            raise refusal
        _gather(root, None, selector, coll, out, head, jsonl=False)
    agent_default = options.get("agent_name") or _file_agent(root) or "default"
    # what the file names (model, domain, ...), then the user's --tag, which wins
    tags = {**file_tags(root), **dict(options.get("tags") or {})} or None
    unflagged = 0
    provider_calls = provider_errors = 0  # calls of tools the provider ran (Anthropic server tools, MCP)
    responses = 0  # model responses in a file where no message calls a tool (see below)
    structured = False
    for conv in coll.conversations:
        if not structured:
            structured = _has_structured_calls(conv.messages)
            responses += sum(
                1 for m in map(langchain_message, conv.messages) if _is_response(m)
            )
        agent = options.get("agent_name") or (conv.obj.get("agent") if isinstance(conv.obj.get("agent"), str) else None) or agent_default
        termination = conv.obj.get("termination_reason")
        info = conv.obj.get("info")
        if termination is None and isinstance(info, dict) and "history" in conv.obj:
            termination = info.get("exit_status")  # SWE-agent: how the run ended
        cid = coll.cid(conv)
        try:
            result = conversation_records(
                conv.messages,
                conversation_id=cid,
                agent=agent,
                rules=rules,
                termination_reason=termination if isinstance(termination, str) else None,
                tags=tags,
            )
        except RecursionError:  # a message nested deeper than Python can walk: lose this conversation only
            out.bad.append(BadLine(conv.line_no, f"conversation {cid!r}: {TOO_DEEP}", ""))
            continue
        out.records.extend(result.records)
        out.violations.extend(result.violations)
        unflagged += result.unflagged_error_texts
        provider_calls += result.provider_calls
        provider_errors += result.provider_errors
    if responses and not structured and provider_calls:
        # Every tool this file's model used ran on the provider's side (Anthropic server tools, the
        # MCP connector): not agent tool calls (as the Responses API's own tools), but no text-action agent.
        out.finding(
            "provider_tools_only",
            f"{path.name}: {provider_calls} call(s) of tools the provider ran (Anthropic server tools, "
            f"MCP connector), {provider_errors} of them error(s), and no tool call the agent ran, in "
            f"{responses} model response(s)",
        )
    elif responses and not structured:
        # Model responses and not one tool call: a chat without tools, or an agent that writes its
        # actions in the text (a command block, a ReAct "Action:" line) and gets the observation
        # back as a user message. Nothing in the structure tells the two apart; for the second,
        # every observation counts as a prompt. Say so once per file.
        out.finding(
            "no_tool_calls",
            f"{path.name}: {responses} model response(s) and no tool call (no tool_calls, tool_use, "
            "function_call or tool result) in the file",
        )
    for conv in coll.conversations:
        if conv.cid and "/branch-" in conv.cid:
            out.finding(
                "call_log_branch",
                f"{path.name}: a logged model call re-sent an earlier point of {conv.cid.rsplit('/branch-', 1)[0]!r} "
                "after it had gone on (a retried or regenerated call); read as its own conversation from that point",
                conv.cid,
            )
    if coll.not_chat:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(coll.not_chat.items(), key=lambda kv: (-kv[1], kv[0])))
        out.finding(
            "call_log_not_chat",
            f"{path.name}: {sum(coll.not_chat.values())} logged call(s) that are no chat ({kinds}): "
            "no conversation in them, left out",
        )
    if coll.no_reply:
        out.finding(
            "call_log_no_reply",
            f"{path.name}: {coll.no_reply} logged model call(s) have no reply (a failed request): the loop ended "
            "there unless a later call retried it",
        )
    if coll.no_previous:
        out.finding(
            "call_log_no_previous",
            f"{path.name}: {coll.no_previous} logged Responses API call(s) continue a response "
            "(previous_response_id) that is not in this file: each was read as the start of a conversation, "
            "without what came before it (load the earlier log with it)",
        )
    if unflagged:
        # The likeliest silent mistake: a log that marks errors only in the text, loaded with the
        # default convention, shows no errors at all. Say so once per file.
        out.finding(
            "unflagged_error_text",
            f"{path.name}: {unflagged} tool result(s) carry no error flag but their text reads like "
            "an error ('Error: ...' or a JSON \"error\" key); they were counted as successes. If this log "
            "marks errors only in the text, load it with --error-when prefix or json-error-key "
            "(docs/inputs.md)",
        )
    return out
