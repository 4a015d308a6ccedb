"""GuideLLM (vllm-project/guidellm, from PyPI) on the same loopback server, for a side by
side with our harness. It lives in its own venv (.cache/peer-venv) so its dependencies
(transformers, torch, ...) never enter ours. Offline, it needs a tokenizer on disk: a
word-level one is built there, which counts the loopback server's "w17 " words exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.loopback_server import Truth

ROOT = Path(__file__).resolve().parent.parent
PEER_VENV = ROOT / ".cache" / "peer-venv"
PEER_PY = PEER_VENV / "bin" / "python"
GUIDELLM = "guidellm==0.8.1"
SECONDS_PER_LEVEL = 4

TOKENIZER_SCRIPT = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
vocab = {"[UNK]": 0, "[PAD]": 1, "<s>": 2, "</s>": 3}
for i in range(8192):
    vocab[f"w{i}"] = len(vocab)
tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                        bos_token="<s>", eos_token="</s>").save_pretrained(sys.argv[1])
"""


def ensure_installed() -> None:
    if not PEER_PY.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    if subprocess.run([str(PEER_PY), "-c", "import guidellm"]).returncode != 0:
        print(f"installing {GUIDELLM} into {PEER_VENV} (a few minutes)...", flush=True)
        subprocess.run([str(PEER_PY), "-m", "pip", "install", "-q", GUIDELLM], check=True)


def run_guidellm(base_url: str, concurrency: list[int], output_tokens: int,
                 work: Path, *, kind: str = "concurrent", rates: list[float] | None = None
                 ) -> dict:
    """GuideLLM's `kind` profile, one benchmark per concurrency ("concurrent": its
    `streams`) or per rate ("constant": its `rate`, requests/s; AsyncProfileArgs)."""
    tokenizer = work / "tokenizer"
    subprocess.run([str(PEER_PY), "-c", TOKENIZER_SCRIPT, str(tokenizer)], check=True)
    scenario = {
        "spec": {
            "backend": {"kind": "openai_http", "target": base_url, "model": "loopback",
                        "request_format": "/v1/chat/completions"},
            "profile": {"kind": kind},
            "data": [{"kind": "synthetic_text", "prompt_tokens": 16,
                      "output_tokens": output_tokens}],
            "constraints": [{"kind": "max_duration", "seconds": SECONDS_PER_LEVEL}],
        },
        "benchmarks": [{"profile.streams": c} for c in concurrency] if kind == "concurrent"
        else [{"profile.rate": r} for r in rates or []],
    }
    (work / "scenario.json").write_text(json.dumps(scenario))
    out = work / "guidellm.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [str(PEER_VENV / "bin" / "guidellm"), "run", "-c", str(work / "scenario.json"),
         "--tokenizer", f"kind=huggingface_auto,model={tokenizer}",
         "--output", f"kind=json,path={out}", "--disable-progress", "--disable-console"],
        capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"guidellm failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.read_text())


def _median(metrics: dict, name: str) -> float:
    return metrics[name]["successful"]["median"]


def run_side_by_side(base_url: str, truth: Truth, ours: list[dict], tokens: int) -> list[dict]:
    ensure_installed()
    levels = [row["concurrency"] for row in ours]
    with tempfile.TemporaryDirectory() as tmp:
        report = run_guidellm(base_url, levels, tokens, Path(tmp))
    e2el_truth = truth.e2el_s(tokens)
    print(f"\nside by side with GuideLLM 0.8.1 (its concurrent profile: {SECONDS_PER_LEVEL} s "
          "of closed-loop streams per level; ours: batches sent together). Ratios to truth; "
          "GuideLLM's TPOT counts the first token too, so its truth is E2EL / tokens.")
    print(f"{'conc':>4} | {'TTFT err ms ours/peer':>21} | {'TPOT ratio ours/peer':>20} | "
          f"{'ITL ratio ours/peer':>19} | {'E2EL ratio ours/peer':>20} | "
          f"{'tok/s ratio ours/peer':>21} | {'peer reqs':>9}")
    rows = []
    for row, bench in zip(ours, report["benchmarks"]):
        m, c = bench["metrics"], row["concurrency"]
        peer = {
            "concurrency": c,
            "requests": m["request_latency"]["successful"]["count"],
            "ttft_error_ms": _median(m, "time_to_first_token_ms") - truth.first_content_s() * 1e3,
            "tpot_ratio": _median(m, "time_per_output_token_ms") / (e2el_truth * 1e3 / tokens),
            "itl_ratio": _median(m, "inter_token_latency_ms") / (truth.gap_s * 1e3),
            "e2el_ratio": _median(m, "request_latency") / e2el_truth,
            "tokens_per_s_ratio": m["output_tokens_per_second"]["successful"]["mean"]
            / (c * tokens / e2el_truth),
        }
        rows.append(peer)
        print(f"{c:>4} | {row['ttft_error_ms']:+9.2f} / {peer['ttft_error_ms']:+9.2f} | "
              f"{row['tpot_ratio']:8.4f} / {peer['tpot_ratio']:8.4f} | "
              f"{row['itl_p50_ms'] / (truth.gap_s * 1e3):8.4f} / {peer['itl_ratio']:8.4f} | "
              f"{row['e2el_ratio']:8.4f} / {peer['e2el_ratio']:8.4f} | "
              f"{row['tokens_per_s_ratio']:9.4f} / {peer['tokens_per_s_ratio']:9.4f} | "
              f"{peer['requests']:9.0f}")
    return rows


def capacity_side_by_side(base_url: str, rates: list[float], tokens: int,
                          ours: list[dict]) -> list[dict]:
    """GuideLLM's constant-rate profile at our capacity levels' rates: its achieved
    requests/s (the successful requests' rate over its measurement window)."""
    ensure_installed()
    with tempfile.TemporaryDirectory() as tmp:
        report = run_guidellm(base_url, [], tokens, Path(tmp), kind="constant", rates=rates)
    print(f"\ncapacity side by side with GuideLLM 0.8.1 (constant profile, "
          f"{SECONDS_PER_LEVEL} s per rate): achieved requests/s, ours / GuideLLM")
    rows = []
    for row, bench in zip(ours, report["benchmarks"]):
        achieved = bench["metrics"]["requests_per_second"]["successful"]["mean"]
        held = achieved >= 0.95 * row["target_per_s"]
        rows.append({"target_per_s": row["target_per_s"], "achieved_per_s": achieved,
                     "sustained": held})
        print(f"{row['target_per_s']:>8} | {row['done_per_s']:8.1f} / {achieved:8.1f} | "
              f"held {row['sustained']} / {held}")
    return rows

