"""What a user said in passing: pieces, the people "we" stands for, third person, dates; and
turns in the relevant section only as dated quotes (rules/quoted)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from memorybank.errors import ConfigurationError
from memorybank.model import Memory, Source
from memorybank.rules.keep_model import SURFACE, KeepModel, feature_matrix, load_keep_model
from memorybank.rules.quoted import facts_then_quotes
from memorybank.rules.said import as_fact, confirms, group_of, pieces
from memorybank.rules.third_person import said_in_third_person


@pytest.mark.parametrize(
    ("said", "group", "fact"),
    [
        (
            "we moved to Leeds last year",
            "their partner",
            "User and their partner moved to Leeds last year",
        ),
        ("we're four staff now", "others", "User and others are four staff now"),
        ("our keke is old", "their husband", "User and their husband's keke is old"),
        ("i work at a milk tea shop", "others", "User works at a milk tea shop"),
        ("help my lola with dinner", "others", "Help User's lola with dinner"),
        ("I love my job", "others", "User loves their job"),
    ],
)
def test_said_in_third_person_names_everyone(said: str, group: str, fact: str) -> None:
    assert said_in_third_person(said, group) == fact


def test_pieces_drop_filler_and_cut_at_a_new_subject() -> None:
    assert pieces("ok so. Honestly i'm a nurse, my shifts are long. lol") == [
        "i'm a nurse",
        "my shifts are long.",
    ]


def test_we_is_whoever_the_user_named_with_themselves_last() -> None:
    assert group_of(["my wife and I", "me and my team"]) == "their team"
    # Named, but not as "we": the user's "we" may be anyone.
    assert group_of(["my wife and I", "my team is great"]) == "their wife"
    assert group_of(["my team is great"]) == "others"


def test_a_fact_that_dates_itself_gets_the_day_it_was_said() -> None:
    when = datetime(2024, 3, 12, 9, tzinfo=UTC)
    assert as_fact("I started a new job yesterday", "others", when).endswith(
        "(said on 12 March 2024)"
    )
    assert as_fact("I am a nurse", "others", when) == "User is a nurse"


def test_confirmations() -> None:
    assert confirms("That's right, Tuesdays")
    assert not confirms("Actually no")


def _memory(content: str, **more: object) -> Memory:
    return Memory(user_id="u", content=content, category="context", **more)  # type: ignore[arg-type]


def test_turns_follow_facts_as_dated_user_quotes() -> None:
    when = datetime(2024, 3, 12, tzinfo=UTC)
    said = _memory(
        "our budget is £300",
        source=Source.CONVERSATION,
        occurred_at=when,
        metadata={"role": "user"},
    )
    covered = _memory("I'm a nurse", source=Source.CONVERSATION, metadata={"role": "user"})
    fact = _memory("User is a nurse", metadata={"from_memory": covered.id})
    asked = _memory("How many people?", source=Source.CONVERSATION, metadata={"role": "assistant"})
    agreed = _memory(
        "Your shift starts at 7",
        source=Source.CONVERSATION,
        occurred_at=when,
        metadata={"role": "assistant", "confirmed": True},
    )
    shown = [
        m.content for m in facts_then_quotes([said, asked, covered, agreed, fact], said_by="u")
    ]
    assert shown == [
        "User is a nurse",
        "On 12 March 2024 the user said: our budget is £300",
        "On 12 March 2024 the assistant said, and the user confirmed: Your shift starts at 7",
    ]


def test_the_shipped_model_reads_its_features() -> None:
    model = load_keep_model()
    assert model.surface == SURFACE
    rows = feature_matrix(np.zeros((2, model.dimension)), ["I am a nurse", "can you help?"])
    assert rows.shape == (2, model.dimension + len(SURFACE))
    assert ((model.probabilities(rows) >= 0) & (model.probabilities(rows) <= 1)).all()


def test_a_model_file_that_does_not_match_is_refused() -> None:
    document = load_keep_model().to_dict()
    with pytest.raises(ConfigurationError, match="retrain"):
        KeepModel.from_dict({**document, "surface": ["question_mark"]})
    with pytest.raises(ConfigurationError, match="positive"):
        KeepModel.from_dict({**document, "scale": [0.0] * len(document["scale"])})
