"""Failures a caller can act on become tool errors carrying one line (the model reads it
and corrects the call); anything else is a bug, which the SDK reports as "Error executing
tool <name>" and logs with its traceback on stderr. Neither stops the server."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

from botocore.exceptions import BotoCoreError, ClientError
from mcp.server.mcpserver.exceptions import ToolError

from runners.checks.preflight import PreflightError
from runners.workflow.start import StartError

MAX_MESSAGE = 600
# ValueError covers ExperimentError, CompareError, PricesFileError, AddressError,
# StatusError and JSON decoding; LookupError the image lookup (KeyError is a bug: excluded).
EXPECTED: tuple[type[BaseException], ...] = (ValueError, LookupError, OSError, PreflightError,
                                             StartError, ClientError, BotoCoreError)

F = TypeVar("F", bound=Callable[..., Any])


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, (ClientError, BotoCoreError)):
        text = f"AWS: {text}"
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 3] + "..."


def _expected(exc: BaseException) -> bool:
    return isinstance(exc, EXPECTED) and not isinstance(exc, KeyError)


def tool_errors(fn: F) -> F:
    """Wrap a tool so expected failures raise ToolError(one line)."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args, **kwargs):
            try:
                return await fn(*args, **kwargs)
            except Exception as exc:
                if _expected(exc):
                    raise ToolError(one_line(exc)) from exc
                raise
        return run_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if _expected(exc):
                raise ToolError(one_line(exc)) from exc
            raise
    return run  # type: ignore[return-value]
