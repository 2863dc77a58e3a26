"""Forget by request, reviewed first (seed 003's ``forget_preview`` / ``forget_confirm``).

:func:`forget_preview` finds the memories a request like "my old address on Oak Street" is
about and marks each FORGET (delete), REWRITE (keep it without the part to forget) or KEEP,
with a reason; and REDACT a memory whose current text is fine but whose history holds an
earlier version that mentions the request (the memory and its events stay, its earlier texts
are erased). The plan is stored (id ``fp_…``) for its user for 24 hours; the user reviews it,
then :func:`forget_confirm` applies it in one transaction (every step, or nothing) or
:func:`forget_cancel` drops it. A plan is used at most once.

Who decides:

* with an LLM, the model judges every candidate and writes the rewritten text (checked by
  the same rules as saving; a bad answer is retried once with the error);
* without one, REWRITE is never proposed, and the rule is: **FORGET a candidate that
  mentions at least two of the request's content words** (compared by stem; stop words and
  request words like "forget" or "everything" ignored), **or the only one when the request
  has a single content word, or one that mentions fewer but whose other words are about
  the request's other words; KEEP the rest.** Two shared words ("Oak Street", "home
  address") mark a memory as being about the request; one common word ("old") does not.
  A memory that shares only a name with "my old job at Globex" is about it when it says
  something of the user that the rest of the request is about: "User left Globex in 2023"
  (what is left of it, "User left in 2023", is at least ``THRESHOLDS.topic`` similar to
  "old job" by the embedder), not "User bought a Globex laptop". A name that is someone
  else's never counts: in "User's sister works at Globex" and "User's friend Dana joined
  Globex" the subject is a person of the user's (:func:`~memorybank.rules.policy.their_person`)
  and Globex is what that person does; only a name tied to such a person by a preposition
  ("User's boss at Globex") is the user's own. A request in the first person ("where I
  live", "my address") is about the user: a fact whose subject is another person ("User's
  sister Ines lives in Porto") is not about it however many words it shares, unless the
  request names that person ("my sister's address").
  A request for a thing of the user as such ("where I live"), naming no value of it, takes
  every value of it: "User moved to Lisbon" goes with "User lives in Berlin"
  (:mod:`memorybank.services.forget_slot` says which).
  Relevance ranks candidates but does not decide: it is relative to the best match, so it
  cannot tell a good match from the least bad one.

Candidates are the best search matches, superseded memories included, and the memories whose
history holds a matching earlier text (an old version that an update replaced): the store
finds those (:meth:`~memorybank.stores.base.Store.earlier_texts`, one indexed query over the
scopes' UPDATE events counting substrings of the request's stems, at least two when the
request has two)
and the same rule judges each earlier text, with or without an LLM (the LLM sees current texts
only). A KEEP whose earlier text matches becomes REDACT; FORGET and REWRITE take the old texts
with them anyway.

Forgetting is real: deleted text leaves the table, the full-text index, the vectors and the
history, a rewritten memory's old text leaves its history too, and a redacted memory's
history keeps its events without their earlier texts. Nothing of it stays in the database
files (see :mod:`memorybank.stores.sql_forget`).

>>> caller = Caller(user_id="sam")
>>> _ = bank.save("sam", "User's home address is 12 Oak Street", "identity")
>>> _ = bank.save("sam", "User moved away from Oak Street in 2021", "context")
>>> _ = bank.save("sam", "User prefers green tea", "preference")
>>> preview = forget_preview(bank, caller, "my old home address on Oak Street")
>>> sorted((item.action.value, item.memory.content) for item in preview.items)
... # doctest: +NORMALIZE_WHITESPACE
[('FORGET', 'User moved away from Oak Street in 2021'),
 ('FORGET', "User's home address is 12 Oak Street"),
 ('KEEP', 'User prefers green tea')]
>>> len(forget_confirm(bank, caller, preview.plan.id).forgotten)
2
>>> [m.content for m in bank.list("sam")]
['User prefers green tea']

A memory whose old version is the thing to forget keeps its current text and loses the old
one from its history:

>>> work = bank.save("sam", "User works at 12 Oak Street", "context").memory_id
>>> _ = bank.update(work, "sam", content="User works from home")
>>> preview = forget_preview(bank, caller, "my old address on Oak Street")
>>> [(item.memory.content, item.earlier) for item in preview.of(ForgetAction.REDACT)]
[('User works from home', ['User works at 12 Oak Street'])]
>>> forget_confirm(bank, caller, preview.plan.id).redacted == [work]
True
>>> [(e.kind.value, e.old_content, e.new_content) for e in bank.history(work, "sam")]
[('ADD', None, None), ('UPDATE', None, 'User works from home')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import Stemmer
from pydantic import BaseModel, ConfigDict, Field

from memorybank.core.relations import rejudge
from memorybank.core.scopes import scope_set
from memorybank.errors import NotFound, ProviderError, ValidationError
from memorybank.model import (
    Caller,
    ForgetAction,
    ForgetPlan,
    ForgetStep,
    Memory,
    SearchHit,
    utcnow,
)
from memorybank.providers.embedders.base import Vectors
from memorybank.providers.llm.client import JSONCompleter, complete_model
from memorybank.rules.intake import is_conversation
from memorybank.rules.permissions import Action, require
from memorybank.rules.policy import their_person, to_third_person, validate_memory
from memorybank.rules.query import query_terms, word_spans
from memorybank.rules.render import sanitize_memory_text
from memorybank.rules.third_person import is_first_person
from memorybank.rules.verdicts import THRESHOLDS
from memorybank.services.forget_slot import same_slot, whole_slot

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank
    from memorybank.providers.embedders.base import Embedder

#: How long a plan may wait for confirmation.
PLAN_TTL = timedelta(hours=24)
#: Without an LLM, how many of the request's content words a memory must mention.
MIN_SHARED_WORDS = 2
# Words that say what to do rather than what to forget.
_REQUEST_WORDS = frozenset(
    """forget forgetting delete remove erase wipe everything anything stuff thing things info
    information memory memories mention mentions mentioned please""".split()
)
MAX_TOP_K = 200
# What may stand between the words naming someone of the user's and a request's word for that
# word to still be the user's: a preposition ("User's manager at Globex", "User's colleagues
# from Globex"), not a verb ("User's sister works at Globex") nor the person's name ("User's
# sister Laura").
_ATTACHED = re.compile(r"\s*(?:at|in|from|of|with|for|on)\s+(?:(?:the|a|an)\s+)?", re.IGNORECASE)
# How many earlier texts of one REDACT item the preview text shows.
_SHOWN = 3


class PreviewItem(BaseModel):
    """One candidate of a preview: the memory as it is now, and what the plan does to it."""

    memory: Memory
    action: ForgetAction
    reason: str
    rewrite: str | None = None
    #: REDACT only: the earlier texts of the memory that leave its history (all of them).
    earlier: list[str] = Field(default_factory=list)


class ForgetPreview(BaseModel):
    """What :func:`forget_preview` proposes; ``plan`` is what was stored for confirming."""

    plan: ForgetPlan
    query: str
    summary: str
    items: list[PreviewItem]
    warnings: list[str] = Field(default_factory=list)

    def of(self, action: ForgetAction) -> list[PreviewItem]:
        """The items with ``action``, in plan order."""
        return [item for item in self.items if item.action == action]


class ForgetResult(BaseModel):
    """What :func:`forget_confirm` did. ``missing`` were already gone when it ran;
    ``redacted`` kept their current text and lost their earlier ones from history."""

    plan_id: str
    forgotten: list[str]
    rewritten: list[str]
    kept: int
    missing: list[str] = Field(default_factory=list)
    redacted: list[str] = Field(default_factory=list)


def forget_preview(
    bank: MemoryBank,
    caller: Caller,
    query: str,
    top_k: int = 50,
    llm: JSONCompleter | None = None,
    *,
    now: datetime | None = None,
) -> ForgetPreview:
    """Plan what forgetting ``query`` means for the caller's memories (changes none of them).

    Candidates are the ``top_k`` best search matches in the caller's scopes (``caller``'s user
    and project), superseded ones included, and up to ``top_k`` memories whose history holds
    a matching earlier text. ``llm`` defaults to ``bank.llm``. ``now`` is for tests and replays.
    """
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query is empty: say what to forget", field="query")
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValidationError(f"topK {top_k} must be between 1 and {MAX_TOP_K}", field="topK")
    now = now or utcnow()
    hits = bank.search(
        caller.user_id, query, project_id=caller.project_id, limit=top_k, include_superseded=True
    )
    llm = llm if llm is not None else bank.llm
    wanted = _request_stems(query)
    warnings: list[str] = []
    items, judged = None, None
    if llm is not None and hits:
        try:
            items, judged = _judge(bank, llm, query, hits)
        except ProviderError as exc:
            warnings.append(f"the LLM could not plan this ({exc}); used the word-match rule")
    if items is None:
        mine = is_first_person(query)
        items = _rule(bank.embedder, [hit.memory for hit in hits], wanted, mine)
        if mine and whole_slot(query):
            items = _with_same_slot(bank, items)
    items = _with_history(bank, caller, items, wanted, top_k)
    summary = _summary(query, items) if judged is None else _llm_summary(judged, items)
    plan = ForgetPlan(
        user_id=caller.user_id,
        project_id=caller.project_id,
        steps=tuple(
            ForgetStep(
                memory_id=item.memory.id,
                action=item.action,
                updated_at=item.memory.updated_at,
                rewrite=item.rewrite,
            )
            for item in items
        ),
        created_at=now,
        expires_at=now + PLAN_TTL,
    )
    scope_set(plan.user_id, plan.project_id)  # the ids are checked before it is stored
    bank.store.save_forget_plan(plan)
    return ForgetPreview(plan=plan, query=query, summary=summary, items=items, warnings=warnings)


def forget_confirm(
    bank: MemoryBank, caller: Caller, plan_id: str, *, now: datetime | None = None
) -> ForgetResult:
    """Apply a plan of the caller's, atomically. Raises :class:`NotFound` for an unknown or
    someone else's plan and :class:`ValidationError` for an expired, cancelled or already
    executed one, or when a planned memory changed since the preview (nothing is applied)."""
    now = now or utcnow()
    plan = _own_plan(bank, caller, plan_id, now)
    require(caller.role, Action.CHANGE, caller.project_id)
    rewritten = _rewritten(bank, plan, caller, now)
    outcome = bank.store.execute_forget_plan(
        plan.id, caller.user_id, caller.project_id, rewritten, now, caller.user_id
    )
    if rewritten:  # a rewritten fact says something else now: what it may update anew
        facts = [memory for memory, _ in rewritten.values()]
        vectors = np.stack([vector for _, vector in rewritten.values()])
        rejudge(bank.store, bank.judge, facts, vectors, restated=True)
    return ForgetResult(plan_id=plan.id, **asdict(outcome))


def _rewritten(
    bank: MemoryBank, plan: ForgetPlan, caller: Caller, now: datetime
) -> dict[str, tuple[Memory, Vectors]]:
    """The plan's REWRITE steps as the memories they leave, with their new vectors, for the
    store to apply in the transaction that deletes the rest (every step, or nothing)."""
    scopes = scope_set(caller.user_id, caller.project_id)
    changed: list[Memory] = []
    for step in plan.steps:
        if step.action != ForgetAction.REWRITE or not step.rewrite:
            continue
        current = bank.store.get(step.memory_id, scopes)
        if current is not None:  # one already gone is reported as missing by the store
            update = {"content": step.rewrite, "updated_at": now}
            update["embedding_model"] = bank.embedder.model_id
            changed.append(current.model_copy(update=update))
    if not changed:
        return {}
    vectors = bank.embedder.embed([m.content for m in changed])
    return {m.id: (m, vectors[i]) for i, m in enumerate(changed)}


def forget_cancel(
    bank: MemoryBank, caller: Caller, plan_id: str, *, now: datetime | None = None
) -> ForgetPlan:
    """Cancel a pending plan of the caller's; it can no longer be confirmed."""
    now = now or utcnow()
    _own_plan(bank, caller, plan_id, now)
    return bank.store.cancel_forget_plan(plan_id, caller.user_id, caller.project_id, now)


def find_plan(bank: MemoryBank, plan_id: str) -> ForgetPlan | None:
    """The stored plan with this id, whoever owns it (callers check the owner)."""
    return bank.store.get_forget_plan(plan_id)


def _own_plan(bank: MemoryBank, caller: Caller, plan_id: str, now: datetime) -> ForgetPlan:
    """The plan if the caller may still use it (the store checks again when applying)."""
    if not isinstance(plan_id, str) or not plan_id.startswith("fp_"):
        raise ValidationError(
            f"planId {plan_id!r} is not a forget plan id: use the fp_… id from forget_preview",
            field="planId",
        )
    plan = find_plan(bank, plan_id)
    if plan is None:
        raise NotFound(f"no forget plan {plan_id!r} for this user")
    plan.check_usable(caller.user_id, caller.project_id, now)
    return plan


# -- the rule without an LLM ----------------------------------------------------------------


def _stemmed(words: Sequence[str]) -> list[str]:
    """The stem of each of ``words``, in order."""
    stemmer = Stemmer.Stemmer("english")  # one per call: stemmers are not thread-safe
    return list(stemmer.stemWords(list(words)))


def _stems(words: Sequence[str]) -> dict[str, str]:
    """Stem → the word it came from (so reasons quote the user's own word)."""
    return dict(zip(_stemmed(words), words, strict=True))


def _request_stems(query: str) -> dict[str, str]:
    return _stems([w for w in query_terms(query) if w not in _REQUEST_WORDS])


def _shared(text: str, wanted: dict[str, str]) -> list[str]:
    """The request's stems that ``text`` mentions."""
    return [s for s in _stems(query_terms(text)) if s in wanted]


def _quoted(words: Sequence[str]) -> str:
    return ", ".join(f"'{w}'" for w in words)


@dataclass(frozen=True, slots=True)
class _Match:
    """The rule's verdict on one text: whether it is about the request, and why."""

    about: bool
    reason: str
    words: tuple[str, ...] = ()  # the request's words it mentions, as the user wrote them


def _matches(
    embedder: Embedder, texts: Sequence[str], wanted: dict[str, str], mine: bool
) -> list[_Match]:
    """The rule of the module's docstring, for each of ``texts``: the one place it is decided
    (for current texts and earlier ones alike); ``mine``: the request speaks of the user
    ("where I live"). The texts that mention some of the request's words but too few are
    compared with the rest of the request in one batch."""
    need = min(MIN_SHARED_WORDS, len(wanted))
    out: list[_Match] = []
    pairs: dict[int, tuple[str, str]] = {}  # position → (rest of the request, rest of the text)
    for n, text in enumerate(texts):
        stems = _shared(text, wanted)
        words = tuple(sorted(wanted[s] for s in stems))
        asked = stems and (mine or len(stems) < need)
        person = _someone_elses(text, stems) if asked else None
        if not stems:
            out.append(_Match(False, "does not mention what to forget"))
        elif person is not None:
            reason = f"mentions {_quoted(words)} of someone else ({person})"
            out.append(_Match(False, reason, words))
        elif len(stems) >= need:
            out.append(_Match(True, f"mentions {_quoted(words)}", words))
        else:
            out.append(_Match(False, f"mentions only {_quoted(words)}", words))
            rest = _without(text, stems)
            if query_terms(rest):  # a text of the name alone says nothing more
                pairs[n] = (" ".join(w for s, w in wanted.items() if s not in stems), rest)
    if pairs:
        distinct = list(dict.fromkeys(t for pair in pairs.values() for t in pair))
        vectors = dict(zip(distinct, embedder.embed(distinct), strict=True))
        for n, (topic, rest) in pairs.items():
            if float(vectors[topic] @ vectors[rest]) >= THRESHOLDS.topic:
                words = out[n].words
                out[n] = _Match(True, f"mentions {_quoted(words)} and is about '{topic}'", words)
    return out


def _without(text: str, stems: Sequence[str]) -> str:
    """``text`` without its words that have one of ``stems``."""
    spans = word_spans(text)
    kept, last = [], 0
    for (_, start, end), stem in zip(spans, _stemmed([w for w, _, _ in spans]), strict=True):
        if stem in stems:
            kept.append(text[last:start])
            last = end
    return " ".join("".join([*kept, text[last:]]).split())


def _someone_elses(text: str, stems: Sequence[str]) -> str | None:
    """The words naming the person of the user's whom ``text`` is about, when the request's
    words it mentions are theirs rather than the user's: "User's sister" for "User's sister
    works at Globex", None for "User's manager at Globex was Priya" or "User left Globex",
    and None when the request names that person ("my sister" for "User's sister …")."""
    person = their_person(text)
    if person is None or _shared(person, dict.fromkeys(stems, "")):
        return None
    spans = word_spans(text[len(person) :])
    stemmed = _stemmed([word for word, _, _ in spans])
    first = next((s for (_, s, _), stem in zip(spans, stemmed, strict=True) if stem in stems), None)
    if first is None or _ATTACHED.fullmatch(text[len(person) : len(person) + first]):
        return None  # within the person's words, or tied to them by a preposition
    return person.strip()


def _rule(
    embedder: Embedder, memories: Sequence[Memory], wanted: dict[str, str], mine: bool
) -> list[PreviewItem]:
    """The rule's plan for ``memories``: FORGET what it finds about the request, KEEP the rest."""
    matches = _matches(embedder, [memory.content for memory in memories], wanted, mine)
    return [
        PreviewItem(
            memory=memory,
            action=ForgetAction.FORGET if match.about else ForgetAction.KEEP,
            reason=match.reason,
        )
        for memory, match in zip(memories, matches, strict=True)
    ]


def _with_same_slot(bank: MemoryBank, items: list[PreviewItem]) -> list[PreviewItem]:
    """``items`` with the KEEPs that go with a FORGET (:mod:`.forget_slot`) turned FORGET."""
    forgotten = {n for n, item in enumerate(items) if item.action == ForgetAction.FORGET}
    kept = {n for n, item in enumerate(items) if item.action == ForgetAction.KEEP}
    more = same_slot(bank, [item.memory for item in items], forgotten, kept)
    forget = {"action": ForgetAction.FORGET}
    return [
        item.model_copy(update={**forget, "reason": more[n]}) if n in more else item
        for n, item in enumerate(items)
    ]


def _substring(stem: str) -> str:
    """A part of every word with this stem, for the store's substring match: the stem less
    its last letter and a trailing "i" (Snowball turns "cry" into "cri" and "dying" into
    "die"; checked on a million English word forms), cut before its first non-ASCII letter,
    which SQL's ``lower()`` may not fold. Shorter only matches more: the rule decides."""
    head = stem[:-1].rstrip("i")
    for n, char in enumerate(head):
        if not char.isascii():
            return head[:n]
    return head


def _with_history(
    bank: MemoryBank, caller: Caller, items: list[PreviewItem], wanted: dict[str, str], limit: int
) -> list[PreviewItem]:
    """``items`` plus REDACT for the memories whose history holds an earlier text about the
    request: a KEEP becomes REDACT, a memory not among ``items`` is added (FORGET and
    REWRITE already take the old texts with them)."""
    if not wanted:
        return items
    found = bank.store.earlier_texts(
        scope_set(caller.user_id, caller.project_id),
        # One per stem, repeats kept: two stems with one substring must still count twice.
        [_substring(stem) for stem in wanted],
        min(MIN_SHARED_WORDS, len(wanted)),
        limit,
    )
    position = {item.memory.id: n for n, item in enumerate(items)}
    out = list(items)
    # FORGET and REWRITE take the old texts with them: only the others are judged, in one go.
    found = [
        (memory, texts)
        for memory, texts in found
        if memory.id not in position or out[position[memory.id]].action == ForgetAction.KEEP
    ]
    texts = [t for _, earlier in found for t in earlier]
    judged = iter(_matches(bank.embedder, texts, wanted, mine=False))
    for memory, texts in found:
        matches = [match for match in [next(judged) for _ in texts] if match.about]
        if not matches:
            continue
        words = sorted({word for match in matches for word in match.words})
        n = position.get(memory.id)
        item = PreviewItem(
            memory=memory,
            action=ForgetAction.REDACT,
            reason=f"an earlier version mentions {_quoted(words)}",
            earlier=texts,
        )
        if n is None:
            out.append(item)
        else:
            out[n] = item
    return out


def _summary(query: str, items: Sequence[PreviewItem]) -> str:
    forget = sum(item.action == ForgetAction.FORGET for item in items)
    redact = sum(item.action == ForgetAction.REDACT for item in items)
    kept = len(items) - forget - redact
    if not forget and not redact:
        return f'Nothing to forget: no memory clearly matches "{query}".'
    parts = []
    if forget:
        parts.append(f'Will delete {_count(forget)} matching "{query}".')
    if redact:
        parts.append(_redaction(redact, None if forget else query))
    if kept:
        parts.append(f"{_count(kept)} found nearby will be kept.")
    return " ".join(parts)


def _llm_summary(summary: str, items: Sequence[PreviewItem]) -> str:
    """The LLM's summary, plus the redactions the word rule added to its plan."""
    redact = sum(item.action == ForgetAction.REDACT for item in items)
    return f"{summary} {_redaction(redact, None)}" if redact else summary


def _redaction(n: int, query: str | None) -> str:
    matching = "" if query is None else f' matching "{query}"'
    return (
        f"Will erase the earlier versions of {_count(n)}{matching} from history; "
        "the current text stays."
    )


def _count(n: int) -> str:
    return f"{n} memory" if n == 1 else f"{n} memories"


# -- with an LLM ----------------------------------------------------------------------------


class PlannedItem(BaseModel):
    """The LLM's verdict on one candidate."""

    model_config = ConfigDict(extra="forbid")

    id: str
    action: Literal["FORGET", "REWRITE", "KEEP"]
    rewritten: str | None = Field(description="REWRITE only: the memory without it; else null")
    reason: str


class PlannedForget(BaseModel):
    """The LLM's answer to the planning prompt."""

    model_config = ConfigDict(extra="forbid")

    summary: str
    items: list[PlannedItem]


_PLAN_PROMPT = """\
The user asks you to forget something. For every memory listed, decide:
- FORGET: delete it; it is mainly about what should be forgotten.
- REWRITE: it also holds other useful information; give the memory rewritten without what
  should be forgotten and otherwise unchanged, in "rewritten". Stored facts are written in
  the third person ("User …"); keep that.
- KEEP: it does not contain what should be forgotten.
reason: a few words for the user. summary: one or two sentences telling the user what will
be deleted and rewritten. Judge every memory; "rewritten" is null unless the action is
REWRITE."""


def _judge(
    bank: MemoryBank, llm: JSONCompleter, query: str, hits: Sequence[SearchHit]
) -> tuple[list[PreviewItem], str]:
    """The LLM's plan for the current texts of ``hits``, and its summary."""
    by_id = {hit.memory.id: hit.memory for hit in hits}
    # Stored text (a project member's, too) reaches the model as data: one inert line each.
    listing = "\n".join(f"- {m.id}: {sanitize_memory_text(m.content)}" for m in by_id.values())
    messages = [
        {"role": "system", "content": _PLAN_PROMPT},
        {"role": "user", "content": f"Forget: {query}\n\nMemories:\n{listing}"},
    ]
    rewrites: dict[str, str] = {}

    def check(answer: PlannedForget) -> None:
        rewrites.clear()
        seen: set[str] = set()
        for item in answer.items:
            if item.id not in by_id or item.id in seen:
                raise ValueError(f"item id {item.id!r} is unknown or repeated")
            seen.add(item.id)
            if item.action == "REWRITE":
                rewrites[item.id] = _checked_rewrite(bank, by_id[item.id], item.rewritten)

    answer = complete_model(llm, messages, PlannedForget, check=check)
    verdicts = {item.id: item for item in answer.items}
    items = []
    for memory in by_id.values():
        verdict = verdicts.get(memory.id)
        if verdict is None:  # the model skipped it: keeping is the safe default
            items.append(PreviewItem(memory=memory, action=ForgetAction.KEEP, reason="not judged"))
            continue
        items.append(
            PreviewItem(
                memory=memory,
                action=ForgetAction(verdict.action),
                reason=verdict.reason,
                rewrite=rewrites.get(memory.id),
            )
        )
    return items, answer.summary


def _checked_rewrite(bank: MemoryBank, memory: Memory, text: str | None) -> str:
    """The rewritten text as it will be stored, by the rules :meth:`MemoryBank.update` uses;
    ``ValueError`` (shown to the model) if it breaks them."""
    if not text or not text.strip():
        raise ValueError(f"REWRITE of {memory.id} needs the rewritten text")
    if is_conversation(memory.ring, memory.source):
        clean = text.strip()
        if len(clean) > bank.policy.content_max:
            raise ValueError(f"rewritten {memory.id} is longer than {bank.policy.content_max}")
        return clean
    clean, _ = validate_memory(text, memory.category, settings=bank.policy)
    return to_third_person(clean).text


# -- the seed's text ------------------------------------------------------------------------


def render_preview(preview: ForgetPreview) -> str:
    """Seed 003's "## Forget Preview" answer."""
    lines = ["## Forget Preview", "", f"**Summary:** {_one_line(preview.summary)}"]
    forget = preview.of(ForgetAction.FORGET)
    if forget:
        lines += ["", f"### Will FORGET ({len(forget)})"]
        for n, item in enumerate(forget, 1):
            lines += [f"{n}. {_one_line(item.memory.content)}", f"   _{_one_line(item.reason)}_"]
    rewrite = preview.of(ForgetAction.REWRITE)
    if rewrite:
        lines += ["", f"### Will REWRITE ({len(rewrite)})"]
        for n, item in enumerate(rewrite, 1):
            lines += [
                f"{n}. **Before:** {_one_line(item.memory.content)}",
                f"   **After:** {_one_line(item.rewrite or '')}",
                f"   _{_one_line(item.reason)}_",
            ]
    redact = preview.of(ForgetAction.REDACT)
    if redact:
        lines += ["", f"### Will REDACT HISTORY ({len(redact)})"]
        for n, item in enumerate(redact, 1):
            lines.append(f"{n}. **Keeps:** {_one_line(item.memory.content)}")
            lines += [f"   **Erases:** {_one_line(text)}" for text in item.earlier[:_SHOWN]]
            if len(item.earlier) > _SHOWN:
                lines.append(f"   **Erases:** {len(item.earlier) - _SHOWN} more earlier versions")
            lines.append(f"   _{_one_line(item.reason)}_")
    lines += [f"Note: {w}" for w in preview.warnings]
    lines += [
        "",
        "---",
        f"**Plan ID:** {preview.plan.id}",
        "Use `forget_confirm` with this plan ID to execute.",
    ]
    return "\n".join(lines)


def preview_json(preview: ForgetPreview) -> dict[str, Any]:
    """The preview as JSON, one shape for every adapter (``POST /api/forget/preview`` and
    ``memorybank forget --json``): the plan's id and expiry, the summary, each step (the
    memory, its action in capitals, why, the rewrite and, for REDACT, the earlier texts that
    leave its history), the warnings, and the seed's text (:func:`render_preview`)."""
    return {
        "plan_id": preview.plan.id,
        "summary": preview.summary,
        "steps": [
            {
                "memory_id": item.memory.id,
                "action": item.action.value.upper(),
                "reason": item.reason,
                "content": item.memory.content,
                "rewritten": item.rewrite,
                "earlier": item.earlier,
            }
            for item in preview.items
        ],
        "expires_at": preview.plan.expires_at.isoformat(),
        "warnings": preview.warnings,
        "text": render_preview(preview),
    }


def render_executed(result: ForgetResult) -> str:
    """Seed 003's "## Forget Plan Executed" answer."""
    lines = [
        "## Forget Plan Executed",
        f"- Forgotten: {len(result.forgotten)}",
        f"- Rewritten: {len(result.rewritten)}",
        f"- Kept: {result.kept}",
    ]
    if result.redacted:
        lines.insert(3, f"- History redacted: {len(result.redacted)}")
    if result.missing:
        lines.append(f"- Already gone: {len(result.missing)}")
    return "\n".join(lines)


def _one_line(text: str) -> str:
    # Memory text (and an LLM's reasons about it) read by the model: the one sanitiser.
    return sanitize_memory_text(text)


__all__ = [
    "MIN_SHARED_WORDS",
    "PLAN_TTL",
    "ForgetPreview",
    "ForgetResult",
    "PreviewItem",
    "find_plan",
    "forget_cancel",
    "forget_confirm",
    "forget_preview",
    "preview_json",
    "render_executed",
    "render_preview",
]
