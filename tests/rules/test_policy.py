"""Tests for memorybank.rules.policy: validation, third-person rephrasing and importance
(seed 000)."""

from __future__ import annotations

import doctest
import math
from typing import Any

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memorybank.errors import ValidationError
from memorybank.model import Category
from memorybank.rules import policy
from memorybank.rules.policy import (
    PolicySettings,
    ThirdPersonResult,
    importance_reasons,
    is_first_person,
    parse_category,
    score_importance,
    strip_lead_in,
    to_third_person,
    validate_memory,
)

S = PolicySettings()


def validate(
    content: Any = "User prefers dark mode", category: Any = "preference", **kw: Any
) -> tuple[str, Category]:
    return validate_memory(content, category, settings=kw.pop("settings", S), **kw)


def raises(field: str, *fragments: str, **kw: Any) -> ValidationError:
    """Call ``validate`` expecting a ValidationError on ``field`` whose message has fragments."""
    with pytest.raises(ValidationError) as info:
        validate(**kw)
    assert info.value.field == field
    for fragment in fragments:
        assert fragment in str(info.value)
    return info.value


def test_doctests() -> None:
    result = doctest.testmod(policy)
    assert result.attempted > 0
    assert result.failed == 0


# --- settings ------------------------------------------------------------------------------


def test_settings_defaults_follow_seed_000() -> None:
    assert S.content_min == 10 and S.content_max == 500
    assert S.reasoning_min == 10 and S.reasoning_max == 200
    assert (S.tag_max, S.tag_length_max, S.metadata_max_bytes) == (20, 64, 16384)


def test_settings_are_frozen() -> None:
    with pytest.raises(pydantic.ValidationError):
        S.content_max = 1  # type: ignore[misc]


def test_settings_reject_min_above_max() -> None:
    with pytest.raises(ValueError):
        PolicySettings(content_min=600)
    with pytest.raises(ValueError):
        PolicySettings(reasoning_min=300)


# --- content ---------------------------------------------------------------------------------


def test_content_is_stripped_and_category_resolved() -> None:
    assert validate("  User prefers dark mode \n", "PREFERENCE") == (
        "User prefers dark mode",
        Category.PREFERENCE,
    )


@pytest.mark.parametrize("length", [10, 500])
def test_content_length_boundaries_accepted(length: int) -> None:
    text = "x" * length
    assert validate(text)[0] == text


def test_content_9_characters_rejected() -> None:
    err = raises("content", "content too short", "9 characters", "minimum 10", content="x" * 9)
    assert "'User prefers dark mode'" in str(err)


def test_content_501_characters_rejected() -> None:
    raises("content", "content too long", "501 characters", "maximum 500", content="x" * 501)


def test_content_too_short_example_from_brief() -> None:
    raises(
        "content",
        "content too short: 4 characters, minimum 10 — write the fact as a full sentence such "
        "as 'User prefers dark mode'",
        content="Mode",
    )


def test_content_too_long_names_length_and_fix() -> None:
    err = raises("content", "612 characters", "maximum 500", content="y" * 612)
    assert "split" in str(err)


def test_length_is_measured_after_stripping() -> None:
    raises("content", "too short", content="   short   ")
    assert validate(" " * 50 + "x" * 500 + " " * 50)[0] == "x" * 500


def test_empty_content_rejected() -> None:
    raises("content", "0 characters", content="   ")


def test_content_must_be_a_string() -> None:
    raises("content", "must be a string", content=42)


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\r", "\x7f", "\x85"])
def test_control_characters_rejected(char: str) -> None:
    err = raises("content", "control character", content=f"User likes{char} dark mode")
    assert f"U+{ord(char):04X}" in str(err)


def test_newline_tab_and_crlf_allowed() -> None:
    assert validate("User likes:\n\tdark mode")[0] == "User likes:\n\tdark mode"
    assert validate("User likes\r\ndark mode")[0] == "User likes\ndark mode"


def test_lone_surrogate_rejected() -> None:
    raises("content", "surrogate", content="User likes \ud800 dark mode")


# --- category --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["identity", "IDENTITY", " Identity ", Category.IDENTITY, "iDeNtItY"]
)
def test_category_case_insensitive(value: Any) -> None:
    assert validate(category=value)[1] is Category.IDENTITY


def test_unknown_category() -> None:
    raises(
        "category",
        "unknown category 'foo': use one of identity, preference, relationship, project, context",
        category="foo",
    )


def test_non_string_category() -> None:
    raises("category", "unknown category 3", category=3)


def test_parse_category() -> None:
    assert parse_category("project") is Category.PROJECT
    with pytest.raises(ValidationError):
        parse_category("")


# --- reasoning -------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [10, 200])
def test_reasoning_boundaries_accepted(length: int) -> None:
    validate(reasoning="r" * length)


def test_reasoning_9_rejected() -> None:
    raises("reasoning", "reasoning too short", "9 characters", "minimum 10", reasoning="r" * 9)


def test_reasoning_201_rejected() -> None:
    raises("reasoning", "reasoning too long", "201 characters", "maximum 200", reasoning="r" * 201)


def test_reasoning_optional_and_checked_for_control_characters() -> None:
    validate(reasoning=None)
    raises("reasoning", "control character", reasoning="Worth keeping\x00 forever")
    raises("reasoning", "must be a string", reasoning=12345678901)


# --- tags ------------------------------------------------------------------------------------


def test_good_tags_accepted() -> None:
    validate(tags=["work", "python"])
    validate(tags=("a",) * 20)
    validate(tags=["t" * 64])


@pytest.mark.parametrize(
    ("tags", "fragment"),
    [
        ("work", "list of strings"),
        ({"a": 1}, "list of strings"),
        (5, "list of strings"),
        (["ok", 3], "tag 1 must be a string"),
        (["ok", "  "], "tag 1 is empty"),
        ([""], "tag 0 is empty"),
        (["t" * 65], "65 characters, maximum 64"),
        (["a"] * 21, "too many tags: 21, maximum 20"),
        (["bad\ntag"], "control character"),
    ],
)
def test_bad_tags_rejected(tags: Any, fragment: str) -> None:
    raises("tags", fragment, tags=tags)


# --- metadata --------------------------------------------------------------------------------


def test_good_metadata_accepted() -> None:
    validate(metadata={})
    validate(metadata={"url": "https://x.test", "n": 1, "f": 1.5, "ok": True, "none": None})
    validate(metadata={"nested": {"list": [1, "two", {"three": 3}], "tuple": (1, 2)}})


def test_metadata_at_size_limit_accepted() -> None:
    # {"k":"…"} is 8 bytes of JSON around the value.
    validate(metadata={"k": "v" * (16384 - 8)})


def test_huge_metadata_rejected() -> None:
    raises("metadata", "metadata too large", "maximum 16384", metadata={"k": "v" * 16384})
    raises("metadata", "too large", metadata={"k": list(range(10_000))})


def test_metadata_size_counts_utf8_bytes() -> None:
    raises("metadata", "too large", metadata={"k": "é" * 9000})  # 18000 bytes


@pytest.mark.parametrize(
    ("metadata", "fragment"),
    [
        (["not", "a", "dict"], "must be an object"),
        ("text", "must be an object"),
        ({1: "int key"}, "keys must be strings"),
        ({"a": {2: "nested int key"}}, "keys must be strings"),
        ({"when": object()}, "not JSON-serialisable"),
        ({"s": {1, 2}}, "not JSON-serialisable"),
        ({"x": math.nan}, "JSON cannot represent"),
        ({"x": math.inf}, "JSON cannot represent"),
        ({"x": "\ud800"}, "unpaired surrogate U+D800"),
    ],
)
def test_bad_metadata_rejected(metadata: Any, fragment: str) -> None:
    raises("metadata", fragment, metadata=metadata)


def test_cyclic_metadata_rejected_without_hanging() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    raises("metadata", metadata=loop)


def test_deep_metadata_rejected() -> None:
    deep: Any = "leaf"
    for _ in range(1000):
        deep = [deep]
    raises("metadata", "nested too deeply", metadata={"d": deep})


def test_exponentially_shared_metadata_rejected_quickly() -> None:
    node: Any = "x"
    for _ in range(60):
        node = [node, node]
    raises("metadata", "too large", metadata={"d": node})


# --- importance (explicit) -------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 10])
def test_importance_boundaries_accepted(value: int) -> None:
    validate(importance=value)


@pytest.mark.parametrize("value", [0, 11, -3])
def test_importance_out_of_range(value: int) -> None:
    raises("importance", f"importance out of range: {value}", "between 1 and 10", importance=value)


@pytest.mark.parametrize("value", [True, 5.0, "high"])
def test_importance_must_be_int(value: Any) -> None:
    raises("importance", "whole number from 1 to 10", importance=value)


def test_settings_change_limits() -> None:
    strict = PolicySettings(content_min=20, content_max=30, tag_max=1)
    raises("content", "minimum 20", content="User likes tea", settings=strict)
    raises("tags", "maximum 1", tags=["a", "b"], settings=strict)


# --- third person ----------------------------------------------------------------------------

REPHRASINGS = [
    # From the brief and seed 000's table and scenarios.
    ("I am a software engineer", "User is a software engineer"),
    ("My wife is Jane", "User's wife is Jane"),
    ("I prefer TypeScript", "User prefers TypeScript"),
    ("I'm based in London", "User is based in London"),
    ("Remember that I prefer dark mode", "User prefers dark mode"),
    ("My name is John", "User's name is John"),
    ("I work with Sarah on the backend", "User works with Sarah on the backend"),
    ("Save this: I'm building a SaaS product", "User is building a SaaS product"),
    (
        "I prefer using TypeScript for all my projects",
        "User prefers using TypeScript for all their projects",
    ),
    ("I don't eat meat", "User doesn't eat meat"),
    ("I always watch films with subtitles", "User always watches films with subtitles"),
    ("I study biology", "User studies biology"),
    # Further patterns of the brief.
    ("I was born in Leeds", "User was born in Leeds"),
    ("I have two cats", "User has two cats"),
    ("I've lived in Rome", "User has lived in Rome"),
    ("I can speak French", "User can speak French"),
    ("I will start a new job", "User will start a new job"),
    ("I'd like shorter answers", "User would like shorter answers"),
    ("I'll be in Berlin next month", "User will be in Berlin next month"),
    ("My kids are Tom and Ann", "User's kids are Tom and Ann"),
    ("I never drink coffee", "User never drinks coffee"),
    ("I usually go to the gym", "User usually goes to the gym"),
    ("I often fix old bikes", "User often fixes old bikes"),
    ("I do yoga", "User does yoga"),
    ("I do not eat pork", "User does not eat pork"),
    ("I love hiking", "User loves hiking"),
    ("I hate cilantro", "User hates cilantro"),
    ("I use Neovim", "User uses Neovim"),
    ("I live in Oslo", "User lives in Oslo"),
    ("I want a quiet office", "User wants a quiet office"),
    ("I need large fonts", "User needs large fonts"),
    ("I enjoy sailing", "User enjoys sailing"),
    ("I play chess", "User plays chess"),
    ("I miss my hometown", "User misses their hometown"),
    ("I teach maths", "User teaches maths"),
    # Past tense stays; 'd before a participle is "had".
    ("I moved to Lisbon in 2021", "User moved to Lisbon in 2021"),
    ("I went to Oxford", "User went to Oxford"),
    ("I'd been a nurse for years", "User had been a nurse for years"),
    # Negations, adverbs, curly apostrophes, case.
    ("I really don't like olives", "User really doesn't like olives"),
    ("I haven't finished the course", "User hasn't finished the course"),
    ("I can't swim", "User can't swim"),
    ("I’m from Paris", "User is from Paris"),
    ("I don’t drink", "User doesn’t drink"),
    ("I'm not a morning person", "User is not a morning person"),
    # Lead-ins.
    ("Don't forget that I'm allergic to nuts", "User is allergic to nuts"),
    ("Keep in mind that my deadline is Friday", "User's deadline is Friday"),
    ("Note that I use Linux", "User uses Linux"),
    ("Please remember: I hate cilantro", "User hates cilantro"),
    ("Remember I prefer tea", "User prefers tea"),
    ("Do not forget that my son is Leo", "User's son is Leo"),
    # Pronouns later in the text.
    ("I love my kids and they love me", "User loves their kids and they love them"),
    ("I think I am right about this", "User thinks they are right about this"),
    ("I think I'm right about this", "User thinks they are right about this"),
    ("I was born in 1990 and I was happy", "User was born in 1990 and they were happy"),
    ("I taught myself Rust", "User taught themselves Rust"),
    ("I said the blue car is mine", "User said the blue car is theirs"),
    ("I play chess. My rating is 1800.", "User plays chess. User's rating is 1800."),
    ("I moved to Berlin. Later I found a job.", "User moved to Berlin. Later they found a job."),
    ("I like tea. I frobnicate daily.", "User likes tea. They frobnicate daily."),
]


@pytest.mark.parametrize(("said", "stored"), REPHRASINGS)
def test_rephrasing(said: str, stored: str) -> None:
    assert to_third_person(said) == ThirdPersonResult(text=stored, rephrased=True)


@pytest.mark.parametrize(
    "text",
    [
        "User prefers dark mode",
        "The user is a software engineer",
        "Their favourite editor is Vim",
        "Alice is the user's manager",
        "User lives in Iowa",
        "User's laptop has slow I/O",
        "User is interested in World War I",
        "User has type I diabetes",
        "User drives on the I-95 daily",
        "User's job is to determine pricing",
        "User works in a gold mine",
        "User moved to the US in 2020",
        "User's email is me@example.com",
        'User\'s favourite song is "I Will Survive"',
        "User reads Henry I.",
        "Note apps are handy for the user",
    ],
)
def test_third_person_passes_unchanged(text: str) -> None:
    assert to_third_person(text) == ThirdPersonResult(text=text, rephrased=False)
    assert not is_first_person(text)


def test_lead_in_removed_from_third_person_text() -> None:
    assert to_third_person("Remember that the user likes tea") == ThirdPersonResult(
        "The user likes tea", True
    )


def test_lead_in_alone_is_left_alone() -> None:
    assert strip_lead_in("Remember this:") == "Remember this:"


@pytest.mark.parametrize(
    ("text", "pronoun"),
    [
        ("We should use Postgres", "we"),
        ("Call me maybe", "me"),
        ("Honestly I think that my code is fine", "I"),
        ("Alice is my sister", "my"),
        ("Our team ships on Fridays", "our"),
        ("Let us meet weekly", "us"),
        ("Me and Sarah went hiking", "me"),
        ("Mine is the red car", "mine"),
        ("I think we should use Postgres", "we"),
        ("User and I both like tea", "I"),
    ],
)
def test_ambiguous_first_person_rejected(text: str, pronoun: str) -> None:
    with pytest.raises(ValidationError) as info:
        to_third_person(text)
    assert info.value.field == "content"
    message = str(info.value)
    assert f"content is written in the first person ('{pronoun}')" in message
    assert "rephrase it in the third person, e.g. 'User prefers …'" in message


def test_plural_rejection_suggests_naming_the_group() -> None:
    with pytest.raises(ValidationError, match="User's team"):
        to_third_person("We should use Postgres")


def test_unknown_verb_rejected() -> None:
    with pytest.raises(ValidationError, match=r"'I frobnicate'\) and cannot be rephrased"):
        to_third_person("I frobnicate daily")


def test_ambiguous_tense_rejected_with_both_options() -> None:
    with pytest.raises(ValidationError) as info:
        to_third_person("I quit smoking")
    assert "'User quit …' (past) or 'User quits …' (present)" in str(info.value)


@pytest.mark.parametrize("text", ["I", "I, for one, like tea", "My", "I always"])
def test_incomplete_first_person_rejected(text: str) -> None:
    with pytest.raises(ValidationError):
        to_third_person(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I prefer tea", True),
        ("my cat", True),
        ("ours", True),
        ("User likes tea", False),
        ("Iowa", False),
        ("I/O", False),
        ("determine", False),
        ("World War I", False),
        ("ME and US", False),
        ("i like tea", False),  # only the capital word counts, by design
    ],
)
def test_is_first_person(text: str, expected: bool) -> None:
    assert is_first_person(text) is expected


# --- importance score ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("category", "base"),
    [("identity", 10), ("preference", 9), ("relationship", 8), ("project", 7), ("context", 5)],
)
def test_category_base(category: str, base: int) -> None:
    assert score_importance("the user likes plain text", category) == base


@pytest.mark.parametrize(
    ("content", "category", "expected"),
    [
        # Seed 000's Testing Checklist.
        ("Remember that I prefer dark mode", "preference", 10),  # 9 + 2 = 11, clamped
        ("My name is John", "identity", 10),  # 10 + 1, clamped
        ("I work with Sarah on the backend", "relationship", 9),  # 8 + 1 (name)
        ("Save this: I'm building a SaaS product", "project", 10),  # 7 + 2 + 1
        # Vague and temporary.
        ("User might try Python someday", "preference", 7),  # 9 - 2
        ("User is tired today", "context", 3),  # 5 - 2
        ("User is busy right now", "context", 3),
        ("User has a call this afternoon", "context", 3),
        ("User is not sure about moving", "context", 3),
        # Each adjustment at most once.
        ("Maybe, perhaps, possibly someday", "context", 3),
        ("Remember, important, crucial, must", "context", 7),
        # Goals.
        ("the user's goal is to run a marathon", "project", 8),
        ("the user is planning to learn piano", "context", 6),
        ("the user wants a long-term career in design", "context", 6),
        # Details.
        ("the user was born in 1990", "context", 6),
        ("the user's birthday is in July", "context", 6),
        ("the user's email is someone@example.com", "context", 6),
        ("the user reads https://example.com daily", "context", 6),
        ("the user may move house", "context", 5),  # lower-case "may" is not a date
        # Clamping at the bottom.
        ("the user might nap today", "context", 1),
        ("the user might nap today", "project", 3),
    ],
)
def test_score_importance(content: str, category: str, expected: int) -> None:
    assert score_importance(content, category) == expected


def test_never_below_one() -> None:
    assert score_importance("maybe tonight", Category.CONTEXT) == 1
    assert score_importance("maybe tonight, perhaps right now", Category.CONTEXT) == 1


def test_explicit_markers() -> None:
    for marker in ["remember", "important", "don't forget", "do not forget", "keep in mind"]:
        assert score_importance(f"the user says {marker} tea", "context") == 7, marker
    # Word boundaries: "remembered" and "importantly" are not markers.
    assert score_importance("the user remembered tea", "context") == 5
    assert score_importance("the user, importantly, likes tea", "context") == 5


def test_score_uses_the_text_as_passed() -> None:
    original = "Remember that I prefer dark mode"
    stored = to_third_person(original).text
    assert score_importance(original, "preference") == 10
    assert score_importance(stored, "preference") == 9


def test_importance_reasons() -> None:
    assert importance_reasons("Remember that I prefer dark mode", "preference") == [
        "base 9 for category 'preference'",
        "+2 explicit request ('Remember')",
        "clamped 11 to 10",
    ]
    reasons = importance_reasons("User might try Python someday", "preference")
    assert reasons == [
        "base 9 for category 'preference'",
        "no +1 for specific detail ('Python'): the statement is vague",
        "-2 vague statement ('might')",
    ]
    assert importance_reasons("User is tired today", "context")[-1] == (
        "-2 temporary context ('today')"
    )


def test_score_rejects_unknown_category() -> None:
    with pytest.raises(ValidationError):
        score_importance("the user likes tea", "nope")


# --- properties ------------------------------------------------------------------------------

WORDS = st.sampled_from(
    "I I'm I’d me my mine myself we us our User user Remember that Save this: "
    "prefer like watch study am was have don't always never and Sarah Iowa War "
    'type . , ! ? \n " today maybe 2024 go'.split(" ")
)
SENTENCES = st.lists(WORDS, max_size=14).map(" ".join)


@given(st.text(max_size=200) | SENTENCES, st.sampled_from(list(Category)))
def test_score_always_in_range(text: str, category: Category) -> None:
    assert 1 <= score_importance(text, category) <= 10
    assert importance_reasons(text, category)


@given(st.text(max_size=200) | SENTENCES)
def test_third_person_never_returns_first_person(text: str) -> None:
    try:
        result = to_third_person(text)
    except ValidationError as exc:
        assert exc.field == "content"
        return
    assert not is_first_person(result.text)
    if not result.rephrased:
        assert result.text == text


@given(st.text(max_size=200) | SENTENCES)
def test_third_person_is_idempotent(text: str) -> None:
    try:
        once = to_third_person(text)
    except ValidationError:
        return
    assert to_third_person(once.text).text == once.text
