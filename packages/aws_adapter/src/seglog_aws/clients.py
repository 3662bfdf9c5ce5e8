"""boto3 clients configured for seglog: endpoints from the AWS SDK's own variables, our retries, our timeouts.

Endpoints follow the SDK convention (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB, ..._S3, ...), which boto3
reads itself (AWS SDKs and Tools Reference Guide, "Service-specific endpoints"), so nothing here knows whether
it runs locally or on AWS.

botocore's own retries are switched off for DynamoDB by default (max_attempts=1), and for every client a
:class:`~seglog_aws.backend.Backend` makes: seglog's stores retry above botocore with a RetryPolicy that knows the
invocation's deadline and which writes may be sent again after a lost answer, and the log's append path retries
itself. Other clients (the stack manager's, the emulator's pollers) keep the SDK's standard retry mode for S3
and SQS (AWS SDKs and Tools Reference Guide, "Retry behavior").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import boto3
from botocore.config import Config

DEFAULT_REGION = "us-east-1"

#: Called with every client :func:`client` makes: how the emulator's worker processes attach fault injection
#: and request counting to the clients a handler builds, without the handler knowing.
_client_hooks: list[Callable[[Any], object]] = []


def on_client_created(hook: Callable[[Any], object]) -> None:
    """Call ``hook(client)`` on every client made from now on in this process."""
    _client_hooks.append(hook)


def region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION


def _is_local() -> bool:
    return any(k.startswith("AWS_ENDPOINT_URL") for k in os.environ)


def client(service: str, *, session: boto3.Session | None = None, retries: int | None = None,
           endpoint_url: str | None = None) -> Any:
    """A boto3 client for ``service`` with seglog's configuration.

    Args:
        retries: botocore's max_attempts in standard mode (default: 1 for DynamoDB, 3 for the others).
        endpoint_url: overrides the SDK's endpoint resolution (used for the local stack).
    """
    # A session given with a region (a deployed stack's) is used there; otherwise the SDK variables decide.
    region_name = session.region_name if session is not None and session.region_name else region()
    session = session or boto3.Session()
    max_attempts = retries if retries is not None else (1 if service == "dynamodb" else 3)
    config = Config(
        region_name=region_name,
        retries={"mode": "standard", "max_attempts": max_attempts},
        connect_timeout=5,
        read_timeout=20,
        max_pool_connections=64,
        # LocalStack serves buckets by path; virtual-host names like bucket.127.0.0.1 do not resolve.
        s3={"addressing_style": "path"} if (endpoint_url or _is_local()) else {},
    )
    made = session.client(service, config=config, endpoint_url=endpoint_url)
    for hook in _client_hooks:
        hook(made)
    return made


#: The key pair of the local stack: LocalStack checks none, and the emulator's gateway accepts this one by default
#: (EmulatorSettings.api_credentials).
LOCAL_ACCESS_KEY_ID = "test"
LOCAL_SECRET_ACCESS_KEY = "test"


def local_session(region_name: str = DEFAULT_REGION) -> boto3.Session:
    """A session with the dummy credentials the local stack accepts (it checks none)."""
    return boto3.Session(aws_access_key_id=LOCAL_ACCESS_KEY_ID, aws_secret_access_key=LOCAL_SECRET_ACCESS_KEY,
                         region_name=region_name)
