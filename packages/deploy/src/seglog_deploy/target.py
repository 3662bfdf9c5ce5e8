"""Where a deploy goes: an AWS account and region through one boto3 session, or a local endpoint.

The endpoint follows the AWS SDKs' own variable, ``AWS_ENDPOINT_URL`` (AWS SDKs and Tools Reference Guide,
"Service-specific endpoints"), so ``AWS_ENDPOINT_URL=http://127.0.0.1:4566 seglog deploy ...`` deploys to the
local stack's deploy profile exactly as to AWS. With a local endpoint and no credentials configured, the
dummy ones LocalStack accepts are used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from seglog_deploy.errors import TargetError

ENDPOINT_ENV = "AWS_ENDPOINT_URL"
#: Control-plane calls (DescribeStackEvents every second) meet throttling on a busy account: standard mode
#: retries them with backoff (AWS SDKs and Tools Reference Guide, "Retry behavior").
_RETRIES = {"mode": "standard", "max_attempts": 10}


@dataclass(frozen=True, kw_only=True)
class Target:
    """An account and region to deploy to, with the clients for it."""

    session: boto3.Session
    region: str
    endpoint_url: str | None = None
    _clients: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def resolve(cls, *, region: str | None = None, profile: str | None = None, endpoint_url: str | None = None,
                env: Mapping[str, str] | None = None) -> Target:
        """The target from the arguments, then the SDK's configuration (AWS_PROFILE, AWS_REGION, ~/.aws).

        Raises:
            TargetError: no region is configured, or the profile does not exist.
        """
        env = os.environ if env is None else env
        endpoint_url = endpoint_url or env.get(ENDPOINT_ENV) or None
        # botocore reads AWS_DEFAULT_REGION and the profile; AWS_REGION is the variable Lambda and most SDKs use.
        region = region or env.get("AWS_REGION") or None
        try:
            session = boto3.Session(profile_name=profile, region_name=region)
        except BotoCoreError as exc:
            raise TargetError(f"cannot use AWS profile {profile!r}: {exc}") from exc
        if endpoint_url and session.get_credentials() is None:
            session = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test",
                                    region_name=session.region_name)
        if not session.region_name:
            raise TargetError("no AWS region: pass --region, or set AWS_REGION (or a region in your AWS profile)")
        return cls(session=session, region=session.region_name, endpoint_url=endpoint_url)

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
