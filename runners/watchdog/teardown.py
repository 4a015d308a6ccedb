"""Tear down one run now, whatever its expiry: every resource tagged with its run id in
the given regions, found and deleted by the sweep's own inventory (endpoints before their
configs and models, fleets before instances).

A run whose execution is still RUNNING would go on placing and measuring, so that
execution is stopped first (StopExecution; the workflow's own teardown state then never
runs, which is why this deletes what it finds). A SageMaker endpoint still Creating refuses
DeleteEndpoint: it is reported "deferred" and its config and model are kept for it, as the
sweep does; call again once it is InService or Failed. IAM: the sweep's, plus
states:StopExecution.
"""

from __future__ import annotations

from typing import Iterable

from botocore.exceptions import BotoCoreError, ClientError

from runners import tags
from runners.watchdog.clients import Clients
from runners.watchdog.inventory import DELETING, ENDPOINTS, KINDS, TRANSITIONAL, Resource
from runners.watchdog.runs import execution_region

STOP_CAUSE = "torn down on request (benchstack teardown)"


def _line(resource: Resource, action: str, reason: str) -> dict:
    return {"region": resource.region, "kind": resource.kind, "id": resource.id,
            "state": resource.state, "action": action, "reason": reason}


def _stop_execution(clients: Clients, arn: str) -> dict:
    region = execution_region(arn)
    where = Resource(region=region or "-", kind="stepfunctions-execution", id=arn, state="-")
    if region is None:
        return _line(where, "error", "malformed execution ARN tag")
    sfn = clients.get("stepfunctions", region)
    try:
        status = sfn.describe_execution(executionArn=arn)["status"]
        where = Resource(region=region, kind=where.kind, id=arn, state=status)
        if status != "RUNNING":
            return _line(where, "kept", f"execution already {status}")
        sfn.stop_execution(executionArn=arn, cause=STOP_CAUSE)
    except (ClientError, BotoCoreError) as exc:
        return _line(where, "refused", f"{type(exc).__name__}: {exc}")
    return _line(where, "stopped", "the run was still running")


def _delete(kind, client, resource: Resource, surviving: bool, dry_run: bool) -> dict:
    phase = kind.phase(resource.state)
    if phase == DELETING:
        return _line(resource, "kept", f"already {resource.state}")
    if phase == TRANSITIONAL:
        return _line(resource, "deferred", f"{resource.state} refuses deletion; call again "
                                           "once it settles")
    if kind.follows_endpoints and surviving:
        return _line(resource, "deferred", "an endpoint of the run still exists")
    if dry_run:
        return _line(resource, "would-delete", "tagged with the run id")
    try:
        kind.delete(client, resource)
    except Exception as exc:  # noqa: BLE001 - one refusal must not stop the others
        return _line(resource, "refused", f"{type(exc).__name__}: {exc}")
    return _line(resource, "deleted", "tagged with the run id")


def teardown_run(run_id: str, regions: Iterable[str], *, clients: Clients | None = None,
                 dry_run: bool = False) -> list[dict]:
    """One line per resource of the run (and per execution stopped), in deletion order."""
    clients = clients or Clients()
    lines: list[dict] = []
    for region in dict.fromkeys(regions):
        found = [(kind, resource) for kind in KINDS
                 for resource in kind.find(clients.get(kind.service, region), region)
                 if resource.tags.get(tags.RUN_ID) == run_id]
        executions = {r.tags[tags.EXECUTION_ARN] for _, r in found
                      if r.tags.get(tags.EXECUTION_ARN)}
        if not dry_run:
            lines += [_stop_execution(clients, arn) for arn in sorted(executions)]
        surviving = False
        for kind, resource in found:
            line = _delete(kind, clients.get(kind.service, region), resource, surviving,
                           dry_run)
            surviving |= kind is ENDPOINTS and line["action"] not in ("deleted", "would-delete")
            lines.append(line)
    return lines
