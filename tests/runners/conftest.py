"""Fixtures: the loopback server and experiment files that point at it."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.loopback_server import LoopbackServer, Truth


def benchmark_plan(**values) -> str:
    """A [benchmark] table; lists and numbers print as TOML, strings are quoted."""
    lines = [f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"'
             for k, v in values.items()]
    return "\n[benchmark]\n" + "\n".join(lines) + "\n"


# Small plans keep each run to a few seconds against the loopback server.
SMALL_PLAN = benchmark_plan(decode_lengths=[16, 64], decode_repeats=3, stream_requests=4,
                            stream_tokens=32, concurrency=[1, 4], load_tokens=32,
                            load_batches=2, toolcall_runs=2)


def write_openai_experiment(folder: Path, base_url: str, *, tools: bool = True,
                            plan: str = SMALL_PLAN, name: str = "loop-test") -> Path:
    engine = '[engine]\ntool_call_parser = "test"\n' if tools else ""
    path = folder / f"{name}.toml"
    path.write_text(f"""
name = "{name}"
backend = "openai"
[model]
id = "loopback"
served_name = "loopback"
build = "test"
precision = "bf16"
[openai]
base_url = "{base_url}/v1"
{engine}{plan}""")
    return path


@pytest.fixture
def loopback():
    """Factory: loopback(truth=..., faults=[...]) -> a running LoopbackServer."""
    servers = []

    def start(truth: Truth | None = None, faults=None) -> LoopbackServer:
        server = LoopbackServer(truth or Truth(ttft_s=0.01, gap_s=0.001), faults)
        servers.append(server.__enter__())
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)
