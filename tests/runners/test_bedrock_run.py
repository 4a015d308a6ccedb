"""A whole run on the Bedrock provider, with a bedrock-runtime stand-in that answers in
Converse shapes (the shapes themselves are checked against botocore in test_aws_clients)."""

import json
from pathlib import Path

from benchmarks.loopback_server import answer_for
from runners.workflow import driver

EXPERIMENT = """
name = "nova-test"
backend = "bedrock"
regions = ["us-east-1"]
[model]
id = "us.amazon.nova-micro-v1:0"
served_name = "nova-micro"
build = "managed"
precision = "managed"
[bedrock]
model_id = "us.amazon.nova-micro-v1:0"
[benchmark]
decode_lengths = [4, 16]
decode_repeats = 2
stream_requests = 2
stream_tokens = 8
concurrency = [1, 2]
load_tokens = 8
load_batches = 1
toolcall_runs = 2
"""


class FakeBedrockRuntime:
    """Answers right, never longer than asked, and never forced (Bedrock cannot be)."""

    def _content(self, kwargs):
        last = kwargs["messages"][-1]["content"]
        if kwargs.get("toolConfig") and "text" in last[0]:
            return [{"toolUse": {"toolUseId": "t1", "name": "count_ids",
                                 "input": {"op": ">=", "value": 10}}}]
        if "toolResult" in last[0]:
            return [{"text": "The tool counted 8"}]
        prompt = last[0]["text"]
        words = answer_for({"messages": [{"role": "user", "content": prompt}]})
        if prompt.startswith("Write a long story"):
            words = " ".join(f"w{i}" for i in range(kwargs["inferenceConfig"]["maxTokens"] // 2))
        return [{"text": words}]

    def converse(self, **kwargs):
        content = self._content(kwargs)
        tokens = len((content[0].get("text") or "x").split())
        return {"output": {"message": {"role": "assistant", "content": content}},
                "stopReason": "tool_use" if "toolUse" in content[0] else "end_turn",
                "usage": {"inputTokens": 10, "outputTokens": tokens, "totalTokens": 10 + tokens}}

    def converse_stream(self, **kwargs):
        text = self._content(kwargs)[0]["text"]
        events = [{"messageStart": {"role": "assistant"}}]
        events += [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": w + " "}}}
                   for w in text.split()]
        events += [{"messageStop": {"stopReason": "end_turn"}},
                   {"metadata": {"usage": {"inputTokens": 10, "outputTokens": len(text.split())}}}]
        return {"stream": iter(events)}


def test_bedrock_run_end_to_end(tmp_path):
    exp = tmp_path / "nova-test.toml"
    exp.write_text(EXPERIMENT)
    outcome = driver.run_experiment(str(exp), str(tmp_path),
                                    provider_kwargs={"bedrock_runtime": FakeBedrockRuntime()})
    states = {r["phase"]: r["state"] for r in outcome["results"]}
    assert states.pop("context") == "skipped"  # no context_lengths in this plan
    assert set(states.values()) == {"done"}
    folder = Path(tmp_path) / outcome["context"]["run_prefix"]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["placement"]["region"] == "us-east-1"
    assert (summary["quality"]["correct"], summary["quality"]["total"]) == (40, 40)
    assert summary["toolcall"] == {"supported": True, "runs": 2, "correct": 2, "filter_ok": 2}
    # Replies came back shorter than asked: Bedrock has no forced length, and the run says so.
    assert summary["decode"]["tokens_verified"] is False
    decode = json.loads((folder / "decode.json").read_text())
    assert all(smp["completion_tokens"] < smp["tokens_requested"] for smp in decode["samples"])
    assert summary["stream"]["ttft_s"] is not None
    assert [lvl["requests"] for lvl in summary["load"]] == [1, 2]


def test_report_without_matplotlib_says_charts_were_skipped(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import now raises ImportError
    exp = tmp_path / "nova-test.toml"
    exp.write_text(EXPERIMENT)
    outcome = driver.run_experiment(str(exp), str(tmp_path),
                                    provider_kwargs={"bedrock_runtime": FakeBedrockRuntime()})
    folder = Path(tmp_path) / outcome["context"]["run_prefix"]
    assert "Charts skipped: matplotlib is not installed" in (folder / "report.md").read_text()
    assert not (folder / "charts").exists()
