"""SimS3 answers as S3 does (Amazon S3 API Reference, cited per test) for the calls seglog makes."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from seglog_sim.aws.s3 import SimS3, SimS3Client


@pytest.fixture
def sim() -> SimS3:
    sim = SimS3(clock=lambda: 1_700_000_000.0)
    sim.create_bucket("b")
    return sim


@pytest.fixture
def s3(sim: SimS3) -> Any:
    return SimS3Client.of(sim)


def _error(call: Any) -> tuple[str, int]:
    with pytest.raises(ClientError) as caught:
        call()
    response = caught.value.response
    return str(response["Error"]["Code"]), int(response["ResponseMetadata"]["HTTPStatusCode"])


def test_put_then_get_returns_the_bytes_through_a_readable_body(s3: Any) -> None:
    s3.put_object(Bucket="b", Key="k", Body=b"hello world", ContentType="text/csv")
    got = s3.get_object(Bucket="b", Key="k")
    assert (b"hello", b" world", b"") == (got["Body"].read(5), got["Body"].read(), got["Body"].read())
    assert ("text/csv", 11) == (got["ContentType"], got["ContentLength"])
    s3.put_object(Bucket="b", Key="j", Body="text")
    assert ("binary/octet-stream", 4) == (s3.head_object(Bucket="b", Key="j")["ContentType"],
                                          s3.head_object(Bucket="b", Key="j")["ContentLength"])


def test_missing_things_are_the_errors_s3_sends(s3: Any) -> None:
    """GetObject / GetObjectTagging of a missing key: NoSuchKey 404; a missing bucket: NoSuchBucket 404; HeadObject
    has no body, so botocore sees a bare 404 (API Reference, HeadObject)."""
    assert ("NoSuchKey", 404) == _error(lambda: s3.get_object(Bucket="b", Key="nope"))
    assert ("NoSuchKey", 404) == _error(lambda: s3.get_object_tagging(Bucket="b", Key="nope"))
    assert ("NoSuchKey", 404) == _error(lambda: s3.delete_object_tagging(Bucket="b", Key="nope"))
    assert ("404", 404) == _error(lambda: s3.head_object(Bucket="b", Key="nope"))
    assert ("NoSuchBucket", 404) == _error(lambda: s3.put_object(Bucket="nope", Key="k", Body=b""))


def test_a_put_replaces_the_object_and_all_its_tags(s3: Any, sim: SimS3) -> None:
    """PutObject writes a whole new object: without a Tagging header the new one has no tags."""
    s3.put_object(Bucket="b", Key="k", Body=b"1", Tagging="discardable=true&owner=a%20b")
    assert [{"Key": "discardable", "Value": "true"}, {"Key": "owner", "Value": "a b"}] == s3.get_object_tagging(
        Bucket="b", Key="k")["TagSet"]
    assert 2 == s3.get_object(Bucket="b", Key="k")["TagCount"]
    s3.put_object(Bucket="b", Key="k", Body=b"2")
    assert {"k": (b"2", {})} == sim.objects("b")


def test_tags_are_replaced_or_removed_whole_and_checked(s3: Any) -> None:
    s3.put_object(Bucket="b", Key="k", Body=b"1", Tagging="a=1")
    s3.put_object_tagging(Bucket="b", Key="k", Tagging={"TagSet": [{"Key": "b", "Value": "2"}]})
    assert [{"Key": "b", "Value": "2"}] == s3.get_object_tagging(Bucket="b", Key="k")["TagSet"]
    s3.delete_object_tagging(Bucket="b", Key="k")
    assert [] == s3.get_object_tagging(Bucket="b", Key="k")["TagSet"]
    assert ("InvalidTag", 400) == _error(lambda: s3.put_object(Bucket="b", Key="k", Body=b"", Tagging="a=1&a=2"))
    eleven = "&".join(f"t{n}=v" for n in range(11))
    assert ("BadRequest", 400) == _error(lambda: s3.put_object(Bucket="b", Key="k", Body=b"", Tagging=eleven))


def test_delete_of_a_missing_key_succeeds_and_delete_objects_reports_every_key(s3: Any, sim: SimS3) -> None:
    """API Reference, DeleteObject / DeleteObjects: a key that is not there is reported deleted."""
    s3.put_object(Bucket="b", Key="a", Body=b"")
    assert 204 == s3.delete_object(Bucket="b", Key="never")["ResponseMetadata"]["HTTPStatusCode"]
    answer = s3.delete_objects(Bucket="b", Delete={"Objects": [{"Key": "a"}, {"Key": "never"}]})
    assert ([{"Key": "a"}, {"Key": "never"}], {}) == (answer["Deleted"], sim.objects("b"))


def test_list_objects_v2_pages_through_a_prefix_in_key_order(s3: Any) -> None:
    """API Reference, ListObjectsV2: ascending key order (UTF-8 binary), MaxKeys per page, KeyCount, IsTruncated
    and NextContinuationToken until the last page."""
    keys = ["p/b", "p/a", "p/é", "p/Z", "p/a/1", "q/a", "o"]
    for key in keys:
        s3.put_object(Bucket="b", Key=key, Body=key.encode())
    pages: list[tuple[list[str], int, bool]] = []
    params: dict[str, Any] = {"Bucket": "b", "Prefix": "p/", "MaxKeys": 2}
    while True:
        page = s3.list_objects_v2(**params)
        pages.append(([c["Key"] for c in page.get("Contents", [])], page["KeyCount"], page["IsTruncated"]))
        if not page["IsTruncated"]:
            break
        params["ContinuationToken"] = page["NextContinuationToken"]
    assert [(["p/Z", "p/a"], 2, True), (["p/a/1", "p/b"], 2, True), (["p/é"], 1, False)] == pages
    assert ("p/Z", 3) == next((c["Key"], c["Size"]) for c in s3.list_objects_v2(Bucket="b", Prefix="p")["Contents"])
    assert ["p/b", "p/é"] == [c["Key"] for c in s3.list_objects_v2(Bucket="b", Prefix="p/",
                                                                    StartAfter="p/a/1")["Contents"]]


def test_list_objects_v2_groups_by_delimiter(s3: Any) -> None:
    for key in ("a/1", "a/2", "b", "c/x/y"):
        s3.put_object(Bucket="b", Key=key, Body=b"")
    page = s3.list_objects_v2(Bucket="b", Delimiter="/")
    assert (["b"], ["a/", "c/"], 3) == ([c["Key"] for c in page["Contents"]],
                                        [p["Prefix"] for p in page["CommonPrefixes"]], page["KeyCount"])


def test_a_deleted_key_leaves_the_listing(s3: Any) -> None:
    for key in ("x/1", "x/2", "x/3"):
        s3.put_object(Bucket="b", Key=key, Body=b"")
    s3.delete_object(Bucket="b", Key="x/2")
    s3.put_object(Bucket="b", Key="x/1", Body=b"again")
    assert ["x/1", "x/3"] == [c["Key"] for c in s3.list_objects_v2(Bucket="b", Prefix="x/")["Contents"]]


def test_a_bad_continuation_token_is_invalid_argument(s3: Any) -> None:
    assert ("InvalidArgument", 400) == _error(lambda: s3.list_objects_v2(Bucket="b", ContinuationToken="%%%"))
