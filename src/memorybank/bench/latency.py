"""Latency benchmark: ``save`` and ``search`` percentiles, bulk import rate and peak RSS at
N = 10,000 / 100,000 / 1,000,000 stored memories.

Databases are filled with synthetic but realistic facts (:class:`FactGenerator`). Embedding a
million texts locally takes over an hour, so the filler rows reuse a pool of really-embedded
texts (``pool_size`` of them, cached in ``workdir``) spread over users of ``per_user`` memories
each, written straight through :meth:`SQLiteStore.insert` in large transactions. Every
measured save, query and bulk-imported item is embedded for real, through the public
:class:`~memorybank.MemoryBank` API built by :func:`memorybank.open`.

Sizes are cumulative: the database of the next size starts as a copy of the previous one, and
a complete database (marked in its meta table) is reused by later runs.

>>> report = run_latency(sizes=[10_000])  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import psutil
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

import memorybank
from memorybank.bank import MemoryBank
from memorybank.embedders.base import Embedder, Vectors
from memorybank.factory import build_embedder
from memorybank.model import Category, Memory, MemoryFilter, Ring, ScopeSet, Source, new_id, utcnow
from memorybank.policy import score_importance
from memorybank.settings import Settings
from memorybank.stores.base import Store
from memorybank.stores.postgres import PostgresStore
from memorybank.stores.sqlite import SQLiteStore

#: Bumped whenever the generator or the filler layout changes, so old caches are not reused.
GENERATOR_VERSION = 1
#: Filler rows written per :meth:`SQLiteStore.insert` call (one transaction each).
FILL_CHUNK = 5_000
#: Items bulk-imported per size, and per ``save_many`` call.
BULK_ITEMS = 2_000
BULK_BATCH = 500
#: Searches run before measuring (they load the scope's vectors into the cache).
WARMUP_SEARCHES = 5
_FILL_SOURCE = Source.IMPORT
_MIB = 1024 * 1024

# --------------------------------------------------------------------------------------------
# Synthetic facts
# --------------------------------------------------------------------------------------------

_VOCAB_TEXT = """
first: Maria | Jonas | Aiko | Priya | Tomasz | Fatima | Lucas | Ingrid | Mateo | Chloe |
    Olusegun | Hana | Rafael | Sofia | Dmitri | Amara | Kenji | Elena | Omar | Freya | Nikolai
    | Leila | Pablo | Astrid | Ravi | Camille | Bruno | Yusuf | Greta | Diego | Mei | Henrik |
    Zainab | Luca | Noor | Anders | Isabela | Tariq | Yara | Felix | Anjali | Marco | Signe |
    Kwame | Rosa | Emil | Lina | Arjun | Clara | Hugo | Soraya | Viktor | Nadia | Thiago |
    Elif | Malik | Julia | Sven | Ayesha | Paolo
last: Silva | Novak | Tanaka | Sharma | Kowalski | Haddad | Moreau | Lindqvist | Garcia |
    Dubois | Adeyemi | Kim | Costa | Rossi | Petrov | Okafor | Sato | Popescu | Farouk |
    Hansen | Ivanova | Nasser | Ortega | Berg | Iyer | Laurent | Ferreira | Demir | Schmidt |
    Alvarez | Chen | Nilsson | Bello | Bianchi | Rahman | Larsen | Santos | Aziz | Jensen |
    Weber
relative: sister | brother | mother | father | wife | husband | partner | son | daughter |
    cousin | aunt | uncle | grandmother | grandfather | niece | nephew | best friend |
    roommate | sister-in-law | stepfather
role: manager | team lead | CTO | product manager | mentor | tech lead | designer | skip-level
    manager | on-call partner | co-founder | data scientist | QA lead
job: a pediatric nurse | a backend engineer | a high school teacher | an architect | a dentist
    | a data analyst | a pastry chef | a civil engineer | a pharmacist | a graphic designer |
    a lawyer | a physiotherapist | a veterinarian | a product designer | an accountant | a
    journalist | a firefighter | a university lecturer | an electrician | a software tester |
    a marine biologist | a translator | a carpenter | a radiologist | a site reliability
    engineer | a museum curator | an airline pilot | a social worker | a sommelier | a
    research chemist
company: Acme Logistics | Northwind | Globex | Initech | Umbrella Health | Stark Freight |
    Blue Harbor Bank | Pinecone Labs | Helios Energy | Orbital Media | Kestrel Games | Lumen
    Insurance | Tidewater Foods | Nimbus Cloud | Redwood Analytics | Copperleaf Studio | Fjord
    Robotics | Sunline Travel | Quartz Payments | Meridian Hospital
city: Porto | Lyon | Berlin | Kyoto | Toronto | Nairobi | Lisbon | Melbourne | Austin | Krakow
    | Seoul | Buenos Aires | Edinburgh | Bangalore | Oslo | Mexico City | Cape Town | Valencia
    | Vancouver | Istanbul | Hanoi | Dublin | Montreal | Lagos | Helsinki | Prague | Santiago
    | Osaka | Copenhagen | Marseille | Bologna | Tallinn | Reykjavik | Seville | Zurich |
    Denver | Singapore | Auckland | Tbilisi | Ljubljana
field: mechanical engineering | economics | computer science | biology | philosophy |
    architecture | statistics | linguistics | physics | music theory | nursing | political
    science
spoken: Portuguese | French | German | Japanese | Spanish | Polish | Korean | Hindi | Arabic |
    Swedish | Turkish | Italian | Dutch | Greek | Vietnamese
food: ramen | spicy tofu | grilled sardines | mushroom risotto | falafel wraps | pho | sushi |
    vegetable curry | tacos al pastor | shakshuka | pierogi | bibimbap | margherita pizza |
    lentil soup | pad thai | poke bowls | dark chocolate | greek salad | dumplings | paella |
    banh mi | oatmeal with berries
cuisine: Japanese | Ethiopian | Mexican | Lebanese | Thai | Georgian | Peruvian | Korean |
    Italian | Indian | Vietnamese | Portuguese
drink: black coffee | green tea | oat milk lattes | sparkling water | matcha | espresso |
    rooibos tea | kombucha | hot chocolate | chai
lang: Python | TypeScript | Rust | Go | Kotlin | Java | C# | Elixir | Swift | Scala | Haskell
    | Ruby | C++ | Clojure | Julia | Zig | OCaml | PHP
task: data pipelines | web backends | command-line tools | scripting | mobile apps |
    infrastructure code | machine learning experiments | game prototypes | embedded firmware |
    frontend work
tool: Neovim | VS Code | IntelliJ IDEA | Emacs | Sublime Text | Zed | Helix | PyCharm | Xcode
    | JetBrains Fleet
theme: dark | light | solarized | high-contrast | gruvbox | nord
music: lo-fi hip hop | baroque cello suites | synthwave | jazz piano | ambient drone |
    Brazilian bossa nova | post-rock | techno | film soundtracks | K-pop | Malian desert blues
    | classical guitar | drum and bass | Afrobeat
work: code reviews | deep work | writing documentation | debugging | planning | data analysis
    | design sketches
activity: go running | swim laps | climb at the bouldering gym | do yoga | play chess | bake
    bread | go cycling | practice the piano | hike | play padel | paint | read fiction
weekday: Monday | Tuesday | Wednesday | Thursday | Friday | Saturday | Sunday
daypart: morning | afternoon | evening | late evening | lunch break
hour: 7:30 | 8:00 | 9:15 | 10:00 | 11:30 | 13:00 | 14:45 | 16:00 | 17:30 | 19:00
month: January | February | March | April | May | June | July | August | September | October |
    November | December
pet: dog | cat | parrot | rabbit | tortoise | ferret | hamster | beagle
petname: Biscuit | Luna | Pixel | Mochi | Pepper | Ziggy | Olive | Nacho | Kiwi | Tofu | Socks
    | Maple
allergen: peanuts | shellfish | gluten | lactose | cat hair | pollen | penicillin | sesame |
    kiwi fruit | bee stings
sport: tennis | football | badminton | basketball | volleyball | squash | golf
comm: Slack messages | short video calls | voice notes | shared docs | SMS
team: payments | platform | search | mobile | growth | security | data | billing |
    infrastructure | checkout
project: the billing service | the mobile app | the customer portal | the data warehouse | the
    recommendation engine | the internal wiki | the checkout flow | the analytics dashboard |
    the notification service | the search backend | the onboarding funnel | the inventory
    system | the auth gateway | the reporting pipeline | the marketing site | the fraud
    detector | the chat widget | the pricing API | the scheduling tool | the design system
framework: Django | FastAPI | Flask | Rails | Spring Boot | Express | NestJS | Next.js |
    Laravel | Phoenix | ASP.NET Core | SvelteKit | Remix | Gin | Actix
database: PostgreSQL | MySQL | MongoDB | Redis | Cassandra | DynamoDB | ClickHouse | SQLite |
    Elasticsearch | BigQuery
cloud: AWS | Google Cloud | Azure | Hetzner | Fly.io | DigitalOcean | Kubernetes
deadline: March | the end of Q2 | the end of Q3 | Christmas | the summer release | the board
    meeting | June 30 | the next audit | the October launch | the end of the sprint | Black
    Friday | the spring conference
doc: design document | migration plan | postmortem | request for comments | runbook | roadmap
app_kind: habit tracker | budgeting app | recipe manager | podcast player | plant-watering
    reminder | sourdough calculator | bird-watching log | home automation dashboard | language
    flashcard app | trail map
meeting: one-on-one | design review | quarterly planning session | performance review |
    dentist appointment | job interview | parent-teacher meeting | sprint retro | customer
    demo | architecture review
event: PyCon | KubeCon | a friend's wedding | the company offsite | a hackathon | a family
    reunion | Web Summit | a jazz festival | a marathon | a product launch | RustConf | a
    climbing trip | a wine tasting course
topic: observability | vector search | accessibility | type systems | chaos engineering |
    privacy by design | event sourcing | on-call culture
"""


def _parse_vocab(text: str) -> dict[str, tuple[str, ...]]:
    """``slot: a | b | c`` lines (indented lines continue the previous one) → slot → values."""
    joined = re.sub(r"\n\s+", " ", text.strip())
    vocab: dict[str, tuple[str, ...]] = {}
    for line in joined.splitlines():
        slot, values = line.split(":", 1)
        vocab[slot.strip()] = tuple(v.strip() for v in values.split("|"))
    return vocab


#: Slot name → the values it is filled with.
VOCAB: dict[str, tuple[str, ...]] = {
    **_parse_vocab(_VOCAB_TEXT),
    "day": tuple(str(d) for d in range(1, 29)),
    "year": tuple(str(y) for y in range(1961, 2004)),
    "age": tuple(str(a) for a in range(21, 79)),
    "nights": tuple(str(n) for n in range(2, 15)),
}

FACT_TEMPLATES: tuple[tuple[Category, str], ...] = (
    (Category.IDENTITY, "User's full name is {first} {last} and friends call them {first2}"),
    (Category.IDENTITY, "User works as {job} at {company} in {city}"),
    (Category.IDENTITY, "User lives in {city} and works remotely for {company}"),
    (Category.IDENTITY, "User was born in {year} in {city} and grew up speaking {spoken}"),
    (Category.IDENTITY, "User is {age} years old and moved to {city} in {year}"),
    (Category.IDENTITY, "User studied {field} in {city} before joining {company}"),
    (Category.IDENTITY, "User's native language is {spoken} and they are learning {spoken2}"),
    (Category.PREFERENCE, "User prefers {food} over {food2} for lunch on workdays"),
    (Category.PREFERENCE, "User's favourite cuisine is {cuisine}, especially {food}"),
    (Category.PREFERENCE, "User prefers {lang} for {task} and avoids {lang2} when possible"),
    (Category.PREFERENCE, "User uses {tool} with a {theme} theme for all their {lang} work"),
    (Category.PREFERENCE, "User listens to {music} while doing {work}"),
    (Category.PREFERENCE, "User likes to {activity} on {weekday} {daypart}s"),
    (Category.PREFERENCE, "User prefers meetings in the {daypart} and keeps {weekday}s free"),
    (Category.PREFERENCE, "User drinks {drink} every morning and avoids {drink2} after {hour}"),
    (Category.PREFERENCE, "User is allergic to {allergen} and always checks menus for it"),
    (Category.PREFERENCE, "User prefers {comm} over email for quick questions from the team"),
    (Category.RELATIONSHIP, "User's {relative} {first} works as {job} in {city}"),
    (Category.RELATIONSHIP, "User's {relative} {first} lives in {city} and visits every {month}"),
    (Category.RELATIONSHIP, "User's {role} at {company} is {first} {last}"),
    (Category.RELATIONSHIP, "User's {relative} {first} turns {age} on {month} {day}"),
    (Category.RELATIONSHIP, "User has a {pet} named {petname} who is fond of long walks"),
    (Category.RELATIONSHIP, "User plays {sport} with their {relative} {first} every {weekday}"),
    (Category.RELATIONSHIP, "User's colleague {first} leads the {team} team at {company}"),
    (
        Category.PROJECT,
        "User is migrating {project} from {framework} to {framework2} before {deadline}",
    ),
    (Category.PROJECT, "User is building {project} with {framework} and {database}"),
    (Category.PROJECT, "User's team is moving {project} to {cloud} by {deadline}"),
    (Category.PROJECT, "User maintains {project}, which runs on {database} in {cloud}"),
    (Category.PROJECT, "User is writing a {doc} for {project}, due before {deadline}"),
    (
        Category.PROJECT,
        "User is working with {first} on {project}, aiming for a release in {month}",
    ),
    (Category.PROJECT, "User's side project is a {app_kind} written in {lang}"),
    (Category.CONTEXT, "User has a {meeting} with {first} on {weekday} at {hour}"),
    (
        Category.CONTEXT,
        "User is travelling to {city} for {event} on {month} {day} for {nights} nights",
    ),
    (Category.CONTEXT, "User attended {event} in {city} last {month} with their {relative}"),
    (Category.CONTEXT, "User is preparing a talk about {topic} for {event} in {month}"),
    (Category.CONTEXT, "User has a {meeting} on {month} {day} at {hour}"),
    (Category.CONTEXT, "User is on vacation in {city} until {month} {day}"),
    (Category.CONTEXT, "User's flight to {city} leaves on {month} {day} at {hour}"),
)

QUERY_TEMPLATES: tuple[str, ...] = (
    "what does the user's {relative} do for a living?",
    "where does the user's {relative} {first} live?",
    "which framework is {project} moving to?",
    "when is the deadline for {project}?",
    "what database does {project} use?",
    "which cloud is {project} deployed on?",
    "what food does the user like?",
    "does the user like {cuisine} food?",
    "which programming language does the user prefer for {task}?",
    "which editor does the user use?",
    "what music does the user listen to while working?",
    "when does the user {activity}?",
    "who is the user's {role}?",
    "where does the user work?",
    "where does the user live?",
    "how old is the user?",
    "when is the user going to {city}?",
    "what is the name of the user's {pet}?",
    "is the user allergic to {allergen}?",
    "what is the user doing on {weekday}?",
    "what is the user working on with {first}?",
    "when is {first}'s birthday?",
    "what talk is the user preparing for {event}?",
    "what does the user drink in the morning?",
    "which sport does the user play with their {relative}?",
    "who leads the {team} team?",
    "what languages does the user speak?",
    "what side project is the user building in {lang}?",
    "when is the user's {meeting}?",
    "what did the user do in {city}?",
)

_SLOT = re.compile(r"\{([a-z_]+?)(\d*)\}")
_SUFFIXES: tuple[str, ...] = (
    ", as mentioned on {month} {day}",
    ", according to a chat in {month}",
    ", which came up during a {meeting}",
    ", and they asked for a reminder about it every {weekday} {daypart}",
    ", which they brought up while talking about {topic} with their {relative} {first}",
    "; this matters to them because their {role} at {company} asked about it in {month}",
)
#: How often a fact gets an extra clause (besides when it is too short without one).
_SUFFIX_RATE = 0.3
FACT_MIN_CHARS, FACT_MAX_CHARS = 40, 200


class FactGenerator:
    """Seeded generator of varied third-person facts about a user (all five categories) and
    of natural questions about them, composed from templates × vocabularies.

    >>> gen = FactGenerator(7)
    >>> text, category = gen.fact()
    >>> 40 <= len(text) <= 200 and text.startswith("User")
    True
    """

    def __init__(self, seed: int | str) -> None:
        self.rng = random.Random(seed)

    def _fill(self, template: str) -> str:
        used: dict[str, set[str]] = {}

        def pick(match: re.Match[str]) -> str:
            slot = match.group(1)
            taken = used.setdefault(slot, set())
            options = [v for v in VOCAB[slot] if v not in taken] or list(VOCAB[slot])
            value = self.rng.choice(options)
            taken.add(value)
            return value

        return _SLOT.sub(pick, template)

    def fact(self) -> tuple[str, Category]:
        """One fact (40–200 characters) and its category."""
        category, template = self.rng.choice(FACT_TEMPLATES)
        text = self._fill(template)
        while len(text) < FACT_MIN_CHARS or (
            len(text) < FACT_MAX_CHARS // 2 and self.rng.random() < _SUFFIX_RATE
        ):
            text += self._fill(self.rng.choice(_SUFFIXES))
        return text[:FACT_MAX_CHARS], category

    def query(self) -> str:
        """One natural question a user might ask about such facts."""
        return self._fill(self.rng.choice(QUERY_TEMPLATES))

    def distinct_facts(self, count: int) -> list[tuple[str, Category]]:
        """``count`` facts with no two texts alike."""
        seen: dict[str, Category] = {}
        attempts = 0
        while len(seen) < count:
            text, category = self.fact()
            seen.setdefault(text, category)
            attempts += 1
            if attempts > 50 * count + 1000:
                raise RuntimeError(f"the fact generator cannot produce {count} distinct facts")
        return list(seen.items())


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Targets:
    """Goals on the reference 2-core machine, at ``at_n`` stored memories."""

    at_n: int = 1_000_000
    search_p50_ms: float = 15.0
    search_p95_ms: float = 40.0
    save_p50_ms: float = 20.0
    bulk_ratio: float = 0.85
    peak_rss_mib: float = 2048.0
    recall: float = 0.95

    def check(self, row: LatencyRow) -> dict[str, bool]:
        """Each target's name → whether ``row`` meets it."""
        checks = {
            "search p50": row.search.p50 <= self.search_p50_ms,
            "search p95": row.search.p95 <= self.search_p95_ms,
            "save p50": row.save.p50 <= self.save_p50_ms,
            "bulk import": row.bulk_ratio >= self.bulk_ratio,
            "peak RSS": row.peak_rss_mib <= self.peak_rss_mib,
        }
        if row.recall is not None:
            checks["vector recall"] = row.recall >= self.recall
        return checks


#: The PostgreSQL targets: a network round trip per query, so more latency is allowed.
POSTGRES_TARGETS = Targets(search_p50_ms=25.0, search_p95_ms=60.0)


@dataclass(frozen=True)
class Percentiles:
    """p50/p95/p99 of a latency sample, in milliseconds."""

    p50: float
    p95: float
    p99: float
    mean: float
    count: int

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Percentiles:
        """Percentiles of durations given in seconds."""
        if not seconds:
            return cls(math.nan, math.nan, math.nan, math.nan, 0)
        ms = np.asarray(seconds, dtype=np.float64) * 1000.0
        p50, p95, p99 = (float(v) for v in np.percentile(ms, [50, 95, 99]))
        return cls(p50, p95, p99, float(ms.mean()), len(ms))


@dataclass
class BuildStats:
    """How the database of one size came to be."""

    path: str
    rows_written: int = 0
    seconds: float = 0.0
    reused: bool = False
    copied_from: str | None = None
    #: PostgreSQL: time spent (re)building the search indexes after a bulk load.
    index_seconds: float = 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows_written / self.seconds if self.seconds > 0 else 0.0


@dataclass
class LatencyRow:
    """Measurements at one database size."""

    n: int
    users: int
    in_scope: int
    search: Percentiles
    save: Percentiles
    save_duplicates: int
    bulk_items: int
    bulk_per_s: float
    raw_embed_per_s: float
    peak_rss_mib: float
    rss_mib: float
    db_bytes: int
    build: BuildStats
    #: 1-minute load average when the size was measured (other work skews the numbers).
    load_avg: float = 0.0
    #: PostgreSQL: mean recall@10 of the store's vector search against exact search (what a
    #: search gets), and of the HNSW index alone on the same queries (the store reads small
    #: scopes exactly, so the two differ).
    recall: float | None = None
    hnsw_recall: float | None = None

    @property
    def bulk_ratio(self) -> float:
        """Bulk import rate as a fraction of the raw embedder throughput."""
        return self.bulk_per_s / self.raw_embed_per_s if self.raw_embed_per_s > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        data = asdict(self)
        data["bulk_ratio"] = self.bulk_ratio
        data["build"]["rows_per_s"] = self.build.rows_per_s
        return data


def machine_info() -> dict[str, Any]:
    """The machine and library versions a report was measured with."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    import onnxruntime

    return {
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "cpu_model": _cpu_model(),
        "memory_mib": round(psutil.virtual_memory().total / _MIB),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "sqlite": apsw.sqlite_lib_version(),
        "onnxruntime": onnxruntime.__version__,
        "numpy": np.__version__,
        "memorybank": memorybank.__version__,
    }


def _recalls(row: LatencyRow) -> str:
    """ "search / HNSW" recall@10 of a PostgreSQL row, or "–"."""
    if row.recall is None:
        return "–"
    hnsw = "–" if row.hnsw_recall is None else f"{row.hnsw_recall:.3f}"
    return f"{row.recall:.3f} / {hnsw}"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass
class LatencyReport:
    """Rows per size plus what they were measured on and against."""

    rows: list[LatencyRow]
    settings: dict[str, Any]
    machine: dict[str, Any] = field(default_factory=machine_info)
    targets: Targets = field(default_factory=Targets)

    def verdict(self, row: LatencyRow) -> str:
        """``"pass"``, or ``"fail: …"`` naming the missed targets."""
        missed = [name for name, ok in self.targets.check(row).items() if not ok]
        return "pass" if not missed else "fail: " + ", ".join(missed)

    def table(self) -> Table:
        """The results as a rich table."""
        t = self.targets
        table = Table(
            title="memorybank latency",
            caption=(
                f"targets at N = {t.at_n:,}: search p50 ≤ {t.search_p50_ms:g} ms, "
                f"p95 ≤ {t.search_p95_ms:g} ms; save p50 ≤ {t.save_p50_ms:g} ms; bulk import "
                f"≥ {t.bulk_ratio:.0%} of raw embedder; peak RSS ≤ {t.peak_rss_mib:,.0f} MiB "
                "(marks on smaller N are indicative)"
            ),
        )
        for name in (
            "N",
            "in scope",
            "search p50 ms",
            "search p95 ms",
            "save p50 ms",
            "save p95 ms",
            "bulk import/s",
            "% of raw embedder",
            "peak RSS MiB",
        ):
            table.add_column(name, justify="right")
        with_recall = any(row.recall is not None for row in self.rows)
        if with_recall:
            table.add_column("recall@10 search / HNSW", justify="right")
        table.add_column("targets")
        for row in self.rows:
            recall = [_recalls(row)] if with_recall else []
            table.add_row(
                f"{row.n:,}",
                f"{row.in_scope:,}",
                f"{row.search.p50:.1f}",
                f"{row.search.p95:.1f}",
                f"{row.save.p50:.1f}",
                f"{row.save.p95:.1f}",
                f"{row.bulk_per_s:,.0f}",
                f"{row.bulk_ratio:.0%}",
                f"{row.peak_rss_mib:,.0f}",
                *recall,
                self._mark(row),
            )
        return table

    def _mark(self, row: LatencyRow) -> str:
        verdict = self.verdict(row)
        mark = "[green]✓ pass[/]" if verdict == "pass" else f"[red]✗ {verdict}[/]"
        return mark if row.n >= self.targets.at_n else f"[dim]{verdict}[/]"

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form of the whole report."""
        return {
            "machine": self.machine,
            "targets": asdict(self.targets),
            "settings": self.settings,
            "rows": [{**row.as_dict(), "verdict": self.verdict(row)} for row in self.rows],
        }


# --------------------------------------------------------------------------------------------
# The pool of really-embedded texts
# --------------------------------------------------------------------------------------------


@dataclass
class Pool:
    """Distinct facts with their real vectors, reused by the filler rows."""

    texts: list[str]
    categories: list[Category]
    importances: list[int]
    vectors: Vectors

    def __len__(self) -> int:
        return len(self.texts)


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name)


def load_pool(workdir: Path, size: int, embedder: Embedder, console: Console) -> Pool:
    """The pool of ``size`` facts, embedded once and cached in ``workdir``."""
    facts = FactGenerator(f"pool-v{GENERATOR_VERSION}").distinct_facts(size)
    texts = [text for text, _ in facts]
    stem = workdir / f"pool-{size}-{_safe(embedder.model_id)}"
    vectors = _cached_pool_vectors(stem, texts, embedder.dimension)
    if vectors is None:
        vectors = _embed_with_progress(embedder, texts, console, "embedding the pool")
        np.save(stem.with_suffix(".npy"), vectors)
        stem.with_suffix(".json").write_text(json.dumps({"texts": texts}))
    else:
        console.print(f"reusing the embedded pool {stem.with_suffix('.npy')}")
    return Pool(
        texts=texts,
        categories=[category for _, category in facts],
        importances=[score_importance(text, category) for text, category in facts],
        vectors=vectors,
    )


def _cached_pool_vectors(stem: Path, texts: list[str], dimension: int) -> Vectors | None:
    vec_path, text_path = stem.with_suffix(".npy"), stem.with_suffix(".json")
    if not (vec_path.is_file() and text_path.is_file()):
        return None
    try:
        cached = json.loads(text_path.read_text()).get("texts")
        vectors = np.load(vec_path)
    except (OSError, ValueError):
        return None
    if cached != texts or vectors.shape != (len(texts), dimension):
        return None
    return np.ascontiguousarray(vectors, dtype=np.float32)


def _embed_with_progress(
    embedder: Embedder, texts: list[str], console: Console, label: str
) -> Vectors:
    parts: list[Vectors] = []
    with _progress(console) as progress:
        task = progress.add_task(label, total=len(texts))
        for start in range(0, len(texts), 512):
            parts.append(embedder.embed(texts[start : start + 512]))
            progress.update(task, advance=len(parts[-1]))
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )


# --------------------------------------------------------------------------------------------
# Building databases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FillPlan:
    """Which filler rows a database of N memories holds: user ``u`` gets a deterministic
    selection of pool rows, so a partial build can be resumed or grown exactly."""

    per_user: int
    pool_size: int
    model_id: str

    def users(self, n: int) -> int:
        """How many users N memories fill."""
        return math.ceil(n / self.per_user)

    def user_id(self, index: int) -> str:
        """The filler user with this index."""
        return f"fill-{index:06d}"

    def rows_of(self, index: int, n: int) -> int:
        """How many rows user ``index`` has in a database of ``n`` memories."""
        return max(0, min(self.per_user, n - index * self.per_user))

    def marker(self, n: int) -> str:
        """The ``bench_complete`` meta value of a complete database of ``n`` memories."""
        return json.dumps(
            {
                "n": n,
                "per_user": self.per_user,
                "pool_size": self.pool_size,
                "model": self.model_id,
                "version": GENERATOR_VERSION,
            },
            sort_keys=True,
        )

    def picks(
        self, index: int
    ) -> tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.float64]]]:
        """Pool rows and ages (seconds) of user ``index``'s memories, in insertion order."""
        rng = np.random.default_rng([GENERATOR_VERSION, index])
        rounds = math.ceil(self.per_user / self.pool_size)
        rows = np.concatenate([rng.permutation(self.pool_size) for _ in range(rounds)])
        ages = rng.uniform(0.0, 730 * 86_400.0, self.per_user)
        return rows[: self.per_user].astype(np.int64), ages


def _db_path(workdir: Path, n: int) -> Path:
    return workdir / f"latency-{n}.db"


def _open_store(path: Path, dimension: int) -> SQLiteStore:
    # NORMAL is durable enough for a rebuildable benchmark DB and spares one fsync per chunk.
    return SQLiteStore(path, dimension=dimension, synchronous="NORMAL")


def ensure_database(
    workdir: Path, n: int, plan: FillPlan, pool: Pool, console: Console
) -> BuildStats:
    """Make ``workdir/latency-<n>.db`` hold the ``n`` filler memories of ``plan``: reuse it
    when complete, resume it when partial, else start from the largest smaller complete one."""
    path = _db_path(workdir, n)
    stats = BuildStats(path=str(path))
    if not path.exists():
        source = _largest_complete_below(workdir, n, plan, pool.vectors.shape[1])
        if source is not None:
            console.print(f"growing {source.name} into {path.name}")
            _copy_database(source, path)
            stats.copied_from = str(source)
    with _open_store(path, pool.vectors.shape[1]) as store:
        if store.get_meta("bench_complete") == plan.marker(n):
            stats.reused = True
            console.print(f"reusing the complete database {path}")
            return stats
        store.set_meta("embedding_model", plan.model_id)
        store.set_meta("embedding_dimension", str(pool.vectors.shape[1]))
        start = resume_point(store, n, plan)
        started = time.perf_counter()
        stats.rows_written = fill(store, plan, pool, start, n, console)
        stats.seconds = time.perf_counter() - started
        store.set_meta("bench_complete", plan.marker(n))
    return stats


def _largest_complete_below(workdir: Path, n: int, plan: FillPlan, dimension: int) -> Path | None:
    sizes = sorted(
        (
            int(m.group(1))
            for p in workdir.glob("latency-*.db")
            if (m := re.fullmatch(r"latency-(\d+)\.db", p.name)) and int(m.group(1)) < n
        ),
        reverse=True,
    )
    for size in sizes:
        with _open_store(_db_path(workdir, size), dimension) as store:
            if store.get_meta("bench_complete") == plan.marker(size):
                return _db_path(workdir, size)
    return None


def _copy_database(source: Path, target: Path) -> None:
    partial = target.with_name(target.name + ".copying")
    shutil.copyfile(source, partial)
    wal = source.with_name(source.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, target.with_name(target.name + "-wal"))
    partial.rename(target)


def resume_point(store: Store, n: int, plan: FillPlan) -> int:
    """How many filler rows (a prefix of the plan's order) the database already holds."""
    only_filler = MemoryFilter(source=(_FILL_SOURCE,))
    done = 0
    for index in range(plan.users(n)):
        have = store.count(ScopeSet(user_id=plan.user_id(index)), only_filler)
        done += have
        if have < plan.rows_of(index, n):
            break
    return done


def fill(
    store: SQLiteStore, plan: FillPlan, pool: Pool, start: int, n: int, console: Console
) -> int:
    """Insert filler rows ``start`` .. ``n`` of ``plan`` with pool vectors, ``FILL_CHUNK``
    rows per transaction; returns how many were written."""
    if start >= n:
        return 0
    chunk: list[tuple[str, int, float]] = []
    written = 0
    with _progress(console) as progress:
        task = progress.add_task(f"building N={n:,}", total=n, completed=start)
        for user, row, age in _planned_rows(plan, start, n):
            chunk.append((user, row, age))
            if len(chunk) == FILL_CHUNK:
                written += _insert_chunk(store, plan, pool, chunk)
                progress.update(task, advance=len(chunk))
                chunk = []
        if chunk:
            written += _insert_chunk(store, plan, pool, chunk)
            progress.update(task, advance=len(chunk))
    return written


def _planned_rows(plan: FillPlan, start: int, n: int) -> Iterable[tuple[str, int, float]]:
    """(user id, pool row, age in seconds) of filler rows ``start`` .. ``n``."""
    for index in range(start // plan.per_user, plan.users(n)):
        rows, ages = plan.picks(index)
        first = max(0, start - index * plan.per_user)
        user = plan.user_id(index)
        for j in range(first, plan.rows_of(index, n)):
            yield user, int(rows[j]), float(ages[j])


def _insert_chunk(
    store: SQLiteStore, plan: FillPlan, pool: Pool, chunk: Sequence[tuple[str, int, float]]
) -> int:
    now = utcnow()
    memories = [
        _filler_memory(user, pool, row, now - timedelta(seconds=age), plan.model_id)
        for user, row, age in chunk
    ]
    vectors = pool.vectors[np.fromiter((row for _, row, _ in chunk), dtype=np.int64)]
    outcomes = store.insert(
        memories, vectors, dedup_threshold=None, dedup=[False] * len(memories), actor="bench"
    )
    return sum(1 for o in outcomes if o.inserted)


def _filler_memory(user: str, pool: Pool, row: int, created: datetime, model_id: str) -> Memory:
    # model_construct: the values are known-valid, and validation would dominate the build.
    return Memory.model_construct(
        id=new_id("mem"),
        user_id=user,
        project_id=None,
        content=pool.texts[row],
        category=pool.categories[row],
        ring=Ring.SEMANTIC,
        domain=None,
        tags=(),
        metadata={},
        importance=pool.importances[row],
        source=_FILL_SOURCE,
        created_by=user,
        reasoning=None,
        session_id=None,
        created_at=created,
        updated_at=created,
        occurred_at=None,
        embedding_model=model_id,
    )


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def measure_search(bank: MemoryBank, user: str, queries: Sequence[str]) -> list[float]:
    """Wall time (s) of ``bank.search`` for each query, query embedding included, after a
    few warm-up searches."""
    for query in queries[:WARMUP_SEARCHES]:
        bank.search(user, query, limit=10)
    return [
        _timed(functools.partial(bank.search, user, query, limit=10))[0]
        for query in queries[WARMUP_SEARCHES:]
    ]


def measure_saves(
    bank: MemoryBank, user: str, facts: Sequence[tuple[str, Category]]
) -> tuple[list[float], int]:
    """Wall time (s) of ``bank.save`` for each fact and how many were duplicates; the saved
    memories are deleted again afterwards."""
    times: list[float] = []
    saved: list[str] = []
    duplicates = 0
    for text, category in facts:
        seconds, result = _timed(functools.partial(bank.save, user, text, category))
        times.append(seconds)
        if result.success and result.memory_id is not None:
            saved.append(result.memory_id)
        else:
            duplicates += 1
    bank.delete_many(saved, user)
    return times, duplicates


def measure_bulk(
    bank: MemoryBank, pool: Pool, gen: FactGenerator, label: str
) -> tuple[float, float]:
    """(bulk import memories/s, raw embedder texts/s), interleaved batch by batch.

    Bulk import is ``save_many`` of conversation items (stored as said, no duplicate check)
    into fresh users, ``BULK_BATCH`` per call, embedding included. The raw rate embeds as
    many pool texts with ``embedder.embed`` on equally sized calls (the embedder runs them in
    batches of 64). The bulk users are cleared afterwards.
    """
    raw_seconds = bulk_seconds = 0.0
    users = []
    offset = gen.rng.randrange(len(pool))
    for batch in range(math.ceil(BULK_ITEMS / BULK_BATCH)):
        size = min(BULK_BATCH, BULK_ITEMS - batch * BULK_BATCH)
        raw = [pool.texts[(offset + batch * BULK_BATCH + i) % len(pool)] for i in range(size)]
        raw_seconds += _timed(functools.partial(bank.embedder.embed, raw))[0]
        user = f"bulk-{label}-{batch}"
        bank.clear(user)
        users.append(user)
        items = [_conversation_item(gen) for _ in range(size)]
        bulk_seconds += _timed(functools.partial(bank.save_many, user, items))[0]
    for user in users:
        bank.clear(user)
    return BULK_ITEMS / bulk_seconds, BULK_ITEMS / raw_seconds


def _conversation_item(gen: FactGenerator) -> dict[str, str]:
    text, _ = gen.fact()
    return {"content": text, "category": "context", "ring": "episodic", "source": "conversation"}


def _remove_leftovers(bank: MemoryBank, user: str) -> None:
    """Delete measured saves an interrupted run may have left in the searched scope."""
    while stale := bank.list(user, source=[Source.AI], limit=1000):
        bank.delete_many([m.id for m in stale], user)


def peak_rss_mib() -> float:
    """The process's peak resident set size so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / _MIB if sys.platform == "darwin" else peak / 1024


def current_rss_mib() -> float:
    """The process's resident set size now, in MiB."""
    return float(psutil.Process().memory_info().rss) / _MIB


def measure_size(
    bank: MemoryBank, n: int, plan: FillPlan, pool: Pool, samples: int, build: BuildStats
) -> LatencyRow:
    """Every measurement at one database size."""
    user = plan.user_id((plan.users(n) - 1) // 2)
    _remove_leftovers(bank, user)
    in_scope = bank.count(user)
    gen = FactGenerator(f"queries-{n}")
    queries = [gen.query() for _ in range(samples + WARMUP_SEARCHES)]
    search = measure_search(bank, user, queries)
    recall = hnsw_recall = None
    if isinstance(bank.store, PostgresStore):
        from memorybank.bench.latency_pg import measure_recall

        vectors = bank.embedder.embed(queries)
        recall = measure_recall(bank.store, user, vectors)
        store = bank.store
        with PostgresStore(store.url, dimension=store.dimension, exact_scan_max=0) as hnsw:
            hnsw_recall = measure_recall(hnsw, user, vectors)
    facts = FactGenerator(f"saves-{n}")
    save_times, duplicates = measure_saves(bank, user, [facts.fact() for _ in range(samples)])
    bulk_per_s, raw_per_s = measure_bulk(bank, pool, FactGenerator(f"bulk-{n}"), str(n))
    return LatencyRow(
        n=n,
        users=plan.users(n),
        in_scope=in_scope,
        search=Percentiles.of(search),
        save=Percentiles.of(save_times),
        save_duplicates=duplicates,
        bulk_items=BULK_ITEMS,
        bulk_per_s=bulk_per_s,
        raw_embed_per_s=raw_per_s,
        peak_rss_mib=peak_rss_mib(),
        rss_mib=current_rss_mib(),
        db_bytes=_db_bytes(bank, Path(build.path)),
        build=build,
        load_avg=os.getloadavg()[0],
        recall=recall,
        hnsw_recall=hnsw_recall,
    )


def _db_bytes(bank: MemoryBank, path: Path) -> int:
    if isinstance(bank.store, PostgresStore):
        return int(bank.store.stats()["database_bytes"])
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def _default_workdir() -> Path:
    root = Path.cwd() / "bench-results"
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="latency-", dir=root))


def _check_arguments(sizes: Sequence[int], per_user: int, pool_size: int, samples: int) -> None:
    if not sizes or any(n < 1 for n in sizes):
        raise ValueError("sizes must be positive numbers of memories")
    for name, value in (("per_user", per_user), ("pool_size", pool_size), ("samples", samples)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


def run_latency(
    *,
    sizes: list[int],
    per_user: int = 10_000,
    pool_size: int = 20_000,
    samples: int = 200,
    workdir: Path | None = None,
    console: Console | None = None,
    url: str | None = None,
) -> LatencyReport:
    """Build databases of each size in ``sizes`` (smallest first, each grown from the last)
    and measure ``search``/``save`` latency, bulk import rate and peak RSS at each.

    With ``url`` (``postgresql://…``) the database is that PostgreSQL one, grown in place
    (:mod:`memorybank.bench.latency_pg`), and each size also reports the recall@10 of vector
    search and of the HNSW index alone against exact search.

    ``per_user`` memories go to each filler user (the searched user has that many in scope);
    ``pool_size`` really-embedded texts are reused by the filler rows; ``samples`` searches
    and saves are measured per size. Databases, the pool cache and ``latency-report.json``
    are kept in ``workdir`` (default: a new temporary directory under ``./bench-results``).
    """
    _check_arguments(sizes, per_user, pool_size, samples)
    workdir = Path(workdir) if workdir is not None else _default_workdir()
    workdir.mkdir(parents=True, exist_ok=True)
    console = console or Console(stderr=True)
    pool_embedder = build_embedder(Settings(url=f"sqlite:///{_db_path(workdir, 0)}"))
    try:
        pool = load_pool(workdir, pool_size, pool_embedder, console)
        plan = FillPlan(per_user, pool_size, pool_embedder.model_id)
    finally:
        pool_embedder.close()
    postgres = url is not None and url.startswith(("postgresql://", "postgres://"))
    if url is not None and not postgres:
        raise ValueError(f"--url must be a postgresql:// URL, not {url!r}")
    rows = []
    for n in sorted(set(sizes)):
        if url is not None:
            from memorybank.bench.latency_pg import ensure_pg_database

            build = ensure_pg_database(url, n, plan, pool, console)
        else:
            build = ensure_database(workdir, n, plan, pool, console)
        console.print(f"measuring N={n:,} …")
        with memorybank.open(url or f"sqlite:///{build.path}") as bank:
            rows.append(measure_size(bank, n, plan, pool, samples, build))
    report = LatencyReport(
        targets=POSTGRES_TARGETS if postgres else Targets(),
        rows=rows,
        settings={
            "sizes": sorted(set(sizes)),
            "per_user": per_user,
            "pool_size": pool_size,
            "samples": samples,
            "bulk_items": BULK_ITEMS,
            "bulk_batch": BULK_BATCH,
            "workdir": str(workdir),
            "backend": "postgres" if postgres else "sqlite",
        },
    )
    (workdir / "latency-report.json").write_text(json.dumps(report.as_dict(), indent=2))
    return report


__all__ = [
    "FactGenerator",
    "LatencyReport",
    "LatencyRow",
    "Percentiles",
    "Targets",
    "run_latency",
]
