"""The spreadsheet as a document of the log: load = snapshot state + fold of the entries after it.

Large bodies are fetched from the bucket before folding, so the fold itself stays pure.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from seglog_core import errors
from seglog_core.ports import BlobStore
from seglog_core.reader import LogReader, LogView
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, Body, Entry
from seglog_core.sheet import Sheet
from seglog_core.snapshot import read_sheet


@dataclass(kw_only=True)
class SheetDocument:
    """Loads sheets from the log and keeps loaded ones up to date."""

    reader: LogReader
    blobs: BlobStore

    def body(self, entry: Entry) -> Body:
        """An entry's decoded body, fetched from the bucket when it is external."""
        if entry.external is not None:
            return entry.decoded(self.blobs.get(entry.external))
        return entry.decoded()

    def snapshot_state(self, snapshot: Entry) -> Sheet:
        """The state a completed Snapshot entry stands for."""
        if snapshot.snapshot_root is None:
            raise errors.CorruptLogError(
                snapshot.log_id, f"snapshot {snapshot.segment}/{snapshot.num} is not complete")
        if snapshot.snapshot_root == EMPTY_SNAPSHOT_ROOT:
            return Sheet()
        return read_sheet(self.blobs, snapshot.snapshot_root)

    def load(self, log_id: uuid.UUID) -> tuple[Sheet, LogView]:
        """Load the latest state of a sheet."""
        view = self.reader.load(log_id)
        return self._fold(view), view

    def load_at(self, log_id: uuid.UUID, snapshot: tuple[int, int], upto: tuple[int, int]) -> Sheet:
        """The sheet as an earlier load saw it: that load's snapshot folded with the entries up to ``upto``."""
        return self._fold(self.reader.view_at(log_id, snapshot, upto))

    def _fold(self, view: LogView) -> Sheet:
        sheet = self.snapshot_state(view.snapshot)
        for entry in view.entries:
            sheet.apply(self.body(entry))
        return sheet

    def update(self, sheet: Sheet, view: LogView) -> Sheet:
        """Apply what was appended since the view was read; a reload when it fell behind."""
        before = view.snapshot
        new = self.reader.update(view)
        if view.snapshot is not before:
            sheet = self.snapshot_state(view.snapshot)
        for entry in new:
            sheet.apply(self.body(entry))
        return sheet
