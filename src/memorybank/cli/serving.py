"""Serving: the REST API, MCP and web UI over HTTP (``serve``), and the tools over stdio
(``mcp``). The server is imported only when a command runs, so that ``memorybank --help``
and the other commands stay light."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from memorybank.cli._common import (
    DbOption,
    JsonOption,
    OutputOption,
    handles_errors,
    open_bank,
    print_json,
    show,
    stdout,
)
from memorybank.errors import ConfigurationError, ValidationError

if TYPE_CHECKING:
    from memorybank.services.accounts import Accounts
    from memorybank.settings import Settings


@handles_errors
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
            metavar="",
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

    from memorybank.server.app import create_app
    from memorybank.services.accounts import Accounts
    from memorybank.settings import Settings

    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    settings = Settings(url=db) if db is not None else Settings()
    with open_bank(db, create=True) as bank:
        accounts = Accounts.open(bank, settings)
        local = not accounts.has_users()
        _check_host(accounts, host)
        _require_free_port(host, port)
        _announce(url, local, as_json)
        if workers == 1:
            uvicorn.run(
                create_app(bank, accounts, settings, host=host),
                host=host,
                port=port,
                access_log=access_log,
            )
            return
    _serve_workers(settings, host, port, workers, access_log)


def _check_host(accounts: Accounts, host: str) -> None:
    """The server's rule (local mode has no authentication, so it listens on a loopback
    address only), checked before anything is announced; a bad ``--host`` exits 2."""
    from memorybank.server.app import require_loopback_in_local_mode

    try:
        require_loopback_in_local_mode(accounts, host)
    except ConfigurationError as exc:
        raise ValidationError(str(exc), field="host") from exc


def _require_free_port(host: str, port: int) -> None:
    """:class:`~memorybank.ConfigurationError` when ``port`` cannot be bound on ``host``
    (another server has it), before the server says it is serving."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As uvicorn binds: a port left in TIME_WAIT by a server just stopped is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigurationError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; stop what serves "
                "there, or choose another --port"
            ) from None


def _announce(url: str, local: bool, as_json: bool) -> None:
    """Say where the server listens and in which mode."""
    mode = "local" if local else "auth"
    if as_json:
        print_json({"url": url, "mode": mode})
    elif local:
        stdout().print(
            Text.assemble(
                "Serving memorybank on ",
                (url, "bold"),
                " in single-user local mode (user 'local', no API keys, loopback only; "
                "Ctrl+C to stop)",
            )
        )
    else:
        stdout().print(
            Text.assemble(
                "Serving memorybank on ",
                (url, "bold"),
                " (API keys required; Ctrl+C to stop)",
            )
        )


def _serve_workers(
    settings: Settings, host: str, port: int, workers: int, access_log: bool
) -> None:
    """Several workers: uvicorn starts each from an import string, and each opens the
    database itself; the environment carries what this process resolved."""
    import uvicorn

    from memorybank.server.app import SERVE_HOST_ENV

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


@handles_errors
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


@handles_errors
def openapi(
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the REST API's OpenAPI schema (what /openapi.json serves), e.g. to generate a
    typed client; it needs no database."""
    import json

    from memorybank.server.app import openapi_document

    text = json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        typer.echo(text, nl=False)  # JSON already, with or without --json
        return
    output.write_text(text, encoding="utf-8")
    show(as_json, {"success": True, "path": str(output)}, f"Wrote the OpenAPI schema to {output}.")
