"""Checks on the shape of what a server sent: a reply that is not what the API promises
is one failed request with its reason (`BadReply`), never a TypeError in a phase."""

from __future__ import annotations

from typing import Any


class BadReply(ValueError):
    """The server's reply does not have the documented shape; the message says where."""


def _show(value: Any) -> str:
    return repr(value)[:60]


def obj(value: Any, where: str) -> dict[str, Any]:
    """A JSON object, or absent (None) which reads as empty."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadReply(f"{where} is not an object: {_show(value)}")
    return value


def required_obj(value: Any, where: str) -> dict[str, Any]:
    """A JSON object that must be there (a whole body, an SSE event): null is wrong too."""
    if not isinstance(value, dict):
        raise BadReply(f"{where} is not an object: {_show(value)}")
    return value


def items(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadReply(f"{where} is not a list: {_show(value)}")
    return value


def objects(value: Any, where: str) -> list[dict[str, Any]]:
    return [obj(v, f"{where}[{i}]") or {} for i, v in enumerate(items(value, where))]


def text(value: Any, where: str) -> str:
    """A string, or absent/null which reads as ""."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadReply(f"{where} is not a string: {_show(value)}")
    return value


def optional_text(value: Any, where: str) -> str | None:
    return None if value is None else text(value, where)


def count(value: Any, where: str) -> int | None:
    """A token count: a non-negative integer (true/false are not counts), or absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadReply(f"{where} is not a token count: {_show(value)}")
    return value


def index(value: Any, where: str) -> int:
    """A list position (tool call index, content block index); absent means 0."""
    return count(value, where) or 0
