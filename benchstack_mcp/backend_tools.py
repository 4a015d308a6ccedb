"""A running backend: send it one prompt, or check that it answers a question right."""

from __future__ import annotations

import time

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from benchstack_mcp.config import Config
from benchstack_mcp.errors import tool_errors
from benchstack_mcp.hints import hints
from runners.backends.reply import Ask
from runners.measure import health
from runners.providers import address

class QueryReply(BaseModel):
    experiment: str
    status: str  # ok | error | throttled | timeout
    text: str
    reasoning: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    http_status: int | None
    error: str | None
    seconds: float


class Health(BaseModel):
    experiment: str
    healthy: bool
    problem: str | None  # what failed: the request, a degenerate reply, a wrong answer
    prompt: str
    reply: str
    expected: str  # the pattern a right answer matches
    http_status: int | None
    finish_reason: str | None
    completion_tokens: int | None
    seconds: float


def register(server: MCPServer, config: Config) -> None:
    def client(experiment_name: str, base_url: str | None, endpoint_name: str | None,
               run_id: str | None, region: str | None):
        exp = config.experiment(experiment_name)
        placement = address.placement_for(exp, region=region, base_url=base_url,
                                          endpoint_name=endpoint_name, run_id=run_id)
        session = config.session() if exp.backend in ("sagemaker", "bedrock") else None
        return exp, address.client_for(exp, placement, session=session)

    @server.tool(name="query_backend", annotations=hints(
        # sends a prompt and changes nothing; sampled replies differ from call to call
        "Send one prompt", read_only=True, destructive=False, idempotent=False,
        open_world=True))
    @tool_errors
    def query_backend(experiment_name: str, prompt: str, system: str | None = None,
                      max_tokens: int = 256, temperature: float = 0.0,
                      base_url: str | None = None, endpoint_name: str | None = None,
                      run_id: str | None = None, region: str | None = None) -> QueryReply:
        """Send one chat prompt to an experiment's running backend with the client the
        benchmark measures with; returns the reply, its token counts and time. Reach it
        with: openai: base_url (default: the experiment's); local, ec2: base_url;
        sagemaker: endpoint_name, or the run_id of the run that made it, and region;
        bedrock: region."""
        exp, backend = client(experiment_name, base_url, endpoint_name, run_id, region)
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": prompt}]
        started = time.perf_counter()
        try:
            reply = backend.chat(Ask(messages=messages, max_tokens=max_tokens,
                                     temperature=temperature))
        finally:
            backend.close()
        return QueryReply(experiment=exp.name, status=reply.status, text=reply.text,
                          reasoning=reply.reasoning, finish_reason=reply.finish_reason,
                          prompt_tokens=reply.prompt_tokens,
                          completion_tokens=reply.completion_tokens,
                          http_status=reply.http_status, error=reply.error,
                          seconds=round(time.perf_counter() - started, 3))

    @server.tool(name="model_health", annotations=hints(
        "Check the model answers", read_only=True, destructive=False, idempotent=True,
        open_world=True))
    @tool_errors
    def model_health(experiment_name: str, base_url: str | None = None,
                     endpoint_name: str | None = None, run_id: str | None = None,
                     region: str | None = None) -> Health:
        """Ask the running model one exact-answer question from the quality suite at
        temperature 0: healthy only when the request succeeds, the reply is not degenerate
        (empty, "The The The ...") and the answer is right; HTTP 200 alone is not health.
        Reach it as for query_backend."""
        exp, backend = client(experiment_name, base_url, endpoint_name, run_id, region)
        try:
            found = health.check(backend)
        finally:
            backend.close()
        return Health(experiment=exp.name, **found)
