"""`python -m benchstack_mcp`: the MCP server on stdio (what `./dev mcp` runs)."""

from benchstack_mcp.server import main

raise SystemExit(main())
