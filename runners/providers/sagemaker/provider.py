"""SageMaker provider: one endpoint per run, created from the experiment stack's config.

provision  preflight (once per provider), read the stack's names from SSM in the region,
           CreateEndpoint with the billable tags
poll_ready one DescribeEndpoint: the timeline, the placed pool type and resolved image,
           the Creating alert through SNS, FailureReason classified on Failed
teardown   DeleteEndpoint; a delete refused while the endpoint is in progress comes back
           as "retry-later" for the caller to retry. The model and endpoint config belong
           to CloudFormation and stay.
"""

from __future__ import annotations

import copy
import os
from datetime import datetime, timezone
from typing import Any, Callable

from botocore.exceptions import ClientError

from runners import tags
from runners.checks import preflight
from runners.providers.base import Provider, ProvisionError
from runners.providers.retry import error_code, retry_throttled
from runners.providers.sagemaker import container_log
from runners.providers.sagemaker import endpoint as sagemaker_endpoint
from runners.providers.sagemaker import names

ISO = "%Y-%m-%dT%H:%M:%SZ"
RETRY_LATER_S = 60  # how soon a refused delete is worth trying again
READY_MARGIN_S = 600  # beyond SageMaker's own timeouts before a run stops waiting


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime(ISO)


def _parse_iso(text: str) -> datetime:
    return datetime.strptime(text, ISO).replace(tzinfo=timezone.utc)


def _event(placement: dict, event: str, at: datetime, **detail: Any) -> None:
    placement.setdefault("timeline", []).append({"event": event, "at": _iso(at), **detail})


class SageMakerProvider(Provider):
    """kwargs: `session` (a boto3 Session) or `client_factory(service, region)`; `now`
    (a clock returning an aware datetime); `fetch` and `hub_url` for the preflight's Hub
    reads; `retry` (a retry_throttled-compatible callable); `home_region`, where the run's
    alerts topic is (default: the region this code runs in, AWS_REGION in Lambda)."""

    def __init__(self, experiment, *, session=None,
                 client_factory: Callable[[str, str], Any] | None = None,
                 now: Callable[[], datetime] | None = None,
                 fetch: preflight.Fetch = preflight.http_fetch, hub_url: str | None = None,
                 retry: Callable = retry_throttled, home_region: str | None = None,
                 **kwargs: Any):
        super().__init__(experiment, **kwargs)
        if experiment.sagemaker is None:
            raise ValueError(f"{experiment.name}: not a SageMaker experiment")
        self._session, self._factory = session, client_factory
        self._clients: dict[tuple[str, str], Any] = {}
        self.now = now or (lambda: datetime.now(timezone.utc))
        self._fetch, self._hub_url, self._retry = fetch, hub_url, retry
        self._preflight_report: dict | None = None
        self.home_region = home_region or os.environ.get("AWS_REGION")

    @property
    def ready_timeout_s(self) -> int:
        """How long a run waits for InService: SageMaker's own provision, download and
        health-check timeouts, plus a margin."""
        t = self.experiment.sagemaker.timeouts
        return (t.variant_instance_provision_s + t.model_data_download_s
                + t.container_startup_health_check_s + READY_MARGIN_S)

    def _client(self, service: str, region: str):
        key = (service, region)
        if key not in self._clients:
            if self._factory is not None:
                self._clients[key] = self._factory(service, region)
            else:
                import boto3  # Lambda and the local CLI have it; tests inject clients

                session = self._session or boto3.Session()
                self._clients[key] = session.client(service, region_name=region)
        return self._clients[key]

    # ------------------------------------------------------------------ provision

    def preflight(self) -> dict:
        """The preflight report; a failing preflight is a fatal ProvisionError."""
        if self._preflight_report is None:
            try:
                self._preflight_report = preflight.run(self.experiment, fetch=self._fetch,
                                                       base_url=self._hub_url,
                                                       token=self._hub_token())
            except preflight.PreflightError as exc:
                raise ProvisionError(ProvisionError.FATAL, f"preflight: {exc}",
                                     {"stage": "preflight"}) from None
        return self._preflight_report

    def _hub_token(self) -> str | None:
        """A gated model's token, for the preflight's Hub reads: HF_TOKEN when set (a
        laptop), else the Secrets Manager secret the endpoint's model reads too."""
        if not self.experiment.model.gated or preflight.env_token():
            return None
        region = self.home_region or self.experiment.regions[0]
        secrets = self._client("secretsmanager", region)
        try:
            answer = self._retry(lambda: secrets.get_secret_value(SecretId=names.HF_TOKEN_SECRET))
        except ClientError as exc:
            raise ProvisionError(
                ProvisionError.FATAL, f"{region}: reading the Hugging Face token "
                f"{names.HF_TOKEN_SECRET} from Secrets Manager: {error_code(exc)}; create it "
                "(docs/first-deploy.md)", {"stage": "preflight"}) from None
        return answer.get("SecretString")

    def _stack_names(self, region: str) -> dict[str, str]:
        keys = (names.ENDPOINT_CONFIG_NAME, names.MODEL_NAME)
        wanted = {names.parameter(self.experiment.name, key): key for key in keys}
        ssm = self._client("ssm", region)
        answer = self._retry(lambda: ssm.get_parameters(Names=list(wanted)))
        found = {wanted[p["Name"]]: p["Value"] for p in answer.get("Parameters", [])}
        missing = sorted(name for name, key in wanted.items() if key not in found)
        if missing:
            raise ProvisionError(
                ProvisionError.FATAL,
                f"{region}: SSM parameter {missing[0]} not found; deploy experiment "
                f"{self.experiment.name}'s stack in {region} first",
                {"region": region, "missing": missing})
        return found

    def provision(self, run_id: str, region: str) -> dict[str, Any]:
        report = self.preflight()
        stack = self._stack_names(region)
        started = self.now()
        endpoint = names.endpoint_name(self.experiment.name, run_id)
        placement: dict[str, Any] = {
            "backend": "sagemaker", "experiment": self.experiment.name, "run_id": run_id,
            "region": region, "endpoint_name": endpoint,
            "endpoint_config_name": stack[names.ENDPOINT_CONFIG_NAME],
            "model_name": stack[names.MODEL_NAME],
            "provision_started_at": _iso(started), "ready_at": None, "status": None,
            "instance_type": None, "image": None, "alerted": False,
            "preflight": report, "timeline": [],
        }
        billable = tags.billable_tags(self.experiment.name, run_id, started,
                                      self.experiment.ttl_hours, self.execution_arn)
        try:
            outcome = sagemaker_endpoint.create(
                self._client("sagemaker", region), name=endpoint,
                config_name=placement["endpoint_config_name"], tags=billable,
                retry=self._retry)
        except ProvisionError as exc:
            # Nothing was created; the placement still says what was asked, for the record.
            exc.detail.setdefault("placement", placement)
            raise
        except Exception as exc:
            # The request may have reached SageMaker (a timeout after sending): hand the
            # placement back so the caller's teardown covers it.
            raise ProvisionError(ProvisionError.FATAL, f"CreateEndpoint {endpoint}: {exc}",
                                 {"placement": placement, "created": "unknown"}) from exc
        placement["tags"] = billable
        _event(placement, "create_requested" if outcome == "created" else "create_repeated",
               started)
        return placement

    # ------------------------------------------------------------------ poll_ready

    def poll_ready(self, placement: dict[str, Any]) -> dict[str, Any]:
        placement = copy.deepcopy(placement)
        region, endpoint = placement["region"], placement["endpoint_name"]
        description = sagemaker_endpoint.describe(self._client("sagemaker", region), endpoint,
                                                  retry=self._retry)
        now = self.now()
        if description is None:
            error = ProvisionError(ProvisionError.FATAL, f"{region}: endpoint {endpoint} no "
                                   "longer exists", {"region": region, "endpoint": endpoint})
            _event(placement, "vanished", now)
            return {"state": "failed", "placement": placement, "error": error.to_dict()}
        status = description["EndpointStatus"]
        placement["status"] = status
        if status in sagemaker_endpoint.IN_PROGRESS:
            return self._waiting(placement, status, description, now)
        if status == "InService":
            placement["instance_type"] = sagemaker_endpoint.placed_instance_type(description)
            placement["image"] = sagemaker_endpoint.deployed_image(description)
            placement["ready_at"] = _iso(now)
            _event(placement, "in_service", now, instance_type=placement["instance_type"])
            container_log.read_facts(self._client("logs", region), placement)
            return {"state": "ready", "placement": placement}
        reason = description.get("FailureReason") or f"endpoint is {status}"
        kind = (sagemaker_endpoint.classify_failure(reason) if status == "Failed"
                else ProvisionError.FATAL)
        message = f"{region}: endpoint {endpoint} {status}: {reason}"
        if kind == ProvisionError.FATAL:
            message += f" (container log: {names.log_group(endpoint)})"
        error = ProvisionError(kind, message, {"region": region, "endpoint": endpoint,
                                               "failure_reason": reason, "status": status})
        _event(placement, "failed", now, kind=kind, reason=reason)
        return {"state": "failed", "placement": placement, "error": error.to_dict()}

    def _waiting(self, placement: dict, status: str, description: dict,
                 now: datetime) -> dict[str, Any]:
        if not any(e["event"] == "creating" for e in placement["timeline"]):
            created = description.get("CreationTime")
            _event(placement, "creating", now,
                   service_creation_time=_iso(created) if isinstance(created, datetime) else None)
        waited_s = (now - _parse_iso(placement["provision_started_at"])).total_seconds()
        if status == "Creating":
            container_log.check_health(self._client("logs", placement["region"]), placement, now)
        threshold_s = self.experiment.sagemaker.creating_alert_minutes * 60
        if status == "Creating" and waited_s >= threshold_s and not placement["alerted"]:
            self._alert_stuck(placement, waited_s, now)
        healthy = placement.get("container_healthy_at")
        return {"state": "waiting", "placement": placement, "waited_s": waited_s,
                "message": f"{status}" + (f"; container answering /ping 200 since {healthy}"
                                          if healthy else "")}

    def _alert_stuck(self, placement: dict, waited_s: float, now: datetime) -> None:
        """SNS alert: an endpoint once sat 3.29 h in Creating, billing, with a healthy
        container. A failed publish is recorded in the timeline, not raised: the run goes on."""
        region, endpoint = placement["region"], placement["endpoint_name"]
        subject = f"benchstack: {endpoint} Creating for {waited_s / 60:.0f} min"
        body = (f"SageMaker endpoint {endpoint} ({self.experiment.name}, run "
                f"{placement['run_id']}) in {region} has been Creating for {waited_s / 60:.1f} "
                f"minutes (alert threshold {self.experiment.sagemaker.creating_alert_minutes} "
                f"min). It bills while it waits and cannot be deleted until it leaves "
                f"Creating. {container_log.healthy_note(placement, now)} "
                f"Container log: {names.log_group(endpoint)}.")
        placement["alerted"] = True
        # The home region's topic: the control role may publish only there, and a fallback
        # region's topic has no subscriber who knows about this run.
        home = self.home_region or region
        try:
            ssm = self._client("ssm", home)
            topic = self._retry(lambda: ssm.get_parameter(Name=names.ALERTS_TOPIC_PARAMETER))
            sns = self._client("sns", home)
            self._retry(lambda: sns.publish(TopicArn=topic["Parameter"]["Value"],
                                            Subject=subject[:100], Message=body))
        except Exception as exc:  # noqa: BLE001 - recorded, and the run continues
            _event(placement, "creating_alert_failed", now, error=str(exc))
            return
        _event(placement, "creating_alert", now, waited_s=round(waited_s), topic_region=home)

    # ------------------------------------------------------------------ client, teardown

    def client(self, placement: dict[str, Any]):
        # Imported here: provisioning and teardown must work without the request clients.
        from runners.backends.aws_runtime import runtime_client
        from runners.backends.sagemaker_runtime import SageMakerRuntimeClient

        region = placement["region"]
        runtime = (self._factory("sagemaker-runtime", region) if self._factory is not None
                   else runtime_client("sagemaker-runtime", region, self._session))
        engine = self.experiment.engine
        return SageMakerRuntimeClient(runtime, placement["endpoint_name"],
                                      self.experiment.model.served_name,
                                      supports_tools=bool(engine and engine.tool_call_parser))

    def collect_telemetry(self, placement: dict[str, Any], start_s: float,
                          end_s: float) -> dict[str, Any]:
        region = placement.get("region") or "-"
        return container_log.collect(self._client("logs", region),
                                     self._client("cloudwatch", region), placement, start_s, end_s)

    def teardown(self, placement: dict[str, Any]) -> dict[str, Any]:
        placement = copy.deepcopy(placement)
        now = self.now()
        endpoint = placement.get("endpoint_name")
        if not endpoint and placement.get("run_id") and placement.get("region"):
            # provision died before answering: the run's endpoint name is known anyway
            endpoint = names.endpoint_name(self.experiment.name, placement["run_id"])
        if not endpoint:
            return {"state": "deleted", "placement": placement, "detail": "nothing created"}
        outcome = sagemaker_endpoint.delete(self._client("sagemaker", placement["region"]),
                                            endpoint, retry=self._retry)
        if outcome == "retry-later":
            _event(placement, "delete_refused", now)
            return {"state": "retry-later", "placement": placement,
                    "retry_after_s": RETRY_LATER_S,
                    "reason": f"{endpoint} is still in progress (or deletes are throttled); "
                              "SageMaker refuses to delete it until it settles"}
        _event(placement, "delete_requested" if outcome == "deleting" else "already_gone", now)
        return {"state": "deleted", "placement": placement}
