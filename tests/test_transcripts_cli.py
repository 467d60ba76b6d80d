"""Claude Code and Codex CLI transcripts end to end: ``loopscope load`` on a folder, then metrics /
unrecovered / audit / triage / quarantine, through the CLI (issue 16).

Fixtures: tests/fixtures/transcripts/ (real sessions of Claude Code 2.0.64, 2.1.38, 2.1.39 and
Codex CLI 0.125.0, 0.128.0-alpha.1, plus constructed 1.0-style / 0.44-style / pre-envelope
files; sources and licences in its README).

How the expected figures are counted, independently of the readers: ``count_claude`` and
``count_codex`` below walk the raw lines with plain ``json`` and the formats' own markers:

- tool calls: call ids the model asked for (Claude ``tool_use`` blocks; Codex
  ``function_call`` / ``custom_tool_call`` items) that got an output later in the same file
  (Claude ``tool_result``; Codex ``*_output``), one per output;
- errors: of those outputs, Claude's ``is_error: true``; for Codex the exit code Codex
  wrote (``metadata.exit_code`` in the JSON envelope, an ``Exit code: N`` /
  ``Process exited with code N`` header line) when not 0, ``success: false``, or an
  answer Codex gives instead of running the call (``failed to parse function arguments``,
  ``<tool> failed:``...);
- prompts: user text lines (Claude: a string or ``text`` blocks, not ``isMeta``, not a
  compaction summary, not a ``<...>`` marker or ``[Request interrupted ...]``; Codex: a
  ``user_message`` event or a user message item that is not ``<...>`` / ``# AGENTS.md``
  context) that a model response follows; user lines with no response between them are
  one prompt; a sidechain / subagent file counts its own;
- sessions: one per session file, one per subagent file or inline sidechain, except
  Claude Code's compaction (``agent-acompact-*``) and ``Warmup`` sidechains.

The constructed files' figures are also worked out by hand in the comments.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

from loopscope.cli.app import app
from typer.testing import CliRunner

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "transcripts"
CLAUDE = FIXTURES / "claude-code"
CODEX = FIXTURES / "codex" / "sessions"
DEMO_SESSION = "5a1c0b7e-0000-4000-8000-000000000001"
DEMO = CLAUDE / "-home-dev-demo" / f"{DEMO_SESSION}.jsonl"
CODEX_044 = CODEX / "2025" / "10" / "02" / "rollout-2025-10-02T09-00-00-0199a213-81c0-7800-8aa1-bbab2a035a53.jsonl"

runner = CliRunner()


def invoke(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def as_json(*args: str) -> Any:
    return json.loads(invoke(*args, "--db", "store.duckdb", "--format", "json").stdout)


def load(*paths: Path, options: tuple[str, ...] = ()) -> dict[str, Any]:
    return as_json("load", *options, *(str(p) for p in paths))


# -- independent counts from the raw lines ---------------------------------------------------


def raw_lines(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    out = []
    for raw in data.split(b"\n"):
        try:
            value = json.loads(raw)
        except ValueError:
            continue  # a blank or cut line: not counted
        if isinstance(value, dict):
            out.append(value)
    return out


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.name.endswith((".jsonl", ".jsonl.gz")))


def add(total: dict[str, int], part: dict[str, int]) -> None:
    for key, value in part.items():
        total[key] = total.get(key, 0) + value


def count_claude(root: Path) -> dict[str, int]:
    total: dict[str, int] = {}
    for path in files(root):
        lines, seen = [], set()
        for line in raw_lines(path):
            if line.get("uuid") in seen:
                continue  # the same line written twice
            seen.add(line.get("uuid"))
            lines.append(line)
        chains: dict[str, list[dict[str, Any]]] = {}
        root_of: dict[Any, str] = {}
        for line in lines:
            if line.get("type") not in ("user", "assistant"):
                continue
            if line.get("isSidechain"):
                key = line.get("agentId") or root_of.get(line.get("parentUuid")) or str(line.get("uuid"))
            else:
                key = "main"
            root_of[line.get("uuid")] = key
            chains.setdefault(key, []).append(line)
        for key, chain in chains.items():
            first_text = next((c["message"]["content"] for c in chain if c["type"] == "user"), None)
            if str(key).startswith("acompact") or first_text == "Warmup":
                continue  # Claude Code's own housekeeping
            asked: set[str] = set()
            calls = errors = prompts = 0
            waiting = False  # a prompt waiting for its first response
            any_response = False
            for line in chain:
                content = line["message"].get("content")
                if line["type"] == "assistant":
                    if line.get("isApiErrorMessage"):
                        continue
                    any_response = True
                    if waiting:
                        prompts, waiting = prompts + 1, False
                    for block in content if isinstance(content, list) else []:
                        if block.get("type") == "tool_use":
                            asked.add(block["id"])
                    continue
                blocks = content if isinstance(content, list) else []
                for block in blocks:
                    if block.get("type") == "tool_result" and block.get("tool_use_id") in asked:
                        calls += 1
                        errors += block.get("is_error") is True
                texts = [content] if isinstance(content, str) else [b.get("text", "") for b in blocks if b.get("type") == "text"]
                text = "\n".join(texts).strip()
                if (
                    text
                    and not line.get("isMeta")
                    and not line.get("isCompactSummary")
                    and not text.startswith(("<", "[Request interrupted", "Caveat:"))
                ):
                    waiting = True
            if any_response and prompts == 0:
                prompts = 1  # a chain that starts with the model (none in these fixtures but sidechains)
            add(total, {"sessions": 1, "tool_calls": calls, "errors": errors, "prompts": prompts})
    return total


CODEX_REFUSALS = ("failed to parse function arguments", "unsupported call", "execution error", "err: ")


def codex_output_failed(output: Any) -> bool:
    if isinstance(output, dict):
        return output.get("success") is False
    if not isinstance(output, str):
        return False
    try:
        envelope = json.loads(output)
    except ValueError:
        envelope = None
    if isinstance(envelope, dict) and isinstance(envelope.get("metadata"), dict):
        return envelope["metadata"].get("exit_code") not in (0, None)
    header = output.split("\nOutput:\n")[0]
    code = re.search(r"^(?:Exit code: |Process exited with code )(\d+)$", header, re.MULTILINE)
    if code:
        return code.group(1) != "0"
    return output.startswith(CODEX_REFUSALS) or re.match(r"^[a-z_]+ failed: ", output) is not None


def count_codex(root: Path) -> dict[str, int]:
    total: dict[str, int] = {}
    for path in files(root):
        asked: set[str] = set()
        calls = errors = prompts = 0
        waiting = False
        for line in raw_lines(path):
            item = line.get("payload") if "payload" in line else line
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            user_text = None
            if line.get("type") == "event_msg" and kind == "user_message":
                user_text = item.get("message", "")
            elif kind == "message" and item.get("role") == "user":
                user_text = " ".join(c.get("text", "") for c in item.get("content", []))
            if user_text is not None:
                if user_text.strip() and not user_text.startswith(("<", "# AGENTS.md")):
                    waiting = True
                continue
            if kind in ("function_call", "custom_tool_call", "reasoning") or (kind == "message" and item.get("role") == "assistant"):
                if waiting:
                    prompts, waiting = prompts + 1, False
                if kind in ("function_call", "custom_tool_call"):
                    asked.add(item["call_id"])
            elif kind in ("function_call_output", "custom_tool_call_output") and item.get("call_id") in asked:
                calls += 1
                errors += codex_output_failed(item.get("output"))
        add(total, {"sessions": 1, "tool_calls": calls, "errors": errors, "prompts": prompts})
    return total


# -- tests ------------------------------------------------------------------------------------


def test_claude_code_folder_matches_the_raw_counts() -> None:
    expected = count_claude(CLAUDE)
    shown = invoke("load", "--db", "other.duckdb", str(CLAUDE))
    # housekeeping sidechains give no record and are no reason for a warning
    assert "yielded 0 records" not in shown.output
    summary = load(CLAUDE)  # no --input-format: found by content, subfolders searched
    assert {d["input_format"] for d in summary["details"]} == {"claude-code"}
    assert summary["tool_calls"] == expected["tool_calls"]
    m = as_json("metrics")
    assert (m["prompts"], m["tool_calls"], m["errors"]) == (expected["prompts"], expected["tool_calls"], expected["errors"])
    audit = as_json("audit")
    assert audit["overall"]["conversations"] == expected["sessions"]
    # the figures themselves, so a wrong counter cannot hide a wrong reader
    assert expected == {"sessions": 7, "prompts": 13, "tool_calls": 47, "errors": 5}
    agents = {row["agent"] for row in audit["agents"]}
    assert agents == {"claude-code", "claude-code/subagent"}
    # the one id collision (toolu_G1) is reported once: by the reader, with its lines, not again by the store
    kinds = {row["kind"]: row["violations"] for row in audit["protocol_violations"]["by_kind"]}
    assert kinds.get("reused_tool_call_id") == 1
    # the session's Task call names the subagent's conversation, which names its session
    session = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
    links = _query("SELECT extra->>'subagent_conversation_id' FROM tool_calls WHERE extra->>'subagent_conversation_id' IS NOT NULL")
    assert links == [(f"{session}/agent-aac57f5",)]
    parents = _query(f"SELECT DISTINCT extra->>'parent_conversation_id' FROM tool_calls WHERE conversation_id = '{session}/agent-aac57f5'")
    assert parents == [(session,)]


def test_the_sessions_index_of_a_projects_folder_is_not_a_transcript(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-dev-demo"
    folder.mkdir(parents=True)
    shutil.copy(DEMO, folder / DEMO.name)
    index = {"version": 1, "entries": [{"sessionId": DEMO_SESSION, "fullPath": str(folder / DEMO.name), "messageCount": 30}]}
    (folder / "sessions-index.json").write_text(json.dumps(index, indent=2))
    summary = load(tmp_path / "projects")
    assert summary["quarantined"] == 1  # the cut line of the session, nothing of the index
    assert summary["skipped_types"]["sessions-index.json (Claude Code's index of sessions, not a transcript)"] == 1


def test_codex_folder_matches_the_raw_counts() -> None:
    expected = count_codex(CODEX)
    summary = load(CODEX)
    assert {d["input_format"] for d in summary["details"]} == {"codex"}
    assert summary["tool_calls"] == expected["tool_calls"]
    m = as_json("metrics")
    assert (m["prompts"], m["tool_calls"], m["errors"]) == (expected["prompts"], expected["tool_calls"], expected["errors"])
    assert as_json("audit")["overall"]["conversations"] == expected["sessions"]
    assert expected == {"sessions": 4, "prompts": 9, "tool_calls": 37, "errors": 6}


def test_claude_code_constructed_session() -> None:
    summary = load(DEMO, options=("--input-format", "claude-code"))
    # main: A1 B1 B2 C1 D1 E1 G1 G1' = 8 calls; the inline sidechain: S1 = 1
    assert (summary["tool_calls"], summary["loop_exits"]) == (9, 5)
    assert summary["quarantined"] == 1  # line 26 is cut
    # an unknown line type and the line written twice: skipped and counted, not errors
    assert summary["skipped_types"] == {"x-future-line": 1, "duplicate line (same uuid)": 1}
    m = as_json("metrics")
    # prompts: lines 2, 22, 28, 32 and the sidechain's; /cost made none (the model never saw it)
    assert (m["prompts"], m["open_prompts"], m["tool_calls"]) == (5, 0, 9)
    # A1 recovered (B1 ok later, normal exit); S1 gave up (the subagent answered without a
    # working call); G1 aborted (interrupted)
    assert (m["errors"], m["recovered_errors"]) == (3, 1)
    rows = as_json("unrecovered")
    assert sorted((r["tool_call_id"], r["class"]) for r in rows) == [("toolu_G1", "aborted"), ("toolu_S1", "gave_up")]
    exits = _query("SELECT prompt_id, exit_reason, error_type FROM loop_exits ORDER BY prompt_id")
    assert exits == [
        ("line-2", "end_turn", None),
        ("line-22", "interrupted", "interrupted_by_user"),
        ("line-28", "error", "api_error"),
        ("line-32", "end_turn", None),
        ("line-9", "end_turn", None),
    ]
    # the sidechain is its own conversation, linked to its session
    side = _query("SELECT DISTINCT conversation_id, agent, extra->>'parent_conversation_id' FROM tool_calls WHERE tool_call_id = 'toolu_S1'")
    assert side == [(f"{DEMO_SESSION}/sidechain-u08", "claude-code/subagent", DEMO_SESSION)]
    # the error text the model saw, redacted: the token is gone
    (message,) = _query("SELECT error_message FROM tool_calls WHERE tool_call_id = 'toolu_A1'")[0]
    assert "TypeError" in message and "ghp_" not in message
    # nothing of the arguments but their shape and fingerprint
    (shape, fingerprint) = _query("SELECT input_shape, args_fingerprint FROM tool_calls WHERE tool_call_id = 'toolu_D1'")[0]
    assert json.loads(shape) == {"file_path": "string", "old_string": "string", "new_string": "string"}
    assert re.fullmatch(r"[0-9a-f]{64}", fingerprint)
    assert "import jwt" not in json.dumps(_query("SELECT * FROM tool_calls", raw=True), default=str)
    # toolu_G1 reused for another call: a protocol violation naming both lines
    violations = _query("SELECT kind, tool_call_id, detail FROM protocol_violations")
    assert [(k, t) for k, t, _ in violations] == [("reused_tool_call_id", "toolu_G1")]
    assert "line 29" in violations[0][2] and "line 23" in violations[0][2]


def test_an_id_reused_for_another_call_is_not_a_replay() -> None:
    load(DEMO)
    # toolu_G1 again, for `./deploy.sh staging`: an id collision (protocol violation), a new call
    m = as_json("metrics")
    assert (m["replays"], m["tool_calls"]) == (0, 9)


def test_codex_constructed_rollouts() -> None:
    legacy = CODEX / "2025" / "05" / "20" / "rollout-2025-05-20T10-00-00-7f3c2a10-5b1e-4c2d-9a55-1c0de0000001.jsonl"
    summary = load(CODEX_044, legacy, options=("--input-format", "codex"))
    assert summary["quarantined"] == 1
    assert summary["skipped_types"] == {"x_future_line": 1, "response_item:x_new_item": 1}
    m = as_json("metrics")
    # 0.44: call_1 (exit 101) recovered by call_2; call_4 (Exit code: 101) aborted by turn_aborted;
    # call_5 (arguments refused) recovered by call_6. Pre-envelope: call_a (success false)
    # recovered by call_b.
    assert (m["prompts"], m["open_prompts"], m["tool_calls"], m["errors"], m["recovered_errors"]) == (4, 0, 8, 4, 3)
    errors = _query("SELECT tool_call_id, error_type, extra->>'exit_code' FROM tool_calls WHERE is_error ORDER BY tool_call_id")
    assert errors == [("call_1", "exit_code", "101"), ("call_4", "exit_code", "101"), ("call_5", "invalid_arguments", None), ("call_a", "failed", None)]
    (exit_reason,) = _query("SELECT exit_reason FROM loop_exits WHERE prompt_id = 'line-16'")[0]
    assert exit_reason == "interrupted"
    # the pre-envelope file has no times: they are the session's start, marked synthetic
    synthetic = _query("SELECT DISTINCT ts, extra->>'ts_synthetic' FROM tool_calls WHERE conversation_id = '7f3c2a10-5b1e-4c2d-9a55-1c0de0000001'")
    assert [(str(ts)[:19], flag) for ts, flag in synthetic] == [("2025-05-20 10:00:00", "true")]
    # apply_patch's free-text input is fingerprinted as {"input": ...}
    (shape,) = _query("SELECT input_shape FROM tool_calls WHERE tool_call_id = 'call_2'")[0]
    assert json.loads(shape) == {"input": "string"}


def test_a_codex_subagent_session_is_its_own_agent_linked_to_its_parent(tmp_path: Path) -> None:
    # the session_meta of a spawned agent as Codex 0.105+ writes it (source.subagent.thread_spawn)
    meta = {"id": "child-1", "source": {"subagent": {"thread_spawn": {"parent_thread_id": "parent-1", "depth": 1}}}}
    lines = [
        {"timestamp": "2026-02-20T00:00:00.000Z", "type": "session_meta", "payload": meta},
        {"timestamp": "2026-02-20T00:00:01.000Z", "type": "event_msg", "payload": {"type": "user_message", "message": "check the build"}},
        {"timestamp": "2026-02-20T00:00:02.000Z", "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"make\"}", "call_id": "c1"}},
        {"timestamp": "2026-02-20T00:00:03.000Z", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 2\nOutput:\nmake: *** No targets."}},
    ]
    path = tmp_path / "rollout-2026-02-20T00-00-00-child-1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    load(path)
    assert _query("SELECT conversation_id, agent, is_error, extra->>'parent_conversation_id' FROM tool_calls") == [
        ("child-1", "codex/subagent", True, "parent-1")
    ]


def test_an_api_error_before_any_response_ends_the_prompt(tmp_path: Path) -> None:
    sid = "0c0ffee0-0000-4000-8000-000000000002"
    common = {"isSidechain": False, "userType": "external", "sessionId": sid, "version": "2.1.39"}
    lines = [
        {"parentUuid": None, **common, "type": "user", "message": {"role": "user", "content": "hello"}, "uuid": "u1", "timestamp": "2026-02-01T10:00:00.000Z"},
        {"parentUuid": "u1", **common, "type": "assistant", "uuid": "a1", "timestamp": "2026-02-01T10:00:03.000Z", "isApiErrorMessage": True,
         "message": {"id": "e1", "model": "<synthetic>", "role": "assistant", "stop_reason": "stop_sequence",
                     "content": [{"type": "text", "text": "API Error: Request timed out."}]}},
    ]
    path = tmp_path / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    load(path)
    m = as_json("metrics")
    assert (m["prompts"], m["open_prompts"], m["tool_calls"]) == (1, 0, 0)
    assert _query("SELECT exit_reason, steps, error_type, error_message FROM loop_exits") == [("error", 0, "api_error", "API Error: Request timed out.")]


def test_reload_adds_nothing_and_a_growing_file_is_not_counted_twice(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-dev-demo"
    folder.mkdir(parents=True)
    session = folder / DEMO.name
    lines = DEMO.read_bytes().splitlines(keepends=True)
    session.write_bytes(b"".join(lines[:18]))  # the agent is still writing: up to the first answer
    first = load(tmp_path / "projects")
    assert first["tool_calls"] == 7
    again = load(tmp_path / "projects")
    assert [d["status"] for d in again["details"]] == ["unchanged"]
    assert again["loaded"] == 0
    session.write_bytes(b"".join(lines))  # the session went on
    grown = load(tmp_path / "projects")
    assert [d["status"] for d in grown["details"]] == ["replaced"]
    assert as_json("metrics")["tool_calls"] == 9  # the whole file once, not 7 + 9


def test_triage_shows_a_real_session_with_its_first_unrecovered_error() -> None:
    load(CLAUDE / "-home-marco-projects-spotter")
    report = as_json("triage", "55604662-cf2a-4331-851a-ec234028f8ca")
    text = json.dumps(report)
    first = report["first_unrecovered"]
    assert first is not None and first["tool_call_id"] in text
    table = invoke("triage", "55604662-cf2a-4331-851a-ec234028f8ca", "--db", "store.duckdb").stdout
    assert first["tool_call_id"] in table


def test_bad_lines_are_quarantined_with_file_and_line_never_a_traceback(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(CODEX_044, folder / CODEX_044.name)
    (folder / "rollout-2025-10-03T00-00-00-broken.jsonl").write_bytes(
        b'{"timestamp":"2025-10-03T00:00:00Z","type":"session_meta","payload":{"id":"b1"}}\n'
        b"\xff\xfe not utf-8\n"
        b"[1, 2]\n"
        b'{"timestamp":"2025-10-03T00:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}\n'
    )
    result = invoke("load", "--db", "store.duckdb", str(folder))
    assert "Traceback" not in result.output
    rows = as_json("quarantine")
    where = sorted((Path(r["path"]).name, r["line_no"]) for r in rows)
    assert where == [
        ("rollout-2025-10-02T09-00-00-0199a213-81c0-7800-8aa1-bbab2a035a53.jsonl", 30),
        ("rollout-2025-10-03T00-00-00-broken.jsonl", 2),
        ("rollout-2025-10-03T00-00-00-broken.jsonl", 3),
    ]


def _query(sql: str, raw: bool = False) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect("store.duckdb", read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_cut_gzip_session_is_named_not_a_traceback(tmp_path: Path) -> None:
    real = CODEX / "2026" / "05" / "11" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
    cut = tmp_path / "rollout-cut.jsonl.gz"
    cut.write_bytes(real.read_bytes()[:12000])  # a copy interrupted mid-stream
    result = invoke("load", "--db", "store.duckdb", str(cut), code=1)
    assert "Traceback" not in result.output and "rollout-cut.jsonl.gz" in result.output
    # the reader alone keeps the lines before the cut and says why it stopped
    from loopscope.analyses.ingest.transcripts import codex

    out = codex.read(cut, {})
    assert out.records == [] or all(r["conversation_id"] == "019e1625-789d-76c0-80ab-3724b5ddb799" for r in out.records)
    assert [b.line_no for b in out.bad] == [None] and "could not be read to its end" in out.bad[0].reason


def _stream_json_run() -> list[dict[str, Any]]:
    # `claude -p --output-format stream-json` as Claude Code 2.1 writes it (constructed after the
    # documented SDK message types): init; a response calling Read (fails: is_error) and Task; the
    # subagent's lines inline, naming the Task call in parent_tool_use_id (one Grep call, ok); the
    # Read retried (ok); the Task result; then the run stops at --max-turns with the last response
    # asking for Bash: result error_max_turns. No timestamps, snake_case session_id.
    sid = "6f0f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

    def assistant(uuid: str, mid: str, blocks: list[dict[str, Any]], parent: str | None = None) -> dict[str, Any]:
        return {"type": "assistant", "message": {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": blocks, "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 5}},
                "parent_tool_use_id": parent, "session_id": sid, "uuid": uuid}

    def results(uuid: str, blocks: list[dict[str, Any]], parent: str | None = None) -> dict[str, Any]:
        return {"type": "user", "message": {"role": "user", "content": blocks}, "parent_tool_use_id": parent, "session_id": sid, "uuid": uuid}

    def use(call_id: str, name: str, **args: Any) -> dict[str, Any]:
        return {"type": "tool_use", "id": call_id, "name": name, "input": args}

    def res(call_id: str, text: str, error: bool = False) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": error}

    return [
        {"type": "system", "subtype": "init", "cwd": "/w", "session_id": sid, "tools": ["Read", "Task", "Bash"],
         "model": "claude-sonnet-4-5", "claude_code_version": "2.1.4", "uuid": "u0"},
        assistant("u1", "msg_1", [use("toolu_r1", "Read", file_path="/w/a.txt"), use("toolu_t1", "Task", prompt="find b")]),
        results("u2", [res("toolu_r1", "<tool_use_error>File does not exist.</tool_use_error>", error=True)]),
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "find b"}]},
         "parent_tool_use_id": "toolu_t1", "session_id": sid, "uuid": "s1"},
        assistant("s2", "msg_s1", [use("toolu_g1", "Grep", pattern="b")], parent="toolu_t1"),
        results("s3", [res("toolu_g1", "b.txt")], parent="toolu_t1"),
        assistant("s4", "msg_s2", [{"type": "text", "text": "b.txt"}], parent="toolu_t1"),
        results("u3", [res("toolu_t1", "b.txt")]),
        assistant("u4", "msg_2", [use("toolu_r2", "Read", file_path="/w/b.txt")]),
        results("u5", [res("toolu_r2", "hello")]),
        assistant("u6", "msg_3", [use("toolu_b1", "Bash", command="cat /w/b.txt")]),
        {"type": "result", "subtype": "error_max_turns", "is_error": True, "num_turns": 3, "session_id": sid, "uuid": "u7"},
    ]


def test_claude_code_stream_json_is_detected_and_read(tmp_path: Path) -> None:
    # It used to be taken for conversation messages: every line quarantined with "no conversation
    # found ... pass --messages-key, e.g. simulations[].messages".
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in _stream_json_run()), encoding="utf-8")
    summary = load(path)
    assert summary["details"][0]["input_format"] == "claude-code"
    assert (summary["tool_calls"], summary["quarantined"]) == (4, 0)  # Bash got no result: no record
    rows = _query("SELECT conversation_id, prompt_id, tool_call_id, tool_name, step, is_error, "
                  "extra->>'subagent_conversation_id' FROM tool_calls ORDER BY conversation_id, ts, step, tool_call_id")
    sid = "6f0f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
    main = [r for r in rows if r[0] == sid]
    assert [(r[2], r[3], r[4], r[5]) for r in main] == [
        ("toolu_r1", "Read", 0, True), ("toolu_t1", "Task", 0, False), ("toolu_r2", "Read", 1, False),
    ]
    assert next(r[6] for r in main if r[2] == "toolu_t1") == f"{sid}/task-toolu_t1"
    assert [(r[0], r[2], r[5]) for r in rows if r[0] != sid] == [(f"{sid}/task-toolu_t1", "toolu_g1", False)]
    exits = _query("SELECT conversation_id, exit_reason, error_type FROM loop_exits ORDER BY conversation_id")
    # the main run stopped at --max-turns while its last response asked for Bash: budget_exceeded
    assert exits == [(sid, "budget_exceeded", "max_turns"), (f"{sid}/task-toolu_t1", "end_turn", None)]
