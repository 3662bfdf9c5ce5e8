"""The artifacts bucket: where a deploy uploads the functions' zips (and a template too large to send inline).

One bucket per account and region, ``seglog-artifacts-<account>-<region>``, created on first deploy and shared
by every stack there. It is versioned (a deployed template names the exact object version of its code),
encrypted at rest (SSE-S3), refuses plain HTTP (a Deny on ``aws:SecureTransport`` false: Amazon S3 User Guide,
"Security best practices for Amazon S3") and blocks every form of public access.

Objects are named by content (``functions/<sha256>.zip``): an unchanged artifact is not uploaded again and
names the same key and version, so an unchanged tree deploys as "no changes".

Trust, on every deploy (issue 18):

1. The owner. The name is predictable, so anyone can create it first in their own account. Every call on the
   bucket carries ``ExpectedBucketOwner`` = the credentials' account (STS GetCallerIdentity): S3 refuses a
   request with 403 Access Denied when another account owns the bucket (Amazon S3 User Guide, "Verifying bucket
   ownership with bucket owner condition"). CreateBucket is the one call that cannot carry it (S3 ignores it
   there, same page); a bucket it creates is ours, and the calls after it check again. :meth:`ArtifactsBucket.ensure`
   makes several such calls before the first upload, so a squatted bucket stops the deploy before any code is
   sent. (LocalStack 2026.3 checks the owner on the bucket policy calls only, and ignores it on HeadBucket,
   PutObject and the rest: there the policy read is what refuses.)
2. The hardening is read back and repaired on every deploy, not only after CreateBucket: a create interrupted
   half-way (or a bucket someone loosened) would otherwise stay unversioned, unencrypted or open to plain HTTP
   for good. Only what is missing or weaker is written: a stronger default encryption (SSE-KMS) is kept, and the
   TLS-only statement is added to a policy that has other statements rather than replacing it.
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


def with_tls_only(policy: dict[str, Any] | None, bucket: str) -> dict[str, Any]:
    """``policy`` with the TLS-only statement in it (replacing an older one of the same Sid), other statements
    kept; the TLS-only policy alone when there is none."""
    wanted = tls_only_policy(bucket)
    if policy is None:
        return wanted
    ours = wanted["Statement"][0]
    statements = [s for s in policy.get("Statement", []) if s == ours or s.get("Sid") != ours["Sid"]]
    if ours not in statements:
        statements.append(ours)
    return {**policy, "Statement": statements}


#: Error codes meaning "this bucket is not yours to use": another account owns it (a wrong ExpectedBucketOwner
#: answers 403 Access Denied), or a policy denies these credentials. A HEAD request has no body, hence "403".
REFUSED = frozenset({"403", "Forbidden", "AccessDenied"})
MISSING = frozenset({"404", "NoSuchBucket", "NotFound"})
PUBLIC_ACCESS_BLOCK = {"BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
                       "RestrictPublicBuckets": True}


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class ArtifactsBucket:
    """The artifacts bucket of one target; :meth:`ensure` before the first upload."""

    def __init__(self, target: Target, name: str | None = None) -> None:
        self.target = target
        self.s3 = target.client("s3")
        #: The account that must own the bucket: the credentials' own.
        self.owner = target.account_id()
        self.name = name or bucket_name(self.owner, target.region)
        #: What names the bucket in every call: the bucket and its expected owner, together (trust step 1).
        self._bucket = {"Bucket": self.name, "ExpectedBucketOwner": self.owner}

    def ensure(self) -> bool:
        """Create the bucket unless it exists, then check and repair its hardening; True when created now.

        Raises:
            ArtifactsBucketError: another account owns the name (or a policy denies you), or the bucket cannot be
                created or hardened.
        """
        try:
            created = self._create_if_missing()
            self.harden()
        except ClientError as exc:
            if _code(exc) in REFUSED:
                raise self._refused(exc) from exc
            raise ArtifactsBucketError(f"cannot create or harden the artifacts bucket {self.name}: {exc}",
                                       bucket=self.name, expected_owner=self.owner) from exc
        return created

    def _create_if_missing(self) -> bool:
        try:
            self.s3.head_bucket(**self._bucket)
            return False
        except ClientError as exc:
            if _code(exc) not in MISSING:
                raise
        log.info("deploy.artifacts_bucket.create", bucket=self.name, region=self.target.region)
        # CreateBucket takes no expected owner (S3 ignores one): a bucket it makes belongs to the caller.
        create: dict[str, Any] = {"Bucket": self.name}
        if self.target.region != "us-east-1":  # us-east-1 refuses a LocationConstraint naming itself
            create["CreateBucketConfiguration"] = {"LocationConstraint": self.target.region}
        self.s3.create_bucket(**create)
        return True

    def harden(self) -> list[str]:
        """Make the bucket private, versioned, encrypted and TLS-only where it is not; the settings written."""
        fixed: list[str] = []
        try:
            blocks = self.s3.get_public_access_block(**self._bucket)["PublicAccessBlockConfiguration"]
        except ClientError as exc:
            if _code(exc) != "NoSuchPublicAccessBlockConfiguration":
                raise
            blocks = {}
        if any(blocks.get(k) is not True for k in PUBLIC_ACCESS_BLOCK):
            self.s3.put_public_access_block(**self._bucket, PublicAccessBlockConfiguration=PUBLIC_ACCESS_BLOCK)
            fixed.append("PublicAccessBlock")
        if self.s3.get_bucket_versioning(**self._bucket).get("Status") != "Enabled":
            self.s3.put_bucket_versioning(**self._bucket, VersioningConfiguration={"Status": "Enabled"})
            fixed.append("Versioning")
        try:
            rules = self.s3.get_bucket_encryption(**self._bucket)["ServerSideEncryptionConfiguration"].get("Rules")
        except ClientError as exc:
            if _code(exc) != "ServerSideEncryptionConfigurationNotFoundError":
                raise
            rules = None
        # S3 encrypts every bucket with SSE-S3 since January 2023 (Amazon S3 User Guide, "Setting default
        # server-side encryption behavior for Amazon S3 buckets"); LocalStack answers no rule after
        # DeleteBucketEncryption, and an older bucket may have none: either way there is nothing stronger to keep.
        if not rules:
            self.s3.put_bucket_encryption(**self._bucket, ServerSideEncryptionConfiguration={
                "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
            fixed.append("Encryption")
        try:
            policy: dict[str, Any] | None = json.loads(self.s3.get_bucket_policy(**self._bucket)["Policy"])
        except ClientError as exc:
            if _code(exc) != "NoSuchBucketPolicy":
                raise
            policy = None
        wanted = with_tls_only(policy, self.name)
        if wanted != policy:
            self.s3.put_bucket_policy(**self._bucket, Policy=json.dumps(wanted))
            fixed.append("Policy")
        if fixed:
            log.warning("deploy.artifacts_bucket.hardened", bucket=self.name, fixed=fixed)
        return fixed

    def _refused(self, exc: ClientError) -> ArtifactsBucketError:
        return ArtifactsBucketError(
            f"the artifacts bucket {self.name} refused a request that expects it to belong to your account "
            f"{self.owner}: another account owns the name, or a policy denies you ({exc}). Nothing was uploaded. "
            "Pass --artifacts-bucket NAME with a bucket of this account (one of your own, or a new name)",
            bucket=self.name, expected_owner=self.owner)

    def upload(self, data: bytes, *, prefix: str, suffix: str) -> S3Location:
        """Upload ``data`` as ``<prefix>/<sha256><suffix>`` unless that object is there already.

        Raises:
            ArtifactsBucketError: the bucket is not this account's (or a policy denies you).
        """
        key = f"{prefix}/{hashlib.sha256(data).hexdigest()}{suffix}"
        try:
            try:
                head = self.s3.head_object(**self._bucket, Key=key)
                return S3Location(bucket=self.name, key=key, version=head.get("VersionId"))
            except ClientError as exc:
                if _code(exc) not in ("404", "NoSuchKey", "NotFound"):
                    raise
            put = self.s3.put_object(**self._bucket, Key=key, Body=data)
        except ClientError as exc:
            if _code(exc) in REFUSED:
                raise self._refused(exc) from exc
            raise
        log.info("deploy.artifact.uploaded", bucket=self.name, key=key, bytes=len(data))
        return S3Location(bucket=self.name, key=key, version=put.get("VersionId"))

    def url(self, location: S3Location) -> str:
        """An https URL of the object for CloudFormation's TemplateURL (path style; the endpoint locally)."""
        if self.target.endpoint_url:
            return f"{self.target.endpoint_url.rstrip('/')}/{location.bucket}/{location.key}"
        return f"https://s3.{self.target.region}.amazonaws.com/{location.bucket}/{location.key}"
