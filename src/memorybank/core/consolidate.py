"""Consolidation (seed 000, future 1): find the duplicates a scope already holds and merge
each one into the fact it repeats, after a preview.

Duplicates stored before the judge of :mod:`memorybank.rules.verdicts` existed (seed 000's "cosine
> 0.95" let "User currently lives in London" and "User lives in London" both in), or saved by two
tools at once, stay until something tidies them. Facts are taken most specific first (then
most important, then newest); each is judged against its nearest earlier facts that are kept
(at most :attr:`~memorybank.rules.verdicts.Thresholds.candidates` of them, at least
:attr:`~memorybank.rules.verdicts.Thresholds.candidate` similar, nearest first: the pairs a
save of it would have judged), and joins the first one the judge says it adds nothing to;
otherwise it is kept. The kept memory takes its cluster's highest importance and all its
tags; each merged memory is marked superseded by the kept one, with a MERGE history event on
both, so it leaves search and the prompt but stays in history (and a forget still reaches it).

**Bounded work (issue 27).** Judging every pair of similar facts was quadratic in time and
memory (2,000 near-duplicates: 17 s and +490 MiB; a 1 MiB import holds ~16,000). Now each fact
is judged against at most a handful of neighbours, and one call spends at most a
:class:`Budget`: facts examined (a page, ``limit``), pairs judged and similarities computed.
Past it the answer carries a ``next_cursor`` to continue from (facts are ordered, so the
cursor is the place of the last fact examined); :func:`run_all` goes through every page in
one process, for the CLI and the scheduled job.

A page judges its facts against every kept fact before them, those of earlier pages
included, as they are stored now: apply a page's merges before asking for the next one, or
a fact an earlier preview page merges may be shown kept on a later one (applying never merges
a fact twice: it recomputes its page, and a merged fact is no longer current).

Nothing changes on a preview (``dry_run=True``, the default); applying recomputes the page,
so a memory changed in between is judged as it is now.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from memorybank.core.rewrite import mark_superseded
from memorybank.core.scopes import scope_set
from memorybank.errors import ValidationError
from memorybank.model import (
    Channel,
    EventKind,
    HistoryEvent,
    Memory,
    MemoryFilter,
    Role,
    Scope,
    ScopeSet,
    utcnow,
)
from memorybank.model.stored import from_us, to_us
from memorybank.rules.intake import is_conversation
from memorybank.rules.permissions import Action, require, retires_by_save
from memorybank.rules.verdicts import (
    THRESHOLDS,
    Judge,
    Relation,
    specificity,
    surely_replaces,
    verdict,
)
from memorybank.stores.base import Store

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

#: Facts one call examines unless asked otherwise (one page), and at most.
PAGE_FACTS = 1000
MAX_PAGE_FACTS = 5000
#: Pairs one call judges at most. A fact is judged against at most
#: ``THRESHOLDS.candidates`` (3) earlier facts, so a default page stays well under it; it
#: binds for larger pages, and is what a call costs in the judge's time (~25-60 µs a pair).
MAX_PAIRS = 10_000
#: Similarities (fact × earlier fact) one call computes at most: a page's matrix products
#: grow with the scope, and this keeps one call's share of them to ~0.1-0.5 s on one core
#: whatever the scope's size (a page in a scope of 100,000 facts examines ~400).
MAX_SIMILARITIES = 40_000_000
#: Rows of similarities computed at once (memory stays ~ BLOCK × scope size floats: 20 MB at
#: 20,000 facts).
_BLOCK = 256
#: Memories read a page at a time.
_READ_PAGE = 1000

#: Which budget ended a call early.
StoppedBy = Literal["facts", "pairs", "similarities"]


@dataclass(frozen=True)
class Budget:
    """What one consolidation call may spend: ``facts`` examined (the page size), ``pairs``
    judged and ``similarities`` computed. The call stops before the fact that would go over
    and says where to continue; it always examines at least one fact, so paging ends.

    >>> Budget(facts=0)
    Traceback (most recent call last):
    memorybank.errors.ValidationError: limit must be from 1 to 5000 facts, not 0
    """

    facts: int = PAGE_FACTS
    pairs: int = MAX_PAIRS
    similarities: int = MAX_SIMILARITIES

    def __post_init__(self) -> None:
        if not 1 <= self.facts <= MAX_PAGE_FACTS:
            raise ValidationError(
                f"limit must be from 1 to {MAX_PAGE_FACTS} facts, not {self.facts}", field="limit"
            )
        if self.pairs < THRESHOLDS.candidates or self.similarities < 1:
            raise ValidationError(
                f"a budget must allow at least {THRESHOLDS.candidates} pairs (one fact's) and "
                "one similarity"
            )


@dataclass(frozen=True)
class Merge:
    """One cluster: the memory kept and the memories merged into it (each adds nothing)."""

    keep: Memory
    merged: tuple[Memory, ...]
    importance: int  # the kept memory's importance after the merge (the cluster's highest)
    tags: tuple[str, ...]  # the kept memory's tags after the merge (all the cluster's)

    def as_dict(self) -> dict[str, object]:
        """The merge as plain data (for the API and the CLI)."""
        return {
            "keep": {"id": self.keep.id, "content": self.keep.content},
            "merged": [{"id": m.id, "content": m.content} for m in self.merged],
            "importance": self.importance,
            "tags": list(self.tags),
        }


@dataclass(frozen=True)
class Supersession:
    """A stored fact a newer one of the scope surely replaces (issue 26: the rules a save
    follows, :func:`memorybank.rules.verdicts.replaces`), found among facts saved before saves
    superseded: applying marks ``old`` superseded by ``new``."""

    old: Memory
    new: Memory

    def as_dict(self) -> dict[str, object]:
        """The supersession as plain data (for the API and the CLI)."""
        return {
            "old": {"id": self.old.id, "content": self.old.content},
            "new": {"id": self.new.id, "content": self.new.content},
        }


@dataclass(frozen=True)
class Consolidation:
    """What :func:`consolidate` found in one scope (one page of it), and whether it was
    applied. ``next_cursor`` is where to continue when a budget ended the call before the
    scope's last fact (``None``: nothing left), ``stopped_by`` which budget that was."""

    user_id: str
    project_id: str | None
    merges: tuple[Merge, ...] = ()
    applied: bool = False
    examined: int = 0  # facts examined by this call
    pairs_judged: int = 0  # pairs of facts the judge read
    remaining: int = 0  # facts after the last one examined, left for later calls
    next_cursor: str | None = None
    stopped_by: StoppedBy | None = None
    supersessions: tuple[Supersession, ...] = ()
    # Found but left to a person: what the newer (or kept) fact's author could not have
    # retired by a save (a project member's fact over an owner's), never applied here.
    proposals: tuple[Supersession, ...] = ()
    proposed_merges: tuple[Merge, ...] = ()

    @property
    def merged_count(self) -> int:
        """How many memories are (or would be) merged into others."""
        return sum(len(m.merged) for m in self.merges)

    @property
    def truncated(self) -> bool:
        """Whether facts are left for another call (from :attr:`next_cursor`)."""
        return self.next_cursor is not None

    def as_dict(self) -> dict[str, object]:
        """The consolidation as plain data (for the API and the CLI)."""
        return {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "applied": self.applied,
            "examined": self.examined,
            "pairs_judged": self.pairs_judged,
            "remaining": self.remaining,
            "truncated": self.truncated,
            "next_cursor": self.next_cursor,
            "stopped_by": self.stopped_by,
            "merged_count": self.merged_count,
            "merges": [m.as_dict() for m in self.merges],
            "superseded_count": len(self.supersessions),
            "supersessions": [s.as_dict() for s in self.supersessions],
            "proposed_count": len(self.proposals)
            + sum(len(m.merged) for m in self.proposed_merges),
            "proposals": [s.as_dict() for s in self.proposals],
            "proposed_merges": [m.as_dict() for m in self.proposed_merges],
        }


# -- a scope's facts, in the order they are judged --------------------------------------------

#: The order of facts: most specific, most important, newest first, then by id.
_Key = tuple[int, int, int, str]


@dataclass
class _Facts:
    """A scope's current facts in judging order, with their vectors as rows in that order."""

    ids: list[str]
    contents: list[str]
    keys: list[_Key]
    vectors: npt.NDArray[np.float32]

    def __len__(self) -> int:
        return len(self.ids)

    def start_after(self, cursor: str | None) -> int:
        """The place of the first fact after ``cursor`` (0 without one)."""
        return 0 if cursor is None else bisect.bisect_right(self.keys, _parse_cursor(cursor))

    def cursor(self, index: int) -> str:
        """The cursor of the fact at ``index``: a later call continues after it."""
        spec, importance, updated, memory_id = self.keys[index]
        return f"{-spec}:{-importance}:{-updated}:{memory_id}"


def _parse_cursor(cursor: str) -> _Key:
    spec, importance, updated, memory_id = (cursor.split(":", 3) + ["", "", ""])[:4]
    try:
        return (-int(spec), -int(importance), -int(updated), memory_id)
    except ValueError:
        raise ValidationError(
            f"cursor {cursor[:80]!r} is not one this server gave: start again without it",
            field="cursor",
        ) from None


#: Each text's specificity, kept across calls: reading a scope's texts again for the next page
#: is cheap, tokenising them all again is most of a call's time (bounded: ~5 MB at most).
_specificity = functools.lru_cache(maxsize=32_768)(specificity)


def _key(memory: Memory) -> _Key:
    updated = to_us(memory.updated_at)
    return (-_specificity(memory.content), -memory.importance, -updated, memory.id)


def _pages(store: Store, scopes: ScopeSet) -> Iterator[list[Memory]]:
    """The scope's current facts, a page at a time (conversation turns left out)."""
    current = MemoryFilter(superseded=False)
    offset = 0
    while True:
        page = store.list_memories(
            scopes, current, limit=_READ_PAGE, offset=offset, order="created_asc"
        )
        yield [m for m in page if not is_conversation(m.ring, m.source)]
        if len(page) < _READ_PAGE:
            return
        offset += _READ_PAGE


def _load(store: Store, scope: Scope) -> _Facts:
    """The scope's current facts with a vector, in judging order. Only ids, texts and order
    keys are kept (not whole memories), and the vectors go straight into one matrix."""
    scopes = ScopeSet.of(scope)
    ids: list[str] = []
    contents: list[str] = []
    keys: list[_Key] = []
    seen: set[str] = set()  # pages read by offset may repeat a row if the scope changes
    matrix: npt.NDArray[np.float32] | None = None
    for page in _pages(store, scopes):
        vectors = store.vectors_of([m.id for m in page]) if page else {}
        for memory in page:
            vector = vectors.get(memory.id)
            if vector is None or memory.id in seen:
                continue
            if matrix is None:  # the scope's size, turns included, bounds the facts
                size = max(1, store.count(scopes, MemoryFilter(superseded=False)))
                matrix = np.zeros((size, len(vector)), dtype=np.float32)
            elif len(ids) == len(matrix):  # the scope grew while it was read
                matrix = np.concatenate([matrix, np.zeros_like(matrix)])
            matrix[len(ids)] = vector
            seen.add(memory.id)
            ids.append(memory.id)
            contents.append(memory.content)
            keys.append(_key(memory))
    if matrix is None:
        return _Facts([], [], [], np.zeros((0, 1), dtype=np.float32))
    order = sorted(range(len(ids)), key=keys.__getitem__)
    return _Facts(
        ids=[ids[i] for i in order],
        contents=[contents[i] for i in order],
        keys=[keys[i] for i in order],
        vectors=matrix[np.asarray(order, dtype=np.int64)],  # a copy, in judging order
    )


# -- judging, within a budget ------------------------------------------------------------------


@dataclass
class _Page:
    """What one page of a pass did: facts ``start`` to ``end`` examined, and the facts each
    kept fact took in (by place)."""

    start: int
    end: int = 0
    pairs: int = 0
    similarities: int = 0
    joined: dict[int, list[int]] = field(default_factory=dict)
    # For each fact, the older facts judged beside it (with their similarity): the pairs a
    # save of it would have judged, where it may replace one.
    olders: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    stopped_by: StoppedBy | None = None


class _Pass:
    """One pass over a scope's facts, page by page; which facts are still kept is carried
    from page to page (facts before the first page are taken as kept)."""

    def __init__(self, facts: _Facts, judge: Judge) -> None:
        self.facts = facts
        self.judge = judge
        self.kept = np.ones(len(facts), dtype=bool)

    def page(self, start: int, budget: Budget) -> _Page:
        """Examine facts from ``start`` until the end of the scope or of ``budget``."""
        done = _Page(start=start, end=start)
        last = min(len(self.facts), start + budget.facts)
        while done.end < last and done.stopped_by is None:
            rows = self._rows(done, last, budget)
            if rows == 0:
                done.stopped_by = "similarities"
                break
            width = done.end + rows  # each row is compared with every fact before it
            block = self.facts.vectors[done.end : width] @ self.facts.vectors[:width].T
            done.similarities += rows * width
            for offset in range(rows):
                if done.pairs + THRESHOLDS.candidates > budget.pairs:
                    done.stopped_by = "pairs"
                    break
                index = done.end
                done.pairs += self._place(index, block[offset, :index], done)
                done.end += 1
        if done.stopped_by is None and done.end < len(self.facts):
            done.stopped_by = "facts"
        return done

    def _rows(self, done: _Page, last: int, budget: Budget) -> int:
        """How many facts the next block examines: a full block, fewer at the end of the page
        or of the similarity budget, and at least one fact in a page."""
        rows = min(_BLOCK, last - done.end)
        left = budget.similarities - done.similarities
        while rows > 0 and rows * (done.end + rows) > left:
            rows //= 2
        if rows == 0 and done.end == done.start:
            return 1
        return rows

    def _place(self, index: int, row: npt.NDArray[np.float32], done: _Page) -> int:
        """Judge fact ``index`` against its nearest kept earlier facts (``row``: its
        similarity to each earlier fact) and merge it into the first it repeats; else note
        the pairs where one may replace the other. The number of pairs judged."""
        near = np.flatnonzero(row >= THRESHOLDS.candidate)
        near = near[self.kept[near]]
        most = THRESHOLDS.candidates
        if len(near) > most:
            near = near[np.argpartition(-row[near], most - 1)[:most]]
        near = near[np.argsort(-row[near], kind="stable")]
        contents = self.facts.contents
        # The one judge every path asks, one batch for the fact's neighbours: a later fact
        # against each earlier, kept one it may be merged into.
        scores = self.judge.score([(contents[e], contents[index]) for e in near.tolist()])
        for judged, (earlier, score) in enumerate(zip(near.tolist(), scores, strict=True), 1):
            said = verdict(score, contents[index], contents[earlier], float(row[earlier]))
            if said.relation in (Relation.DUPLICATE, Relation.RESTATED):
                self.kept[index] = False
                done.joined.setdefault(earlier, []).append(index)
                return judged
        for earlier in near.tolist():  # who may replace whom: read from the newer fact
            newer, older = (index, earlier) if self._newer(index, earlier) else (earlier, index)
            done.olders.setdefault(newer, []).append((older, float(row[earlier])))
        return len(near)

    def _newer(self, index: int, other: int) -> bool:
        """Whether fact ``index`` was saved (or last changed) after fact ``other``."""
        return self.facts.keys[index][2] < self.facts.keys[other][2]  # keys hold -time


# -- merges ------------------------------------------------------------------------------------


def _current(store: Store, scope: Scope, facts: _Facts) -> Callable[[int], Memory | None]:
    """The memory at a place of ``facts`` as stored now, or ``None`` when its text changed
    since it was judged, or it is gone or superseded."""
    scopes = ScopeSet.of(scope)

    def current(index: int) -> Memory | None:
        memory = store.get(facts.ids[index], scopes)
        if memory is None or memory.superseded_by is not None:
            return None
        return memory if memory.content == facts.contents[index] else None

    return current


def _supersessions(store: Store, scope: Scope, judging: _Pass, page: _Page) -> list[Supersession]:
    """The page's sure replacements among kept facts (a fact merged into another is the
    merge's), as stored now: each newer fact against all the older ones judged beside it, as
    :func:`memorybank.rules.verdicts.replaces` reads a save, so a change retires one at most."""
    texts, kept = judging.facts.contents, judging.kept
    replaced: dict[int, int] = {}
    for newer, olders in sorted(page.olders.items()):
        olders = [(older, sim) for older, sim in olders if kept[older] and older not in replaced]
        if not kept[newer] or not olders:
            continue
        pairs = [(texts[older], texts[newer]) for older, _ in olders]
        sure = surely_replaces(judging.judge.score(pairs))
        for (older, _), surely in zip(olders, sure, strict=True):
            if surely:
                replaced[older] = newer
    current = _current(store, scope, judging.facts)
    found = []
    for older, newer in sorted(replaced.items()):
        old, new = current(older), current(newer)
        if old is not None and new is not None:
            found.append(Supersession(old=old, new=new))
    return found


def _merges(store: Store, scope: Scope, facts: _Facts, page: _Page) -> list[Merge]:
    """The page's clusters as merges of the memories as stored now; a memory whose text
    changed since it was judged, or that is gone or merged, is left out."""
    current = _current(store, scope, facts)

    merges = []
    for keeper in sorted(page.joined):
        keep = current(keeper)
        merged = [m for m in map(current, page.joined[keeper]) if m is not None]
        if keep is None or not merged:
            continue
        cluster = [keep, *merged]
        merges.append(
            Merge(
                keep=keep,
                merged=tuple(merged),
                importance=max(m.importance for m in cluster),
                tags=tuple(dict.fromkeys(t for m in cluster for t in m.tags)),
            )
        )
    return merges


#: A project member's role as the accounts say now: (project_id, user_id) -> role, or None
#: for someone who is not (or no longer) a member. Without one (a host application's own
#: call, with no accounts) every author may retire what consolidation finds.
RoleOf = Callable[[str, str], "Role | None"]


@dataclass(frozen=True)
class _Split:
    """What a page found, split by who may retire what (:func:`_split`)."""

    merges: list[Merge]
    supersessions: list[Supersession]
    proposed_merges: list[Merge]
    proposals: list[Supersession]


def _split(
    project_id: str | None,
    merges: Sequence[Merge],
    supersessions: Sequence[Supersession],
    roles: RoleOf | None,
) -> _Split:
    """Which merges and supersessions consolidation may apply: those whose newer fact's
    author (for a merge, the kept fact's) could have retired the older one by a save
    (:func:`memorybank.rules.permissions.retires_by_save`); the rest are proposals. The
    author is the memory's ``user_id``, who saved it, not whoever asks to tidy up."""

    def may(newer: Memory) -> bool:
        if roles is None or project_id is None:
            return True
        return retires_by_save(project_id, roles(project_id, newer.user_id))

    return _Split(
        merges=[m for m in merges if may(m.keep)],
        supersessions=[f for f in supersessions if may(f.new)],
        proposed_merges=[m for m in merges if not may(m.keep)],
        proposals=[f for f in supersessions if not may(f.new)],
    )


def run(
    store: Store,
    user_id: str,
    project_id: str | None = None,
    *,
    dry_run: bool = True,
    only: Sequence[str] | None = None,
    role: Role | None = None,
    actor: str | None = None,
    cursor: str | None = None,
    budget: Budget | None = None,
    judge: Judge | None = None,
    roles: RoleOf | None = None,
) -> Consolidation:
    """Find (and unless ``dry_run``, apply) the merges of one page of one scope: the user's
    private memory, or ``project_id``'s, from ``cursor`` (the start without one) until
    ``budget`` is spent. Applying in a project needs its admin or owner (``role``); ``only``
    applies just the merges that keep these ids (the ones a person confirmed). With
    ``roles``, what the newer fact's author could not have retired by a save is only
    proposed (``proposals``, ``proposed_merges``), whoever applies.

    >>> a = bank.save("u1", "User lives in London", "identity")
    >>> b = bank.save("u1", "User currently lives in London", "identity", on_conflict="keep")
    >>> preview = consolidate(bank, "u1")  # b was refused already: nothing to merge
    >>> preview.merged_count, preview.applied, preview.next_cursor
    (0, False, None)
    """
    if not dry_run:
        require(role, Action.CHANGE, project_id)
    scope = Scope(user_id=user_id, project_id=project_id)
    facts = _load(store, scope)
    start = facts.start_after(cursor)
    judging = _Pass(facts, judge or _shipped())
    page = judging.page(start, budget or Budget())
    merges = _merges(store, scope, facts, page)
    newer = _supersessions(store, scope, judging, page)
    if only is not None:
        merges = [m for m in merges if m.keep.id in set(only)]
        newer = [s for s in newer if s.new.id in set(only)]
    split = _split(project_id, merges, newer, roles)
    if not dry_run:
        apply(store, split.merges, actor or user_id, split.supersessions)
    more = page.end < len(facts)
    return Consolidation(
        user_id=user_id,
        project_id=project_id,
        merges=tuple(split.merges),
        applied=not dry_run,
        examined=page.end - page.start,
        pairs_judged=page.pairs,
        remaining=len(facts) - page.end,
        next_cursor=facts.cursor(page.end - 1) if more else None,
        stopped_by=page.stopped_by,
        supersessions=tuple(split.supersessions),
        proposals=tuple(split.proposals),
        proposed_merges=tuple(split.proposed_merges),
    )


def run_all(
    store: Store,
    user_id: str,
    project_id: str | None = None,
    *,
    dry_run: bool = True,
    role: Role | None = None,
    actor: str | None = None,
    budget: Budget | None = None,
    judge: Judge | None = None,
    roles: RoleOf | None = None,
) -> Consolidation:
    """Every page of one scope in this process: the facts are read once, each page is
    judged within ``budget`` and (unless ``dry_run``) applied before the next, and which facts
    were merged is carried from page to page, so a preview is the one a run applies. The
    merges into one kept memory on several pages are shown as one. ``roles`` as for
    :func:`run`."""
    if not dry_run:
        require(role, Action.CHANGE, project_id)
    scope = Scope(user_id=user_id, project_id=project_id)
    facts = _load(store, scope)
    judging = _Pass(facts, judge or _shipped())
    found: dict[str, Merge] = {}
    proposed: dict[str, Merge] = {}
    newer: list[Supersession] = []
    proposals: list[Supersession] = []
    examined = pairs = 0
    while examined < len(facts):
        page = judging.page(examined, budget or Budget())
        merges = _merges(store, scope, facts, page)
        split = _split(project_id, merges, _supersessions(store, scope, judging, page), roles)
        if not dry_run:
            apply(store, split.merges, actor or user_id, split.supersessions)
        newer += split.supersessions
        proposals += split.proposals
        for merge in split.merges:
            found[merge.keep.id] = _joined(found.get(merge.keep.id), merge)
        for merge in split.proposed_merges:
            proposed[merge.keep.id] = _joined(proposed.get(merge.keep.id), merge)
        examined, pairs = page.end, pairs + page.pairs
    return Consolidation(
        user_id=user_id,
        project_id=project_id,
        merges=tuple(found.values()),
        applied=not dry_run,
        examined=examined,
        pairs_judged=pairs,
        supersessions=tuple(newer),
        proposals=tuple(proposals),
        proposed_merges=tuple(proposed.values()),
    )


def _joined(earlier: Merge | None, later: Merge) -> Merge:
    """One merge of two into the same kept memory (found on two pages)."""
    if earlier is None:
        return later
    return Merge(
        keep=earlier.keep,
        merged=earlier.merged + later.merged,
        importance=max(earlier.importance, later.importance),
        tags=tuple(dict.fromkeys(earlier.tags + later.tags)),
    )


#: The store meta key holding when the scheduled job last ran (µs since the epoch).
LAST_RUN_KEY = "consolidated_at_us"
#: Who the scheduled job's history events name.
SCHEDULED_ACTOR = "memorybank:consolidation"


def consolidate(
    bank: MemoryBank,
    user_id: str,
    project_id: str | None = None,
    *,
    dry_run: bool = True,
    only: Sequence[str] | None = None,
    role: Role | None = None,
    cursor: str | None = None,
    budget: Budget | None = None,
    roles: RoleOf | None = None,
) -> Consolidation:
    """Merge one page of one scope's duplicates in ``bank`` (:func:`run`, with the ids
    checked first): a preview unless ``dry_run=False``; ``only`` applies just the merges
    keeping these ids; ``cursor`` continues where an earlier call's ``next_cursor`` said;
    ``roles`` says who may retire what (:data:`RoleOf`)."""
    scope_set(user_id, project_id)
    return run(
        bank.store,
        user_id,
        project_id,
        dry_run=dry_run,
        only=only,
        role=role,
        cursor=cursor,
        budget=budget,
        judge=bank.judge,
        roles=roles,
    )


def consolidate_all(
    bank: MemoryBank,
    user_id: str,
    project_id: str | None = None,
    *,
    dry_run: bool = True,
    role: Role | None = None,
    roles: RoleOf | None = None,
) -> Consolidation:
    """Merge all of one scope's duplicates in ``bank``, page by page (:func:`run_all`)."""
    scope_set(user_id, project_id)
    return run_all(
        bank.store, user_id, project_id, dry_run=dry_run, role=role, roles=roles, judge=bank.judge
    )


def _shipped() -> Judge:
    """The shipped judge, for a run given only a store (the scheduled tidy-up)."""
    from memorybank.providers.judges.local import default_judge

    return default_judge()


def run_scheduled(
    store: Store, every: timedelta, roles: RoleOf | None = None, judge: Judge | None = None
) -> list[Consolidation] | None:
    """The server's scheduled tidy-up: when ``every`` has passed since the last run (kept in
    the store, so restarts and other workers agree), apply the merges of every scope, page by
    page; the scopes where something was merged, or ``None`` when it was not due yet. With
    ``roles`` (the server's accounts), what a newer fact's author could not have retired by a
    save stays as it is: the job acts for nobody in particular, so it borrows nobody's rights.
    ``judge`` is the bank's (an LLM's if configured; the shipped model by default), as for a
    call.

    Applying without a preview is the operator's choice (``MEMORYBANK_CONSOLIDATE_EVERY_HOURS``
    is off by default); each merge can still be read in history and undone by hand.
    """
    now = utcnow()
    last = store.get_meta(LAST_RUN_KEY)
    if last is not None and now - from_us(int(last)) < every:
        return None
    store.set_meta(LAST_RUN_KEY, str(to_us(now)))  # first, so a parallel worker skips
    done = [
        run_all(
            store,
            scope.user_id,
            scope.project_id,
            dry_run=False,
            actor=SCHEDULED_ACTOR,
            roles=roles,
            judge=judge,
        )
        for scope in store.scopes()
    ]
    return [c for c in done if c.merges]


def apply(
    store: Store,
    merges: Sequence[Merge],
    actor: str,
    supersessions: Sequence[Supersession] = (),
) -> None:
    """Apply ``merges``: the kept memory takes the cluster's importance and tags, each merged
    memory is superseded by it; a MERGE event on each (no text, as for SUPERSEDE: the link is
    ``superseded_by``, and a forget of either must not leave words in the other's history).
    Each of ``supersessions`` marks its old fact superseded by the new, a SUPERSEDE event."""
    for merge in merges:
        now = utcnow()
        kept = merge.keep.model_copy(
            update={"importance": merge.importance, "tags": merge.tags, "updated_at": now}
        )
        through = Channel.CONSOLIDATION
        event = HistoryEvent.about(merge.keep, EventKind.MERGE, actor, channel=through)
        store.replace(kept, None, event)
        for old in merge.merged:
            mark_superseded(store, old, merge.keep.id, actor, kind=EventKind.MERGE, channel=through)

    # After the merges: a merge rewrites its kept fact, which may be one a newer fact replaced.
    for found in supersessions:
        old = store.get(found.old.id, ScopeSet.of(found.old.scope)) or found.old
        mark_superseded(store, old, found.new.id, actor, channel=Channel.CONSOLIDATION)


__all__ = [
    "LAST_RUN_KEY",
    "MAX_PAGE_FACTS",
    "MAX_PAIRS",
    "MAX_SIMILARITIES",
    "PAGE_FACTS",
    "SCHEDULED_ACTOR",
    "RoleOf",
    "Budget",
    "Consolidation",
    "Merge",
    "Supersession",
    "apply",
    "consolidate",
    "consolidate_all",
    "run",
    "run_all",
    "run_scheduled",
]
