"""Export and import formats: lossless JSON, and Markdown for people to read."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from memorybank.errors import ValidationError
from memorybank.model import Category, Memory, utcnow

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


def parse_export(data: str | bytes | Mapping[str, Any]) -> list[Memory]:
    """The memories of a JSON export (a document from :func:`export_json`, or a bare list)."""
    try:
        doc: Any = json.loads(data) if isinstance(data, str | bytes) else data
    except json.JSONDecodeError as exc:
        raise ValidationError(f"import data is not JSON: {exc}", field="data") from exc
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
    memories = []
    for index, item in enumerate(items):
        try:
            memories.append(Memory.model_validate(item))
        except PydanticValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValidationError(
                f"import item {index}: {where}: {first['msg']}", field="data"
            ) from exc
    return memories
