"""How accurate is the benchmark harness itself? Measured / truth, side by side.

Starts the loopback server (benchmarks/loopback_server.py) in its own process with a
programmed TTFT and per-token gap, then measures it with the runners' own client and
phase code: the decode fit (16 / 512 forced tokens), and streamed load at concurrency
1 to 64. Prints ratios to the truth, the client's CPU time per request, its scheduling lag
(actual minus intended send time) and the server's own lateness, so a harness that
became the bottleneck would show. With --peer, runs the same loads with GuideLLM from
.cache/peer-venv (see benchmarks/peer_guidellm.py) and prints its figures beside ours.

With --capacity, the harness's own ceiling: open-loop constant-rate levels (the `rate`
load profile, runners/measure/load/rate.py) against a no-op loopback server (no TTFT, no
token gap), rising until a level no longer sends and completes within 5% of its target
rate; with --peer too, GuideLLM's constant profile at the same rates beside it.

    .venv/bin/python -m benchmarks.harness_accuracy [--peer] [--capacity]
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from benchmarks.loopback_server import Truth
from runners.backends.openai_http import OpenAIHTTPClient
from runners.measure import phases as measure
from runners.measure import stats
from runners.measure.load import burst as load_burst
from runners.measure.load import concurrency as load_concurrency
from runners.measure.load import level as load_level
from runners.measure.load import rate as load_rate
from runners.measure.recorder import Recorder

CONCURRENCY = (1, 2, 4, 8, 16, 32, 64)
CAPACITY_RATES = (25, 50, 100, 200, 400, 600, 800, 1000, 1200, 1600, 2000, 2400, 3200)  # req/s
CAPACITY_SECONDS = 5.0  # per level: 1 s warm-up and 0.5 s cool-down cut
CAPACITY_TOKENS = 16
CAPACITY_TOLERANCE = 0.05
CAPACITY_IN_FLIGHT = 256
LOAD_TOKENS = 64
BATCHES = 3


@contextmanager
def loopback_process(truth: Truth, fill: bool = False):
    cmd = [sys.executable, "-m", "benchmarks.loopback_server", "--ttft-s", str(truth.ttft_s),
           "--gap-s", str(truth.gap_s), "--tokens-per-chunk", str(truth.tokens_per_chunk)]
    proc = subprocess.Popen(cmd + (["--fill"] if fill else []), stdout=subprocess.PIPE,
                            text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(10)


def server_lateness(client: OpenAIHTTPClient) -> dict:
    return client.get_json("/stats")[1]


def decode_accuracy(client: OpenAIHTTPClient, truth: Truth) -> None:
    rec = Recorder(None, "decode", client)
    times: dict[int, list[float]] = {16: [], 512: []}
    for i in range(5):
        for n in ((16, 512) if i % 2 == 0 else (512, 16)):
            reply = rec.send(measure.forced_ask(n, stream=False))
            times[n].append(reply.last_s - reply.send_s)
    rate, intercept = stats.decode_fit(16, 512, times[16], times[512])
    print(f"decode  rate {rate:8.2f} tokens/s  truth {1 / truth.gap_s:8.2f}  "
          f"ratio {rate * truth.gap_s:.4f}")
    truth_icpt = truth.ttft_s - truth.gap_s
    print(f"        intercept {intercept * 1000:6.2f} ms  truth {truth_icpt * 1000:6.2f} ms  "
          f"error {(intercept - truth_icpt) * 1000:+.2f} ms")


def _start_threads(pool: ThreadPoolExecutor, count: int) -> None:
    """Make the pool start all its threads now: each task waits until all are running."""
    barrier = threading.Barrier(count + 1)
    for _ in range(count):
        pool.submit(barrier.wait)
    barrier.wait()


def load_accuracy(client: OpenAIHTTPClient, truth: Truth) -> list[dict]:
    ask = measure.forced_ask(LOAD_TOKENS, stream=True)
    e2el_truth = truth.e2el_s(LOAD_TOKENS)
    rows = []
    print(f"\nload: {LOAD_TOKENS}-token streamed replies, {BATCHES} batches per level; truth "
          f"TTFT {truth.first_content_s() * 1000:.1f} ms, TPOT {truth.tpot_s(LOAD_TOKENS) * 1000:.3f}"
          f" ms, E2EL {e2el_truth * 1000:.1f} ms")
    print(f"{'conc':>4} {'ok':>4} {'tok/s':>8} {'tok/s ratio':>11} {'TTFT err ms':>11} "
          f"{'TPOT ratio':>10} {'E2EL ratio':>10} {'E2EL +ms':>8} {'cpu ms/req usr/sys':>18} "
          f"{'sched lag p50/max ms':>20} {'server late max ms':>18}")
    with ThreadPoolExecutor(max_workers=max(CONCURRENCY)) as pool:
        _start_threads(pool, max(CONCURRENCY))  # thread start-up is not per-request CPU
        for c in CONCURRENCY:
            rec = Recorder(None, "load", client)
            client.prepare(c)
            server_lateness(client)
            cpu0 = resource.getrusage(resource.RUSAGE_SELF)  # microsecond resolution
            replies: list = []
            busy = 0.0
            for _ in range(BATCHES):
                intended, done = load_burst.send_batch(rec, ask, c, pool)
                busy += max(r.last_s for r in done) - intended
                replies += done
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)
            user_ms = (cpu1.ru_utime - cpu0.ru_utime) * 1000 / len(replies)
            sys_ms = (cpu1.ru_stime - cpu0.ru_stime) * 1000 / len(replies)
            late = server_lateness(client)
            m = measure.stream_metrics(replies)
            ok = [r for r in replies if r.ok]
            rate = sum(r.completion_tokens for r in ok) / busy
            rate_truth = c * LOAD_TOKENS / e2el_truth
            lag = [r.send_s - r.intended_s for r in replies]
            row = {"concurrency": c, "ok": len(ok), "tokens_per_s": rate,
                   "tokens_per_s_ratio": rate / rate_truth,
                   "ttft_error_ms": (m["ttft_s"]["p50"] - truth.first_content_s()) * 1000,
                   "tpot_ratio": m["tpot_s"]["p50"] / truth.tpot_s(LOAD_TOKENS),
                   "e2el_ratio": m["e2el_s"]["p50"] / e2el_truth,
                   "e2el_excess_ms": (m["e2el_s"]["p50"] - e2el_truth) * 1000,
                   "client_user_cpu_ms": user_ms, "client_sys_cpu_ms": sys_ms,
                   "lag_p50_ms": stats.percentile(lag, 50) * 1000, "lag_max_ms": max(lag) * 1000,
                   "server_late_max_ms": late["late_max_s"] * 1000,
                   "itl_p50_ms": m["itl_s"]["p50"] * 1000,
                   "ttft_p50_ms": m["ttft_s"]["p50"] * 1000,
                   "tpot_p50_ms": m["tpot_s"]["p50"] * 1000}
            rows.append(row)
            print(f"{c:>4} {len(ok):>4} {rate:8.1f} {row['tokens_per_s_ratio']:11.4f} "
                  f"{row['ttft_error_ms']:+11.2f} {row['tpot_ratio']:10.4f} "
                  f"{row['e2el_ratio']:10.4f} {row['e2el_excess_ms']:+8.2f} "
                  f"{user_ms:8.3f}/{sys_ms:<9.3f} "
                  f"{row['lag_p50_ms']:9.2f}/{row['lag_max_ms']:<9.2f} "
                  f"{row['server_late_max_ms']:18.2f}")
    return rows


STEADY_CONCURRENCY = 64
STEADY_SECONDS = 6.0  # 1 s warm-up and 1 s cool-down cut


def steady_accuracy(client: OpenAIHTTPClient, truth: Truth) -> dict:
    """The concurrency profile (exactly c in flight, as GuideLLM's concurrent profile) at
    c=64: TTFT error and throughput against the truth, like for like with the peer."""
    ask = measure.forced_ask(LOAD_TOKENS, stream=True)
    c = STEADY_CONCURRENCY
    with ThreadPoolExecutor(max_workers=c) as pool:
        _start_threads(pool, c)
        rec = Recorder(None, "load", client)
        server_lateness(client)
        window = load_level.Window(time.perf_counter() + 0.05, STEADY_SECONDS, 1.0, 1.0)
        figures, _ = load_concurrency.run_level(rec, lambda i: ask, c, window, pool)
    late = server_lateness(client)
    e2el_truth = truth.e2el_s(LOAD_TOKENS)
    row = {"concurrency": c, "requests": figures["requests"],
           "ttft_error_ms": (figures["ttft_s"]["p50"] - truth.first_content_s()) * 1000,
           "tokens_per_s_ratio": figures["output_tokens_per_s"] / (c * LOAD_TOKENS / e2el_truth),
           "tpot_ratio": figures["tpot_s"]["p50"] / truth.tpot_s(LOAD_TOKENS),
           "server_late_max_ms": late["late_max_s"] * 1000}
    print(f"\nsteady: exactly {c} in flight for {STEADY_SECONDS:g} s (1 s cut each end): "
          f"{row['requests']} requests, TTFT error {row['ttft_error_ms']:+.2f} ms, "
          f"TPOT ratio {row['tpot_ratio']:.4f}, tokens/s ratio {row['tokens_per_s_ratio']:.4f}, "
          f"server late max {row['server_late_max_ms']:.1f} ms")
    return row


def sustained(target: float, sent_per_s: float | None, done_per_s: float | None,
              failed: int) -> bool:
    """The harness held `target`: it sent and completed within 5% of it, with no failure."""
    return (failed == 0 and sent_per_s is not None and done_per_s is not None
            and min(sent_per_s, done_per_s) >= (1 - CAPACITY_TOLERANCE) * target)


def capacity(client: OpenAIHTTPClient) -> list[dict]:
    """Rising constant-rate levels until one is not sustained; the rows of every level."""
    ask = measure.forced_ask(CAPACITY_TOKENS, stream=True)
    rows = []
    print(f"\ncapacity: open-loop constant arrivals, {CAPACITY_TOKENS}-token streams from a "
          f"no-op server, {CAPACITY_SECONDS:g} s per level (1 s warm-up, 0.5 s cool-down "
          f"cut); sustained = sent and completed within {CAPACITY_TOLERANCE:.0%} of target")
    print(f"{'target/s':>8} {'sent/s':>8} {'done/s':>8} {'failed':>6} {'lag p50/p99 ms':>15} "
          f"{'TTFT p50 ms':>11} {'cpu ms/req':>10} {'held':>5}")
    with ThreadPoolExecutor(max_workers=CAPACITY_IN_FLIGHT) as pool:
        _start_threads(pool, CAPACITY_IN_FLIGHT)
        client.prepare(64)
        for target in CAPACITY_RATES:
            rec = Recorder(None, "load", client)
            cpu0 = resource.getrusage(resource.RUSAGE_SELF)
            window = load_level.Window(time.perf_counter() + 0.05, CAPACITY_SECONDS, 1.0, 0.5)
            figures, replies = load_rate.run_level(rec, lambda i: ask, float(target), window,
                                                   pool, arrival="constant", burstiness=1.0,
                                                   seed=0)
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)
            cpu_ms = ((cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)) \
                * 1000 / len(replies)
            failed = figures["requests"] - figures["ok"]
            held = sustained(target, figures["sent_per_s"], figures["requests_per_s"], failed)
            lag, ttft = figures["scheduling_lag_s"], figures["ttft_s"]
            rows.append({"target_per_s": target, "sent_per_s": figures["sent_per_s"],
                         "done_per_s": figures["requests_per_s"], "failed": failed,
                         "lag_p50_ms": lag["p50"] * 1000, "lag_p99_ms": lag["p99"] * 1000,
                         "ttft_p50_ms": ttft["p50"] * 1000 if ttft else None,
                         "client_cpu_ms": cpu_ms, "sustained": held})
            print(f"{target:>8} {figures['sent_per_s']:8.1f} {figures['requests_per_s']:8.1f} "
                  f"{failed:>6} {lag['p50'] * 1000:7.2f}/{lag['p99'] * 1000:<7.2f} "
                  f"{rows[-1]['ttft_p50_ms'] or 0:11.2f} {cpu_ms:10.3f} {str(held):>5}")
            if not held:
                break
    best = max((r["target_per_s"] for r in rows if r["sustained"]), default=None)
    print(f"highest rate sustained: {best} requests/s")
    return rows


def recv_floor(gap_s: float, chunks: int = LOAD_TOKENS, requests: int = 10) -> None:
    """The least CPU any Python client spends on a stream: a bare recv loop (no HTTP, no
    parsing) woken once per chunk at the same spacing. Client CPU per request above reads
    against this, not against zero."""
    ours, theirs = socket.socketpair()
    total = chunks * requests

    def send() -> None:
        for _ in range(total):
            time.sleep(gap_s)
            theirs.send(b"data: {}\n\n")
    sender = threading.Thread(target=send)
    before = resource.getrusage(resource.RUSAGE_THREAD)
    sender.start()
    seen = 0
    while seen < total:
        seen += ours.recv(65536).count(b"\n\n")
    after = resource.getrusage(resource.RUSAGE_THREAD)
    sender.join()
    ours.close()
    theirs.close()
    cpu_ms = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
    print(f"\nfloor: a bare recv loop woken every {gap_s * 1000:g} ms spends "
          f"{cpu_ms / requests:.3f} ms CPU (user+sys) per {chunks}-chunk request")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument("--peer", action="store_true", help="also run GuideLLM side by side")
    parser.add_argument("--capacity", action="store_true",
                        help="only the harness's highest sustained request rate")
    parser.add_argument("--json", help="write the figures to this file too")
    args = parser.parse_args(argv)
    if args.capacity:
        return capacity_main(args)
    truth = Truth(ttft_s=args.ttft_ms / 1000, gap_s=args.gap_ms / 1000)
    print(f"truth: TTFT {args.ttft_ms} ms, {args.gap_ms} ms per token, 1 token per chunk; "
          f"server in its own process on 127.0.0.1")
    with loopback_process(truth, fill=args.peer) as base_url:
        client = OpenAIHTTPClient(base_url, "loopback")
        decode_accuracy(client, truth)
        rows = load_accuracy(client, truth)
        steady = steady_accuracy(client, truth)
        recv_floor(truth.gap_s)
        client.close()
        peer_rows = None
        if args.peer:
            from benchmarks import peer_guidellm

            peer_rows = peer_guidellm.run_side_by_side(base_url, truth, rows, LOAD_TOKENS)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"ours": rows, "steady": steady, "peer": peer_rows}, fh, indent=2)
    return 0


def capacity_main(args) -> int:
    noop = Truth(ttft_s=0.0, gap_s=0.0)
    with loopback_process(noop, fill=args.peer) as base_url:
        client = OpenAIHTTPClient(base_url, "loopback")
        rows = capacity(client)
        client.close()
        peer_rows = None
        if args.peer:
            from benchmarks import peer_guidellm

            peer_rows = peer_guidellm.capacity_side_by_side(
                base_url, [r["target_per_s"] for r in rows], CAPACITY_TOKENS, rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"capacity": rows, "peer_capacity": peer_rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
