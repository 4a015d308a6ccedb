"""A gated Hugging Face model (experiment model.gated) on SageMaker: the model's
environment gets HF_TOKEN from the Secrets Manager secret (a CloudFormation dynamic
reference: CreateModel's Environment holds plain strings only), and the preflight in the
control function reads the Hub with the same secret."""

from __future__ import annotations

import dataclasses

import boto3
import pytest

from benchstack_constructs.sagemaker_endpoint import vllm_environment
from runners.checks import preflight
from runners.providers.base import ProvisionError
from runners.providers.sagemaker import names
from tests.runners.experiments import sagemaker_experiment
from tests.runners.fake_aws import mocked_aws
from tests.runners.sagemaker_world import World


def gated(exp):
    return dataclasses.replace(exp, model=dataclasses.replace(exp.model, gated=True))


@pytest.fixture(autouse=True)
def fake_aws(monkeypatch):
    with mocked_aws(monkeypatch, "us-east-2", unset=preflight.TOKEN_ENV):
        yield


def test_the_model_environment_takes_the_token_from_secrets_manager_only_when_gated():
    exp = sagemaker_experiment(regions=["us-east-2"])
    assert "HF_TOKEN" not in vllm_environment(exp)
    assert vllm_environment(gated(exp))["HF_TOKEN"] == (
        "{{resolve:secretsmanager:benchstack/hf-token:SecretString}}")


def test_the_preflight_reads_a_gated_model_with_the_secret():
    world = World(gated(sagemaker_experiment(regions=["us-east-2"])), deployed=("us-east-2",))
    repo = world.experiment.model.id
    world.hub.gated[repo], world.hub.token = "manual", "hf_secret_value"
    boto3.client("secretsmanager", region_name="us-east-2").create_secret(
        Name=names.HF_TOKEN_SECRET, SecretString="hf_secret_value")
    report = world.provider(home_region="us-east-2").preflight()
    assert report["access"] == {"gated": "manual", "token": "set"}


def test_a_missing_secret_is_one_line_before_anything_bills():
    world = World(gated(sagemaker_experiment(regions=["us-east-2"])), deployed=("us-east-2",))
    with pytest.raises(ProvisionError) as caught:
        world.provider(home_region="us-east-2").preflight()
    assert str(caught.value) == ("us-east-2: reading the Hugging Face token benchstack/hf-token "
                                 "from Secrets Manager: ResourceNotFoundException; create it "
                                 "(docs/first-deploy.md)")
