"""A fake Hugging Face Hub for preflight tests: model files in memory, served either by a
loopback HTTP server (127.0.0.1, Range requests honoured) or by an injected fetch function.
Nothing here touches the network."""

from __future__ import annotations

import json
import math
import re
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from runners.checks import preflight

BYTES = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "I8": 1, "U8": 1, "F8_E4M3": 1}


def safetensors_header_blob(tensors: dict[str, tuple[str, tuple[int, ...]]]) -> bytes:
    """The first bytes of a safetensors file: 8-byte length + JSON header. The tensor data
    itself is never served (preflight must not ask for it)."""
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    body = json.dumps(header).encode()
    return struct.pack("<Q", len(body)) + body


def model_files(config: dict, shards: dict[str, dict[str, tuple[str, tuple[int, ...]]]],
                *, index: bool = True) -> dict[str, bytes]:
    files = {"config.json": json.dumps(config).encode()}
    for shard, tensors in shards.items():
        files[shard] = safetensors_header_blob(tensors)
    if index:
        weight_map = {name: shard for shard, tensors in shards.items() for name in tensors}
        files["model.safetensors.index.json"] = json.dumps({"weight_map": weight_map}).encode()
    return files


class FakeHub:
    """repo -> {filename: bytes}; `status` overrides (e.g. 401 for a gated repo); `log`
    records every (path, range) asked for."""

    def __init__(self, *, redirect_weights: bool = False):
        self.repos: dict[str, dict[str, bytes]] = {}
        self.status: dict[str, int] = {}
        self.log: list[tuple[str, str | None]] = []
        self.redirect_weights = redirect_weights  # like the Hub: weights live on a CDN
        self.gated: dict[str, str] = {}  # repo -> "auto" | "manual" (the model API's field)
        self.token: str | None = None  # when set, a gated repo's files need it
        self.auth: list[str | None] = []  # the Authorization header of every request

    def add(self, repo: str, files: dict[str, bytes]) -> None:
        self.repos[repo] = files

    def answer(self, path: str, range_header: str | None,
               auth: str | None = None) -> tuple[int, bytes]:
        self.log.append((path, range_header))
        self.auth.append(auth)
        if self.redirect_weights and path.endswith(".safetensors") and not path.startswith("/cdn"):
            return 302, f"/cdn{path}".encode()
        api = re.fullmatch(r"/api/models/(.+?/.+?)", path)
        if api:
            repo = api.group(1)
            if repo not in self.repos:
                return 404, b""
            return 200, json.dumps({"id": repo, "gated": self.gated.get(repo, False)}).encode()
        match = re.fullmatch(r"(?:/cdn)?/(.+?/.+?)/resolve/main/(.+)", path)
        if not match:
            return 404, b""
        repo, filename = match.groups()
        if repo in self.gated and self.auth[-1] != f"Bearer {self.token}":
            return 401, b""
        if repo in self.status:
            return self.status[repo], b""
        data = self.repos.get(repo, {}).get(filename)
        if data is None:
            return 404, b""
        if range_header:
            start, end = (int(x) for x in re.fullmatch(r"bytes=(\d+)-(\d+)", range_header).groups())
            return 206, data[start:end + 1]
        return 200, data

    def fetch(self, url: str, headers: dict[str, str], max_bytes: int) -> bytes:
        """Injected in place of preflight.http_fetch."""
        status, body = self.answer(re.sub(r"^https?://[^/]+", "", url), headers.get("Range"),
                                   headers.get("Authorization"))
        if status >= 400:
            raise preflight.FetchError(url, status, "fake hub")
        return body[:max_bytes]


class LoopbackHub:
    """FakeHub behind a real HTTP server on 127.0.0.1 (use as a context manager)."""

    def __init__(self, hub: FakeHub):
        self.hub = hub
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                status, body = outer.hub.answer(self.path, self.headers.get("Range"),
                                                self.headers.get("Authorization"))
                self.send_response(status)
                if status == 302:
                    self.send_header("Location", body.decode())
                    body = b""
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "LoopbackHub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


# ---------------------------------------------------------------- model fixtures

GEMMA_LIKE_TEXT = {
    "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2,
    "head_dim": 256, "hidden_size": 1536, "sliding_window": 512,
    "layer_types": ["sliding_attention"] * 2 + ["full_attention"] + ["sliding_attention"] * 2
    + ["full_attention"],
    "num_kv_shared_layers": 2, "max_position_embeddings": 131072,
}


def w4a16_model(*, ignore: list[str], extra_16bit: tuple[str, ...] = ()) -> dict[str, bytes]:
    """A small compressed-tensors W4A16 checkpoint in two shards: packed language-model
    Linears, 16-bit embeddings, a 16-bit vision tower the ignore list should name."""
    config = {"model_type": "gemma4", "text_config": GEMMA_LIKE_TEXT,
              "quantization_config": {"quant_method": "compressed-tensors", "ignore": ignore,
                                      "format": "pack-quantized"}}
    lm = {}
    for i in range(2):
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            prefix = f"model.language_model.layers.{i}.self_attn.{proj}"
            lm[f"{prefix}.weight_packed"] = ("I32", (1536, 192))
            lm[f"{prefix}.weight_scale"] = ("BF16", (1536, 48))
            lm[f"{prefix}.weight_shape"] = ("I32", (2,))
        lm[f"model.language_model.layers.{i}.input_layernorm.weight"] = ("BF16", (1536,))
    towers = {
        "model.language_model.embed_tokens.weight": ("BF16", (262144, 1536)),
        "model.vision_tower.encoder.layers.0.mlp.fc1.weight": ("BF16", (4304, 1152)),
        "model.vision_tower.encoder.layers.0.mlp.fc1.bias": ("BF16", (4304,)),
    }
    for name in extra_16bit:
        towers[f"{name}.weight"] = ("BF16", (1536, 768))
    return model_files(config, {"model-00001-of-00002.safetensors": lm,
                                "model-00002-of-00002.safetensors": towers})


def dense_bf16_model(params_billion: float, *, layers: int = 32) -> dict[str, bytes]:
    """A dense bf16 checkpoint of about `params_billion` parameters, single file (no index),
    with a plain (full-attention) config."""
    hidden = 4096
    per_layer = int(params_billion * 1e9 / layers)
    rows = per_layer // hidden
    tensors = {f"model.layers.{i}.mlp.down_proj.weight": ("BF16", (hidden, rows))
               for i in range(layers)}
    config = {"model_type": "llama", "num_hidden_layers": layers, "num_attention_heads": 32,
              "num_key_value_heads": 8, "hidden_size": hidden, "max_position_embeddings": 131072}
    return model_files(config, {"model.safetensors": tensors}, index=False)
