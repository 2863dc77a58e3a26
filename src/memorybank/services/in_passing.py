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

import numpy as np
import numpy.typing as npt

from memorybank.errors import ValidationError
from memorybank.model import Category
from memorybank.model.times import StoredTime
from memorybank.providers.embedders.base import Embedder, SpanEmbedder
from memorybank.rules.keep_model import feature_matrix, load_keep_model
from memorybank.rules.policy import infer_category, to_third_person
from memorybank.rules.said import (
    as_answer,
    as_fact,
    asks_to_remember,
    explicit_category,
    group_of,
    is_question,
    is_reaction,
    pieces,
    points_back,
    resolved,
    sentences,
    tentative,
    unresolved,
)
from memorybank.rules.third_person import has_verb

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank


Floats = npt.NDArray[np.float64]


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


def _span(text: str, piece: str) -> tuple[int, int] | None:
    """Where ``piece`` lies in ``text``: a piece is cut from its message, though an aside
    taken out of its middle ("…, funny enough, …") leaves only its ends to find."""
    at = text.find(piece)
    if at >= 0:
        return at, at + len(piece)
    head, tail = piece[:16], piece[-16:]
    start = text.find(head)
    end = text.find(tail, max(start, 0))
    return (start, end + len(tail)) if 0 <= start <= end else None


def cut(embedder: Embedder, texts: Sequence[str]) -> tuple[list[tuple[int, str]], Floats]:
    """The pieces of ``texts`` (:func:`memorybank.rules.said.pieces`) as (text index, piece),
    and a vector for each: read in its message by a :class:`SpanEmbedder` (one pass a
    message, whose vector the bank then stores without a second), else embedded alone. The
    learned model is trained on the same vectors (``memorybank bench train-extractor``)."""
    found = [(index, piece) for index, text in enumerate(texts) for piece in pieces(text)]
    vectors = np.zeros((len(found), embedder.dimension), dtype=np.float64)
    if not found:
        return found, vectors
    alone = list(range(len(found)))
    if isinstance(embedder, SpanEmbedder):
        spans = [_span(texts[index], piece) for index, piece in found]
        rows: list[list[int]] = [[] for _ in texts]
        for row, ((index, _), span) in enumerate(zip(found, spans, strict=True)):
            if span is not None:
                rows[index].append(row)
        asked = [i for i, chosen in enumerate(rows) if chosen]
        _, parts = embedder.embed_spans(
            [texts[i] for i in asked], [[spans[row] or (0, 0) for row in rows[i]] for i in asked]
        )
        for i, part in zip(asked, parts, strict=True):
            vectors[rows[i]] = part
        alone = [row for row, span in enumerate(spans) if span is None]
    if alone:
        vectors[alone] = embedder.embed([found[row][1] for row in alone])
    return found, vectors


def weigh(bank: MemoryBank, turns: Sequence[Turn]) -> tuple[list[Said], list[Said]]:
    """The pieces of the user's messages worth keeping, and those passed over, in the order
    said. Call only when :func:`model_fits`."""
    said = [(index, turn) for index, turn in enumerate(turns) if turn.role == "user"]
    found, vectors = cut(bank.embedder, [turn.content for _, turn in said])
    if not found:
        return [], []
    model = load_keep_model()
    texts = [piece for _, piece in found]
    chance = model.probabilities(feature_matrix(vectors, texts))
    kept: list[Said] = []
    passed: list[Said] = []
    for number, ((at, piece), p) in enumerate(zip(found, chance, strict=True)):
        index, turn = said[at]
        messages = [t.content for _, t in said[: at + 1]]
        offset = turn.content.find(piece)
        before = [*messages[:-1], turn.content[: max(offset, 0)]]
        opens = number == 0 or found[number - 1][0] != at
        asked = _asked(turns, index) if opens and not has_verb(piece) else None
        if asked is not None:
            fact = as_answer(asked, piece, group_of(messages))
        else:
            fact = as_fact(piece, group_of(messages), turn.time, before)
        explicit = explicit_category(piece)
        category = explicit or infer_category(fact)
        said_here = Said(
            index, piece, _as_asked(piece, fact, explicit), category, round(float(p), 3)
        )
        worth = p >= model.threshold and _stands_alone(piece, before, asked is not None)
        (kept if asks_to_remember(piece) or worth else passed).append(said_here)
    return kept, passed


def _stands_alone(piece: str, before: Sequence[str], answers: bool) -> bool:
    """Whether a piece the model finds lasting reads as a fact on its own. A question never
    does, however the model reads its words ("Where do I start?" reads much like "where I
    start work"), nor a reaction ("makes sense"), nor what means little out of its chat ("I
    have a stall there", a "she" no one said before), nor what only may be ("we could
    practise duets"), nor a fragment with no verb ("not
    yet", "September 1") unless it answers the question just asked (``answers``): then the
    fact quotes the question."""
    return (
        not is_question(piece)
        and not is_reaction(piece)
        and (answers or has_verb(piece))
        and not points_back(piece)
        and not tentative(piece)
        and not unresolved(resolved(piece, before))
    )


def _asked(turns: Sequence[Turn], index: int) -> str | None:
    """The question the assistant asked just before message ``index``, if it asked one."""
    if index == 0 or turns[index - 1].role != "assistant":
        return None
    questions = [s for s in sentences(turns[index - 1].content) if s.endswith("?")]
    return questions[-1] if questions else None


__all__ = ["Said", "cut", "model_fits", "weigh"]
