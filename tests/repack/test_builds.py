"""End to end on synthetic checkpoints: every build, decoded independently, passes the
preflight's ignore-list check."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from benchstack_repack.qat_grid import OFF_GRID_TOLERANCE
from benchstack_repack.repack import RepackRefused, repack
from benchstack_repack.sources import LocalSource
from runners.checks import preflight
from tests.repack import checkpoints as ck

PACKED = ("weight_packed", "weight_scale", "weight_shape")


def local_fetch(folder: Path):
    """A preflight Fetch that serves `folder` as if it were a Hub repository."""
    def fetch(url: str, headers: dict[str, str], max_bytes: int) -> bytes:
        path = folder / url.rsplit("/resolve/main/", 1)[1]
        if not path.is_file():
            raise preflight.FetchError(url, 404, "Not Found")
        data = path.read_bytes()
        if "Range" in headers:
            start, end = (int(v) for v in headers["Range"].removeprefix("bytes=").split("-"))
            data = data[start:end + 1]
        return data[:max_bytes]
    return fetch


def preflight_problems(folder: Path) -> list[str]:
    hub = preflight.HubModel("xbill9/synthetic", fetch=local_fetch(folder))
    config = hub.json("config.json")
    return preflight.ignore_list_problems(config["quantization_config"], hub.tensors())


def build(tmp_path: Path, name: str, **kwargs) -> tuple[dict, dict, dict, Path]:
    src = tmp_path / "src"
    source = ck.gemma_like(src, **{k: kwargs.pop(k) for k in ("head", "off_grid", "seed", "tie")
                                   if k in kwargs})
    dst = tmp_path / name
    report = repack(LocalSource(src), dst, name, log=lambda line: None, **kwargs)
    return source, ck.load_build(dst), report, dst


def assert_decodes(out: dict, module: str, source_bits: np.ndarray) -> None:
    """The packed module, decoded here, is within the grid tolerance of the source."""
    decoded = ck.decode_int4(*(out[f"{module}.{p}"] for p in PACKED))
    original = ck.from_bf16_bits(source_bits)
    rows, cols = original.shape
    assert out[f"{module}.weight_shape"].dtype == np.int64
    assert out[f"{module}.weight_scale"].dtype == np.float16
    assert out[f"{module}.weight_packed"].shape == (rows, cols // 8)
    group_max = np.abs(original).reshape(rows, -1, 32).max(axis=-1)
    error = np.abs(decoded - original).reshape(rows, -1, 32).max(axis=-1)
    assert (error <= OFF_GRID_TOLERANCE * group_max).all(), module


def module(name: str) -> str:
    return name.removesuffix(".weight")


@pytest.mark.parametrize("name", ["text-only", "ple4", "emb4"])
def test_build_decodes_and_passes_preflight(tmp_path, name):
    source, out, report, dst = build(tmp_path, name)
    for linear in (ck.Q_PROJ, ck.DOWN_PROJ, ck.PLE_PROJ):
        assert_decodes(out, module(linear), source[linear])
    assert not any(n.startswith(("model.vision_tower", "model.embed_vision", "model.audio"))
                   for n in out)
    assert out[ck.NORM].tobytes() == source[ck.NORM].tobytes()
    assert out[ck.ODD_PROJ].tobytes() == source[ck.ODD_PROJ].tobytes()
    config = json.loads((dst / "config.json").read_text())
    qc = config["quantization_config"]
    assert qc["format"] == "pack-quantized" and qc["quant_method"] == "compressed-tensors"
    weights = qc["config_groups"]["group_0"]["weights"]
    assert (weights["num_bits"], weights["group_size"], weights["symmetric"],
            weights["strategy"]) == (4, 32, True, "group")
    assert module(ck.ODD_PROJ) in qc["ignore"]
    assert preflight_problems(dst) == []
    saved = json.loads((dst / "repack-report.json").read_text())
    assert saved["build"] == name and saved["tied_head"]["duplicate"] is True
    assert all(e["off_grid_groups"] == 0 for e in saved["tensors"] if e["action"] == "pack")
    assert (dst / "tokenizer.json").is_file()
    assert not list(tmp_path.glob(".*partial"))


def test_text_only_and_ple4_drop_the_duplicate_head(tmp_path):
    for name in ("text-only", "ple4"):
        source, out, _, dst = build(tmp_path / name, name)
        assert ck.LM_HEAD not in out and not any(n.startswith("lm_head") for n in out)
        config = json.loads((dst / "config.json").read_text())
        assert config["tie_word_embeddings"] is True
        assert "lm_head" in config["quantization_config"]["ignore"]
        assert out[ck.EMBED].tobytes() == source[ck.EMBED].tobytes()
        if name == "ple4":
            assert_decodes(out, module(ck.PLE), source[ck.PLE])
        else:
            assert out[ck.PLE].tobytes() == source[ck.PLE].tobytes()


@pytest.mark.parametrize("head", ["duplicate", "tied", "untied"])
def test_emb4_writes_lm_head_untied_and_packed(tmp_path, head):
    source, out, report, dst = build(tmp_path, "emb4", head=head)
    assert_decodes(out, module(ck.EMBED), source[ck.EMBED])
    assert_decodes(out, module(ck.PLE), source[ck.PLE])
    assert_decodes(out, "lm_head", source.get(ck.LM_HEAD, source[ck.EMBED]))
    config = json.loads((dst / "config.json").read_text())
    assert config["tie_word_embeddings"] is False
    assert config["text_config"]["tie_word_embeddings"] is False
    qc = config["quantization_config"]
    assert "lm_head" not in qc["ignore"]
    assert {"lm_head", module(ck.EMBED), module(ck.PLE)} <= set(
        qc["config_groups"]["group_0"]["targets"])
    assert preflight_problems(dst) == []


def test_untied_head_kept_by_text_only(tmp_path):
    source, out, report, _ = build(tmp_path, "text-only", head="untied")
    assert report["tied_head"]["duplicate"] is False
    assert out[ck.LM_HEAD].tobytes() == source[ck.LM_HEAD].tobytes()


def test_duplicate_head_kept_when_the_config_does_not_tie(tmp_path):
    source, out, report, _ = build(tmp_path, "text-only", tie=False)
    assert report["tied_head"]["duplicate"] is True
    assert out[ck.LM_HEAD].tobytes() == source[ck.LM_HEAD].tobytes()


def test_off_grid_tensor_refuses_the_build(tmp_path):
    with pytest.raises(RepackRefused, match="down_proj.*off the int4 grid"):
        build(tmp_path, "text-only", off_grid=(ck.DOWN_PROJ,))
    assert not (tmp_path / "text-only").exists()
    saved = json.loads((tmp_path / ".text-only.partial" / "repack-report.json").read_text())
    entry = next(e for e in saved["tensors"] if e["source"] == ck.DOWN_PROJ)
    assert entry["off_grid_groups"] == entry["groups"] and entry["off_grid_examples"]
    assert "refused" in saved


def test_keep_16bit_leaves_an_off_grid_linear_and_lists_it(tmp_path):
    source, out, _, dst = build(tmp_path, "text-only", off_grid=(ck.DOWN_PROJ,),
                                keep_16bit=["down_proj"])
    assert out[ck.DOWN_PROJ].tobytes() == source[ck.DOWN_PROJ].tobytes()
    config = json.loads((dst / "config.json").read_text())
    assert module(ck.DOWN_PROJ) in config["quantization_config"]["ignore"]
    assert preflight_problems(dst) == []


def test_preflight_catches_a_missing_ignore_entry(tmp_path):
    """The check the builds pass is not vacuous: drop one entry and it fails."""
    _, _, _, dst = build(tmp_path, "emb4")
    path = dst / "config.json"
    config = json.loads(path.read_text())
    config["quantization_config"]["ignore"].remove(module(ck.ODD_PROJ))
    path.write_text(json.dumps(config))
    assert "missing from quantization_config.ignore" in preflight_problems(dst)[0]


def test_shards_chunks_and_index(tmp_path):
    """Small shards and chunks of a few rows give the same tensors as one of each."""
    _, whole, _, _ = build(tmp_path / "a", "emb4")
    _, split, report, dst = build(tmp_path / "b", "emb4", max_shard_bytes=4096,
                                  chunk_bytes=300)
    assert len(report["shards"]) > 3
    index = json.loads((dst / "model.safetensors.index.json").read_text())
    assert index["metadata"]["total_size"] == sum(v.nbytes for v in split.values())
    assert set(whole) == set(split)
    assert all(whole[n].tobytes() == split[n].tobytes() for n in whole)
    for filename in report["shards"]:
        head = (dst / filename).read_bytes()[:8]
        assert (struct.unpack("<Q", head)[0] + 8) % 8 == 0  # data starts 8-aligned


def test_refuses_a_non_empty_destination(tmp_path):
    src = tmp_path / "src"
    ck.gemma_like(src)
    (tmp_path / "dst").mkdir()
    (tmp_path / "dst" / "x").write_text("keep me")
    with pytest.raises(RepackRefused, match="not empty"):
        repack(LocalSource(src), tmp_path / "dst", "emb4", log=lambda line: None)


def test_report_line_matches_the_article_form(tmp_path):
    lines = []
    src = tmp_path / "src"
    ck.gemma_like(src)
    repack(LocalSource(src), tmp_path / "dst", "ple4", log=lines.append)
    line = next(l for l in lines if l.startswith(ck.PLE))
    assert " GiB bf16 -> " in line and " GiB int4 + f16 scales; 0 off-grid groups; " in line
    assert "% of values bit-identical, worst error " in line and line.endswith("of the group max")


def test_a_3d_expert_stack_is_refused_not_left_16bit(tmp_path):
    src = tmp_path / "src"
    tensors = ck.gemma_like(src, shards=1)
    experts = "model.language_model.layers.0.experts.gate_up_proj.weight"
    tensors[experts] = ck.qat_bits(np.random.default_rng(5), 4 * 8, 64).reshape(4, 8, 64)
    ck.write_safetensors_bf16(src / "model-00001-of-00001.safetensors", tensors, set(tensors))
    index = json.loads((src / "model.safetensors.index.json").read_text())
    index["weight_map"][experts] = "model-00001-of-00001.safetensors"
    (src / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(RepackRefused, match="3-D weight .* not handled"):
        repack(LocalSource(src), tmp_path / "dst", "emb4", log=lambda line: None)
    assert not (tmp_path / "dst").exists()
