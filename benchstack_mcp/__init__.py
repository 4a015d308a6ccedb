"""benchstack's MCP server: the runners' verbs as annotated tools an agent (Claude Code,
Gemini CLI) drives over stdio. `./dev mcp` starts it; README "Drive it from an agent".

Built on the official `mcp` Python SDK 2.x (`MCPServer`), which only this package needs:
it has its own requirements file and is never part of the Lambda asset. Every tool calls
the runners' Python API (never the aws CLI), returns structured content, and answers a
user mistake or an AWS refusal with a one-line tool error.

    server           build_server(config) and main() (stdio)
    config           where experiments and runs are, how AWS sessions are made
    hints            the four tool annotations, always set together
    errors           exceptions -> one-line tool errors
    experiment_tools list, validate, boot script, preflight, doctor
    run_tools        local benchmark (with progress), report, compare
    cloud_tools      start, status, billing now, teardown, watchdog, DLC image, engine log
    backend_tools    query one prompt, model health
"""
