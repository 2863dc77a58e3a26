"""What may be saved, how it is phrased and how much it matters (seed 000).

Pure functions and one settings model, no I/O:

* :func:`validate_memory` checks a fact's fields against :class:`PolicySettings`, and
  :func:`validate_turn` a conversation turn's (stored as said, so no minimum length and no
  third person, but the same characters, tags, metadata and importance as a fact);
* :func:`to_third_person` turns "I prefer TypeScript" into "User prefers TypeScript", or
  refuses with guidance when first-person text cannot be rephrased unambiguously (it lives in
  :mod:`memorybank.rules.third_person`, with :func:`is_first_person` and :func:`strip_lead_in`, and
  is re-exported here);
* :func:`score_importance` gives the 1–10 importance of seed 000 (category base plus
  adjustments), and :func:`importance_reasons` says why.

Every refusal is a :class:`~memorybank.errors.ValidationError` whose ``field`` names the input
and whose message says what to fix, because its reader is often an LLM that will retry.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memorybank.errors import ValidationError
from memorybank.model import Category
from memorybank.rules.inputs import METADATA_MAX_DEPTH, unpaired_surrogate
from memorybank.rules.third_person import (
    ThirdPersonResult,
    is_first_person,
    strip_lead_in,
    to_third_person,
)

# --------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------


class PolicySettings(BaseModel):
    """Limits for saved memories; the defaults are seed 000's.

    >>> PolicySettings().content_max
    500
    >>> PolicySettings(content_min=20).content_min
    20
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    content_min: int = Field(10, ge=1)
    content_max: int = Field(500, ge=1)
    reasoning_min: int = Field(10, ge=0)
    reasoning_max: int = Field(200, ge=1)
    tag_max: int = Field(20, ge=0)
    tag_length_max: int = Field(64, ge=1)
    metadata_max_bytes: int = Field(16384, ge=2)

    @model_validator(mode="after")
    def _minimums_below_maximums(self) -> Self:
        if self.content_min > self.content_max:
            raise ValueError("content_min must not exceed content_max")
        if self.reasoning_min > self.reasoning_max:
            raise ValueError("reasoning_min must not exceed reasoning_max")
        return self


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

_CATEGORY_NAMES = ", ".join(c.value for c in Category)
IMPORTANCE_MIN = 1
IMPORTANCE_MAX = 10


def _preview(value: object, limit: int = 40) -> str:
    """A short repr for error messages: an attacker-sized value must not flood the log."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…'"


def _chars(n: int) -> str:
    return f"{n} character" if n == 1 else f"{n} characters"


def _bad_character(text: str, *, allow_layout: bool) -> tuple[int, str] | None:
    """Position and description of the first character we refuse, or None.

    Control characters corrupt terminals, prompts and logs; lone surrogates cannot be stored
    as UTF-8 at all. Line breaks and tabs are legitimate layout in content.
    """
    for i, ch in enumerate(text):
        if allow_layout and ch in "\n\t":
            continue
        kind = unicodedata.category(ch)
        if kind == "Cc":
            return i, f"control character U+{ord(ch):04X}"
        if kind == "Cs":
            return i, f"unpaired surrogate U+{ord(ch):04X}"
    return None


def parse_category(value: Category | str) -> Category:
    """The :class:`Category` for ``value``, accepting any case and surrounding spaces.

    >>> parse_category(" Preference ")
    <Category.PREFERENCE: 'preference'>
    >>> parse_category("foo")
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: unknown category 'foo': use one of identity, preference, relationship, project, context
    """  # noqa: E501
    if isinstance(value, Category):
        return value
    if isinstance(value, str):
        try:
            return Category(value.strip().lower())
        except ValueError:
            pass
    raise ValidationError(
        f"unknown category {_preview(value)}: use one of {_CATEGORY_NAMES}", field="category"
    )


def _clean_text(
    value: object,
    field: str,
    minimum: int,
    maximum: int,
    *,
    too_short_hint: str,
    too_long_hint: str,
) -> str:
    if not isinstance(value, str):
        raise ValidationError(
            f"{field} must be a string, got {type(value).__name__} — pass plain text",
            field=field,
        )
    # Windows line endings are ordinary pasted text, not control codes worth refusing.
    text = value.replace("\r\n", "\n").strip()
    bad = _bad_character(text, allow_layout=True)
    if bad is not None:
        pos, what = bad
        raise ValidationError(
            f"{field} contains a {what} at position {pos}: remove it — only line breaks and "
            "tabs are allowed besides printable text",
            field=field,
        )
    if len(text) < minimum:
        raise ValidationError(
            f"{field} too short: {_chars(len(text))}, minimum {minimum} — {too_short_hint}",
            field=field,
        )
    if len(text) > maximum:
        raise ValidationError(
            f"{field} too long: {_chars(len(text))}, maximum {maximum} — {too_long_hint}",
            field=field,
        )
    return text


def _check_tags(tags: object, settings: PolicySettings) -> None:
    # A bare string is iterable too; accepting it would silently make one tag per letter.
    if isinstance(tags, str | bytes) or isinstance(tags, Mapping) or not isinstance(tags, Iterable):
        raise ValidationError(
            f"tags must be a list of strings, got {type(tags).__name__} — "
            "e.g. tags=['work', 'python']",
            field="tags",
        )
    items = list(tags)
    if len(items) > settings.tag_max:
        raise ValidationError(
            f"too many tags: {len(items)}, maximum {settings.tag_max} — keep the most useful ones",
            field="tags",
        )
    for index, tag in enumerate(items):
        if not isinstance(tag, str):
            raise ValidationError(
                f"tag {index} must be a string, got {type(tag).__name__} — use short keywords "
                "such as 'work'",
                field="tags",
            )
        name = tag.strip()
        if not name:
            raise ValidationError(
                f"tag {index} is empty — remove it or use a keyword such as 'work'", field="tags"
            )
        if len(name) > settings.tag_length_max:
            raise ValidationError(
                f"tag {_preview(name)} too long: {_chars(len(name))}, maximum "
                f"{settings.tag_length_max} — use a short keyword",
                field="tags",
            )
        # Tags are single-line labels, so even newlines and tabs are refused here.
        bad = _bad_character(name, allow_layout=False)
        if bad is not None:
            raise ValidationError(
                f"tag {_preview(name)} contains a {bad[1]} — use printable text only",
                field="tags",
            )


def _check_metadata(metadata: object, settings: PolicySettings) -> None:
    if not isinstance(metadata, Mapping):
        raise ValidationError(
            f"metadata must be an object of JSON values, got {type(metadata).__name__} — "
            "e.g. metadata={'source_url': 'https://…'}",
            field="metadata",
        )
    limit = settings.metadata_max_bytes
    too_large = ValidationError(
        f"metadata too large: more than {limit} bytes as JSON, maximum {limit} — keep only "
        "small identifiers and labels in metadata",
        field="metadata",
    )
    # Walk without recursion. Every visited value costs at least one byte of JSON, so counting
    # visits bounds the work even for cycles or a shared sub-object repeated exponentially.
    visits = 0
    stack: list[tuple[object, str, int]] = [(metadata, "metadata", 0)]
    while stack:
        value, path, depth = stack.pop()
        visits += 1
        if visits > limit:
            raise too_large
        if depth > METADATA_MAX_DEPTH:
            shown = path if len(path) <= 60 else path[:59] + "…"  # 65 levels spell a long path
            raise ValidationError(
                f"metadata nested too deeply at {shown}: maximum {METADATA_MAX_DEPTH} levels — "
                "flatten it",
                field="metadata",
            )
        if isinstance(value, str) and "\x00" in value:  # a name is checked as a value too
            raise ValidationError(
                f"metadata at {path} contains a NUL character (U+0000), which PostgreSQL cannot "
                "store — remove it",
                field="metadata",
            )
        if value is None or isinstance(value, str | bool | int):
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValidationError(
                    f"metadata value at {path} is {value}, which JSON cannot represent — use a "
                    "finite number or null",
                    field="metadata",
                )
            continue
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ValidationError(
                        f"metadata key {_preview(key)} at {path} is a {type(key).__name__} — JSON "
                        "object keys must be strings",
                        field="metadata",
                    )
                stack += [(item, f"{path}.{key}", depth + 1), (key, f"{path} (a name)", depth)]
            continue
        if isinstance(value, list | tuple):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
            continue
        raise ValidationError(
            f"metadata is not JSON-serialisable: {path} is a {type(value).__name__} — use "
            "strings, numbers, booleans, null, lists and objects",
            field="metadata",
        )
    _check_metadata_size(metadata, limit)


def _check_metadata_size(metadata: Mapping[str, Any], limit: int) -> None:
    """Refuse metadata over ``limit`` bytes as compact UTF-8 JSON."""
    try:
        encoded = json.dumps(
            metadata, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise ValidationError(
            f"metadata is not JSON-serialisable ({exc}) — use plain strings, numbers, "
            "booleans, null, lists and objects",
            field="metadata",
        ) from exc
    if len(encoded) > limit:
        raise ValidationError(
            f"metadata too large: {len(encoded)} bytes as JSON, maximum {limit} — keep only "
            "small identifiers and labels in metadata",
            field="metadata",
        )


def _check_importance(importance: object) -> None:
    # bool is an int subclass, but True is not an importance anyone meant.
    if isinstance(importance, bool) or not isinstance(importance, int):
        raise ValidationError(
            f"importance must be a whole number from {IMPORTANCE_MIN} to {IMPORTANCE_MAX}, "
            f"got {_preview(importance)} — or omit it to have it scored automatically",
            field="importance",
        )
    if not IMPORTANCE_MIN <= importance <= IMPORTANCE_MAX:
        raise ValidationError(
            f"importance out of range: {importance}, must be between {IMPORTANCE_MIN} and "
            f"{IMPORTANCE_MAX} — or omit it to have it scored automatically",
            field="importance",
        )


def validate_memory(
    content: str,
    category: Category | str,
    *,
    reasoning: str | None = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    importance: int | None = None,
    settings: PolicySettings,
) -> tuple[str, Category]:
    """Check a memory's fields; return the cleaned content and the resolved category.

    Content is stripped of surrounding whitespace (and CRLF becomes LF) before its length is
    measured. Raises :class:`ValidationError` with ``field`` set and a fix in the message.

    >>> validate_memory("  User prefers dark mode ", "Preference", settings=PolicySettings())
    ('User prefers dark mode', <Category.PREFERENCE: 'preference'>)
    >>> validate_memory("Hi", "context", settings=PolicySettings())
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: content too short: 2 characters, minimum 10 — write the fact as a full sentence such as 'User prefers dark mode'
    """  # noqa: E501
    text = _clean_text(
        content,
        "content",
        settings.content_min,
        settings.content_max,
        too_short_hint="write the fact as a full sentence such as 'User prefers dark mode'",
        too_long_hint="keep one fact per memory and split longer notes into several memories",
    )
    resolved = parse_category(category)
    _check_extras(reasoning, tags, metadata, importance, settings)
    return text, resolved


def _check_extras(
    reasoning: str | None,
    tags: Sequence[str],
    metadata: Mapping[str, Any] | None,
    importance: int | None,
    settings: PolicySettings,
) -> None:
    """What facts and conversation turns share: reasoning, tags, metadata, importance."""
    if reasoning is not None:
        _clean_text(
            reasoning,
            "reasoning",
            settings.reasoning_min,
            settings.reasoning_max,
            too_short_hint="say in a sentence why this is worth remembering long-term",
            too_long_hint="keep the reasoning to one or two sentences",
        )
    _check_tags(tags, settings)
    if metadata is not None:
        # First, so no later message echoes a name holding the surrogate.
        found = unpaired_surrogate(metadata, "metadata")
        if found is not None:
            raise ValidationError(f"{found}: remove it", field="metadata")
        _check_metadata(metadata, settings)
    if importance is not None:
        _check_importance(importance)


def validate_turn(
    content: str,
    category: Category | str,
    *,
    reasoning: str | None = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    importance: int | None = None,
    settings: PolicySettings,
    maximum: int | None = None,
) -> tuple[str, Category]:
    """Check a conversation turn's fields; return the stripped content and the category.

    A turn is stored as said, so it has no minimum length and no third-person rule, and a long
    one is split into chunks (``maximum``: the most one stored piece may hold, for an update or
    an import; ``None`` for a save, which chunks it). Everything else is checked as for a fact
    (:func:`validate_memory`): its characters, reasoning, tags, metadata (the same 64 levels
    and 16 KiB) and importance.

    >>> validate_turn(" ok ", "context", settings=PolicySettings())
    ('ok', <Category.CONTEXT: 'context'>)
    >>> validate_turn("hi", "context", metadata={"a": [[[[1]]]]},
    ...               settings=PolicySettings(metadata_max_bytes=5))
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: metadata too large: more than 5 bytes as JSON, maximum 5 — keep only small identifiers and labels in metadata
    """  # noqa: E501
    text = _clean_text(
        content,
        "content",
        1,
        maximum if maximum is not None else max(len(content), 1),
        too_short_hint="nothing to remember",
        too_long_hint="split the turn into several items",
    )
    resolved = parse_category(category)
    _check_extras(reasoning, tags, metadata, importance, settings)
    return text, resolved


# --------------------------------------------------------------------------------------------
# Importance
# --------------------------------------------------------------------------------------------

_BASE_IMPORTANCE = {
    Category.IDENTITY: 10,
    Category.PREFERENCE: 9,
    Category.RELATIONSHIP: 8,
    Category.PROJECT: 7,
    Category.CONTEXT: 5,
}
# "save this" is seed 000's own example of an explicit request, next to "remember this".
_EXPLICIT_RE = re.compile(
    r"\b(?:remember|important|crucial|must|keep\s+in\s+mind|do\s+not\s+forget"
    r"|don['’]?t\s+forget|save\s+this)\b",
    re.IGNORECASE,
)
_GOAL_RE = re.compile(
    r"\b(?:goals?|plan(?:s|ned|ning)?\s+to|aim(?:s|ed|ing)?|aspir(?:e|es|ed|ing|ations?)"
    r"|dream(?:s|ed|t|ing)?|long[\s-]term|careers?|ambitions?)\b",
    re.IGNORECASE,
)
_VAGUE_RE = re.compile(
    r"\b(?:might|maybe|perhaps|some\s?day|possibly|probably|not\s+sure)\b", re.IGNORECASE
)
_TEMPORARY_RE = re.compile(
    r"\b(?:today|tonight|right\s+now|at\s+the\s+moment|this\s+(?:week|morning|afternoon|evening))\b",
    re.IGNORECASE,
)
# "May" and "March" are also a verb; only their capitalised forms count as dates.
_DATE_WORD_RE = re.compile(
    r"\b(?:(?i:january|february|april|june|july|august|september|october|november|december"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|May|March)\b"
)
_EMAIL_OR_URL_RE = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+\.\w[\w.]*|\bhttps?://\S+|\bwww\.\S+")
_DIGIT_RE = re.compile(r"\d+")
_CAPITALISED_RE = re.compile(r"(?<![\w'’-])[^\W\d_][\w'’-]*")
_NOT_NAMES = frozenset({"I", "I'm", "I’m", "I've", "I’ve", "I'd", "I’d", "I'll", "I’ll"})
_NOT_NAMES |= frozenset({"User", "User's", "User’s"})


def _at_sentence_start(text: str, index: int) -> bool:
    i = index
    while i > 0 and text[i - 1] in " \t\"“‘'([*•-":
        i -= 1
    return i == 0 or text[i - 1] in ".!?:…\n\r"


def _specific_detail(text: str) -> str | None:
    """The first name, number, date, email or URL in ``text`` (seed 000's "specific details")."""
    for m in _CAPITALISED_RE.finditer(text):
        word = m.group(0)
        if word[0].isupper() and word not in _NOT_NAMES and not _at_sentence_start(text, m.start()):
            return word
    for pattern in (_DIGIT_RE, _DATE_WORD_RE, _EMAIL_OR_URL_RE):
        found = pattern.search(text)
        if found is not None:
            return found.group(0)
    return None


def _assess(content: str, category: Category | str) -> tuple[int, list[str]]:
    resolved = parse_category(category)
    base = _BASE_IMPORTANCE[resolved]
    score = base
    reasons = [f"base {base} for category '{resolved.value}'"]

    def quote(m: re.Match[str]) -> str:
        return " ".join(m.group(0).split())

    vague = _VAGUE_RE.search(content)
    if (m := _EXPLICIT_RE.search(content)) is not None:
        score += 2
        reasons.append(f"+2 explicit request ('{quote(m)}')")
    if (detail := _specific_detail(content)) is not None:
        # A hedge ("might try Python someday") is not made more certain by naming things.
        if vague is None:
            score += 1
            reasons.append(f"+1 specific detail ('{detail}')")
        else:
            reasons.append(f"no +1 for specific detail ('{detail}'): the statement is vague")
    if (m := _GOAL_RE.search(content)) is not None:
        score += 1
        reasons.append(f"+1 long-term goal ('{quote(m)}')")
    if vague is not None:
        score -= 2
        reasons.append(f"-2 vague statement ('{quote(vague)}')")
    if (m := _TEMPORARY_RE.search(content)) is not None:
        score -= 2
        reasons.append(f"-2 temporary context ('{quote(m)}')")
    clamped = max(IMPORTANCE_MIN, min(IMPORTANCE_MAX, score))
    if clamped != score:
        reasons.append(f"clamped {score} to {clamped}")
    return clamped, reasons


# --------------------------------------------------------------------------------------------
# Category inference (when the caller names none)
# --------------------------------------------------------------------------------------------

# General cue words for seed 000's categories ("Likes/dislikes, settings"; "name, role,
# location"; "family, colleagues"; "work details, ongoing tasks"), matched on either person.
_PREFERENCE_RE = re.compile(
    r"\b(?:prefer(?:s|red|ring|ence|ences)?|likes?|liked|loves?|loved|enjoys?|enjoyed"
    r"|hates?|hated|dislikes?|disliked|can['’]?t\s+stand|favou?rite|fond\s+of"
    r"|rather|would\s+like|wants?\s+(?:me|the\s+assistant|answers|responses|replies)"
    r"|always\s+use[sd]?|never\s+use[sd]?|allergic|vegan|vegetarian|avoids?"
    r"|dark\s+mode|light\s+mode|settings?|tabs|spaces|style|tone"
    r"|usually|habits?|hobb(?:y|ies)|collects|drinks|eats|plays)\b",
    re.IGNORECASE,
)
# Saying what someone is ("is a backend engineer") outweighs a work word in the role's name.
_ROLE_RE = re.compile(
    r"\b(?:i\s+am|i['’]m|is)\s+(?:a|an)\s+[\w\s-]{0,30}?"
    r"(?:engineer|developer|designer|manager|teacher|student|doctor|nurse|scientist"
    r"|writer|lawyer|founder|consultant|analyst|researcher|architect|artist|programmer)\b",
    re.IGNORECASE,
)
_IDENTITY_RE = re.compile(
    r"\b(?:name\s+is|named|called"
    r"|works?\s+(?:as|at|for)|job|occupation|profession|lives?\s+(?:in|at)|living\s+in"
    r"|based\s+in|moved\s+to|relocated|hometown|address"
    r"|born|grew\s+up|years?\s+old|age\s+is|birthday|nationality|native\s+language"
    r"|speaks?|pronouns?|from\s+[A-Z]\w+|citizen|degree|graduated|studie[sd]|email|phone)\b",
    re.IGNORECASE,
)
_RELATIONSHIP_RE = re.compile(
    r"\b(?:wife|husband|partner|spouse|girlfriend|boyfriend|fianc[eé]e?|married|mother|father"
    r"|mom|mum|dad|parents?|sons?|daughters?|kids?|children|child|brother|sister|siblings?"
    r"|cousin|aunt|uncle|grand(?:mother|father|ma|pa|parents?|children|son|daughter)"
    r"|friends?|colleagues?|co-?workers?|boss|(?:my|user['’]s)\s+manager|mentor|teammates?"
    r"|roommates?|neighbou?rs?|family|dog|cat|pet|works?\s+with)\b",
    re.IGNORECASE,
)
_PROJECT_RE = re.compile(
    r"\b(?:working\s+on|works?\s+on|project|building|builds|developing|deadline|repo"
    r"|repository|codebase|launch(?:ing)?|ship(?:ping)?|release|sprint|milestone|roadmap"
    r"|prototype|app|startup|saas|mvp|feature|migrat(?:e|ing|ion)|refactor(?:ing)?|stack"
    r"|backend|frontend|api|database|tasks?|tickets?|thesis|team|product|platform|clients?"
    r"|customers?|deploy(?:s|ed|ing|ments?)?|sprints?)\b",
    re.IGNORECASE,
)
# A fact whose subject is someone of the user's ("My sister Ana is a doctor", "User's
# manager is Dana") is about that relationship, whatever it says of them.
_THEIR_PERSON_RE = re.compile(
    r"^\W*(?:(?:my|user['’]s|the\s+user['’]s)\s+(?:\w+\s+)?)" + _RELATIONSHIP_RE.pattern[2:],
    re.IGNORECASE,
)
# Checked in this order; the first with the most cues wins a tie.
_CATEGORY_CUES = (
    (Category.RELATIONSHIP, (_RELATIONSHIP_RE, _THEIR_PERSON_RE, _THEIR_PERSON_RE)),
    (Category.PREFERENCE, (_PREFERENCE_RE,)),
    (Category.PROJECT, (_PROJECT_RE,)),
    (Category.IDENTITY, (_IDENTITY_RE, _ROLE_RE, _ROLE_RE)),
)


def infer_category(text: str) -> Category:
    """Seed 000's category for a fact saved without one, from general cue words: the
    category with the most cues, ``context`` when none.

    >>> infer_category("I prefer dark mode")
    <Category.PREFERENCE: 'preference'>
    >>> infer_category("My name is John")
    <Category.IDENTITY: 'identity'>
    >>> infer_category("I work with Sarah on the backend")
    <Category.RELATIONSHIP: 'relationship'>
    >>> infer_category("My sister Ana is a doctor in Madrid")
    <Category.RELATIONSHIP: 'relationship'>
    >>> infer_category("Save this: I'm building a SaaS product")
    <Category.PROJECT: 'project'>
    >>> infer_category("User had a long day")
    <Category.CONTEXT: 'context'>
    """
    best, best_count = Category.CONTEXT, 0
    for category, patterns in _CATEGORY_CUES:
        count = sum(len(pattern.findall(text)) for pattern in patterns)
        if count > best_count:
            best, best_count = category, count
    return best


def their_person(text: str) -> str | None:
    """The opening words naming someone of the user's when that person is the fact's subject
    (the test :func:`infer_category` counts as a relationship cue), else ``None``: the subject
    is the user, or a thing of theirs.

    >>> their_person("User's sister works at Globex")
    "User's sister"
    >>> their_person("User's first job was at Globex") is None
    True
    """
    found = _THEIR_PERSON_RE.match(text)
    return None if found is None else found.group(0)


def score_importance(content: str, category: Category | str) -> int:
    """Importance 1–10 of seed 000: the category's base, adjusted by the wording.

    Pass the text as the user or caller wrote it (before lead-ins like "Remember that" are
    stripped), since an explicit request is itself a reason to keep a memory.

    >>> score_importance("Remember that I prefer dark mode", "preference")  # 9 + 2, clamped
    10
    >>> score_importance("User is tired today", "context")  # 5 - 2
    3
    """
    return _assess(content, category)[0]


def importance_reasons(content: str, category: Category | str) -> list[str]:
    """Why :func:`score_importance` gives its score: the base and each adjustment applied.

    >>> importance_reasons("I work with Sarah on the backend", "relationship")
    ["base 8 for category 'relationship'", "+1 specific detail ('Sarah')"]
    """
    return _assess(content, category)[1]


__all__ = [
    "IMPORTANCE_MAX",
    "IMPORTANCE_MIN",
    "PolicySettings",
    "ThirdPersonResult",
    "importance_reasons",
    "infer_category",
    "is_first_person",
    "parse_category",
    "score_importance",
    "strip_lead_in",
    "their_person",
    "to_third_person",
    "validate_memory",
    "validate_turn",
]
