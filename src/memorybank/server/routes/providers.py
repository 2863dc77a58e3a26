"""Bring-your-own providers: the caller's embedding and LLM settings, and a check of the LLM."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from memorybank.errors import ConfigurationError, NotFound, ProviderError
from memorybank.providers.netguard import AddressPolicy
from memorybank.server.deps import AccountsDep, PrincipalDep, SettingsDep, llm_for
from memorybank.server.error_responses import WRITE_ERRORS
from memorybank.server.execution import reading
from memorybank.server.openapi import documented
from memorybank.server.schemas import LlmCheck, ProviderUpdate, ProviderView
from memorybank.services.accounts import ProviderKind, ProviderSettings

router = APIRouter(tags=["settings"])

#: What the LLM check asks for: the JSON ``{"ok": true}``.
_CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


def provider_view(provider: ProviderSettings) -> dict[str, Any]:
    """A provider as the API shows it: never the key, only whether one is set."""
    return ProviderView.model_validate(provider, from_attributes=True).model_dump()


def provider_kind(kind: str) -> ProviderKind:
    """``kind`` of a path, checked (404 for anything but embedding and llm)."""
    if kind not in ("embedding", "llm"):
        raise NotFound(f"no provider kind {kind!r}: use embedding or llm")
    return "llm" if kind == "llm" else "embedding"


@router.get(
    "/api/settings/providers",
    responses=documented(list[ProviderView]),  # type: ignore[arg-type]
)
@reading
def list_providers(principal: PrincipalDep, accounts: AccountsDep) -> list[dict[str, Any]]:
    """The caller's providers; keys are never returned, only whether one is set."""
    return [provider_view(p) for p in accounts.providers(principal.user_id)]


@router.put(
    "/api/settings/providers/{kind}",
    responses=documented(ProviderView, 404, *WRITE_ERRORS),
)
def put_provider(
    principal: PrincipalDep,
    accounts: AccountsDep,
    settings: SettingsDep,
    kind: str,
    body: ProviderUpdate,
) -> dict[str, Any]:
    """Configure, enable/disable or rotate the key of a provider (key stored encrypted).

    The base URL must be http(s), with no ``user:pass@``, query or fragment; a literal IP
    must be public (loopback too in local mode; private too when the operator sets
    ``MEMORYBANK_PROVIDER_ALLOW_PRIVATE``). Host names are checked on every connection."""
    policy = AddressPolicy.for_users(
        allow_private=settings.provider_allow_private, local_mode=principal.local
    )
    stored = accounts.set_provider(
        principal.user_id,
        provider_kind(kind),
        base_url=body.base_url,
        model=body.model,
        api_key=body.api_key,
        enabled=body.enabled,
        address_policy=policy,
    )
    return provider_view(stored)


@router.delete(
    "/api/settings/providers/{kind}",
    status_code=204,
    responses=documented(None, 404, *WRITE_ERRORS, status=204),
)
def delete_provider(principal: PrincipalDep, accounts: AccountsDep, kind: str) -> Response:
    """Forget a provider and its key."""
    accounts.delete_provider(principal.user_id, provider_kind(kind))
    return Response(status_code=204)


@router.post("/api/providers/llm/check", responses=documented(LlmCheck))
def check_llm(
    principal: PrincipalDep, accounts: AccountsDep, settings: SettingsDep
) -> dict[str, Any]:
    """Ask the caller's LLM a one-line question: ``success: false`` with guidance when it
    is not configured, disabled or failing. The guidance says the HTTP status and what to
    check, never what the provider answered; an address the policy refuses is not
    contacted at all."""
    provider = accounts.provider(principal.user_id, "llm")
    if provider is None or not provider.enabled:
        return {
            "success": False,
            "error": "no LLM provider is configured or enabled: add one in Settings "
            "(PUT /api/settings/providers/llm) and enable it",
        }
    with llm_for(accounts, principal, settings) as llm:
        assert llm is not None  # the provider is enabled
        try:
            llm.complete_json(
                [{"role": "user", "content": 'Answer with the JSON {"ok": true}.'}],
                "check",
                _CHECK_SCHEMA,
            )
        except (ProviderError, ConfigurationError) as exc:
            return {"success": False, "error": f"the LLM provider failed: {exc}"}
    return {"success": True, "model": provider.model}


__all__ = ["router"]
