"""Facts a user states in passing, found without an LLM: which pieces of their messages to keep.

Every piece of a user message (:func:`memorybank.rules.said.pieces`) is embedded by the
bank's own embedder, in one batch, and the learned model (:mod:`memorybank.rules.keep_model`)
says how likely it states something lasting about the user or the people and things in their
life; the pieces at or above its threshold are kept, and so is every explicit statement
("remember that …", "my name is …": :func:`memorybank.rules.said.explicit_category`), each
rephrased in the third person with the day it was said, and the rest are passed over with
their probability. Saving them (the judge, the duplicate check) is
:func:`memorybank.services.conversations.remember_conversation`'s, through ``bank.save`` like
any fact.

Only the user's messages are read: nothing the assistant said becomes a user fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from memorybank.errors import ValidationError
from memorybank.model import Category
from memorybank.model.times import StoredTime
from memorybank.rules.keep_model import feature_matrix, load_keep_model
from memorybank.rules.policy import infer_category, to_third_person
from memorybank.rules.said import as_fact, explicit_category, group_of, is_question, pieces

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank


class Turn(Protocol):
    """What this module reads of a conversation message."""

    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str: ...

    @property
    def time(self) -> StoredTime | None: ...


@dataclass(frozen=True)
class Said:
    """One piece of a user message and what the model made of it."""

    message: int  # index of the message in the conversation
    piece: str  # the words as the user said them
    fact: str  # rephrased as a fact
    category: Category
    probability: float


def _as_asked(piece: str, fact: str, explicit: Category | None) -> str:
    """An explicit request the save's policy can rephrase goes to it as said: the policy
    strips "remember that" and scores the request to remember (seed 000: +2 importance)."""
    if explicit is None:
        return fact
    try:
        to_third_person(piece)
    except ValidationError:
        return fact
    return piece.rstrip(" .!…")


def model_fits(bank: MemoryBank) -> bool:
    """Whether the shipped model was trained on vectors of ``bank``'s embedder."""
    embedder = bank.embedder
    return load_keep_model().fits(embedder.model_id, embedder.dimension)


def weigh(bank: MemoryBank, turns: Sequence[Turn]) -> tuple[list[Said], list[Said]]:
    """The pieces of the user's messages worth keeping, and those passed over, in the order
    said. Call only when :func:`model_fits`."""
    found: list[tuple[int, str, str]] = []
    said_so_far: list[str] = []
    for index, turn in enumerate(turns):
        if turn.role != "user":
            continue
        said_so_far.append(turn.content)
        group = group_of(said_so_far)
        found += [
            (index, piece, as_fact(piece, group, turn.time)) for piece in pieces(turn.content)
        ]
    if not found:
        return [], []
    model = load_keep_model()
    texts = [piece for _, piece, _ in found]
    chance = model.probabilities(feature_matrix(bank.embedder.embed(texts), texts))
    kept: list[Said] = []
    passed: list[Said] = []
    for (index, piece, fact), p in zip(found, chance, strict=True):
        explicit = explicit_category(piece)
        category = explicit or infer_category(fact)
        said = Said(index, piece, _as_asked(piece, fact, explicit), category, round(float(p), 3))
        # A question is never a fact, however the model reads its words ("Where do I
        # start?" reads much like "where I start work").
        keep = explicit is not None or (p >= model.threshold and not is_question(piece))
        (kept if keep else passed).append(said)
    return kept, passed


__all__ = ["Said", "model_fits", "weigh"]
