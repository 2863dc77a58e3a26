"""Earlier notes: in a memory block, an older fact that a newer one may update is shown under the
newer one, marked as earlier, never as a current fact of its own.

A save that is sure a new fact replaces a stored one supersedes it (the old fact leaves the
block); a save that is not sure keeps both and reports the pair as "may conflict"
(the judge's :func:`memorybank.rules.verdicts.same_slot`). Left as two bullets, the block
would state the stale value as plainly as the new one. Shown together, newest first, the older
on a line of its own under the newer one, marked as earlier, the model reads which
is newer and that the older may be out of date, and nothing is hidden: a pair that only looked
like an update (two facts that are both true) still has both values in the block.

>>> from memorybank.model import Memory
>>> from datetime import datetime, timezone
>>> old = Memory(user_id="u", content="User has 2 monitors", category="context",
...              created_at=datetime(2026, 1, 1, tzinfo=timezone.utc))
>>> new = Memory(user_id="u", content="User added a third monitor to their desk",
...              category="context", created_at=datetime(2026, 3, 1, tzinfo=timezone.utc))
>>> notes = earlier_notes([old, new], lambda i, j: True)
>>> [m.content for m in notes[new.id]]
['User has 2 monitors']
>>> [[m.content for m in section] for section in placed([[old], [new]], notes)]
[['User added a third monitor to their desk'], []]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from memorybank.model import Memory
from memorybank.rules.intake import is_conversation

#: Only the first this many memories of a block (in the order they would be shown) are read
#: for earlier notes: a 500-token block shows about twenty, and the check is pairwise.
WINDOW = 32


def pairs_to_judge(memories: Sequence[Memory]) -> list[tuple[int, int]]:
    """The (newer, older) positions of :data:`WINDOW` memories that :func:`earlier_notes`
    may ask about: the same scope and the same author (a note never puts one person's fact
    under another's: in a shared project, a member's newer fact must not reframe an owner's
    rule as outdated), the older saved strictly before. A conversation turn is no fact: it is
    never a note, nor has one."""
    window = list(memories[:WINDOW])
    facts = [not is_conversation(m.ring, m.source) for m in window]
    out = []
    for i, new in enumerate(window):
        for j, old in enumerate(window):
            if not (facts[i] and facts[j]):
                continue
            if i == j or old.project_id != new.project_id or old.updated_at >= new.updated_at:
                continue
            if (old.created_by or old.user_id) != (new.created_by or new.user_id):
                continue
            out.append((i, j))
    return out


def earlier_notes(
    memories: Sequence[Memory], may_update: Callable[[int, int], bool]
) -> dict[str, list[Memory]]:
    """For each memory that may update older ones among ``memories`` (``may_update(i, j)``:
    the judge's answer for positions ``i``, newer, and ``j``, asked only for the pairs of
    :func:`pairs_to_judge`), those older ones, newest first. Each older memory goes under its
    newest updater only; a memory under another gathers none of its own."""
    allowed = set(pairs_to_judge(memories))
    window = list(memories[:WINDOW])
    newest_first = sorted(
        range(len(window)), key=lambda i: (window[i].updated_at, window[i].id), reverse=True
    )
    taken: set[str] = set()
    notes: dict[str, list[Memory]] = {}
    for rank, i in enumerate(newest_first):
        new = window[i]
        if new.id in taken:
            continue
        for j in newest_first[rank + 1 :]:
            old = window[j]
            # Older ones come later in this order, so none heads notes of its own yet; one saved
            # at the same moment is not older.
            if old.id in taken or (i, j) not in allowed:
                continue
            if may_update(i, j):
                notes.setdefault(new.id, []).append(old)
                taken.add(old.id)
    return notes


def placed(
    sections: Sequence[Sequence[Memory]], notes: Mapping[str, Sequence[Memory]]
) -> list[list[Memory]]:
    """``sections`` with every older memory of ``notes`` replaced by the memory that may
    update it, shown once: where the first of them would have been."""
    by_id = {m.id: m for section in sections for m in section}
    head_of = {old.id: new_id for new_id, olds in notes.items() for old in olds}
    shown: set[str] = set()
    out: list[list[Memory]] = []
    for section in sections:
        kept: list[Memory] = []
        for memory in section:
            head = head_of.get(memory.id, memory.id)
            if head not in by_id:
                head = memory.id
            if head in shown:
                continue
            shown.add(head)
            kept.append(by_id[head])
        out.append(kept)
    return out


__all__ = ["WINDOW", "earlier_notes", "pairs_to_judge", "placed"]
