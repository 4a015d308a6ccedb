"""Grants that the runners' calls need, checked by evaluating the synthesized policies
(tests/iam/policy.py) with the request each call makes: action, resource ARN, tags."""

from __future__ import annotations

from runners.providers.sagemaker import names as sagemaker_names
from runners import tags
from stacks import names
from tests.iam.policy import ACCOUNT, evaluate

HOME = "us-east-1"


def control(resolved):
    return resolved.role_statements(names.benchmark(HOME), "ControlRole")


def test_sagemaker_provision_may_read_its_stack_names_in_one_call(resolved):
    # runners/providers/sagemaker/provider.py _stack_names: ssm.get_parameters(Names=[...])
    for key in (sagemaker_names.ENDPOINT_CONFIG_NAME, sagemaker_names.MODEL_NAME):
        name = sagemaker_names.parameter("e2b-bf16-ml-g6", key)
        arn = f"arn:aws:ssm:us-east-2:{ACCOUNT}:parameter{name}"
        assert evaluate(control(resolved), "ssm:GetParameters", arn).allowed, arn


def test_an_ec2_launch_is_allowed_with_exactly_the_tags_it_carries(resolved):
    """CreateFleet (and the RunInstances it implies) asks for every resource it touches;
    what TagSpecifications tag carries the request tag, the ENI carries none."""
    statements = control(resolved)
    tagged = {f"aws:RequestTag/{tags.MANAGED}": "true"}
    region = "us-west-2"
    for action in ("ec2:CreateFleet", "ec2:RunInstances"):
        for kind in ("fleet", "instance", "volume"):
            arn = f"arn:aws:ec2:{region}:{ACCOUNT}:{kind}/*"
            assert evaluate(statements, action, arn, tagged).allowed, (action, kind)
            assert not evaluate(statements, action, arn, {}).allowed, (action, kind)
        for kind in ("network-interface", "subnet", "security-group", "launch-template"):
            arn = f"arn:aws:ec2:{region}:{ACCOUNT}:{kind}/*"
            assert evaluate(statements, action, arn, {}).allowed, (action, kind)
        image = f"arn:aws:ec2:{region}::image/ami-0123456789abcdef0"
        assert evaluate(statements, action, image, {}).allowed


def test_the_watchdog_may_find_instant_fleets_by_tag(resolved):
    # runners/watchdog/inventory.py Ec2Fleets: DescribeTags (resource-type fleet)
    statements = resolved.role_statements(names.watchdog(), "WatchdogSweepRole")
    assert evaluate(statements, "ec2:DescribeTags", "*",
                    {"aws:RequestedRegion": "us-east-2"}).allowed
