"""The published JSON Schema of ``trajconv.snapshot/1``, generated from the models."""

from __future__ import annotations

import json
from typing import Any

from trajconv.snapshot.models import Snapshot

SCHEMA_ID = "https://trajconv.invalid/schema/trajconv.snapshot-1.json"


def generate() -> dict[str, Any]:
    # The models validate and serialize alike, except that a Snapshot without children
    # leaves the member out (a wrap serializer, which the serialization schema cannot see
    # through), so the schema is that of what validates.
    schema = Snapshot.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def render() -> str:
    return json.dumps(generate(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # regenerate: python -m trajconv.snapshot.schema_export
    from pathlib import Path

    Path(__file__).with_name("schema.json").write_text(render(), encoding="utf-8")
