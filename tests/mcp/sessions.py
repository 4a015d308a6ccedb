"""A boto3 session stand-in for the tools: chosen services answer from a botocore Stubber
(where moto falls short), every other service from the real session (moto in tests)."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber


class StubbedSession:
    def __init__(self, regions: dict[str, str]):
        """`regions`: service -> the region its stubbed client is made for."""
        self.real = boto3.Session()
        self.stubbed = {service: self.real.client(service, region_name=region)
                        for service, region in regions.items()}
        self.stubbers = {service: Stubber(client) for service, client in self.stubbed.items()}
        for stubber in self.stubbers.values():
            stubber.activate()

    def client(self, service: str, region_name: str | None = None, **kwargs):
        if service in self.stubbed:
            assert region_name in (None, self.stubbed[service].meta.region_name), region_name
            return self.stubbed[service]
        return self.real.client(service, region_name=region_name, **kwargs)

    def get_credentials(self):
        return self.real.get_credentials()

    def assert_no_pending_responses(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()
