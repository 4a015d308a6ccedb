"""An in-process client session of the SDK against build_server(config): each helper
opens a session, does one thing, and closes it."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client

from benchstack_mcp.config import Config
from benchstack_mcp.server import build_server


def list_tools(config: Config) -> list:
    async def go():
        async with Client(build_server(config)) as client:
            return (await client.list_tools()).tools
    return anyio.run(go)


def call(config: Config, name: str, arguments: dict[str, Any] | None = None,
         progress: list | None = None):
    """The CallToolResult; progress notifications are appended to `progress`."""
    async def on_progress(done, total, message):
        progress.append((done, total, message))

    async def go():
        async with Client(build_server(config)) as client:
            return await client.call_tool(name, arguments or {},
                                          progress_callback=on_progress if progress is not None
                                          else None)
    return anyio.run(go)


def error_text(result) -> str:
    """The one line of a tool error (the SDK prefixes the tool's name)."""
    assert result.is_error, result.structured_content
    (content,) = result.content
    return content.text
