"""S3BlobStore: the BlobStore port on the bucket (DESIGN §2: large bodies, snapshots, archives).

With a retry policy, throttles (SlowDown) and 5xx are retried here, bounded by the invocation's deadline (AWS
SDKs and Tools Reference Guide, "Retry behavior"). Every call is safe to repeat after a lost answer: a put writes
the same bytes under a key chosen for them (deterministic chunk keys, an entry id and its body's digest), a
conditional put finds its own write and changes nothing, tags are removed idempotently, a delete of a deleted key
succeeds, and reads change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError

from seglog_aws.errors import translate
from seglog_core import errors
from seglog_core.retry import RetryPolicy, call_with_retries

#: The tag the bucket's lifecycle rule matches to expire objects nobody claimed (template.yaml).
DISCARDABLE_TAG = "discardable"

_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


class S3BlobStore:
    """Objects in one bucket through the low-level S3 client (retried with ``retry``; None: each call once)."""

    def __init__(self, client: Any, *, bucket: str, retry: RetryPolicy | None = None) -> None:
        self._s3 = client
        self.bucket = bucket
        self.retry = retry

    def _call(self, what: str, key: str, write: bool, method: Any, **params: Any) -> dict[str, Any]:
        if self.retry is None:
            return self._once(what, key, write, method, params)
        return call_with_retries(self.retry, lambda: self._once(what, key, write, method, params),
                                 what=f"S3 {what}", retry_unknown=True)

    def _once(self, what: str, key: str, write: bool, method: Any, params: dict[str, Any]) -> dict[str, Any]:
        try:
            response: dict[str, Any] = method(Bucket=self.bucket, **params)
            if "Body" in response:  # read inside the try: a connection lost mid-body is retried like any other
                response["Body"] = response["Body"].read()
            return response
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _MISSING:
                raise errors.BlobNotFoundError(key) from exc
            raise translate(exc, what=f"S3 {what} {key}", write=write) from exc
        except Exception as exc:
            translated = translate(exc, what=f"S3 {what} {key}", write=write)
            if translated is exc:
                raise
            raise translated from exc

    def put(self, key: str, data: bytes, *, discardable: bool = False, content_type: str | None = None) -> None:
        extra: dict[str, Any] = {}
        if discardable:
            extra["Tagging"] = f"{DISCARDABLE_TAG}=true"
        if content_type:
            extra["ContentType"] = content_type
        self._call("PutObject", key, True, self._s3.put_object, Key=key, Body=data, **extra)

    def put_if_absent(self, key: str, data: bytes, *, discardable: bool = False) -> bool:
        """PutObject with ``If-None-Match: *``: "If an identical key name is found in the bucket, the operation
        fails" with 412 PreconditionFailed and the object, its tags included, is left as it was; two such writes
        in flight at once may answer 409 ConditionalRequestConflict, to be retried (Amazon S3 User Guide, "How to
        prevent object overwrites with conditional writes",
        https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html). It needs s3:PutObject
        only, the permission a plain put needs."""
        extra: dict[str, Any] = {"Tagging": f"{DISCARDABLE_TAG}=true"} if discardable else {}

        def once() -> bool:
            try:
                self._once("PutObject", key, True, self._s3.put_object,
                           {"Key": key, "Body": data, "IfNoneMatch": "*", **extra})
            except errors.StoreError as exc:
                if exc.code == "PreconditionFailed":
                    return False
                if exc.code == "ConditionalRequestConflict":  # another conditional write of the key in flight
                    raise errors.TransientStoreError(str(exc), code=exc.code) from exc
                raise
            return True

        if self.retry is None:
            return once()
        return call_with_retries(self.retry, once, what="S3 PutObject", retry_unknown=True)

    def get(self, key: str) -> bytes:
        data: bytes = self._call("GetObject", key, False, self._s3.get_object, Key=key)["Body"]
        return data

    def is_discardable(self, key: str) -> bool:
        response = self._call("GetObjectTagging", key, False, self._s3.get_object_tagging, Key=key)
        return any(t["Key"] == DISCARDABLE_TAG for t in response.get("TagSet", []))

    def keep(self, key: str) -> None:
        # DeleteObjectTagging removes every tag; the discardable tag is the only one seglog sets.
        self._call("GetObjectTagging", key, False, self._s3.get_object_tagging, Key=key)
        self._call("DeleteObjectTagging", key, True, self._s3.delete_object_tagging, Key=key)

    def delete(self, key: str) -> None:
        self._call("DeleteObject", key, True, self._s3.delete_object, Key=key)

    def keys(self, prefix: str) -> Iterator[str]:
        params: dict[str, Any] = {"Prefix": prefix}
        while True:
            response = self._call("ListObjectsV2", prefix, False, self._s3.list_objects_v2, **params)
            for obj in response.get("Contents", []):
                yield obj["Key"]
            if not response.get("IsTruncated"):
                return
            params["ContinuationToken"] = response["NextContinuationToken"]
