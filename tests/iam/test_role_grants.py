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


def test_only_this_accounts_rules_and_alarms_may_publish_to_the_alerts_topic(resolved):
    """No statement lets events.amazonaws.com (any account's rule) publish unconditioned."""
    from tests.iam.policy import Statement

    for region in ("us-east-1", "us-east-2", "us-west-2"):
        stack = names.foundation(region)
        template = resolved.templates[stack]
        (topic_policy,) = [r for r in template["Resources"].values()
                           if r["Type"] == "AWS::SNS::TopicPolicy"]
        for raw in topic_policy["Properties"]["PolicyDocument"]["Statement"]:
            principal = raw.get("Principal", {})
            services = principal.get("Service", []) if isinstance(principal, dict) else []
            if raw["Effect"] != "Allow" or not services:
                continue
            resolved_raw = resolved.resolve(stack, {k: v for k, v in raw.items()
                                                    if k in ("Effect", "Action", "Resource",
                                                             "Condition")})
            statement = Statement.parse(resolved_raw, where=stack)
            topic = statement.resources[0]
            ours = {"aws:SourceAccount": ACCOUNT,
                    "aws:SourceArn": f"arn:aws:events:{region}:{ACCOUNT}:rule/x"}
            theirs = {"aws:SourceAccount": "999999999999",
                      "aws:SourceArn": f"arn:aws:events:{region}:999999999999:rule/x"}
            assert evaluate([statement], "sns:Publish", topic, ours).allowed
            assert not evaluate([statement], "sns:Publish", topic, theirs).allowed, raw


def test_the_run_end_rule_still_targets_the_alerts_topic(resolved):
    template = resolved.templates[names.benchmark(HOME)]
    (rule,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Events::Rule"]
    (target,) = rule["Properties"]["Targets"]
    assert "AlertsTopic" in str(target["Arn"]) and "InputTransformer" in target
