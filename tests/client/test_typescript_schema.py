"""The TypeScript client's types come from the server's schema: ``clients/typescript/openapi.json``
must be what the server serves (``make openapi`` writes it and regenerates the types)."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from memorybank import MemoryBank
from memorybank.server.app import openapi_document
from server_helpers import make_world

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def test_the_committed_schema_is_the_servers(bank: MemoryBank) -> None:
    served = TestClient(make_world(bank, users=False).app).get("/openapi.json").json()
    assert openapi_document() == served
    committed = json.loads((CLIENT / "openapi.json").read_text(encoding="utf-8"))
    assert committed == served, "the API changed: run `make openapi` and commit the result"


def test_the_generated_types_are_committed_beside_it() -> None:
    schema = (CLIENT / "src" / "schema.ts").read_text(encoding="utf-8")
    assert "export interface operations" in schema and "search_memories" in schema
    lock = json.loads((CLIENT / "package-lock.json").read_text(encoding="utf-8"))
    assert "node_modules/openapi-typescript" in lock["packages"]
    package = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))
    assert package["type"] == "module" and "dependencies" not in package  # fetch only
