"""Export and import formats: lossless JSON, and Markdown for people to read."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from memorybank.errors import ValidationError
from memorybank.model import Category, Memory, utcnow
from memorybank.rules.inputs import check_label, check_not_future, unpaired_surrogate
from memorybank.rules.intake import is_conversation
from memorybank.rules.policy import PolicySettings, validate_memory, validate_turn
from memorybank.rules.pydantic_errors import pydantic_message

FORMAT = "memorybank-export"
VERSION = 1


def export_json(user_id: str, project_id: str | None, memories: Sequence[Memory]) -> str:
    """A JSON document holding every field of every memory (vectors are made anew on import).

    >>> export_json("u1", None, [])[:40]
    '{\\n  "format": "memorybank-export",\\n  "ve'
    """
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "user_id": user_id,
        "project_id": project_id,
        "exported_at": utcnow().isoformat(),
        "count": len(memories),
        "memories": [m.model_dump(mode="json") for m in memories],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)


def export_markdown(user_id: str, project_id: str | None, memories: Sequence[Memory]) -> str:
    """The memories as a Markdown page, grouped by category, newest last."""
    title = f"project {project_id}" if project_id else f"user {user_id}"
    lines = [f"# Memories of {title}", "", f"_{len(memories)} memories_", ""]
    for category in Category:
        group = [m for m in memories if m.category == category]
        if not group:
            continue
        lines += [f"## {category.value.capitalize()}", ""]
        for m in group:
            tags = f" ({', '.join(m.tags)})" if m.tags else ""
            lines.append(
                f"- {m.content}{tags} — importance {m.importance}/10, "
                f"{m.created_at:%Y-%m-%d}, `{m.id}`"
            )
        lines.append("")
    return "\n".join(lines)


def parse_export(
    data: str | bytes | Mapping[str, Any],
    policy: PolicySettings | None = None,
    now: datetime | None = None,
) -> list[Memory]:
    """The memories of a JSON export (a document from :func:`export_json`, or a bare list),
    each validated as a save validates it under ``policy`` (see :func:`_record`); the first
    invalid one is a :class:`~memorybank.errors.ValidationError` naming its index, and
    nothing is imported."""
    try:
        doc: Any = json.loads(data) if isinstance(data, str | bytes) else data
    except json.JSONDecodeError as exc:
        raise ValidationError(f"import data is not JSON: {exc}", field="data") from exc
    except UnicodeDecodeError:  # bytes that are not UTF-8 (or UTF-16/32) text
        raise ValidationError("import data is not UTF-8 text", field="data") from None
    except RecursionError:  # thousands of nested brackets; no export is nested that deep
        raise ValidationError("import data is nested too deeply", field="data") from None
    items = doc.get("memories") if isinstance(doc, Mapping) else doc
    if isinstance(doc, Mapping) and doc.get("format") not in (None, FORMAT):
        raise ValidationError(
            f"import data has format {doc.get('format')!r}, expected {FORMAT!r}", field="data"
        )
    if not isinstance(items, list):
        raise ValidationError(
            "import data must be a memorybank export (an object with a 'memories' list) or a "
            "list of memories",
            field="data",
        )
    checked = policy or PolicySettings()
    now = now or utcnow()
    memories = []
    for index, item in enumerate(items):
        try:
            memories.append(_record(item, checked, now))
        except ValidationError as exc:
            raise ValidationError(f"import item {index}: {exc}", field="data") from exc
    return memories


#: The plain-text labels of a memory, checked on import as one line each.
_LABELS = ("id", "session_id", "created_by", "embedding_model", "superseded_by")


def _record(item: object, policy: PolicySettings, now: datetime) -> Memory:
    """One imported memory, validated exactly as a save validates its fields (a fact as a
    fact, a conversation turn as a turn), its text cleaned as a save cleans it."""
    found = unpaired_surrogate(item)
    if found is not None:  # before pydantic, whose message would echo it
        raise ValidationError(f"{found}: remove it")
    try:
        memory = Memory.model_validate(item)
    except PydanticValidationError as exc:
        raise ValidationError(pydantic_message(exc, most=1)) from exc
    fields: dict[str, Any] = {
        "reasoning": memory.reasoning,
        "tags": memory.tags,
        "metadata": memory.metadata,
        "importance": memory.importance,
        "settings": policy,
    }
    if is_conversation(memory.ring, memory.source):
        # Stored turns are pieces of at most content_max characters (a save chunks longer).
        text, _ = validate_turn(
            memory.content, memory.category, maximum=policy.content_max, **fields
        )
    else:
        text, _ = validate_memory(memory.content, memory.category, **fields)
    for name in _LABELS:
        check_label(getattr(memory, name), name)
    for name in ("created_at", "updated_at", "reinforced_at"):
        check_not_future(getattr(memory, name), now, name)
    return memory if text == memory.content else memory.model_copy(update={"content": text})
