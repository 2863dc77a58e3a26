"""Memory for agent frameworks: thin adapters over :class:`~memorybank.MemoryBank` and the
tool profiles of :mod:`memorybank.tools`, one module per framework (docs/integrations.md).

* :mod:`memorybank.integrations.langgraph` — ``MemoryBankStore``, a LangGraph ``BaseStore``
  whose namespaces are memorybank's user and project scopes (``memorybank[langgraph]``);
* :mod:`memorybank.integrations.pydantic_ai` — ``memorybank_toolset``, a profile's tools as a
  pydantic-ai toolset (``memorybank[pydantic-ai]``);
* :mod:`memorybank.integrations.openai_agents` — ``function_tools``, a profile's tools as
  OpenAI Agents SDK ``FunctionTool`` s (``memorybank[openai-agents]``).

Each module imports its framework, which is an optional extra: import the module you use
(``import memorybank`` never imports any of them). They are the top layer: they may use
everything below, and nothing in memorybank imports them.
"""
