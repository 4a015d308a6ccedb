"""Every AWS operation the runners make in the moto/Stubber tests is allowed by the
synthesized policy of the role that runs that code: action, resource ARN and conditions.

The runners' AWS tests run once, in a subprocess, with the recording plugin
(tests/iam/recorder.py); each recorded call is mapped to its IAM actions and resources
(tests/iam/coverage.py) and evaluated against the role's statements (tests/iam/policy.py).
A missing grant fails with the call site and a statement that would allow it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stacks import names
from tests.iam import coverage
from tests.iam.policy import ACCOUNT, evaluate

ROOT = Path(__file__).resolve().parents[2]
# The runners' tests that make AWS calls through moto or Stubber.
AWS_TESTS = [
    "tests/runners/test_ec2_provider.py", "tests/runners/test_ec2_eventual_consistency.py",
    "tests/runners/test_ec2_instance_check.py", "tests/runners/test_ec2_placement_size.py",
    "tests/runners/test_sagemaker_provider.py", "tests/runners/test_sagemaker_alert_region.py",
    "tests/runners/test_gated_models.py", "tests/runners/test_region_fallback.py",
    "tests/runners/test_bedrock_run.py",
    "tests/runners/test_results_store.py", "tests/runners/test_start.py",
    "tests/runners/test_watchdog.py", "tests/runners/test_watchdog_instant_fleets.py",
    "tests/runners/test_watchdog_outputs.py", "tests/cost/test_pricing_api.py",
    "tests/telemetry/test_cloudwatch_logs.py", "tests/telemetry/test_cloudwatch_metrics.py",
    "tests/telemetry/test_collect.py",
]
RESULTS_BUCKET = "benchstack-results-bucket"
CACHE_BUCKET = "benchstack-cache-bucket"


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> list[dict]:
    """The recorded calls; BENCHSTACK_AWS_CALLS_FROM=<file> reuses an earlier recording
    (while extending the tables), otherwise the AWS tests run now."""
    reuse = os.environ.get("BENCHSTACK_AWS_CALLS_FROM")
    if reuse:
        return [json.loads(line) for line in Path(reuse).read_text().splitlines()]
    path = tmp_path_factory.mktemp("iam") / "calls.jsonl"
    env = {**os.environ, "BENCHSTACK_AWS_CALLS": str(path)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "tests.iam.recorder", *AWS_TESTS], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:]
    return [json.loads(line) for line in path.read_text().splitlines()]


class World:
    """Names the test worlds invent, as the deployed stacks have them."""

    def __init__(self, resolved):
        self.resolved = resolved
        self.results_bucket = RESULTS_BUCKET
        self.cache_bucket = CACHE_BUCKET

    def alerts_topic(self, region: str) -> str:
        stack = names.foundation(region)
        if stack not in self.resolved.templates:
            return f"arn:aws:sns:{region}:{ACCOUNT}:no-foundation-here"
        (logical,) = [k for k, v in self.resolved.templates[stack]["Resources"].items()
                      if v["Type"] == "AWS::SNS::Topic"]
        return self.resolved.resolve(stack, {"Ref": logical})

    def bedrock_model(self, model_id: str, region: str):
        return coverage.bedrock_resources(model_id, region)


def checks_of(call: dict, world: World) -> list[coverage.Check]:
    key = (call["service"], call["operation"])
    rule = coverage.RESOURCES.get(key)
    if rule is None:
        pytest.fail(f"{call['frames'][0]}: {key[0]} {key[1]} has no resource rule; add one to "
                    "tests/iam/coverage.py RESOURCES")
    found = rule(call["params"], call["region"], world)
    region_context = {"aws:RequestedRegion": call["region"]}
    if found and isinstance(found[0], coverage.Check):
        return [coverage.Check(c.action, c.resource, {**c.context, **region_context})
                for c in found]
    return [coverage.Check(action, resource, {**context, **region_context})
            for action in coverage.actions_of(call) for resource, context in found]


def _would_allow(check: coverage.Check) -> str:
    statement = {"Effect": "Allow", "Action": check.action, "Resource": check.resource}
    conditions = {k: v for k, v in check.context.items() if k != "aws:RequestedRegion"}
    if conditions:
        statement["Condition"] = {"StringEquals": conditions}
    return json.dumps(statement)


def test_every_runner_call_is_granted_to_the_role_that_makes_it(calls, resolved):
    resolved.ssm["/benchstack/foundation/results-bucket"] = RESULTS_BUCKET
    resolved.ssm["/benchstack/foundation/cache-bucket"] = CACHE_BUCKET
    world = World(resolved)
    assert len(calls) > 100  # the recording works: the provider tests alone make hundreds
    problems, seen, evaluated = [], set(), 0
    for call in calls:
        roles = coverage.roles_of(call["frames"])
        if roles == "unknown":
            problems.append(f"{call['frames'][0]}: no RUNS_IN entry says which role runs this "
                            f"(tests/iam/coverage.py)")
            continue
        for role in roles or ():
            statements = resolved.role_statements(role.stack(call), role.prefix)
            for check in checks_of(call, world):
                key = (role.name, check.action, check.resource, json.dumps(check.context,
                                                                          sort_keys=True))
                if key in seen:
                    continue
                seen.add(key)
                evaluated += 1
                decision = evaluate(statements, check.action, check.resource, check.context)
                if not decision.allowed:
                    near = "; ".join(f"{s.where}: {why}" for s, why in decision.near[:2])
                    problems.append(
                        f"{' <- '.join(call['frames'][:3])}: {check.action} on "
                        f"{check.resource} is not allowed to the {role.name} role "
                        f"({role.stack(call)} {role.prefix}); a statement that would allow it: "
                        f"{_would_allow(check)}" + (f" (near: {near})" if near else ""))
    assert not problems, "\n".join(sorted(set(problems)))
    assert evaluated > 20


def test_a_missing_grant_names_the_call_site_and_the_statement(resolved):
    """The check itself: a call the control role may not make fails with both."""
    call = {"service": "sagemaker", "signing_name": "sagemaker", "operation": "DeleteEndpoint",
            "region": "us-east-2", "params": {"EndpointName": "not-benchstack"},
            "frames": ["runners.providers.sagemaker.endpoint.delete:112"]}
    (check,) = checks_of(call, World(resolved))
    statements = resolved.role_statements(names.benchmark(coverage.HOME), "ControlRole")
    decision = evaluate(statements, check.action, check.resource, check.context)
    assert not decision.allowed
    assert "endpoint/bs-*" in decision.near[0][1]
    assert _would_allow(check) == (
        '{"Effect": "Allow", "Action": "sagemaker:DeleteEndpoint", "Resource": '
        '"arn:aws:sagemaker:us-east-2:123456789012:endpoint/not-benchstack", "Condition": '
        '{"StringEquals": {"aws:ResourceTag/benchstack:managed": "true"}}}')
