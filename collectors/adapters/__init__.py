"""Framework adapters: instrument an agent whose loop a framework owns, in one line.

Each adapter writes the same v1 records (and spans) as the manual API, imports its framework
only when it is used (importing this package imports no framework), and adds no runtime
dependency to the collector: install the framework yourself.

- :mod:`~loopscope.collectors.adapters.openai_agents`: the OpenAI Agents SDK
  (``await LoopscopeAgents(collector).run(agent, input, conversation_id=...)``).
- :mod:`~loopscope.collectors.adapters.langchain`: LangChain / LangGraph
  (``config={"callbacks": [LoopscopeCallbackHandler(collector)]}``).
- :mod:`~loopscope.collectors.adapters.claude_agent_sdk`: the Claude Agent SDK
  (``ClaudeAgentOptions(hooks=loopscope_hooks(collector))``).
- :mod:`~loopscope.collectors.adapters.mcp`: MCP clients (``instrument_mcp(session, loop)``).
- :mod:`~loopscope.collectors.adapters.pydantic_ai`: pydantic-ai
  (``Agent(..., capabilities=[loopscope_capability(collector)])``).

Every adapter takes ``recovery_context=True`` (the seed-000 block of a failed call, put where
the framework lets the host edit what the model reads) and ``on_loop=`` (``"warn"`` / ``"exit"``),
both off by default. Adapters whose run is a Python call of yours stop a spinning prompt by
raising :class:`~loopscope.collectors.adapters._common.LoopDetected` out of it (OpenAI Agents,
LangChain, pydantic-ai, MCP's ``call_tool``; each re-exports it); the Claude Agent SDK's hooks end
the CLI's turn instead (``continue: false``).

See docs/collector.md, "Framework adapters", for what each adapter sees and what it cannot.
"""
