"""boto3 clients of the tool itself on the local stack: the provisioner's, the emulator's pollers and watchers.

The tool's own, apart from the application's (issue 36: the emulator and the local stack import nothing of
seglog's adapter). They talk to the local endpoints with the key pair the local stack accepts
(:data:`seglog_stack.info.ACCESS_KEY_ID`), keep the SDK's standard retry mode (AWS SDKs and Tools Reference Guide,
"Retry behavior": 3 attempts unless told), and address S3 buckets by path, the only style LocalStack serves on
127.0.0.1 (a virtual-host name like bucket.127.0.0.1 does not resolve).
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

from seglog_stack.info import ACCESS_KEY_ID, SECRET_ACCESS_KEY


def local_session(region: str) -> boto3.Session:
    """A session with the key pair the local stack accepts (it checks none; the emulator's gateway checks it)."""
    return boto3.Session(aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY,
                         region_name=region)


def local_client(service: str, *, endpoint_url: str, region: str, session: boto3.Session | None = None,
                 retries: int = 3) -> Any:
    """A client for ``service`` at ``endpoint_url``.

    Args:
        session: the session to make it from (default: :func:`local_session` in ``region``).
        retries: botocore's ``max_attempts`` in standard mode.
    """
    config = Config(region_name=region, retries={"mode": "standard", "max_attempts": retries}, connect_timeout=5,
                    read_timeout=20, max_pool_connections=64, s3={"addressing_style": "path"})
    return (session or local_session(region)).client(service, config=config, endpoint_url=endpoint_url)
