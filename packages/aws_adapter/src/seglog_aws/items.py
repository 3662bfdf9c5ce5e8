"""The DynamoDB item form of the schema's records (low-level attribute-value maps, one-letter names).

DESIGN §2: the attribute names and types here are the storage format; the record types are in
:mod:`seglog_core.schema`.
"""

from __future__ import annotations

import uuid
from typing import Any

from seglog_core.errors import UnknownEntryTypeError
from seglog_core.schema import Entry, Segment, entry_type, segment_key, split_segment_key, uuid_from_bytes

Item = dict[str, dict[str, Any]]


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def segment_to_item(segment: Segment) -> Item:
    item: Item = {"L": {"B": segment.log_id.bytes}, "N": _n(segment.num), "C": _n(segment.created)}
    if segment.last_snapshot is not None:
        item["S"] = _n(segment.last_snapshot)
    if segment.archive is not None:
        item["A"] = {"S": segment.archive}
    if segment.retired is not None:
        item["D"] = _n(segment.retired)
    if segment.retiring:
        item["P"] = {"BOOL": True}
    return item


def item_to_segment(item: Item) -> Segment:
    return Segment(
        log_id=uuid_from_bytes(bytes(item["L"]["B"])),
        num=int(item["N"]["N"]),
        created=int(item["C"]["N"]),
        last_snapshot=int(item["S"]["N"]) if "S" in item else None,
        archive=item["A"]["S"] if "A" in item else None,
        retired=int(item["D"]["N"]) if "D" in item else None,
        retiring="P" in item,
    )


def entry_key(log_id: uuid.UUID, segment: int, num: int) -> Item:
    return {"G": {"B": segment_key(log_id, segment)}, "N": _n(num)}


def entry_to_item(entry: Entry) -> Item:
    item = entry_key(entry.log_id, entry.segment, entry.num)
    item["C"] = _n(entry.created)
    item["T"] = {"S": str(entry.type)}
    if entry.version != 1:
        item["V"] = _n(entry.version)
    if entry.body is not None:
        item["B"] = {"B": entry.body}
    if entry.external is not None:
        item["E"] = {"S": entry.external}
    if entry.entry_id is not None:
        item["K"] = {"B": entry.entry_id.bytes}
    if entry.snapshot_root is not None:
        item["R"] = {"S": entry.snapshot_root}
    return item


def item_to_entry(item: Item) -> Entry:
    log_id, segment = split_segment_key(bytes(item["G"]["B"]))
    num = int(item["N"]["N"])
    try:
        type_ = entry_type(item["T"]["S"])
    except UnknownEntryTypeError as exc:  # say which entry: the snapshot worker records it (DESIGN §2)
        raise UnknownEntryTypeError(exc.type, segment=segment, entry=num) from None
    return Entry(
        log_id=log_id,
        segment=segment,
        num=num,
        created=int(item["C"]["N"]),
        type=type_,
        version=int(item["V"]["N"]) if "V" in item else 1,
        body=bytes(item["B"]["B"]) if "B" in item else None,
        external=item["E"]["S"] if "E" in item else None,
        entry_id=uuid_from_bytes(bytes(item["K"]["B"])) if "K" in item else None,
        snapshot_root=item["R"]["S"] if "R" in item else None,
    )
