"""`./dev mcp` as a subprocess, over stdio, as Claude Code or Gemini CLI would start it."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]


def test_dev_mcp_serves_the_tools_over_stdio_and_survives_a_bad_call():
    params = StdioServerParameters(command=str(ROOT / "dev"), args=["mcp"], cwd=str(ROOT),
                                   env={"PATH": os.environ["PATH"],
                                        "HOME": os.environ.get("HOME", "/tmp")})

    async def session():
        async with Client(params) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            bad = await client.call_tool("show_ec2_boot_script", {"experiment_name": "nope"})
            schema = await client.call_tool("show_ec2_boot_script", {})
            listed = await client.call_tool("list_experiments", {})
            return client.server_info, names, bad, schema, listed

    info, names, bad, schema, listed = anyio.run(session)
    assert info.name == "benchstack"
    assert {"list_experiments", "start_cloud_run", "teardown_run", "query_backend"} <= names
    assert bad.is_error and "no experiment 'nope'; known: " in bad.content[0].text
    assert schema.is_error and "Field required" in schema.content[0].text
    assert "\n" not in schema.content[0].text
    # the server is still there after the error, answering with structured content
    experiments = {e["name"] for e in listed.structured_content["experiments"]}
    assert experiments == {p.stem for p in (ROOT / "experiments").glob("*.toml")}
