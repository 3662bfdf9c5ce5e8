"""Contract of the BlobStore port: in memory, and S3 on LocalStack in both profiles."""

from __future__ import annotations

import uuid

import pytest

from seglog_core import errors
from seglog_core.ports import BlobStore


@pytest.fixture
def prefix() -> str:
    return f"test/{uuid.uuid4()}/"


def test_put_get_round_trips_bytes(blob_store: BlobStore, prefix: str) -> None:
    data = bytes(range(256)) * 100
    blob_store.put(prefix + "a", data)
    assert blob_store.get(prefix + "a") == data


def test_missing_object_is_blob_not_found(blob_store: BlobStore, prefix: str) -> None:
    with pytest.raises(errors.BlobNotFoundError) as caught:
        blob_store.get(prefix + "missing")
    assert caught.value.key == prefix + "missing"
    with pytest.raises(errors.BlobNotFoundError):
        blob_store.is_discardable(prefix + "missing")
    with pytest.raises(errors.BlobNotFoundError):
        blob_store.keep(prefix + "missing")


def test_discardable_tag_is_set_and_removed_idempotently(blob_store: BlobStore, prefix: str) -> None:
    blob_store.put(prefix + "d", b"x", discardable=True)
    blob_store.put(prefix + "k", b"x")
    assert blob_store.is_discardable(prefix + "d")
    assert not blob_store.is_discardable(prefix + "k")
    blob_store.keep(prefix + "d")
    blob_store.keep(prefix + "d")
    assert not blob_store.is_discardable(prefix + "d")
    assert blob_store.get(prefix + "d") == b"x"


def test_keys_lists_a_prefix_in_order_and_delete_is_idempotent(blob_store: BlobStore, prefix: str) -> None:
    for name in ("b", "a", "c/1"):
        blob_store.put(prefix + name, name.encode())
    blob_store.put(f"other/{uuid.uuid4()}", b"x")
    assert list(blob_store.keys(prefix)) == [prefix + "a", prefix + "b", prefix + "c/1"]
    blob_store.delete(prefix + "a")
    blob_store.delete(prefix + "a")
    assert list(blob_store.keys(prefix)) == [prefix + "b", prefix + "c/1"]


def test_put_if_absent_writes_a_new_key_and_never_changes_a_stored_object(blob_store: BlobStore, prefix: str) -> None:
    # What keeps an acknowledged large body as it was (DESIGN §3): a later try under the same key, with other bytes
    # or the discardable tag, must leave the stored object, bytes and tags, untouched.
    assert blob_store.put_if_absent(prefix + "n", b"first", discardable=True)
    assert blob_store.is_discardable(prefix + "n")
    blob_store.keep(prefix + "n")  # what the stream router does once the entry landed

    again = blob_store.put_if_absent(prefix + "n", b"second", discardable=True)

    assert (False, b"first", False) == (again, blob_store.get(prefix + "n"), blob_store.is_discardable(prefix + "n"))
    blob_store.put(prefix + "p", b"plain")
    assert not blob_store.put_if_absent(prefix + "p", b"other")
    assert b"plain" == blob_store.get(prefix + "p")
