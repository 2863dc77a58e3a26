"""Webhook records: an integrator's endpoint and the deliveries made to it (issue 21).

Plain values, like :mod:`memorybank.model.accounts`; :mod:`memorybank.services.webhooks` manages
them and :mod:`memorybank.services.webhook_worker` delivers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memorybank.model.memory import EVENT_TYPES, new_id, utcnow

#: What a webhook may subscribe to: every event type, and ``test`` (sent by "send test").
WEBHOOK_EVENT_TYPES: tuple[str, ...] = (*EVENT_TYPES.values(), "test")
DeliveryStatus = Literal["pending", "delivered", "failed"]


class Webhook(BaseModel):
    """An endpoint that receives the events of one project, or of every project of one org.
    ``secret`` signs each delivery (see :func:`memorybank.services.webhooks.sign`)."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=lambda: new_id("whk"))
    org_id: str | None = None
    project_id: str | None = None
    created_by: str
    url: str
    secret: str
    event_types: tuple[str, ...]
    active: bool = True
    created_at: datetime = Field(default_factory=utcnow)

    def wants(self, event_type: str) -> bool:
        """Whether this webhook subscribed to ``event_type``.

        >>> Webhook(project_id="p", created_by="u", url="https://x.example", secret="s",
        ...         event_types=("created",)).wants("deleted")
        False
        """
        return event_type in self.event_types


class Delivery(BaseModel):
    """One event (or test) sent, or to be sent, to one webhook, with its attempts so far."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=lambda: new_id("dlv"))
    webhook_id: str
    event_id: int | None = None
    event_type: str
    body: str
    status: DeliveryStatus = "pending"
    attempts: int = 0
    next_attempt_at: datetime = Field(default_factory=utcnow)
    #: The receiver's HTTP status on the last attempt, if it answered.
    last_status: int | None = None
    last_error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    done_at: datetime | None = None


__all__ = ["WEBHOOK_EVENT_TYPES", "Delivery", "DeliveryStatus", "Webhook"]
