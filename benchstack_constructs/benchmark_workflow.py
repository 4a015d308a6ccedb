"""The benchmark workflow: a Step Functions state machine built from the runners' phase
list (runners.workflow.phases.PHASES), the same list the local driver walks.

    Init -> SelectRegion -> [HandOff] -> provision -> await_ready (Wait + Choice loop)
         -> each measurement phase -> teardown (retried while "retry-later") -> report

Before load: LoadScaleOut asks the runners which rate levels exceed one runner
(runners/measure/load/scale_out.py); if any, LoadShards, a Map over those shards, invokes
one runner per shard (all of a level's shards start at one wall-clock instant they are
given) and load merges their records into each level. A Map that fails leaves load to
send those levels itself, and say so.

Every Lambda task retries Lambda's own transient errors with jittered backoff and catches
everything else into teardown, which runs on every path; after teardown the run reports,
moves to the next region (no capacity), or fails with the recorded cause. The state holds
the execution input plus small phase results (S3 keys); each loop is bounded by limits
that travel in the input (runners/workflow/execution.py).
"""

from __future__ import annotations

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from benchstack_constructs import cfn_lint
from benchstack_constructs.alerts import AlertsTopic
from benchstack_constructs.nag_wildcards import acknowledge_wildcards
from runners.workflow import execution as workflow
from runners.workflow.phases import PHASES

# Errors of the Lambda service itself (the function did not run, or was throttled):
# safe to retry. A phase's own error is not retried: it may have written results.
LAMBDA_TRANSIENT_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
]
RETRY = dict(errors=LAMBDA_TRANSIENT_ERRORS, interval=Duration.seconds(2), max_attempts=6,
             backoff_rate=2.0, max_delay=Duration.seconds(60),
             jitter_strategy=sfn.JitterType.FULL)
FINAL_STATUSES = ["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"]


def _loop(**changes: str | int) -> dict[str, str | int]:
    """Parameters rebuilding $.loop: `changes` are intrinsics (str) or values (int); the
    other counters are kept."""
    fields = ("region_index", "region_count", "polls", "teardowns")
    value = {f: changes.get(f, f"$.loop.{f}") for f in fields}
    return {(f if isinstance(v, int) else f"{f}.$"): v for f, v in value.items()}


class BenchmarkWorkflow(Construct):
    def __init__(self, scope: Construct, construct_id: str, *,
                 functions: list[lambda_.IFunction], alerts: AlertsTopic,
                 phases: tuple[str, ...] = PHASES,
                 log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH):
        super().__init__(scope, construct_id)
        for required in workflow.CONTROL_PHASES:
            if required not in phases:
                raise ValueError(f"the phase list lacks {required!r}: {phases}")
        self.phases = phases
        self.alerts = alerts
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention,
                                       removal_policy=RemovalPolicy.DESTROY)
        self.state_machine = sfn.StateMachine(
            self, "StateMachine",
            state_machine_name=workflow.STATE_MACHINE_NAME,
            definition_body=sfn.DefinitionBody.from_chainable(self._definition()),
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL,
                                include_execution_data=True),
            # No state machine timeout: it would stop the run without a teardown. Every
            # loop is bounded instead, and the watchdog backs that up.
        )
        # The task names its function from the input (it differs per backend and phase),
        # so CDK cannot grant it: allow exactly these functions, unqualified.
        self.state_machine.add_to_role_policy(iam.PolicyStatement(
            actions=["lambda:InvokeFunction"], resources=[f.function_arn for f in functions]))
        # The alert tasks publish to the encrypted topic (sns:Publish is granted by them).
        alerts.key.grant(self.state_machine, "kms:Decrypt", "kms:GenerateDataKey*")
        cfn_lint.ignore(self.state_machine.node.default_child, cfn_lint.REDUNDANT_ROLE_DEPENDENCY)
        self._notify_on_finish()
        acknowledge_wildcards(self.state_machine.role, (
            "X-Ray tracing and CloudWatch Logs delivery need actions that take no resource "
            "scoping (xray:PutTraceSegments, logs:CreateLogDelivery ...); kms:GenerateDataKey* "
            "is on the alerts key only; Lambda and SNS access is to named ARNs."))

    # ------------------------------------------------------------------ states

    def _task(self, phase: str, *, result_selector: dict, result_path: str,
              state_name: str | None = None, payload: dict | None = None) -> sfn.CustomState:
        """A Lambda task calling the function the input names for `phase`."""
        body = payload or {
            "experiment.$": "$.experiment",
            "run.$": "$.run",
            "region.$": "$.target.region",
            "placement.$": "$.site.placement",
            "results.$": "$.results",
            "error.$": "$.error",
            # tagged on what the run creates: the watchdog reads the execution's status
            "execution_arn.$": "$$.Execution.Id",
        }
        timeout_s = workflow.phase_timeout_s(phase)
        state = sfn.CustomState(self, state_name or phase, state_json={
            "Type": "Task",
            "Resource": f"arn:{Aws.PARTITION}:states:::lambda:invoke",
            "Parameters": {
                "FunctionName.$": f"$.functions.{phase}",
                "Payload": {"phase": phase, "deadline_s": timeout_s, **body},
            },
            "TimeoutSeconds": timeout_s,
            "ResultSelector": result_selector,
            "ResultPath": result_path,
        })
        state.add_retry(**RETRY)
        return state

    def _alert(self, state_id: str, subject: str, message: str, then: sfn.IChainable):
        """Publish to the alerts topic; an alert that fails to send never stops the run."""
        alert = tasks.SnsPublish(
            self, state_id, topic=self.alerts.topic, subject=subject,
            message=sfn.TaskInput.from_text(message), result_path=sfn.JsonPath.DISCARD)
        alert.add_retry(interval=Duration.seconds(2), max_attempts=3,
                        jitter_strategy=sfn.JitterType.FULL)
        alert.add_catch(then, result_path="$.alert_error")
        return alert.next(then)

    def _definition(self) -> sfn.IChainable:
        s = self
        fmt, at = sfn.JsonPath.format, sfn.JsonPath.string_at
        run_id, region, name = at("$.run.run_id"), at("$.target.region"), at("$.experiment.name")

        init = sfn.Pass(s, "Init", parameters={
            "experiment.$": "$.experiment", "run.$": "$.run", "regions.$": "$.regions",
            "functions.$": "$.functions", "limits.$": "$.limits",
            "loop": {"region_index.$": "$.region_index",
                     "region_count.$": "States.ArrayLength($.regions)",
                     "polls": 0, "teardowns": 0},
            "site": {"status": "none", "placement": {}},
            "results": {},
            "error": {},
            # What follows teardown; only a run that measured everything reports.
            "then": "fail",
        })
        select_region = sfn.Pass(s, "SelectRegion", result_path="$.target", parameters={
            "region.$": "States.ArrayGetItem($.regions, $.loop.region_index)"})
        hand_off = self._task(
            workflow.HANDOFF, state_name="HandOff",
            payload={"experiment.$": "$.experiment", "run.$": "$.run",
                     "regions.$": "$.regions", "region_index.$": "$.loop.region_index"},
            result_selector={"execution_arn.$": "$.Payload.execution_arn",
                             "results.$": "$.Payload.results"},
            result_path="$.handoff")
        handed_off = sfn.Succeed(s, "HandedOff", comment="the run continues in another region")

        provision = self._task("provision", result_path="$.site", result_selector={
            "status.$": "$.Payload.status", "placement.$": "$.Payload.placement"})
        await_ready = self._task("await_ready", result_path="$.site", result_selector={
            "status.$": "$.Payload.status", "placement.$": "$.Payload.placement"})
        teardown = self._task("teardown", result_path="$.teardown",
                              result_selector={"state.$": "$.Payload.state"})
        report = self._task("report", result_path="$.results.report",
                            result_selector={"value.$": "$.Payload"})
        measured_phases = workflow.measurement_phases(self.phases)
        measure = [self._task(p, result_path=f"$.results.{p}",
                              result_selector={"value.$": "$.Payload"})
                   for p in measured_phases]
        # Where the chain enters each phase: load behind its scale-out steps.
        entries = [self._scale_out(task, teardown) if p == "load" else task
                   for p, task in zip(measured_phases, measure)]

        # ---- failure paths: everything funnels into teardown, then fails with the cause
        failed = sfn.Fail(s, "Failed", error_path="$.error.Error", cause_path="$.error.Cause")
        for task in [provision, await_ready, *measure]:
            task.add_catch(teardown, result_path="$.error")
        not_ready = sfn.Pass(s, "PlacementFailed", result_path="$.error", parameters={
            "Error": "PlacementFailed",
            "Cause": sfn.JsonPath.json_to_string(sfn.JsonPath.object_at("$.site.placement"))}
        ).next(teardown)
        timed_out = sfn.Pass(s, "ReadyTimedOut", result_path="$.error", parameters={
            "Error": "ReadyTimedOut",
            "Cause": fmt("not ready after {} polls in {}", at("$.loop.polls"), region)}
        ).next(teardown)
        no_capacity_here = sfn.Pass(s, "NoCapacityHere", result=sfn.Result.from_string(
            "next-region"), result_path="$.then").next(teardown)

        # ---- the await loop: one look per task, a Wait between looks, bounded
        # EC2: the control function looks at the instance each round (the in-VPC poller
        # cannot reach the EC2 API); a dead instance fails the wait now.
        check_instance = self._task(workflow.INSTANCE_CHECK, state_name="CheckInstance",
                                    result_path="$.site", result_selector={
                                        "status.$": "$.Payload.status",
                                        "placement.$": "$.Payload.placement"})
        check_instance.add_catch(teardown, result_path="$.error")
        check_instance.next(sfn.Choice(s, "InstanceAlive")
                            .when(sfn.Condition.string_equals("$.site.status", "failed"),
                                  not_ready)
                            .otherwise(await_ready))
        count_poll = sfn.Pass(s, "CountPoll", result_path="$.loop", parameters=_loop(
            polls="States.MathAdd($.loop.polls, 1)")).next(
            sfn.Choice(s, "LookAtInstance")
            .when(sfn.Condition.boolean_equals("$.limits.check_instance", True),
                  check_instance)
            .otherwise(await_ready))
        wait_poll = sfn.Wait(s, "WaitBeforePoll", time=sfn.WaitTime.seconds_path(
            "$.limits.poll_seconds")).next(count_poll)
        slow_alert = self._alert(
            "AlertSlowReady", "benchstack: placement slow to become ready",
            fmt("Run {} ({}) is still not ready in {} after {} polls of {} s.", run_id, name,
                region, at("$.loop.polls"), at("$.limits.poll_seconds")),
            wait_poll)
        polls_left = (sfn.Choice(s, "PollsLeft")
                      .when(sfn.Condition.number_greater_than_equals_json_path(
                          "$.loop.polls", "$.limits.max_polls"), timed_out)
                      .when(sfn.Condition.number_equals_json_path(
                          "$.loop.polls", "$.limits.alert_after_polls"), slow_alert)
                      .otherwise(wait_poll))
        measured = sfn.Pass(s, "MeasuredAll", result=sfn.Result.from_string("report"),
                            result_path="$.then").next(teardown)
        for task, following in zip(measure, entries[1:]):
            task.next(following)
        measure[-1].next(measured)
        ready = (sfn.Choice(s, "Ready")
                 .when(sfn.Condition.string_equals("$.site.status", "ready"), entries[0])
                 .when(sfn.Condition.string_equals("$.site.status", "capacity"),
                       no_capacity_here)
                 .when(sfn.Condition.string_equals("$.site.status", "failed"), not_ready)
                 .otherwise(polls_left))
        await_ready.next(ready)
        provision.next(sfn.Choice(s, "Placed")
                       .when(sfn.Condition.string_equals("$.site.status", "capacity"),
                             no_capacity_here)
                       .otherwise(await_ready))

        # ---- teardown: retried while it says "retry-later", bounded, then alert and fail
        gave_up = sfn.Fail(s, "TeardownIncomplete", error="TeardownIncomplete",
                           cause="teardown did not confirm deletion; the watchdog deletes "
                                 "what still carries benchstack tags")
        alert_teardown = self._alert(
            "AlertTeardown", "benchstack: teardown incomplete",
            fmt("Run {} ({}): teardown in {} did not confirm deletion after {} attempts. "
                "Billable resources may remain; the watchdog will delete what carries "
                "benchstack tags.", run_id, name, region, at("$.loop.teardowns")),
            gave_up)
        count_teardown = sfn.Pass(s, "CountTeardown", result_path="$.loop", parameters=_loop(
            teardowns="States.MathAdd($.loop.teardowns, 1)")).next(teardown)
        wait_teardown = sfn.Wait(s, "WaitBeforeTeardown", time=sfn.WaitTime.seconds_path(
            "$.limits.teardown_retry_seconds")).next(count_teardown)
        teardowns_left = (sfn.Choice(s, "TeardownAttemptsLeft")
                          .when(sfn.Condition.number_less_than_json_path(
                              "$.loop.teardowns", "$.limits.teardown_attempts"), wait_teardown)
                          .otherwise(alert_teardown))
        teardown.add_catch(teardowns_left, result_path="$.teardown_error")

        # ---- after teardown: report, next region, or fail with the cause
        report_failed = sfn.Fail(s, "ReportFailed", error_path="$.error.Error",
                                 cause_path="$.error.Cause")
        report.add_catch(report_failed, result_path="$.error")
        report.next(sfn.Succeed(s, "Done"))
        no_capacity = sfn.Fail(s, "NoCapacity", error="NoCapacity",
                               cause="no capacity in any of the experiment's regions")
        next_region = sfn.Pass(s, "NextRegion", result_path="$.loop", parameters=_loop(
            region_index="States.MathAdd($.loop.region_index, 1)", polls=0, teardowns=0))
        next_region.next(sfn.Choice(s, "RegionsLeft")
                         .when(sfn.Condition.number_less_than_json_path(
                             "$.loop.region_index", "$.loop.region_count"), select_region)
                         .otherwise(no_capacity))
        teardown.next(
            sfn.Choice(s, "Deleted")
            .when(sfn.Condition.string_equals("$.teardown.state", "deleted"),
                  sfn.Choice(s, "AfterTeardown")
                  .when(sfn.Condition.string_equals("$.then", "report"), report)
                  .when(sfn.Condition.string_equals("$.then", "next-region"), next_region)
                  .otherwise(failed))
            .otherwise(teardowns_left))

        # ---- start: pick the region; an in-region client in another region hands off
        elsewhere = sfn.Condition.and_(
            sfn.Condition.boolean_equals("$.limits.same_region_client", True),
            sfn.Condition.not_(sfn.Condition.string_equals_json_path(
                "$.target.region", "$.run.home_region")))
        # Nothing is placed in the target region yet, and the last one is torn down.
        hand_off.add_catch(failed, result_path="$.error")
        hand_off.next(handed_off)
        select_region.next(sfn.Choice(s, "ClientRegion")
                           .when(elsewhere, hand_off)
                           .otherwise(provision))
        return init.next(select_region)

    def _scale_out(self, load: sfn.IChainable, teardown: sfn.IChainable) -> sfn.IChainable:
        """LoadScaleOut -> (shards? LoadShards Map) -> load. The Map's items carry what a
        task's payload needs; each item is one runner invocation (MaxConcurrency 0: all at
        once, so a level's shards can meet at their start instant)."""
        plan = self._task(workflow.SCALE_OUT_PLAN, state_name="LoadScaleOut",
                          result_path="$.scale_out",
                          result_selector={"enabled.$": "$.Payload.enabled",
                                           "items.$": "$.Payload.items"})
        plan.add_catch(teardown, result_path="$.error")
        shard = self._task(workflow.LOAD_SHARD, state_name="LoadShard",
                           result_path=sfn.JsonPath.DISCARD,
                           result_selector={"key.$": "$.Payload.key"},
                           payload={"experiment.$": "$.experiment", "run.$": "$.run",
                                    "region.$": "$.region", "placement.$": "$.placement",
                                    "shard.$": "$.shard", "execution_arn.$": "$$.Execution.Id"})
        shards = sfn.Map(self, "LoadShards", items_path="$.scale_out.items", max_concurrency=0,
                         result_path=sfn.JsonPath.DISCARD, item_selector={
                             "experiment.$": "$.experiment", "run.$": "$.run",
                             "region.$": "$.target.region", "placement.$": "$.site.placement",
                             "functions.$": "$.functions", "shard.$": "$$.Map.Item.Value"})
        shards.item_processor(shard)
        # A failed shard costs its level the scale-out, not the run: load sends it alone.
        shards.add_catch(load, result_path="$.scale_out_error")
        shards.next(load)
        return plan.next(sfn.Choice(self, "ScaleOut")
                         .when(sfn.Condition.boolean_equals("$.scale_out.enabled", True), shards)
                         .otherwise(load))

    # ------------------------------------------------------------------ notifications

    def _notify_on_finish(self) -> None:
        """Every run's end (success, failure, timeout, abort) goes to the alerts topic."""
        detail = events.EventField.from_path
        rule = events.Rule(self, "Finished", description="benchstack run finished", event_pattern=
                           events.EventPattern(
                               source=["aws.states"],
                               detail_type=["Step Functions Execution Status Change"],
                               detail={"stateMachineArn": [self.state_machine.state_machine_arn],
                                       "status": FINAL_STATUSES}))
        rule.add_target(self.alerts.rule_target(events.RuleTargetInput
                                         .from_text(f"benchstack run {detail('$.detail.name')}: "
                                                    f"{detail('$.detail.status')} "
                                                    f"({detail('$.detail.executionArn')})")))
