"""Failures a caller can act on become tool errors carrying one line (the model reads it
and corrects the call); anything else is a bug, which the SDK reports as "Error executing
tool <name>" and logs with its traceback on stderr. Neither stops the server. The
middleware squeezes every tool error to one line, the SDK's schema errors included."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

from botocore.exceptions import BotoCoreError, ClientError
from mcp.server.mcpserver.exceptions import ToolError

from runners.checks.preflight import PreflightError
from runners.results.store import StoreUnusable
from runners.workflow.start import StartError

MAX_MESSAGE = 600
# ValueError covers ExperimentError, CompareError, PricesFileError, AddressError,
# StatusError and JSON decoding; LookupError the image lookup (KeyError is a bug: excluded).
EXPECTED: tuple[type[BaseException], ...] = (ValueError, LookupError, OSError, PreflightError,
                                             StartError, StoreUnusable, ClientError,
                                             BotoCoreError)

F = TypeVar("F", bound=Callable[..., Any])


def squeeze(text: str) -> str:
    """One line of at most MAX_MESSAGE characters."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 3] + "..."


def one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return squeeze(f"AWS: {text}" if isinstance(exc, (ClientError, BotoCoreError)) else text)


async def one_line_tool_errors(ctx, call_next):
    """Server middleware: the SDK's own tool errors (arguments that fail the input schema
    are reported with pydantic's multi-line text) reach the caller as one line too."""
    result = await call_next(ctx)
    # The SDK hands middleware the result in its wire form (a dict).
    if ctx.method == "tools/call" and isinstance(result, dict) and result.get("isError"):
        result["content"] = [{**c, "text": squeeze(c["text"])} if c.get("type") == "text"
                             else c for c in result.get("content", [])]
    return result


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
