"""Tool annotations (MCP ToolAnnotations). All four hints are required keywords, so no
tool leaves one to the client's default (which assumes destructive and open-world).

read_only    changes nothing anywhere
destructive  may delete or stop something (meaningful when not read-only)
idempotent   a second identical call changes nothing more (when not read-only)
open_world   talks to something outside this machine (AWS, the Hugging Face Hub, a remote
             engine); False means files here and 127.0.0.1 only
"""

from __future__ import annotations

from mcp.types import ToolAnnotations


def hints(title: str, *, read_only: bool, destructive: bool, idempotent: bool,
          open_world: bool) -> ToolAnnotations:
    return ToolAnnotations(title=title, read_only_hint=read_only,
                           destructive_hint=destructive, idempotent_hint=idempotent,
                           open_world_hint=open_world)
