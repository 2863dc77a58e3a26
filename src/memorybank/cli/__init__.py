"""The ``memorybank`` command: every :class:`~memorybank.MemoryBank` operation from a shell.

    memorybank add alice "I prefer dark mode" -c preference
    memorybank search alice "which theme?" --json
    memorybank export alice --format markdown --output alice.md
    memorybank serve --port 8000

Each command opens the bank at ``--db`` (or ``$MEMORYBANK_URL``, or the default file in
``$MEMORYBANK_HOME``), does one thing and closes it. People get rich tables; ``--json``
prints machine-readable JSON instead. Both options go after the command or before it
(``memorybank --db URL list alice``), for the commands that take them. Errors of the
:class:`~memorybank.MemoryBankError` tree are turned into a one-line message and an exit
code in one place, :func:`~memorybank.cli._common.handles_errors`: ``ValidationError`` → 2,
``NotFound`` → 3, any other → 1.

The commands live by group in :mod:`~memorybank.cli.memories` (one user's memories),
:mod:`~memorybank.cli.forget` (forgetting by request, previewed), :mod:`~memorybank.cli.pairs`
(settling what a save may update: replace, keep both, restore), :mod:`~memorybank.cli.data`
(whole databases), :mod:`~memorybank.cli.serving` (``serve``, ``mcp``),
:mod:`~memorybank.cli.bench` and :mod:`~memorybank.cli.admin`; they are registered here, in the
order ``memorybank --help`` lists them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memorybank.cli import data, forget, memories, pairs, serving
from memorybank.cli._common import DB_HELP, JSON_HELP, given, takes_option
from memorybank.cli._help import App
from memorybank.cli.admin import admin_app
from memorybank.cli.bench import bench_app

app = App(
    name="memorybank",
    help="Long-term memory for LLM assistants: save, search, update and forget facts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def global_options(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option("--db", help=f"{DB_HELP} Also after the command.", metavar="URL"),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help=f"{JSON_HELP} Also after the command.", metavar="")
    ] = False,
) -> None:
    """Long-term memory for LLM assistants: save, search, update and forget facts."""
    assert isinstance(ctx.command, typer.core.TyperGroup) and ctx.invoked_subcommand
    command = ctx.command.get_command(ctx, ctx.invoked_subcommand)
    for name, flag in (("db", "--db"), ("as_json", "--json")):
        if given(ctx, name) and command is not None and not takes_option(command, name):
            raise typer.BadParameter(
                f"`memorybank {ctx.invoked_subcommand}` does not take {flag}", param_hint=flag
            )


app.add_typer(bench_app, name="bench")
app.add_typer(admin_app, name="admin")

app.command("add")(memories.add)
app.command("search")(memories.search)
app.command("list")(memories.list_)
app.command("get")(memories.get)
app.command("update")(memories.update)
app.command("delete")(memories.delete)
app.command("forget")(forget.forget)
app.command("pairs")(pairs.open_pairs)
app.command("supersede")(pairs.supersede)
app.command("keep-both")(pairs.keep_both)
app.command("restore")(pairs.restore)
app.command("clear")(memories.clear)
app.command("history")(memories.history)
app.command("export")(data.export)
app.command("import")(data.import_)
app.command("reindex")(data.reindex)
app.command("rejudge")(data.rejudge)
app.command("stats")(data.stats)
app.command("migrate")(data.migrate)
app.command("consolidate")(data.consolidate)
app.command("serve")(serving.serve)
app.command("mcp")(serving.mcp)
app.command("openapi")(serving.openapi)


def main() -> None:
    """Entry point of the ``memorybank`` script."""
    app()


__all__ = ["app", "main"]
