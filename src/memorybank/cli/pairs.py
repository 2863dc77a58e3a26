"""Settling what a save asked: the stored facts a new one may update (the save's conflicts).

    memorybank add dave "I moved to Lisbon"     # says what it may update, and how to settle
    memorybank pairs dave                       # the pairs nobody has answered yet
    memorybank supersede dave mem_OLD mem_NEW   # the newer replaces the older ("Replace")
    memorybank keep-both dave mem_NEW mem_OLD   # both are true, for good
    memorybank restore dave mem_OLD             # bring a replaced fact back

The same answers as the web UI's "Replace" and "Both are true" buttons and the REST API's:
:meth:`~memorybank.MemoryBank.supersede`, :func:`~memorybank.services.pairs.keep_both`,
:meth:`~memorybank.MemoryBank.restore` and :func:`~memorybank.services.pairs.open_pairs`.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from memorybank.cli._common import (
    DbOption,
    JsonOption,
    ProjectOption,
    UserArg,
    handles_errors,
    open_bank,
    print_json,
    show,
    stdout,
)
from memorybank.model import Conflict, Memory, SaveResult
from memorybank.services import pairs

OldArg = Annotated[str, typer.Argument(help="The older fact's id (mem_…).", metavar="OLD_ID")]
NewArg = Annotated[str, typer.Argument(help="The newer fact's id (mem_…).", metavar="NEW_ID")]


def _where(user: str, project: str | None) -> str:
    """The user (and project) as a command line names them."""
    return f"{user} --project {project}" if project else user


def settle_lines(result: SaveResult, user: str, project: str | None) -> list[Text]:
    """What ``add`` prints after the saved fact: what it replaced (and how to bring it back),
    what it may update (kept beside it) and the two commands that settle each."""
    lines: list[Text] = []
    where = _where(user, project)
    replaced = {c.memory_id for c in result.replaced}
    if result.replaced:
        lines.append(Text(f"Replaced {_facts(len(result.replaced))} (kept in history):"))
        lines += [_fact_line(c, why=False) for c in result.replaced]
        first = result.replaced[0].memory_id
        lines.append(Text(f"  undo: memorybank restore {where} {first}", style="dim"))
    open_ones = [c for c in result.conflicts if c.memory_id not in replaced]
    if open_ones and result.memory_id is not None:
        lines.append(
            Text(f"May update {_facts(len(open_ones))}; both are kept until you settle it:")
        )
        for conflict in open_ones:
            lines.append(_fact_line(conflict))
            lines.append(
                Text(
                    f"    replace it: memorybank supersede {where} {conflict.memory_id} "
                    f"{result.memory_id}",
                    style="dim",
                )
            )
            lines.append(
                Text(
                    f"    both true:  memorybank keep-both {where} {result.memory_id} "
                    f"{conflict.memory_id}",
                    style="dim",
                )
            )
    return lines


def _facts(n: int) -> str:
    return "1 stored fact" if n == 1 else f"{n} stored facts"


def _fact_line(conflict: Conflict, *, why: bool = True) -> Text:
    line = Text(f"  {conflict.content}")
    line.append(f"  {conflict.memory_id}", style="dim")
    if why and conflict.why:
        line.append(f" · {conflict.why}", style="dim")
    return line


@handles_errors
def supersede(
    user: UserArg,
    old_id: OldArg,
    new_id: NewArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mark OLD_ID replaced by NEW_ID: it leaves search and the prompt, stays in history."""
    with open_bank(db) as bank:
        old = bank.supersede(old_id, new_id, user, project_id=project)
    shown = Text(f"Replaced {old.id} by {new_id}: {old.content}")
    shown.append(f"\n  undo: memorybank restore {_where(user, project)} {old.id}", style="dim")
    show(as_json, old.model_dump(mode="json"), shown)


@handles_errors
def keep_both(
    user: UserArg,
    new_id: NewArg,
    old_id: OldArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer "both are true" for a fact and one it may update: both stay current, for good."""
    with open_bank(db) as bank:
        pairs.keep_both(bank, new_id, old_id, user, project_id=project)
        data = _pair_json(
            bank.get(new_id, user, project_id=project), bank.get(old_id, user, project_id=project)
        )
    show(as_json, data, f"Kept both {new_id} and {old_id}: neither updates the other.")


@handles_errors
def restore(
    user: UserArg,
    old_id: OldArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Bring a replaced fact back into search and the prompt (the newer one stays)."""
    with open_bank(db) as bank:
        memory = bank.restore(old_id, user, project_id=project)
    show(as_json, memory.model_dump(mode="json"), Text(f"Restored {memory.id}: {memory.content}"))


@handles_errors
def open_pairs(
    user: UserArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the facts a newer one may update that nobody has settled yet, and how to."""
    with open_bank(db) as bank:
        found = pairs.open_pairs(bank, user, project_id=project)
    if as_json:
        print_json({"pairs": [_pair_json(new, old) for new, old in found]})
        return
    console = stdout()
    if not found:
        console.print("Nothing to settle: no fact may update another unanswered.")
        return
    where = _where(user, project)
    for new, old in found:
        console.print(Text(f"{new.content}  {new.id}\n  may update: {old.content}  {old.id}"))
        console.print(
            Text(f"    replace it: memorybank supersede {where} {old.id} {new.id}", style="dim"),
            soft_wrap=True,
        )
        console.print(
            Text(f"    both true:  memorybank keep-both {where} {new.id} {old.id}", style="dim"),
            soft_wrap=True,
        )


def _pair_json(new: Memory, old: Memory) -> dict[str, object]:
    """One pair as the REST API answers it (``GET /api/memory-pairs``)."""
    return {"memory": new.model_dump(mode="json"), "other": old.model_dump(mode="json")}


__all__ = ["keep_both", "open_pairs", "restore", "settle_lines", "supersede"]
