import json
from datetime import datetime, timezone
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

FIXTURES = Path(__file__).parent / "fixtures"
RUN_DAY = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)  # 52 days after the prices file


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / "pricing" / name).read_text())


@pytest.fixture
def pricing_client(monkeypatch):
    """A real botocore Pricing client with fake credentials, stubbed: requests are
    validated against the service model and no request leaves the process."""
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    with Stubber(client) as stubber:
        client.stubber = stubber
        yield client
        stubber.assert_no_pending_responses()
