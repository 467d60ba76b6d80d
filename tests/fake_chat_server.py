"""A scripted OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1, for framework tests.

The answer to a request depends only on the request: the script of the last user message, at the
turn given by how many assistant messages follow it. A script entry is a dict (``{"text": ...}``
or ``{"tool_calls": [(id, name, args), ...]}``) or a function of the request's messages that
returns one. Every request and answer is kept (``server.requests``, ``server.answers``), so a
test can replay the same run through the manual API and see what the model was sent.
A request with ``"stream": true`` gets the same answer as server-sent events.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Step = dict[str, Any] | Callable[[list[dict[str, Any]]], dict[str, Any]]


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # [{"type": "text", "text": ...}]
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _chunks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The same answer as ``stream=True`` chunks: the message in one delta, then the finish and usage."""
    choice = answer["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    base = {k: answer[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**base, "choices": [], "usage": answer["usage"]},
    ]


class ScriptedChatServer:
    """``with ScriptedChatServer(script) as server: ... server.base_url ...``"""

    def __init__(self, script: dict[str, list[Step]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                answer = outer._answer(body)
                if body.get("stream"):
                    data = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in _chunks(answer)).encode()
                    data += b"data: [DONE]\n\n"
                    content_type = "text/event-stream"
                else:
                    data = json.dumps(answer).encode()
                    content_type = "application/json"
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        turn = sum(1 for m in messages[last_user:] if m["role"] == "assistant")
        steps = self.script[_content(messages[last_user])]
        step = steps[min(turn, len(steps) - 1)]
        if callable(step):
            step = step(messages)
        message: dict[str, Any] = {"role": "assistant", "content": step.get("text")}
        if "tool_calls" in step:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for cid, name, args in step["tool_calls"]
            ]
        answer = {
            "id": f"chatcmpl-{len(messages)}",
            "object": "chat.completion",
            "created": 1_790_000_000,
            "model": body.get("model", "fake-model"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if "tool_calls" in step else "stop"}
            ],
            "usage": {"prompt_tokens": 10 * len(messages), "completion_tokens": 5, "total_tokens": 10 * len(messages) + 5},
        }
        with self._lock:
            self.requests.append(body)
            self.answers.append(answer)
        return answer

    def __enter__(self) -> ScriptedChatServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


# Two scripted models for the seed-000 spin (issue 18), "Cancel order Z9" against a cancel_order
# tool that always fails: the adapters' tests of the Error Recovery Context block share them.
BLOCK = "[Error Recovery Context]"


def blind(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A model that repeats the same call whatever the tool said."""
    n = sum(1 for m in messages if m["role"] == "assistant")
    return {"tool_calls": [(f"s{n + 1}", "cancel_order", {"order_id": "Z9"})]}


def reads_the_block(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A model that changes course when the last tool result carries the recovery block."""
    last = messages[-1]
    if last["role"] == "tool" and BLOCK in str(last.get("content")):
        return {"text": "Order Z9 has shipped, so it cannot be cancelled; I can start a return instead."}
    return blind(messages)
