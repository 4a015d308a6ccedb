"""Runner dicts carry more keys than a tool's output model shows: keep the model's."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def pick(model: type[BaseModel], row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k in model.model_fields}
