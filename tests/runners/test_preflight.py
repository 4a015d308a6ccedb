"""Preflight against a fake Hub on 127.0.0.1: ignore-list agreement, memory fit, KV sizing,
and clear one-line failures. No test touches the network."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runners.checks import preflight
from tests.runners.experiments import sagemaker_experiment
from tests.runners.hub_fixtures import (GEMMA_LIKE_TEXT, FakeHub, LoopbackHub, dense_bf16_model,
                                        w4a16_model)

REPO = "acme/gemma-like-w4a16"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hub():
    return FakeHub()


@pytest.fixture
def served(hub):
    with LoopbackHub(hub) as loopback:
        yield loopback


def test_a_consistent_w4a16_checkpoint_passes_over_http_reading_headers_only(hub, served):
    hub.add(REPO, w4a16_model(ignore=["re:.*vision_tower.*"]))
    report = preflight.run(sagemaker_experiment(), base_url=served.url)
    assert report["quant_method"] == "compressed-tensors"
    assert report["ignore_list"] == "checked"
    assert report["tensors"] == 29
    memory = report["memory"]
    assert memory["instance_type"] == "ml.g6.xlarge"
    assert memory["usable_gib"] == pytest.approx(22.49 * 0.9, abs=1e-3)
    # Only the config, the index and the two headers' length + JSON were asked for.
    shard_reads = [(path.rsplit("/", 1)[1], rng) for path, rng in hub.log if "00002" in path
                   or "00001" in path]
    assert [rng for _, rng in shard_reads if rng == "bytes=0-7"] == ["bytes=0-7"] * 2
    assert all(rng is not None and rng.startswith("bytes=") for _, rng in shard_reads)
    assert len(hub.log) == 1 + 2 + 2 * 2  # the model API (gated?), then the files


def test_range_headers_survive_the_redirect_to_the_weights_cdn():
    hub = FakeHub(redirect_weights=True)
    hub.add(REPO, w4a16_model(ignore=["re:.*vision_tower.*"]))
    with LoopbackHub(hub) as served:
        report = preflight.run(sagemaker_experiment(), base_url=served.url)
    assert report["tensors"] == 29
    cdn = [(path, rng) for path, rng in hub.log if path.startswith("/cdn/")]
    assert len(cdn) == 4 and all(rng and rng.startswith("bytes=") for _, rng in cdn)


def test_a_16bit_linear_missing_from_the_ignore_list_stops_the_run(hub, served):
    """The seed article's failure: vision_embedder.patch_dense left at 16-bit, not ignored."""
    hub.add(REPO, w4a16_model(ignore=["re:.*vision_tower.*"],
                              extra_16bit=("model.vision_embedder.patch_dense",)))
    with pytest.raises(preflight.PreflightError) as caught:
        preflight.run(sagemaker_experiment(), base_url=served.url)
    message = str(caught.value)
    assert "model.vision_embedder.patch_dense" in message
    assert "missing from quantization_config.ignore" in message
    assert "\n" not in message


def test_an_empty_ignore_list_names_the_unlisted_tower(hub):
    hub.add(REPO, w4a16_model(ignore=[]))
    with pytest.raises(preflight.PreflightError, match="vision_tower.encoder.layers.0.mlp.fc1"):
        preflight.run(sagemaker_experiment(), fetch=hub.fetch)


def test_a_packed_layer_named_in_the_ignore_list_is_refused(hub):
    hub.add(REPO, w4a16_model(ignore=["re:.*vision_tower.*", "re:.*q_proj$"]))
    with pytest.raises(preflight.PreflightError,
                       match=r"2 quantized layer\(s\) are named in quantization_config.ignore"):
        preflight.run(sagemaker_experiment(), fetch=hub.fetch)


def test_exact_ignore_entries_match_whole_module_names_only():
    tensors = [preflight.Tensor("a.q_proj.weight_packed", "I32", (4, 4), 64),
               preflight.Tensor("a.fc.weight", "BF16", (4, 4), 32),
               preflight.Tensor("a.fc2.weight", "BF16", (4, 4), 32)]
    config = {"quant_method": "compressed-tensors", "ignore": ["a.fc"]}
    (problem,) = preflight.ignore_list_problems(config, tensors)
    assert "e.g. a.fc2;" in problem
    assert preflight.ignore_list_problems({"quant_method": "gptq"}, tensors) == []
    assert preflight.ignore_list_problems(None, tensors) == []


def test_embeddings_norms_and_lm_head_are_not_linears_to_ignore():
    tensors = [preflight.Tensor("m.layers.0.q.weight_packed", "I32", (4, 4), 64),
               preflight.Tensor("m.embed_tokens.weight", "BF16", (10, 4), 80),
               preflight.Tensor("m.embed_tokens_per_layer.weight", "BF16", (10, 4), 80),
               preflight.Tensor("lm_head.weight", "BF16", (10, 4), 80),
               preflight.Tensor("m.norm.weight", "BF16", (4,), 8)]
    assert preflight.ignore_list_problems({"quant_method": "compressed-tensors"}, tensors) == []


def test_a_model_too_large_for_the_smallest_pool_stops_with_the_figures(hub, served):
    hub.add(REPO, dense_bf16_model(14))  # ~26 GiB of bf16 weights, one 24 GB L4
    with pytest.raises(preflight.PreflightError) as caught:
        preflight.run(sagemaker_experiment(), base_url=served.url)
    message = str(caught.value)
    assert message.startswith("experiments/sm-test.toml: does not fit ml.g6.xlarge: weights "
                              "26.08 GiB + KV cache 1.00 GiB for max_model_len 8192 > 20.24 GiB")
    # single-file checkpoint: the index 404s and model.safetensors' header is read instead
    assert ("/" + REPO + "/resolve/main/model.safetensors", "bytes=0-7") in hub.log


def test_the_kv_cache_alone_can_make_it_not_fit(hub):
    hub.add(REPO, dense_bf16_model(7))  # 13.04 GiB of weights: fits at 8k context
    assert preflight.run(sagemaker_experiment(), fetch=hub.fetch)["memory"]["kv_cache_gib"] == 1.0
    long_context = sagemaker_experiment(engine__max_model_len=131072)  # 16 GiB of KV
    with pytest.raises(preflight.PreflightError, match="KV cache 16.00 GiB"):
        preflight.run(long_context, fetch=hub.fetch)


def test_fp8_kv_cache_halves_the_estimate(hub):
    hub.add(REPO, dense_bf16_model(7))
    exp = sagemaker_experiment(engine__max_model_len=65536,
                               engine__extra_flags={"kv-cache-dtype": "fp8"})
    assert preflight.run(exp, fetch=hub.fetch)["memory"]["kv_cache_gib"] == 4.0


def test_kv_estimate_honours_sliding_windows_shared_layers_and_global_heads():
    dtype_bytes, length = 2, 8192
    per_sliding = 2 * 256 * 2 * dtype_bytes  # kv_heads x head_dim x (K,V) x bytes
    kv = preflight.kv_cache_estimate({"text_config": GEMMA_LIKE_TEXT}, length, dtype_bytes)
    # layers 0,1,3 sliding (window 512), 2 full; 4 and 5 share earlier layers' cache
    assert kv.bytes == per_sliding * (3 * 512 + 1 * length)
    assert kv.upper_bytes == per_sliding * 6 * length
    assert kv.assumptions == ("last 2 layers share earlier layers' KV cache",)
    gemma4 = {**GEMMA_LIKE_TEXT, "num_kv_shared_layers": 0, "num_global_key_value_heads": 1,
              "global_head_dim": 512, "attention_k_eq_v": True}
    kv4 = preflight.kv_cache_estimate({"text_config": gemma4}, length, dtype_bytes)
    per_full = 1 * 512 * 2 * dtype_bytes
    assert kv4.bytes == per_sliding * 4 * 512 + per_full * 2 * length
    assert "attention_k_eq_v: K and V both counted (an upper bound)" in kv4.assumptions


def test_a_window_without_layer_types_is_assumed_full_and_says_so():
    config = {"num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 1024,
              "sliding_window": 4096}
    kv = preflight.kv_cache_estimate(config, 16384, 2)
    assert kv.bytes == kv.upper_bytes == 4 * 8 * 128 * 2 * 2 * 16384
    assert kv.assumptions == ("sliding_window without layer_types: every layer assumed full",)


def test_tensor_parallel_beyond_the_pool_gpus_is_refused(hub):
    hub.add(REPO, dense_bf16_model(7))
    with pytest.raises(preflight.PreflightError,
                       match="engine.tensor_parallel_size 2 exceeds the 1 GPU"):
        preflight.run(sagemaker_experiment(engine__tensor_parallel_size=2), fetch=hub.fetch)


def test_context_beyond_the_model_limit_is_refused(hub):
    files = dense_bf16_model(1)
    config = json.loads(files["config.json"])
    files["config.json"] = json.dumps({**config, "max_position_embeddings": 4096}).encode()
    hub.add(REPO, files)
    with pytest.raises(preflight.PreflightError, match="exceeds the model's "
                                                       "max_position_embeddings 4096"):
        preflight.run(sagemaker_experiment(), fetch=hub.fetch)


@pytest.mark.parametrize("status, expected", [
    (401, "is gated or private (HTTP 401); the endpoint could not download it either"),
    (404, "no config.json at http://127.0.0.1:"),
    (500, "cannot read config.json from http://127.0.0.1:"),
])
def test_hub_errors_are_one_clear_line(hub, served, status, expected):
    hub.status[REPO] = status
    with pytest.raises(preflight.PreflightError) as caught:
        preflight.run(sagemaker_experiment(), base_url=served.url)
    assert expected in str(caught.value)
    assert "Traceback" not in str(caught.value)


def test_an_unreachable_hub_is_one_clear_line():
    def refuse(url, headers, max_bytes):
        raise preflight.FetchError(url, None, "Connection refused")

    with pytest.raises(preflight.PreflightError, match="cannot read config.json from "
                                                       "https://huggingface.co: Connection refused"):
        preflight.run(sagemaker_experiment(), fetch=refuse, base_url="https://huggingface.co")


def test_a_header_length_beyond_the_format_limit_is_not_downloaded(hub):
    files = dense_bf16_model(1)
    files["model.safetensors"] = (10**12).to_bytes(8, "little")
    hub.add(REPO, files)
    with pytest.raises(preflight.PreflightError, match="declares a 1000000000000-byte header"):
        preflight.run(sagemaker_experiment(), fetch=hub.fetch)
    assert hub.log[-1][1] == "bytes=0-7"


def _cli(served, *args):
    env = {**os.environ, "HF_ENDPOINT": served.url}
    return subprocess.run([sys.executable, "-m", "runners", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_cli_preflight_reports_the_fit(hub, served):
    hub.add("xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4",
            w4a16_model(ignore=["re:.*vision_tower.*"]))
    out = _cli(served, "preflight", "e2b-emb4-ml-g6")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("ok     xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4: 29 tensors, "
                        "ignore list checked")
    assert lines[1].startswith("ok     fits ml.g6.xlarge: weights 0.77 GiB + KV 0.02 GiB "
                               "(max_model_len 8192) <= 20.24 GiB usable")
    assert lines[2] == "note   last 2 layers share earlier layers' KV cache"


def test_cli_preflight_failure_is_one_line(hub, served):
    hub.add("google/gemma-4-E2B-it-qat-w4a16-ct", w4a16_model(ignore=[]))
    out = _cli(served, "preflight", "e2b-qat-w4a16-ml-g6")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("preflight failed: google/gemma-4-E2B-it-qat-w4a16-ct: 1 Linear "
                           "layer(s) stored at 16-bit are missing from quantization_config.ignore")


def test_a_gated_model_without_a_token_stops_in_one_line_and_with_one_is_read_with_it(
        hub, monkeypatch):
    for key in preflight.TOKEN_ENV:
        monkeypatch.delenv(key, raising=False)
    hub.add(REPO, w4a16_model(ignore=["re:.*vision_tower.*"]))
    hub.gated[REPO], hub.token = "manual", "hf_test_token"
    with pytest.raises(preflight.PreflightError) as caught:
        preflight.run(sagemaker_experiment(), fetch=hub.fetch)
    assert str(caught.value).startswith(f"{REPO} is gated (manual) on the Hub and no token "
                                        "is set: accept its licence there, then set HF_TOKEN")
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    report = preflight.run(sagemaker_experiment(), fetch=hub.fetch)
    assert report["access"] == {"gated": "manual", "token": "set"}
    assert set(hub.auth[-6:]) == {"Bearer hf_test_token"}  # every read carried it


def test_an_ungated_model_reports_no_gate_and_whether_a_token_is_set(hub, monkeypatch):
    for key in preflight.TOKEN_ENV:
        monkeypatch.delenv(key, raising=False)
    hub.add(REPO, w4a16_model(ignore=["re:.*vision_tower.*"]))
    report = preflight.run(sagemaker_experiment(), fetch=hub.fetch)
    assert report["access"] == {"gated": False, "token": "not set"}
