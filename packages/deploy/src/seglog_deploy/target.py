"""Where a deploy goes: an AWS account and region through one boto3 session, or a local endpoint.

The endpoint follows the AWS SDKs' own variable, ``AWS_ENDPOINT_URL`` (AWS SDKs and Tools Reference Guide,
"Service-specific endpoints"), so ``AWS_ENDPOINT_URL=http://127.0.0.1:4566 seglog deploy ...`` deploys to the
local stack's deploy profile exactly as to AWS. With a local endpoint and no credentials configured, the
dummy ones LocalStack accepts are used; with a local endpoint and no region configured, the local stack's region
(LocalStack answers in any region; the stack's config says which one `seglog up` uses). An endpoint that is not
local (a VPC endpoint of AWS, say) gets no default: the region must be given.

Commands printed for a person to paste (removal of what a stack retains) are built by :meth:`Target.aws_command`,
so they carry the same endpoint, profile, region and credentials as the call that found the resource.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from seglog_deploy.errors import TargetError
from seglog_stack.config import DEFAULT_REGION, Profile

ENDPOINT_ENV = "AWS_ENDPOINT_URL"
#: Control-plane calls (DescribeStackEvents every second) meet throttling on a busy account: standard mode
#: retries them with backoff (AWS SDKs and Tools Reference Guide, "Retry behavior").
_RETRIES = {"mode": "standard", "max_attempts": 10}
#: Host names of a local stack besides loopback addresses: LocalStack's own DNS name (and its subdomains) and the
#: service names Docker Compose gives it.
LOCAL_HOSTS = ("localhost", "localhost.localstack.cloud", "localstack", "host.docker.internal")
#: The credentials LocalStack accepts, used against a local endpoint when none are configured.
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}


@dataclass(frozen=True, kw_only=True)
class Target:
    """An account and region to deploy to, with the clients for it."""

    session: boto3.Session
    region: str
    endpoint_url: str | None = None
    #: The AWS credentials profile named on the command line (None: the SDK's default chain).
    profile: str | None = None
    #: Whether LocalStack's dummy credentials stand in for missing ones (local endpoints only).
    dummy_credentials: bool = False
    #: Set when the region was not configured but defaulted (to the local stack's): one line saying so.
    region_note: str | None = None
    _clients: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def resolve(cls, *, region: str | None = None, profile: str | None = None, endpoint_url: str | None = None,
                env: Mapping[str, str] | None = None, base: Path | None = None) -> Target:
        """The target from the arguments, then the SDK's configuration (AWS_PROFILE, AWS_REGION, ~/.aws); for a
        local endpoint without a configured region, the local stack's (``base``: where its .seglog is, the cwd).

        Raises:
            TargetError: no region is configured for AWS (or a non-local endpoint), or the profile does not exist.
        """
        env = os.environ if env is None else env
        endpoint_url = endpoint_url or env.get(ENDPOINT_ENV) or None
        # botocore reads AWS_DEFAULT_REGION and the profile; AWS_REGION is the variable Lambda and most SDKs use.
        region = region or env.get("AWS_REGION") or None
        try:
            session = boto3.Session(profile_name=profile, region_name=region)
        except BotoCoreError as exc:
            raise TargetError(f"cannot use AWS profile {profile!r}: {exc}") from exc
        note = None
        if not session.region_name and endpoint_url and is_local_endpoint(endpoint_url, base):
            region, where = local_stack_region(endpoint_url, base)
            note = (f"no AWS region configured: using {region}, {where} (--region or AWS_REGION to choose "
                    "another; LocalStack answers in any)")
            session = boto3.Session(profile_name=profile, region_name=region)
        dummy = bool(endpoint_url) and session.get_credentials() is None
        if dummy:
            session = boto3.Session(aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                                    aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                                    region_name=session.region_name)
        if not session.region_name:
            against = f"the endpoint {endpoint_url}, which is not a local stack's" if endpoint_url else "AWS"
            raise TargetError(f"no AWS region for {against}: pass --region, or set AWS_REGION (or a region in your "
                              "AWS profile)")
        return cls(session=session, region=session.region_name, endpoint_url=endpoint_url,
                   profile=None if dummy else profile,
                   dummy_credentials=dummy, region_note=note)

    def aws_command(self, *args: str) -> str:
        """``aws ARGS`` as a shell line that reaches what this target reaches: its region, endpoint and profile,
        and LocalStack's dummy credentials when those stood in for missing ones."""
        words = ["aws", *args, "--region", self.region]
        if self.endpoint_url:
            words += ["--endpoint-url", self.endpoint_url]
        if self.profile:
            words += ["--profile", self.profile]
        prefix = [f"{k}={v}" for k, v in DUMMY_CREDENTIALS.items()] if self.dummy_credentials else []
        return " ".join([*prefix, *(shlex.quote(w) for w in words)])

    @property
    def is_local(self) -> bool:
        """Whether this is a local endpoint rather than AWS."""
        return self.endpoint_url is not None

    def client(self, service: str) -> Any:
        """One client per service, made on first use."""
        if service not in self._clients:
            # Without a local endpoint, the per-service variables a local `seglog env` exports
            # (AWS_ENDPOINT_URL_S3, ...) are ignored: a deploy to AWS must not upload half of itself locally.
            options: dict[str, Any] = {"region_name": self.region, "retries": _RETRIES,
                                       "s3": {"addressing_style": "path"} if self.is_local else {},
                                       "ignore_configured_endpoint_urls": not self.is_local}
            config = Config(**options)
            self._clients[service] = self.session.client(service, config=config, endpoint_url=self.endpoint_url)
        return self._clients[service]

    def account_id(self) -> str:
        """The account the credentials belong to (STS GetCallerIdentity)."""
        try:
            return str(self.client("sts").get_caller_identity()["Account"])
        except (BotoCoreError, ClientError) as exc:
            raise TargetError(f"cannot read the AWS account of your credentials (sts get-caller-identity): {exc}. "
                              "Configure credentials (aws configure, AWS_PROFILE) and try again") from exc


def is_local_endpoint(endpoint_url: str, base: Path | None = None) -> bool:
    """Whether ``endpoint_url`` is a local stack's: a loopback address, a local host name (LOCAL_HOSTS and their
    subdomains), or the endpoint of a local stack recorded under ``base``/.seglog."""
    host = (urlsplit(endpoint_url).hostname or "").lower()
    try:
        if ipaddress.ip_address(host).is_loopback or host == "0.0.0.0":
            return True
    except ValueError:
        pass
    if any(host == name or host.endswith(f".{name}") for name in LOCAL_HOSTS):
        return True
    return _recorded_region(endpoint_url, base) is not None


def local_stack_region(endpoint_url: str, base: Path | None = None) -> tuple[str, str]:
    """The region of the local stack at ``endpoint_url`` and where it was read: the region a recorded local
    deployment at that endpoint uses (``.seglog/<profile>/deployment.json``), else the stack config's default."""
    recorded = _recorded_region(endpoint_url, base)
    if recorded is not None:
        return recorded
    return DEFAULT_REGION, "the local stack's region"


def _recorded_region(endpoint_url: str, base: Path | None) -> tuple[str, str] | None:
    wanted = _host_port(endpoint_url)
    root = (base or Path.cwd()) / ".seglog"
    for profile in Profile:
        path = root / profile.value / "deployment.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        endpoints = data.get("endpoints") or {}
        if isinstance(endpoints, dict) and any(_host_port(str(u)) == wanted for u in endpoints.values()):
            region = data.get("region")
            if isinstance(region, str) and region:
                return region, f"the region of the local stack recorded in {path}"
    return None


def _host_port(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return ("127.0.0.1" if host == "localhost" else host), parts.port
