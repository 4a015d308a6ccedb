"""Sort a botocore exception into the Reply statuses (throttles are counted apart)."""

from __future__ import annotations

from runners.backends.reply import ERROR, THROTTLED, TIMEOUT

# Compared lower-cased: event streams spell them "throttlingException".
THROTTLE_CODES = {"throttlingexception", "throttling", "toomanyrequestsexception",
                  "serviceunavailableexception", "modelnotreadyexception"}


def classify(exc: Exception) -> tuple[str, str]:
    """(status, one-line error) for a boto3 call that failed."""
    response = getattr(exc, "response", None) or {}
    code = (response.get("Error") or {}).get("Code", "")
    http = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    original = response.get("OriginalStatusCode")  # SageMaker ModelError carries the engine's
    name = type(exc).__name__
    if code.lower() in THROTTLE_CODES or http == 429 or original == 429:
        return THROTTLED, f"{code or name}: {exc}"[:300]
    if "Timeout" in name or "timed out" in str(exc).lower():
        return TIMEOUT, f"{name}: {exc}"[:300]
    return ERROR, f"{code or name}: {exc}"[:300]
