"""The artifacts bucket: where a deploy uploads the functions' zips (and a template too large to send inline).

One bucket per account and region, ``seglog-artifacts-<account>-<region>``, created on first deploy and shared
by every stack there. It is versioned (a deployed template names the exact object version of its code),
encrypted at rest (SSE-S3), refuses plain HTTP (a Deny on ``aws:SecureTransport`` false: Amazon S3 User Guide,
"Security best practices for Amazon S3") and blocks every form of public access.

Objects are named by content (``functions/<sha256>.zip``): an unchanged artifact is not uploaded again and
names the same key and version, so an unchanged tree deploys as "no changes".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import structlog
from botocore.exceptions import ClientError

from seglog_deploy.errors import ArtifactsBucketError
from seglog_deploy.target import Target

log = structlog.get_logger("seglog.deploy")

BUCKET_PREFIX = "seglog-artifacts"


@dataclass(frozen=True, kw_only=True)
class S3Location:
    """An uploaded object, as a SAM ``CodeUri`` names it."""

    bucket: str
    key: str
    version: str | None = None

    def code_uri(self) -> dict[str, str]:
        """The ``CodeUri`` object of AWS::Serverless::Function (Bucket, Key, Version)."""
        uri = {"Bucket": self.bucket, "Key": self.key}
        if self.version:
            uri["Version"] = self.version
        return uri


def bucket_name(account: str, region: str) -> str:
    """The artifacts bucket of an account and region (S3 names: lower case, at most 63 characters)."""
    return f"{BUCKET_PREFIX}-{account}-{region}"[:63]


def tls_only_policy(bucket: str) -> dict[str, Any]:
    """Deny every request to the bucket and its objects that does not come over TLS."""
    return {
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }],
    }


class ArtifactsBucket:
    """The artifacts bucket of one target; :meth:`ensure` before the first upload."""

    def __init__(self, target: Target, name: str | None = None) -> None:
        self.target = target
        self.s3 = target.client("s3")
        self.name = name or bucket_name(target.account_id(), target.region)

    def ensure(self) -> bool:
        """Create the bucket with its settings unless it exists; True when it was created now.

        Raises:
            ArtifactsBucketError: the name belongs to another account, or the bucket cannot be created.
        """
        try:
            self.s3.head_bucket(Bucket=self.name)
            return False
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("403", "Forbidden", "AccessDenied"):
                raise ArtifactsBucketError(
                    f"the artifacts bucket {self.name} exists but your credentials cannot use it (another "
                    "account owns the name, or a policy denies you): pass --artifacts-bucket NAME") from exc
            if code not in ("404", "NoSuchBucket", "NotFound"):
                raise
        log.info("deploy.artifacts_bucket.create", bucket=self.name, region=self.target.region)
        try:
            create: dict[str, Any] = {"Bucket": self.name}
            if self.target.region != "us-east-1":  # us-east-1 refuses a LocationConstraint naming itself
                create["CreateBucketConfiguration"] = {"LocationConstraint": self.target.region}
            self.s3.create_bucket(**create)
            self.s3.put_public_access_block(Bucket=self.name, PublicAccessBlockConfiguration={
                "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True})
            self.s3.put_bucket_versioning(Bucket=self.name, VersioningConfiguration={"Status": "Enabled"})
            self.s3.put_bucket_encryption(Bucket=self.name, ServerSideEncryptionConfiguration={
                "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
            self.s3.put_bucket_policy(Bucket=self.name, Policy=json.dumps(tls_only_policy(self.name)))
        except ClientError as exc:
            raise ArtifactsBucketError(f"cannot create the artifacts bucket {self.name}: {exc}") from exc
        return True

    def upload(self, data: bytes, *, prefix: str, suffix: str) -> S3Location:
        """Upload ``data`` as ``<prefix>/<sha256><suffix>`` unless that object is there already."""
        key = f"{prefix}/{hashlib.sha256(data).hexdigest()}{suffix}"
        try:
            head = self.s3.head_object(Bucket=self.name, Key=key)
            return S3Location(bucket=self.name, key=key, version=head.get("VersionId"))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
                raise
        put = self.s3.put_object(Bucket=self.name, Key=key, Body=data)
        log.info("deploy.artifact.uploaded", bucket=self.name, key=key, bytes=len(data))
        return S3Location(bucket=self.name, key=key, version=put.get("VersionId"))

    def url(self, location: S3Location) -> str:
        """An https URL of the object for CloudFormation's TemplateURL (path style; the endpoint locally)."""
        if self.target.endpoint_url:
            return f"{self.target.endpoint_url.rstrip('/')}/{location.bucket}/{location.key}"
        return f"https://s3.{self.target.region}.amazonaws.com/{location.bucket}/{location.key}"
