"""Is a port free, and is a stack process ready to serve?

LocalStack is ready when ``GET /_localstack/health`` lists every service we need as "available" (loads on
first request) or "running". DynamoDB Local is ready when a ListTables call succeeds. Each probe is one
short attempt; the caller loops until its deadline.
"""

from __future__ import annotations

import errno
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterable
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from seglog_stack.info import ACCESS_KEY_ID, SECRET_ACCESS_KEY

READY_STATES = frozenset({"available", "running"})
PROBE_TIMEOUT = 2.0


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could bind ``host:port`` now.

    SO_REUSEADDR as servers set it: a port with only TIME_WAIT connections left by a stopped stack counts as
    free, while a listening socket, or any socket bound without SO_REUSEADDR, holds it.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def localstack_health(url: str, timeout: float = PROBE_TIMEOUT) -> dict[str, Any] | None:
    """LocalStack's health document, or None if nothing (or something else) answers at ``url``."""
    try:
        with urllib.request.urlopen(f"{url}/_localstack/health", timeout=timeout) as response:
            data = json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("services"), dict) else None


def localstack_ready(url: str, services: Iterable[str], timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether LocalStack at ``url`` serves every one of ``services``."""
    health = localstack_health(url, timeout)
    if health is None:
        return False
    states = health["services"]
    return all(states.get(service) in READY_STATES for service in services)


def dynamodb_ready(url: str, region: str, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether a DynamoDB ListTables call at ``url`` succeeds (for LocalStack, this also starts its JVM)."""
    client = boto3.client(
        "dynamodb",
        endpoint_url=url,
        region_name=region,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
        config=Config(connect_timeout=timeout, read_timeout=max(timeout, 10.0), retries={"max_attempts": 1}),
    )
    try:
        client.list_tables(Limit=1)
    except (BotoCoreError, ClientError):
        return False
    finally:
        client.close()
    return True
