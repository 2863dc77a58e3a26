"""Forget by request, reviewed first (seed 003's ``forget_preview`` / ``forget_confirm``).

:func:`forget_preview` finds the memories a request like "my old address on Oak Street" is
about and marks each FORGET (delete), REWRITE (keep it without the part to forget) or KEEP,
with a reason. The plan is stored (id ``fp_…``) for its user for 24 hours; the user reviews
it, then :func:`forget_confirm` applies it in one transaction (every delete and rewrite, or
nothing) or :func:`forget_cancel` drops it. A plan is used at most once.

Who decides:

* with an LLM, the model judges every candidate and writes the rewritten text (checked by
  the same rules as saving; a bad answer is retried once with the error);
* without one, REWRITE is never proposed, and the rule is: **FORGET a candidate that
  mentions at least two of the request's content words** (compared by stem; stop words and
  request words like "forget" or "everything" ignored), **or the only one when the request
  has a single content word; KEEP the rest.** Two shared words ("Oak Street", "home
  address") mark a memory as being about the request; one common word ("old") does not.
  Relevance ranks candidates but does not decide: it is relative to the best match, so it
  cannot tell a good match from the least bad one.

Forgetting is real: deleted text leaves the table, the full-text index, the vectors and the
history, and a rewritten memory's old text leaves its history too.

>>> ctx = Caller(user_id="sam")
>>> _ = bank.save("sam", "User's home address is 12 Oak Street", "identity")
>>> _ = bank.save("sam", "User moved away from Oak Street in 2021", "context")
>>> _ = bank.save("sam", "User prefers green tea", "preference")
>>> preview = forget_preview(bank, ctx, "my old home address on Oak Street")
>>> [(item.action.value, item.memory.content) for item in preview.items]
... # doctest: +NORMALIZE_WHITESPACE
[('FORGET', "User's home address is 12 Oak Street"),
 ('FORGET', 'User moved away from Oak Street in 2021'),
 ('KEEP', 'User prefers green tea')]
>>> len(forget_confirm(bank, ctx, preview.plan.id).forgotten)
2
>>> [m.content for m in bank.list("sam")]
['User prefers green tea']
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

import Stemmer
from pydantic import BaseModel, ConfigDict, Field

from memorybank.errors import NotFound, ProviderError, ValidationError
from memorybank.llm.client import JSONCompleter, complete_model
from memorybank.model import (
    Caller,
    ForgetAction,
    ForgetPlan,
    ForgetStep,
    Memory,
    Ring,
    SearchHit,
    Source,
    utcnow,
)
from memorybank.policy import to_third_person, validate_memory
from memorybank.textsearch import query_terms

if TYPE_CHECKING:
    from memorybank.bank import MemoryBank

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


class PreviewItem(BaseModel):
    """One candidate of a preview: the memory as it is now, and what the plan does to it."""

    memory: Memory
    action: ForgetAction
    reason: str
    rewrite: str | None = None


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
    """What :func:`forget_confirm` did. ``missing`` were already gone when it ran."""

    plan_id: str
    forgotten: list[str]
    rewritten: list[str]
    kept: int
    missing: list[str] = Field(default_factory=list)


def forget_preview(
    bank: MemoryBank,
    ctx: Caller,
    query: str,
    top_k: int = 50,
    llm: JSONCompleter | None = None,
    *,
    now: datetime | None = None,
) -> ForgetPreview:
    """Plan what forgetting ``query`` means for the caller's memories (changes none of them).

    Candidates are the ``top_k`` best search matches in the caller's scopes (``ctx``'s user
    and project). ``llm`` defaults to ``bank.llm``. ``now`` is for tests and replays.
    """
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query is empty: say what to forget", field="query")
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValidationError(f"topK {top_k} must be between 1 and {MAX_TOP_K}", field="topK")
    now = now or utcnow()
    hits = bank.search(
        ctx.user_id, query, project_id=ctx.project_id, limit=top_k, include_superseded=True
    )
    llm = llm if llm is not None else bank.llm
    warnings: list[str] = []
    items, summary = None, ""
    if llm is not None and hits:
        try:
            items, summary = _judge(bank, llm, query, hits)
        except ProviderError as exc:
            warnings.append(f"the LLM could not plan this ({exc}); used the word-match rule")
    if items is None:
        wanted = _request_stems(query)
        items = [_rule(hit.memory, wanted) for hit in hits]
        summary = _summary(query, items)
    plan = ForgetPlan(
        user_id=ctx.user_id,
        project_id=ctx.project_id,
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
    bank.save_forget_plan(plan)
    return ForgetPreview(plan=plan, query=query, summary=summary, items=items, warnings=warnings)


def forget_confirm(
    bank: MemoryBank, ctx: Caller, plan_id: str, *, now: datetime | None = None
) -> ForgetResult:
    """Apply a plan of the caller's, atomically. Raises :class:`NotFound` for an unknown or
    someone else's plan and :class:`ValidationError` for an expired, cancelled or already
    executed one, or when a planned memory changed since the preview (nothing is applied)."""
    now = now or utcnow()
    plan = _own_plan(bank, ctx, plan_id, now)
    outcome = bank.execute_forget_plan(
        plan, ctx.user_id, project_id=ctx.project_id, now=now, role=ctx.role
    )
    return ForgetResult(
        plan_id=plan.id,
        forgotten=outcome.forgotten,
        rewritten=outcome.rewritten,
        kept=outcome.kept,
        missing=outcome.missing,
    )


def forget_cancel(
    bank: MemoryBank, ctx: Caller, plan_id: str, *, now: datetime | None = None
) -> ForgetPlan:
    """Cancel a pending plan of the caller's; it can no longer be confirmed."""
    now = now or utcnow()
    _own_plan(bank, ctx, plan_id, now)
    return bank.cancel_forget_plan(plan_id, ctx.user_id, ctx.project_id, now)


def _own_plan(bank: MemoryBank, ctx: Caller, plan_id: str, now: datetime) -> ForgetPlan:
    """The plan if the caller may still use it (the store checks again when applying)."""
    if not isinstance(plan_id, str) or not plan_id.startswith("fp_"):
        raise ValidationError(
            f"planId {plan_id!r} is not a forget plan id: use the fp_… id from forget_preview",
            field="planId",
        )
    plan = bank.forget_plan(plan_id)
    if plan is None:
        raise NotFound(f"no forget plan {plan_id!r} for this user")
    plan.check_usable(ctx.user_id, ctx.project_id, now)
    return plan


# -- the rule without an LLM ----------------------------------------------------------------


def _stems(words: Sequence[str]) -> dict[str, str]:
    """Stem → the word it came from (so reasons quote the user's own word)."""
    stemmer = Stemmer.Stemmer("english")  # one per call: stemmers are not thread-safe
    return dict(zip(stemmer.stemWords(list(words)), words, strict=True))


def _request_stems(query: str) -> dict[str, str]:
    return _stems([w for w in query_terms(query) if w not in _REQUEST_WORDS])


def _rule(memory: Memory, wanted: dict[str, str]) -> PreviewItem:
    shared = sorted(wanted[s] for s in _stems(query_terms(memory.content)) if s in wanted)
    quoted = ", ".join(f"'{w}'" for w in shared)
    if shared and len(shared) >= min(MIN_SHARED_WORDS, len(wanted)):
        action, reason = ForgetAction.FORGET, f"mentions {quoted}"
    elif shared:
        action, reason = ForgetAction.KEEP, f"mentions only {quoted}"
    else:
        action, reason = ForgetAction.KEEP, "does not mention what to forget"
    return PreviewItem(memory=memory, action=action, reason=reason)


def _summary(query: str, items: Sequence[PreviewItem]) -> str:
    forget = sum(item.action == ForgetAction.FORGET for item in items)
    kept = len(items) - forget
    if not forget:
        return f'Nothing to forget: no memory clearly matches "{query}".'
    text = f'Will delete {_count(forget)} matching "{query}".'
    if kept:
        text += f" {_count(kept)} found nearby will be kept."
    return text


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
    by_id = {hit.memory.id: hit.memory for hit in hits}
    listing = "\n".join(f"- {m.id}: {m.content}" for m in by_id.values())
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
    if memory.ring == Ring.EPISODIC and memory.source == Source.CONVERSATION:
        clean = text.strip()
        if len(clean) > bank.policy.content_max:
            raise ValueError(f"rewritten {memory.id} is longer than {bank.policy.content_max}")
        return clean
    clean, _ = validate_memory(text, memory.category, settings=bank.policy)
    return to_third_person(clean).text


# -- the seed's text ------------------------------------------------------------------------


def render_preview(preview: ForgetPreview) -> str:
    """Seed 003's "## Forget Preview" answer."""
    lines = ["## Forget Preview", "", f"**Summary:** {preview.summary}"]
    forget = preview.of(ForgetAction.FORGET)
    if forget:
        lines += ["", f"### Will FORGET ({len(forget)})"]
        for n, item in enumerate(forget, 1):
            lines += [f"{n}. {_one_line(item.memory.content)}", f"   _{item.reason}_"]
    rewrite = preview.of(ForgetAction.REWRITE)
    if rewrite:
        lines += ["", f"### Will REWRITE ({len(rewrite)})"]
        for n, item in enumerate(rewrite, 1):
            lines += [
                f"{n}. **Before:** {_one_line(item.memory.content)}",
                f"   **After:** {_one_line(item.rewrite or '')}",
                f"   _{item.reason}_",
            ]
    lines += [f"Note: {w}" for w in preview.warnings]
    lines += [
        "",
        "---",
        f"**Plan ID:** {preview.plan.id}",
        "Use `forget_confirm` with this plan ID to execute.",
    ]
    return "\n".join(lines)


def render_executed(result: ForgetResult) -> str:
    """Seed 003's "## Forget Plan Executed" answer."""
    lines = [
        "## Forget Plan Executed",
        f"- Forgotten: {len(result.forgotten)}",
        f"- Rewritten: {len(result.rewritten)}",
        f"- Kept: {result.kept}",
    ]
    if result.missing:
        lines.append(f"- Already gone: {len(result.missing)}")
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())


__all__ = [
    "MIN_SHARED_WORDS",
    "PLAN_TTL",
    "ForgetPreview",
    "ForgetResult",
    "PreviewItem",
    "forget_cancel",
    "forget_confirm",
    "forget_preview",
    "render_executed",
    "render_preview",
]
