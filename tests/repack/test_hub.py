"""Reading from the Hub by Range requests, against a fake Hub on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from benchstack_repack import cli
from benchstack_repack.repack import repack
from benchstack_repack.sources import HubSource, SourceError, read_tensors
from benchstack_repack.tied_head import check
from tests.repack import checkpoints as ck

REPO = "google/gemma-synthetic-qat-q4_0-unquantized"


class FakeHub:
    """Serves <folder> at /<REPO>/resolve/main/<file>, honouring `Range: bytes=a-b`, and
    records every request's headers."""

    def __init__(self, folder: Path, *, honour_range: bool = True, status: int = 200):
        self.requests: list[dict[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                hub.requests.append({"path": self.path, **dict(self.headers)})
                prefix = f"/{REPO}/resolve/main/"
                path = folder / self.path.removeprefix(prefix)
                if status != 200:
                    return self.send_error(status)
                if not self.path.startswith(prefix) or not path.is_file():
                    return self.send_error(404)
                data = path.read_bytes()
                ranged = self.headers.get("Range")
                if ranged and honour_range:
                    start, end = (int(v) for v in ranged.removeprefix("bytes=").split("-"))
                    data = data[start:end + 1]
                    self.send_response(206)
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub_folder(tmp_path):
    ck.gemma_like(tmp_path / "hub")
    return tmp_path / "hub"


@pytest.fixture
def fake_hub(hub_folder):
    hub = FakeHub(hub_folder)
    yield hub
    hub.close()


def test_tied_head_check_reads_headers_and_rows_only(fake_hub, hub_folder):
    source = HubSource(REPO, base_url=fake_hub.url, token="hf_test")
    located = {info.name: (f, start, info) for f, start, info in read_tensors(source)}
    result = check(source, located, source.json("config.json"))
    assert result.duplicate and result.rows_identical == result.rows_sampled == 7
    assert result.shape == [ck.VOCAB, ck.HIDDEN] and result.dtype == "BF16"
    row_reads = [r for r in fake_hub.requests if r.get("Range") and r["Range"] != "bytes=0-7"
                 and "index" not in r["path"]]
    row_bytes = ck.HIDDEN * 2
    sizes = [int(b) - int(a) + 1 for a, b in
             (r["Range"].removeprefix("bytes=").split("-") for r in row_reads[-14:])]
    assert sizes == [row_bytes] * 14  # 7 rows of each table, nothing more
    assert all(r.get("Authorization") == "Bearer hf_test" for r in fake_hub.requests)


def test_check_tied_head_cli_against_the_hub(fake_hub, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", fake_hub.url)
    assert cli.main([REPO, "--check-tied-head"]) == 0
    first, data = capsys.readouterr().out.splitlines()[:2]
    assert "rows byte-identical to embed_tokens 7 of 7" in first
    assert json.loads(data)["duplicate"] is True


def test_repack_from_the_hub_equals_repack_from_disk(fake_hub, hub_folder, tmp_path):
    from benchstack_repack.sources import LocalSource

    repack(HubSource(REPO, base_url=fake_hub.url), tmp_path / "from-hub", "emb4",
           log=lambda line: None)
    repack(LocalSource(hub_folder), tmp_path / "from-disk", "emb4", log=lambda line: None)
    a, b = ck.load_build(tmp_path / "from-hub"), ck.load_build(tmp_path / "from-disk")
    assert set(a) == set(b) and all(a[n].tobytes() == b[n].tobytes() for n in a)
    assert (tmp_path / "from-hub" / "tokenizer.json").is_file()


def test_a_server_ignoring_range_is_refused(hub_folder):
    hub = FakeHub(hub_folder, honour_range=False)
    try:
        with pytest.raises(SourceError, match="must honour Range"):
            read_tensors(HubSource(REPO, base_url=hub.url))
    finally:
        hub.close()


def test_gated_repo_names_hf_token(hub_folder):
    hub = FakeHub(hub_folder, status=401)
    try:
        with pytest.raises(SourceError, match="HF_TOKEN"):
            HubSource(REPO, base_url=hub.url, token="").json("config.json")
    finally:
        hub.close()
