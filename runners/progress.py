"""Progress events from the phases. The CLI listens and draws; Lambda logs nothing extra."""

from __future__ import annotations

from typing import Any, Callable

_listeners: list[Callable[[dict[str, Any]], None]] = []


def listen(fn: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
    """Add a listener; returns the function that removes it."""
    _listeners.append(fn)
    return lambda: _listeners.remove(fn)


def emit(phase: str, message: str = "", done: int | None = None, total: int | None = None) -> None:
    event = {"phase": phase, "message": message, "done": done, "total": total}
    for fn in list(_listeners):
        fn(event)
