"""LoCoMo through ``remember``: how much of the evidence for questions about the user reaches
the block when the whole conversation is handed over without an LLM.

Each conversation is one user: speaker A is the user and speaker B the assistant; each
session is one ``remember_conversation`` call, its messages dated with the session's time
(an image's caption follows its turn's text). A question of categories 1–4 is about the user
when some of its evidence turns are A's; it is asked as the user would ask it (A's name turned
into "I", "A's" into "my"). An evidence turn of A's is in the block (``auto_recall``, 500
tokens) when a fact kept from that turn (``metadata.from_memory``), or the turn itself, is
there. The data's licence is for evaluation only: it is read from where it lies, never copied.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import memorybank
from memorybank.core.prompt import auto_recall
from memorybank.model import Caller
from memorybank.services.conversations import remember_conversation

_DIA_RE = re.compile(r"D(\d+):0*(\d+)")
_PREFIX = 80  # characters of a fact or turn looked for in the block


@dataclass
class LocomoConversationsResult:
    """Evidence of questions about the user found in the block."""

    conversations: int = 0
    questions: int = 0
    evidence: int = 0
    in_block: int = 0
    facts_stored: int = 0

    @property
    def share(self) -> float:
        """Evidence turns in the block, of all asked about."""
        return self.in_block / max(self.evidence, 1)


def _messages(session: list[dict[str, Any]], speaker: str, when: datetime) -> list[dict[str, Any]]:
    out = []
    for turn in session:
        caption = turn.get("blip_caption")
        text = turn["text"] + (f" [shares {caption}]" if caption else "")
        role = "user" if turn["speaker"] == speaker else "assistant"
        out.append(
            {
                "role": role,
                "content": text,
                "time": when.isoformat() + "Z",
                "metadata": {"dia_id": turn["dia_id"]},
            }
        )
    return out


def _ask(question: str, speaker: str) -> str:
    question = re.sub(rf"\b{re.escape(speaker)}['’]s\b", "my", question)
    return re.sub(rf"\b{re.escape(speaker)}\b", "I", question)


def _score(
    bank: memorybank.MemoryBank, user: str, sample: dict[str, Any]
) -> LocomoConversationsResult:
    conversation = sample["conversation"]
    speaker = conversation["speaker_a"]
    caller = Caller(user_id=user)
    said: dict[str, tuple[str, str]] = {}
    result = LocomoConversationsResult(conversations=1)
    number = 1
    while f"session_{number}" in conversation:
        session = conversation[f"session_{number}"]
        raw = conversation[f"session_{number}_date_time"]
        when = datetime.strptime(raw, "%I:%M %p on %d %B, %Y")
        said.update({t["dia_id"]: (t["speaker"], t["text"]) for t in session})
        kept = remember_conversation(bank, caller, _messages(session, speaker, when))
        result.facts_stored += len(kept.stored)
        number += 1
    turn_dia = {
        m.id: m.metadata.get("dia_id") for m in bank.list(user, limit=10_000, source="conversation")
    }
    from_turn: dict[str, list[str]] = {}
    for fact in bank.list(user, limit=10_000, source=["ai", "user", "import"]):
        dia = turn_dia.get(str(fact.metadata.get("from_memory")))
        if dia:
            from_turn.setdefault(dia, []).append(fact.content.lower())
    for qa in sample["qa"]:
        if qa.get("category") not in (1, 2, 3, 4):
            continue
        ids = [f"D{a}:{b}" for e in qa.get("evidence", []) for a, b in _DIA_RE.findall(e)]
        ids = [i for i in ids if i in said and said[i][0] == speaker]
        if not ids:
            continue
        block = auto_recall(bank, caller, _ask(qa["question"], speaker), 500).lower()
        result.questions += 1
        for dia in ids:
            texts = [*from_turn.get(dia, []), said[dia][1].lower()]
            result.evidence += 1
            result.in_block += any(t[:_PREFIX] in block for t in texts)
    return result


def run_locomo_conversations(
    data: Path | str, *, limit_conversations: int | None = None
) -> LocomoConversationsResult:
    """Score the conversations of a LoCoMo file (see the module docs) in one fresh bank."""
    samples = json.loads(Path(data).read_text(encoding="utf-8"))[:limit_conversations]
    total = LocomoConversationsResult()
    with tempfile.TemporaryDirectory(prefix="mb-conv-locomo-") as tmp:
        with memorybank.open(f"sqlite:///{Path(tmp) / 'bank.db'}") as bank:
            for number, sample in enumerate(samples):
                one = _score(bank, f"locomo{number}", sample)
                for key in ("conversations", "questions", "evidence", "in_block", "facts_stored"):
                    setattr(total, key, getattr(total, key) + getattr(one, key))
    return total


__all__ = ["LocomoConversationsResult", "run_locomo_conversations"]
