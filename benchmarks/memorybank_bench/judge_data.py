"""The judge's training and scoring sets, each from a named source, so that a model trained
on some sources is scored on others (docs/benchmarks.md reports the gap).

Sources:

* ``slots`` - generated facts about people (:mod:`memorybank_bench.judge_slots`), fact pairs
  and questions;
* ``phrases`` - the older generated pairs (:mod:`memorybank_bench.pair_gen`: synonyms, word
  order, voice, negation);
* ``sick`` - SICK 2014 (entailment: nothing new, a duplicate; contradiction: a change;
  neutral: another fact): scored only, never trained on (its licence is for evaluation);
* ``pairs_dev`` - the shared development fact pairs;
* ``lifecycle_dev`` - pairs read off the first development lifecycle set (a trap's first fact
  is another person's: distinct from the newer one);
* ``locomo`` - LoCoMo's development half: two observations about one speaker are two facts
  (distinct), and a question is relevant to the observations of its evidence turns; scored
  only, never trained on (CC BY-NC, for evaluation);
* ``profiles`` - imaginary users written for this project (``benchmarks/data/profiles_*.jsonl``:
  15 or so facts each, and the questions the user would ask of each): a question is relevant to
  its own fact and not to the user's other facts (the ones sharing its words first), and two
  facts of one user are distinct (the ones sharing words first: "takes the train" / "trains for
  a triathlon").

The shipped judge is trained on ``slots``, ``phrases``, ``pairs_dev`` and ``lifecycle_dev``
(written for this project, free to use); ``profiles`` too only when asked
(``train-judge --profiles``: measured and not shipped, docs/benchmarks.md). Never trained on:
SICK, LoCoMo, the chats (``conversations_dev.jsonl``,
``benchmarks/data/conversations_own.jsonl``), ``lifecycle_dev2.jsonl``,
``benchmarks/data/lifecycle_own.jsonl``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import Stemmer

from memorybank_bench.judge_slots import TrainingPair, slot_pairs, slot_questions
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


def profiles(seed: int, root: Path = OWN, negatives: int = 3) -> list[TrainingPair]:
    """Relevance and distinct pairs from the written profiles: each question with its own fact
    (relevant, said twice to weigh it as much as its negatives), with ``negatives`` other facts
    of the same user, the one sharing most word stems first and the rest at random (irrelevant),
    and with one fact of another user; each fact with the fact of its user sharing most stems
    with it and one at random (distinct)."""
    rng = random.Random(seed)
    users = [row for path in sorted(root.glob("profiles_*.jsonl")) for row in _jsonl(path)]
    out: list[TrainingPair] = []
    every = [f["fact"] for row in users for f in row["facts"]]
    for row in users:
        facts = [f["fact"] for f in row["facts"]]
        stems = [_stems(f) for f in facts]
        for i, item in enumerate(row["facts"]):
            others = [j for j in range(len(facts)) if j != i]
            if not others:
                continue
            closest = max(others, key=lambda j: (len(stems[i] & stems[j]), -j))
            out.append(TrainingPair(facts[closest], facts[i], "distinct", "profiles:close"))
            out.append(TrainingPair(facts[rng.choice(others)], facts[i], "distinct", "profiles"))
            for question in item["questions"]:
                asked = _stems(question)
                ranked = sorted(others, key=lambda j: (-len(asked & stems[j]), j))
                rest = ranked[1:]
                chosen = ranked[:1] + rng.sample(rest, min(negatives - 1, len(rest)))
                out += [TrainingPair(question, facts[i], "relevant", "profiles", "relevance")] * 2
                out += [
                    TrainingPair(question, facts[j], "irrelevant", "profiles", "relevance")
                    for j in chosen
                ]
                stranger = rng.choice(every)
                if stranger not in facts:
                    out.append(
                        TrainingPair(question, stranger, "irrelevant", "profiles", "relevance")
                    )
    return out


def _stems(text: str) -> set[str]:
    words = {w.strip(".,!?'\"()").lower() for w in text.split()}
    return {_STEMMER.stemWord(w) for w in words if len(w) > 2} - {"user", "user'"}


def phrases(seed: int) -> list[TrainingPair]:
    """The older generator's pairs (synonyms, word order, voice, negation, numbers)."""
    return [TrainingPair(p.a, p.b, p.label, f"phrases:{p.family}") for p in generate(seed, 60)]


#: The lifecycle sets the judge is scored on, never trained on.
SCORED = (SHARED / "facts" / "lifecycle_dev2.jsonl", OWN / "lifecycle_own.jsonl")


def scored_sentences(paths: Sequence[Path] = SCORED) -> set[str]:
    """Every fact and question of the scored lifecycle sets (those that exist)."""
    return {
        text
        for path in paths
        if path.is_file()
        for pair in lifecycle_pairs(path)
        for text in (pair.a, pair.b)
    }


def training_set(
    seed: int = 0, slots: int = 12000, questions: int = 3500, with_profiles: bool = False
) -> list[TrainingPair]:
    """Everything the shipped judge is trained on (and the written profiles when
    ``with_profiles``), shuffled (deterministic for ``seed``). A pair that says a sentence of
    a scored set is left out: the generators build common sentences ("User is 22 years old")
    that the scored sets happen to hold too."""
    generated = (
        slot_pairs(seed, slots)
        + slot_questions(seed + 1, questions)
        + phrases(seed)
        + pairs_dev()
        + lifecycle_pairs(SHARED / "facts" / "lifecycle_dev.jsonl")
        + (profiles(seed + 2) if with_profiles else [])
    )
    scored = scored_sentences()
    data = [pair for pair in generated if pair.a not in scored and pair.b not in scored]
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
    "profiles",
    "scored_sentences",
    "sick",
    "training_set",
]
