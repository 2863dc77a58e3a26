"""The OpenAPI schema is a contract: valid, named operations, typed answers, the bearer scheme,
each operation's own errors, one set of tags, ``{"error": …}`` for every 4xx, and the
documentation pages served with no CDN (schemathesis checks the answers against it:
``test_reliability_hostile.py``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from openapi_spec_validator import validate

from memorybank import MemoryBank
from memorybank.server.openapi import TAGS
from server_helpers import make_world


@pytest.fixture
def client(bank: MemoryBank) -> Iterator[TestClient]:
    with TestClient(make_world(bank).app) as c:
        yield c


@pytest.fixture
def schema(client: TestClient) -> dict[str, Any]:
    document: dict[str, Any] = client.get("/openapi.json").json()
    return document


def operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_the_schema_is_valid_openapi(schema: dict[str, Any]) -> None:
    validate(schema)
    assert schema["openapi"].startswith("3.")


def test_operations_are_named_and_tagged_consistently(schema: dict[str, Any]) -> None:
    ids = [op["operationId"] for _, _, op in operations(schema)]
    assert len(ids) == len(set(ids)) > 25
    # FastAPI's defaults look like import__api_import_post; ours are the functions' names.
    assert all(re.fullmatch(r"[a-z][a-z_]*[a-z]", i) and "_api_" not in i for i in ids), ids
    names = {tag["name"] for tag in TAGS}
    assert {t for _, _, op in operations(schema) for t in op["tags"]} == names
    by_id = {op["operationId"]: (m, p) for p, m, op in operations(schema)}
    assert by_id["search_memories"] == ("get", "/api/search")
    assert by_id["import_memories"] == ("post", "/api/import")


def test_answers_are_typed_by_the_core_records(schema: dict[str, Any]) -> None:
    untyped = []
    for path, method, op in operations(schema):
        for code, answer in op["responses"].items():
            if code.startswith("2") and code != "204" and path != "/metrics":
                content = answer.get("content", {})
                if "text/event-stream" in content:
                    continue  # the events stream: its events are GET /api/events/list's
                json_body = content.get("application/json", {})
                if "$ref" not in str(json_body.get("schema", {})):
                    untyped.append(f"{method} {path} {code}")
    assert not untyped
    components = schema["components"]["schemas"]
    assert {"Memory", "SearchHit", "SaveResult", "HistoryEvent", "ExportDocument"} <= set(
        components
    )
    page = schema["paths"]["/api/events/list"]["get"]["responses"]["200"]["content"]
    assert page["application/json"]["schema"]["$ref"].endswith("/EventPage")
    hit = schema["paths"]["/api/search"]["get"]["responses"]["200"]
    assert hit["content"]["application/json"]["schema"]["$ref"].endswith("/SearchResults")
    body = schema["paths"]["/api/import"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["$ref"].endswith("/ExportDocument")


def test_bearer_scheme_and_each_operations_own_errors(schema: dict[str, Any]) -> None:
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path, _, op in operations(schema):
        if path.startswith("/api"):
            assert op["security"] == [{"bearer": []}, {}]  # none needed in local mode
            assert "401" in op["responses"]
        for code, answer in op["responses"].items():
            if code.startswith("4") and path != "/metrics":
                ref = answer["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorBody"), (path, code)
    health = set(schema["paths"]["/healthz"]["get"]["responses"])
    assert health == {"200", "421"}  # no 401, 409 or 429 on a liveness check
    reads = schema["paths"]["/api/memories/{memory_id}"]["get"]["responses"]
    assert not {"409", "413", "415", "429"} & set(reads)
    saves = schema["paths"]["/api/memory/user"]["post"]["responses"]
    assert {"201", "409", "422", "429"} <= set(saves)
    assert "HTTPValidationError" not in schema["components"]["schemas"]


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/nope", 404),
        ("GET", "/nothing/here", 404),
        ("POST", "/healthz", 405),
        ("DELETE", "/api/search", 405),
        ("GET", "/ui/missing.js", 404),
        ("GET", "/docs/assets/missing.js", 404),
    ],
)
def test_every_4xx_is_an_error_body(
    client: TestClient, method: str, path: str, status: int
) -> None:
    response = client.request(method, path)
    assert response.status_code == status
    assert set(response.json()) == {"error"} and response.json()["error"]


def test_documentation_pages_load_their_assets_from_this_server(client: TestClient) -> None:
    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        sources = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
        assert sources and all(s.startswith("/") for s in sources), sources
        assert "cdn" not in html.lower() and "fonts.googleapis" not in html
        for source in sources:
            asset = client.get(source)
            assert asset.status_code == 200 and asset.content, source
        # No inline script: Swagger UI starts from a file of its own (/docs/init.js).
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), html
