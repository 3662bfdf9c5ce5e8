"""An archive survives being overwritten or deleted (issue 22 point 2): the snapshot bucket is versioned
(template.yaml SnapshotBucket, applied locally by the provisioner), so the version retention wrote stays
restorable for ArchiveNoncurrentVersionDays (Amazon S3 User Guide, "Retaining multiple versions of objects with S3
Versioning"). On the real local stack, whose S3 keeps versions as AWS does."""

from __future__ import annotations

import pytest

from seglog_aws.backend import Backend
from seglog_aws.clients import client, local_session
from seglog_core import errors
from seglog_core.retention import apply_retention, archive_key, read_archive
from seglog_core.verify import verify_log
from seglog_plugin.resources import resources_of
from seglog_stack import local
from test_retention import KEEP_TWO, make_log

pytestmark = pytest.mark.stack


def test_an_overwritten_then_deleted_archive_is_restored_from_the_version_retention_wrote(
        deployment: local.LocalDeployment, backend: Backend) -> None:
    """Retention archives segment 0 and removes its entries from DynamoDB, so the archive is their only copy. A
    later overwrite and a delete of it (a bug, a wrong tool, a hand) each leave the earlier version: it is listed,
    GetObject with its VersionId returns the bytes retention wrote, and putting them back makes the log whole."""
    store, blobs = backend.store, backend.blobs
    s3 = client("s3", session=local_session(deployment.region), endpoint_url=deployment.endpoints["s3"])
    bucket = resources_of(deployment).bucket
    log_id = make_log(store, blobs, segments=3)
    whole = list(store.entries(log_id, 0))
    assert [0] == apply_retention(store, blobs, log_id, KEEP_TWO)
    key = archive_key(log_id, 0)
    written = s3.head_object(Bucket=bucket, Key=key)["VersionId"]
    original = blobs.get(key)
    before = verify_log(store, log_id, blobs=blobs).violations  # make_log's stand-in snapshot roots (I3) only

    blobs.put(key, b"not an archive")
    blobs.delete(key)

    listed = s3.list_object_versions(Bucket=bucket, Prefix=key)
    versions = {v["VersionId"]: v["IsLatest"] for v in listed["Versions"]}
    assert (2, False) == (len(versions), versions[written])  # retention's and the overwrite's, neither current
    assert [True] == [m["IsLatest"] for m in listed["DeleteMarkers"]]
    with pytest.raises(errors.BlobNotFoundError):
        blobs.get(key)
    lost = [v for v in verify_log(store, log_id, blobs=blobs).violations if v not in before]
    assert [0] == sorted({v.segment for v in lost}), lost
    restored = s3.get_object(Bucket=bucket, Key=key, VersionId=written)["Body"].read()
    assert original == restored

    # Put back as the current version (AWS also restores with CopyObject from the version id, which LocalStack
    # refuses as "copy an object to itself" whatever the version).
    blobs.put(key, restored)
    assert whole == read_archive(blobs, key)
    assert before == verify_log(store, log_id, blobs=blobs).violations
