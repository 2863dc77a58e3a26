"""A fact's life as an assistant lives it: saved, changed, asked about, through the default
tools. The same protocol as the project's referee scorer (``shared/tools/fact_lifecycle.py``),
scored the same way, with a report like the other benchmarks'.

Each scenario (JSON lines, as ``lifecycle_dev.jsonl``: ``kind``, ``saves``, ``question``,
``expect``, ``stale`` for updates, ``max_stored`` for paraphrases) is one fresh user with 30
unrelated background facts (``bank.save``), then the scenario's facts saved in order through
the default profile's ``remember`` exactly as a model calls it (no category, no id), then the
user's question. All scenarios share one bank on a temporary SQLite file.

* update: the prompt block for the question (``auto_recall``, 500 tokens) holds the newest
  value, and no line of it states the stale value without the new one;
* distinct: the block holds every value;
* paraphrase: at most ``max_stored`` stored facts carry the value, and the block holds it;
* recall top-1 (update and paraphrase): the ``recall`` tool's first fact holds the value;
* replacement duplicates: each update scenario again for a second user, where the model
  follows up: it replaces every fact ``remember`` reported as a conflict with the new text
  (``remember`` with that id); stored facts carrying the new value beyond one are counted.

``memorybank bench lifecycle ../shared/data/facts/lifecycle_dev.jsonl [--json life.json]``
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

import memorybank
from memorybank import tools
from memorybank.core.bank import MemoryBank
from memorybank.core.prompt import auto_recall
from memorybank.errors import ValidationError
from memorybank.model import Caller

#: The scenario kinds, in report order.
KINDS: tuple[str, ...] = ("update", "distinct", "paraphrase")
#: Token budget of the prompt block.
BUDGET = 500
#: The referee's goals: share passed per kind, recall top-1, replacement duplicates.
GOALS: dict[str, float] = {"update": 0.9, "distinct": 1.0, "paraphrase": 0.8, "top1": 0.9}

#: 30 unrelated facts every scenario's user has first (the referee's list, word for word).
BACKGROUND: tuple[str, ...] = (
    "User collects vintage postage stamps",
    "User's favourite author is Ursula K. Le Guin",
    "User is a volunteer at the local food bank",
    "User enjoys solving cryptic crosswords",
    "User prefers window seats on flights",
    "User is colour blind (red-green)",
    "User's partner is named Alex",
    "User listens to jazz while working",
    "User is writing a novel about lighthouse keepers",
    "User dislikes long email threads",
    "User prefers bullet-point summaries",
    "User keeps a vegetable garden with tomatoes and beans",
    "User is training to become a scuba diver",
    "User's best friend is named Dana",
    "User likes board games, especially strategy ones",
    "User bakes sourdough bread on weekends",
    "User takes the train to work",
    "User is afraid of heights",
    "User studied history at university",
    "User supports a football club from their hometown",
    "User prefers paper notebooks for planning",
    "User is learning to play chess online",
    "User wants reminders to take breaks while coding",
    "User's grandmother taught them to knit",
    "User likes hiking in the mountains",
    "User reads science fiction before bed",
    "User prefers metric units",
    "User's team does code reviews in pairs",
    "User likes spicy food",
    "User keeps a journal every evening",
)


@dataclass(frozen=True)
class Scenario:
    """One line of a scenario file."""

    kind: str
    saves: tuple[str, ...]
    question: str
    expect: tuple[str, ...]
    stale: str | None = None
    max_stored: int | None = None


def load_scenarios(path: Path | str) -> list[Scenario]:
    """The scenarios of a JSON-lines file (blank lines skipped)."""
    scenarios: list[Scenario] = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            kind = str(raw["kind"])
            expect = raw["expect"]
            scenario = Scenario(
                kind=kind,
                saves=tuple(str(s) for s in raw["saves"]),
                question=str(raw["question"]),
                expect=tuple(str(e) for e in (expect if isinstance(expect, list) else [expect])),
                stale=str(raw["stale"]) if kind == "update" else None,
                max_stored=int(raw["max_stored"]) if kind == "paraphrase" else None,
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValidationError(f"{path}:{number}: not a scenario: {exc!r}") from exc
        if kind not in KINDS:
            raise ValidationError(f"{path}:{number}: kind must be one of {', '.join(KINDS)}")
        scenarios.append(scenario)
    return scenarios


@dataclass(frozen=True)
class Outcome:
    """One scenario's result."""

    scenario: Scenario
    passed: bool
    top1: bool | None  # None for distinct scenarios
    duplicates: int  # replacement duplicates (update scenarios; 0 otherwise)
    block: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "kind": self.scenario.kind,
            "saves": list(self.scenario.saves),
            "question": self.scenario.question,
            "expect": list(self.scenario.expect),
            "passed": self.passed,
            "top1": self.top1,
            "replacement_duplicates": self.duplicates,
        }


def _remember(bank: MemoryBank, caller: Caller, fact: str, fact_id: str | None = None) -> Any:
    args = {"fact": fact} | ({"id": fact_id} if fact_id else {})
    return tools.call(bank, tools.profile("default"), "remember", json.dumps(args), caller)


def conflict_ids(answer: Any) -> list[str]:
    """The ids of the facts a ``remember`` answer reports as conflicts.

    >>> conflict_ids({"conflicts": [{"id": "m1"}, {"memory_id": "m2"}, "x"]})
    ['m1', 'm2']
    """
    found: list[str] = []
    conflicts = answer.get("conflicts") if isinstance(answer, dict) else None
    for conflict in conflicts or []:
        if isinstance(conflict, dict):
            value = conflict.get("id") or conflict.get("memory_id")
            if value:
                found.append(str(value))
    return found


def stored_with(bank: MemoryBank, user_id: str, needle: str) -> int:
    """How many of the user's stored facts (the first 500 listed) contain ``needle``."""
    return sum(needle.lower() in m.content.lower() for m in bank.list(user_id, limit=500))


#: How the referee recognises a line that marks its value as earlier (its protocol).
EARLIER_MARKS = ("earlier", "previously", "formerly", "used to", "replaced", "until ", "no longer")


def _stale_as_current(line: str, lines: list[str], old: str, new: str) -> bool:
    """Whether ``line`` states the stale value as current: it holds the old value and not the
    new one, and is not a line marked as earlier placed after the newest value's first line.

    >>> lines = ["- user lives in b", "  - earlier, may be outdated: user lives in a"]
    >>> [_stale_as_current(line, lines, "in a", "in b") for line in lines]
    [False, False]
    >>> _stale_as_current("- user lives in a", ["- user lives in a"], "in a", "in b")
    True
    """
    if old not in line or new in line:
        return False
    first_new = next((i for i, text in enumerate(lines) if new in text), len(lines))
    marked = any(mark in line for mark in EARLIER_MARKS)
    return not (marked and lines.index(line) > first_new)


def run_scenario(
    bank: MemoryBank, number: int, scenario: Scenario, follow: bool
) -> tuple[bool, bool | None, int, str]:
    """One scenario for a fresh user: passed, recall top-1, replacement duplicates, block."""
    user = f"u{number}{'f' if follow else ''}"
    caller = Caller(user_id=user)
    for fact in BACKGROUND:
        bank.save(user, fact)
    answers = [_remember(bank, caller, fact) for fact in scenario.saves]
    duplicates = 0
    if follow and scenario.kind == "update":
        for conflict in conflict_ids(answers[-1]):
            _remember(bank, caller, scenario.saves[-1], conflict)
        duplicates = max(0, stored_with(bank, user, scenario.expect[0]) - 1)
    block = auto_recall(bank, caller, scenario.question, BUDGET).lower()
    lines = block.splitlines()
    top = tools.call(
        bank, tools.profile("default"), "recall", json.dumps({"query": scenario.question}), caller
    )
    facts = top.get("facts") if isinstance(top, dict) else None
    first = str(((facts or [{}])[0]).get("fact", "")).lower()
    expect = [e.lower() for e in scenario.expect]
    top1 = any(e in first for e in expect) if scenario.kind != "distinct" else None
    if scenario.kind == "update":
        new, old = expect[0], (scenario.stale or "").lower()
        passed = new in block and not any(
            _stale_as_current(line, lines, old, new) for line in lines
        )
    elif scenario.kind == "distinct":
        passed = all(e in block for e in expect)
    else:
        limit = scenario.max_stored if scenario.max_stored is not None else 0
        passed = expect[0] in block and stored_with(bank, user, scenario.expect[0]) <= limit
    return passed, top1, duplicates, block


@dataclass
class LifecycleReport:
    """Scenarios passed per kind, recall top-1, replacement duplicates, and the failures."""

    data: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def passed(self, kind: str) -> tuple[int, int]:
        """(passed, total) for one kind."""
        mine = [o for o in self.outcomes if o.scenario.kind == kind]
        return sum(o.passed for o in mine), len(mine)

    @property
    def top1(self) -> tuple[int, int]:
        """(hits, total) of recall's first fact holding the value."""
        judged = [o.top1 for o in self.outcomes if o.top1 is not None]
        return sum(judged), len(judged)

    @property
    def duplicates(self) -> int:
        """Replacement duplicates over every update scenario."""
        return sum(o.duplicates for o in self.outcomes)

    @property
    def failures(self) -> list[Outcome]:
        """The scenarios that failed, in file order."""
        return [o for o in self.outcomes if not o.passed]

    def table(self) -> Table:
        """One row per kind, then recall top-1 and replacement duplicates, beside the goals."""
        table = Table(
            title=f"fact lifecycle through the default tools ({len(self.outcomes)} scenarios)",
            caption=f"block = auto_recall at {BUDGET} tokens, after {len(BACKGROUND)} "
            "background facts per user",
        )
        for column in ("measure", "result", "share", "goal"):
            table.add_column(column, justify="left" if column == "measure" else "right")
        for kind in KINDS:
            ok, total = self.passed(kind)
            goal = "all" if GOALS[kind] == 1.0 else f"≥ {GOALS[kind]:.1f}"
            table.add_row(kind, f"{ok}/{total}", _share(ok, total), goal)
        hits, total = self.top1
        table.add_row("recall top-1", f"{hits}/{total}", _share(hits, total), f"≥ {GOALS['top1']}")
        table.add_row("replacement duplicates", str(self.duplicates), "", "0")
        return table

    def failure_notes(self) -> list[Text]:
        """One line per failing scenario."""
        return [
            Text(f"FAIL {o.scenario.kind} {list(o.scenario.saves)} -> {o.scenario.question}")
            for o in self.failures
        ]

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form of the whole report."""
        hits, total = self.top1
        return {
            "data": self.data,
            "scenarios": len(self.outcomes),
            "kinds": {
                kind: dict(zip(("passed", "total"), self.passed(kind), strict=True))
                for kind in KINDS
            },
            "top1": {"hits": hits, "total": total},
            "replacement_duplicates": self.duplicates,
            "failures": [o.as_dict() for o in self.failures],
            "outcomes": [o.as_dict() for o in self.outcomes],
            "seconds": self.seconds,
        }


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "–"


def run_lifecycle(data: Path | str, *, console: Console | None = None) -> LifecycleReport:
    """Run every scenario of ``data`` in one fresh bank on a temporary SQLite file."""
    started = time.perf_counter()
    console = console or Console(stderr=True)
    scenarios = load_scenarios(data)
    report = LifecycleReport(str(data))
    with tempfile.TemporaryDirectory(prefix="mb-life-") as tmp:
        with memorybank.open(f"sqlite:///{Path(tmp) / 'bank.db'}") as bank:
            with console.status("running scenarios"):
                for number, scenario in enumerate(scenarios):
                    passed, top1, _, block = run_scenario(bank, number, scenario, follow=False)
                    duplicates = 0
                    if scenario.kind == "update":
                        duplicates = run_scenario(bank, number, scenario, follow=True)[2]
                    report.outcomes.append(Outcome(scenario, passed, top1, duplicates, block))
    report.seconds = time.perf_counter() - started
    return report


__all__ = [
    "BACKGROUND",
    "KINDS",
    "LifecycleReport",
    "Outcome",
    "Scenario",
    "conflict_ids",
    "load_scenarios",
    "run_lifecycle",
    "run_scenario",
    "stored_with",
]
