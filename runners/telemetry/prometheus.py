"""vLLM's Prometheus /metrics page: the parser, and a sampler around one load level.

Names from vllm/v1/metrics/loggers.py (PrometheusStatLogger), as prometheus_client
exposes them (a Counter gains `_total`; a Histogram gives `_bucket`, `_sum`, `_count`),
labelled `engine` and `model_name`:
    vllm:num_requests_running, vllm:num_requests_waiting        gauges
    vllm:kv_cache_usage_perc (0..1; before it: vllm:gpu_cache_usage_perc)
    vllm:num_preemptions_total                                  counter
    vllm:prefix_cache_queries_total, vllm:prefix_cache_hits_total (tokens; before them:
        vllm:gpu_prefix_cache_queries_total, vllm:gpu_prefix_cache_hits_total)
    vllm:time_to_first_token_seconds                            histogram
    vllm:inter_token_latency_seconds (before it: vllm:time_per_output_token_seconds)
    vllm:generation_tokens_total                                counter
Text exposition format: `name{label="value",...} value [timestamp]`, `#` lines are
HELP/TYPE comments (Prometheus docs, "Exposition formats").

A page without any vllm: metric (llama.cpp's server, a hosted API) leaves the level's
server figures missing with the reason; the sampler never fails a measurement.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+"
                     r"(?P<value>\S+)(?:\s+\d+)?$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

# figure -> the metric names that carry it, newest first
NAMES: dict[str, tuple[str, ...]] = {
    "running": ("vllm:num_requests_running",),
    "waiting": ("vllm:num_requests_waiting",),
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    "preemptions": ("vllm:num_preemptions_total",),
    "prefix_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "ttft_sum": ("vllm:time_to_first_token_seconds_sum",),
    "ttft_count": ("vllm:time_to_first_token_seconds_count",),
    "itl_sum": ("vllm:inter_token_latency_seconds_sum", "vllm:time_per_output_token_seconds_sum"),
    "itl_count": ("vllm:inter_token_latency_seconds_count",
                  "vllm:time_per_output_token_seconds_count"),
    "generation_tokens": ("vllm:generation_tokens_total",),
}
EVERY_S = 2.0
TIMEOUT_S = 2.0


def parse(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)]; a line that is not a sample is skipped."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            value = float(m["value"])  # also "+Inf", "NaN"
        except ValueError:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\")
                  for k, v in _LABEL.findall(m["labels"] or "")}
        out.setdefault(m["name"], []).append((labels, value))
    return out


def figures(page: dict[str, list[tuple[dict[str, str], float]]]) -> dict[str, float | None]:
    """Each figure summed over engines (the first of its names the page has), or None."""
    out: dict[str, float | None] = {}
    for figure, names in NAMES.items():
        name = next((n for n in names if n in page), None)
        out[figure] = None if name is None else sum(v for _, v in page[name])
    return out


def http_get(url: str, timeout_s: float = TIMEOUT_S) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 (http)
            return response.status, response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def metrics_url(client) -> str | None:
    """/metrics beside an OpenAI-compatible client's base URL; None for other clients."""
    pool = getattr(client, "pool", None)
    if pool is None or not getattr(pool, "host", None):
        return None
    scheme = "https" if pool.https else "http"
    port = f":{pool.port}" if pool.port else ""
    return f"{scheme}://{pool.host}{port}{pool.path}/metrics"


def _delta(before: dict, after: dict, key: str) -> float | None:
    if before.get(key) is None or after.get(key) is None:
        return None
    return after[key] - before[key]


class Sampler:
    """Scrape before, every `every_s` during, and after a window, on a daemon thread."""

    def __init__(self, url: str, *, every_s: float = EVERY_S,
                 get: Callable[[str], tuple[int, str]] = http_get,
                 clock: Callable[[], float] = time.time):
        self.url, self.every_s, self._get, self._clock = url, every_s, get, clock
        self.samples: list[dict[str, Any]] = []
        self.problem: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def scrape(self) -> dict[str, Any] | None:
        try:
            status, text = self._get(self.url)
        except (OSError, ValueError) as exc:
            self.problem = f"no /metrics: {self.url}: {exc}"
            return None
        if status != 200:
            self.problem = f"no /metrics: {self.url} answered HTTP {status}"
            return None
        found = figures(parse(text))
        if all(v is None for v in found.values()):
            self.problem = f"no /metrics: {self.url} has no vllm: metrics"
            return None
        sample = {"t": self._clock(), **found}
        self.samples.append(sample)
        return sample

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.scrape()

    def __enter__(self) -> "Sampler":
        self.start_s = self._clock()
        if self.scrape() is not None:  # an engine without /metrics is not polled
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.every_s + TIMEOUT_S + 1)
            self.scrape()
        self.end_s = self._clock()

    def result(self) -> dict[str, Any]:
        if len(self.samples) < 2:
            return {"source": None, "samples": len(self.samples),
                    "missing": self.problem or "no /metrics: fewer than two scrapes"}
        first, last = self.samples[0], self.samples[-1]

        def peak(key: str) -> float | None:
            values = [s[key] for s in self.samples if s[key] is not None]
            return max(values) if values else None

        queries, hits = _delta(first, last, "prefix_queries"), _delta(first, last, "prefix_hits")
        ttft_n, itl_n = _delta(first, last, "ttft_count"), _delta(first, last, "itl_count")
        kv = peak("kv_cache_usage")
        return {
            "source": f"/metrics {self.url}", "samples": len(self.samples),
            "every_s": self.every_s,
            "running_peak": peak("running"), "waiting_peak": peak("waiting"),
            "kv_cache_usage_pct_peak": None if kv is None else kv * 100,
            "preemptions": _delta(first, last, "preemptions"),
            "prefix_cache_hit_pct": hits / queries * 100 if queries and hits is not None else None,
            "server_ttft_mean_s": _delta(first, last, "ttft_sum") / ttft_n if ttft_n else None,
            "server_itl_mean_s": _delta(first, last, "itl_sum") / itl_n if itl_n else None,
            "generation_tokens": _delta(first, last, "generation_tokens"),
            "series": [[round(s["t"] - first["t"], 2), s["running"], s["waiting"],
                        s["kv_cache_usage"]] for s in self.samples],
        }


@contextlib.contextmanager
def level_window(client, levels: list[dict[str, Any]], **sampler_kwargs: Any):
    """Around one load level: `with level_window(rec.client, levels): levels.append(...)`.
    The level appended inside gains `window` (epoch seconds, to match engine stats lines
    and device samples) and `server` (/metrics figures, or why there are none)."""
    url = metrics_url(client)
    clock = sampler_kwargs.get("clock", time.time)
    if url is None:
        start = clock()
        yield None
        server = {"source": None, "samples": 0, "missing": (
            f"no /metrics: {getattr(client, 'name', type(client).__name__)} reaches no "
            "/metrics (server figures come from the engine's stats lines, if any)")}
        window = {"start_s": start, "end_s": clock()}
    else:
        sampler = Sampler(url, **sampler_kwargs)
        with sampler:
            yield sampler
        server, window = sampler.result(), {"start_s": sampler.start_s, "end_s": sampler.end_s}
    if levels:
        levels[-1]["window"], levels[-1]["server"] = window, server
