"""A handler for test_iam_enforced.py, run in the emulator's worker processes (this directory first on their
path, then the built artifact): one AWS call through seglog's client factory (as the services make them), and
what came of it."""

from __future__ import annotations

import os
from typing import Any

from botocore.exceptions import ClientError

from seglog_aws.clients import client


def _binary(value: Any) -> Any:
    """Events are JSON: DynamoDB binary values travel as ``{"B": "<hex>"}``."""
    if isinstance(value, dict):
        return {k: bytes.fromhex(v) if k == "B" else _binary(v) for k, v in value.items()}
    return value


def call(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """``{"service", "operation", "params"}`` -> ``{"ok"}`` or ``{"code", "message", "status"}``, and whether the
    emulator's IAM variable is visible to the function."""
    made = client(event["service"])
    visible = "SEGLOG_EMULATOR_IAM" in os.environ
    try:
        getattr(made, event["operation"])(**_binary(event["params"]))
    except ClientError as exc:
        return {"code": exc.response["Error"]["Code"], "message": exc.response["Error"].get("Message", ""),
                "status": exc.response["ResponseMetadata"]["HTTPStatusCode"], "iam_variable_visible": visible}
    return {"ok": True, "iam_variable_visible": visible}
