"""The /metrics parser and the sampler around a load level, against a loopback server
serving vLLM's page (fixtures/vllm-metrics.txt, values filled per scrape)."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from runners.backends.openai_http import OpenAIHTTPClient
from runners.telemetry import prometheus

PAGE = (Path(__file__).with_name("fixtures") / "vllm-metrics.txt").read_text()


def page(**values) -> str:
    base = dict(running=0.0, waiting=0.0, kv=0.0, preemptions=0.0, queries=0.0, hits=0.0,
                gen=0.0, ttft_count=0.0, ttft_sum=0.0, itl_count=0.0, itl_sum=0.0)
    base.update(values)
    text = PAGE
    for k, v in base.items():
        text = text.replace("{" + k + "}", repr(float(v)))
    return text


def test_parse_and_figures():
    found = prometheus.figures(prometheus.parse(page(running=3, waiting=2, kv=0.42)))
    assert (found["running"], found["waiting"], found["kv_cache_usage"]) == (3.0, 2.0, 0.42)
    parsed = prometheus.parse(page())
    assert parsed["vllm:time_to_first_token_seconds_bucket"][2][0]["le"] == "+Inf"


def test_older_kv_cache_name_is_read():
    old = page(kv=0.25).replace("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    assert prometheus.figures(prometheus.parse(old))["kv_cache_usage"] == 0.25


class Pages:
    """Each scrape returns the next page; the last one repeats."""

    def __init__(self, pages, status=200):
        self.pages, self.status, self.calls = list(pages), status, 0

    def __call__(self, url):
        self.calls += 1
        return self.status, self.pages[min(self.calls - 1, len(self.pages) - 1)]


def test_sampler_deltas_and_peaks():
    pages = Pages([page(queries=100, hits=0, preemptions=1, ttft_count=4, ttft_sum=0.4,
                        itl_count=100, itl_sum=1.0, gen=0),
                   page(running=16, waiting=3, kv=0.04),
                   page(running=8, waiting=0, kv=0.02, queries=1100, hits=900, preemptions=3,
                        ttft_count=20, ttft_sum=2.0, itl_count=4100, itl_sum=41.0, gen=4096)])
    clock = iter(range(100, 200)).__next__
    sampler = prometheus.Sampler("http://127.0.0.1:1/metrics", every_s=0.01, get=pages,
                                 clock=clock)
    sampler.scrape(); sampler.scrape(); sampler.scrape()  # before, during, after
    r = sampler.result()
    assert (r["running_peak"], r["waiting_peak"], r["kv_cache_usage_pct_peak"]) == (16, 3, 4.0)
    assert r["preemptions"] == 2 and r["prefix_cache_hit_pct"] == 90.0
    assert r["server_ttft_mean_s"] == pytest.approx(1.6 / 16)
    assert r["server_itl_mean_s"] == pytest.approx(40.0 / 4000)
    assert r["generation_tokens"] == 4096 and r["source"].startswith("/metrics http://")


def test_a_server_without_metrics_says_why():
    sampler = prometheus.Sampler("http://127.0.0.1:1/metrics", get=Pages([""], status=404))
    with sampler:
        pass
    assert sampler.result()["missing"] == "no /metrics: http://127.0.0.1:1/metrics answered HTTP 404"


@pytest.fixture
def metrics_server():
    state = {"n": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            state["n"] += 1
            body = page(running=min(state["n"], 4), kv=state["n"] / 100).encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_level_window_scrapes_a_live_page_and_tags_the_level(metrics_server):
    client = OpenAIHTTPClient(f"http://127.0.0.1:{metrics_server.server_port}", "m")
    levels: list[dict] = []
    with prometheus.level_window(client, levels, every_s=0.05):
        threading.Event().wait(0.3)
        levels.append({"concurrency": 4})
    level = levels[0]
    assert level["server"]["samples"] >= 3
    assert level["server"]["running_peak"] == 4
    assert level["window"]["end_s"] > level["window"]["start_s"]


def test_level_window_without_metrics_url_still_records_the_window():
    levels: list[dict] = []
    with prometheus.level_window(object(), levels):
        levels.append({"concurrency": 1})
    assert levels[0]["server"]["missing"].startswith("no /metrics: object reaches no /metrics")
    assert levels[0]["window"]["start_s"] <= levels[0]["window"]["end_s"]
