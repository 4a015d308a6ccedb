"""Hardware catalog: lookups, the dtype policy and the roofline arithmetic."""

import pytest

from runners import hardware


def test_every_family_the_seeds_use_is_known_with_its_facts():
    g6 = hardware.lookup("g6.xlarge")
    assert (g6.accelerator.name, g6.accelerator_count, g6.arch) == ("NVIDIA L4", 1, "x86_64")
    assert g6.bandwidth_gb_per_s == 300.0
    assert g6.accelerator.compute_capability == (8, 9)
    g5g = hardware.lookup("g5g.2xlarge")
    assert (g5g.arch, g5g.accelerator.compute_capability) == ("arm64", (7, 5))
    assert "bfloat16" not in g5g.accelerator.native_dtypes
    inf2 = hardware.lookup("inf2.xlarge")
    assert inf2.accelerator.memory_pools_gib == (16.0, 16.0)
    assert round(inf2.bandwidth_gb_per_s) == 817  # 9.8 TB/s over 12 chips
    assert round(hardware.lookup("trn1.2xlarge").bandwidth_gb_per_s) == 612
    assert hardware.lookup("trn2.48xlarge").accelerator_count == 16
    assert hardware.lookup("g6e.xlarge").accelerator.name == "NVIDIA L40S"
    assert hardware.lookup("g5.xlarge").accelerator.name == "NVIDIA A10G"


def test_sagemaker_names_resolve_only_where_sagemaker_hosts_the_type():
    assert hardware.lookup("ml.g6.xlarge") is hardware.lookup("g6.xlarge")
    assert hardware.lookup("ml.inf2.xlarge").accelerator.vendor == "aws-neuron"
    with pytest.raises(hardware.UnknownInstanceType, match="unknown SageMaker hosting"):
        hardware.lookup("ml.g5g.xlarge")
    with pytest.raises(hardware.UnknownInstanceType, match="the catalog knows .*g6.xlarge"):
        hardware.lookup("p5.48xlarge")


def test_compute_dtype_policy_gives_float16_before_ampere_only():
    assert hardware.compute_dtype("g5g.2xlarge") == "float16"
    for itype in ("g6.xlarge", "ml.g6.xlarge", "g5.xlarge", "g6e.xlarge", "inf2.xlarge",
                  "trn1.2xlarge"):
        assert hardware.compute_dtype(itype) == "bfloat16", itype
    assert not hardware.dtype_supported("g5g.2xlarge", "bfloat16")
    assert hardware.dtype_supported("g5g.2xlarge", "float16")
    assert hardware.dtype_supported("g5g.2xlarge", "auto")


def test_roofline_matches_hand_arithmetic():
    # 300 GB/s reading 2.86 GiB of emb4 weights per token: 300e9 / (2.86 * 2**30) = 97.7 tok/s
    ceiling = hardware.decode_ceiling_tokens_per_s(300.0, 2.86 * hardware.GIB)
    assert ceiling == pytest.approx(97.69, abs=0.01)
    # the seed's g5g ran at 26% of its roofline
    assert hardware.roofline_share(26.0, 100.0) == pytest.approx(0.26)
    with pytest.raises(ValueError):
        hardware.decode_ceiling_tokens_per_s(300.0, 0)


def test_memory_fit_uses_the_engine_share_of_all_devices():
    # L4: 22.49 GiB * 0.90 = 20.24 GiB usable
    assert hardware.fits_in_memory("g6.xlarge", 8.01, 12.0, 0.90)
    assert not hardware.fits_in_memory("g6.xlarge", 8.01, 12.5, 0.90)
    # 26B at 8-bit (~26 GB) does not fit one L4, as the seed found
    assert not hardware.fits_in_memory("ml.g6.xlarge", 24.2, 0.5, 0.97)
