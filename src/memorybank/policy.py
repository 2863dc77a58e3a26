"""What may be saved, how it is phrased and how much it matters (seed 000).

Pure functions and one settings model, no I/O:

* :func:`validate_memory` checks a memory's fields against :class:`PolicySettings`;
* :func:`to_third_person` turns "I prefer TypeScript" into "User prefers TypeScript", or
  refuses with guidance when first-person text cannot be rephrased unambiguously;
* :func:`score_importance` gives the 1–10 importance of seed 000 (category base plus
  adjustments), and :func:`importance_reasons` says why.

Every refusal is a :class:`~memorybank.errors.ValidationError` whose ``field`` names the input
and whose message says what to fix, because its reader is often an LLM that will retry.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memorybank.errors import ValidationError
from memorybank.model import Category

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
    duplicate_threshold: float = Field(0.95, ge=-1.0, le=1.0)
    """Cosine similarity above which (strictly) a new memory duplicates an existing one."""
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


def is_duplicate(similarity: float, settings: PolicySettings) -> bool:
    """Whether a cosine ``similarity`` makes a new memory a duplicate (strictly above threshold).

    >>> is_duplicate(0.96, PolicySettings()), is_duplicate(0.95, PolicySettings())
    (True, False)
    """
    return similarity > settings.duplicate_threshold


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

_CATEGORY_NAMES = ", ".join(c.value for c in Category)
IMPORTANCE_MIN = 1
IMPORTANCE_MAX = 10
# Deeper metadata is never a real use case, and JSON encoders recurse, so bound it early.
_METADATA_MAX_DEPTH = 64


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
        if depth > _METADATA_MAX_DEPTH:
            raise ValidationError(
                f"metadata nested too deeply at {path}: maximum {_METADATA_MAX_DEPTH} levels — "
                "flatten it",
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
                stack.append((item, f"{path}.{key}", depth + 1))
            continue
        if isinstance(value, list | tuple):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
            continue
        raise ValidationError(
            f"metadata is not JSON-serialisable: {path} is a {type(value).__name__} — use "
            "strings, numbers, booleans, null, lists and objects",
            field="metadata",
        )
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
        _check_metadata(metadata, settings)
    if importance is not None:
        _check_importance(importance)
    return text, resolved


# --------------------------------------------------------------------------------------------
# First-person detection
# --------------------------------------------------------------------------------------------

# Only lower- or title-case forms count (plus the capital "I"): "US", "ME" and "MY" are far more
# often a country, a state or an illness than a shouted pronoun. "\w" boundaries and the extra
# characters keep "Iowa", "I/O", "I-95", "me@example.com", "about.me" and "determine" out.
_PRONOUN_RE = re.compile(
    r"(?<![\w/&@#\-])(?<!\w\.)"
    r"(I|[Mm]y|[Mm]e|[Mm]ine|[Mm]yself|[Ww]e|[Uu]s|[Oo]ur|[Oo]urs|[Oo]urselves)"
    r"(?![\w/&@#\-]|\.\w)"
)
_PLURAL_PRONOUNS = frozenset({"we", "us", "our", "ours", "ourselves"})
# A capital I after these words is a Roman numeral: "World War I", "Type I diabetes".
_NUMERAL_PREFIXES = frozenset(
    """type phase war part chapter class stage level grade act volume vol book article section
    tier round season episode title schedule appendix annex division league category""".split()
)
# "a gold mine", "the mine": a noun, not the pronoun.
_MINE_NOUN_PREFIXES = frozenset(
    """a an the this that these those his her its their your our my whose coal gold silver
    copper diamond salt iron land tin uranium open-pit abandoned old""".split()
)
_QUOTED_RE = re.compile(r'"[^"\n]*"|“[^“”\n]*”')
_PREV_WORD_RE = re.compile(r"([^\W\d_][\w'’-]*)[ \t]+$")
_NEXT_WORD_RE = re.compile(r"[ \t]+([^\W\d_][\w'’]*)")


@dataclass(frozen=True, slots=True)
class _Token:
    start: int
    end: int
    word: str


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    """Double-quoted spans: titles and quotations keep their own pronouns ("I Will Survive").

    A quote spanning the whole text is the content itself, so it is not exempt.
    """
    whole = (len(text) - len(text.lstrip()), len(text.rstrip()))
    return [m.span() for m in _QUOTED_RE.finditer(text) if m.span() != whole]


def _prev_word(text: str, start: int) -> str | None:
    # A bounded window keeps this linear on long text; no useful word is longer.
    m = _PREV_WORD_RE.search(text, max(0, start - 64), start)
    return m.group(1) if m else None


def _next_word(text: str, end: int) -> str | None:
    m = _NEXT_WORD_RE.match(text, end)
    return m.group(1) if m else None


def _is_roman_numeral(text: str, start: int, end: int) -> bool:
    if text[end : end + 1] in ("'", "’"):
        return False  # "I'm", "I'd": a contraction is always the pronoun
    prev = _prev_word(text, start)
    if prev is None:
        return False
    if prev.lower() in _NUMERAL_PREFIXES:
        # "World War I ended" vs "the type I like": lower-case prefixes need a non-verb after.
        return prev[0].isupper() or not _looks_like_predicate(_next_word(text, end))
    # "Elizabeth I." or "Henry I, king": a capitalised word, then the numeral ends the phrase.
    return prev[0].isupper() and (end == len(text) or text[end] in ",.;:!?)")


def _pronoun_tokens(text: str) -> list[_Token]:
    masked = _quoted_spans(text)
    mask_starts = [a for a, _ in masked]  # spans are sorted and disjoint
    tokens = []
    for m in _PRONOUN_RE.finditer(text):
        start, end = m.span()
        word = m.group(1)
        i = bisect.bisect_right(mask_starts, start) - 1
        if i >= 0 and start < masked[i][1]:
            continue
        if word == "I" and _is_roman_numeral(text, start, end):
            continue
        if word.lower() == "mine":
            prev = _prev_word(text, start)
            if prev is not None and prev.lower() in _MINE_NOUN_PREFIXES:
                continue
        tokens.append(_Token(start, end, word))
    return tokens


def is_first_person(text: str) -> bool:
    """Whether ``text`` contains a standalone first-person pronoun (I, me, my, we, us, our …).

    Whole words only; "I" only as a capital; quoted titles, Roman numerals, "US" and nouns
    like "a gold mine" do not count.

    >>> is_first_person("I prefer tea"), is_first_person("We use Postgres")
    (True, True)
    >>> is_first_person("User lives in Iowa and studies World War I")
    False
    """
    return bool(_pronoun_tokens(text))


# --------------------------------------------------------------------------------------------
# Third-person rephrasing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThirdPersonResult:
    """The text to store, and whether :func:`to_third_person` changed it."""

    text: str
    rephrased: bool


def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


# Verbs in base form we conjugate after "I" ("I study" → "User studies"). A closed list: an
# unknown word after "I" may not be a verb at all ("I and my wife …"), and guessing would store
# broken text silently, while refusing costs the caller one retry.
_BASE_VERBS = _words(
    """
    accept admire adore advise agree aim allow analyse analyze answer appreciate approve argue
    arrange ask aspire assist attend avoid bake believe belong bike blog borrow bowl box breed
    brew bring build buy call camp care carry celebrate change chat check choose clean climb
    coach code collect come commute compete complain consider consult contribute cook coordinate
    create cycle dance date deal debug decide defend deliver depend deploy design despise develop
    die dislike disagree do document donate draw dream dress drink drive earn eat edit embed
    email enjoy exercise expect experiment explain explore fancy favor favour fear feed feel
    fight find finish fish fix fly focus follow forget freelance game garden get give go golf
    grow guide handle hang hate have hear help hike hire hold hope host hunt identify ignore
    imagine intend invest join jog journal keep kayak kill knit know lack learn lead lecture lend
    lift like listen live look lose love maintain make manage marry meditate meet mentor message
    mind miss moderate moonlight need nurse observe obsess offer operate organise organize oversee
    own paint park participate pay perform photograph plan play post practice practise pray
    prefer prepare present produce program promise protect publish race raise recommend record
    recycle refuse relax rely remember rent repair report represent require research rest review
    ride rock row run sail save say search see sell send serve share shop shred sing ski skate
    sleep smoke snowboard speak specialise specialize spend stand start stay stream struggle
    study suffer support surf swim take talk teach tend test text think train translate travel
    trust try tutor understand use value vape visit volunteer vote wait wake walk want watch
    wear win wish wonder work worry write
    """
)
_AMBIGUOUS_TENSE = _words(
    """read quit put cut set let hit shut hurt cost bet split spread upset cast broadcast
    forecast burst fit rid shed wed thrust"""
)
_IRREGULAR_PAST = _words(
    """ate became began bought brought built came caught chose did drank drove fell felt flew
    forgot fought found gave got grew had heard held kept knew led left lent lost made meant met
    paid ran rode said sang sat saw sold sent slept spent spoke stood stole swam taught thought
    threw told took understood went woke won wore wrote"""
)
_PAST_PARTICIPLES = _IRREGULAR_PAST | _words(
    """been better become begun chosen done driven eaten flown forgotten given gone gotten grown
    known seen spoken taken written"""
)
_ADVERBS = _words(
    """always never usually often sometimes rarely seldom generally typically normally mostly
    mainly really truly also just still definitely absolutely actually strongly only currently
    now frequently occasionally regularly primarily especially hardly barely even already
    personally genuinely totally"""
)
# Words after "I" that change for a third-person subject; the keys use a straight apostrophe.
_AUXILIARIES = {
    "am": "is",
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "haven't": "hasn't",
}
# Words after "I" that stay as they are: past tense, modals and their negations.
_UNCHANGED = _words(
    """was wasn't did didn't had hadn't can can't cannot could couldn't will won't would
    wouldn't shall shan't should shouldn't may might mightn't must mustn't"""
)
# Lead-ins people put before the fact ("Remember that …"), removed before rephrasing. A bare
# verb needs "that", a colon/dash/comma, or a first-person word next, so that "Note apps are
# handy" keeps its "Note".
_LEAD_IN_RE = re.compile(
    r"\s*(?:(?:please|pls|hey|oh|ok|okay|and|also)[\s,]+)*"
    r"(?:remember(?:\s+this)?|save\s+this|don['’]?t\s+forget(?:\s+this)?"
    r"|do\s+not\s+forget(?:\s+this)?|keep\s+in\s+mind(?:\s+this)?|note(?:\s+this)?"
    r"|note\s+down|fyi|for\s+the\s+record|just\s+so\s+you\s+know)"
    r"(?:\s*[:,\-–—]\s*|\s+that\s+|\s+(?=(?-i:I|[Mm]y)\b))",
    re.IGNORECASE,
)
_SENTENCE_END_RE = re.compile(r"[.!?…]+[\"”’')\]]*[ \t]+|\n[ \t\r\n]*")
_BULLET_RE = re.compile(r"[ \t]*(?:[-*•][ \t]+)?")
_CONTRACTION_RE = re.compile(r"['’](m|ve|d|ll)\b", re.IGNORECASE)
_PREDICATE_RE = re.compile(r"[ \t]+([A-Za-z]+(?:['’][A-Za-z]+)?)\b(?!['’])")
_BE_AFTER_I_RE = re.compile(r"[ \t]+(am|was|wasn['’]t)\b")


def _third_person_s(verb: str) -> str:
    """'study' → 'studies', 'watch' → 'watches', 'go' → 'goes', 'play' → 'plays'."""
    special = {"have": "has", "do": "does", "go": "goes", "be": "is"}
    if verb in special:
        return special[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _match_case(source: str, word: str) -> str:
    """``word`` in the case style of ``source`` ("PREFER" → "PREFERS", "Prefer" → "Prefers")."""
    if len(source) > 1 and source.isupper():
        return word.upper()
    if source[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _looks_like_predicate(word: str | None) -> bool:
    if word is None:
        return False
    key = word.lower().replace("’", "'")
    return (
        key in _AUXILIARIES
        or key in _UNCHANGED
        or key in _BASE_VERBS
        or key in _AMBIGUOUS_TENSE
        or key in _IRREGULAR_PAST
        or key in _ADVERBS
        or (key.endswith("ed") and len(key) > 3)
    )


def _first_person_error(
    quoted: str, reason: str = "", example: str = "'User prefers …' or 'User's name is …'"
) -> ValidationError:
    return ValidationError(
        f"content is written in the first person ('{quoted}'){reason}; rephrase it in the "
        f"third person, e.g. {example}",
        field="content",
    )


def _pronoun_error(token: _Token) -> ValidationError:
    word = token.word if token.word == "I" else token.word.lower()
    if word in _PLURAL_PRONOUNS:
        # "we" hides who is meant; the fix is naming the group, not just the grammar.
        return _first_person_error(
            word, "", "'User prefers …' or, for a group, 'User's team uses Postgres'"
        )
    return _first_person_error(word)


_Edit = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class _Head:
    edits: list[_Edit]
    end: int


def _rephrase_i_head(text: str, token: _Token) -> _Head | ValidationError:
    """Rewrite a sentence that starts with "I …", or say why it cannot be done."""
    contraction = _CONTRACTION_RE.match(text, token.end)
    if contraction is not None:
        kind = contraction.group(1).lower()
        end = contraction.end()
        if kind == "d":
            # "I'd like" is "would"; "I'd been", "I'd better", "I'd moved" are "had".
            after = end
            while (m := _PREDICATE_RE.match(text, after)) and m.group(1).lower() in _ADVERBS:
                after = m.end()
            nxt = _PREDICATE_RE.match(text, after)
            word = nxt.group(1).lower() if nxt else ""
            past = word in _PAST_PARTICIPLES or (
                word.endswith("ed") and len(word) > 3 and word not in _BASE_VERBS
            )
            verb = "had" if past else "would"
        else:
            verb = {"m": "is", "ve": "has", "ll": "will"}[kind]
        return _Head([(token.start, end, f"User {verb}")], end)

    pos = token.end
    while True:
        m = _PREDICATE_RE.match(text, pos)
        if m is None:
            return _first_person_error("I", " with no verb after 'I' to rephrase")
        word = m.group(1)
        if word.lower() not in _ADVERBS:
            break
        pos = m.end()
    apostrophe = "’" if "’" in word else "'"
    key = word.lower().replace("’", "'")
    start, end = m.span(1)
    if key in _AUXILIARIES:
        replacement = _AUXILIARIES[key].replace("'", apostrophe)
    elif key in _UNCHANGED:
        replacement = key
    elif key in _BASE_VERBS:
        replacement = _third_person_s(key)
    elif key in _AMBIGUOUS_TENSE:
        return _first_person_error(
            f"I {word}",
            f" and '{word}' may be past or present tense",
            f"'User {key} …' (past) or 'User {_third_person_s(key)} …' (present)",
        )
    elif key in _IRREGULAR_PAST or (key.endswith("ed") and len(key) > 3):
        replacement = key
    else:
        return _first_person_error(f"I {word}", " and cannot be rephrased automatically")
    edits: list[_Edit] = [(token.start, token.end, "User")]
    if replacement != key:
        edits.append((start, end, _match_case(word, replacement)))
    return _Head(edits, end)


def _rephrase_head(text: str, token: _Token) -> _Head | ValidationError:
    if token.word == "I":
        return _rephrase_i_head(text, token)
    if token.word.lower() == "my" and re.match(r"[ \t]+\w", text[token.end :]):
        return _Head([(token.start, token.end, "User's")], token.end)
    return _pronoun_error(token)


def _replace_pronoun(text: str, token: _Token, at_head: bool) -> _Edit:
    """Rewrite a first-person pronoun once the sentence's subject is already "User"."""
    lower = token.word.lower()
    if lower in _PLURAL_PRONOUNS:
        raise _pronoun_error(token)
    end = token.end
    if token.word == "I":
        contraction = _CONTRACTION_RE.match(text, end)
        be = _BE_AFTER_I_RE.match(text, end)
        if contraction is not None:
            kind = contraction.group(1).lower()
            end = contraction.end()
            tail = "'" if "'" in contraction.group(0) else "’"
            replacement = "they are" if kind == "m" else f"they{tail}{kind}"
        elif be is not None:
            end = be.end()
            verb = be.group(1).lower()
            replacement = "they " + {"am": "are", "was": "were"}.get(
                verb, verb.replace("wasn", "weren")
            )
        else:
            replacement = "they"
    else:
        replacement = {"my": "their", "me": "them", "mine": "theirs", "myself": "themselves"}[lower]
    if at_head or token.word[:1].isupper() and token.word != "I":
        replacement = replacement[:1].upper() + replacement[1:]
    return token.start, end, replacement


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence. A full stop before a lower-case word ("e.g. my") is not
    treated as a sentence end, since the next word would not start a sentence."""
    spans = []
    start = 0
    for m in _SENTENCE_END_RE.finditer(text):
        following = text[m.end() : m.end() + 1]
        if m.group(0)[0] != "\n" and following.islower():
            continue
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    return spans


def strip_lead_in(text: str) -> str:
    """``text`` without leading "Remember that", "Save this:", "Don't forget that" and the like.

    >>> strip_lead_in("Remember that I prefer dark mode")
    'I prefer dark mode'
    >>> strip_lead_in("Note apps are handy")
    'Note apps are handy'
    """
    while (m := _LEAD_IN_RE.match(text)) is not None:
        rest = text[m.end() :]
        if not any(ch.isalnum() for ch in rest):
            break  # nothing but the lead-in: leave the text as the caller wrote it
        text = rest
    return text


def to_third_person(content: str) -> ThirdPersonResult:
    """Rephrase first-person content in the third person, or refuse with guidance.

    Lead-ins such as "Remember that" are removed. A sentence starting with "I …" or "My …"
    gets "User" as its subject; later pronouns become they/them/their. Content without
    first-person pronouns passes unchanged. Anything else in the first person ("We should …",
    "Call me …", "Honestly I think …") raises :class:`ValidationError` (``field="content"``).

    >>> to_third_person("I prefer using TypeScript for all my projects").text
    'User prefers using TypeScript for all their projects'
    >>> to_third_person("Save this: I'm building a SaaS product")
    ThirdPersonResult(text='User is building a SaaS product', rephrased=True)
    >>> to_third_person("User likes tea")
    ThirdPersonResult(text='User likes tea', rephrased=False)
    """
    text = strip_lead_in(content)
    stripped = text != content
    tokens = _pronoun_tokens(text)
    if not tokens:
        if stripped:
            text = text[:1].upper() + text[1:]
            if is_first_person(text):  # capitalising a stray "i" made it a pronoun
                raise _first_person_error("I")
        return ThirdPersonResult(text=text, rephrased=stripped)

    edits: list[_Edit] = []
    anchored = False  # whether "User" is already the subject, so "they" has a referent
    index = 0
    for start, end in _sentences(text):
        first_index = index
        while index < len(tokens) and tokens[index].start < end:
            index += 1
        sentence_tokens = tokens[first_index:index]
        if not sentence_tokens:
            continue
        head = _BULLET_RE.match(text, start)
        head_pos = head.end() if head else start
        first = sentence_tokens[0]
        rest = sentence_tokens
        if first.start == head_pos:
            result = _rephrase_head(text, first)
            if isinstance(result, _Head):
                edits += result.edits
                anchored = True
                rest = [t for t in sentence_tokens if t.start >= result.end]
            elif not anchored:
                raise result
            # Anchored and unparseable ("I frobnicate …"): singular "They" needs no
            # conjugation, so plain pronoun replacement below is still correct.
        elif not anchored:
            raise _pronoun_error(first)
        edits += [_replace_pronoun(text, t, t.start == head_pos) for t in rest]

    pieces: list[str] = []
    cursor = 0
    for a, b, replacement in sorted(edits):
        pieces += [text[cursor:a], replacement]
        cursor = b
    out = "".join(pieces) + text[cursor:]
    out = out[:1].upper() + out[1:]
    # Rewriting can shift what a neighbouring word means ("Me I." loses the capitalised word
    # that made "I" a numeral); never hand back text that still reads as first person.
    if is_first_person(out):
        raise _pronoun_error(_pronoun_tokens(out)[0])
    return ThirdPersonResult(text=out, rephrased=True)


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
    "is_duplicate",
    "is_first_person",
    "parse_category",
    "score_importance",
    "strip_lead_in",
    "to_third_person",
    "validate_memory",
]
