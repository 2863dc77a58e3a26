"""A profile's tools in each provider's format, and what they cost in prompt tokens.

* :func:`to_openai`: Chat Completions ``tools`` in strict mode;
* :func:`to_anthropic`: Messages API ``tools``;
* :func:`to_mcp`: MCP ``tools/list`` entries;
* :func:`to_json_schema`: a provider-neutral description, with safety tiers and timeouts.

>>> to_openai("default")[0]["function"]["name"]
'remember'
>>> to_anthropic("oxydra")[0]["input_schema"]["required"]
['query']
"""

from __future__ import annotations

import json
from typing import Any, Literal

from memorybank.errors import ValidationError
from memorybank.providers.json_schemas import plain_schema, strict_schema
from memorybank.tools.base import Profile, SafetyTier
from memorybank.tools.profiles import profile as _profile

__all__ = ["FORMATS", "to_anthropic", "to_json_schema", "to_mcp", "to_openai", "token_cost"]

Format = Literal["openai", "anthropic", "mcp", "json_schema"]
FORMATS: tuple[str, ...] = ("openai", "anthropic", "mcp", "json_schema")


def _resolve(profile: Profile | str) -> Profile:
    return profile if isinstance(profile, Profile) else _profile(profile)


def to_openai(profile: Profile | str, *, length_constraints: bool = True) -> list[dict[str, Any]]:
    """OpenAI function tools with ``strict: true``.

    Every property is required and optional ones accept ``null`` (the dispatcher reads
    ``null`` as "use the default"). ``length_constraints=False`` drops minLength/maxLength for
    fine-tuned models and OpenAI-compatible servers that refuse them.

    >>> tool = to_openai("oxydra")[0]
    >>> tool["function"]["strict"], tool["function"]["parameters"]["required"]
    (True, ['query', 'top_k', 'include_conversation'])
    """
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "strict": True,
                "parameters": strict_schema(tool.arguments, length_constraints=length_constraints),
            },
        }
        for tool in _resolve(profile).tools
    ]


def to_anthropic(profile: Profile | str) -> list[dict[str, Any]]:
    """Anthropic tools: plain JSON Schema, optional fields simply not required."""
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "input_schema": plain_schema(tool.arguments),
        }
        for tool in _resolve(profile).tools
    ]


def to_mcp(profile: Profile | str) -> list[dict[str, Any]]:
    """MCP tool entries, with ``readOnlyHint`` from each tool's safety tier."""
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": plain_schema(tool.arguments),
            "annotations": {"readOnlyHint": tool.tier == SafetyTier.READ_ONLY},
        }
        for tool in _resolve(profile).tools
    ]


def to_json_schema(profile: Profile | str) -> dict[str, Any]:
    """The profile as one JSON document: each tool's schema, tier and timeout, and guidance."""
    resolved = _resolve(profile)
    return {
        "profile": resolved.name,
        "description": resolved.description,
        "guidance": resolved.guidance,
        "tools": [
            {
                "name": tool.name,
                "description": tool.description,
                "safety_tier": tool.tier.value,
                "timeout_s": tool.timeout_s,
                "parameters": plain_schema(tool.arguments),
            }
            for tool in resolved.tools
        ],
    }


def export(profile: Profile | str, format: Format = "openai") -> Any:
    """The profile's tools in ``format`` (one of :data:`FORMATS`)."""
    exporters = {
        "openai": to_openai,
        "anthropic": to_anthropic,
        "mcp": to_mcp,
        "json_schema": to_json_schema,
    }
    if format not in exporters:
        raise ValidationError(
            f"unknown export format {format!r}: use one of {', '.join(FORMATS)}", field="format"
        )
    return exporters[format](profile)


def token_cost(profile: Profile | str, format: Format = "openai") -> int:
    """o200k tokens of ``json.dumps`` of the profile's tool definitions in ``format``: what
    every request that offers these tools pays before anyone speaks.

    >>> token_cost("default") < token_cost("oxydra")
    True
    """
    from memorybank.rules.tokens import count_tokens  # an optional, heavier dependency

    return count_tokens(json.dumps(export(profile, format)))
