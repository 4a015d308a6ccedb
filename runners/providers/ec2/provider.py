"""Backend `ec2`: vLLM (GPU) or the Neuron engine on an instance launched from the
experiment stack's launch templates.

provision   one CreateFleet (type instant) per region over every (instance type x AZ)
            the catalog and DescribeInstanceTypeOfferings allow; a region without
            capacity raises ProvisionError("capacity") so the caller tries the next one.
poll_ready  one look: the instance's state, then the engine's /health and /v1/models (in
            the VPC, where the EC2 API is out of reach, the engine's answer alone).
check_instance  the workflow's look at the instance from outside the VPC, each poll round:
            a terminated or stopped instance ends the wait with its state reason.
teardown    DeleteFleets with TerminateInstances, and TerminateInstances itself: the
            instance is what bills, so both are asked and either suffices.

Where the engine is reached (`endpoint`): "private" (the default: the runner is in the
VPC), "public" (the instance's public IP, when the security group admits the runner), or
a URL such as "http://127.0.0.1:8000" for an SSM port forward from a laptop. The
environment variable BENCHSTACK_EC2_ENDPOINT sets the same thing.
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from typing import Any, Callable

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from runners import hardware, tags
from runners.providers.base import Provider, ProvisionError
from runners.providers.ec2 import api as ec2_api
from runners.providers.ec2 import fleet as ec2_fleet

ENDPOINT_ENV = "BENCHSTACK_EC2_ENDPOINT"
HTTP_TIMEOUT_S = 5.0
_GONE = ("shutting-down", "terminated", "stopping", "stopped")
# Instance states that still bill (or will): what a teardown by tag terminates.
_LIVE = ("pending", "running", "stopping", "stopped")
# Our own backoff handles throttling; botocore's retries on top would multiply the waits.
_CLIENT_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 1})


def _default_clients(service: str, region: str):
    import boto3

    return boto3.client(service, region_name=region, config=_CLIENT_CONFIG)


def _http_get(url: str, timeout_s: float) -> tuple[int, bytes]:
    """(status, body); a refused or timed-out connection raises OSError."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 (http)
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class Ec2Provider(Provider):
    def __init__(self, experiment, *, clients: Callable[[str, str], Any] | None = None,
                 endpoint: str | None = None, sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None,
                 now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 **kwargs: Any):
        super().__init__(experiment, **kwargs)
        if experiment.ec2 is None:
            raise ValueError(f"{experiment.name}: backend is {experiment.backend!r}, not ec2")
        self._clients = clients or _default_clients
        self.endpoint = endpoint or os.environ.get(ENDPOINT_ENV) or "private"
        if self.endpoint not in ("private", "public") and "://" not in self.endpoint:
            raise ValueError(f"endpoint {self.endpoint!r}: use private, public or a URL "
                             "such as http://127.0.0.1:8000")
        self._sleep, self._rng, self._now = sleep, rng or random.Random(), now

    def _call(self, client, operation: str, *, also_retry: frozenset[str] = frozenset(),
              **params: Any) -> dict[str, Any]:
        return ec2_api.call(getattr(client, operation), sleep=self._sleep, rng=self._rng,
                            also_retry=also_retry, **params)

    # ------------------------------------------------------------------ provision

    def provision(self, run_id: str, region: str) -> dict[str, Any]:
        exp, cfg = self.experiment, self.experiment.ec2
        detail: dict[str, Any] = {"region": region, "refused": [], "skipped": []}
        in_region = [t for t in cfg.instance_types
                     if region not in hardware.lookup(t).not_offered_in]
        detail["skipped"] += [{"instance_type": t, "az": None,
                               "reason": "hardware catalog: not offered in this region"}
                              for t in cfg.instance_types if t not in in_region]
        if not in_region:
            raise ProvisionError(ProvisionError.CAPACITY,
                                 f"none of {', '.join(cfg.instance_types)} is offered in "
                                 f"{region} (hardware catalog)", detail)
        ec2 = self._clients("ec2", region)
        try:
            chosen, skipped = self._candidates(ec2, self._clients("ssm", region), in_region)
        except ClientError as exc:
            hint = (f"; deploy Benchstack-Exp-{exp.name}-{region} first"
                    if ec2_api.error_code(exc) == "ParameterNotFound" else "")
            raise ProvisionError(ProvisionError.FATAL,
                                 f"reading the {exp.name} stack's launch templates and subnets "
                                 f"in {region}: {exc}{hint}", detail) from None
        detail["skipped"] += skipped
        if not chosen:
            raise ProvisionError(ProvisionError.CAPACITY,
                                 f"none of {', '.join(in_region)} is offered in any AZ of "
                                 f"{region}", detail)
        billable = tags.billable_tags(exp.name, run_id, self._now(), exp.ttl_hours,
                                      self.execution_arn)
        request = ec2_fleet.fleet_request(chosen, market=cfg.market, tags=billable,
                                          client_token=f"{run_id}-{region}"[:64])
        detail["tried"] = ec2_fleet.as_dicts(chosen)
        try:
            response = self._call(ec2, "create_fleet", **request)
        except ClientError as exc:
            code = ec2_api.error_code(exc)
            raise ProvisionError(ec2_fleet.error_kind(code),
                                 f"CreateFleet in {region}: {code}: {exc}", detail) from None
        placement = {
            "backend": "ec2", "experiment": exp.name, "run_id": run_id, "region": region,
            "market": cfg.market, "fleet_id": response.get("FleetId"), "instance_id": None,
            "instance_type": None, "az": None, "port": cfg.engine_port,
            "endpoint": self.endpoint, "base_url": None, "tags": billable, **detail,
        }
        try:
            placed, placement["refused"] = ec2_fleet.read_response(response, chosen)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            error = ProvisionError(ProvisionError.FATAL,
                                   f"unreadable CreateFleet answer in {region}: {exc!r}",
                                   placement)
            raise self._failed_after_launch(placement, error) from None
        except BaseException:
            self.teardown(placement)  # interrupted after launching: stop the meter first
            raise
        if placed is None:
            error = ec2_fleet.refusal_error(region, placement["refused"], cfg.market, placement)
            raise self._failed_after_launch(placement, error)
        placement.update(placed)
        placement["launch_template_id"] = next((c.launch_template_id for c in chosen
                                                if c.instance_type == placed["instance_type"]),
                                               None)
        self._record_addresses(ec2, placement)
        return ec2_fleet.compact(placement)

    def _record_addresses(self, ec2, placement: dict[str, Any]) -> None:
        """The private address is assigned at launch: record it now, so the in-VPC runner
        (no route to the EC2 API) can probe the engine without DescribeInstances. The id
        CreateFleet just returned may not be visible yet (eventual consistency): retried
        with backoff; if it still is not, the control function's instance check of each
        poll round (check_instance) records it."""
        try:
            instance = self._call(ec2, "describe_instances",
                                  also_retry=ec2_api.NOT_YET_VISIBLE_CODES,
                                  InstanceIds=[placement["instance_id"]]
                                  )["Reservations"][0]["Instances"][0]
        except (ClientError, BotoCoreError, IndexError, KeyError):
            return
        placement["private_ip"] = instance.get("PrivateIpAddress")
        placement["public_ip"] = instance.get("PublicIpAddress")

    def _failed_after_launch(self, placement: dict[str, Any],
                             error: ProvisionError) -> ProvisionError:
        """Delete the fleet now; if that did not finish, hand the placement on (as
        detail["placement"]) so the teardown phase retries it."""
        outcome = self.teardown(placement)
        if outcome["state"] != "deleted":
            error.detail = {**error.detail, "placement": ec2_fleet.compact(placement),
                            "teardown": outcome}
        return error

    def _candidates(self, ec2, ssm, instance_types: list[str]):
        template_ids = json.loads(self._call(
            ssm, "get_parameter",
            Name=ec2_fleet.LAUNCH_TEMPLATES_PARAMETER.format(experiment=self.experiment.name),
        )["Parameter"]["Value"])
        subnet_ids = self._call(ssm, "get_parameter", Name=ec2_fleet.SUBNETS_PARAMETER
                                )["Parameter"]["Value"].split(",")
        subnets = sorted(((s["SubnetId"], s["AvailabilityZone"]) for s in self._call(
            ec2, "describe_subnets", SubnetIds=subnet_ids)["Subnets"]), key=lambda s: (s[1], s[0]))
        return ec2_fleet.candidates(instance_types, subnets, template_ids,
                                    self._offered(ec2, instance_types))

    def _offered(self, ec2, instance_types: list[str]) -> set[tuple[str, str]]:
        """{(type, AZ)} where EC2 offers the type, every page of the answer."""
        offered, token = set(), None
        while True:
            params = {"LocationType": "availability-zone",
                      "Filters": [{"Name": "instance-type", "Values": list(instance_types)}]}
            if token:
                params["NextToken"] = token
            page = self._call(ec2, "describe_instance_type_offerings", **params)
            offered |= {(o["InstanceType"], o["Location"])
                        for o in page.get("InstanceTypeOfferings", [])}
            token = page.get("NextToken")
            if not token:
                return offered

    # ------------------------------------------------------------------ readiness

    def poll_ready(self, placement: dict[str, Any]) -> dict[str, Any]:
        placement = dict(placement)
        if self.endpoint == "private" and placement.get("private_ip"):
            # In the VPC there is no EC2 API; the engine's answer is the only look.
            placement["base_url"] = self._base_url(placement)
            return self._probe_engine(placement)
        if self.endpoint == "private" and os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
            # The in-VPC function has no route to the EC2 API (a call would hang past the
            # task's timeout): the control function's instance check records the address.
            return {"state": "waiting", "placement": placement,
                    "message": "private address not recorded yet (the instance check does)"}
        look = self._look_at_instance(placement)
        if look is not None:
            return look
        placement["base_url"] = self._base_url(placement)
        if placement["base_url"] is None:
            return {"state": "failed", "placement": placement,
                    "message": f"instance has no {self.endpoint} IP address; set endpoint to "
                               "a port-forward URL or run inside the VPC"}
        return self._probe_engine(placement)

    def _look_at_instance(self, placement: dict[str, Any]) -> dict[str, Any] | None:
        """DescribeInstances: records the addresses in `placement`; None while the instance
        runs, else the failed (gone) or waiting (not yet running, unreadable) answer."""
        ec2 = self._clients("ec2", placement["region"])
        try:
            reservations = self._call(ec2, "describe_instances",
                                      InstanceIds=[placement["instance_id"]])["Reservations"]
        except (ClientError, BotoCoreError) as exc:
            return {"state": "waiting", "placement": placement, "message": str(exc)}
        instance = reservations[0]["Instances"][0]
        state = instance["State"]["Name"]
        placement["private_ip"] = instance.get("PrivateIpAddress")
        placement["public_ip"] = instance.get("PublicIpAddress")
        if state in _GONE:
            reason = instance.get("StateReason", {}).get("Message", "no reason given")
            placement["instance_state"] = {"state": state, "reason": reason}
            return {"state": "failed", "placement": placement,
                    "message": f"instance {placement['instance_id']} is {state}: {reason}"}
        if state != "running":
            return {"state": "waiting", "placement": placement, "message": f"instance {state}"}
        return None

    def check_instance(self, placement: dict[str, Any]) -> dict[str, Any]:
        """The workflow's look at the instance from outside the VPC, each poll round: the
        in-VPC poller has no route to the EC2 API, so without this a terminated or stopped
        instance (spot reclaim, its own power-off at expiry, a boot failure) would read as
        "waiting" until the ready budget ends. {"state": "failed" | "alive", ...}."""
        placement = dict(placement)
        if not placement.get("instance_id"):
            return {"state": "alive", "placement": placement, "message": "nothing placed"}
        look = self._look_at_instance(placement)
        if look is not None and look["state"] == "failed":
            return look
        return {"state": "alive", "placement": placement,
                "message": look["message"] if look else "instance running"}

    def _base_url(self, placement: dict[str, Any]) -> str | None:
        if "://" in self.endpoint:
            return self.endpoint.rstrip("/")
        address = placement.get(f"{self.endpoint}_ip")
        return f"http://{address}:{placement['port']}" if address else None

    def _probe_engine(self, placement: dict[str, Any]) -> dict[str, Any]:
        """/health answers once the engine runs; /v1/models once the model is served."""
        base, served = placement["base_url"], self.experiment.model.served_name
        try:
            status, _ = _http_get(f"{base}/health", HTTP_TIMEOUT_S)
            if status != 200:
                return {"state": "waiting", "placement": placement,
                        "message": f"/health answered HTTP {status}"}
            status, body = _http_get(f"{base}/v1/models", HTTP_TIMEOUT_S)
        except OSError as exc:
            return {"state": "waiting", "placement": placement,
                    "message": f"engine not answering at {base}: {exc}"}
        if status != 200:
            return {"state": "waiting", "placement": placement,
                    "message": f"/v1/models answered HTTP {status}"}
        try:
            names = [m["id"] for m in json.loads(body)["data"]]
        except (ValueError, KeyError, TypeError):
            return {"state": "failed", "placement": placement,
                    "message": f"/v1/models is not an OpenAI model list: {body[:200]!r}"}
        if served not in names:
            return {"state": "failed", "placement": placement,
                    "message": f"engine serves {names}, not {served!r}"}
        return {"state": "ready", "placement": placement, "message": f"serving {served}"}

    def client(self, placement: dict[str, Any]):
        # The OpenAI-compatible HTTP client is shared with the local and openai backends.
        from runners.backends.openai_http import OpenAIHTTPClient

        engine = self.experiment.engine
        return OpenAIHTTPClient(placement["base_url"], self.experiment.model.served_name,
                                supports_tools=bool(engine and engine.tool_call_parser))

    # ------------------------------------------------------------------ teardown

    def teardown(self, placement: dict[str, Any]) -> dict[str, Any]:
        fleet_id, instance_id = placement.get("fleet_id"), placement.get("instance_id")
        if not fleet_id and not instance_id:
            if placement.get("run_id") and placement.get("region"):
                return self._teardown_by_tag(placement["region"], placement["run_id"])
            return {"state": "deleted", "message": "nothing was launched"}
        ec2 = self._clients("ec2", placement["region"])
        problems = []
        if fleet_id:
            problems += self._delete_fleet(ec2, fleet_id)
        if instance_id:
            # with the fleet deleted (TerminateInstances=True), EC2 ends its instance anyway
            problems += self._terminate(ec2, instance_id, fleet_done=bool(fleet_id)
                                        and not problems)
        if problems:
            return {"state": "retry-later", "message": "; ".join(problems),
                    "fleet_id": fleet_id, "instance_id": instance_id}
        return {"state": "deleted", "fleet_id": fleet_id, "instance_id": instance_id,
                "message": f"fleet {fleet_id} deleted, instance {instance_id} terminating"}

    def collect_telemetry(self, placement: dict[str, Any], start_s: float,
                          end_s: float) -> dict[str, Any]:
        from runners.providers.ec2 import telemetry_files

        region = placement.get("region")
        if not region or not placement.get("run_id"):
            return {"files": {}, "missing": {"engine.log": "nothing was launched"},
                    "location": None}
        return telemetry_files.fetch(self._clients("s3", region), self._clients("ssm", region),
                                     self.experiment.name, placement["run_id"])

    def _teardown_by_tag(self, region: str, run_id: str) -> dict[str, Any]:
        """Provision died before answering: terminate whatever carries this run's tags.
        An instant fleet bills nothing once its instances are gone."""
        ec2 = self._clients("ec2", region)
        try:
            found = self._call(ec2, "describe_instances", Filters=[
                {"Name": f"tag:{tags.RUN_ID}", "Values": [run_id]},
                {"Name": f"tag:{tags.EXPERIMENT}", "Values": [self.experiment.name]},
                {"Name": "instance-state-name", "Values": list(_LIVE)}])
        except (ClientError, BotoCoreError) as exc:
            return {"state": "retry-later", "message": f"DescribeInstances by run tag: {exc}"}
        ids = [i["InstanceId"] for r in found.get("Reservations", []) for i in r["Instances"]]
        problems = [p for instance_id in ids for p in self._terminate(ec2, instance_id)]
        if problems:
            return {"state": "retry-later", "message": "; ".join(problems), "instance_ids": ids}
        return {"state": "deleted", "instance_ids": ids,
                "message": f"found by run tag: {len(ids)} instance(s) terminating"}

    def _delete_fleet(self, ec2, fleet_id: str) -> list[str]:
        try:
            answer = self._call(ec2, "delete_fleets", FleetIds=[fleet_id],
                                TerminateInstances=True)
        except (ClientError, BotoCoreError) as exc:
            return [f"DeleteFleets {fleet_id}: {exc}"]
        # Already gone, or already deleted by an earlier call: both are done.
        return [f"DeleteFleets {fleet_id}: {f['Error']['Code']}: {f['Error'].get('Message', '')}"
                for f in answer.get("UnsuccessfulFleetDeletions", [])
                if f["Error"]["Code"] not in ("fleetIdDoesNotExist", "fleetNotInDeletableState")]

    def _terminate(self, ec2, instance_id: str, *, fleet_done: bool = False) -> list[str]:
        """TerminateInstances. NotFound for an id CreateFleet returned means "not visible
        yet" as often as "gone" (eventual consistency): unless the fleet's deletion already
        covers the instance, it is retried with backoff, and then is a problem to retry
        later, never a quiet success."""
        try:
            self._call(ec2, "terminate_instances", InstanceIds=[instance_id],
                       also_retry=frozenset() if fleet_done else ec2_api.NOT_YET_VISIBLE_CODES)
        except ClientError as exc:
            if ec2_api.error_code(exc) in ec2_api.NOT_YET_VISIBLE_CODES and fleet_done:
                return []
            return [f"TerminateInstances {instance_id}: {exc}"]
        except BotoCoreError as exc:
            return [f"TerminateInstances {instance_id}: {exc}"]
        return []
