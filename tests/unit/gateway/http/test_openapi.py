"""The committed docs/openapi.json is the schema the app serves (regenerate: see docs)."""

from __future__ import annotations

import json
from pathlib import Path

from textgate.gateway.app import openapi_json

COMMITTED = Path(__file__).resolve().parents[4] / "docs" / "openapi.json"


def generated() -> str:
    return openapi_json()


def test_committed_schema_equals_generated() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == generated(), (
        "docs/openapi.json is stale: python -m textgate.gateway.app > docs/openapi.json"
    )


def test_schema_documents_the_error_codes() -> None:
    schema = json.loads(generated())
    post = schema["paths"]["/v1/classify/{task}"]["post"]
    assert {"413", "415", "422", "429", "503"} <= set(post["responses"])
    assert set(post["requestBody"]["content"]) == {
        "application/json",
        "message/rfc822",
        "text/plain",
    }


def test_every_ref_in_the_schema_resolves() -> None:
    schema = json.loads(generated())
    refs: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                refs.append(ref)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert refs  # the response models are referenced
    for ref in refs:
        target: object = schema
        for part in ref.removeprefix("#/").split("/"):
            assert isinstance(target, dict) and part in target, f"dangling {ref}"
            target = target[part]
