"""Export and import formats: lossless JSON, and Markdown for people to read.

A JSON export holds the scope's memories and, under ``"pairs"`` (optional: older exports have
none), the person's answers "both are true" for two of them, so that an import asks them again
nothing that was answered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from pydantic import ValidationError as PydanticValidationError

from memorybank.errors import ValidationError
from memorybank.model import Category, Memory, utcnow
from memorybank.model.stored import KeptPair
from memorybank.model.times import storable_time
from memorybank.rules.inputs import check_label, check_not_future, unpaired_surrogate
from memorybank.rules.intake import is_conversation
from memorybank.rules.policy import PolicySettings, validate_memory, validate_turn
from memorybank.rules.pydantic_errors import pydantic_message

FORMAT = "memorybank-export"
VERSION = 1
T = TypeVar("T")
#: The one verdict a pair of an export has: "both are true" (an unanswered pair is not kept).
DISTINCT = "distinct"


def export_json(
    user_id: str,
    project_id: str | None,
    memories: Sequence[Memory],
    pairs: Sequence[KeptPair] = (),
) -> str:
    """A JSON document holding every field of every memory (vectors are made anew on import)
    and the ``pairs`` among them answered "both are true" (any naming a memory not exported
    are left out).

    >>> export_json("u1", None, [])[:40]
    '{\\n  "format": "memorybank-export",\\n  "ve'
    """
    held = {m.id for m in memories}
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "user_id": user_id,
        "project_id": project_id,
        "exported_at": utcnow().isoformat(),
        "count": len(memories),
        "memories": [m.model_dump(mode="json") for m in memories],
        "pairs": [
            {
                "memory_id": p.memory_id,
                "other_id": p.other_id,
                "verdict": DISTINCT,
                "actor": p.actor,
                "decided_at": p.decided_at.isoformat(),
            }
            for p in pairs
            if p.memory_id in held and p.other_id in held
        ],
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


@dataclass(frozen=True)
class ExportDocument:
    """What a JSON export holds once validated: its memories, and the pairs among them the
    person answered "both are true" (by the document's memory ids)."""

    memories: list[Memory]
    pairs: list[KeptPair]


def parse_export(
    data: str | bytes | Mapping[str, Any],
    policy: PolicySettings | None = None,
    now: datetime | None = None,
) -> list[Memory]:
    """The memories of a JSON export (a document from :func:`export_json`, or a bare list),
    each validated as a save validates it under ``policy`` (see :func:`_record`); the first
    invalid one is a :class:`~memorybank.errors.ValidationError` naming its index, and
    nothing is imported. :func:`parse_document` also reads the pairs."""
    return parse_document(data, policy, now).memories


def parse_document(
    data: str | bytes | Mapping[str, Any],
    policy: PolicySettings | None = None,
    now: datetime | None = None,
) -> ExportDocument:
    """The memories and the "both are true" pairs of a JSON export, each validated (see
    :func:`parse_export` and :func:`_pair`): the first invalid item or pair is a
    :class:`~memorybank.errors.ValidationError` naming its index, and nothing is imported.
    An export without ``"pairs"`` (older ones, a bare list) has none."""
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
    memories = _each(items, "import item", lambda item: _record(item, checked, now))
    raw_pairs = doc.get("pairs") if isinstance(doc, Mapping) else None
    return ExportDocument(memories, _pairs(raw_pairs, {m.id for m in memories}, now))


def _pairs(raw: object, ids: set[str], now: datetime) -> list[KeptPair]:
    """The document's ``"pairs"`` (absent or null: none), each checked by :func:`_pair`."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValidationError(
            'import data\'s \'pairs\' must be a list of objects {"memory_id", "other_id", '
            f'"verdict": {DISTINCT!r}, "actor", "decided_at"}}',
            field="data",
        )
    return _each(raw, "import pair", lambda item: _pair(item, ids, now))


def _each(items: Sequence[object], label: str, check: Callable[[object], T]) -> list[T]:
    """``check`` of every item; the first it refuses is a :class:`ValidationError` naming its
    index (``label`` and the index: "import item 3: …")."""
    out = []
    for index, item in enumerate(items):
        try:
            out.append(check(item))
        except ValidationError as exc:
            raise ValidationError(f"{label} {index}: {exc}", field="data") from exc
    return out


def _pair(item: object, ids: set[str], now: datetime) -> KeptPair:
    """One pair of an export: two different memory ids the document holds, the verdict
    ``"distinct"``, an optional ``actor`` and an optional ISO ``decided_at`` (else ``now``)."""
    if not isinstance(item, Mapping):
        raise ValidationError(
            f'is {type(item).__name__}, not an object: send {{"memory_id", "other_id", '
            f'"verdict": {DISTINCT!r}}}'
        )
    found = unpaired_surrogate(item)
    if found is not None:
        raise ValidationError(f"{found}: remove it")
    named = []
    for name in ("memory_id", "other_id"):
        value = item.get(name)
        if not isinstance(value, str) or not value:
            raise ValidationError(
                f"{name} is missing (or not a string): name a memory id of this export"
            )
        check_label(value, name)
        if value not in ids:
            raise ValidationError(
                f"{name} {value!r} is no memory of this export: name one of its memories' ids"
            )
        named.append(value)
    if named[0] == named[1]:
        raise ValidationError("memory_id and other_id are the same: name two memories")
    if item.get("verdict") != DISTINCT:
        raise ValidationError(
            f"verdict {item.get('verdict')!r} is unknown: a pair is kept only as {DISTINCT!r} "
            '(the answer "both are true")'
        )
    actor = item.get("actor")
    if actor is not None and not isinstance(actor, str):
        raise ValidationError("actor must be a string or null")
    check_label(actor, "actor")
    return KeptPair(named[0], named[1], actor, _decided_at(item.get("decided_at"), now))


def _decided_at(value: object, now: datetime) -> datetime:
    """A pair's ``decided_at``: an ISO time (UTC if it names no offset) the stores can keep
    (:func:`~memorybank.model.times.storable_time`, as every record's time) and not in the
    future; ``now`` when absent. Issue 44: ``0001-01-01T00:00:00+14:00`` (year 0 in UTC)
    was stored, and every later export, block and search of the scope answered 500."""
    if value is None:
        return now
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise ValidationError(
            f"decided_at {value!r} is not an ISO time: send e.g. '2025-01-31T12:00:00+00:00'"
        )
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=now.tzinfo)
    try:
        storable_time(moment)
    except ValueError as exc:
        raise ValidationError(f"decided_at {exc}", field="decided_at") from None
    check_not_future(moment, now, "decided_at")
    return moment


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
