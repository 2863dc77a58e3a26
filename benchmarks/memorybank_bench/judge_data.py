"""The judge's training and scoring sets, each from a named source, so that a model trained
on some sources is scored on others (docs/benchmarks.md reports the gap).

Trained on (written for this project, free to use):

* ``slots`` - generated facts about people (:mod:`memorybank_bench.judge_slots`);
* ``phrases`` - the older generated pairs (:mod:`memorybank_bench.pair_gen`: synonyms, word
  order, voice, negation);
* ``variety`` - changes said with verbs of their own, paraphrases sharing few words, two facts
  of one kind both true, and their near misses (:mod:`memorybank_bench.judge_variety`);
* ``profiles`` - imaginary users written for this project (``benchmarks/data/profiles_*.jsonl``):
  two facts of one user are distinct; one with another number, or ended, an update.

Never trained on: ``pairs_dev`` and ``lifecycle_dev`` (the shared development pairs and first
lifecycle set: they choose the thresholds, :data:`CALIBRATION`); ``sick`` (SICK 2014:
entailment a duplicate, contradiction a change, neutral another fact; its licence is for
evaluation); ``locomo`` (LoCoMo's development half, CC BY-NC); the scored lifecycle sets
(``lifecycle_dev2.jsonl``, ``benchmarks/data/lifecycle_own.jsonl``), the chats and the
newcomer probes: a generated pair that says one of their sentences is left out
(:func:`unseen_sentences`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import Stemmer

from memorybank_bench.judge_slots import TrainingPair, slot_pairs
from memorybank_bench.judge_variety import profile_pairs, variety_pairs
from memorybank_bench.pair_gen import generate

_STEMMER = Stemmer.Stemmer("english")

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
#: The project's own benchmark data (``benchmarks/data``).
OWN = Path(__file__).resolve().parents[1] / "data"
_SICK_LABELS = {"ENTAILMENT": "duplicate", "CONTRADICTION": "update", "NEUTRAL": "distinct"}


def sick(name: str = "SICK_train.txt", root: Path = SHARED) -> list[TrainingPair]:
    """SICK pairs as fact pairs (save sentence A, then B)."""
    path = root / "sick" / name
    out: list[TrainingPair] = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 5 and cols[4] in _SICK_LABELS:
            out.append(TrainingPair(cols[1], cols[2], _SICK_LABELS[cols[4]], f"sick:{name}"))
    return out


def pairs_dev(root: Path = SHARED) -> list[TrainingPair]:
    """The shared development fact pairs."""
    rows = _jsonl(root / "facts" / "pairs_dev.jsonl")
    return [TrainingPair(r["a"], r["b"], r["label"], "pairs_dev") for r in rows]


def lifecycle_pairs(path: Path) -> list[TrainingPair]:
    """Pairs read off a lifecycle scenario file: an update's older and newer fact (a trap's
    first fact, about someone else, is distinct from both), a distinct scenario's facts, a
    paraphrase's facts (duplicates)."""
    out: list[TrainingPair] = []
    for row in _jsonl(path):
        saves = row["saves"]
        kind = row["kind"]
        if kind == "update":
            out.append(TrainingPair(saves[-2], saves[-1], "update", path.name))
            if len(saves) == 3:
                out.append(TrainingPair(saves[0], saves[-1], "distinct", path.name))
                out.append(TrainingPair(saves[0], saves[1], "distinct", path.name))
        else:
            label = "distinct" if kind == "distinct" else "duplicate"
            out += [
                TrainingPair(a, b, label, path.name) for a, b in zip(saves, saves[1:], strict=False)
            ]
        question = row.get("question")
        if question and kind != "paraphrase":
            out.append(TrainingPair(question, saves[-1], "relevant", path.name, "relevance"))
    return out


def _observations(sample: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    for session in sample["observation"].values():
        for speaker, items in session.items():
            for text, evidence in items:
                for turn in evidence if isinstance(evidence, list) else [evidence]:
                    yield speaker, str(text), str(turn)


def locomo(seed: int, root: Path = SHARED) -> list[TrainingPair]:
    """Distinct observation pairs sharing a word, and (question, evidence observation)
    relevance pairs with an irrelevant observation of the same conversation for each."""
    rng = random.Random(seed)
    samples = json.loads((root / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
    out: list[TrainingPair] = []
    for sample in samples:
        observations = list(_observations(sample))
        by_turn: dict[str, list[str]] = {}
        by_speaker: dict[str, list[str]] = {}
        for speaker, text, turn in observations:
            by_turn.setdefault(turn, []).append(text)
            by_speaker.setdefault(speaker, []).append(text)
        for texts in by_speaker.values():
            unique = sorted(set(texts))
            for _ in range(min(200, len(unique))):
                a, b = rng.sample(unique, 2)
                if _shares_word(a, b):
                    out.append(TrainingPair(a, b, "distinct", "locomo:observations"))
        every = sorted({text for _, text, _ in observations})
        for qa in sample["qa"]:
            evidence = {t for turn in qa.get("evidence", []) for t in by_turn.get(str(turn), [])}
            if not evidence:
                continue
            question = str(qa["question"])
            for text in sorted(evidence)[:2]:
                out.append(TrainingPair(question, text, "relevant", "locomo:qa", "relevance"))
            other = rng.choice(every)
            if other not in evidence:
                out.append(TrainingPair(question, other, "irrelevant", "locomo:qa", "relevance"))
    return out


def _shares_word(a: str, b: str) -> bool:
    words = {w.lower().strip(".,!?'") for w in a.split() if len(w) > 4}
    return bool(words & {w.lower().strip(".,!?'") for w in b.split() if len(w) > 4})


def phrases(seed: int) -> list[TrainingPair]:
    """The older generator's pairs (synonyms, word order, voice, negation, numbers)."""
    return [TrainingPair(p.a, p.b, p.label, f"phrases:{p.family}") for p in generate(seed, 60)]


#: The lifecycle sets the judge is scored on, never trained on.
SCORED = (SHARED / "facts" / "lifecycle_dev2.jsonl", OWN / "lifecycle_own.jsonl")
#: The sets that choose the judge's thresholds (``THRESHOLDS.duplicate``, ``sure``): never
#: trained on either, so that they are chosen where the model has not been.
CALIBRATION = (SHARED / "facts" / "pairs_dev.jsonl", SHARED / "facts" / "lifecycle_dev.jsonl")
#: The chats the fact path is scored on (``bench conversations``).
CHATS = (SHARED / "facts" / "conversations_dev.jsonl", OWN / "conversations_own.jsonl")
#: The newcomer cases of issue 45, which the product tests check (``tests/core``).
PROBES = (
    "User owns a car",
    "User sold their car",
    "User is learning Spanish now",
    "User is learning Portuguese",
    "User moved to Lisbon",
    "User's work phone number is 555-0777",
    "User's phone number is 555-0142",
    "User is saving up for a gaming laptop",
    "User is learning to play chess online",
    "User takes the train to work",
    "User likes hiking in the mountains",
    "User takes a boda boda to the market every morning",
    "User walks to the market these days",
)


def scored_sentences(paths: Sequence[Path] = SCORED) -> set[str]:
    """Every fact and question of the scored lifecycle sets (those that exist)."""
    return {
        text
        for path in paths
        if path.is_file()
        for pair in lifecycle_pairs(path)
        for text in (pair.a, pair.b)
    }


def unseen_sentences() -> set[str]:
    """Every sentence a training pair may not say: the scored and calibration sets', the
    chats' (messages and facts) and the newcomer probes."""
    out = scored_sentences((*SCORED, CALIBRATION[1])) | set(PROBES)
    if CALIBRATION[0].is_file():
        out |= {text for pair in pairs_dev() for text in (pair.a, pair.b)}
    for path in CHATS:
        if path.is_file():
            for row in _jsonl(path):
                out |= {m["content"] for m in row.get("messages", [])}
                out |= {f["fact"] for f in row.get("facts", [])}
    return {" ".join(text.lower().split()) for text in out}


def training_set(seed: int = 0, slots: int = 3000, variety: int = 4500) -> list[TrainingPair]:
    """Everything the shipped judge is trained on, shuffled (deterministic for ``seed``): the
    slots, the older phrase generator, the variety families and the written profiles. A pair
    that says a sentence of a scored or calibration set, a chat or a probe is left out (the
    generators write common sentences, "User is 22 years old", that those sets hold too)."""
    generated = (
        slot_pairs(seed, slots)
        + phrases(seed)
        + variety_pairs(seed + 3, variety)
        + profile_pairs(seed + 2, OWN)
    )
    unseen = unseen_sentences()
    data = [
        pair
        for pair in generated
        if " ".join(pair.a.lower().split()) not in unseen
        and " ".join(pair.b.lower().split()) not in unseen
    ]
    rng = random.Random(seed)
    rng.shuffle(data)
    return data


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


__all__ = [
    "OWN",
    "SCORED",
    "SHARED",
    "lifecycle_pairs",
    "locomo",
    "pairs_dev",
    "phrases",
    "scored_sentences",
    "sick",
    "training_set",
    "unseen_sentences",
    "CALIBRATION",
    "CHATS",
    "PROBES",
]
