"""Real AWS event-stream bytes for the streaming APIs, served to a boto3 client through its
`before-send` hook, so botocore's own parser turns them into events (Stubber cannot stub an
event stream: it only accepts a dict where the stream goes)."""

from __future__ import annotations

import binascii
import json
import struct

from botocore.awsrequest import AWSResponse


def _header(name: str, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw


def message(headers: dict[str, str], payload: bytes) -> bytes:
    head = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", binascii.crc32(body))


def event(event_type: str, payload: dict | bytes) -> bytes:
    blob = isinstance(payload, bytes)
    return message({":message-type": "event", ":event-type": event_type,
                    ":content-type": "application/octet-stream" if blob else "application/json"},
                   payload if blob else json.dumps(payload).encode())


def exception(exception_type: str, text: str) -> bytes:
    return message({":message-type": "exception", ":exception-type": exception_type,
                    ":content-type": "application/json"}, json.dumps({"message": text}).encode())


class _Raw:
    def __init__(self, data: bytes):
        self.data = data

    def stream(self, **_):
        yield from (self.data[i:i + 7] for i in range(0, len(self.data), 7))  # odd pieces

    def read(self, *_):
        data, self.data = self.data, b""
        return data

    def close(self):
        pass


def serve(client, operation: str, frames: list[bytes], content_type: str) -> None:
    """Answer the next `operation` call of `client` with these event-stream frames."""

    def respond(request, **_):
        return AWSResponse(request.url, 200, {"content-type": content_type},
                           _Raw(b"".join(frames)))

    service = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register_first(f"before-send.{service}.{operation}", respond)
