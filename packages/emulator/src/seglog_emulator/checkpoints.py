"""Where a stream poller keeps its place: the last sequence number processed, per shard, in a file.

An event source mapping's position survives a restart of the poller (AWS keeps it in the mapping, not in the
poller); so does this one, in ``<state dir>/checkpoints/<mapping>.json``, written atomically (temporary file,
fsync, rename). A poller killed between a successful invocation and its checkpoint re-delivers that batch
when it comes back — the at-least-once delivery the stream router must absorb (DESIGN §7).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path


class CheckpointStore:
    """Sequence numbers by shard id for one event source mapping, persisted on every move."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._positions: dict[str, str] = json.loads(path.read_text()) if path.is_file() else {}
        self._finished: set[str] = set(self._positions.pop("__finished__", "").split(",")) - {""}

    def get(self, shard_id: str) -> str | None:
        """The last sequence number processed in ``shard_id`` (None: nothing yet)."""
        with self._lock:
            return self._positions.get(shard_id)

    def put(self, shard_id: str, sequence_number: str) -> None:
        with self._lock:
            self._positions[shard_id] = sequence_number
            self._save()

    def finish(self, shard_id: str) -> None:
        """Record that a closed shard was read to its end (its children may start)."""
        with self._lock:
            self._finished.add(shard_id)
            self._save()

    def finished(self, shard_id: str) -> bool:
        with self._lock:
            return shard_id in self._finished

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {**self._positions, "__finished__": ",".join(sorted(self._finished))}
        tmp = self.path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
