"""Datasets: JSONL of OpenAI messages and ShareGPT JSON, sampled with a fixed seed; the
run stores the file's digest and the sampled length distribution."""

import hashlib
import json

import pytest

from runners import experiment
from runners.measure import datasets
from runners.workflow import driver
from tests.runners.conftest import benchmark_plan, write_openai_experiment

JSONL = "\n".join([
    json.dumps({"messages": [{"role": "user", "content": "one two three"}], "max_tokens": 5}),
    "",
    json.dumps({"messages": [{"role": "system", "content": "be brief"},
                             {"role": "user", "content": "four five"}]}),
]) + "\n"
SHAREGPT = json.dumps([
    {"id": "a", "conversations": [{"from": "human", "value": "hello there"},
                                  {"from": "gpt", "value": "hi"}]},
    {"id": "b", "conversations": [{"from": "human", "value": "alone"}]},  # one turn: dropped
    {"id": "c", "conversations": [{"from": "human", "value": "a b c d"},
                                  {"from": "gpt", "value": "e"}]},
])


def test_jsonl_and_sharegpt_read_as_chat_entries(tmp_path):
    (tmp_path / "d.jsonl").write_text(JSONL)
    (tmp_path / "s.json").write_text(SHAREGPT)
    entries, digest = datasets.load(tmp_path / "d.jsonl", "jsonl")
    assert [e.max_tokens for e in entries] == [5, None]
    assert digest == hashlib.sha256(JSONL.encode()).hexdigest()
    shared, _ = datasets.load(tmp_path / "s.json", "sharegpt")
    assert [e.messages[0]["content"] for e in shared] == ["hello there", "a b c d"]


@pytest.mark.parametrize("text, words", [
    ("{not json\n", "d.jsonl:1: not JSON"),
    (json.dumps({"prompt": "x"}) + "\n", "d.jsonl:1: needs \"messages\""),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}) + "\n",
     "d.jsonl:1: max_tokens 0 is not a positive integer"),
    ("\n\n", "no usable entries"),
])
def test_a_bad_line_gets_one_clear_error(tmp_path, text, words):
    (tmp_path / "d.jsonl").write_text(text)
    with pytest.raises(datasets.DatasetError, match=words.replace("(", r"\(")):
        datasets.load(tmp_path / "d.jsonl", "jsonl")


def test_the_sample_is_fixed_by_the_seed_and_cycles_when_short():
    entries = [datasets.Entry([{"role": "user", "content": str(i)}]) for i in range(10)]
    a, b = datasets.sample(entries, 5, 1), datasets.sample(entries, 5, 1)
    assert a == b and a != datasets.sample(entries, 5, 2)
    assert len(set(map(id, datasets.sample(entries, 25, 1)))) == 10


def test_a_missing_dataset_is_refused_when_the_experiment_is_read(tmp_path):
    exp = write_openai_experiment(tmp_path, "http://127.0.0.1:9", plan=benchmark_plan(
        toolcall_runs=0) + '\n[benchmark.dataset]\npath = "nope.jsonl"\n')
    with pytest.raises(experiment.ExperimentError, match=r"benchmark.dataset.path: .*nope.jsonl"):
        experiment.load(exp)


def test_a_dataset_run_sends_its_prompts_and_stores_digest_and_lengths(loopback, tmp_path):
    server = loopback()
    (tmp_path / "prompts.jsonl").write_text(JSONL)
    plan = benchmark_plan(decode_lengths=[16, 32], decode_repeats=1, stream_requests=2,
                          stream_tokens=8, concurrency=[2], load_tokens=8, load_batches=2,
                          toolcall_runs=0, quality_suite="none")
    plan += '\n[benchmark.dataset]\npath = "prompts.jsonl"\nsamples = 4\n'
    exp = write_openai_experiment(tmp_path, server.base_url, plan=plan)
    outcome = driver.run_experiment(str(exp), str(tmp_path / "store"))
    folder = tmp_path / "store" / outcome["context"]["run_prefix"]
    load = json.loads((folder / "load.json").read_text())
    block = load["prompt"]["dataset"]
    assert block["sha256"] == hashlib.sha256(JSONL.encode()).hexdigest()
    assert (block["entries"], block["samples"], block["repeats"]) == (2, 4, True)
    assert block["prompt_words"]["n"] == 4
    sent = [b["messages"][-1]["content"] for b in server.bodies]
    assert sent.count("one two three") + sent.count("four five") >= 4 + 2
    assert any(b["max_tokens"] == 5 for b in server.bodies)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["load_profile"]["dataset"]["sha256"] == block["sha256"]
