"""Help that reads as a person writes it: what to type, not Python's types, and text that flows.

Typer shows each option's Python type (``--db <str>``, ``--tag <list[str]>``, ``--help
<bool>``), names arguments ``{user}`` in the usage line, and keeps a docstring's line breaks
inside a paragraph (the commands' table broke "… success metrics over the" mid-sentence).
:class:`App` is a ``typer.Typer`` whose commands and groups fill in what typer leaves out:

* an argument is shown by its name in capitals (``USER``, ``[QUERY]`` when optional) with no
  type beside it, a flag with no value at all, and an option by what it takes (``TEXT``,
  ``N``, ``NUMBER``, ``PATH``, or its choices ``auto|keep|supersede``), unless the option
  names its own ``metavar`` (``--db URL``);
* a paragraph of help is one line of text that the console wraps to its width, except an
  indented block (an example), which keeps its lines.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

# What an option takes, by the type typer would show (``<str>`` …); a choice shows its values.
_TAKES = {
    "str": "TEXT",
    "int": "N",
    "int range": "N",
    "float": "NUMBER",
    "float range": "NUMBER",
    "path": "PATH",
    "file": "FILE",
    "directory": "DIR",
    "list[str]": "TEXT",
    "list[Path]": "PATH",
    "list[int]": "N",
}
_LIST = re.compile(r"list\[(.*)\]")
F = TypeVar("F", bound=Callable[..., Any])


def flowing(text: str | None) -> str | None:
    """``text`` with each paragraph's line breaks made spaces, so the console wraps it; an
    indented paragraph (an example) keeps its lines.

    >>> flowing("Show counts and\\nmetrics.\\n\\n    memorybank stats\\n    memorybank list")
    'Show counts and metrics.\\n\\n    memorybank stats\\n    memorybank list'
    """
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith((" ", "\b")) else " ".join(p.split()) for p in paragraphs)


def _takes(param: TyperOption | TyperArgument) -> str:
    """What the help shows an option takes (see the module)."""
    shown = param.display_type(None).strip("<>")  # type: ignore[arg-type]  # ctx unused
    if shown in _TAKES:
        return _TAKES[shown]
    listed = _LIST.fullmatch(shown)
    return listed.group(1) if listed else shown  # a choice's values, e.g. auto|keep|supersede


class _Argument(TyperArgument):
    """An argument as the help shows it: its name alone (typer adds ``<str>`` beside it and
    braces around it in the usage line, and has no setting for either)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw + ("..." if self.nargs != 1 else "")
        return name if self.required else f"[{name}]"


def plain(param: Any) -> None:
    """Show ``param`` as the module describes, unless it names its own metavar."""
    if isinstance(param, TyperArgument) and not isinstance(param, _Argument):
        # The class typer built, with only the two methods above in place: no state differs.
        param.__class__ = _Argument
    if getattr(param, "metavar", None) is not None:
        return
    if isinstance(param, TyperArgument):
        param.metavar = (param.name or "value").upper()
    elif isinstance(param, TyperOption):
        param.metavar = "" if param.is_flag or param.count else _takes(param)


class _Plain:
    """Help that is plain (see the module), for a command or a group: its text flowed, its
    parameters shown as what to type."""

    help: str | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = flowing(self.help)

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            plain(param)
        return params


class Command(_Plain, TyperCommand):
    """A command whose help is plain (see the module)."""


class Group(_Plain, TyperGroup):
    """A group of commands whose own help is plain (see the module)."""


class App(typer.Typer):
    """A ``typer.Typer`` whose commands are :class:`Command` and whose group is :class:`Group`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cls=Group, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        kwargs.setdefault("cls", Command)
        registered: Callable[[F], F] = super().command(*args, **kwargs)
        return registered


__all__ = ["App", "Command", "Group", "flowing", "plain"]
