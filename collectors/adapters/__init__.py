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

Adapters that can stop a spinning prompt (``on_loop="exit"``) raise
:class:`~loopscope.collectors.adapters._common.LoopDetected` out of the framework's run; each
adapter module re-exports it.

See docs/collector.md, "Framework adapters", for what each adapter sees and what it cannot.
"""
