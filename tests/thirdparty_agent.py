"""Run a real agent framework against a scripted fake model, under one third-party instrumentation.

Used by tests/test_otlp_thirdparty.py in a subprocess (instrumentors and the
frameworks' trace hooks are process-wide singletons, so each instrumentation
gets a fresh interpreter)::

    python tests/thirdparty_agent.py openai-agents {openinference|openllmetry|genai} OUT.jsonl
    python tests/thirdparty_agent.py langgraph {openinference|openllmetry} OUT.jsonl
    python tests/thirdparty_agent.py openai-agents-max-turns {openinference|openllmetry|genai} OUT.jsonl

The last one runs only the first prompt with ``max_turns=1``: the SDK raises
``MaxTurnsExceeded`` after the failed call, an abnormal exit.

The fake model is an OpenAI-compatible ``/v1/chat/completions`` server on
127.0.0.1 (a random port, in a thread); its answer depends only on the
request, so the run is deterministic. Two prompts of one conversation:

1. "Where is my order A1?": the model calls ``lookup_order`` (which fails the
   first time: a backend timeout), then ``lookup_order`` again together with
   ``get_weather`` (parallel calls, one step), then answers.
2. "And the weather in Rome?": one ``get_weather`` call, then the answer.

Frameworks: the OpenAI Agents SDK (``openai-agents``, chat-completions model)
and LangGraph's prebuilt ReAct agent (``langgraph`` + ``langchain-openai``,
tool errors handed back to the model with ``handle_tool_errors=True``).
Spans go through the OpenTelemetry SDK to ``opentelemetry-exporter-otlp-json-file``.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONVERSATION = "conv-42"

# Per prompt (keyed by the last user text): the model's answer at each turn of the loop.
SCRIPT: dict[str, list[dict[str, Any]]] = {
    "Where is my order A1?": [
        {"tool_calls": [("call_1", "lookup_order", {"order_id": "A1"})]},
        {"tool_calls": [("call_2", "lookup_order", {"order_id": "A1"}), ("call_3", "get_weather", {"city": "Paris"})]},
        {"text": "Your order A1 has shipped; it is sunny in Paris."},
    ],
    "And the weather in Rome?": [
        {"tool_calls": [("call_4", "get_weather", {"city": "Rome"})]},
        {"text": "Sunny in Rome too."},
    ],
}


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    messages = body["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    turn = sum(1 for m in messages[last_user:] if m["role"] == "assistant")
    step = SCRIPT[messages[last_user]["content"]][turn]
    message: dict[str, Any] = {"role": "assistant", "content": step.get("text")}
    if "tool_calls" in step:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in step["tool_calls"]
        ]
    return {
        "id": f"chatcmpl-{len(messages)}", "object": "chat.completion", "created": 1_790_000_000,
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if "tool_calls" in step else "stop"}],
        "usage": {"prompt_tokens": 10 * len(messages), "completion_tokens": 5, "total_tokens": 10 * len(messages) + 5},
    }


class FakeModel(BaseHTTPRequestHandler):
    """POST /v1/chat/completions -> the scripted answer."""

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        data = json.dumps(_answer(body)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _provider(out: str) -> Any:
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "shop-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(out)))
    return provider


def _tools(decorator: Any) -> list[Any]:
    calls = {"lookup_order": 0}

    def lookup_order(order_id: str) -> str:
        """Look up an order's shipping status."""
        calls["lookup_order"] += 1
        if calls["lookup_order"] == 1:
            raise TimeoutError("orders backend timed out after 30s")
        return f"order {order_id}: shipped"

    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    return [decorator(lookup_order), decorator(get_weather)]


def run_openai_agents(which: str, base_url: str, provider: Any, max_turns: int | None = None) -> None:
    import agents
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
    from openai import AsyncOpenAI

    # The SDK's default processor uploads traces to OpenAI: there is no network here.
    agents.set_trace_processors([])
    session: Any = None
    if which == "openinference":
        from openinference.instrumentation import using_session
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
        session = using_session
    elif which == "openllmetry":
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    elif which == "genai":
        from opentelemetry.instrumentation.genai.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    else:
        raise SystemExit(f"unknown instrumentation {which!r}")

    client = AsyncOpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    agent = Agent(
        name="support", instructions="Help with orders.", tools=_tools(function_tool),
        model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client),
    )
    # group_id is the SDK's conversation (thread) id; the official instrumentation exports it.
    config = RunConfig(group_id=CONVERSATION)
    history: list[Any] = []
    if max_turns is not None:
        try:
            Runner.run_sync(agent, next(iter(SCRIPT)), run_config=config, max_turns=max_turns)
        except agents.MaxTurnsExceeded as exc:
            print(type(exc).__name__)
        return
    for text in SCRIPT:
        turn_input = [*history, {"role": "user", "content": text}]
        if session is not None:
            with session(CONVERSATION):
                result = Runner.run_sync(agent, turn_input, run_config=config)
        else:
            result = Runner.run_sync(agent, turn_input, run_config=config)
        history = result.to_input_list()
        print(result.final_output)


def run_langgraph(which: str, base_url: str, provider: Any) -> None:
    if which == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
    elif which == "openllmetry":
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=provider)
    else:
        raise SystemExit(f"unknown instrumentation {which!r}")
    import warnings

    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain.agents
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import ToolNode, create_react_agent

        model = ChatOpenAI(model="fake-model", base_url=base_url, api_key="test-key", max_retries=0)
        agent = create_react_agent(
            model, ToolNode(_tools(tool), handle_tool_errors=True), checkpointer=InMemorySaver(), name="support"
        )
    # thread_id is LangGraph's conversation id; both instrumentations export it.
    config = {"configurable": {"thread_id": CONVERSATION}}
    for text in SCRIPT:
        result = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
        print(result["messages"][-1].content)


def main(framework: str, which: str, out: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    provider = _provider(out)
    base_url = f"http://127.0.0.1:{server.server_port}/v1"
    runs = {
        "openai-agents": run_openai_agents,
        "openai-agents-max-turns": lambda w, u, p: run_openai_agents(w, u, p, max_turns=1),
        "langgraph": run_langgraph,
    }
    if framework not in runs:
        raise SystemExit(f"unknown framework {framework!r}")
    try:
        runs[framework](which, base_url, provider)
    finally:
        provider.shutdown()
        server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
