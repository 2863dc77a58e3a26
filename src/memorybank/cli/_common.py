"""What every command shares: the common options, the consoles, JSON output, progress bars,
and :func:`handles_errors`, the one place where memorybank errors become a message and an
exit code (``ValidationError`` → 2, ``NotFound`` → 3, any other → 1; ``add`` of a fact that is
already stored exits with :data:`DUPLICATE_EXIT`, 4)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
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
    typer.Option("--project", "-p", help="A project id: work in that shared project's scope."),
]


# -- the database ---------------------------------------------------------------------------


def open_bank(db: str | None, *, create: bool = False) -> MemoryBank:
    """The bank at ``db`` (or the configured one). Only commands that add memories
    (``create``) may make a new SQLite database and its folder; the others refuse a file that
    is not there, so pointing them at a mistyped path changes nothing on disk."""
    import memorybank

    if not create:
        require_database(db)
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
    # Made per call so that the width and terminal checks see the current environment.
    return Console()


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


#: The exit code of ``add`` when the fact was already stored, so nothing was saved.
DUPLICATE_EXIT = 4


def exit_code(exc: MemoryBankError) -> int:
    if isinstance(exc, ValidationError):
        return 2
    if isinstance(exc, NotFound):
        return 3
    return 1


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
            fail(str(exc), 1, as_json)

    return wrapper


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
