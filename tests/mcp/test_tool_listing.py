"""What an agent sees before calling anything: every tool, its four annotations set on
purpose, typed inputs, a structured output schema and a description."""

from __future__ import annotations

import pytest

from benchstack_mcp.config import Config
from tests.mcp.client import list_tools

# tool -> (readOnlyHint, destructiveHint, idempotentHint, openWorldHint)
HINTS = {
    "list_experiments": (True, False, True, False),
    "validate_experiment": (True, False, True, False),
    "show_ec2_boot_script": (True, False, True, False),
    "preflight": (True, False, True, True),  # the Hugging Face Hub
    "doctor": (True, False, True, True),  # AWS, the Hub, Docker Hub
    "run_local_benchmark": (False, False, False, True),  # writes a new run; openai: remote
    "run_report": (False, False, True, True),  # writes what is missing; s3:// allowed
    "compare_runs": (False, False, False, False),  # a new output folder each time
    "start_cloud_run": (False, False, False, True),  # a new billable run each time
    "run_status": (True, False, True, True),
    "billing_now": (True, False, True, True),
    "watchdog_sweep": (False, True, False, True),
    "teardown_run": (False, True, True, True),
    "find_vllm_image": (True, False, True, True),
    "engine_log": (True, False, True, True),  # CloudWatch Logs
    "query_backend": (True, False, False, True),
    "model_health": (True, False, True, True),
}


@pytest.fixture(scope="module")
def tools():
    return {tool.name: tool for tool in list_tools(Config())}


def test_every_tool_is_listed_with_all_four_hints_as_chosen(tools):
    assert set(tools) == set(HINTS)
    for name, tool in tools.items():
        a = tool.annotations
        got = (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        assert got == HINTS[name], name
        assert a.title, name


def test_only_the_two_deleting_tools_are_destructive(tools):
    destructive = {n for n, t in tools.items() if t.annotations.destructive_hint}
    assert destructive == {"teardown_run", "watchdog_sweep"}
    assert not any(tools[n].annotations.read_only_hint for n in destructive)


def test_inputs_are_typed_and_outputs_structured(tools):
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 40, name
        assert tool.input_schema["type"] == "object", name
        for prop, schema in tool.input_schema.get("properties", {}).items():
            assert "type" in schema or "anyOf" in schema, (name, prop)
        assert tool.output_schema and tool.output_schema["type"] == "object", name
        assert tool.output_schema.get("properties"), name
