"""list, validate, boot script and preflight through an in-process MCP client session."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import boto3
import pytest

from benchstack_mcp.config import Config
from tests.mcp.client import call, error_text
from tests.runners.hub_fixtures import FakeHub, LoopbackHub, w4a16_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def config(tmp_path) -> Config:
    folder = tmp_path / "experiments"
    shutil.copytree(ROOT / "experiments", folder)
    return Config(experiments_dir=folder, store=str(tmp_path))


def test_list_experiments_gives_every_file_and_names_a_broken_one(config):
    (config.experiments_dir / "broken.toml").write_text('name = "broken"\nbackend = "tpu"\n')
    result = call(config, "list_experiments")
    assert not result.is_error
    listed = {e["name"]: e for e in result.structured_content["experiments"]}
    assert set(listed) == {p.stem for p in config.experiments_dir.glob("*.toml")} - {"broken"}
    assert listed["e2b-bf16-ml-g6"]["backend"] == "sagemaker"
    assert listed["e2b-bf16-ml-g6"]["instance_types"][0] == "ml.g6.xlarge"
    (invalid,) = result.structured_content["invalid"]
    assert invalid.startswith(str(config.experiments_dir / "broken.toml") + ": ")


def test_validate_a_name_a_file_and_text(config):
    by_name = call(config, "validate_experiment", {"name": "local-smollm2-135m"})
    assert by_name.structured_content["valid"] is True
    assert by_name.structured_content["experiment"]["backend"] == "local"
    by_file = call(config, "validate_experiment",
                   {"file": str(config.experiments_dir / "nova-micro-bedrock.toml")})
    assert by_file.structured_content["backend"] == "bedrock"
    bad = call(config, "validate_experiment", {"text": 'name = "x1"\nbackend = "tpu"\n'})
    assert bad.structured_content["valid"] is False
    assert bad.structured_content["error"].startswith("<text>: backend: ")
    assert "\n" not in bad.structured_content["error"]
    toml = call(config, "validate_experiment", {"text": "name = "})
    assert "not valid TOML" in toml.structured_content["error"]


def test_validate_wants_exactly_one_input(config):
    result = call(config, "validate_experiment", {"name": "a", "text": "b"})
    assert "give exactly one of name, file or text (got name, text)" in error_text(result)


def test_arguments_that_fail_the_schema_are_one_line_too(config):
    text = error_text(call(config, "show_ec2_boot_script", {"instance_type": 3}))
    assert "experiment_name" in text and "Field required" in text
    assert "\n" not in text


def test_boot_script_of_an_ec2_experiment_and_a_one_line_refusal_otherwise(config):
    result = call(config, "show_ec2_boot_script",
                  {"experiment_name": "e2b-emb4-g6", "cache_bucket": "my-cache"})
    script = result.structured_content["script"]
    assert script.startswith("#!") and "my-cache" in script
    values = result.structured_content["launch_values"]
    assert "IMAGE=vllm/vllm-openai:v0.30.0\n" in values
    assert base64.b64encode(values.encode()).decode() in script  # what the script carries
    assert result.structured_content["instance_type"] == "g6.xlarge"
    wrong = call(config, "show_ec2_boot_script", {"experiment_name": "nova-micro-bedrock"})
    assert error_text(wrong).endswith("backend: 'bedrock'; a boot script is for backend 'ec2'")
    unknown = call(config, "show_ec2_boot_script", {"experiment_name": "nope"})
    assert "no experiment 'nope'; known: " in error_text(unknown)


def test_preflight_reads_the_hub_and_fails_in_one_line(config, monkeypatch):
    hub = FakeHub()
    hub.add("google/gemma-4-E2B-it", w4a16_model(ignore=["re:.*vision_tower.*"]))
    with LoopbackHub(hub) as served:
        monkeypatch.setenv("HF_ENDPOINT", served.url)
        result = call(config, "preflight", {"experiment_name": "e2b-bf16-ml-g6"})
        assert not result.is_error, result.content
        assert result.structured_content["tensors"] == 29
        assert result.structured_content["memory"]["instance_type"] == "ml.g6.xlarge"
        missing = call(config, "preflight", {"experiment_name": "e2b-qat-w4a16-ml-g6"})
    assert "no config.json at" in error_text(missing)
    # weights are read as headers only: every safetensors request is a Range request
    shards = [(path, ranged) for path, ranged in hub.log if path.endswith(".safetensors")]
    assert shards and all(ranged for _, ranged in shards)


def test_doctor_names_what_is_missing_then_finds_it_deployed(config, monkeypatch):
    from moto import mock_aws

    from runners.workflow import execution as workflow

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        before = call(config, "doctor", {"region": "us-east-2"}).structured_content
        assert before["ready"] is False and before["experiment"] is None
        status = {c["name"]: c["status"] for c in before["checks"]}
        assert status == {"credentials": "ok", "cdk-bootstrap us-east-2": "fail",
                          "foundation us-east-2": "fail", "benchmark us-east-2": "fail"}
        foundation = next(c for c in before["checks"] if c["name"] == "foundation us-east-2")
        assert foundation["message"].endswith("npx cdk deploy Benchstack-Foundation-us-east-2")
        ssm = boto3.client("ssm", region_name="us-east-2")
        for name, value in (("/cdk-bootstrap/hnb659fds/version", "30"),
                            (workflow.foundation_parameter("results-bucket"), "b"),
                            (workflow.STATE_MACHINE_PARAMETER, "arn:aws:states:x")):
            ssm.put_parameter(Name=name, Value=value, Type="String")
        after = call(config, "doctor", {"region": "us-east-2"}).structured_content
        assert after["ready"] is True and after["counts"] == {"ok": 4, "fail": 0, "warn": 0,
                                                              "skip": 0}
    local = call(config, "doctor", {"experiment_name": "local-smollm2-135m"})
    (line,) = local.structured_content["checks"]
    assert line["status"] == "skip" and "nothing on AWS to check" in line["message"]
