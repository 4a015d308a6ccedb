"""moto with fake credentials, and nothing of the machine's own AWS set-up read."""

from __future__ import annotations

from contextlib import contextmanager

from moto import mock_aws

MACHINE_SETTINGS = ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


@contextmanager
def mocked_aws(monkeypatch, region: str, *, unset: tuple[str, ...] = ()):
    """Inside: every boto3 client talks to moto in `region`; `unset` names more variables
    a test must not inherit (e.g. a Hugging Face token)."""
    for key in (*MACHINE_SETTINGS, *unset):
        monkeypatch.delenv(key, raising=False)
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": region}.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        yield
