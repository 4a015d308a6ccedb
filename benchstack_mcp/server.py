"""The server: every tool group registered on one MCPServer; `main` serves it on stdio."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from benchstack_mcp import backend_tools, cloud_tools, experiment_tools, run_tools
from benchstack_mcp.config import Config
from benchstack_mcp.errors import one_line_tool_errors

NAME = "benchstack"
INSTRUCTIONS = """benchstack deploys LLM serving backends on AWS (SageMaker, EC2, Bedrock) and
a local llama.cpp engine, and benchmarks them the same way. Typical order: list_experiments ->
validate_experiment -> preflight -> doctor -> start_cloud_run (or run_local_benchmark) ->
run_status until SUCCEEDED -> run_report -> compare_runs. billing_now shows what bills;
teardown_run and watchdog_sweep delete (destructive)."""


def build_server(config: Config | None = None) -> MCPServer:
    config = config or Config()
    server = MCPServer(NAME, instructions=INSTRUCTIONS, middleware=[one_line_tool_errors])
    for group in (experiment_tools, run_tools, cloud_tools, backend_tools):
        group.register(server, config)
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchstack_mcp",
                                     description="benchstack's MCP server on stdio")
    parser.add_argument("--experiments", type=Path, default=Config.experiments_dir,
                        help="folder of experiment TOML files (default: %(default)s)")
    parser.add_argument("--store", default=Config.store,
                        help="where local runs write runs/: a folder (default: the current "
                             "one) or s3://bucket[/prefix]")
    args = parser.parse_args(argv)
    # stdout carries the protocol: log lines go to stderr, and while serving the SDK points
    # fd 1 at stderr, so a stray print or a child's output never reaches the wire.
    logging.basicConfig(level=logging.WARNING)
    build_server(Config(experiments_dir=args.experiments, store=args.store)).run("stdio")
    return 0
