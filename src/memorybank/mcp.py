"""memorybank's tools as an MCP server (Model Context Protocol), over stdio or streamable HTTP.

The server offers exactly one profile's tools, with the names, descriptions and JSON schemas of
:func:`memorybank.tools.to_mcp` (not schemas inferred from Python signatures), and runs every
call through :func:`memorybank.tools.call`, so MCP clients see the same validation, timeouts and
error wording as any other host. Results are MCP text content: dict results as JSON, string
results (``hyperspark``'s text format) as they are; ``{"success": false, …}`` comes back as a
tool result with ``isError: true``. The profile's guidance is sent as the server's
``instructions``.

Whose memory the tools touch comes from the server's configuration (a fixed
:class:`~memorybank.model.Caller`, or for HTTP a factory that reads the authenticated
request), never from the model's arguments. Each call of a side-effecting tool (or a forget
preview) is charged against the bank's per-user write limit, one unit per record it stores
(``bank.writes.count``, counted by the dispatcher), and every other
call, and each ``recall_context`` prompt, one unit of the per-user read limit
(``bank.writes.count_read``): the same budgets the REST API spends, and over
them an error result that says when to try again.

    memorybank mcp --user alice --profile default        # stdio, for a desktop MCP host

Building the server or the app starts nothing (no thread, no socket, no event loop):

>>> server = build_server(bank, "default", Caller(user_id="alice"))
>>> server.name
'memorybank'
>>> app = mcp_http_app(bank, "default", lambda request: Caller(user_id="alice"))
>>> [route.path for route in app.routes]
['/mcp']
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from memorybank import __version__
from memorybank.core.prompt import auto_recall
from memorybank.errors import MemoryBankError, ValidationError
from memorybank.tools import Caller, call, to_mcp, toolkit
from memorybank.tools import profile as get_profile

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request

    from memorybank.core.bank import MemoryBank

__all__ = [
    "RECALL_PROMPT",
    "CallerFactory",
    "Runner",
    "build_server",
    "in_thread",
    "mcp_http_app",
    "recall_prompt",
    "run_stdio",
    "serve_stdio",
    "to_content",
]

log = logging.getLogger("memorybank.mcp")

CallerFactory = Callable[["Request | None"], Caller]
"""Makes the :class:`Caller` of one MCP request from its HTTP request (``None`` on stdio).

It runs for every ``tools/list`` and ``tools/call``. A :class:`~memorybank.MemoryBankError` it
raises during ``tools/call`` becomes an error result; refuse unauthenticated requests in the
HTTP layer, before they reach MCP."""

SERVER_NAME = "memorybank"

Runner = Callable[[str, Callable[[], Any]], Awaitable[Any]]
"""Runs one blocking call of a user's (a tool call, a prompt) off the event loop:
``await run(user_id, call)``. The default is a worker thread; the REST server passes its own,
so that MCP calls take their turns per user in its compute pool like its REST endpoints."""


async def in_thread(user_id: str, call: Callable[[], Any]) -> Any:
    """The default :data:`Runner`: ``call()`` in a worker thread."""
    return await anyio.to_thread.run_sync(call)


def to_content(result: Any) -> types.CallToolResult:
    """A dispatcher result as an MCP tool result: text content, ``isError`` on failure.

    >>> to_content({"success": False, "error": "missing required argument 'query'"}).is_error
    True
    >>> to_content("Remembered 1 fact").content[0].text
    'Remembered 1 fact'
    """
    if isinstance(result, str):
        text = result
    else:
        # Stored text stays inside its JSON string: line and paragraph separators, which JSON
        # may leave raw but a reader may take for line breaks, are escaped like "\n" is.
        text = json.dumps(result, ensure_ascii=False)
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    failed = isinstance(result, dict) and result.get("success") is False
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=failed)


RECALL_PROMPT = types.Prompt(
    name="recall_context",
    title="Memories for this message",
    description=(
        "The user's always-loaded memories and those relevant to their current message "
        "(auto-recall), to read before answering. Nothing beyond the always-loaded part when "
        "nothing remembered is relevant."
    ),
    arguments=[
        types.PromptArgument(name="message", description="The user's message.", required=True),
        types.PromptArgument(
            name="budget_tokens", description="At most this many tokens (default 500)."
        ),
    ],
)
"""The MCP prompt of auto-recall (:func:`memorybank.core.prompt.auto_recall`)."""


def recall_prompt(
    bank: MemoryBank, caller: Caller, name: str, arguments: dict[str, str]
) -> types.GetPromptResult:
    """The ``recall_context`` prompt for ``arguments``; :class:`~memorybank.ValidationError`
    for another name or bad arguments.

    >>> _ = bank.save("ada", "User is allergic to peanuts", "identity")
    >>> result = recall_prompt(bank, Caller(user_id="ada"), "recall_context",
    ...                        {"message": "Can I eat satay?"})
    >>> "allergic to peanuts" in result.messages[0].content.text
    True
    """
    if name != RECALL_PROMPT.name:
        raise ValidationError(f"no prompt {name!r}: use {RECALL_PROMPT.name!r}", field="name")
    message = arguments.get("message")
    if not message or not message.strip():
        raise ValidationError("the message argument is required", field="message")
    raw = arguments.get("budget_tokens", "500")
    if not raw.strip().isdigit():
        raise ValidationError(f"budget_tokens {raw!r} is not a whole number", field="budget_tokens")
    bank.writes.count_read(caller.user_id)  # a memory block, charged as the REST API charges one
    text = auto_recall(bank, caller, message, int(raw))
    return types.GetPromptResult(
        description=RECALL_PROMPT.description,
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
    )


def _resolver(caller: Caller | CallerFactory) -> CallerFactory:
    if isinstance(caller, Caller):
        fixed = caller
        return lambda _request: fixed
    return caller


def build_server(
    bank: MemoryBank,
    profile_name: str,
    caller: Caller | CallerFactory,
    run: Runner = in_thread,
) -> Server[Any]:
    """A low-level MCP server offering the tools of profile ``profile_name`` on ``bank``.

    ``caller`` is the fixed caller (stdio: one user per server process) or a
    :data:`CallerFactory` called with each request's HTTP request; ``run`` runs each tool
    call and prompt (:data:`Runner`). Raises :class:`~memorybank.ValidationError` for an
    unknown profile.
    """
    chosen = get_profile(profile_name)
    resolve = _resolver(caller)
    schemas = {entry["name"]: entry for entry in to_mcp(chosen)}
    # A profile's variant for calls in a project (toolkit offers it) has its own definitions.
    variant = chosen.extras.get("in_project")
    in_project = {entry["name"]: entry for entry in to_mcp(variant)} if variant else schemas

    def context_of(request_ctx: ServerRequestContext[Any]) -> Caller:
        return resolve(request_ctx.request)

    async def list_tools(
        request_ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        offered = toolkit(chosen, context_of(request_ctx))
        table = in_project if offered is variant else schemas
        return types.ListToolsResult(
            tools=[types.Tool.model_validate(table[tool.name]) for tool in offered.tools]
        )

    async def call_tool(
        request_ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            tool_ctx = context_of(request_ctx)
        except MemoryBankError as exc:
            return to_content({"success": False, "error": str(exc)})
        # The bank is synchronous: run the call off the event loop so that it (and other
        # requests) keep going; ``call`` never raises and enforces the tool's timeout.
        one = functools.partial(call, bank, chosen, params.name, params.arguments or {}, tool_ctx)
        return to_content(await run(tool_ctx.user_id, one))

    def input_schema(name: str) -> dict[str, Any] | None:
        entry = in_project.get(name)  # the variant's arguments are a superset
        return None if entry is None else dict(entry["inputSchema"])

    async def list_prompts(
        request_ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[RECALL_PROMPT])

    async def get_prompt(
        request_ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        prompt_ctx = context_of(request_ctx)
        arguments = params.arguments or {}
        answer: types.GetPromptResult = await run(
            prompt_ctx.user_id,
            functools.partial(recall_prompt, bank, prompt_ctx, params.name, arguments),
        )
        return answer

    instructions = chosen.guidance
    if isinstance(caller, Caller):
        instructions = toolkit(chosen, caller).guidance
    return Server(
        SERVER_NAME,
        version=__version__,
        title=f"memorybank ({chosen.name} tools)",
        description=chosen.description or None,
        instructions=instructions or None,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on this process's stdin/stdout until the client closes stdin."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(
    url: str | None,
    user: str,
    project: str | None = None,
    profile: str = "default",
    thread: str | None = None,
) -> None:
    """Open the bank at ``url`` and serve ``profile``'s tools for ``user`` over stdio.

    Standard output carries only the protocol: anything else printed while serving goes to
    standard error. Returns when the client disconnects.
    """
    import memorybank

    caller = Caller(user_id=user, project_id=project, thread_id=thread)
    get_profile(profile)  # fail on a bad name before loading the embedding model
    with contextlib.redirect_stdout(sys.stderr):
        bank = memorybank.open(url)
    with bank:
        server = build_server(bank, profile, caller)
        log.info("serving the %s tools for user %s over stdio", profile, user)
        anyio.run(serve_stdio, server)


def mcp_http_app(
    bank: MemoryBank,
    profile_name: str,
    caller_factory: CallerFactory,
    *,
    path: str = "/mcp",
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    stateless: bool = False,
    json_response: bool = False,
    run: Runner = in_thread,
) -> Starlette:
    """An ASGI app serving ``profile_name``'s tools over streamable HTTP at ``path``.

    ``caller_factory`` turns each HTTP request into the caller's :class:`Caller` (read the
    authenticated user from it, never from the body). ``host`` is the host the server is
    reached at: for loopback hosts the SDK turns on DNS-rebinding protection, accepting the
    loopback names and ``allowed_hosts`` (names without a port) in ``Host`` and ``Origin``.
    ``run`` runs each tool call and prompt (:data:`Runner`).

    The app's lifespan runs the MCP session manager, and Starlette does not run the lifespan of
    a mounted sub-app, so a host app must enter it itself::

        mcp_app = mcp_http_app(bank, "default", factory, path="/mcp")

        @asynccontextmanager
        async def lifespan(app):
            async with mcp_app.router.lifespan_context(mcp_app):
                yield

        api = FastAPI(lifespan=lifespan)
        api.mount("/", mcp_app)  # last, after the API's own routes
    """
    server = build_server(bank, profile_name, caller_factory, run)
    return server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        transport_security=_transport_security(host, allowed_hosts),
        stateless_http=stateless,
        json_response=json_response,
    )


def _transport_security(host: str, extra: Sequence[str]) -> TransportSecuritySettings | None:
    """The SDK's own DNS-rebinding protection for a loopback ``host``, with ``extra`` names
    allowed beside the loopback ones; ``None`` (the SDK's default) when there are none."""
    if not extra or host not in ("127.0.0.1", "localhost", "::1"):
        return None
    names = ["127.0.0.1", "localhost", "[::1]", *extra]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for name in names for form in (name, f"{name}:*")],
        allowed_origins=[
            f"{scheme}://{form}"
            for name in names
            for form in (name, f"{name}:*")
            for scheme in ("http", "https")
        ],
    )
