"""What every command shares: the common options (the database, ``--json``, ``--yes``,
``--output``, and the filters of a search or a listing, built into the one
:class:`~memorybank.model.MemoryFilter` every adapter passes: :func:`filter_of`), the
consoles, JSON output, progress bars, whether a person can be asked (:func:`can_ask`), and
:func:`handles_errors`, the one place where memorybank errors become a message and an exit
code: :data:`INVALID_EXIT` (2) for a ``ValidationError``, :data:`NOT_FOUND_EXIT` (3) for
``NotFound``, :data:`FAILED_EXIT` (1) for any other error and for a check that failed
(``migrate``'s verification, a benchmark's errors); ``add`` of a fact that is already stored
exits with :data:`DUPLICATE_EXIT` (4)."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, Protocol, TypeVar

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from memorybank.errors import ConfigurationError, MemoryBankError, NotFound, ValidationError
from memorybank.model import MemoryFilter
from memorybank.rules.filtering import memory_filter

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

P = ParamSpec("P")
R = TypeVar("R")

# -- shared options -------------------------------------------------------------------------
#
# --db and --json are also global options, given before the command (`memorybank --db URL
# list alice`): the root callback in cli/__init__.py takes them, and each command's own option
# falls back to them (:func:`or_global`). Given after the command, the command's wins.

DB_HELP = (
    "Database URL, e.g. sqlite:////path/to/memories.db (default: the file in $MEMORYBANK_HOME)."
)
JSON_HELP = "Print machine-readable JSON instead of tables."


class _Parsed(Protocol):
    """A click context, as far as :func:`given` needs one (typer's, or its root's)."""

    def get_parameter_source(self, name: str) -> Any: ...


def given(ctx: _Parsed, name: str) -> bool:
    """Whether the parameter ``name`` of ``ctx``'s command was given on the command line
    (not by its environment variable or default). By name: typer vendors its own click."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def or_global(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    """A command's ``--db`` or ``--json``: given after the command, that value; else the one
    given before it (the root command's option of the same name); else the environment's or
    the default."""
    assert param.name is not None
    root = ctx.find_root()
    if given(ctx, param.name) or root is ctx or not given(root, param.name):
        return value
    return root.params[param.name]


def takes_option(command: Any, name: str) -> bool:
    """Whether a click ``command`` (every command of it, for a group) has the parameter
    ``name``: a global option given before a command that would ignore it is refused."""
    commands = getattr(command, "commands", None)
    if commands is not None:
        return all(takes_option(sub, name) for sub in commands.values())
    return any(param.name == name for param in command.params)


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="MEMORYBANK_URL",
        help=DB_HELP,
        metavar="URL",
        show_envvar=True,
        callback=or_global,
    ),
]
# metavar "": a flag takes no value, and the help should not suggest one (`--json <bool>`).
JsonOption = Annotated[
    bool,
    typer.Option("--json", help=JSON_HELP, metavar="", callback=or_global),
]
UserArg = Annotated[str, typer.Argument(help="The user whose memories these are.")]
IdArg = Annotated[str, typer.Argument(help="The memory id (mem_…).")]
ProjectOption = Annotated[
    str | None,
    typer.Option(
        "--project", "-p", help="A project id: work in that shared project's scope.", metavar="ID"
    ),
]
# metavar "": a flag (see JsonOption).
YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Go ahead without asking.", metavar="")
]
OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", help="Write to this file instead of standard output.", metavar="FILE"
    ),
]

# -- the filters of a search or a listing ----------------------------------------------------

CategoryFilter = Annotated[
    list[str] | None,
    typer.Option("--category", "-c", help="Only memories of this category; repeat for several."),
]
TagFilter = Annotated[
    list[str] | None,
    typer.Option("--tag", "-t", help="Only memories with this tag; repeat for several."),
]
MinImportanceFilter = Annotated[
    int | None, typer.Option("--min-importance", help="Only memories at least this important.")
]
SinceFilter = Annotated[
    str | None, typer.Option("--since", help="Only memories newer than this: 24h, 7d, 30d, …")
]


def filter_of(
    category: list[str] | None = None,
    tags: list[str] | None = None,
    min_importance: int | None = None,
    since: str | None = None,
    *,
    superseded: bool | None = None,
) -> MemoryFilter:
    """The :class:`~memorybank.model.MemoryFilter` the filter options ask for, built as the
    REST API builds it (:func:`~memorybank.rules.filtering.memory_filter`): an unknown
    category or a ``--since`` it cannot read is a ``ValidationError`` (exit 2).

    >>> filter_of(["preference"], since="7d").category
    (<Category.PREFERENCE: 'preference'>,)
    """
    return memory_filter(
        category=category or None,
        tags=tags or None,
        min_importance=min_importance,
        since=since,
        superseded=superseded,
    )


# -- the database ---------------------------------------------------------------------------


def open_bank(db: str | None, *, create: bool = False) -> MemoryBank:
    """The bank at ``db`` (or the configured one). Only commands that add memories
    (``create``) may make a new SQLite database and its folder; the others refuse a file that
    is not there, so pointing them at a mistyped path changes nothing on disk."""
    import memorybank

    if not create:
        require_database(db)
    with working("Loading the memory model…"):
        return memorybank.open(db)


def require_database(db: str | None) -> None:
    """:class:`~memorybank.ConfigurationError` when ``db`` names a SQLite file that is not
    there (or a URL with query parameters, which name no file)."""
    from memorybank.settings import Settings

    settings = Settings(url=db) if db is not None else Settings()
    if settings.database_url().startswith("sqlite:///"):
        path = settings.sqlite_path()  # refuses query parameters
        if not path.is_file():
            raise ConfigurationError(
                f"no database at {path}: check --db (or $MEMORYBANK_URL, $MEMORYBANK_HOME); "
                "`memorybank add` or `memorybank import` makes a new one"
            )


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 memory``, ``2 memories``.

    >>> plural(1, "memory", "memories"), plural(0, "memory", "memories"), plural(2, "key")
    ('1 memory', '0 memories', '2 keys')
    """
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"


# -- output helpers -------------------------------------------------------------------------


def stdout() -> Console:
    """The console of what a command prints. Made per call so that the width and terminal
    checks see the current environment. Into a pipe or a file a line of text stays one line
    (a script reads it, a person copies a command from it); on a terminal rich wraps it."""
    console = Console()
    console.soft_wrap = not console.is_terminal
    return console


def stderr() -> Console:
    return Console(stderr=True)


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def answer(as_json: bool, data: Any, *lines: str) -> None:
    """What a command prints when it is done: ``data`` as JSON with ``--json``, else the lines
    of plain text."""
    if as_json:
        print_json(data)
    else:
        for line in lines:
            typer.echo(line)


#: Any error but those below, and a check that failed (a migration's verification, errors in
#: a benchmark's run).
FAILED_EXIT = 1
#: Input that is not valid: a :class:`~memorybank.ValidationError`, the message says what to fix.
INVALID_EXIT = 2
#: What the command names is not there (:class:`~memorybank.NotFound`).
NOT_FOUND_EXIT = 3
#: The exit code of ``add`` when the fact was already stored, so nothing was saved.
DUPLICATE_EXIT = 4


def exit_code(exc: MemoryBankError) -> int:
    """The exit code of an error (see the module)."""
    if isinstance(exc, ValidationError):
        return INVALID_EXIT
    if isinstance(exc, NotFound):
        return NOT_FOUND_EXIT
    return FAILED_EXIT


def show(as_json: bool, data: Any, shown: Any) -> None:
    """What a command prints when it is done: ``data`` as JSON with ``--json``, else
    ``shown`` (text or a rich table or panel) on the console."""
    if as_json:
        print_json(data)
    else:
        stdout().print(shown)


def interactive() -> bool:
    """Whether a person can answer a question on standard input."""
    return sys.stdin.isatty()


def can_ask(as_json: bool) -> bool:
    """Whether a command may ask a person before going ahead: on a terminal, never with
    ``--json`` (a script reads that output and has no one to answer)."""
    return not as_json and interactive()


def fail(message: str, code: int, as_json: bool) -> NoReturn:
    if as_json:
        print_json({"success": False, "error": message})
    else:
        typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(code)


def handles_errors(func: Callable[P, R]) -> Callable[P, R]:
    """The one place where memorybank errors become a message and an exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        as_json = kwargs.get("as_json") is True
        try:
            return func(*args, **kwargs)
        except MemoryBankError as exc:
            fail(str(exc), exit_code(exc), as_json)
        except OSError as exc:  # files given on the command line (export/import)
            fail(str(exc), FAILED_EXIT, as_json)

    return wrapper


@contextmanager
def working(message: str) -> Iterator[None]:
    """A spinner and ``message`` on standard error while the block runs (loading the model
    takes seconds), only when standard error is a terminal: ``--json`` output, pipes and logs
    never see it, and it is gone when the block ends."""
    console = stderr()
    if not console.is_terminal or console.is_dumb_terminal:
        yield
        return
    with console.status(message, spinner="dots"):
        yield


def progress_bar() -> Progress:
    """A progress bar on standard error (so --json output stays clean), only on a terminal."""
    console = stderr()
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
