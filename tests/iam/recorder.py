"""A pytest plugin recording every AWS operation the runners make, with the call site.

Load with `-p tests.iam.recorder` and BENCHSTACK_AWS_CALLS=<file>: every botocore client
made in the session gets a `before-call` hook (registered first, so Stubber's own
before-call handler, which answers the call, cannot skip it). The API parameters are kept
from `before-parameter-build` (before-call carries the serialized request only). Each
call whose stack passes through runners/ is written as one JSON line: service, operation,
region, the parameters and the runners frames (innermost first). Calls a test makes
itself (setting up moto) are not the runners' and are left out.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import botocore.session

_PATH_ENV = "BENCHSTACK_AWS_CALLS"
_PARAMS = "benchstack_api_params"


def _runners_frames() -> list[str]:
    frames, frame = [], sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "runners" or module.startswith("runners."):
            frames.append(f"{module}.{frame.f_code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return frames


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    return str(value)


class Recorder:
    def __init__(self, path: str):
        self.out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed at session end

    def keep_params(self, params, context, **_):
        context[_PARAMS] = _jsonable(params)

    def record(self, model, context, **_):
        frames = _runners_frames()
        if frames:
            client_region = context.get("client_region")
            self.out.write(json.dumps({
                "service": model.service_model.service_name,
                "signing_name": model.service_model.signing_name,
                "operation": model.name, "region": client_region,
                # where the code runs: Lambda sets AWS_REGION to the function's region
                "home": os.environ.get("AWS_REGION"),
                # the deploy trigger's experiment (its stack holds the starter role)
                "experiment": os.environ.get("BENCHSTACK_EXPERIMENT"),
                "params": context.get(_PARAMS, {}), "frames": frames}) + "\n")
            self.out.flush()

    def install(self) -> None:
        original = botocore.session.Session.create_client
        recorder = self

        def create_client(session, *args, **kwargs):
            client = original(session, *args, **kwargs)
            region = client.meta.region_name

            def stamp(context, **_):
                context["client_region"] = region
            client.meta.events.register_first("before-parameter-build.*.*", stamp)
            client.meta.events.register_first("before-parameter-build.*.*", recorder.keep_params)
            client.meta.events.register_first("before-call.*.*", recorder.record)
            return client
        botocore.session.Session.create_client = create_client


def pytest_configure(config):
    path = os.environ.get(_PATH_ENV)
    if path:
        Recorder(path).install()
