"""SimS3: buckets of objects in memory, answering the S3 calls seglog's S3BlobStore makes, as boto3 does.

Unversioned buckets with strong read-after-write consistency ("Amazon S3 provides strong read-after-write
consistency for PUT and DELETE requests of objects": Amazon S3 User Guide, Welcome, "Amazon S3 data consistency
model"): a read sees the last write, a list sees every key written. A PUT replaces the object and its tags
whole. It injects no faults of its own: the simulator's world wraps :meth:`SimS3.call`.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import parse_qsl, quote

from seglog_sim.aws.facade import SimClient, SimService, client_error

#: "You can associate up to 10 tags with an object" (Amazon S3 User Guide, object-tagging).
MAX_TAGS: Final = 10
#: ListObjectsV2 "returns some or all (up to 1,000) of the objects in a bucket" (Amazon S3 API Reference).
MAX_KEYS: Final = 1000
#: "The object key name is a sequence of Unicode characters with UTF-8 encoding of up to 1,024 bytes long"
#: (Amazon S3 User Guide, object-keys).
MAX_KEY_BYTES: Final = 1024
DEFAULT_CONTENT_TYPE: Final = "binary/octet-stream"
#: The simulated S3 endpoint's host, after the bucket's name in a presigned URL (the simulation's region).
S3_HOST: Final = "s3.us-east-1.amazonaws.com"


class StreamingBody:
    """GetObject's Body: ``read()`` gives the bytes (all, or ``amt`` at a time, as botocore's does)."""

    __slots__ = ("_data", "_offset")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def read(self, amt: int | None = None) -> bytes:
        start = self._offset
        if amt is None:
            self._offset = len(self._data)
            return self._data if start == 0 else self._data[start:]
        self._offset = min(len(self._data), start + amt)
        return self._data[start:self._offset]

    def close(self) -> None:
        """Nothing to release."""


@dataclass(slots=True)
class S3Object:
    data: bytes
    tags: dict[str, str]
    content_type: str
    etag: str
    modified: float


@dataclass(slots=True)
class Bucket:
    objects: dict[str, S3Object] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # sorted: ListObjectsV2 answers in UTF-8 binary order


class SimS3(SimService):
    """Buckets of one account. ``clock`` (simulated seconds) dates LastModified; without one, every date is 0."""

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock
        self._buckets: dict[str, Bucket] = {}
        self._tag_sets: dict[str, dict[str, str]] = {}  # parsed Tagging headers by their text
        self._operations: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "CreateBucket": self._create_bucket, "PutObject": self._put_object, "GetObject": self._get_object,
            "HeadObject": self._head_object, "DeleteObject": self._delete_object,
            "DeleteObjects": self._delete_objects, "ListObjectsV2": self._list_objects_v2,
            "GetObjectTagging": self._get_object_tagging, "PutObjectTagging": self._put_object_tagging,
            "DeleteObjectTagging": self._delete_object_tagging,
        }

    def create_bucket(self, name: str) -> None:
        self._buckets.setdefault(name, Bucket())

    def objects(self, bucket: str) -> dict[str, tuple[bytes, dict[str, str]]]:
        """Every object of ``bucket`` in key order: key -> (data, tags)."""
        found = self._buckets[bucket]
        return {key: (found.objects[key].data, dict(found.objects[key].tags)) for key in found.keys}

    # ------------------------------------------------------------------------------------------ lookups

    def _bucket(self, operation: str, params: dict[str, Any]) -> Bucket:
        bucket = self._buckets.get(params["Bucket"])
        if bucket is None:
            raise client_error(operation, "NoSuchBucket", "The specified bucket does not exist", status=404)
        return bucket

    def _object(self, operation: str, params: dict[str, Any]) -> S3Object:
        """The object, or NoSuchKey (404) as GetObject and GetObjectTagging answer (Amazon S3 API Reference,
        GetObject: "If the object you request doesn't exist, the error that Amazon S3 returns depends on whether
        you also have the s3:ListBucket permission" — with it, 404 NoSuchKey)."""
        found = self._bucket(operation, params).objects.get(params["Key"])
        if found is None:
            raise client_error(operation, "NoSuchKey", "The specified key does not exist.", status=404)
        return found

    def _now(self) -> float:
        return self._clock() if self._clock is not None else 0.0

    def _tags(self, tagging: str) -> dict[str, str]:
        """PutObject's Tagging header: "The tag-set must be encoded as URL Query parameters. (For example,
        "Key1=Value1")" (Amazon S3 API Reference, PutObject). Parsed once per distinct text."""
        tags = self._tag_sets.get(tagging)
        if tags is None:
            pairs = parse_qsl(tagging, keep_blank_values=True)
            tags = dict(pairs)
            if len(tags) != len(pairs):
                raise client_error("PutObject", "InvalidTag", "Cannot provide multiple Tags with the same key")
            self._tag_sets[tagging] = tags
        return tags

    # ------------------------------------------------------------------------------------------ objects

    def _create_bucket(self, params: dict[str, Any]) -> dict[str, Any]:
        self.create_bucket(params["Bucket"])
        return {"Location": "/" + params["Bucket"]}

    def _put_object(self, params: dict[str, Any]) -> dict[str, Any]:
        bucket = self._bucket("PutObject", params)
        key = params["Key"]
        if not key or len(key.encode()) > MAX_KEY_BYTES:
            raise client_error("PutObject", "KeyTooLongError", "Your key is too long")
        body = params.get("Body", b"")
        data = body.read() if hasattr(body, "read") else body.encode() if isinstance(body, str) else bytes(body)
        tags = self._tags(params["Tagging"]) if params.get("Tagging") else {}  # shared, never mutated
        if len(tags) > MAX_TAGS:
            raise client_error("PutObject", "BadRequest", f"Object tags cannot be greater than {MAX_TAGS}")
        if "IfNoneMatch" in params:
            self._if_none_match(params["IfNoneMatch"], key in bucket.objects)
        etag = '"' + hashlib.md5(data, usedforsecurity=False).hexdigest() + '"'
        if key not in bucket.objects:
            bisect.insort(bucket.keys, key)
        bucket.objects[key] = S3Object(data=data, tags=tags, etag=etag, modified=self._now(),
                                       content_type=params.get("ContentType") or DEFAULT_CONTENT_TYPE)
        return {"ETag": etag}

    @staticmethod
    def _if_none_match(value: str, exists: bool) -> None:
        """A conditional write (Amazon S3 User Guide, "How to prevent object overwrites with conditional writes",
        https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html): "The If-None-Match header
        requires the * (asterisk) value"; "If an identical key name is found in the bucket, the operation fails"
        with 412 Precondition Failed, and nothing of the object changes. Calls are serial here, so the 409
        ConditionalRequestConflict of two writes in flight at once never arises."""
        if value != "*":
            raise client_error("PutObject", "NotImplemented", "A header you provided implies functionality that is "
                               "not implemented", status=501, sender=False)
        if exists:
            raise client_error("PutObject", "PreconditionFailed", "At least one of the pre-conditions you "
                               "specified did not hold", status=412, extra={"Condition": "If-None-Match"})

    def _metadata(self, found: S3Object) -> dict[str, Any]:
        answer = {"ContentLength": len(found.data), "ContentType": found.content_type, "ETag": found.etag,
                  "LastModified": datetime.fromtimestamp(int(found.modified), UTC)}
        if found.tags:
            answer["TagCount"] = len(found.tags)
        return answer

    def _get_object(self, params: dict[str, Any]) -> dict[str, Any]:
        found = self._object("GetObject", params)
        return {"Body": StreamingBody(found.data), **self._metadata(found)}

    def _head_object(self, params: dict[str, Any]) -> dict[str, Any]:
        """HEAD has no body, so a missing key reaches botocore as a bare 404: Code "404", Message "Not Found"
        (Amazon S3 API Reference, HeadObject: "a HEAD request has the same options as a GET operation on an
        object. The response is identical to the GET response except that there is no response body")."""
        found = self._bucket("HeadObject", params).objects.get(params["Key"])
        if found is None:
            raise client_error("HeadObject", "404", "Not Found", status=404)
        answer = self._metadata(found)
        answer.pop("TagCount", None)
        return answer

    def _delete_object(self, params: dict[str, Any]) -> dict[str, Any]:
        """Deleting a missing key succeeds (204) in an unversioned bucket (Amazon S3 API Reference,
        DeleteObject: "If the object specified in the request isn't found, Amazon S3 confirms the deletion by
        returning the result as deleted")."""
        bucket = self._bucket("DeleteObject", params)
        key = params["Key"]
        if bucket.objects.pop(key, None) is not None:
            del bucket.keys[bisect.bisect_left(bucket.keys, key)]
        return {"ResponseMetadata": {"HTTPStatusCode": 204}}

    def _delete_objects(self, params: dict[str, Any]) -> dict[str, Any]:
        """Up to 1,000 keys; each missing key is reported deleted too (Amazon S3 API Reference, DeleteObjects)."""
        self._bucket("DeleteObjects", params)
        wanted = params["Delete"]["Objects"]
        if not wanted or len(wanted) > MAX_KEYS:
            raise client_error("DeleteObjects", "MalformedXML", "The XML you provided was not well-formed or did "
                               "not validate against our published schema")
        for entry in wanted:
            self._delete_object({"Bucket": params["Bucket"], "Key": entry["Key"]})
        quiet = bool(params["Delete"].get("Quiet"))
        return {} if quiet else {"Deleted": [{"Key": entry["Key"]} for entry in wanted]}

    def _list_objects_v2(self, params: dict[str, Any]) -> dict[str, Any]:
        """ListObjectsV2: keys in ascending order ("Objects are returned sorted in an ascending order of the
        respective key names in the list"), at most MaxKeys (default 1,000) a page, a CommonPrefixes entry per
        Delimiter group, and an opaque NextContinuationToken while IsTruncated (Amazon S3 API Reference)."""
        bucket = self._bucket("ListObjectsV2", params)
        prefix = params.get("Prefix", "")
        delimiter = params.get("Delimiter", "")
        max_keys = min(int(params.get("MaxKeys", MAX_KEYS)), MAX_KEYS)
        keys = bucket.keys
        if "ContinuationToken" in params:
            index = bisect.bisect_left(keys, _from_token(params["ContinuationToken"]))
        else:
            index = bisect.bisect_right(keys, params["StartAfter"]) if params.get("StartAfter") else 0
        index = max(index, bisect.bisect_left(keys, prefix))
        contents: list[dict[str, Any]] = []
        common: list[str] = []
        truncated = False
        while index < len(keys) and keys[index].startswith(prefix):
            if len(contents) + len(common) == max_keys:
                truncated = True
                break
            key = keys[index]
            cut = key.find(delimiter, len(prefix)) if delimiter else -1
            if cut >= 0:
                group = key[:cut + len(delimiter)]
                common.append(group)
                index = bisect.bisect_left(keys, group + "\U0010ffff")  # past every key of the group
                continue
            found = bucket.objects[key]
            contents.append({"Key": key, "LastModified": datetime.fromtimestamp(int(found.modified), UTC),
                             "ETag": found.etag, "Size": len(found.data), "StorageClass": "STANDARD"})
            index += 1
        answer: dict[str, Any] = {"IsTruncated": truncated, "Name": params["Bucket"], "Prefix": prefix,
                                  "MaxKeys": max_keys, "KeyCount": len(contents) + len(common)}
        if contents:
            answer["Contents"] = contents
        if common:
            answer["CommonPrefixes"] = [{"Prefix": group} for group in common]
        if delimiter:
            answer["Delimiter"] = delimiter
        if "ContinuationToken" in params:
            answer["ContinuationToken"] = params["ContinuationToken"]
        if truncated:
            answer["NextContinuationToken"] = _to_token(keys[index])
        return answer

    # ------------------------------------------------------------------------------------------ tags

    def _get_object_tagging(self, params: dict[str, Any]) -> dict[str, Any]:
        found = self._object("GetObjectTagging", params)
        return {"TagSet": [{"Key": k, "Value": v} for k, v in found.tags.items()]}

    def _put_object_tagging(self, params: dict[str, Any]) -> dict[str, Any]:
        """Replaces the object's whole tag set (Amazon S3 API Reference, PutObjectTagging)."""
        found = self._object("PutObjectTagging", params)
        tag_set = params["Tagging"]["TagSet"]
        tags = {t["Key"]: t["Value"] for t in tag_set}
        if len(tags) != len(tag_set):
            raise client_error("PutObjectTagging", "InvalidTag", "Cannot provide multiple Tags with the same key")
        if len(tags) > MAX_TAGS:
            raise client_error("PutObjectTagging", "BadRequest", f"Object tags cannot be greater than {MAX_TAGS}")
        found.tags = tags
        return {}

    def _delete_object_tagging(self, params: dict[str, Any]) -> dict[str, Any]:
        """Removes every tag of the object (Amazon S3 API Reference, DeleteObjectTagging); 204."""
        self._object("DeleteObjectTagging", params).tags = {}
        return {"ResponseMetadata": {"HTTPStatusCode": 204}}


def _to_token(key: str) -> str:
    """An opaque continuation token naming the next key to list ("ContinuationToken is obfuscated and is not a
    real key": Amazon S3 API Reference, ListObjectsV2)."""
    return base64.urlsafe_b64encode(key.encode()).decode()


def _from_token(token: str) -> str:
    try:
        return base64.b64decode(token.encode(), altchars=b"-_", validate=True).decode()
    except ValueError:
        raise client_error("ListObjectsV2", "InvalidArgument", "The continuation token provided is incorrect",
                           ) from None


class SimS3Client(SimClient):
    """A boto3-shaped S3 client over ``call`` (a :class:`SimS3`'s, or the world's wrapper of it)."""

    OPERATIONS = ("CreateBucket", "PutObject", "GetObject", "HeadObject", "DeleteObject", "DeleteObjects",
                  "ListObjectsV2", "GetObjectTagging", "PutObjectTagging", "DeleteObjectTagging")

    @classmethod
    def of(cls, sim: SimS3) -> SimS3Client:
        return cls(sim.call)

    def generate_presigned_url(self, method: str, **options: Any) -> str:
        """A presigned PutObject URL, virtual-hosted style as boto3 makes them (its query names the signed headers;
        nothing checks the signature): the world's gateway takes a request to the bucket's host as S3's."""
        if method != "put_object":
            raise NotImplementedError(f"the simulated S3 client presigns put_object only, not {method}")
        params, expires = options["Params"], options.get("ExpiresIn", 3600)
        return (f"https://{params['Bucket']}.{S3_HOST}/{quote(params['Key'])}?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                f"&X-Amz-Expires={expires}&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost%3Bif-none-match"
                "%3Bx-amz-tagging&X-Amz-Signature=simulated")
