"""The large-entry flow (DESIGN §3): a presigned S3 PUT, the client's upload, then the entry.

1. ``POST .../uploads`` answers a presigned PUT URL for ``uploads/{log}/{upload_id}``. Size, content type, the
   ``discardable=true`` tag and ``If-None-Match: *`` are signed headers (SigV4 query auth: ``X-Amz-SignedHeaders``
   lists ``content-length;content-type;host;if-none-match;x-amz-tagging``), so S3 refuses a PUT of another size
   or type, or one without the tag: the object carries the tag from its first byte and expires unless an entry
   claims it. The URL writes once: S3 answers a second PUT 412 PreconditionFailed and keeps the first object
   (Amazon S3 User Guide, "How to prevent object overwrites with conditional writes",
   https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html; PutObject's ``If-None-Match``:
   "Uploads the object only if the object key name does not already exist"). Without it, anyone holding the URL
   could replace an upload for its 15 minutes, after its completion too: an import's file is its entry's
   ``source``. A PUT without the header fails the signature on AWS; LocalStack skips signature checks, so there
   only a client that sends the headers it was given is held to one write (LocalStack 2026.3 honours the
   condition itself: ``tests/test_api_uploads.py``).
2. The client PUTs the bytes with the headers it was given (a retried PUT answered 412 found its earlier try).
3. ``POST .../uploads/{upload_id}/complete`` checks the object (HeadObject), reads and parses it, and the
   route appends the entry with its body stored in S3 (``E``, under the entry's own content-addressed key).

An imported file is kept (README: "the file is kept in the bucket"): it is the Import entry's ``source``, so the
completion removes its discardable tag once the file parses, before the entry is written. Kept first, so no crash
and no order of tries can leave a landed Import whose file then expires; an Import refused after that (an entry
id reused, contention) leaves a kept file no entry names: a cost, never a loss. Nothing tags it again: a range
upload is re-tagged (below), an import upload never is. Uploads live under ``uploads/`` and not ``entries/``:
an entry's body is its own object, and `log verify` holds every kept object under ``entries/`` to be one.

A presigned URL cannot bound a size range (only a POST policy's ``content-length-range`` can); signing the
exact Content-Length is the PUT equivalent (Amazon S3 User Guide, "Uploading objects with presigned URLs").
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final

import boto3
import msgspec
from botocore.config import Config
from botocore.exceptions import ClientError

from seglog_aws.clients import region
from seglog_aws.errors import translate
from seglog_aws.s3_blob_store import DISCARDABLE_TAG
from seglog_core import errors
from seglog_core.bodies import MAX_BODY
from seglog_core.ports import BlobStore
from seglog_core.schema import Body, Import, SetRange
from seglog_core.sheet import parse_ref, read_import
from seglog_services.api.errors import ApiError
from seglog_services.api.patterns import any_case
from seglog_services.api.schemas import RANGE_UPLOAD_DECODER, UploadRequest

XLSX: Final = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
#: The content types an upload may have, and the entry type each one can become.
CONTENT_TYPES: Final = {"application/json": "setrng", "text/csv": "imp", XLSX: "imp"}
#: The file name read_import sees, which picks the parser by extension.
IMPORT_EXTENSIONS: Final = {"text/csv": ".csv", XLSX: ".xlsx"}
#: Largest upload: the largest body an entry may have.
MAX_UPLOAD_BYTES: Final = MAX_BODY
#: How long a presigned URL stays valid, at most (and by default).
MAX_EXPIRES_SECONDS: Final = 900
TAGGING: Final = f"{DISCARDABLE_TAG}=true"
#: Namespace of the entry id derived from an upload id when the client gives none, so that repeating a
#: completion names the same entry (and is deduplicated) instead of appending it twice.
UPLOAD_ENTRY_NAMESPACE: Final = uuid.UUID("6d1b2f0e-3c35-5b8e-9a6c-2f4c1e7b9a10")


def upload_key(log_id: uuid.UUID, upload_id: uuid.UUID) -> str:
    """Where an upload goes: ``uploads/{log}/{upload id}`` (an imported file stays there, kept)."""
    return f"uploads/{log_id}/{upload_id}"


def default_entry_id(upload_id: uuid.UUID) -> uuid.UUID:
    return uuid.uuid5(UPLOAD_ENTRY_NAMESPACE, str(upload_id))


def media_type(content_type: str) -> str:
    """``Text/CSV; charset=utf-8`` -> ``text/csv``: parameters and spaces or tabs around dropped, ASCII case folded
    (RFC 9110 §8.3.1). The OpenAPI document's pattern (:func:`content_type_pattern`) says the same."""
    kind = content_type.split(";", 1)[0].strip(" \t")
    return kind.lower() if kind.isascii() else kind


def content_type_pattern() -> str:
    """The ECMA-262 pattern of a ``content_type`` :func:`media_type` accepts (one of CONTENT_TYPES)."""
    return "^[ \t]*(" + "|".join(any_case(kind) for kind in CONTENT_TYPES) + ")[ \t]*(;[\\s\\S]*)?$"


def presign_client() -> Any:
    """An S3 client that presigns with SigV4 (botocore would pick SigV2 for us-east-1, which signs no headers)."""
    local = any(name.startswith("AWS_ENDPOINT_URL") for name in os.environ)
    config = Config(region_name=region(), signature_version="s3v4",
                    s3={"addressing_style": "path"} if local else {}, retries={"mode": "standard"})
    return boto3.Session().client("s3", config=config)


@dataclass(kw_only=True)
class Uploads:
    """Presigns uploads and turns uploaded objects into entry bodies."""

    s3: Any
    bucket: str
    blobs: BlobStore
    expires_in: int = MAX_EXPIRES_SECONDS
    #: Makes each upload's id (a seam: the simulator draws them from its seed).
    new_id: Callable[[], uuid.UUID] = uuid.uuid4

    def presign(self, log_id: uuid.UUID, request: UploadRequest) -> dict[str, Any]:
        """Step 1: a presigned PUT for a new upload id, and the headers the PUT must carry."""
        if request.size <= 0:
            raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_size",
                           f"size is {request.size}: give the upload's size in bytes (at least 1)")
        if request.size > MAX_UPLOAD_BYTES:
            raise ApiError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large",
                           f"size is {request.size} bytes, the limit is {MAX_UPLOAD_BYTES}: split the data into "
                           "several entries")
        content_type = media_type(request.content_type)
        if content_type not in CONTENT_TYPES:
            raise ApiError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported_content_type",
                           f"content_type {request.content_type!r} is not accepted: use one of "
                           f"{', '.join(CONTENT_TYPES)}")
        upload_id = self.new_id()
        key = upload_key(log_id, upload_id)
        params = {"Bucket": self.bucket, "Key": key, "ContentType": content_type,
                  "ContentLength": request.size, "Tagging": TAGGING, "IfNoneMatch": "*"}
        try:
            url = self.s3.generate_presigned_url("put_object", Params=params, ExpiresIn=self.expires_in)
        except Exception as exc:  # credentials could not be resolved, for one
            raise translate(exc, what="S3 presign PutObject", write=False) from exc
        headers = {"Content-Type": content_type, "Content-Length": str(request.size), "x-amz-tagging": TAGGING,
                   "If-None-Match": "*"}
        return {"upload_id": str(upload_id), "key": key, "url": url, "method": "PUT", "headers": headers,
                "expires_in": self.expires_in}

    def read(self, log_id: uuid.UUID, upload_id: uuid.UUID, entry_type: str) -> Body:
        """Step 3: the body of an uploaded object, checked and parsed (CSV/XLSX import, or a JSON range).

        Raises:
            ApiError: no such upload (404), too large (413); 422 for an object that cannot become the entry (a
                content type that does not fit ``entry_type``, JSON that is not a range): the completion matched
                the OpenAPI document, the upload is what is wrong.
            InvalidInputError: an import that does not parse (ImportFileError), cells out of range or too large.
            StoreError: S3 failed.
        """
        key = upload_key(log_id, upload_id)
        head = self._head(key, upload_id)
        size = int(head.get("ContentLength", 0))
        content_type = media_type(str(head.get("ContentType", "")))
        if size > MAX_UPLOAD_BYTES:
            raise ApiError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large",
                           f"upload {upload_id} is {size} bytes, the limit is {MAX_UPLOAD_BYTES}: split the data")
        if CONTENT_TYPES.get(content_type) != entry_type:
            fitting = [t for t, kind in CONTENT_TYPES.items() if kind == entry_type]
            raise ApiError(HTTPStatus.UNPROCESSABLE_ENTITY, "content_type_mismatch",
                           f"upload {upload_id} has content type {content_type or 'none'!r}, a {entry_type!r} "
                           f"entry needs {' or '.join(fitting)}: upload the file again with a fitting type")
        data = self.blobs.get(key)
        if entry_type == "imp":
            fmt, rows = read_import(f"{upload_id}{IMPORT_EXTENSIONS[content_type]}", data)
            self.keep(key)  # the Import's source, kept before its entry is written (module docstring)
            return Import(source=key, format=fmt, rows=rows)
        self.mark_discardable(key)
        try:
            upload = RANGE_UPLOAD_DECODER.decode(data)
        except msgspec.DecodeError as exc:
            raise ApiError(HTTPStatus.UNPROCESSABLE_ENTITY, "invalid_upload",
                           f"the uploaded JSON is not a range ({exc}): upload an object "
                           '{"ref": "A1", "values": [[...], ...]}') from None
        try:
            row, col = parse_ref(upload.ref)
        except errors.InvalidCellRefError as exc:
            raise ApiError(HTTPStatus.UNPROCESSABLE_ENTITY, "invalid_upload",
                           f"the uploaded range's ref is not a cell ({exc}): upload it again with its top-left "
                           "cell as A1..XFD1048576") from None
        return SetRange(row=row, col=col, values=upload.values)

    def mark_discardable(self, key: str) -> None:
        """Tag a range upload ``discardable=true`` (again): its entry's body is a copy, the upload itself is garbage.

        The tag is a signed header of the PUT, so on AWS the object has it already; S3 implementations that
        skip signature checks (LocalStack) accept a PUT without it, and an untagged upload would never expire.
        """
        self._call("PutObjectTagging", key, True, self.s3.put_object_tagging, Key=key,
                   Tagging={"TagSet": [{"Key": DISCARDABLE_TAG, "Value": "true"}]})

    def keep(self, key: str) -> None:
        """Remove the discardable tag of a body a landed entry references (PutObjectTagging, empty set)."""
        self._call("PutObjectTagging", key, True, self.s3.put_object_tagging, Key=key, Tagging={"TagSet": []})

    def _head(self, key: str, upload_id: uuid.UUID) -> dict[str, Any]:
        try:
            return self._call("HeadObject", key, False, self.s3.head_object, Key=key)
        except errors.BlobNotFoundError:
            raise ApiError(HTTPStatus.NOT_FOUND, "upload_not_found",
                           f"no upload {upload_id} for this sheet: PUT the file to the url step 1 gave "
                           "(before it expires), then complete") from None

    def _call(self, what: str, key: str, write: bool, method: Any, **params: Any) -> dict[str, Any]:
        """One S3 call, its failures translated into the core's errors (as S3BlobStore does)."""
        try:
            response: dict[str, Any] = method(Bucket=self.bucket, **params)
            return response
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                raise errors.BlobNotFoundError(key) from exc
            raise translate(exc, what=f"S3 {what} {key}", write=write) from exc
        except Exception as exc:
            translated = translate(exc, what=f"S3 {what} {key}", write=write)
            if translated is exc:
                raise
            raise translated from exc
