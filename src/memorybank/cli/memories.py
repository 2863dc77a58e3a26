"""Commands on one user's memories: add, search, list, get, update, delete, clear, history."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from memorybank.cli._common import (
    DUPLICATE_EXIT,
    CategoryFilter,
    DbOption,
    IdArg,
    JsonOption,
    MinImportanceFilter,
    ProjectOption,
    SinceFilter,
    TagFilter,
    UserArg,
    YesOption,
    can_ask,
    filter_of,
    handles_errors,
    open_bank,
    plural,
    print_json,
    show,
    stdout,
)
from memorybank.cli.pairs import settle_lines
from memorybank.errors import ValidationError
from memorybank.model import HistoryEvent, Memory, SaveResult, ScopeChoice, SearchHit, Source


class Scopes(StrEnum):
    """Which scopes a search looks in."""

    ALL = "all"
    USER = "user"
    PROJECT = "project"


# -- output helpers -------------------------------------------------------------------------


def _parse_metadata(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"--metadata is not valid JSON: {exc}", field="metadata") from exc
    if not isinstance(value, dict):
        raise ValidationError("--metadata must be a JSON object", field="metadata")
    return value


def _memory_cell(memory: Memory) -> Text:
    """Content, tags and (dim, on its own line so it stays copyable) the id of a memory."""
    cell = Text(memory.content)
    if memory.tags:
        cell.append(f"  [{', '.join(memory.tags)}]", style="cyan")
    cell.append(f"\n{memory.id}", style="dim")
    if memory.superseded_by is not None:
        cell.append(f"  superseded by {memory.superseded_by}", style="yellow")
    return cell


def _memory_table(memories: list[Memory], title: str | None = None) -> Table:
    table = Table(title=title)
    table.add_column("category", no_wrap=True)
    table.add_column("imp", justify="right", no_wrap=True)
    table.add_column("created", no_wrap=True)
    table.add_column("memory (id)", overflow="fold", min_width=30)
    for m in memories:
        table.add_row(
            m.category.value, str(m.importance), f"{m.created_at:%Y-%m-%d}", _memory_cell(m)
        )
    return table


def _memory_panel(memory: Memory, title: str = "Memory") -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    fields: list[tuple[str, str | None]] = [
        ("id", memory.id),
        ("user", memory.user_id),
        ("project", memory.project_id),
        ("content", memory.content),
        ("category", memory.category.value),
        ("importance", str(memory.importance)),
        ("tags", ", ".join(memory.tags) or None),
        ("ring", memory.ring.value),
        ("domain", memory.domain.value if memory.domain else None),
        ("source", memory.source.value),
        ("reasoning", memory.reasoning),
        ("metadata", json.dumps(memory.metadata, ensure_ascii=False) if memory.metadata else None),
        ("created", memory.created_at.isoformat()),
        ("updated", memory.updated_at.isoformat()),
        ("model", memory.embedding_model),
    ]
    for name, value in fields:
        if value is not None:
            grid.add_row(name, Text(value))
    return Panel(grid, title=title, expand=False)


def _save_result_text(result: SaveResult) -> Text:
    """What ``add`` prints first: the saved fact with its id and importance, or the stored
    fact that made it a duplicate (what it replaced or may update follows:
    :func:`~memorybank.cli.pairs.settle_lines`)."""
    if result.success:
        line = Text("Saved ", style="green")
        line.append(str(result.memory_id), style="bold")
        line.append(f" (importance {result.importance}): ")
        line.append(result.content)
        if result.rephrased:
            line.append("\n(rephrased to the third person)", style="dim")
        return line
    line = Text("Already saved: ", style="yellow")
    line.append(result.existing_content or result.content)
    if result.existing_id:
        line.append(f" ({result.existing_id}", style="dim")
        if result.similarity is not None:
            line.append(f", similarity {result.similarity:.3f}", style="dim")
        line.append(")", style="dim")
    return line


def _search_table(hits: list[SearchHit], query: str) -> Table:
    table = Table(
        title=Text(f"Results for {query!r}"),
        caption="score = relevance, importance and recency, weighted",
    )
    for name in ("score", "rel", "imp", "rec"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("memory (id)", overflow="fold", min_width=30)
    for hit in hits:
        table.add_row(
            f"{hit.score:.3f}",
            f"{hit.relevance:.2f}",
            f"{hit.importance:.2f}",
            f"{hit.recency:.2f}",
            hit.memory.category.value,
            _memory_cell(hit.memory),
        )
    return table


def _history_table(events: list[HistoryEvent], memory_id: str) -> Table:
    table = Table(title=f"History of {memory_id}")
    table.add_column("when", no_wrap=True)
    table.add_column("event")
    table.add_column("actor")
    table.add_column("old", overflow="fold")
    table.add_column("new", overflow="fold")
    for e in events:
        table.add_row(
            f"{e.created_at:%Y-%m-%d %H:%M:%S}",
            e.kind.value,
            Text(e.actor or ""),
            Text(e.old_content or ""),
            Text(e.new_content or ""),
        )
    return table


# -- commands -------------------------------------------------------------------------------


class OnConflictChoice(StrEnum):
    """What a save does to the stored facts it may update (``MemoryBank.save``)."""

    AUTO = "auto"
    KEEP = "keep"
    SUPERSEDE = "supersede"


@handles_errors
def add(
    user: UserArg,
    content: Annotated[str, typer.Argument(help="The fact to remember, in one sentence.")],
    category: Annotated[
        str | None,
        typer.Option(
            "--category",
            "-c",
            help="identity, preference, relationship, project or context (default: inferred).",
        ),
    ] = None,
    project: ProjectOption = None,
    reasoning: Annotated[
        str | None, typer.Option("--reasoning", help="Why this is worth remembering.")
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", "-t", help="A tag; repeat for several.")
    ] = None,
    importance: Annotated[
        int | None,
        typer.Option("--importance", help="Importance 1–10 (default: scored automatically)."),
    ] = None,
    metadata: Annotated[
        str | None, typer.Option("--metadata", help='Extra data as a JSON object, e.g. {"k": 1}.')
    ] = None,
    on_conflict: Annotated[
        OnConflictChoice,
        typer.Option(
            "--on-conflict",
            help="auto: retire only what the judge is sure of; keep: store beside what it may "
            "update; supersede: retire what it may update.",
        ),
    ] = OnConflictChoice.AUTO,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Save one fact about a user (first-person text is rephrased to the third person)."""
    meta = _parse_metadata(metadata)
    with open_bank(db, create=True) as bank:
        result = bank.save(
            user,
            content,
            category,
            project_id=project,
            reasoning=reasoning,
            tags=tag or (),
            importance=importance,
            metadata=meta,
            source=Source.USER,  # typed by a person, not said by an assistant
            on_conflict=on_conflict.value,
        )
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        console = stdout()
        console.print(_save_result_text(result))
        # A command to copy stays on one line, however narrow the terminal.
        for line in settle_lines(result, user, project):
            console.print(line, soft_wrap=True)
    if not result.success:  # refused as a duplicate: nothing was saved
        raise typer.Exit(DUPLICATE_EXIT)


@handles_errors
def search(
    user: UserArg,
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    project: ProjectOption = None,
    scopes: Annotated[
        Scopes,
        typer.Option("--scopes", help="Look in the user's and the project's memories, or one."),
    ] = Scopes.ALL,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many results.")] = 10,
    category: CategoryFilter = None,
    tag: TagFilter = None,
    min_importance: MinImportanceFilter = None,
    since: SinceFilter = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Hybrid search (meaning + keywords, weighted by importance and recency)."""
    chosen = filter_of(category, tag, min_importance, since)
    with open_bank(db) as bank:
        hits = bank.search(
            user, query, chosen, project_id=project, scopes=scopes.value, limit=limit
        )
    if as_json:
        print_json({"query": query, "hits": [h.model_dump(mode="json") for h in hits]})
    elif not hits:
        stdout().print("No memories found.")
    else:
        stdout().print(_search_table(hits, query))


@handles_errors
def list_(
    user: UserArg,
    project: ProjectOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Page size.")] = 50,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many memories.")] = 0,
    category: CategoryFilter = None,
    tag: TagFilter = None,
    min_importance: MinImportanceFilter = None,
    since: SinceFilter = None,
    include_superseded: Annotated[
        bool,
        typer.Option(
            "--include-superseded",
            help="Also the facts a newer one replaced or a merge folded in (kept in history).",
        ),
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List a user's current memories, newest first, a page at a time."""
    # What a newer fact replaced, or consolidation merged away, is history, not memory: it is
    # shown only on request (and then marked in the table).
    superseded = None if include_superseded else False
    chosen = filter_of(category, tag, min_importance, since, superseded=superseded)
    with open_bank(db) as bank:
        memories = bank.list(user, chosen, project_id=project, limit=limit, offset=offset)
        total = bank.count(user, chosen, project_id=project)
    if as_json:
        print_json({"memories": [m.model_dump(mode="json") for m in memories], "count": total})
        return
    console = stdout()
    if not memories:
        console.print(f"No memories here ({plural(total, 'memory', 'memories')} in total).")
        return
    title = f"Memories of {user} ({offset + 1}–{offset + len(memories)} of {total})"
    console.print(_memory_table(memories, title))


@handles_errors
def get(
    user: UserArg,
    memory_id: IdArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one memory with all its fields."""
    with open_bank(db) as bank:
        memory = bank.get(memory_id, user, project_id=project)
    show(as_json, memory.model_dump(mode="json"), _memory_panel(memory))


@handles_errors
def update(
    user: UserArg,
    memory_id: IdArg,
    content: Annotated[str | None, typer.Option("--content", help="The new text.")] = None,
    category: Annotated[
        str | None, typer.Option("--category", "-c", help="The new category.")
    ] = None,
    importance: Annotated[
        int | None, typer.Option("--importance", help="The new importance, 1–10.")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", "-t", help="Replace the tags; repeat for several."),
    ] = None,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change a memory in place (same id; recorded in its history)."""
    with open_bank(db) as bank:
        memory = bank.update(
            memory_id,
            user,
            project_id=project,
            content=content,
            category=category,
            importance=importance,
            tags=tag,
        )
    show(as_json, memory.model_dump(mode="json"), _memory_panel(memory, title="Updated"))


@handles_errors
def delete(
    user: UserArg,
    memory_id: IdArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete one memory for good (its history keeps a tombstone without text)."""
    with open_bank(db) as bank:
        bank.delete(memory_id, user, project_id=project)
    show(as_json, {"success": True, "deleted": memory_id}, f"Deleted {memory_id}.")


@handles_errors
def clear(
    user: UserArg,
    project: ProjectOption = None,
    yes: YesOption = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete every memory of the user's private scope (or of --project)."""
    if not yes and not can_ask(as_json):
        raise ValidationError("clear deletes memories for good: pass --yes to confirm", field="yes")
    with open_bank(db) as bank:
        if not yes:
            scope: ScopeChoice = "project" if project else "user"
            count = bank.count(user, project_id=project, scopes=scope)
            where = f"project {project}" if project else f"user {user}"
            typer.confirm(
                f"Delete all {plural(count, 'memory', 'memories')} of {where}?", abort=True
            )
        deleted = bank.clear(user, project)
    shown = f"Deleted {plural(deleted, 'memory', 'memories')}."
    show(as_json, {"success": True, "deleted": deleted}, shown)


@handles_errors
def history(
    user: UserArg,
    memory_id: IdArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the ADD / UPDATE / DELETE events of one memory, oldest first."""
    with open_bank(db) as bank:
        events = bank.history(memory_id, user, project_id=project)
    data = {"memory_id": memory_id, "events": [e.model_dump(mode="json") for e in events]}
    show(as_json, data, _history_table(events, memory_id))
