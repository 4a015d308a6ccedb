"""Where a checkpoint is read from: a local folder or a Hugging Face Hub repository.

Both answer the same three questions (a JSON file, a byte range of a file, a whole small
file), so the repack and the tied-lm_head check read a tensor's bytes the same way from
either. On the Hub every read is a GET of `<endpoint>/<repo>/resolve/<revision>/<file>`
with an HTTP Range header, so only the header and the tensor being processed cross the
network; HF_TOKEN, when set, goes in an Authorization header (gated models), and
HF_ENDPOINT overrides https://huggingface.co as in huggingface_hub.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from benchstack_repack import safetensors_layout as layout

HUB_URL = "https://huggingface.co"
REQUEST_TIMEOUT_S = 60.0
# Files beside the weights that a served model needs. On the Hub there is no listing
# without the API, so these are asked for by name and skipped when absent.
SIDECAR_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model",
                 "special_tokens_map.json", "generation_config.json", "chat_template.jinja",
                 "chat_template.json", "preprocessor_config.json", "processor_config.json")
WRITTEN_HERE = frozenset({"config.json", layout.INDEX_FILE})


class SourceError(Exception):
    """The checkpoint cannot be read; the message says which file and why."""


class LocalSource:
    def __init__(self, folder: Path):
        self.folder = folder
        self.label = str(folder)

    def json(self, filename: str) -> dict | None:
        path = self.folder / filename
        return json.loads(path.read_text()) if path.is_file() else None

    def read(self, filename: str, start: int, length: int) -> bytes:
        with open(self.folder / filename, "rb") as f:
            f.seek(start)
            data = f.read(length)
        if len(data) != length:
            raise SourceError(f"{filename}: wanted {length} bytes at {start}, got {len(data)}")
        return data

    def sidecars(self) -> list[str]:
        return sorted(p.name for p in self.folder.iterdir() if p.is_file()
                      and not p.name.endswith(".safetensors") and p.name not in WRITTEN_HERE)

    def copy(self, filename: str, destination: Path) -> bool:
        shutil.copyfile(self.folder / filename, destination / filename)
        return True


class HubSource:
    def __init__(self, repo: str, revision: str = "main", base_url: str | None = None,
                 token: str | None = None):
        self.repo, self.revision = repo, revision
        self.base_url = (base_url or os.environ.get("HF_ENDPOINT") or HUB_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("HF_TOKEN")
        self.label = f"{self.base_url}/{repo}@{revision}"

    def url(self, filename: str) -> str:
        return f"{self.base_url}/{self.repo}/resolve/{self.revision}/{filename}"

    def _get(self, filename: str, headers: dict[str, str]) -> bytes | None:
        """The body, or None on 404."""
        headers = {"User-Agent": "benchstack-repack", **headers}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.url(filename), headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            hint = " (gated or private: set HF_TOKEN)" if exc.code in (401, 403) else ""
            raise SourceError(f"{self.url(filename)}: HTTP {exc.code} {exc.reason}{hint}") \
                from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise SourceError(f"{self.url(filename)}: {getattr(exc, 'reason', exc)}") from None

    def json(self, filename: str) -> dict | None:
        body = self._get(filename, {})
        return None if body is None else json.loads(body)

    def read(self, filename: str, start: int, length: int) -> bytes:
        body = self._get(filename, {"Range": f"bytes={start}-{start + length - 1}"})
        if body is None:
            raise SourceError(f"{self.url(filename)}: not found")
        if len(body) != length:  # a server that ignored Range sent the whole file
            raise SourceError(f"{self.url(filename)}: wanted {length} bytes at {start}, "
                              f"got {len(body)}; the server must honour Range requests")
        return body

    def sidecars(self) -> list[str]:
        return list(SIDECAR_FILES)

    def copy(self, filename: str, destination: Path) -> bool:
        body = self._get(filename, {})
        if body is None:
            return False
        (destination / filename).write_bytes(body)
        return True


Source = LocalSource | HubSource


def open_source(spec: str, revision: str = "main") -> Source:
    """A local folder when `spec` names one, else a Hub repo id ("owner/name")."""
    path = Path(spec)
    if path.is_dir():
        return LocalSource(path)
    if spec.count("/") != 1 or spec.startswith((".", "/")):
        raise SourceError(f"{spec}: neither a local folder nor a Hub repo id (owner/name)")
    return HubSource(spec, revision)


def shard_files(source: Source) -> list[str]:
    index = source.json(layout.INDEX_FILE)
    if index is None:
        return [layout.SINGLE_FILE]
    files = sorted(set((index.get("weight_map") or {}).values()))
    if not files:
        raise SourceError(f"{source.label}: {layout.INDEX_FILE} has no weight_map")
    return files


def read_tensors(source: Source) -> list[tuple[str, int, layout.TensorInfo]]:
    """(shard file, absolute offset of the data section, tensor) for every tensor, read
    from the headers alone."""
    found = []
    for filename in shard_files(source):
        try:
            length = layout.header_length(source.read(filename, 0, layout.HEADER_LENGTH_BYTES))
            tensors = layout.parse_header(source.read(filename, 8, length))
        except (ValueError, FileNotFoundError) as exc:
            raise SourceError(f"{source.label}: {filename}: {exc}") from None
        found.extend((filename, 8 + length, t) for t in tensors)
    return found
