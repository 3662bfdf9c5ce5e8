"""Where a stream poller keeps its place: the last sequence number processed, per shard, in a file.

An event source mapping's position survives a restart of the poller (AWS keeps it in the mapping, not in the
poller); so does this one, in ``<state dir>/checkpoints/<mapping>.json``, written atomically (temporary file,
fsync, rename). A poller killed between a successful invocation and its checkpoint re-delivers that batch
when it comes back — the at-least-once delivery the stream router must absorb (DESIGN §7).

Beside it, in ``<mapping>.created``, the ApproximateCreationDateTime the poller gave each record read after the
checkpoint. The local stacks give a record's creation time to the minute and the poller raises it to the second
(:func:`seglog_awsmodel.events.dynamodb_stream.creation_second`) from what it saw while reading, which a restarted
poller no longer knows; AWS gives a record the same value on every read (DynamoDB Streams API Reference,
StreamRecord: "rounded down to the closest second"), so a record delivered again carries the value it was first
given. A value is dropped once the checkpoint passes its record: it is never read again.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class CheckpointStore:
    """Sequence numbers by shard id for one event source mapping, persisted on every move."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._positions: dict[str, str] = json.loads(path.read_text()) if path.is_file() else {}
        self._finished: set[str] = set(self._positions.pop("__finished__", "").split(",")) - {""}
        # Not a .json file: `seglog emulate status` reads every one of those as a mapping's positions.
        self._created_path = path.with_suffix(".created")
        self._created: dict[str, dict[str, int]] = (json.loads(self._created_path.read_text())
                                                    if self._created_path.is_file() else {})

    def get(self, shard_id: str) -> str | None:
        """The last sequence number processed in ``shard_id`` (None: nothing yet)."""
        with self._lock:
            return self._positions.get(shard_id)

    def put(self, shard_id: str, sequence_number: str) -> None:
        with self._lock:
            self._positions[shard_id] = sequence_number
            self._save()
            given = self._created.get(shard_id, {})
            passed = [n for n in given if int(n) <= int(sequence_number)]
            if passed:
                for number in passed:
                    del given[number]
                self._save_created()

    def finish(self, shard_id: str) -> None:
        """Record that a closed shard was read to its end (its children may start)."""
        with self._lock:
            self._finished.add(shard_id)
            self._save()
            if self._created.pop(shard_id, None) is not None:
                self._save_created()

    def finished(self, shard_id: str) -> bool:
        with self._lock:
            return shard_id in self._finished

    def creation_seconds(self, shard_id: str) -> dict[str, int]:
        """The ApproximateCreationDateTime each record of ``shard_id`` read after its checkpoint was given, by
        SequenceNumber (a copy)."""
        with self._lock:
            return dict(self._created.get(shard_id, {}))

    def give_creation_seconds(self, shard_id: str, seconds: Mapping[str, int]) -> None:
        """Remember the values ``seconds`` gives records of ``shard_id`` that have none yet (a record keeps its
        first), before they are delivered: a poller killed after an invocation delivers them again."""
        with self._lock:
            given = self._created.setdefault(shard_id, {})
            new = {number: second for number, second in seconds.items() if number not in given}
            if new:
                given.update(new)
                self._save_created()

    def _save(self) -> None:
        _write(self.path, {**self._positions, "__finished__": ",".join(sorted(self._finished))})

    def _save_created(self) -> None:
        _write(self._created_path, {shard: given for shard, given in self._created.items() if given})


def _write(path: Path, data: Any) -> None:
    """``data`` as JSON at ``path``, atomically: a reader finds the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
