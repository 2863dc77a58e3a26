"""JSON schemas generated from pydantic models: for tool arguments (one model per tool) and
for the answers the chat model is asked for (:mod:`memorybank.providers.llm`).

Pydantic's own output is noisy for a model to read (titles, ``$defs``, ``default: null``), and
each provider wants a different dialect of it. This module turns a model into:

* :func:`plain_schema`: ``$ref``s inlined, titles dropped, ``X | None`` collapsed to a type
  list, optional fields simply not required (Anthropic, MCP, plain JSON Schema);
* :func:`strict_schema`: OpenAI's strict mode, where every property is required, optional ones
  are nullable, every object forbids extra keys and unsupported keywords are gone.

It also holds :class:`Arguments`, the base class of every arguments model, and
:func:`tool_error`, for validators that must answer with a seed's exact wording.

>>> from pydantic import Field
>>> class Args(Arguments):
...     query: str = Field(description="What to look for")
...     limit: int = Field(5, ge=1, le=10)
>>> plain_schema(Args)["properties"]["limit"]
{'type': 'integer', 'default': 5, 'maximum': 10, 'minimum': 1}
>>> strict_schema(Args)["properties"]["limit"]
{'type': ['integer', 'null'], 'maximum': 10, 'minimum': 1}
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

__all__ = [
    "STRICT_KEYWORDS",
    "TOOL_MESSAGE",
    "Arguments",
    "plain_schema",
    "strict_schema",
    "tool_error",
]

# The pydantic error type whose message the dispatcher passes on verbatim (no field prefix),
# so a profile can answer with its seed's exact words ("Content too short (minimum 10 …)").
TOOL_MESSAGE = "tool_message"

# Keywords OpenAI's strict mode accepts. minLength/maxLength are not in OpenAI's written list
# but the API has accepted and enforced them since 2025; ``length_constraints=False`` drops them
# for fine-tuned models and OpenAI-compatible servers that still refuse them.
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "description",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
    }
)
_LENGTH_KEYWORDS = frozenset({"minLength", "maxLength"})
# Keywords whose values are schemas or lists of schemas, so the walkers must descend into them.
_NESTED = ("items", "additionalProperties")


class Arguments(BaseModel):
    """Base of every tool's arguments model: unknown keys are refused, not silently ignored,
    because a misspelt argument the model believes it sent is worse than an error."""

    model_config = ConfigDict(extra="forbid")


def tool_error(message: str) -> PydanticCustomError:
    """A validation error the dispatcher reports word for word.

    >>> tool_error("Content too short (minimum 10 characters)").message()
    'Content too short (minimum 10 characters)'
    """
    # The text goes in the context, not the template: braces in it must not be formatted.
    return PydanticCustomError(TOOL_MESSAGE, "{message}", {"message": message})


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """``node`` with every ``$ref`` replaced by its definition and titles removed."""
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            raise ValueError(f"recursive schema {name!r} cannot be inlined")
        # Siblings of a $ref (a field's description) win over the definition's own.
        merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline(merged, defs, (*seen, name))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs"):
            continue
        if key == "properties":
            out[key] = {name: _inline(sub, defs, seen) for name, sub in value.items()}
        else:
            out[key] = _inline(value, defs, seen)
    return _collapse_null(out)


def _collapse_null(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [{type: X, …}, {type: null}]`` → ``{type: [X, null], …}``: same meaning, fewer
    tokens, and the form both OpenAI and Anthropic document."""
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return node
    other = next(b for b in branches if b != {"type": "null"})
    if not isinstance(other.get("type"), str) or "anyOf" in other or other["type"] == "object":
        return node  # nullable objects stay anyOf, the form OpenAI documents for them
    return _nullable({**other, **{k: v for k, v in node.items() if k != "anyOf"}})


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` that also accepts ``null``."""
    out = dict(node)
    if "anyOf" in out:
        if {"type": "null"} not in out["anyOf"]:
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        return out
    kind = out.get("type")
    if kind == "object":
        # Documented strict-mode form for an optional object: anyOf it or null.
        outer = {k: out.pop(k) for k in ("description",) if k in out}
        return {**outer, "anyOf": [out, {"type": "null"}]}
    if isinstance(kind, str) and kind != "null":
        out["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = [*kind, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _not_null(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` without its ``null`` alternative (an optional field is omitted, not null)."""
    out = dict(node)
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [k for k in kind if k != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
        if "enum" in out:
            out["enum"] = [v for v in out["enum"] if v is not None]
    elif isinstance(out.get("anyOf"), list):
        rest = [b for b in out["anyOf"] if b != {"type": "null"}]
        if len(rest) == 1:
            del out["anyOf"]
            out = {**rest[0], **out}
        else:
            out["anyOf"] = rest
    if out.get("default", 0) is None:
        del out["default"]
    return out


def _walk_plain(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if isinstance(out.get("properties"), dict):
        required = set(out.get("required", ()))
        out["properties"] = {
            name: _walk_plain(sub if name in required else _not_null(sub))
            for name, sub in out["properties"].items()
        }
    for key in _NESTED:
        if isinstance(out.get(key), dict):
            out[key] = _walk_plain(out[key])
    if isinstance(out.get("anyOf"), list):
        out["anyOf"] = [_walk_plain(b) for b in out["anyOf"]]
    return out


# Pydantic sorts keys alphabetically; people reading an export expect type first.
_ORDER = {
    key: i
    for i, key in enumerate(
        ("type", "description", "enum", "const", "anyOf", "items", "properties", "required")
    )
}


def _ordered(node: Any) -> Any:
    if isinstance(node, list):
        return [_ordered(item) for item in node]
    if not isinstance(node, dict):
        return node
    keys = sorted(node, key=lambda k: _ORDER.get(k, len(_ORDER)))
    # Property names are data, not keywords: keep the model's field order.
    return {
        k: {n: _ordered(v) for n, v in node[k].items()} if k == "properties" else _ordered(node[k])
        for k in keys
    }


def _base(model: type[BaseModel]) -> dict[str, Any]:
    raw = copy.deepcopy(model.model_json_schema())
    # Class docstrings are written for developers and would cost tokens in every request; the
    # tool's own description and each field's description are what the model reads.
    raw.pop("description", None)
    defs = raw.get("$defs", {})
    for definition in defs.values():
        definition.pop("description", None)
    result: dict[str, Any] = _inline(raw, defs)
    return result


def plain_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A self-contained JSON Schema for ``model``: no ``$ref``, no titles; optional fields are
    left out of ``required`` and keep a non-null ``default`` as a hint.

    >>> class Args(Arguments):
    ...     tags: list[str] | None = None
    >>> plain_schema(Args)
    {'type': 'object', 'properties': {'tags': {'type': 'array', 'items': {'type': 'string'}}}, 'additionalProperties': False}
    """  # noqa: E501
    result: dict[str, Any] = _ordered(_walk_plain(_base(model)))
    return result


def _walk_strict(node: Any, *, length_constraints: bool) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in STRICT_KEYWORDS or (not length_constraints and key in _LENGTH_KEYWORDS):
            continue
        if key == "properties":
            continue  # rebuilt below, once ``required`` is known
        if key in _NESTED and isinstance(value, dict):
            out[key] = _walk_strict(value, length_constraints=length_constraints)
        elif key == "anyOf":
            out[key] = [_walk_strict(b, length_constraints=length_constraints) for b in value]
        else:
            out[key] = value
    if node.get("type") == "object" or "properties" in node:
        required = set(node.get("required", ()))
        props = {
            name: _walk_strict(
                sub if name in required else _nullable(sub), length_constraints=length_constraints
            )
            for name, sub in node.get("properties", {}).items()
        }
        out["properties"] = props
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def strict_schema(model: type[BaseModel], *, length_constraints: bool = True) -> dict[str, Any]:
    """``model``'s schema in OpenAI strict mode: every property required, optional ones nullable
    (``null`` means "use the default"), ``additionalProperties: false`` on every object, and only
    :data:`STRICT_KEYWORDS` kept.

    >>> class Args(Arguments):
    ...     query: str
    ...     tags: list[str] | None = None
    >>> strict_schema(Args)["required"], strict_schema(Args)["properties"]["tags"]["type"]
    (['query', 'tags'], ['array', 'null'])
    """
    result: dict[str, Any] = _ordered(
        _walk_strict(_base(model), length_constraints=length_constraints)
    )
    return result
