"""A scripted fake of the Anthropic Messages API on 127.0.0.1, streaming SSE as the real one does.

Used by tests/test_adapter_claude_agent_sdk.py to run the real Claude Agent SDK (and the Claude
Code CLI it bundles) offline: ``ANTHROPIC_BASE_URL`` points the CLI here. The answer depends
only on the request: the latest scripted user prompt found in ``messages`` picks the script, and
the number of assistant messages after it picks the turn. A request whose messages hold no
scripted prompt (the CLI's side requests: titles, quota checks) gets a one-word text answer.

Each turn is ``{"tool_uses": [(id, name, input), ...]}`` or ``{"text": "..."}``, or a function of
the request's ``messages`` returning one (a model that reacts to what it was sent). Every request
is kept in :attr:`FakeAnthropic.requests`, every scripted answer in :attr:`FakeAnthropic.scripted`
(the test counts the model calls and tokens from them). Usage: ``input_tokens`` is ten per
message of the request, ``output_tokens`` seven.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(str(block.get("text", "")))
    return out


class FakeAnthropic:
    """``with FakeAnthropic(script) as fake:`` serves ``fake.base_url`` until the block ends."""

    def __init__(self, script: dict[str, list[dict[str, Any]]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        # (prompt, turn, number of messages) of each scripted answer
        self.scripted: list[tuple[str, int, int]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    data = json.dumps({"input_tokens": 10}).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                turn = fake._turn(body)
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    self.end_headers()
                    for event, payload in _events(body, turn):
                        self.wfile.write(f"event: {event}\ndata: {json.dumps(payload)}\n\n".encode())
                        self.wfile.flush()
                    self.close_connection = True
                else:
                    data = json.dumps(_message(body, turn)).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_HEAD(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _turn(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        with self._lock:
            self.requests.append(body)
            for i in range(len(messages) - 1, -1, -1):
                if messages[i].get("role") != "user":
                    continue
                for prompt, turns in self.script.items():
                    if any(prompt in t for t in _texts(messages[i])):
                        n = sum(1 for m in messages[i + 1 :] if m.get("role") == "assistant")
                        self.scripted.append((prompt, n, len(messages)))
                        turn = turns[min(n, len(turns) - 1)]
                        return turn(messages) if callable(turn) else turn
            return {"text": "ok"}

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def _usage(body: dict[str, Any]) -> dict[str, int]:
    return {"input_tokens": 10 * len(body.get("messages") or []), "output_tokens": 7}


def _message(body: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if "tool_uses" in turn:
        content = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in turn["tool_uses"]]
    else:
        content = [{"type": "text", "text": turn["text"]}]
    return {
        "id": f"msg_{len(body.get('messages') or [])}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-fake"),
        "content": content,
        "stop_reason": "tool_use" if "tool_uses" in turn else "end_turn",
        "stop_sequence": None,
        "usage": _usage(body),
    }


def _events(body: dict[str, Any], turn: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    msg = _message(body, turn)
    usage = msg["usage"]
    start = dict(msg, content=[], stop_reason=None, usage={"input_tokens": usage["input_tokens"], "output_tokens": 1})
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(msg["content"]):
        if block["type"] == "tool_use":
            events.append(
                ("content_block_start", {"type": "content_block_start", "index": index, "content_block": dict(block, input={})})
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            events.append(
                ("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            )
            delta = {"type": "text_delta", "text": block["text"]}
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events
