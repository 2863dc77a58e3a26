"""Run a model's tool call and always hand back something the model can read.

:func:`call` takes the tool name and the raw arguments exactly as the model produced them (a
JSON string, or a dict an SDK already parsed), validates them against the tool's pydantic
model, runs the tool within its timeout, and returns a JSON-serialisable value. It never
raises: every failure becomes ``{"success": false, "error": "<what to fix>"}``, worded for a
model that will retry, and never carrying tracebacks, SQL or file paths. Each call of a
side-effecting tool (and of a forget preview) is one unit of the caller's per-user write
limit (``bank.writes.count``), counted here so the REST API, MCP and
every host of the tools API spend one budget, and each record it stores beyond the first one
more (:func:`memorybank.core.writes.writing`); every other call (a recall) is one unit of
the caller's read limit (``bank.writes.count_read``, where the REST API's
reads are charged too, when a server set one), and one more per
:data:`~memorybank.core.writes.ANSWER_BYTES_PER_READ` of its answer, as a REST read.
Over either limit the model is told when to try again.

>>> from memorybank.tools import profile
>>> caller = Caller(user_id="sam")
>>> _ = bank.save("sam", "User prefers Neovim", "preference")
>>> call(bank, profile("default"), "recall", '{"query": "favourite editor"}', caller)
... # doctest: +ELLIPSIS
{'success': True, 'facts': [{'id': 'mem_...', 'fact': 'User prefers Neovim'}]}
>>> call(bank, profile("default"), "recal", "{}", caller)
{'success': False, 'error': "unknown tool 'recal': the tools are remember, recall, forget"}
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memorybank.core.writes import writing
from memorybank.errors import (
    ConfigurationError,
    MemoryBankError,
    NotFound,
    PermissionDenied,
    ProviderError,
    RateLimited,
    RoleRequired,
    StoreError,
    ValidationError,
)
from memorybank.model import Caller, Channel, acting_through
from memorybank.providers.json_schemas import TOOL_MESSAGE
from memorybank.rules.inputs import unpaired_surrogate
from memorybank.rules.pydantic_errors import problem
from memorybank.tools.base import Profile, SafetyTier, Tool

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank
    from memorybank.providers.llm.client import JSONCompleter

__all__ = ["MAX_WORKERS", "call", "error", "error_message", "toolkit"]

log = logging.getLogger("memorybank.tools")

# Handlers that outlive their timeout keep a worker busy until they finish, so the pool is
# bounded: a stuck backend makes later calls time out instead of piling up threads.
MAX_WORKERS = 8
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
# What the model wrote is echoed in errors only this far, so a huge argument cannot flood them.
_ECHO = 60


def error(message: str) -> dict[str, Any]:
    """The one error shape every tool answers with."""
    return {"success": False, "error": message}


def toolkit(profile: Profile, caller: Caller) -> Profile:
    """The tools to offer this conversation (seed 001): none when memory is switched off for it
    or its model cannot call functions, in which case the guidance is dropped too, so the
    prompt never mentions tools the model does not have. A profile with a variant for calls
    in a project (``extras["in_project"]``) offers it when ``caller.project_id`` is set.

    >>> from memorybank.tools import profile
    >>> toolkit(profile("default"), Caller(user_id="u1", supports_tools=False)).tools
    ()
    """
    if caller.memory_enabled and caller.supports_tools:
        variant = profile.extras.get("in_project") if caller.project_id is not None else None
        return variant if isinstance(variant, Profile) else profile
    return dataclasses.replace(profile, tools=(), guidance="")


def _executor_() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(MAX_WORKERS, thread_name_prefix="memorybank-tool")
        return _executor


def _echo(value: object) -> str:
    text = value if isinstance(value, str) else type(value).__name__
    return repr(text if len(text) <= _ECHO else text[: _ECHO - 1] + "…")


def error_message(exc: MemoryBankError, tool: str) -> str:
    """What the model is told about a memorybank error: the one place they are mapped.

    Input errors say what to fix; backend failures say only that it failed and whether a
    retry can help, because their details (SQL, paths, provider replies) are for the log.
    """
    if isinstance(exc, ValidationError | NotFound | PermissionDenied | RateLimited):
        return str(exc)
    if isinstance(exc, StoreError):
        return f"the memory store could not complete {tool} right now; try again shortly"
    if isinstance(exc, ProviderError):
        return f"a model provider did not answer, so {tool} could not run; try again shortly"
    if isinstance(exc, ConfigurationError):
        return f"memory is misconfigured on the server, so {tool} cannot run; tell the user"
    return f"{tool} failed; try again shortly"


def _parse(arguments: Any) -> dict[str, Any] | str:
    """The arguments as a dict, or an error message saying what was wrong with them."""
    if arguments is None:
        return {}
    if isinstance(arguments, bytes | bytearray):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError:
            return "arguments are not valid UTF-8 text; send a JSON object"
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}  # some models send "" for "no arguments"
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return (
                f"arguments are not valid JSON ({exc.msg} at line {exc.lineno} column "
                f'{exc.colno}); send one JSON object such as {{"query": "…"}}'
            )
        except (RecursionError, ValueError):
            return "arguments are not valid JSON; send one flat JSON object"
        if arguments is None:
            return {}
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, not {type(arguments).__name__}"
    if not all(isinstance(key, str) for key in arguments):
        return "argument names must be strings"
    # JSON may spell a lone surrogate ("\ud800"), which no store keeps and no tokenizer
    # reads: refused here, for every tool and every adapter, before any handler runs.
    found = unpaired_surrogate(arguments)
    if found is not None:
        return f"argument {found}: remove it"
    return arguments


def _without_nulls(model: type[BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    """Drop ``null`` for optional arguments: strict-mode models must send every property and
    send ``null`` to mean "not given", which should mean the default."""
    fields = model.model_fields
    return {
        key: value
        for key, value in arguments.items()
        if not (value is None and key in fields and not fields[key].is_required())
    }


def _validation_message(exc: PydanticValidationError, tool: Tool) -> str:
    allowed = ", ".join(tool.arguments.model_fields)
    parts: list[str] = []
    for item in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in item["loc"])
        kind = item["type"]
        if kind == TOOL_MESSAGE:
            parts.append(item["msg"])
        elif kind == "missing":
            parts.append(f"missing required argument {where!r}")
        elif kind == "extra_forbidden":
            parts.append(f"unknown argument {where!r} (allowed: {allowed})")
        else:
            parts.append(problem(item, nameless="arguments"))
    text = "; ".join(dict.fromkeys(parts))
    if all(item["type"] == TOOL_MESSAGE for item in exc.errors()):
        return text  # a seed's own wording, passed on exactly
    return f"invalid arguments for {tool.name}: {text}"


def _timeout_message(tool: Tool) -> str:
    seconds = f"{tool.timeout_s:g}"
    if tool.tier == SafetyTier.READ_ONLY:
        return f"{tool.name} did not finish within {seconds} s; try again with a simpler request"
    # A write may still land after we stop waiting; a blind retry could then do it twice.
    return (
        f"{tool.name} did not finish within {seconds} s and may still complete; check with a "
        "search before retrying"
    )


def _json_size(value: Any) -> int | None:
    """The size of ``value`` as JSON, in bytes; ``None`` when it is not JSON."""
    try:
        return len(json.dumps(value, allow_nan=False, ensure_ascii=False).encode())
    except (TypeError, ValueError, RecursionError):
        return None


def _internal(tool: str) -> dict[str, Any]:
    return error(f"internal error while running {tool}; it has been logged")


def call(
    bank: MemoryBank,
    profile: Profile,
    name: Any,
    arguments: Any,
    caller: Caller,
    *,
    llm: JSONCompleter | None = None,
    raise_role_required: bool = False,
    raises: tuple[type[MemoryBankError], ...] = (),
) -> Any:
    """Run tool ``name`` of ``profile`` with the model's ``arguments`` for ``caller``.

    ``llm`` is the chat model for tools that use one (``None``: the bank's own). Returns the
    tool's JSON-serialisable result, or ``{"success": false, "error": "…"}``. Never raises
    (except ``KeyboardInterrupt``/``SystemExit``), except the errors of ``raises``: those
    propagate, for adapters that answer them in their own way (the REST API answers
    :class:`~memorybank.errors.RoleRequired` with 403 and
    :class:`~memorybank.errors.RateLimited` with 429 and ``Retry-After``).
    ``raise_role_required`` is short for ``RoleRequired`` in ``raises``. Other refusals, such
    as ``orgWide`` for a non-admin, stay answers the model can act on.
    """
    label = name if isinstance(name, str) and len(name) <= _ECHO else "the tool"
    propagate = (*raises, RoleRequired) if raise_role_required else raises
    try:
        return _call(bank, profile, name, arguments, caller, llm, propagate)
    except Exception as exc:
        if isinstance(exc, propagate):
            raise  # only those asked for: _call answers the others
        log.exception("tool %s failed unexpectedly", label)
        return _internal(label)


def _refusal(
    exc: MemoryBankError, tool: Tool, propagate: tuple[type[MemoryBankError], ...]
) -> dict[str, Any]:
    """The model's answer to a memorybank error (or the error itself, if the adapter asked
    to answer it)."""
    if isinstance(exc, propagate):
        raise exc
    if isinstance(exc, StoreError | ProviderError | ConfigurationError):
        log.warning("tool %s failed: %s", tool.name, exc)
    return error(error_message(exc, tool.name))


def _as_ai(
    handler: Callable[..., Any], paid: int, bank: MemoryBank, caller: Caller, args: Any
) -> Any:
    """Run a tool's handler in the pool, its changes recorded as made by the AI and charged
    to the caller by the records they store, beyond the ``paid`` unit the call was counted
    (which covers the first: a remember of one fact costs one, of a 310-chunk conversation
    310)."""
    with acting_through(Channel.AI), writing(bank, caller.user_id, paid=paid):
        return handler(bank, caller, args)


def _call(
    bank: MemoryBank,
    profile: Profile,
    name: Any,
    arguments: Any,
    caller: Caller,
    llm: JSONCompleter | None,
    propagate: tuple[type[MemoryBankError], ...],
) -> Any:
    offered = toolkit(profile, caller)
    tool = offered.tool(name) if isinstance(name, str) else None
    if tool is None:
        if not offered.tools:
            return error("memory tools are turned off for this conversation; answer without them")
        names = ", ".join(t.name for t in offered.tools)
        return error(f"unknown tool {_echo(name)}: the tools are {names}")

    parsed = _parse(arguments)
    if isinstance(parsed, str):
        return error(f"{tool.name}: {parsed}")
    try:
        args = tool.arguments.model_validate(_without_nulls(tool.arguments, parsed))
    except PydanticValidationError as exc:
        return error(_validation_message(exc, tool))

    try:
        if tool.counted:
            bank.writes.count(caller.user_id)  # before it runs: a refused call writes nothing
        else:
            bank.writes.count_read(caller.user_id)  # a read, like a REST search (issue 34)
    except RateLimited as exc:
        return _refusal(exc, tool, propagate)
    handler = functools.partial(tool.handler, llm=llm) if tool.uses_llm else tool.handler
    paid = 1 if tool.counted else 0
    future: Future[Any] = _executor_().submit(_as_ai, handler, paid, bank, caller, args)
    try:
        result = future.result(timeout=tool.timeout_s)
    except FutureTimeout:
        future.cancel()  # only helps if it never started; a running handler cannot be stopped
        log.warning("tool %s timed out after %s s", tool.name, tool.timeout_s)
        return error(_timeout_message(tool))
    except MemoryBankError as exc:
        return _refusal(exc, tool, propagate)
    except Exception:
        log.exception("tool %s failed unexpectedly", tool.name)
        return _internal(tool.name)

    size = _json_size(result)
    if size is None:
        log.error("tool %s returned a value that is not JSON: %r", tool.name, type(result))
        return _internal(tool.name)
    if not tool.counted:  # a read: charged by its answer too, as a REST read is (issue 44)
        bank.writes.charge_answer(caller.user_id, size)
    return result
