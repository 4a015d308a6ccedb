"""The rendered benchmark state machine, and moto wiring to execute it in-process.

moto's Step Functions interpreter (`execute_state_machine`) runs the real definition and
invokes tasks through moto's Lambda API; moto would run the function code in Docker,
which this machine has no daemon for. `run_lambdas_in_process` replaces only that last
step: the function's own handler (its `Handler` setting, here
runners.workflow.lambda_handler.handler) is imported and called in this process with the event
moto passes, and an exception becomes Lambda's error payload ({errorType, errorMessage}).
"""

from __future__ import annotations

import importlib
import json
import time
from contextlib import contextmanager

from tests.infra.templates import only

ACCOUNT = "123456789012"


def definition_json(template: dict, *, topic_arn: str, partition: str = "aws") -> str:
    """The state machine's definition with CloudFormation references replaced: the
    partition by `partition`, the alerts topic (the only other reference) by `topic_arn`."""
    machine = only(template, "AWS::StepFunctions::StateMachine")["Properties"]
    body = machine["DefinitionString"]
    if isinstance(body, str):
        return body
    delimiter, parts = body["Fn::Join"]
    rendered = []
    for part in parts:
        if isinstance(part, str):
            rendered.append(part)
        elif part == {"Ref": "AWS::Partition"}:
            rendered.append(partition)
        elif "AlertsTopic" in json.dumps(part):
            rendered.append(topic_arn)
        else:
            raise AssertionError(f"unexpected reference in the definition: {part}")
    return delimiter.join(rendered)


@contextmanager
def run_lambdas_in_process(invocations: list):
    """Patch moto's Lambda so an invoke runs the handler here; `invocations` records
    (function name, event) for each call."""
    from moto.awslambda.models import LambdaFunction

    original = LambdaFunction._invoke_lambda

    def invoke(self, event=None):
        invocations.append((self.function_name, event))
        module_name, _, attr = self.handler.rpartition(".")
        handler = getattr(importlib.import_module(module_name), attr)
        try:
            return json.dumps(handler(event, None)), False, ""
        except Exception as exc:  # what Lambda reports for an unhandled exception
            return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}), \
                True, ""

    LambdaFunction._invoke_lambda = invoke
    try:
        yield
    finally:
        LambdaFunction._invoke_lambda = original


def wait_for_end(sfn, execution_arn: str, timeout_s: float = 60) -> dict:
    """Poll until the execution leaves RUNNING (bounded in time)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.05)
    raise AssertionError(f"execution still running after {timeout_s} s")
