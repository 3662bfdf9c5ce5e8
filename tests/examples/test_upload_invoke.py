"""examples/upload-invoke runs through the emulator on the real local stack with IAM enforced (issue 36, point
5): an object created in the bucket reaches the function as S3's event (only keys the suffix filter passes), the
function reads it and calls another function with lambda.invoke, and the count lands in the table."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from examples.support import client, running, wait_for
from seglog_emulator.supervisor import Supervisor

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def uploads(stacks: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running("upload-invoke", stacks, tmp_path_factory.mktemp("upload-state")) as supervisor:
        yield supervisor


def test_a_text_upload_is_counted_by_the_function_it_calls_and_other_keys_are_not(uploads: Supervisor) -> None:
    names = uploads.settings.deployment.names
    s3, ddb = client(uploads, "s3"), client(uploads, "dynamodb")
    run = uuid.uuid4().hex[:6]
    text_key, other_key = f"notes/{run} one.txt", f"notes/{run}.bin"
    s3.put_object(Bucket=names["UploadsBucket"], Key=text_key, Body=b"one two three four")
    s3.put_object(Bucket=names["UploadsBucket"], Key=other_key, Body=b"not counted")

    def counted() -> dict[str, object] | None:
        return ddb.get_item(TableName=names["CountsTable"], Key={"key": {"S": text_key}}, ConsistentRead=True).get(
            "Item")

    item = wait_for(counted, 30, "the upload counted")
    assert ({"N": "4"}, "ObjectCreated:Put") == (item["words"], item["event"]["S"])
    # One more text upload after the other key's: once it is counted, the other key's event (had S3 sent one)
    # would have been handed over too.
    later = f"notes/{run}-later.txt"
    s3.put_object(Bucket=names["UploadsBucket"], Key=later, Body=b"five")
    wait_for(lambda: ddb.get_item(TableName=names["CountsTable"], Key={"key": {"S": later}},
                                  ConsistentRead=True).get("Item"), 30, "the later upload counted")
    assert "Item" not in ddb.get_item(TableName=names["CountsTable"], Key={"key": {"S": other_key}},
                                      ConsistentRead=True)
