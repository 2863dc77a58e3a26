"""Seed 002 §8's success metrics, for org admins (``GET /api/stats``, ``memorybank stats``,
the UI's Insights page): adoption, retention quality, token cost, and how saves and
recalls went, over a window of days (30 by default).

What each figure means:

* **active users** — users who changed memory, used an API key or a conversation in the
  window; **share with memory** — of those, how many have at least one memory (target 30 %).
* **memories per user / per project** — how many current memories each has (not
  superseded; conversation turns are not counted), as a distribution (targets 5–15 and 3–10).
* **deleted within 7 days** — of the memories created in the window, the share deleted
  within 7 days of creation (target under 20 %), and by whom: through the user's own hand
  (UI, REST) or the AI's tools.
* **memory block** — average and 95th percentile size, in tokens, of the memory block in the
  system prompts memorybank built (target under 500), and its share of those prompts
  (the host's conversation is not seen; the seed's target for all context is 5 %).
* **duplicates refused, conflicts surfaced** — decided where a save is decided (issue 10).
* **search hit rate** — the share of searches (and so recalls, which search) that returned at
  least one memory (issue 11).

>>> metrics = success_metrics(bank)
>>> metrics.window_days, metrics.search_hits.searches >= 0
(30, True)
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from memorybank.core.usage import BLOCK_BUCKETS
from memorybank.stores.insights_sql import Facts, read_facts

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

_DAY_US = 86_400_000_000
_WEEK_US = 7 * _DAY_US
USER_BUCKETS = ((0, 0), (1, 4), (5, 15), (16, 50), (51, None))
PROJECT_BUCKETS = ((0, 0), (1, 2), (3, 10), (11, 30), (31, None))


class Bucket(BaseModel):
    """How many users (or projects) hold between ``low`` and ``high`` memories."""

    label: str
    count: int


class Distribution(BaseModel):
    """Memories per user (or per project)."""

    count: int
    total: int
    mean: float
    median: float
    p95: float
    max: int
    buckets: list[Bucket]
    target: str


class Adoption(BaseModel):
    active_users: int
    active_users_with_memory: int
    share_with_memory: float | None
    target_share: float = 0.30
    memories_per_user: Distribution
    memories_per_project: Distribution


class Retention(BaseModel):
    created: int
    deleted_within_7_days: int
    share_deleted_within_7_days: float | None
    target_max_share: float = 0.20
    #: By channel: ``user`` (by hand), ``ai`` (a tool), ``import``, ``consolidation``.
    deleted_within_7_days_by: dict[str, int]


class TokenUse(BaseModel):
    prompts: int
    block_tokens_avg: float | None
    #: The 95th percentile is at most this many tokens (``None``: over the largest bucket).
    block_tokens_p95: int | None
    block_share_of_prompt: float | None
    target_block_tokens: int = 500
    target_share_of_context: float = 0.05


class SaveOutcomes(BaseModel):
    saves: int
    duplicates_refused: int
    conflicts_surfaced: int


class SearchHits(BaseModel):
    searches: int
    searches_with_hits: int
    hit_rate: float | None


class SuccessMetrics(BaseModel):
    """Seed 002 §8's metrics over the last ``window_days`` days, for ``org_id``'s users and
    projects (``None``: the whole database)."""

    org_id: str | None
    window_days: int
    users: int
    projects: int
    adoption: Adoption
    retention: Retention
    tokens: TokenUse
    saves: SaveOutcomes
    search_hits: SearchHits


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _percentile(ordered: Sequence[int], q: float) -> float:
    if not ordered:
        return 0.0
    return float(ordered[max(0, math.ceil(q * len(ordered)) - 1)])


def distribution(
    counts: Sequence[int], buckets: Sequence[tuple[int, int | None]], target: str
) -> Distribution:
    """The distribution of ``counts`` (one per user or project).

    >>> d = distribution([0, 3, 7, 12], USER_BUCKETS, "5–15")
    >>> d.mean, d.median, [b.count for b in d.buckets]
    (5.5, 3.0, [1, 1, 2, 0, 0])
    """
    ordered = sorted(counts)
    n = len(ordered)
    labelled = [
        Bucket(
            label=str(low) if low == high else f"{low}+" if high is None else f"{low}–{high}",
            count=sum(1 for c in ordered if c >= low and (high is None or c <= high)),
        )
        for low, high in buckets
    ]
    return Distribution(
        count=n,
        total=sum(ordered),
        mean=round(sum(ordered) / n, 2) if n else 0.0,
        median=_percentile(ordered, 0.5),
        p95=_percentile(ordered, 0.95),
        max=ordered[-1] if ordered else 0,
        buckets=labelled,
        target=target,
    )


def _usage(facts: Facts, users: Collection[str] | None) -> Counter[str]:
    total: Counter[str] = Counter()
    for (user, name), value in facts.usage.items():
        if users is None or user in users:
            total[name] += value
    return total


def _block_p95(usage: Counter[str]) -> int | None:
    prompts = usage["prompts"]
    seen = 0
    for bound in BLOCK_BUCKETS:
        seen += usage[f"block_le_{bound}"]
        if prompts and seen >= 0.95 * prompts:
            return bound
    return None


def success_metrics(
    bank: MemoryBank,
    *,
    users: Collection[str] | None = None,
    projects: Collection[str] | None = None,
    org_id: str | None = None,
    window_days: int = 30,
) -> SuccessMetrics:
    """The metrics for these users and projects (``None``: every one in the database)."""
    bank.usage.flush()  # this process's latest counts
    now_us = int(time.time() * 1_000_000)
    facts = read_facts(bank.store, now_us - window_days * _DAY_US, now_us // _DAY_US - window_days)
    people = set(users) if users is not None else facts.authors | set(facts.private_counts)
    shared = set(projects) if projects is not None else set(facts.project_counts)
    active = facts.active & people if users is not None else facts.active

    def mine(user: str, project: str | None) -> bool:
        return project in shared if project is not None else user in people

    created = sum(1 for u, p in facts.created if mine(u, p))
    early = [
        d
        for d in facts.deletions
        if mine(d.user_id, d.project_id) and d.lived_us is not None and d.lived_us <= _WEEK_US
    ]
    gone = [d for d in facts.deletions if mine(d.user_id, d.project_id)]
    usage = _usage(facts, people if users is not None else None)
    return SuccessMetrics(
        org_id=org_id,
        window_days=window_days,
        users=len(people),
        projects=len(shared),
        adoption=Adoption(
            active_users=len(active),
            active_users_with_memory=len(active & facts.authors),
            share_with_memory=_ratio(len(active & facts.authors), len(active)),
            memories_per_user=distribution(
                [facts.private_counts.get(u, 0) for u in people], USER_BUCKETS, "5–15"
            ),
            memories_per_project=distribution(
                [facts.project_counts.get(p, 0) for p in shared], PROJECT_BUCKETS, "3–10"
            ),
        ),
        retention=Retention(
            # Memories created in the window: those still stored and those deleted since.
            created=created + len([d for d in gone if d.lived_us is not None]),
            deleted_within_7_days=len(early),
            share_deleted_within_7_days=_ratio(
                len(early), created + len([d for d in gone if d.lived_us is not None])
            ),
            deleted_within_7_days_by=dict(Counter(d.channel or "unknown" for d in early)),
        ),
        tokens=TokenUse(
            prompts=usage["prompts"],
            block_tokens_avg=_ratio(usage["block_tokens"], usage["prompts"]),
            block_tokens_p95=_block_p95(usage),
            block_share_of_prompt=_ratio(usage["block_tokens"], usage["prompt_tokens"]),
        ),
        saves=SaveOutcomes(
            saves=usage["saves"],
            duplicates_refused=usage["duplicates_refused"],
            conflicts_surfaced=usage["conflicts_surfaced"],
        ),
        search_hits=SearchHits(
            searches=usage["searches"],
            searches_with_hits=usage["searches_with_hits"],
            hit_rate=_ratio(usage["searches_with_hits"], usage["searches"]),
        ),
    )


__all__ = [
    "Adoption",
    "Distribution",
    "SearchHits",
    "Retention",
    "SaveOutcomes",
    "SuccessMetrics",
    "TokenUse",
    "distribution",
    "success_metrics",
]
