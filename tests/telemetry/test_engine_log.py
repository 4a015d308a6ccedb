"""Engine start-up facts from logs in the engines' real formats (tests/telemetry/fixtures)."""

from __future__ import annotations

import json
from pathlib import Path

from runners import cli
from runners.telemetry import engine_log

FIXTURES = Path(__file__).with_name("fixtures")


def facts(name: str) -> dict:
    text = (FIXTURES / name).read_text()
    return engine_log.parse(engine_log.read_file_items(text), f"engine log: {name}")


def test_sagemaker_cloudwatch_log_gives_every_startup_fact():
    f = facts("vllm-sagemaker-cloudwatch.log")
    assert f["engine"] == "vllm" and f["vllm_version"] == "0.30.0"
    assert f["model"] == "/opt/ml/model"
    assert f["non_default_args"]["max_model_len"] == 4096
    assert (f["weights_gib"], f["load_s"]) == (2.86, 66.190052)
    assert f["kv_cache_tokens"] == 1_209_977
    assert (f["max_model_len"], f["max_concurrency"]) == (4096, 295.41)
    assert f["available_kv_gib"] == 14.71
    assert (f["torch_compile_s"], f["engine_init_s"]) == (21.43, 43.4)
    assert (f["cuda_graph_s"], f["cuda_graph_gib"]) == (11.0, 0.48)
    assert f["api_ready_at"] == "2026-10-12T00:18:59.010Z"
    assert f["first_ping_200_at"] == "2026-10-12T00:19:04.012Z"
    assert f["first_request"]["path"] == "/invocations"
    assert f["first_request"]["at"] == "2026-10-12T00:22:31.504Z"
    # each fact names its line and the source format it was read with
    assert f["found"]["weights_gib"]["format"] == "Model loading took %s GiB memory and %.6f seconds"
    assert f["found"]["kv_cache_tokens"]["line"] == 8
    # V1 logs peak activation only at DEBUG: missing, with the reason, not guessed
    assert f["peak_activation_gib"] is None
    assert "DEBUG" in f["missing"]["peak_activation_gib"]


def test_periodic_stats_lines():
    rows = facts("vllm-sagemaker-cloudwatch.log")["stats"]
    assert rows[1] == {"at": "2026-10-12T00:22:50.002Z", "engine_index": 0,
                       "prompt_tokens_per_s": 48.0, "generation_tokens_per_s": 402.3,
                       "running": 16, "waiting": 0, "preemptions": None,
                       "kv_cache_usage_pct": 0.4, "prefix_cache_hit_pct": 93.8}
    assert engine_log.stats_summary(rows)["peak_generation_tokens_per_s"] == 402.3


def test_older_formats_ansi_and_no_cloudwatch_prefix():
    f = facts("vllm-older-formats.log")
    assert f["vllm_version"] == "0.9.2" and f["model"] == "google/gemma-3-4b-it"
    assert f["weights_gib"] == 2.8875 and f["load_s"] is None
    assert f["kv_cache_tokens"] == 62_608 and f["max_concurrency"] == 61.14
    # the INFO line says 5.13, the later DEBUG repr 0.79: the last one read counts
    assert f["peak_activation_gib"] == 0.79
    assert f["found"]["kv_cache_tokens"]["at"] == "09-28 21:12:44"


def test_unknown_format_is_reported_missing_with_the_line_never_guessed():
    f = facts("vllm-unknown-format.log")
    assert f["weights_gib"] is None and f["load_s"] is None
    assert "line 2" in f["missing"]["weights_gib"]
    assert "Model loading took 2.86 GiB of weights" in f["missing"]["weights_gib"]
    # the newest releases log KV size and concurrency on one line: both read
    assert f["kv_cache_tokens"] == 1_209_977 and f["max_concurrency"] == 295.41


def test_llama_cpp_startup_lines():
    f = facts("llama-cpp-startup.log")
    assert f["engine"] == "llama.cpp" and f["model"] == "Gemma 3 270m It"
    assert f["n_ctx_train"] == 32768 and f["n_ctx"] == 2048
    assert f["kv_cache_tokens"] == 2048 and f["kv_cache_mib"] == 12.0
    assert round(f["weights_gib"], 4) == round(271.81 / 1024, 4)
    assert f["missing"] == {}


def test_last_startup_of_a_reused_log_counts():
    first = (FIXTURES / "vllm-unknown-format.log").read_text().splitlines()
    second = (FIXTURES / "vllm-sagemaker-cloudwatch.log").read_text().splitlines()
    f = engine_log.parse(second + first, "two start-ups")
    assert f["vllm_version"] == "0.99.0" and f["weights_gib"] is None


def test_filter_log_events_json_is_read_with_event_times():
    events = {"events": [
        {"logStreamName": "AllTraffic/i-0abc", "timestamp": 1760228324530,
         "message": "(EngineCore_DP0 pid=301) INFO 10-12 00:18:44 [kv_cache_utils.py:1087] "
                    "GPU KV cache size: 650,783 tokens", "ingestionTime": 1760228325000,
         "eventId": "1"}]}
    items = engine_log.read_file_items(json.dumps(events))
    f = engine_log.parse(items, "json")
    assert f["kv_cache_tokens"] == 650_783
    assert f["found"]["kv_cache_tokens"]["at"] == "2025-10-12T00:18:44.530Z"


def test_memory_block_names_its_source_or_why_none():
    block = engine_log.memory_block(facts("vllm-sagemaker-cloudwatch.log"), "unused")
    assert block["weights_gib"] == 2.86 and block["source"].startswith("engine log:")
    empty = engine_log.memory_block(None, "no engine log: endpoint log group not readable")
    assert empty["kv_cache_tokens"] is None and empty["missing"].startswith("no engine log")


def test_cli_engine_log(capsys):
    assert cli.main(["engine-log", str(FIXTURES / "vllm-sagemaker-cloudwatch.log")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kv_cache_tokens"] == 1_209_977 and out["stats"]["lines"] == 2


def test_cli_engine_log_bad_input_is_one_line(tmp_path, capsys):
    other = tmp_path / "notes.txt"
    other.write_text("nothing from an engine here\n")
    assert cli.main(["engine-log", str(other)]) == 2
    assert cli.main(["engine-log", str(tmp_path / "absent.log")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)


def test_the_version_banner_with_and_without_the_logo():
    """vllm/entrypoints/utils.py log_version_and_model: the logo (one message of several
    lines, so CloudWatch keeps it in one event) or, with VLLM_DISABLE_LOG_LOGO, one line."""
    logo = ("(APIServer pid=1) INFO 12-01 10:00:00 [utils.py:299] \n"
            "       █     █     █▄   ▄█\n"
            " ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.30.0\n"
            "  █▄█▀ █     █     █     █  model   google/gemma-4-E2B-it\n"
            "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀\n")
    f = engine_log.parse([{"timestamp_ms": 1796290000000, "message": logo}], "logo")
    assert (f["vllm_version"], f["model"]) == ("0.30.0", "google/gemma-4-E2B-it")
    plain = engine_log.parse(["(APIServer pid=1) INFO 12-01 10:00:00 [utils.py:299] vLLM server "
                              "version 0.30.0, serving model google/gemma-4-E2B-it"], "plain")
    assert (plain["vllm_version"], plain["model"]) == ("0.30.0", "google/gemma-4-E2B-it")


def test_non_default_args_stay_json_ready():
    f = engine_log.parse(["(APIServer pid=1) INFO 12-01 10:00:00 [utils.py:233] non-default "
                          "args: {'model': 'm', 'limit_mm_per_prompt': {'image': 0}, "
                          "'enable_prefix_caching': True, 'allowed_origins': {'b', 'a'}}"], "x")
    assert json.loads(json.dumps(f["non_default_args"])) == {
        "model": "m", "limit_mm_per_prompt": {"image": 0}, "enable_prefix_caching": True,
        "allowed_origins": ["a", "b"]}
