"""Providers own the billable part of an experiment: they place it, report when it is
ready, hand out a client for it, and tear it down. One module per backend (a package for
EC2 and SageMaker, which have helpers of their own); `for_experiment` picks the provider
for an experiment's backend. region_fallback moves a placement to the next region when one
has no capacity; retry backs off AWS throttling; address builds a client for a backend
that is already running.

May import: backends, checks, experiment, hardware, tags, boto3 and the standard library.
Never measurement, results, workflow or the CLI.
"""

from __future__ import annotations

import importlib

from runners.providers.base import Provider

# backend name -> "module:Class", imported lazily so a laptop run never imports what
# it does not use.
REGISTRY: dict[str, str] = {
    "ec2": "runners.providers.ec2.provider:Ec2Provider",
    "sagemaker": "runners.providers.sagemaker.provider:SageMakerProvider",
    "local": "runners.providers.local:LocalProvider",
    "openai": "runners.providers.openai:OpenAIProvider",
    "bedrock": "runners.providers.bedrock:BedrockProvider",
}


def for_experiment(experiment, **kwargs) -> Provider:
    """The provider for `experiment.backend`, constructed with `kwargs` (e.g. boto3 clients)."""
    target = REGISTRY.get(experiment.backend)
    if target is None:
        raise NotImplementedError(f"no provider for backend {experiment.backend!r} yet")
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(experiment, **kwargs)
