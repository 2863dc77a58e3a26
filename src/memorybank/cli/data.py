"""Commands on a whole database: export, import, reindex, rejudge, stats, migrate."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import TaskID
from rich.table import Table
from rich.text import Text

import memorybank
from memorybank.cli._common import (
    FAILED_EXIT,
    DbOption,
    JsonOption,
    OutputOption,
    ProjectOption,
    UserArg,
    handles_errors,
    open_bank,
    plural,
    print_json,
    progress_bar,
    require_database,
    show,
    stdout,
    working,
)
from memorybank.core import consolidate as consolidation
from memorybank.core import reindex as reindexing
from memorybank.core import relations
from memorybank.core.bank import MemoryBank
from memorybank.rules.verdicts import judge_version
from memorybank.services import transfer
from memorybank.services.insights import SuccessMetrics, success_metrics

if TYPE_CHECKING:
    from memorybank.migrate import MigrationReport


class ExportFormat(StrEnum):
    """Formats of ``memorybank export``."""

    JSON = "json"
    MARKDOWN = "markdown"


@handles_errors
def export(
    user: UserArg,
    project: ProjectOption = None,
    format: Annotated[
        ExportFormat,
        typer.Option("--format", "-f", help="json (lossless, for import) or markdown (to read)."),
    ] = ExportFormat.JSON,
    output: OutputOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export every memory of the user's private scope (or of --project)."""
    with open_bank(db) as bank:
        text = transfer.export(bank, user, format.value, project_id=project)
    if output is None:
        typer.echo(text)
        return
    output.write_text(text + "\n", encoding="utf-8")
    done = {"success": True, "path": str(output), "format": format.value}
    show(as_json, done, f"Wrote {format.value} export to {output}.")


@handles_errors
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
    with open_bank(db, create=True) as bank, progress_bar() as progress:
        task = progress.add_task("Embedding", total=None)

        def report(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        results = transfer.import_(bank, user, data, project_id=project, progress=report)
    imported = sum(1 for r in results if r.success)
    skipped = len(results) - imported
    if as_json:
        print_json({"success": True, "imported": imported, "skipped": skipped})
    else:
        stdout().print(
            f"Imported {plural(imported, 'memory', 'memories')} ({skipped} already there, skipped)."
        )


@handles_errors
def reindex(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Re-embed every memory with the configured embedder (after changing the model)."""
    from memorybank.factory import build_embedder, build_store

    require_database(db)
    overrides: dict[str, Any] = {} if db is None else {"url": db}
    settings = memorybank.Settings(**overrides)
    with working("Loading the memory model…"):
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
    with bank, progress_bar() as progress:
        task = progress.add_task("Re-embedding", total=None)

        def report(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        count = reindexing.reindex(bank, progress=report)
        model = embedder.model_id
    done = {"success": True, "reindexed": count, "embedding_model": model}
    show(as_json, done, f"Re-embedded {plural(count, 'memory', 'memories')} with {model}.")


@handles_errors
def rejudge(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Judge every fact again with the installed judge (after upgrading memorybank): what
    each may update is decided anew. Safe to interrupt: run it again to resume."""
    with open_bank(db) as bank, progress_bar() as progress:
        task = progress.add_task("Judging", total=None)

        def report(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        count = relations.rejudge_all(bank.store, bank.judge, progress=report)
        version = judge_version(bank.judge)
    done = {"success": True, "judged": count, "judge": version}
    text = (
        f"Judged {plural(count, 'memory', 'memories')} with {version}."
        if count
        else f"Every fact is already judged by {version}."
    )
    show(as_json, done, text)


@handles_errors
def stats(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Show counts and settings of the database, and the success metrics of the last 30 days
    (adoption, retention, token cost, saves, search hit rate)."""
    with open_bank(db) as bank:
        values = {**bank.store.stats(), "embedding_model": bank.embedder.model_id}
        metrics = success_metrics(bank)
    if as_json:
        print_json({**values, "metrics": metrics.model_dump(mode="json")})
        return
    table = Table(title="memorybank", show_header=False)
    table.add_column("name", style="bold")
    table.add_column("value", overflow="fold")
    for name, value in values.items():
        table.add_row(name, Text(str(value)))
    for name, value in metrics_rows(metrics):
        table.add_row(name, Text(value))
    stdout().print(table)


def metrics_rows(metrics: SuccessMetrics) -> list[tuple[str, str]]:
    """The headline success metrics as table rows."""

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.0%}"

    a, r, t = metrics.adoption, metrics.retention, metrics.tokens
    return [
        ("active users with memory", f"{pct(a.share_with_memory)} of {a.active_users}"),
        ("memories per user (mean)", f"{a.memories_per_user.mean}"),
        ("memories per project (mean)", f"{a.memories_per_project.mean}"),
        ("deleted within 7 days", f"{pct(r.share_deleted_within_7_days)} of {r.created}"),
        (
            "memory block tokens (avg)",
            "n/a"
            if t.block_tokens_avg is None
            else f"{t.block_tokens_avg:.0f} (p95 ≤ {t.block_tokens_p95 or 'more'})",
        ),
        ("duplicates refused", str(metrics.saves.duplicates_refused)),
        ("conflicts surfaced", str(metrics.saves.conflicts_surfaced)),
        ("search hit rate", pct(metrics.search_hits.hit_rate)),
    ]


@handles_errors
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

    with progress_bar() as progress:
        tasks: dict[str, TaskID] = {}

        def report(table: str, done: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = progress.add_task(f"Copying {table}", total=total)
            progress.update(tasks[table], completed=done, total=total)

        result = run_migration(source, destination, batch_size=batch_size, progress=report)
    show(as_json, result.as_dict(), _migration_table(result))
    if not result.ok:
        bad = ", ".join(t.name for t in result.tables if not t.ok)
        typer.echo(
            f"Verification FAILED for {bad}: the destination differs from the source.", err=True
        )
        raise typer.Exit(FAILED_EXIT)
    if not as_json:
        stdout().print(
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


def _print_supersessions(result: consolidation.Consolidation, applied: bool) -> None:
    """The older facts a newer one surely replaces (superseded, or with --apply would be)."""
    if not result.supersessions:
        return
    table = Table(title="Replaced by a newer fact" if applied else "Would replace (preview)")
    table.add_column("old", overflow="fold")
    table.add_column("newer", overflow="fold")
    for found in result.supersessions:
        old, new = found.old, found.new
        table.add_row(f"{old.content}  [dim]{old.id}[/dim]", f"{new.content}  [dim]{new.id}[/dim]")
    stdout().print(table)


def _print_proposals(result: consolidation.Consolidation) -> None:
    """What is left to a person: replacements and merges the newer (or kept) fact's author
    could not have made by a save."""
    if not result.proposals and not result.proposed_merges:
        return
    table = Table(title="Left to a person (not applied: the newer fact's author may not)")
    table.add_column("older", overflow="fold")
    table.add_column("newer, or kept", overflow="fold")
    for found in result.proposals:
        old, new = found.old, found.new
        table.add_row(f"{old.content}  [dim]{old.id}[/dim]", f"{new.content}  [dim]{new.id}[/dim]")
    for merge in result.proposed_merges:
        merged = "\n".join(f"{m.content}  [dim]{m.id}[/dim]" for m in merge.merged)
        table.add_row(merged, f"{merge.keep.content}  [dim]{merge.keep.id}[/dim]")
    stdout().print(table)


@handles_errors
def consolidate(
    user: UserArg,
    project: ProjectOption = None,
    apply: Annotated[
        bool,
        typer.Option("--apply", help="Merge what the preview shows (without it, only preview)."),
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find duplicates in the user's private memory (or --project) and merge them, and older
    facts a newer one surely replaces.

    Shows a preview and changes nothing unless --apply is given: each merged memory is kept
    in history, superseded by the one that says the most; a replaced one by the newer fact.
    The whole scope is gone through a page at a time, each page judged within the same
    bounded budget as one call of the API. In a project, what the newer fact's author could
    not have retired by a save (a member's fact over an owner's) is only proposed, as the
    API and the scheduled tidy-up do: whoever runs this command, it acts for no one."""
    from memorybank.services.accounts import Accounts  # its crypto only when it runs

    with open_bank(db, create=True) as bank:
        roles = Accounts.of(bank).author_role
        with working("Comparing the memories…"):
            result = consolidation.consolidate_all(
                bank, user, project, dry_run=not apply, roles=roles
            )
    if as_json:
        print_json(result.as_dict())
        return
    console = stdout()
    _print_supersessions(result, apply)
    _print_proposals(result)
    if not result.merges:
        console.print(f"No duplicates among {result.examined} memories.")
        return
    table = Table(title="Merged" if apply else "Would merge (preview)")
    table.add_column("keep", overflow="fold")
    table.add_column("merge into it", overflow="fold")
    for merge in result.merges:
        merged = "\n".join(f"{m.content}  [dim]{m.id}[/dim]" for m in merge.merged)
        table.add_row(f"{merge.keep.content}  [dim]{merge.keep.id}[/dim]", merged)
    console.print(table)
    count = result.merged_count
    noun = "memory" if count == 1 else "memories"
    if apply:
        console.print(f"Merged {count} {noun} into {len(result.merges)}.")
    else:
        console.print(f"{count} {noun} would be merged. Run again with --apply to merge.")
