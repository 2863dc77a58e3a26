"""A pydantic validation error as a message for people: each bad field named by where it is
(``metadata.source``, ``messages.0.role``) and what is wrong with it.

Every place that validates input with pydantic (saves, imports, decisions, a model's JSON
answer, a tool call's arguments) words its refusal with these, so a caller reads the same
shape of message whichever way they came in.

>>> from pydantic import BaseModel
>>> class Point(BaseModel):
...     x: int
...     y: int
>>> try:
...     Point.model_validate({"x": "one"})
... except Exception as exc:
...     print(pydantic_message(exc))
x: Input should be a valid integer, unable to parse string as an integer; y: Field required
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError as PydanticValidationError
from pydantic_core import ErrorDetails


def problem(
    error: ErrorDetails, *, nameless: str = "input", names: Mapping[str, str] | None = None
) -> str:
    """One pydantic error as ``"where: what"``. ``where`` is its location joined with dots,
    each part renamed by ``names`` when listed there (a seed's camelCase argument names), or
    ``nameless`` for an error about the whole input.

    >>> problem({"type": "missing", "loc": ("policy_applied",), "msg": "Field required",
    ...          "input": {}}, names={"policy_applied": "policyApplied"})
    'policyApplied: Field required'
    >>> problem({"type": "model_type", "loc": (), "msg": "Input should be an object",
    ...          "input": 3}, nameless="answer")
    'answer: Input should be an object'
    """
    renamed = names or {}
    where = ".".join(renamed.get(str(part), str(part)) for part in error["loc"])
    return f"{where or nameless}: {reason(error)}"


def reason(error: ErrorDetails) -> str:
    """What is wrong, in the words of whoever refused it: our validators' own messages
    without the ``"Value error, "`` pydantic puts before them.

    >>> reason({"type": "value_error", "loc": ("created_at",), "input": 0,
    ...         "msg": "Value error, send a time within the years 1-9999"})
    'send a time within the years 1-9999'
    """
    return error["msg"].removeprefix("Value error, ")


def pydantic_message(
    exc: PydanticValidationError,
    *,
    most: int | None = None,
    nameless: str = "input",
    names: Mapping[str, str] | None = None,
) -> str:
    """``exc`` as one line: each error as :func:`problem` words it, joined by ``"; "``; only
    the first ``most`` errors when ``most`` is given."""
    errors = exc.errors(include_url=False)[:most]
    return "; ".join(problem(error, nameless=nameless, names=names) for error in errors)


__all__ = ["problem", "pydantic_message", "reason"]
