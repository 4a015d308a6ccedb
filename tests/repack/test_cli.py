"""The command line: exit codes and what it prints."""

from __future__ import annotations

from benchstack_repack import cli
from tests.repack import checkpoints as ck


def test_build_prints_each_packed_tensor_and_exits_0(tmp_path, capsys):
    ck.gemma_like(tmp_path / "src")
    assert cli.main([str(tmp_path / "src"), str(tmp_path / "out"), "--build", "ple4"]) == 0
    out = capsys.readouterr().out
    assert f"{ck.PLE}: " in out and "0 off-grid groups" in out
    assert out.rstrip().endswith(f"repack: wrote {tmp_path / 'out'}")


def test_refused_build_exits_1_with_one_line(tmp_path, capsys):
    ck.gemma_like(tmp_path / "src", off_grid=(ck.Q_PROJ,))
    assert cli.main([str(tmp_path / "src"), str(tmp_path / "out"), "--build", "text-only"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"repack: {ck.Q_PROJ}: ")


def test_unknown_source_exits_1(tmp_path, capsys):
    assert cli.main(["not-a-folder-nor-repo", str(tmp_path / "out"), "--build", "emb4"]) == 1
    assert "neither a local folder nor a Hub repo id" in capsys.readouterr().err
