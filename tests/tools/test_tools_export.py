"""Exports: every profile's OpenAI tools obey strict mode; Anthropic/MCP/JSON shapes; token cost."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memorybank import tools
from memorybank.errors import ValidationError
from memorybank.providers.json_schemas import STRICT_KEYWORDS, plain_schema, strict_schema
from memorybank.tools import Profile


def available_profiles() -> list[Profile]:
    """Every profile that can be imported (hyperspark is written elsewhere and may be absent)."""
    found = []
    for name in tools.PROFILE_NAMES:
        try:
            found.append(tools.profile(name))
        except ModuleNotFoundError:
            continue
    return found


PROFILES = available_profiles()
PROFILE_IDS = [p.name for p in PROFILES]

# OpenAI's strict-mode subset (structured outputs "supported schemas"), plus minLength/maxLength
# which the API accepts and enforces since 2025.
OPENAI_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
MAX_DEPTH = 5
MAX_PROPERTIES = 100


def types_of(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    return set()


def strict_violations(node: Any, path: str = "$", depth: int = 0) -> list[str]:
    """Every way ``node`` breaks OpenAI strict mode, found by walking the whole schema."""
    problems: list[str] = []
    if not isinstance(node, dict):
        return [f"{path}: a schema must be an object"]
    for key in node:
        if key not in STRICT_KEYWORDS:
            problems.append(f"{path}: keyword {key!r} is not supported in strict mode")
    if "$ref" in node or "$defs" in node:
        problems.append(f"{path}: references must be inlined")
    kinds = types_of(node)
    if not kinds and "anyOf" not in node:
        problems.append(f"{path}: no type")
    if kinds - OPENAI_TYPES:
        problems.append(f"{path}: unsupported type {kinds - OPENAI_TYPES}")
    if "enum" in node:
        if "null" in kinds and None not in node["enum"]:
            problems.append(f"{path}: nullable enum must list null")
        if None in node["enum"] and "null" not in kinds:
            problems.append(f"{path}: enum lists null but the type does not allow it")
    if "object" in kinds:
        if depth >= MAX_DEPTH:
            problems.append(f"{path}: nested deeper than {MAX_DEPTH} objects")
        props = node.get("properties")
        if not isinstance(props, dict):
            problems.append(f"{path}: object without properties")
            props = {}
        if node.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        required = node.get("required")
        if not isinstance(required, list) or sorted(required) != sorted(props):
            problems.append(f"{path}: every property must be required, got {required}")
        elif len(set(required)) != len(required):
            problems.append(f"{path}: required lists a property twice")
        for name, sub in props.items():
            problems += strict_violations(sub, f"{path}.{name}", depth + 1)
    if "array" in kinds:
        if "items" not in node:
            problems.append(f"{path}: array without items")
        else:
            problems += strict_violations(node["items"], f"{path}[]", depth)
    for index, branch in enumerate(node.get("anyOf", ())):
        problems += strict_violations(branch, f"{path}|{index}", depth)
    return problems


def keywords(node: Any) -> set[str]:
    """Every keyword used anywhere in a schema (property names are not keywords)."""
    if not isinstance(node, dict):
        return set()
    found = set(node)
    nested = [node.get("items"), *node.get("anyOf", ()), *node.get("properties", {}).values()]
    for sub in nested:
        found |= keywords(sub)
    return found


def count_properties(node: Any) -> int:
    if not isinstance(node, dict):
        return 0
    props = node.get("properties", {})
    nested = [node.get("items"), *node.get("anyOf", ()), *props.values()]
    return len(props) + sum(count_properties(n) for n in nested)


def test_hyperspark_is_in_the_registry() -> None:
    assert "hyperspark" in tools.PROFILE_NAMES
    assert tools.PROFILE_NAMES == (
        "blah",
        "supermemory",
        "pagespace",
        "hyperspark",
        "oxydra",
        "default",
    )


def test_unknown_profile_lists_the_names() -> None:
    with pytest.raises(ValidationError) as info:
        tools.profile("chatgpt")
    for name in tools.PROFILE_NAMES:
        assert name in str(info.value)
    with pytest.raises(ValidationError):
        tools.profile(3)  # type: ignore[arg-type]


def test_profile_names_are_case_insensitive() -> None:
    assert tools.profile(" Oxydra ").name == "oxydra"


@pytest.mark.parametrize("profile", PROFILES, ids=PROFILE_IDS)
def test_openai_export_is_valid_strict_mode(profile: Profile) -> None:
    exported = tools.to_openai(profile)
    assert len(exported) == len(profile.tools)
    for entry, tool in zip(exported, profile.tools, strict=True):
        assert set(entry) == {"type", "function"}
        assert entry["type"] == "function"
        function = entry["function"]
        assert set(function) == {"name", "description", "strict", "parameters"}
        assert function["strict"] is True
        assert function["name"] == tool.name
        assert 1 <= len(function["name"]) <= 64
        assert function["name"].replace("_", "").replace("-", "").isalnum()
        assert function["description"].strip()
        params = function["parameters"]
        assert params["type"] == "object", "the root must be an object, not anyOf"
        assert strict_violations(params) == []
        assert count_properties(params) <= MAX_PROPERTIES
        json.dumps(exported)  # plain JSON all the way down


@pytest.mark.parametrize("profile", PROFILES, ids=PROFILE_IDS)
def test_strict_optional_fields_are_nullable_and_required_ones_are_not(profile: Profile) -> None:
    for tool in profile.tools:
        props = strict_schema(tool.arguments)["properties"]
        for name, field in tool.arguments.model_fields.items():
            key = field.alias or name
            nullable = "null" in types_of(props[key]) or {"type": "null"} in props[key].get(
                "anyOf", []
            )
            assert nullable == (not field.is_required()), f"{tool.name}.{key}"


@pytest.mark.parametrize("profile", PROFILES, ids=PROFILE_IDS)
def test_anthropic_and_mcp_exports(profile: Profile) -> None:
    anthropic = tools.to_anthropic(profile)
    mcp = tools.to_mcp(profile)
    for a, m, tool in zip(anthropic, mcp, profile.tools, strict=True):
        assert set(a) == {"name", "description", "input_schema"}
        assert set(m) == {"name", "description", "inputSchema", "annotations"}
        assert a["name"] == m["name"] == tool.name
        assert a["input_schema"] == m["inputSchema"] == plain_schema(tool.arguments)
        schema = a["input_schema"]
        assert schema["type"] == "object"
        required = {n for n, f in tool.arguments.model_fields.items() if f.is_required()}
        assert set(schema.get("required", [])) == required
        assert not keywords(schema) & {"$ref", "$defs", "title"}
        assert m["annotations"]["readOnlyHint"] == (tool.tier == tools.SafetyTier.READ_ONLY)


@pytest.mark.parametrize("profile", PROFILES, ids=PROFILE_IDS)
def test_json_schema_export_carries_tiers_and_timeouts(profile: Profile) -> None:
    doc = tools.to_json_schema(profile)
    assert doc["profile"] == profile.name
    assert doc["guidance"] == profile.guidance
    for entry, tool in zip(doc["tools"], profile.tools, strict=True):
        assert entry["safety_tier"] == tool.tier.value
        assert entry["timeout_s"] == tool.timeout_s
        assert entry["parameters"] == plain_schema(tool.arguments)
    json.dumps(doc)


@pytest.mark.parametrize("profile", PROFILES, ids=PROFILE_IDS)
def test_timeouts_follow_seed_004(profile: Profile) -> None:
    for tool in profile.tools:
        expected = 15.0 if tool.tier == tools.SafetyTier.READ_ONLY else 10.0
        assert tool.timeout_s == expected


def test_length_constraints_can_be_dropped_for_older_servers() -> None:
    text = json.dumps(tools.to_openai("blah", length_constraints=False))
    assert "minLength" not in text and "maxLength" not in text
    assert "minLength" in json.dumps(tools.to_openai("blah"))


def test_export_by_format_name() -> None:
    assert tools.export("default", "anthropic") == tools.to_anthropic("default")
    with pytest.raises(ValidationError, match="openai"):
        tools.export("default", "yaml")  # type: ignore[arg-type]


def test_token_cost_counts_the_json_of_the_definitions() -> None:
    from memorybank.rules.tokens import count_tokens

    for fmt in ("openai", "anthropic", "mcp", "json_schema"):
        exported = tools.export("oxydra", fmt)  # type: ignore[arg-type]
        assert tools.token_cost("oxydra", fmt) == count_tokens(json.dumps(exported))  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "mcp"])
def test_default_profile_is_the_cheapest(fmt: str) -> None:
    costs = {p.name: tools.token_cost(p, fmt) for p in PROFILES}  # type: ignore[arg-type]
    cheapest = min(costs, key=costs.__getitem__)
    assert cheapest == "default", costs
    others = [cost for name, cost in costs.items() if name != "default"]
    assert all(costs["default"] < cost for cost in others), costs


def test_default_profile_covers_save_search_update_delete_in_three_tools() -> None:
    default = tools.profile("default")
    assert [t.name for t in default.tools] == ["remember", "recall", "forget"]
    assert default.tool("remember") is not None
    assert "id" in default.tool("remember").arguments.model_fields  # type: ignore[union-attr]
    tiers = {t.name: t.tier for t in default.tools}
    assert tiers == {
        "remember": tools.SafetyTier.SIDE_EFFECTING,
        "recall": tools.SafetyTier.READ_ONLY,
        "forget": tools.SafetyTier.SIDE_EFFECTING,
    }
