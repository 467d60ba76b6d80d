"""The docs' agent loops (docs/examples/anthropic_loop.py, openai_loop.py) and scripted stand-ins
for the clients they call: what tests/test_collector_examples.py and tests/test_runtime_loops.py
share. Loaded by file (``importlib``), as the suite runs with ``--import-mode=importlib``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from types import SimpleNamespace as NS
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


def load(name: str, prefix: str) -> ModuleType:
    """docs/examples/``name``.py as the module ``{prefix}{name}``, run as written."""
    spec = importlib.util.spec_from_file_location(f"{prefix}{name}", EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses/typing need the module registered
    spec.loader.exec_module(mod)
    return mod


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class ScriptedClient:
    """Answers each request with the next scripted function of the request kwargs."""

    def __init__(self, script: list) -> None:
        self.script = list(script)
        self.requests: list[dict] = []

    def __call__(self, **kwargs):  # noqa: ANN003, ANN204
        # Snapshot the messages: the loop mutates the list after the call.
        self.requests.append({**kwargs, "messages": list(kwargs["messages"])})
        return self.script.pop(0)(kwargs)


def anthropic_client(script: list) -> tuple[NS, ScriptedClient]:
    """An Anthropic client whose ``messages.create`` follows ``script``, and that scripted function."""
    create = ScriptedClient(script)
    return NS(messages=NS(create=create)), create


def a_text(text: str, stop: str = "end_turn", usage: tuple[int, int] = (10, 5)) -> NS:
    """An Anthropic response with one text block."""
    return NS(
        stop_reason=stop, content=[NS(type="text", text=text)], usage=NS(input_tokens=usage[0], output_tokens=usage[1])
    )


def o_resp(content: str | None, tool_calls: list | None, finish: str, usage: tuple[int, int] = (20, 7)) -> NS:
    """An OpenAI chat completion with one choice."""
    msg = NS(role="assistant", content=content, tool_calls=tool_calls)
    return NS(
        choices=[NS(message=msg, finish_reason=finish)], usage=NS(prompt_tokens=usage[0], completion_tokens=usage[1])
    )


def o_call(cid: str, name: str, arguments: str) -> NS:
    """An OpenAI function tool call."""
    return NS(id=cid, type="function", function=NS(name=name, arguments=arguments))
