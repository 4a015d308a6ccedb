"""Backend `openai`: an OpenAI-compatible server someone else runs (nothing to place,
nothing that bills here). Tool calls are assumed when the engine names a tool parser."""

from __future__ import annotations

import os
from typing import Any

from runners.backends.openai_http import OpenAIHTTPClient
from runners.providers.base import Provider, ProvisionError


class OpenAIProvider(Provider):
    def __init__(self, experiment, *, request_timeout_s: float = 300.0, **kwargs: Any):
        super().__init__(experiment, **kwargs)
        self.request_timeout_s = request_timeout_s

    def provision(self, run_id: str, region: str) -> dict[str, Any]:
        cfg = self.experiment.openai
        if cfg.api_key_env and not os.environ.get(cfg.api_key_env):
            raise ProvisionError(ProvisionError.FATAL, f"environment variable "
                                 f"{cfg.api_key_env} (openai.api_key_env) is not set")
        return {"region": region, "az": None, "instance_type": None,
                "base_url": cfg.base_url.rstrip("/").removesuffix("/v1")}

    def poll_ready(self, placement: dict[str, Any]) -> dict[str, Any]:
        try:
            status, _ = self.client(placement).get_json("/v1/models")
        except OSError as exc:
            return {"state": "waiting", "placement": placement, "message": str(exc)}
        state = "ready" if status == 200 else "waiting"
        return {"state": state, "placement": placement, "message": f"HTTP {status}"}

    def client(self, placement: dict[str, Any]) -> OpenAIHTTPClient:
        cfg, engine = self.experiment.openai, self.experiment.engine
        return OpenAIHTTPClient(
            placement["base_url"], self.experiment.model.served_name,
            api_key=os.environ.get(cfg.api_key_env) if cfg.api_key_env else None,
            supports_tools=bool(engine and engine.tool_call_parser),
            timeout_s=self.request_timeout_s)

    def teardown(self, placement: dict[str, Any]) -> dict[str, Any]:
        return {"state": "deleted", "message": "nothing was placed"}
