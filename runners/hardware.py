"""Hardware catalog: the accelerator facts benchstack reasons with.

Data plus a small API. The catalog drives three decisions:

* the compute-dtype policy: pre-Ampere GPUs (the T4G on g5g) have no bf16 datapath, so
  bf16 there is silently emulated through fp32 and decode loses most of its speed;
  they get float16;
* the memory-fit preflight (weights + KV cache must fit the accelerator memory);
* the roofline: one decode step reads every weight once, so
  bandwidth / bytes-read-per-token is the ceiling on single-request tokens/s.

Figures are vendor specifications unless a comment says otherwise. Neuron bandwidth is
published per instance; the per-chip figure divides the largest instance's total by its
chip count (9.8 TB/s over 12 Inferentia2 chips, 9.8 TB/s over 16 Trainium chips).
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3


@dataclass(frozen=True)
class Accelerator:
    name: str
    vendor: str  # "nvidia" | "aws-neuron"
    memory_gib: float  # per device, as the runtime reports it
    bandwidth_gb_per_s: float  # per device, 1e9 bytes per second
    compute_capability: tuple[int, int] | None  # CUDA only
    native_dtypes: frozenset[str]
    memory_pools_gib: tuple[float, ...] = ()  # per-core pools where memory is split

    @property
    def pre_ampere(self) -> bool:
        """True for CUDA devices older than sm_80, which lack a bf16 datapath."""
        return self.compute_capability is not None and self.compute_capability < (8, 0)


@dataclass(frozen=True)
class InstanceType:
    name: str  # EC2 name, without the SageMaker "ml." prefix
    accelerator: Accelerator
    accelerator_count: int
    vcpus: int
    host_memory_gib: int
    arch: str  # "x86_64" | "arm64"
    ec2: bool = True
    sagemaker: bool = False  # offered for SageMaker hosting as "ml.<name>"
    instance_storage_gb: int = 0  # local NVMe; SageMaker takes no VolumeSizeInGB with it
    not_offered_in: frozenset[str] = frozenset()  # regions known not to offer it

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def accelerator_memory_gib(self) -> float:
        return self.accelerator.memory_gib * self.accelerator_count

    @property
    def bandwidth_gb_per_s(self) -> float:
        return self.accelerator.bandwidth_gb_per_s * self.accelerator_count


_FP = frozenset({"float16", "bfloat16", "fp8", "int8"})

# nvidia-smi reports 23,034 MiB on an L4 and 15,360 MiB on a T4G (seed articles).
L4 = Accelerator("NVIDIA L4", "nvidia", 22.49, 300.0, (8, 9), _FP)
T4G = Accelerator("NVIDIA T4G", "nvidia", 15.0, 320.0, (7, 5), frozenset({"float16", "int8"}))
A10G = Accelerator("NVIDIA A10G", "nvidia", 22.49, 600.0, (8, 6), _FP - {"fp8"})
L40S = Accelerator("NVIDIA L40S", "nvidia", 44.99, 864.0, (8, 9), _FP)
INFERENTIA2 = Accelerator(
    "AWS Inferentia2", "aws-neuron", 32.0, 9800.0 / 12, None, _FP, memory_pools_gib=(16.0, 16.0)
)
TRAINIUM = Accelerator(
    "AWS Trainium", "aws-neuron", 32.0, 9800.0 / 16, None, _FP - {"fp8"}, memory_pools_gib=(16.0, 16.0)
)
TRAINIUM2 = Accelerator("AWS Trainium2", "aws-neuron", 96.0, 2900.0, None, _FP)


def _family(accel, arch, rows, *, sagemaker=True, not_offered_in=()):
    """Expand (name, accelerator count, vcpus, host GiB, NVMe GB) rows into entries."""
    return [
        InstanceType(
            name, accel, count, vcpus, mem, arch, sagemaker=sagemaker,
            instance_storage_gb=nvme_gb, not_offered_in=frozenset(not_offered_in),
        )
        for name, count, vcpus, mem, nvme_gb in rows
    ]


_ENTRIES = [
    *_family(L4, "x86_64", [
        ("g6.xlarge", 1, 4, 16, 250), ("g6.2xlarge", 1, 8, 32, 450),
        ("g6.4xlarge", 1, 16, 64, 600), ("g6.8xlarge", 1, 32, 128, 900),
        ("g6.12xlarge", 4, 48, 192, 3760), ("g6.48xlarge", 8, 192, 768, 7520),
    ]),
    # AWS publishes no G5g offering in us-east-2 (seed: "g5g is not in us-east-2");
    # SageMaker hosting has no ml.g5g types.
    *_family(T4G, "arm64", [
        ("g5g.xlarge", 1, 4, 8, 0), ("g5g.2xlarge", 1, 8, 16, 0), ("g5g.4xlarge", 1, 16, 32, 0),
        ("g5g.8xlarge", 1, 32, 64, 0), ("g5g.16xlarge", 2, 64, 128, 0),
    ], sagemaker=False, not_offered_in={"us-east-2"}),
    *_family(A10G, "x86_64", [
        ("g5.xlarge", 1, 4, 16, 250), ("g5.2xlarge", 1, 8, 32, 450),
        ("g5.4xlarge", 1, 16, 64, 600), ("g5.12xlarge", 4, 48, 192, 3800),
        ("g5.48xlarge", 8, 192, 768, 7600),
    ]),
    *_family(L40S, "x86_64", [
        ("g6e.xlarge", 1, 4, 32, 250), ("g6e.2xlarge", 1, 8, 64, 450),
        ("g6e.4xlarge", 1, 16, 128, 600), ("g6e.12xlarge", 4, 48, 384, 3800),
        ("g6e.48xlarge", 8, 192, 1536, 7600),
    ]),
    *_family(INFERENTIA2, "x86_64", [
        ("inf2.xlarge", 1, 4, 16, 0), ("inf2.8xlarge", 1, 32, 128, 0),
        ("inf2.24xlarge", 6, 96, 384, 0), ("inf2.48xlarge", 12, 192, 768, 0),
    ]),
    *_family(TRAINIUM, "x86_64", [
        ("trn1.2xlarge", 1, 8, 32, 474), ("trn1.32xlarge", 16, 128, 512, 7600),
    ]),
    *_family(TRAINIUM2, "x86_64", [("trn2.48xlarge", 16, 192, 2048, 7600)], sagemaker=False),
]

CATALOG: dict[str, InstanceType] = {entry.name: entry for entry in _ENTRIES}

SAGEMAKER_PREFIX = "ml."


class UnknownInstanceType(KeyError):
    def __str__(self) -> str:
        return self.args[0]


def lookup(instance_type: str) -> InstanceType:
    """The catalog entry for an EC2 name ("g6.xlarge") or a SageMaker name ("ml.g6.xlarge")."""
    is_sagemaker = instance_type.startswith(SAGEMAKER_PREFIX)
    base = instance_type.removeprefix(SAGEMAKER_PREFIX)
    entry = CATALOG.get(base)
    if entry is None or (is_sagemaker and not entry.sagemaker):
        where = "SageMaker hosting" if is_sagemaker else "EC2"
        known = sorted(
            (SAGEMAKER_PREFIX + name if is_sagemaker else name)
            for name, e in CATALOG.items()
            if (e.sagemaker if is_sagemaker else e.ec2)
        )
        raise UnknownInstanceType(
            f"unknown {where} instance type {instance_type!r}; the catalog knows {', '.join(known)}"
        )
    return entry


def compute_dtype(instance_type: str) -> str:
    """The dtype an engine should compute in on this instance type.

    Pre-Ampere GPUs get float16: bf16 there does not fail, it is emulated, and decode
    quietly disappears into conversion. Everything else here computes natively in bf16.
    """
    return "float16" if lookup(instance_type).accelerator.pre_ampere else "bfloat16"


def dtype_supported(instance_type: str, dtype: str) -> bool:
    """Whether the accelerator computes `dtype` natively ("auto" is always allowed)."""
    return dtype == "auto" or dtype in lookup(instance_type).accelerator.native_dtypes


def decode_ceiling_tokens_per_s(bandwidth_gb_per_s: float, bytes_per_token: float) -> float:
    """Roofline for one request: every decode step reads `bytes_per_token` from memory."""
    if bytes_per_token <= 0:
        raise ValueError("bytes_per_token must be positive")
    return bandwidth_gb_per_s * 1e9 / bytes_per_token


def roofline_share(measured_tokens_per_s: float, ceiling_tokens_per_s: float) -> float:
    """Measured decode as a fraction of the bandwidth ceiling (1.0 = at the roofline)."""
    return measured_tokens_per_s / ceiling_tokens_per_s


def fits_in_memory(
    instance_type: str, weights_gib: float, kv_cache_gib: float, gpu_memory_utilization: float
) -> bool:
    """Whether weights + KV cache fit the share of accelerator memory the engine may use.

    Assumes the engine shards across every accelerator of the instance (tensor parallel).
    Neuron memory is further split into per-core pools (`Accelerator.memory_pools_gib`);
    callers that do not shard across cores must check against one pool.
    """
    usable_gib = lookup(instance_type).accelerator_memory_gib * gpu_memory_utilization
    return weights_gib + kv_cache_gib <= usable_gib
