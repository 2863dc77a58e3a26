"""``core.scopes.scope_set``: which scopes a call may touch, and the errors that say what to
fix when the call cannot touch any."""

from __future__ import annotations

from typing import Any

import pytest

from memorybank.core.scopes import scope_set
from memorybank.errors import ValidationError
from memorybank.model import ScopeSet


def test_the_choices() -> None:
    assert scope_set("ann", None) == ScopeSet(user_id="ann")
    assert scope_set("ann", "apollo") == ScopeSet(user_id="ann", project_ids=("apollo",))
    assert scope_set("ann", "apollo", "user") == ScopeSet(user_id="ann")
    assert scope_set("ann", "apollo", "project") == ScopeSet(
        user_id="ann", include_private=False, project_ids=("apollo",)
    )


@pytest.mark.parametrize(
    ("user_id", "project_id", "scopes", "field", "words"),
    [
        ("", None, "all", "user_id", "user_id is required"),
        (None, None, "all", "user_id", "user_id is required"),
        ("ann", None, "project", "project_id", "needs a project_id"),
        ("ann", "apollo", "everything", "scopes", "not one of all, user, project"),
    ],
)
def test_a_call_that_touches_nothing_says_what_to_fix(
    user_id: Any, project_id: str | None, scopes: Any, field: str, words: str
) -> None:
    with pytest.raises(ValidationError, match=words) as caught:
        scope_set(user_id, project_id, scopes)
    assert caught.value.field == field
