"""Importing an adapter imports no framework: only using it does (issue 17: no runtime dependency)."""

from __future__ import annotations

import json
import subprocess
import sys

FRAMEWORKS = ("agents", "openai", "langchain_core", "langgraph", "langchain_openai", "pydantic")


def loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {FRAMEWORKS!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_adapters_loads_no_framework() -> None:
    assert loaded_after(
        "import loopscope.collectors.adapters\n"
        "from loopscope.collectors.adapters.openai_agents import LoopscopeAgents, LoopDetected\n"
        "from loopscope.collectors.adapters.langchain import LoopscopeCallbackHandler\n"
        "from loopscope.collectors import Collector, MemorySink\n"
        "LoopscopeAgents(Collector(MemorySink()), recovery_context=True)\n"
    ) == []


def test_using_an_adapter_loads_its_framework_only() -> None:
    loaded = loaded_after(
        "from loopscope.collectors import Collector, MemorySink\n"
        "from loopscope.collectors.adapters.langchain import LoopscopeCallbackHandler\n"
        "LoopscopeCallbackHandler(Collector(MemorySink()))\n"
    )
    assert "langchain_core" in loaded and "agents" not in loaded and "langgraph" not in loaded
