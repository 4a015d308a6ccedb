"""Backend `bedrock`: a managed model through Converse. Nothing to place or tear down;
`provision` only checks the region and binds a bedrock-runtime client to it."""

from __future__ import annotations

from typing import Any

from runners.backends.aws_runtime import runtime_client
from runners.backends.bedrock_converse import BedrockConverseClient
from runners.providers.base import Provider


class BedrockProvider(Provider):
    def __init__(self, experiment, *, bedrock_runtime=None, **kwargs: Any):
        super().__init__(experiment, **kwargs)
        self._runtime = bedrock_runtime  # injected in tests (botocore Stubber)

    def provision(self, run_id: str, region: str) -> dict[str, Any]:
        return {"region": region, "az": None, "instance_type": None,
                "model_id": self.experiment.bedrock.model_id}

    def poll_ready(self, placement: dict[str, Any]) -> dict[str, Any]:
        return {"state": "ready", "placement": placement}

    def client(self, placement: dict[str, Any]) -> BedrockConverseClient:
        runtime = self._runtime or runtime_client("bedrock-runtime", placement["region"])
        return BedrockConverseClient(runtime, placement["model_id"])

    def teardown(self, placement: dict[str, Any]) -> dict[str, Any]:
        return {"state": "deleted", "message": "managed model: nothing billed by the hour"}
