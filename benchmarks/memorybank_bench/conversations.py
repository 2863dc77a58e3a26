"""Conversation memory without an LLM: chats in which the user states facts in passing.

``memorybank bench conversations FILE`` remembers each chat of a JSONL file
(``{"messages": [...], "facts": [{"fact", "question", "expect"}]}``) whole, for a fresh user
who already has the lifecycle benchmark's background facts, as a host hands a conversation
over (``remember_conversation``, no LLM). Then, per fact:

* **kept**: a stored fact (not a raw turn) holds the expected words;
* **in block**: the block for the fact's question (``auto_recall``, 500 tokens) holds them;
* **first right**: the first line of the block's "Relevant To This Message" holds them.

Also counted, over every question: relevant-section lines that are the assistant's words (and
of those, its questions), and facts invented: a fact stored from the chat whose words no user
message supports (under :data:`SUPPORT` of its content words found in the user's messages).
``remember`` of a 16-message chat is timed beside storing the same 16 turns alone, in the same
run: the p50 of each and their ratio.

Precision, with ``labels`` (a JSON-lines file of ``{"chat", "fact", "label"}``: a person's word
on each fact kept from chat number ``chat``, :data:`LABELS`): the share of kept facts that are
junk (no lasting fact, or not readable on its own) and the count of those whose subject is
wrong ("she" named as someone she is not, the user's words given to another). A kept fact
no label names is counted as unlabelled and listed, ready to be labelled (the labels follow
the words stored, so a change to the extraction shows what it newly keeps).
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import memorybank
from memorybank.core.prompt import auto_recall
from memorybank.model import Caller, Category, Ring, SaveInput, Source
from memorybank.services.conversations import remember_conversation
from memorybank_bench.lifecycle import BACKGROUND

#: Share of a stored fact's content words that the user's messages must hold.
SUPPORT = 0.75
#: Timed runs of remember for the p50.
RUNS = 9
#: What a person may say of a kept fact.
LABELS = ("useful", "junk", "wrong_subject")
_WORD_RE = re.compile(r"[\w£$€'’-]+")
_QUOTED_RE = re.compile(r'"[^"]*"')
# Words the rephrasing itself adds: the user named, "we" named, the day it was said.
_OWN_WORDS = frozenset(
    """user user's users their they them themselves and others said mentioned that on is has
    asked
    was were are have the a an in at of to january february march april may june july august
    september october november december""".split()
)


def relevant_lines(block: str) -> list[str]:
    """The lines of the block's "Relevant To This Message" section."""
    out, inside = [], False
    for line in block.splitlines():
        if line.startswith("## "):
            inside = line.strip().lower() == "## relevant to this message"
            continue
        if inside and line.strip():
            out.append(line.strip())
    return out


def supported(fact: str, user_text: str) -> bool:
    """Whether the user's words hold most of ``fact``'s content words (see :data:`SUPPORT`).
    A question the fact quotes (``User, asked "…", said: …``) is the assistant's, as it says,
    and no claim: only the rest is read."""
    claim = _QUOTED_RE.sub(" ", fact.lower())
    words = [w for w in _WORD_RE.findall(claim) if w not in _OWN_WORDS and not w.isdigit()]
    said = set(_WORD_RE.findall(user_text.lower()))
    if not words:
        return True
    return sum(_said(w, said) for w in words) / len(words) >= SUPPORT


def _said(word: str, said: set[str]) -> bool:
    """Whether ``word`` is in ``said``, as it is or as the user's person had it ("relies" is
    "rely", "teaches" "teach")."""
    forms = {word, word.rstrip("s"), word.removesuffix("es"), word.removesuffix("ies") + "y"}
    return bool(forms & said)


@dataclass
class ConversationsReport:
    """What the chats of one file came to."""

    data: str
    facts: int = 0
    kept: int = 0
    in_block: int = 0
    first_right: int = 0
    assistant_lines: int = 0
    assistant_questions: int = 0
    stored: int = 0
    invented: list[str] = field(default_factory=list)
    remember_ms: float = 0.0
    turns_only_ms: float = 0.0
    misses: list[str] = field(default_factory=list)
    labelled: int = 0
    junk: int = 0
    wrong_subject: int = 0
    unlabelled: list[dict[str, Any]] = field(default_factory=list)

    def table(self) -> Table:
        """The report as a table."""
        table = Table(title=f"Conversations without an LLM: {self.data}")
        table.add_column("measure")
        table.add_column("value", justify="right")
        n = max(self.facts, 1)
        table.add_row("facts kept", f"{self.kept}/{self.facts} ({self.kept / n:.2f})")
        table.add_row(
            "facts in the block for their question",
            f"{self.in_block}/{self.facts} ({self.in_block / n:.2f})",
        )
        table.add_row(
            "first relevant line right",
            f"{self.first_right}/{self.facts} ({self.first_right / n:.2f})",
        )
        table.add_row("assistant lines in relevant sections", str(self.assistant_lines))
        table.add_row("  of which questions", str(self.assistant_questions))
        table.add_row("facts invented", f"{len(self.invented)} of {self.stored} stored")
        if self.labelled or self.unlabelled:
            share = self.junk / max(self.labelled, 1)
            table.add_row(
                "kept facts labelled", f"{self.labelled} ({len(self.unlabelled)} unlabelled)"
            )
            table.add_row("  junk", f"{self.junk} ({share:.1%})")
            table.add_row("  wrong subject", str(self.wrong_subject))
        table.add_row("remember p50, 16 messages", f"{self.remember_ms:.1f} ms")
        ratio = self.remember_ms / max(self.turns_only_ms, 1e-9)
        table.add_row("  storing the 16 turns alone", f"{self.turns_only_ms:.1f} ms ({ratio:.2f}x)")
        return table

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return dict(self.__dict__)


def read_labels(path: Path | str) -> dict[tuple[int, str], str]:
    """``(chat number, fact) -> label`` from a labels file (see the module docs)."""
    labels: dict[tuple[int, str], str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        entry = json.loads(line)
        if entry.get("label") not in LABELS:
            raise ValueError(f"{path}:{number}: label must be one of {', '.join(LABELS)}")
        labels[(int(entry["chat"]), str(entry["fact"]))] = entry["label"]
    return labels


def _judge_kept(
    number: int, kept: list[str], labels: dict[tuple[int, str], str], report: ConversationsReport
) -> None:
    for fact in kept:
        label = labels.get((number, fact))
        if label is None:
            report.unlabelled.append({"chat": number, "fact": fact, "label": None})
            continue
        report.labelled += 1
        report.junk += label == "junk"
        report.wrong_subject += label == "wrong_subject"


def _score_chat(
    bank: memorybank.MemoryBank,
    number: int,
    chat: dict[str, Any],
    report: ConversationsReport,
    labels: dict[tuple[int, str], str] | None = None,
) -> None:
    user = f"chat{number}"
    caller = Caller(user_id=user)
    for fact in BACKGROUND:
        bank.save(user, fact)
    result = remember_conversation(bank, caller, chat["messages"])
    facts = [
        m.content.lower() for m in bank.list(user, limit=1000, source=["ai", "user", "import"])
    ]
    user_text = " ".join(m["content"] for m in chat["messages"] if m["role"] == "user")
    assistant = [m["content"].lower() for m in chat["messages"] if m["role"] == "assistant"]
    report.stored += len(result.stored)
    if labels is not None:
        _judge_kept(number, [m.content for m in result.stored], labels, report)
    report.invented += [m.content for m in result.stored if not supported(m.content, user_text)]
    for fact in chat["facts"]:
        expect = fact["expect"].lower()
        report.facts += 1
        kept = any(expect in c for c in facts)
        block = auto_recall(bank, caller, fact["question"], 500).lower()
        relevant = relevant_lines(block)
        theirs = [line for line in relevant if any(line.lstrip("- ")[:60] in s for s in assistant)]
        report.kept += kept
        report.in_block += expect in block
        report.first_right += bool(relevant) and expect in relevant[0]
        report.assistant_lines += len(theirs)
        report.assistant_questions += sum(line.rstrip().endswith("?") for line in theirs)
        if expect not in block:
            report.misses.append(f"kept={int(kept)} {fact['question']} -> {fact['expect']}")


def _sixteen(chats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages = [m for chat in chats for m in chat["messages"]]
    return (messages * (16 // max(len(messages), 1) + 1))[:16]


def _time_remember(
    bank: memorybank.MemoryBank, messages: list[dict[str, Any]]
) -> tuple[float, float]:
    """p50 ms of remember and of storing the turns alone, interleaved (fresh users)."""
    remembered, stored = [], []
    for run in range(RUNS):
        started = time.perf_counter()
        remember_conversation(bank, Caller(user_id=f"timed-r{run}"), messages)
        remembered.append(time.perf_counter() - started)
        items = [
            SaveInput(
                content=m["content"],
                category=Category.CONTEXT,
                ring=Ring.EPISODIC,
                source=Source.CONVERSATION,
                metadata={"role": m["role"]},
            )
            for m in messages
        ]
        started = time.perf_counter()
        bank.save_many(f"timed-s{run}", items)
        stored.append(time.perf_counter() - started)
    return statistics.median(remembered) * 1000, statistics.median(stored) * 1000


def run_conversations(
    data: Path | str, *, labels: Path | str | None = None, console: Console | None = None
) -> ConversationsReport:
    """Score every chat of ``data`` in one fresh bank on a temporary SQLite file (with
    ``labels``, the kept facts' precision too)."""
    known = read_labels(labels) if labels is not None else None
    console = console or Console(stderr=True)
    lines = Path(data).read_text(encoding="utf-8").splitlines()
    chats = [json.loads(line) for line in lines if line.strip()]
    report = ConversationsReport(str(data))
    with tempfile.TemporaryDirectory(prefix="mb-conv-") as tmp:
        with memorybank.open(f"sqlite:///{Path(tmp) / 'bank.db'}") as bank:
            with console.status("remembering chats"):
                for number, chat in enumerate(chats):
                    _score_chat(bank, number, chat, report, known)
                report.remember_ms, report.turns_only_ms = _time_remember(bank, _sixteen(chats))
    return report


__all__ = [
    "LABELS",
    "ConversationsReport",
    "read_labels",
    "relevant_lines",
    "run_conversations",
    "supported",
]
