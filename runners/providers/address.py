"""A client for a backend that is already running: the placement an agent or a person
names by hand (a base URL, a SageMaker endpoint name, a region) instead of the one a run's
provision phase wrote. Nothing is placed or torn down here."""

from __future__ import annotations

from typing import Any

from runners import providers
from runners.backends.reply import BackendClient
from runners.providers.sagemaker import names

# What each backend needs to be reached, beyond the experiment itself.
NEEDS = {"openai": "base_url (default: the experiment's openai.base_url)",
         "local": "base_url of the running llama.cpp server",
         "ec2": "base_url of the engine (http://<private ip>:8000)",
         "sagemaker": "endpoint_name or the run_id that made it (and region)", "bedrock": "region"}


class AddressError(ValueError):
    """The backend cannot be reached with what was given; says what is missing."""


def placement_for(experiment, *, region: str | None = None, base_url: str | None = None,
                  endpoint_name: str | None = None, run_id: str | None = None
                  ) -> dict[str, Any]:
    """The part of a placement a client needs, for `experiment.backend`. A SageMaker
    endpoint is named by hand or by the run that created it (names.endpoint_name)."""
    backend = experiment.backend
    if backend == "openai":
        base_url = base_url or experiment.openai.base_url
    if backend in ("openai", "local", "ec2"):
        if not base_url:
            raise AddressError(f"{experiment.name}: backend {backend!r} needs {NEEDS[backend]}")
        # The OpenAI client adds /v1/...; a URL given with /v1 would double it.
        return {"region": region, "base_url": base_url.rstrip("/").removesuffix("/v1")}
    region = region or (experiment.regions[0] if experiment.regions else None)
    if not region:
        raise AddressError(f"{experiment.name}: backend {backend!r} needs a region")
    if backend == "sagemaker":
        endpoint_name = endpoint_name or (names.endpoint_name(experiment.name, run_id)
                                          if run_id else None)
        if not endpoint_name:
            raise AddressError(f"{experiment.name}: backend 'sagemaker' needs {NEEDS[backend]}")
        return {"region": region, "endpoint_name": endpoint_name}
    return {"region": region, "model_id": experiment.bedrock.model_id}


def client_for(experiment, placement: dict[str, Any], *, session=None) -> BackendClient:
    """The backend's own request client (the one the phases measure with)."""
    kwargs: dict[str, Any] = {}
    if session is not None and experiment.backend == "sagemaker":
        kwargs["session"] = session
    elif session is not None and experiment.backend == "bedrock":
        from runners.backends.aws_runtime import runtime_client

        kwargs["bedrock_runtime"] = runtime_client("bedrock-runtime", placement["region"],
                                                   session)
    return providers.for_experiment(experiment, **kwargs).client(placement)
