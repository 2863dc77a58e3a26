"""The ``memorybank`` command: every :class:`~memorybank.MemoryBank` operation from a shell.

    memorybank add alice "I prefer dark mode" -c preference
    memorybank search alice "which theme?" --json
    memorybank export alice --format markdown --output alice.md
    memorybank serve --port 8000

Each command opens the bank at ``--db`` (or ``$MEMORYBANK_URL``, or the default file in
``$MEMORYBANK_HOME``), does one thing and closes it. People get rich tables; ``--json``
prints machine-readable JSON instead. Errors of the :class:`~memorybank.MemoryBankError`
tree are turned into a one-line message and an exit code in one place, :func:`_handles_errors`:
``ValidationError`` → 2, ``NotFound`` → 3, any other → 1.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

import memorybank
from memorybank.bank import MemoryBank
from memorybank.errors import MemoryBankError, NotFound, ValidationError
from memorybank.model import HistoryEvent, Memory, SaveResult, ScopeChoice, SearchHit

if TYPE_CHECKING:
    from memorybank.migrate import MigrationReport

P = ParamSpec("P")
R = TypeVar("R")

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

app = typer.Typer(
    name="memorybank",
    help="Long-term memory for LLM assistants: save, search, update and forget facts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
bench_app = typer.Typer(
    help="Benchmarks of a real bank on this machine.",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")
admin_app = typer.Typer(
    help="Users, projects, roles and API keys of the server (shown once, stored hashed).",
    no_args_is_help=True,
)
app.add_typer(admin_app, name="admin")


class Scopes(StrEnum):
    """Which scopes a search looks in."""

    ALL = "all"
    USER = "user"
    PROJECT = "project"


class ExportFormat(StrEnum):
    """Formats of ``memorybank export``."""

    JSON = "json"
    MARKDOWN = "markdown"


# -- shared options -------------------------------------------------------------------------

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="MEMORYBANK_URL",
        help="Database URL, e.g. sqlite:////path/to/memories.db "
        "(default: the file in $MEMORYBANK_HOME).",
        show_envvar=True,
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")
]
UserArg = Annotated[str, typer.Argument(help="The user whose memories these are.")]
IdArg = Annotated[str, typer.Argument(help="The memory id (mem_…).")]
ProjectOption = Annotated[
    str | None,
    typer.Option("--project", "-p", help="A project id: work in that shared project's scope."),
]


# -- output helpers -------------------------------------------------------------------------


def _stdout() -> Console:
    # Made per call so that the width and terminal checks see the current environment.
    return Console()


def _stderr() -> Console:
    return Console(stderr=True)


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _exit_code(exc: MemoryBankError) -> int:
    if isinstance(exc, ValidationError):
        return 2
    if isinstance(exc, NotFound):
        return 3
    return 1


def _fail(message: str, code: int, as_json: bool) -> NoReturn:
    if as_json:
        _print_json({"success": False, "error": message})
    else:
        typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(code)


def _handles_errors(func: Callable[P, R]) -> Callable[P, R]:
    """The one place where memorybank errors become a message and an exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        as_json = kwargs.get("as_json") is True
        try:
            return func(*args, **kwargs)
        except MemoryBankError as exc:
            _fail(str(exc), _exit_code(exc), as_json)
        except OSError as exc:  # files given on the command line (export/import)
            _fail(str(exc), 1, as_json)

    return wrapper


def _interactive() -> bool:
    """Whether a person can answer a question on standard input."""
    return sys.stdin.isatty()


def _progress() -> Progress:
    """A progress bar on standard error (so --json output stays clean), only on a terminal."""
    console = _stderr()
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


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


def _show_save_result(result: SaveResult) -> None:
    console = _stdout()
    if result.success:
        line = Text("Saved ", style="green")
        line.append(str(result.memory_id), style="bold")
        line.append(f" (importance {result.importance}): ")
        line.append(result.content)
        console.print(line)
        if result.rephrased:
            console.print(Text("(rephrased to the third person)", style="dim"))
    else:
        line = Text("Already saved: ", style="yellow")
        line.append(result.existing_content or result.content)
        if result.existing_id:
            line.append(f" ({result.existing_id}", style="dim")
            if result.similarity is not None:
                line.append(f", similarity {result.similarity:.3f}", style="dim")
            line.append(")", style="dim")
        console.print(line)


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


@app.command("add")
@_handles_errors
def add(
    user: UserArg,
    content: Annotated[str, typer.Argument(help="The fact to remember, in one sentence.")],
    category: Annotated[
        str,
        typer.Option(
            "--category",
            "-c",
            help="identity, preference, relationship, project or context.",
        ),
    ] = "context",
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
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Save one fact about a user (first-person text is rephrased to the third person)."""
    meta = _parse_metadata(metadata)
    with memorybank.open(db) as bank:
        result = bank.save(
            user,
            content,
            category,
            project_id=project,
            reasoning=reasoning,
            tags=tag or (),
            importance=importance,
            metadata=meta,
        )
    if as_json:
        _print_json(result.model_dump(mode="json"))
    else:
        _show_save_result(result)


@app.command("search")
@_handles_errors
def search(
    user: UserArg,
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    project: ProjectOption = None,
    scopes: Annotated[
        Scopes,
        typer.Option("--scopes", help="Look in the user's and the project's memories, or one."),
    ] = Scopes.ALL,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many results.")] = 10,
    category: Annotated[
        str | None, typer.Option("--category", "-c", help="Only memories of this category.")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", "-t", help="Only memories with this tag; repeat for several."),
    ] = None,
    min_importance: Annotated[
        int | None, typer.Option("--min-importance", help="Only memories at least this important.")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only memories newer than this: 24h, 7d, 30d, …")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Hybrid search (meaning + keywords, weighted by importance and recency)."""
    with memorybank.open(db) as bank:
        hits = bank.search(
            user,
            query,
            project_id=project,
            scopes=scopes.value,
            limit=limit,
            category=category,
            tags=tag,
            min_importance=min_importance,
            since=since,
        )
    if as_json:
        _print_json({"query": query, "results": [h.model_dump(mode="json") for h in hits]})
    elif not hits:
        _stdout().print("No memories found.")
    else:
        _stdout().print(_search_table(hits, query))


@app.command("list")
@_handles_errors
def list_(
    user: UserArg,
    project: ProjectOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Page size.")] = 50,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many memories.")] = 0,
    category: Annotated[
        str | None, typer.Option("--category", "-c", help="Only memories of this category.")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List a user's memories, newest first, a page at a time."""
    with memorybank.open(db) as bank:
        memories = bank.list(
            user, project_id=project, limit=limit, offset=offset, category=category
        )
        total = bank.count(user, project_id=project, category=category)
    if as_json:
        _print_json({"memories": [m.model_dump(mode="json") for m in memories], "count": total})
        return
    console = _stdout()
    if not memories:
        console.print(f"No memories ({total} in total).")
        return
    title = f"Memories of {user} ({offset + 1}–{offset + len(memories)} of {total})"
    console.print(_memory_table(memories, title))


@app.command("get")
@_handles_errors
def get(
    user: UserArg,
    memory_id: IdArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one memory with all its fields."""
    with memorybank.open(db) as bank:
        memory = bank.get(memory_id, user, project_id=project)
    if as_json:
        _print_json(memory.model_dump(mode="json"))
    else:
        _stdout().print(_memory_panel(memory))


@app.command("update")
@_handles_errors
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
    with memorybank.open(db) as bank:
        memory = bank.update(
            memory_id,
            user,
            project_id=project,
            content=content,
            category=category,
            importance=importance,
            tags=tag,
        )
    if as_json:
        _print_json(memory.model_dump(mode="json"))
    else:
        _stdout().print(_memory_panel(memory, title="Updated"))


@app.command("delete")
@_handles_errors
def delete(
    user: UserArg,
    memory_id: IdArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete one memory for good (its history keeps a tombstone without text)."""
    with memorybank.open(db) as bank:
        bank.delete(memory_id, user, project_id=project)
    if as_json:
        _print_json({"success": True, "deleted": memory_id})
    else:
        _stdout().print(f"Deleted {memory_id}.")


@app.command("clear")
@_handles_errors
def clear(
    user: UserArg,
    project: ProjectOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do it without asking.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete every memory of the user's private scope (or of --project)."""
    if not yes and (as_json or not _interactive()):
        raise ValidationError("clear deletes memories for good: pass --yes to confirm", field="yes")
    with memorybank.open(db) as bank:
        if not yes:
            scope: ScopeChoice = "project" if project else "user"
            count = bank.count(user, project_id=project, scopes=scope)
            where = f"project {project}" if project else f"user {user}"
            typer.confirm(f"Delete all {count} memories of {where}?", abort=True)
        deleted = bank.clear(user, project)
    if as_json:
        _print_json({"success": True, "deleted": deleted})
    else:
        _stdout().print(f"Deleted {deleted} memories.")


@app.command("history")
@_handles_errors
def history(
    user: UserArg,
    memory_id: IdArg,
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the ADD / UPDATE / DELETE events of one memory, oldest first."""
    with memorybank.open(db) as bank:
        events = bank.history(memory_id, user, project_id=project)
    if as_json:
        _print_json({"memory_id": memory_id, "events": [e.model_dump(mode="json") for e in events]})
    else:
        _stdout().print(_history_table(events, memory_id))


@app.command("export")
@_handles_errors
def export(
    user: UserArg,
    project: ProjectOption = None,
    format: Annotated[
        ExportFormat,
        typer.Option("--format", "-f", help="json (lossless, for import) or markdown (to read)."),
    ] = ExportFormat.JSON,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to this file instead of standard output."),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export every memory of the user's private scope (or of --project)."""
    with memorybank.open(db) as bank:
        text = bank.export(user, format.value, project_id=project)
    if output is None:
        typer.echo(text)
        return
    output.write_text(text + "\n", encoding="utf-8")
    if as_json:
        _print_json({"success": True, "path": str(output), "format": format.value})
    else:
        _stdout().print(f"Wrote {format.value} export to {output}.")


@app.command("import")
@_handles_errors
def import_(
    user: UserArg,
    file: Annotated[
        Path,
        typer.Argument(
            help="A JSON file made by `memorybank export`.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    project: ProjectOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import a JSON export into a user (ids and times are kept; vectors are made anew)."""
    data = file.read_bytes()
    with memorybank.open(db) as bank, _progress() as progress:
        task = progress.add_task("Embedding", total=None)

        def report(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        results = bank.import_(user, data, project_id=project, progress=report)
    imported = sum(1 for r in results if r.success)
    skipped = len(results) - imported
    if as_json:
        _print_json({"success": True, "imported": imported, "skipped": skipped})
    else:
        _stdout().print(f"Imported {imported} memories ({skipped} already there, skipped).")


@app.command("reindex")
@_handles_errors
def reindex(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Re-embed every memory with the configured embedder (after changing the model)."""
    from memorybank.factory import build_embedder, build_store

    overrides: dict[str, Any] = {} if db is None else {"url": db}
    settings = memorybank.Settings(**overrides)
    embedder = build_embedder(settings)
    try:
        store = build_store(settings, embedder.dimension)
    except BaseException:
        embedder.close()
        raise
    bank = MemoryBank(
        store,
        embedder,
        policy=settings.policy,
        retrieval=settings.retrieval,
        check_model=False,
    )
    with bank, _progress() as progress:
        task = progress.add_task("Re-embedding", total=None)

        def report(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        count = bank.reindex(progress=report)
        model = embedder.model_id
    if as_json:
        _print_json({"success": True, "reindexed": count, "embedding_model": model})
    else:
        _stdout().print(f"Re-embedded {count} memories with {model}.")


@app.command("stats")
@_handles_errors
def stats(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Show counts and settings of the database."""
    with memorybank.open(db) as bank:
        values = bank.stats()
    if as_json:
        _print_json(values)
        return
    table = Table(title="memorybank", show_header=False)
    table.add_column("name", style="bold")
    table.add_column("value", overflow="fold")
    for name, value in values.items():
        table.add_row(name, Text(str(value)))
    _stdout().print(table)


@app.command("migrate")
@_handles_errors
def migrate(
    source: Annotated[
        str, typer.Option("--from", help="The database to copy, e.g. sqlite:////path/to/a.db.")
    ],
    destination: Annotated[
        str,
        typer.Option("--to", help="Where to copy it, e.g. postgresql://user:pw@host/memorybank."),
    ],
    batch_size: Annotated[
        int, typer.Option("--batch-size", help="Rows per transaction in the destination.")
    ] = 500,
    as_json: JsonOption = False,
) -> None:
    """Copy a whole database to another backend: memories with their vectors (no
    re-embedding), history, users, orgs, projects, members, API key hashes, threads and
    provider settings. Run it again after an interruption: it continues without duplicates.
    Exits 1 when the copy's counts or checksums do not match the source's."""
    from memorybank.migrate import migrate as run_migration

    with _progress() as progress:
        tasks: dict[str, TaskID] = {}

        def report(table: str, done: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = progress.add_task(f"Copying {table}", total=total)
            progress.update(tasks[table], completed=done, total=total)

        result = run_migration(source, destination, batch_size=batch_size, progress=report)
    if as_json:
        _print_json(result.as_dict())
    else:
        _stdout().print(_migration_table(result))
    if not result.ok:
        bad = ", ".join(t.name for t in result.tables if not t.ok)
        typer.echo(
            f"Verification FAILED for {bad}: the destination differs from the source.", err=True
        )
        raise typer.Exit(1)
    if not as_json:
        _stdout().print(
            f"Verified: every table's row count and content checksum match "
            f"({result.seconds:.1f} s)."
        )


def _migration_table(result: MigrationReport) -> Table:
    from memorybank.stores.postgres import redact_url

    table = Table(title=f"{redact_url(result.source)} → {redact_url(result.destination)}")
    for name in ("table", "source rows", "copied now", "destination rows", "checksum", "ok"):
        table.add_column(name, justify="left" if name in ("table", "checksum") else "right")
    for t in result.tables:
        table.add_row(
            t.name,
            f"{t.source_rows:,}",
            f"{t.copied:,}",
            f"{t.destination_rows:,}",
            t.source_checksum[:12],
            Text("✔", style="green") if t.ok else Text("✘ mismatch", style="bold red"),
        )
    return table


@app.command("serve")
@_handles_errors
def serve(
    host: Annotated[
        str,
        typer.Option("--host", help="Interface to listen on (non-loopback only once users exist)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port to listen on.")] = 8000,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            help="Worker processes; each loads the embedding model. One per core under load.",
        ),
    ] = 1,
    access_log: Annotated[
        bool,
        typer.Option(
            "--access-log/--no-access-log",
            help="Log every request (off by default: /metrics counts them for less CPU).",
        ),
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Serve the REST API, MCP at /mcp and the web UI.

    With no users configured it runs in single-user local mode and only on a loopback address;
    with users (see `memorybank admin`), every /api request needs an API key. With --workers N
    the server runs N processes sharing the port and the database.
    """
    import uvicorn

    from memorybank.accounts import Accounts
    from memorybank.server.app import SERVE_HOST_ENV, create_app
    from memorybank.settings import Settings

    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    settings = Settings(url=db) if db is not None else Settings()
    with memorybank.open(db) as bank:
        accounts = Accounts.open(bank, settings)
        local = not accounts.has_users()
        if local and host not in LOOPBACK_HOSTS:
            raise ValidationError(
                f"refusing to listen on {host!r}: no users are configured, so the server runs "
                "in single-user local mode without authentication and only binds to a loopback "
                "address (127.0.0.1, localhost or ::1); create a user and an API key with "
                "`memorybank admin create-user` and `memorybank admin create-key` first",
                field="host",
            )
        mode = "local" if local else "auth"
        if as_json:
            _print_json({"url": url, "mode": mode})
        elif local:
            _stdout().print(
                Text.assemble(
                    "Serving memorybank on ",
                    (url, "bold"),
                    " in single-user local mode (user 'local', no API keys, loopback only; "
                    "Ctrl+C to stop)",
                )
            )
        else:
            _stdout().print(
                Text.assemble(
                    "Serving memorybank on ",
                    (url, "bold"),
                    " (API keys required; Ctrl+C to stop)",
                )
            )
        if workers == 1:
            uvicorn.run(
                create_app(bank, accounts, settings, host=host),
                host=host,
                port=port,
                access_log=access_log,
            )
            return
    # Several workers: uvicorn starts each from an import string, and each opens the
    # database itself; the environment carries what this process resolved.
    os.environ["MEMORYBANK_URL"] = settings.database_url()
    os.environ[SERVE_HOST_ENV] = host
    # One embedder thread per core in all: N processes each spreading one query over every
    # core would fight over them.
    os.environ.setdefault(
        "MEMORYBANK_EMBEDDER_THREADS", str(max(1, (os.cpu_count() or 1) // workers))
    )
    uvicorn.run(
        "memorybank.server.app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        access_log=access_log,
    )


@app.command("mcp")
@_handles_errors
def mcp(
    user: Annotated[
        str,
        typer.Option(
            "--user",
            envvar="MEMORYBANK_MCP_USER",
            show_envvar=True,
            help="The user whose memories the tools read and write.",
        ),
    ],
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            "-p",
            envvar="MEMORYBANK_MCP_PROJECT",
            show_envvar=True,
            help="A project id: recall also reads that shared project's memories.",
        ),
    ] = None,
    profile: Annotated[
        str,
        typer.Option(
            "--profile",
            envvar="MEMORYBANK_MCP_PROFILE",
            show_envvar=True,
            help="The tool set: blah, supermemory, pagespace, hyperspark, oxydra or default.",
        ),
    ] = "default",
    thread: Annotated[
        str | None, typer.Option("--thread", help="The conversation thread id, if any.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Serve the memory tools to an MCP host over stdio (standard output is the protocol)."""
    import logging

    from memorybank.mcp import run_stdio

    # Logs go to standard error: standard output belongs to the protocol.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    run_stdio(db, user, project=project, profile=profile, thread=thread)


def _parse_sizes(raw: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in raw.split(",") if part.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"{raw!r} is not a comma-separated list of integers") from exc
    if not sizes or any(size < 1 for size in sizes):
        raise typer.BadParameter("give one or more positive sizes, e.g. 10000,100000")
    return sizes


@bench_app.command("latency")
@_handles_errors
def bench_latency(
    sizes: Annotated[
        str,
        typer.Option("--sizes", help="Comma-separated database sizes (memories) to measure."),
    ] = "10000,100000,1000000",
    per_user: Annotated[
        int, typer.Option("--per-user", help="Memories per user in the generated databases.")
    ] = 10_000,
    pool: Annotated[
        int, typer.Option("--pool", help="How many distinct generated texts to draw from.")
    ] = 20_000,
    samples: Annotated[
        int, typer.Option("--samples", help="Timed operations per measurement.")
    ] = 200,
    workdir: Annotated[
        Path | None,
        typer.Option("--workdir", help="Where to build the databases (default: a temp dir)."),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the report as JSON to this file.")
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Measure on this PostgreSQL database (postgresql://…), grown in place; also "
            "reports the HNSW index's recall@10 against exact search.",
        ),
    ] = None,
) -> None:
    """Measure search, save and list latency at growing database sizes."""
    from memorybank.bench.latency import run_latency

    console = _stdout()
    report = run_latency(
        sizes=_parse_sizes(sizes),
        per_user=per_user,
        pool_size=min(pool, max(_parse_sizes(sizes))),
        samples=samples,
        workdir=workdir,
        console=console,
        url=url,
    )
    console.print(report.table())
    if json_out is not None:
        json_out.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
        console.print(f"Wrote {json_out}.")


@bench_app.command("locomo")
@_handles_errors
def bench_locomo(
    data: Annotated[
        Path,
        typer.Option("--data", help="locomo_dev.json, or a folder of LoCoMo-format .json files."),
    ],
    ks: Annotated[
        str, typer.Option("--k", help="Comma-separated cut-offs for recall@k.")
    ] = "1,5,10",
    ablate: Annotated[
        bool,
        typer.Option("--ablate", help="Also run vector-only and BM25-only beside the default."),
    ] = False,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the report as JSON to this file.")
    ] = None,
    chart: Annotated[
        Path | None, typer.Option("--chart", help="Also draw recall@k as a PNG (needs matplotlib).")
    ] = None,
    workdir: Annotated[
        Path | None,
        typer.Option("--workdir", help="Where to build the database (default: a temp dir)."),
    ] = None,
) -> None:
    """Retrieval quality on LoCoMo: every turn ingested, every question searched."""
    from memorybank.bench.locomo import run_locomo

    console = _stdout()
    report = run_locomo(data, ks=_parse_sizes(ks), ablate=ablate, workdir=workdir, console=console)
    console.print(report.table())
    if json_out is not None:
        json_out.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
        console.print(f"Wrote {json_out}.")
    if chart is not None:
        console.print(f"Wrote {report.chart(chart)}.")


@bench_app.command("load")
@_handles_errors
def bench_load(
    url: Annotated[
        str | None,
        typer.Option("--url", help="A running server (default: start one on a temp database)."),
    ] = None,
    seconds: Annotated[float, typer.Option("--seconds", help="How long to drive it.")] = 30.0,
    clients: Annotated[int, typer.Option("--clients", help="Concurrent clients.")] = 16,
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="Server processes to start (default: one per core)."),
    ] = None,
    repeat: Annotated[
        float,
        typer.Option(
            "--repeat",
            min=0.0,
            max=1.0,
            help="Share of a client's searches that repeat one of its recent questions.",
        ),
    ] = 0.3,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key", envvar="MEMORYBANK_API_KEY", help="Key for a server in auth mode."
        ),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the report as JSON to this file.")
    ] = None,
) -> None:
    """Throughput and latency under load: 80% search, 15% save, 5% other, over loopback."""
    from memorybank.bench.load import run_load

    console = _stdout()
    report = run_load(
        url=url,
        seconds=seconds,
        clients=clients,
        workers=workers,
        repeat=repeat,
        api_key=api_key,
        console=console,
    )
    console.print(report.table())
    for sample in report.error_samples:
        console.print(Text(sample, style="red"))
    if json_out is not None:
        json_out.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
        console.print(f"Wrote {json_out}.")
    if report.errors:
        raise typer.Exit(1)


# -- admin: accounts ------------------------------------------------------------------------


def _accounts(db: str | None) -> tuple[MemoryBank, Any]:
    from memorybank.accounts import Accounts
    from memorybank.settings import Settings

    bank = memorybank.open(db)
    try:
        return bank, Accounts.open(bank, Settings(url=db) if db is not None else Settings())
    except BaseException:
        bank.close()
        raise


class OrgRoleChoice(StrEnum):
    """Roles in an org."""

    ADMIN = "admin"
    MEMBER = "member"


class RoleChoice(StrEnum):
    """Roles in a project."""

    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"


@admin_app.command("create-user")
@_handles_errors
def admin_create_user(
    user: Annotated[str, typer.Argument(help="The new user's id.")],
    name: Annotated[str | None, typer.Option("--name", help="Display name.")] = None,
    org: Annotated[str | None, typer.Option("--org", help="Put the user in this org.")] = None,
    org_role: Annotated[
        OrgRoleChoice, typer.Option("--org-role", help="The user's role in --org.")
    ] = OrgRoleChoice.MEMBER,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add a user (then `create-key` gives them an API key)."""
    bank, accounts = _accounts(db)
    with bank:
        created = accounts.create_user(user, name=name)
        if org is not None:
            accounts.add_org_member(org, user, org_role.value)
    if as_json:
        _print_json({"user_id": created.id, "name": created.name, "org": org})
    else:
        typer.echo(
            f"Created user {created.id}" + (f" in org {org} ({org_role.value})" if org else "")
        )


@admin_app.command("create-project")
@_handles_errors
def admin_create_project(
    project: Annotated[str, typer.Argument(help="The new project's id.")],
    owner: Annotated[str, typer.Option("--owner", help="The user who owns it.")],
    name: Annotated[str | None, typer.Option("--name", help="Display name.")] = None,
    org: Annotated[str | None, typer.Option("--org", help="The org it belongs to.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add a project (a shared memory scope) with its owner."""
    bank, accounts = _accounts(db)
    with bank:
        created = accounts.create_project(project, owner=owner, name=name, org_id=org)
    if as_json:
        _print_json({"project_id": created.id, "name": created.name, "owner": owner})
    else:
        typer.echo(f"Created project {created.id} owned by {owner}")


@admin_app.command("add-member")
@_handles_errors
def admin_add_member(
    project: Annotated[str, typer.Argument(help="The project id.")],
    user: Annotated[str, typer.Argument(help="The user id.")],
    role: Annotated[RoleChoice, typer.Option("--role", help="owner, admin or member.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give a user a role in a project (again: changes the role)."""
    bank, accounts = _accounts(db)
    with bank:
        accounts.add_member(project, user, role.value)
    if as_json:
        _print_json({"project_id": project, "user_id": user, "role": role.value})
    else:
        typer.echo(f"{user} is now {role.value} of {project}")


@admin_app.command("create-key")
@_handles_errors
def admin_create_key(
    user: Annotated[str, typer.Argument(help="The user the key belongs to.")],
    label: Annotated[str | None, typer.Option("--label", help="What the key is for.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API key. It is printed once and only its hash is stored."""
    bank, accounts = _accounts(db)
    with bank:
        key, raw = accounts.create_key(user, label=label)
    if as_json:
        _print_json({"key_id": key.id, "user_id": user, "key": raw})
    else:
        typer.echo(f"API key {key.id} for {user} (shown once, store it now):")
        typer.echo(raw)


@admin_app.command("revoke-key")
@_handles_errors
def admin_revoke_key(
    key_id: Annotated[str, typer.Argument(help="The key id (key_…), not the key.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke an API key for good."""
    bank, accounts = _accounts(db)
    with bank:
        accounts.revoke_key(key_id)
    if as_json:
        _print_json({"key_id": key_id, "revoked": True})
    else:
        typer.echo(f"Revoked {key_id}")


def main() -> None:
    """Entry point of the ``memorybank`` script."""
    app()


if __name__ == "__main__":
    main()
