"""Memory as LLM tools: profiles (one per seed, plus ``default``), exports and a dispatcher.

>>> from memorybank import tools
>>> defs = tools.to_openai(tools.profile("default"))  # pass to the chat API
>>> caller = tools.Caller(user_id="sam")
>>> _ = bank.save("sam", "User edits code in Vim", "preference")
>>> tools.call(bank, tools.profile("default"), "recall", '{"query": "vim"}', caller)
... # doctest: +ELLIPSIS
{'success': True, 'facts': [{'id': 'mem_...', 'fact': 'User edits code in Vim'}]}

``tools.system_prompt(bank, caller, "default")`` is the profile's guidance plus the caller's
pre-loaded memories. Offer ``tools.toolkit(profile, caller)``: it is empty when memory is off for
the conversation or the model cannot call functions.
"""

from __future__ import annotations

from memorybank.model import Caller
from memorybank.tools.base import Profile, SafetyTier, Tool
from memorybank.tools.dispatcher import call, error_message, toolkit
from memorybank.tools.export import (
    FORMATS,
    export,
    to_anthropic,
    to_json_schema,
    to_mcp,
    to_openai,
    token_cost,
)
from memorybank.tools.profiles import PROFILE_NAMES, profile
from memorybank.tools.profiles.pagespace import pagespace_context
from memorybank.tools.prompt import system_prompt

__all__ = [
    "FORMATS",
    "PROFILE_NAMES",
    "Profile",
    "SafetyTier",
    "Tool",
    "Caller",
    "call",
    "error_message",
    "export",
    "pagespace_context",
    "profile",
    "system_prompt",
    "to_anthropic",
    "to_json_schema",
    "to_mcp",
    "to_openai",
    "token_cost",
    "toolkit",
]
