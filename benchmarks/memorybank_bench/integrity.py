"""Memory integrity benchmark: are real duplicates caught, and is no new information lost?

Two data sets, read through the public API only (:func:`memorybank.open`, ``save``):

* **fact pairs** (``pairs_dev.jsonl``: ``{"a", "b", "label"}`` with labels ``duplicate``,
  ``update`` and ``distinct``): for a fresh user, save ``a``, then ``b``, and read the second
  :class:`~memorybank.SaveResult`: ``duplicate`` (b refused) and ``conflicts`` (a surfaced as
  a memory b may update or contradict);
* **SICK** (tab-separated ``pair_ID sentence_A sentence_B relatedness_score
  entailment_judgment``): the same, sentence A then sentence B. CONTRADICTION and NEUTRAL
  pairs carry different information, so refusing B loses it; ENTAILMENT with relatedness
  ≥ 4.8 is a near-paraphrase, which should be refused as a duplicate.

SICK sentences ("A man is playing a guitar") have no first person, so the third-person rule
stores them as written; they are saved as AI facts (the default source, which is checked for
duplicates) in the ``context`` category. A sentence the policy refuses (too short, say) is
counted as skipped, with its pair.

>>> report = run_integrity(Path("pairs_dev.jsonl"), Path("SICK_trial.txt"))  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import json
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import memorybank
from memorybank.core.bank import MemoryBank
from memorybank.errors import ConfigurationError, ValidationError
from memorybank.providers.judges.local import LocalJudge

#: Relatedness (1–5) from which a SICK ENTAILMENT pair counts as a near-paraphrase.
PARAPHRASE_RELATEDNESS = 4.8
PAIR_LABELS = ("duplicate", "update", "distinct")


@dataclass(frozen=True)
class Goal:
    """One figure of the report and its goal: ``value <= limit`` or ``value >= limit``."""

    name: str
    value: float
    limit: float
    at_most: bool
    count: str  # "caught / total", for people reading the table

    @property
    def met(self) -> bool:
        """Whether the figure meets its goal."""
        return self.value <= self.limit if self.at_most else self.value >= self.limit

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        goal = f"{'≤' if self.at_most else '≥'} {self.limit:g}"
        return {
            "name": self.name,
            "value": self.value,
            "count": self.count,
            "goal": goal,
            "met": self.met,
        }


@dataclass
class Tally:
    """Outcomes of one group of pairs: how many, refused as duplicates, surfaced as conflicts."""

    total: int = 0
    refused: int = 0
    restated: int = 0  # a took b's wording (a probable duplicate): stored once
    surfaced: int = 0  # surfaced as conflicts, or replaced (superseded by b: issue 26)
    superseded: int = 0  # a superseded by b
    skipped: int = 0

    @property
    def once(self) -> int:
        """Pairs stored as one fact: b refused, or a restated in b's words."""
        return self.refused + self.restated

    def share(self, part: int) -> float:
        """``part`` over the pairs scored (0.0 when there are none)."""
        return part / self.total if self.total else 0.0


@dataclass
class IntegrityReport:
    """Figures of one run, by group: pair labels and SICK judgments."""

    pairs: dict[str, Tally] = field(default_factory=dict)
    sick: dict[str, Tally] = field(default_factory=dict)
    pairs_file: str = ""
    sick_file: str = ""
    seconds: float = 0.0
    judge_ms_per_pair: float = 0.0  # the judge alone, on pairs not seen before
    misses: list[dict[str, str]] = field(default_factory=list)

    def goals(self) -> list[Goal]:
        """Every figure beside its goal (issue 18)."""
        p = {label: self.pairs.get(label, Tally()) for label in PAIR_LABELS}
        s = {k: self.sick.get(k, Tally()) for k in ("CONTRADICTION", "NEUTRAL", "PARAPHRASE")}

        def goal(name: str, tally: Tally, part: int, limit: float, at_most: bool) -> Goal:
            return Goal(name, tally.share(part), limit, at_most, f"{part} / {tally.total}")

        dup, upd, dis = p["duplicate"], p["update"], p["distinct"]
        con, neu, par = s["CONTRADICTION"], s["NEUTRAL"], s["PARAPHRASE"]
        return [
            goal("pairs: duplicates caught (stored once)", dup, dup.once, 0.60, False),
            goal("pairs: updates lost (refused)", upd, upd.refused, 0.0, True),
            goal(
                "pairs: updates surfaced as conflicts, or restated",
                upd,
                upd.surfaced + upd.restated,
                0.9,
                False,
            ),
            goal("pairs: distinct lost (refused or restated)", dis, dis.once, 0.0, True),
            goal("pairs: distinct surfaced as conflicts", dis, dis.surfaced, 0.5, True),
            goal("pairs: distinct superseded", dis, dis.superseded, 0.0, True),
            goal("SICK: CONTRADICTION refused", con, con.refused, 0.0, True),
            goal("SICK: NEUTRAL lost (refused or restated)", neu, neu.once, 0.005, True),
            goal("SICK: near-paraphrases caught (stored once)", par, par.once, 0.6, False),
        ]

    @property
    def met(self) -> bool:
        """Whether every goal is met."""
        return all(goal.met for goal in self.goals())

    def table(self) -> Table:
        """The figures beside their goals as a rich table."""
        skipped = sum(t.skipped for t in (*self.pairs.values(), *self.sick.values()))
        table = Table(
            title="memorybank integrity (save a, then b, for a fresh user)",
            caption=f"{self.pairs_file} · {self.sick_file} · {skipped} pairs skipped "
            f"(refused by the policy) · {self.seconds:.1f} s · "
            f"{self.judge_ms_per_pair:.3f} ms to judge a pair",
        )
        for column in ("figure", "value", "count", "goal", "met"):
            table.add_column(column, justify="left" if column == "figure" else "right")
        for goal in self.goals():
            row = goal.as_dict()
            table.add_row(
                goal.name, f"{goal.value:.3f}", goal.count, row["goal"], "yes" if goal.met else "NO"
            )
        return table

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form of the whole report."""

        def tallies(groups: dict[str, Tally]) -> dict[str, dict[str, int]]:
            return {k: vars(t).copy() for k, t in groups.items()}

        return {
            "pairs_file": self.pairs_file,
            "sick_file": self.sick_file,
            "seconds": self.seconds,
            "judge_ms_per_pair": self.judge_ms_per_pair,
            "pairs": tallies(self.pairs),
            "sick": tallies(self.sick),
            "goals": [goal.as_dict() for goal in self.goals()],
            "met": self.met,
            "misses": self.misses,
        }


@dataclass(frozen=True)
class Pair:
    """Two facts saved in turn, and the group they are counted in."""

    a: str
    b: str
    group: str


def load_pairs(path: Path) -> list[Pair]:
    """The fact pairs of a ``{"a", "b", "label"}`` JSON-lines file."""
    pairs = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in PAIR_LABELS:
            raise ConfigurationError(f"{path}:{number}: label must be one of {PAIR_LABELS}")
        pairs.append(Pair(str(row["a"]), str(row["b"]), str(row["label"])))
    return pairs


def load_sick(path: Path, limit: int | None = None) -> list[Pair]:
    """SICK pairs grouped CONTRADICTION, NEUTRAL, PARAPHRASE (ENTAILMENT with relatedness
    ≥ :data:`PARAPHRASE_RELATEDNESS`) or ENTAILMENT; the first ``limit`` rows only if given."""
    pairs = []
    with Path(path).open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            judgment = row["entailment_judgment"].strip()
            if judgment == "ENTAILMENT" and float(row["relatedness_score"]) >= (
                PARAPHRASE_RELATEDNESS
            ):
                judgment = "PARAPHRASE"
            pairs.append(Pair(row["sentence_A"].strip(), row["sentence_B"].strip(), judgment))
            if limit is not None and len(pairs) >= limit:
                break
    return pairs


def _score(
    bank: MemoryBank,
    pairs: Iterable[Pair],
    prefix: str,
    report: IntegrityReport,
    groups: dict[str, Tally],
) -> None:
    """Save each pair for a fresh user and count its outcome in ``groups``."""
    for number, pair in enumerate(pairs):
        tally = groups.setdefault(pair.group, Tally())
        user = f"{prefix}-{number}"
        try:
            bank.save(user, pair.a, "context")
            result = bank.save(user, pair.b, "context")
        except ValidationError:
            tally.skipped += 1
            continue
        tally.total += 1
        tally.refused += result.duplicate
        tally.restated += result.restated
        tally.surfaced += bool(result.conflicts or result.replaced)
        tally.superseded += bool(result.replaced)
        changed = result.conflicts or result.replaced
        once = result.duplicate or result.restated
        outcome = "duplicate" if once else "conflict" if changed else "stored"
        if _missed(pair.group, outcome):
            report.misses.append(
                {"group": pair.group, "a": pair.a, "b": pair.b, "outcome": outcome}
            )


def _judge_ms_per_pair(pairs: list[Pair]) -> float:
    """Milliseconds the judge takes per pair, in batches of five (a save's candidates), on a
    judge of its own (an empty cache: the speed the unit tests leave to the benchmark)."""
    if not pairs:
        return 0.0
    judge = LocalJudge()
    started = time.perf_counter()
    for start in range(0, len(pairs), 5):
        judge.score([(pair.a, pair.b) for pair in pairs[start : start + 5]])
    return (time.perf_counter() - started) * 1000 / len(pairs)


def _missed(group: str, outcome: str) -> bool:
    """Whether ``outcome`` is a miss for a pair of ``group`` (kept in the JSON report)."""
    wanted = {"duplicate": "duplicate", "PARAPHRASE": "duplicate", "update": "conflict"}
    if group in wanted:
        return outcome != wanted[group]
    return group != "ENTAILMENT" and outcome == "duplicate"


@contextmanager
def _workdir(workdir: Path | None) -> Iterator[Path]:
    """``workdir`` (created if needed), or a temporary directory removed afterwards."""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        yield workdir
        return
    with tempfile.TemporaryDirectory(prefix="integrity-") as tmp:
        yield Path(tmp)


def run_integrity(
    pairs: Path,
    sick: Path,
    *,
    sick_limit: int | None = None,
    workdir: Path | None = None,
    console: Console | None = None,
) -> IntegrityReport:
    """Score the fact pairs at ``pairs`` and the SICK pairs at ``sick`` (the first
    ``sick_limit`` only, if given) on one fresh bank in ``workdir/integrity.db`` (default: a
    temporary directory), a fresh user per pair."""
    console = console or Console(stderr=True)
    fact_pairs, sick_pairs = load_pairs(pairs), load_sick(sick, sick_limit)
    report = IntegrityReport(pairs_file=Path(pairs).name, sick_file=Path(sick).name)
    report.judge_ms_per_pair = _judge_ms_per_pair(fact_pairs + sick_pairs)
    started = time.perf_counter()
    with _workdir(workdir) as folder:
        database = folder / "integrity.db"
        for leftover in folder.glob("integrity.db*"):
            leftover.unlink()
        with memorybank.open(f"sqlite:///{database}") as bank:
            with console.status(f"{len(fact_pairs)} fact pairs"):
                _score(bank, fact_pairs, "pair", report, report.pairs)
            with console.status(f"{len(sick_pairs)} SICK pairs"):
                _score(bank, sick_pairs, "sick", report, report.sick)
    report.seconds = time.perf_counter() - started
    return report


__all__ = ["Goal", "IntegrityReport", "Pair", "Tally", "load_pairs", "load_sick", "run_integrity"]
