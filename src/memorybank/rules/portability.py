"""Export and import formats: lossless JSON, and Markdown for people to read."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from memorybank.errors import ValidationError
from memorybank.model import Category, Memory, utcnow
from memorybank.model.stored import from_us, to_us
from memorybank.rules.pydantic_errors import pydantic_message

FORMAT = "memorybank-export"
VERSION = 1
#: How deeply an imported memory's metadata may nest, as for a saved one (the policy's
#: limit): a store reading back metadata nested ~900 deep runs out of stack, which made every
#: read of the scope fail.
METADATA_MAX_DEPTH = 64


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
    memories = []
    for index, item in enumerate(items):
        try:
            memory = Memory.model_validate(item)
        except PydanticValidationError as exc:
            problem = pydantic_message(exc, most=1)
            raise ValidationError(f"import item {index}: {problem}", field="data") from exc
        if _depth(memory.metadata) > METADATA_MAX_DEPTH:
            raise ValidationError(
                f"import item {index}: metadata: nested deeper than {METADATA_MAX_DEPTH} levels",
                field="data",
            )
        for name in ("created_at", "updated_at", "occurred_at"):
            if not _storable(getattr(memory, name)):
                raise ValidationError(
                    f"import item {index}: {name}: must fall within the years 1–9999 in UTC",
                    field="data",
                )
        memories.append(memory)
    return memories


def _depth(value: object) -> int:
    """How deeply ``value`` nests objects and lists (walked without recursion)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > METADATA_MAX_DEPTH:
            break
        if isinstance(item, Mapping):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list | tuple):
            stack += [(v, depth + 1) for v in item]
    return deepest


def _storable(moment: datetime | None) -> bool:
    """Whether a time survives the stores' round trip through UTC microseconds: a date at
    the calendar's edge with an offset (``9999-12-31T23:59:59-14:00``) is year 10000 in UTC,
    which no read of its scope could turn back into a date."""
    if moment is None:
        return True
    try:
        from_us(to_us(moment))
    except (ValueError, OverflowError, OSError):
        return False
    return True
