"""Preflight: catch in seconds what a SageMaker endpoint reports after ~30 minutes.

Before any endpoint is created, read the model's config.json, its safetensors index and
every shard's header from the Hugging Face Hub (HTTP Range requests: the 8-byte length and
the JSON header, never the weights), and check:

* ignore list: a compressed-tensors config quantizes every Linear its `ignore` list does not
  name. A Linear left at 16-bit but not named makes vLLM look for packed tensors that are not
  there ("There is no module or parameter named '...weight' ... available parameters ...
  weight_packed"), and a packed Linear that is named makes it look for a 16-bit weight;
* memory: weights (the sum of tensor bytes) + the KV cache for one max_model_len sequence
  must fit the smallest pool's usable GPU memory. That is necessary, not sufficient: vLLM
  also needs activation memory, which only a start-up profiling run measures.

* access: whether the Hub gates the model (the model API's "gated": false, "auto" or
  "manual") and whether a token is set; every read then carries the token, as the
  backends' downloads do (SageMaker: HF_TOKEN from Secrets Manager; EC2: the SSM
  SecureString /benchstack/hf-token).

Any failure raises PreflightError with one line saying what to change.
"""

from __future__ import annotations

import json
import os
import re
import struct
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable

from runners import hardware
from runners.experiment import Experiment

HUB_URL = "https://huggingface.co"
REVISION = "main"
REQUEST_TIMEOUT_S = 15.0
MAX_SHARDS = 512
MAX_HEADER_BYTES = 100_000_000  # the safetensors format caps its JSON header at 100 MB
MAX_JSON_BYTES = 50_000_000  # config.json / index: generous, but bounded
GIB = hardware.GIB

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}
SIXTEEN_BIT = frozenset({"F16", "BF16"})
UNQUANTIZED = frozenset({"F16", "BF16", "F32", "F64"})
ENGINE_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
# Tables that compressed-tensors never treats as a Linear (vLLM loads them as embeddings),
# matched against a module's last name component.
_EMBEDDING_LEAF = re.compile(
    r"embed_tokens(_per_layer)?|embeddings?|word_embeddings|position_embeddings|"
    r"embed_positions|wte|wpe|lm_head")


class PreflightError(Exception):
    """The run must not start; the message is one line saying why."""


class FetchError(Exception):
    def __init__(self, url: str, status: int | None, reason: str):
        super().__init__(f"{url}: {status or ''} {reason}".strip())
        self.url, self.status, self.reason = url, status, reason


# fetch(url, headers, max_bytes) -> at most max_bytes of the body; raises FetchError.
Fetch = Callable[[str, dict[str, str], int], bytes]


def http_fetch(url: str, headers: dict[str, str], max_bytes: int) -> bytes:
    """GET over HTTP(S) with urllib; reads no more than `max_bytes` (a server that ignores
    Range still only costs what we asked for)."""
    request = urllib.request.Request(url, headers={"User-Agent": "benchstack-preflight",
                                                   **headers})
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            return response.read(max_bytes)
    except urllib.error.HTTPError as exc:
        raise FetchError(url, exc.code, exc.reason) from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise FetchError(url, None, str(getattr(exc, "reason", exc))) from None


# ---------------------------------------------------------------- reading the Hub


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int


class HubModel:
    """A model repository on the Hub, read file by file (headers only for weights)."""

    def __init__(self, repo: str, *, base_url: str | None = None, revision: str = REVISION,
                 fetch: Fetch = http_fetch, token: str | None = None):
        self.repo, self.revision, self.fetch = repo, revision, fetch
        self.auth = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = (base_url or os.environ.get("HF_ENDPOINT") or HUB_URL).rstrip("/")

    def url(self, filename: str) -> str:
        return f"{self.base_url}/{self.repo}/resolve/{self.revision}/{filename}"

    def _get(self, filename: str, max_bytes: int, headers: dict[str, str] | None = None) -> bytes:
        try:
            return self.fetch(self.url(filename), {**self.auth, **(headers or {})}, max_bytes)
        except FetchError as exc:
            if exc.status in (401, 403):
                raise PreflightError(
                    f"{self.repo}: {filename} is gated or private (HTTP {exc.status}); the "
                    "endpoint could not download it either") from None
            if exc.status == 404:
                raise
            raise PreflightError(f"{self.repo}: cannot read {filename} from {self.base_url}: "
                                 f"{exc.status or ''} {exc.reason}".replace("  ", " ")) from None

    def gated(self) -> str | bool | None:
        """The Hub model API's "gated" (False, "auto" or "manual"); None when the API
        cannot say (an endpoint without it, such as a mirror)."""
        url = f"{self.base_url}/api/models/{self.repo}"
        try:
            info = json.loads(self.fetch(url, dict(self.auth), MAX_JSON_BYTES))
        except (FetchError, ValueError):
            return None
        return info.get("gated", False) if isinstance(info, dict) else None

    def json(self, filename: str) -> dict:
        body = self._get(filename, MAX_JSON_BYTES + 1)
        if len(body) > MAX_JSON_BYTES:
            raise PreflightError(f"{self.repo}: {filename} is larger than {MAX_JSON_BYTES} bytes")
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise PreflightError(f"{self.repo}: {filename} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise PreflightError(f"{self.repo}: {filename} is not a JSON object")
        return data

    def safetensors_header(self, filename: str) -> dict:
        """The JSON header of one shard: bytes 0-7 give its length N (little-endian u64),
        bytes 8 to 8+N-1 hold it."""
        prefix = self._get(filename, 8, {"Range": "bytes=0-7"})
        if len(prefix) != 8:
            raise PreflightError(f"{self.repo}: {filename} is shorter than a safetensors header")
        (length,) = struct.unpack("<Q", prefix)
        if not 2 <= length <= MAX_HEADER_BYTES:
            raise PreflightError(f"{self.repo}: {filename} declares a {length}-byte header; "
                                 "not a safetensors file")
        body = self._get(filename, length, {"Range": f"bytes=8-{8 + length - 1}"})
        if len(body) != length:
            raise PreflightError(f"{self.repo}: {filename}: got {len(body)} header bytes of "
                                 f"{length}")
        try:
            header = json.loads(body)
        except ValueError as exc:
            raise PreflightError(f"{self.repo}: {filename}: header is not JSON: {exc}") from None
        return header

    def shard_files(self) -> list[str]:
        try:
            index = self.json("model.safetensors.index.json")
        except FetchError:  # 404: a single-file checkpoint
            return ["model.safetensors"]
        files = sorted(set((index.get("weight_map") or {}).values()))
        if not files:
            raise PreflightError(f"{self.repo}: model.safetensors.index.json has no weight_map")
        if len(files) > MAX_SHARDS:
            raise PreflightError(f"{self.repo}: {len(files)} shards; preflight reads at most "
                                 f"{MAX_SHARDS}")
        return files

    def tensors(self) -> list[Tensor]:
        found = []
        for filename in self.shard_files():
            try:
                header = self.safetensors_header(filename)
            except FetchError:
                raise PreflightError(f"{self.repo}: {filename} not found; preflight checks "
                                     "safetensors checkpoints only") from None
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                begin, end = info["data_offsets"]
                found.append(Tensor(name, info["dtype"], tuple(info["shape"]), end - begin))
        return found


# ---------------------------------------------------------------- the checks (pure)


def _matches(module: str, entry: str) -> bool:
    """compressed-tensors target matching: "re:<regex>" by re.match, else the exact name."""
    if entry.startswith("re:"):
        return re.match(entry[3:], module) is not None
    return module == entry


def ignore_list_problems(quantization_config: dict | None, tensors: list[Tensor]) -> list[str]:
    """Why vLLM would fail to load this compressed-tensors checkpoint; [] when it would not.

    A 16-bit Linear is a module whose `weight` is a 2-D F16/BF16 tensor, in a checkpoint
    where other modules are quantized (packed, or stored as int8/fp8), excluding embedding
    tables and lm_head, which compressed-tensors does not quantize as Linears.
    """
    if not quantization_config or quantization_config.get("quant_method") != "compressed-tensors":
        return []
    ignore = [str(e) for e in quantization_config.get("ignore") or []]
    modules: dict[str, dict[str, Tensor]] = {}
    for t in tensors:
        module, _, param = t.name.rpartition(".")
        modules.setdefault(module, {})[param] = t

    def quantized(params: dict[str, Tensor]) -> bool:
        weight = params.get("weight")
        return "weight_packed" in params or (weight is not None and
                                              weight.dtype not in UNQUANTIZED)

    if not any(quantized(p) for p in modules.values()):
        return []
    problems = []
    unlisted = sorted(
        m for m, p in modules.items()
        if "weight" in p and p["weight"].dtype in SIXTEEN_BIT and len(p["weight"].shape) == 2
        and not _EMBEDDING_LEAF.fullmatch(m.rpartition(".")[2])
        and not any(_matches(m, e) for e in ignore))
    if unlisted:
        problems.append(f"{len(unlisted)} Linear layer(s) stored at 16-bit are missing from "
                        f"quantization_config.ignore, e.g. {', '.join(unlisted[:3])}; vLLM "
                        f"would look for packed tensors that are not there")
    listed_packed = sorted(m for m, p in modules.items()
                           if quantized(p) and any(_matches(m, e) for e in ignore))
    if listed_packed:
        problems.append(f"{len(listed_packed)} quantized layer(s) are named in "
                        f"quantization_config.ignore, e.g. {', '.join(listed_packed[:3])}; "
                        "vLLM would look for a 16-bit weight that is not there")
    return problems


def text_config(config: dict) -> dict:
    """Multimodal configs keep the language model's shape under text_config."""
    nested = config.get("text_config")
    return nested if isinstance(nested, dict) else config


@dataclass(frozen=True)
class KvEstimate:
    bytes: int  # what the engine needs for one max_model_len sequence, as modelled
    upper_bytes: int  # every layer holding every token: no sliding window, no sharing
    assumptions: tuple[str, ...]


def kv_cache_estimate(config: dict, max_model_len: int, dtype_bytes: int) -> KvEstimate:
    """KV cache for one sequence of max_model_len tokens.

    Per layer and token: kv_heads x head_dim x 2 (K and V) x dtype bytes. Read from the
    config where it says so: `layer_types` with `sliding_window` (a sliding layer keeps at
    most the window), `num_kv_shared_layers` (the last N layers reuse earlier layers' cache
    and keep none), and Gemma-4-style `num_global_key_value_heads` / `global_head_dim` for
    full-attention layers. Without `layer_types` every layer is assumed to attend over the
    whole context, which over-estimates models whose window the config does not spell out.
    K and V are both counted even where a config says they are equal (`attention_k_eq_v`).
    """
    tc = text_config(config)
    try:
        layers = int(tc["num_hidden_layers"])
        heads = int(tc["num_attention_heads"])
    except (KeyError, TypeError, ValueError):
        raise PreflightError("config.json has no num_hidden_layers / num_attention_heads; "
                             "cannot size the KV cache") from None
    kv_heads = int(tc.get("num_key_value_heads") or heads)
    head_dim = int(tc.get("head_dim") or int(tc["hidden_size"]) // heads)
    full_kv_heads = int(tc.get("num_global_key_value_heads") or kv_heads)
    full_head_dim = int(tc.get("global_head_dim") or head_dim)
    window = tc.get("sliding_window")
    layer_types = tc.get("layer_types")
    shared = int(tc.get("num_kv_shared_layers") or 0)
    assumptions = []
    if not (isinstance(layer_types, list) and len(layer_types) == layers):
        if window:
            assumptions.append("sliding_window without layer_types: every layer assumed full")
        layer_types = ["full_attention"] * layers

    def per_token(kind: str) -> int:
        if kind == "full_attention":
            return full_kv_heads * full_head_dim * 2 * dtype_bytes
        return kv_heads * head_dim * 2 * dtype_bytes

    total = upper = 0
    for i, kind in enumerate(layer_types):
        upper += per_token(kind) * max_model_len
        if i >= layers - shared:
            continue  # reuses an earlier layer's cache
        tokens = max_model_len
        if kind == "sliding_attention" and window:
            tokens = min(int(window), max_model_len)
        total += per_token(kind) * tokens
    if shared:
        assumptions.append(f"last {shared} layers share earlier layers' KV cache")
    if tc.get("attention_k_eq_v"):
        assumptions.append("attention_k_eq_v: K and V both counted (an upper bound)")
    return KvEstimate(total, upper, tuple(assumptions))


def usable_gib(instance_type: str, tensor_parallel_size: int, gpu_memory_utilization: float) -> float:
    """GPU memory vLLM may use: the share of the accelerators the engine shards across."""
    entry = hardware.lookup(instance_type)
    return entry.accelerator.memory_gib * tensor_parallel_size * gpu_memory_utilization


def kv_dtype_bytes(experiment: Experiment, instance_type: str) -> int:
    """Bytes per KV element: --kv-cache-dtype if set (fp8 variants are 1), else the compute
    dtype's size."""
    flag = str(experiment.engine.extra_flags.get("kv-cache-dtype", "auto"))
    if flag.startswith("fp8"):
        return 1
    return ENGINE_DTYPE_BYTES[experiment.compute_dtype(instance_type)]


def memory_report(experiment: Experiment, config: dict, weights_bytes: int) -> dict[str, Any]:
    """Weights + KV against the smallest pool; raises PreflightError when it cannot fit."""
    engine = experiment.engine
    tp = engine.tensor_parallel_size
    for itype in experiment.instance_types:
        gpus = hardware.lookup(itype).accelerator_count
        if tp > gpus:
            raise PreflightError(f"{experiment.source}: engine.tensor_parallel_size {tp} "
                                 f"exceeds the {gpus} GPU(s) of {itype}")
    smallest = min(experiment.instance_types,
                   key=lambda t: usable_gib(t, tp, engine.gpu_memory_utilization))
    kv = kv_cache_estimate(config, engine.max_model_len, kv_dtype_bytes(experiment, smallest))
    usable = usable_gib(smallest, tp, engine.gpu_memory_utilization)
    weights_gib, kv_gib = weights_bytes / GIB, kv.bytes / GIB
    report = {
        "instance_type": smallest,
        "usable_gib": round(usable, 3),
        "weights_gib": round(weights_gib, 3),
        "kv_cache_gib": round(kv_gib, 3),
        "kv_cache_upper_gib": round(kv.upper_bytes / GIB, 3),
        "max_model_len": engine.max_model_len,
        "assumptions": list(kv.assumptions),
    }
    if weights_gib + kv_gib > usable:
        raise PreflightError(
            f"{experiment.source}: does not fit {smallest}: weights {weights_gib:.2f} GiB + KV "
            f"cache {kv_gib:.2f} GiB for max_model_len {engine.max_model_len} > "
            f"{usable:.2f} GiB usable ({engine.gpu_memory_utilization:.0%} of "
            f"{hardware.lookup(smallest).accelerator_memory_gib:.2f} GiB); lower "
            "engine.max_model_len, use a smaller build or a larger pool")
    return report


def check_context_length(experiment: Experiment, config: dict) -> None:
    limit = text_config(config).get("max_position_embeddings")
    if isinstance(limit, int) and experiment.engine.max_model_len > limit:
        raise PreflightError(f"{experiment.source}: engine.max_model_len "
                             f"{experiment.engine.max_model_len} exceeds the model's "
                             f"max_position_embeddings {limit}; vLLM refuses it")


# ---------------------------------------------------------------- entry point


TOKEN_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


def env_token() -> str | None:
    return next((os.environ[k] for k in TOKEN_ENV if os.environ.get(k)), None)


def access(experiment: Experiment, hub: HubModel) -> dict[str, Any]:
    """{"gated", "token"}; a gated model without a token is a PreflightError."""
    gated = hub.gated()
    token = "set" if hub.auth else "not set"
    if gated and not hub.auth:
        raise PreflightError(
            f"{experiment.model.id} is gated ({gated}) on the Hub and no token is set: accept "
            "its licence there, then set HF_TOKEN (local), the Secrets Manager secret "
            "benchstack/hf-token (SageMaker) and the SSM SecureString /benchstack/hf-token "
            "(EC2), and model.gated = true in the experiment")
    return {"gated": gated, "token": token}


def run(experiment: Experiment, *, fetch: Fetch = http_fetch,
        base_url: str | None = None, token: str | None = None) -> dict[str, Any]:
    """Every check for a SageMaker or EC2 vLLM experiment; a JSON-ready report. `token`
    (default: HF_TOKEN in the environment) authorizes the Hub reads.

    Raises PreflightError (one line) on the first check that fails.
    """
    if experiment.engine is None or not experiment.instance_types:
        raise PreflightError(f"{experiment.source}: preflight needs an [engine] and instance "
                             "types (SageMaker pools or EC2 types)")
    hub = HubModel(experiment.model.id, base_url=base_url, fetch=fetch,
                   token=token or env_token())
    hub_access = access(experiment, hub)
    try:
        config = hub.json("config.json")
    except FetchError:
        raise PreflightError(f"{experiment.model.id}: no config.json at {hub.url('config.json')}; "
                             "check model.id") from None
    check_context_length(experiment, config)
    tensors = hub.tensors()
    problems = ignore_list_problems(config.get("quantization_config"), tensors)
    if problems:
        raise PreflightError(f"{experiment.model.id}: {problems[0]}")
    weights_bytes = sum(t.nbytes for t in tensors)
    quant_method = (config.get("quantization_config") or {}).get("quant_method")
    return {
        "model": experiment.model.id,
        "access": hub_access,
        "tensors": len(tensors),
        "weights_bytes": weights_bytes,
        "quant_method": quant_method,
        "ignore_list": "checked" if quant_method == "compressed-tensors" else "not applicable",
        "memory": memory_report(experiment, config, weights_bytes),
    }
