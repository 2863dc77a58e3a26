"""``memorybank forget``: forgetting by request, previewed first, as the tools and the UI do it.

    memorybank forget alice "my old address on Oak Street"     # preview; asks on a terminal
    memorybank forget alice "my old address on Oak Street" --yes
    memorybank forget alice --confirm fp_…                      # apply a previewed plan
    memorybank forget alice --cancel fp_…

The preview (:func:`~memorybank.services.forget.forget_preview`) stores a plan (``fp_…``, valid
24 hours) and changes nothing. On a terminal the command then asks whether to apply it; in a
script, or with ``--json``, it prints the plan and its id and stops, so that a person (or the
script, once it has read the plan) applies it with ``--confirm``. ``--yes`` applies what the
preview planned without asking. Applying is atomic: a planned memory that changed since the
preview refuses the whole plan (exit 2), and an unknown plan exits 3, like every command.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from memorybank.cli._common import (
    DbOption,
    JsonOption,
    ProjectOption,
    UserArg,
    YesOption,
    can_ask,
    handles_errors,
    open_bank,
    plural,
    print_json,
    show,
    stdout,
    working,
)
from memorybank.errors import ValidationError
from memorybank.model import Caller, ForgetAction
from memorybank.services.forget import (
    ForgetPreview,
    ForgetResult,
    forget_cancel,
    forget_confirm,
    forget_preview,
    preview_json,
)

# How the preview names each action, in the order it lists them.
_HEADINGS = {
    ForgetAction.FORGET: "Will delete",
    ForgetAction.REWRITE: "Will rewrite",
    ForgetAction.REDACT: "Will erase earlier versions of",
    ForgetAction.KEEP: "Will keep",
}


def result_data(result: ForgetResult) -> dict[str, Any]:
    """What applying did, as JSON (the REST API's confirm answer, with the plan and ids)."""
    return {
        "success": True,
        "plan_id": result.plan_id,
        "forgotten": result.forgotten,
        "rewritten": result.rewritten,
        "redacted": result.redacted,
        "kept": result.kept,
        "missing": result.missing,
    }


def _show_preview(preview: ForgetPreview) -> None:
    console = stdout()
    console.print(Text(preview.summary, style="bold"))
    for action, heading in _HEADINGS.items():
        items = preview.of(action)
        if not items:
            continue
        console.print(Text(f"\n{heading} ({len(items)}):", style="bold"))
        for item in items:
            line = Text(f"  {item.memory.content}")
            line.append(f"  {item.memory.id} · {item.reason}", style="dim")
            console.print(line)
            if item.rewrite is not None:
                console.print(Text(f"    → {item.rewrite}", style="green"))
            for earlier in item.earlier:
                console.print(Text(f"    erases: {earlier}", style="yellow"))
    for warning in preview.warnings:
        console.print(Text(f"Note: {warning}", style="yellow"))
    console.print(Text(f"\nPlan {preview.plan.id} (valid until {preview.plan.expires_at:%c})"))


def _result_line(result: ForgetResult) -> str:
    parts = [
        f"Forgot {plural(len(result.forgotten), 'memory', 'memories')}",
        f"rewrote {len(result.rewritten)}",
        f"erased the history of {len(result.redacted)}",
        f"kept {result.kept}",
    ]
    if result.missing:
        parts.append(f"{len(result.missing)} already gone")
    return ", ".join(parts) + "."


def _changes(preview: ForgetPreview) -> bool:
    return any(item.action != ForgetAction.KEEP for item in preview.items)


@handles_errors
def forget(
    user: UserArg,
    query: Annotated[
        str | None,
        typer.Argument(help="What to forget, in plain words (not with --confirm or --cancel)."),
    ] = None,
    project: ProjectOption = None,
    yes: YesOption = False,
    confirm: Annotated[
        str | None, typer.Option("--confirm", help="Apply the previewed plan with this id (fp_…).")
    ] = None,
    cancel: Annotated[
        str | None, typer.Option("--cancel", help="Drop the previewed plan with this id (fp_…).")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forget what a request is about: preview the plan, then apply it (--yes, or --confirm ID)."""
    if sum(x is not None for x in (query, confirm, cancel)) != 1:
        raise ValidationError(
            "give what to forget, or --confirm PLAN_ID, or --cancel PLAN_ID (one of them)",
            field="query",
        )
    if yes and query is None:
        raise ValidationError("--yes goes with a request to preview, not a plan id", field="yes")
    caller = Caller(user_id=user, project_id=project)
    with open_bank(db) as bank:
        if cancel is not None:
            forget_cancel(bank, caller, cancel)
            shown = f"Cancelled {cancel}; nothing was forgotten."
            show(as_json, {"success": True, "cancelled": cancel}, shown)
            return
        if confirm is not None:
            _applied(forget_confirm(bank, caller, confirm), as_json)
            return
        assert query is not None
        with working("Planning what to forget…"):
            preview = forget_preview(bank, caller, query)
        if not yes and not can_ask(as_json):
            _planned(preview, as_json, user, project)
            return
        if not yes:
            _show_preview(preview)
            if not _changes(preview):
                forget_cancel(bank, caller, preview.plan.id)
                return
            typer.confirm("Apply this plan?", abort=True)
        _applied(forget_confirm(bank, caller, preview.plan.id), as_json)


def _planned(preview: ForgetPreview, as_json: bool, user: str, project: str | None) -> None:
    """A preview nobody can confirm here: the plan, and how to apply it later."""
    if as_json:
        print_json(preview_json(preview))
        return
    _show_preview(preview)
    if _changes(preview):
        where = f" --project {project}" if project else ""
        stdout().print(
            f"Nothing changed yet. To apply: memorybank forget {user}{where} "
            f"--confirm {preview.plan.id}",
            soft_wrap=True,  # a command to copy stays on one line
        )


def _applied(result: ForgetResult, as_json: bool) -> None:
    show(as_json, result_data(result), _result_line(result))


__all__ = ["forget", "result_data"]
