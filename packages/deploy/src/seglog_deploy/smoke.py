"""`seglog smoke`: a small workload through the HTTP API of any deployment, then I1-I6 read from its stores.

The workload goes through the client library only (what a real client does, retries included): a new sheet,
a block whose body is over 16 KB (so it travels through S3 and the stream router untags it), and single-cell
edits from a few concurrent clients. The sheet loaded back through the API must hold exactly those cells.
Then the pipeline is given time to finish (every Snapshot entry of the sheet complete, nothing pending for
it), and :func:`seglog_core.verify.verify_log` judges the log by reading the tables and the bucket directly:
gap-free, every acknowledged entry once, snapshots equal to the fold, completed in order, no orphans.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from seglog_aws.backend import Backend
from seglog_client import SeglogClient, set_cell, set_range
from seglog_client.models import CellValue
from seglog_core.verify import VerifyReport, verify_log

log = structlog.get_logger("seglog.smoke")

#: Rows of the large block: 400 rows of four cells encode to well over the 16 KB that sends a body to S3.
BLOCK_ROWS = 400
BLOCK_COLUMN = "F"
#: Invariants a running pipeline may still be making true right after the appends (DESIGN §6 I5, I6).
PIPELINE_INVARIANTS = frozenset({"I5", "I6"})


@dataclass(kw_only=True)
class SmokeReport:
    """What the smoke run did and found; ``ok`` is the verdict."""

    api_url: str
    log_id: uuid.UUID | None = None
    appends: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    verify: VerifyReport | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and self.verify is not None and self.verify.ok

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "api_url": self.api_url, "log_id": str(self.log_id) if self.log_id else None,
                "appends": self.appends, "seconds": round(self.seconds, 1), "problems": self.problems,
                "notes": self.notes, "verify": self.verify.to_dict() if self.verify else None}


def block_rows() -> list[list[CellValue]]:
    return [[f"item {i}", i, i * 2, f"row {i} " + "x" * 40] for i in range(BLOCK_ROWS)]


def expected_cells(clients: int, edits: int) -> dict[tuple[int, int], CellValue]:
    """(row, col) -> value the workload leaves: client ``c`` writes column c+1, rows 1..edits; the block at F1."""
    cells: dict[tuple[int, int], CellValue] = {}
    for c in range(clients):
        for n in range(edits):
            cells[(n + 1, c + 1)] = c * 1000 + n
    first_col = ord(BLOCK_COLUMN) - ord("A") + 1
    for r, row in enumerate(block_rows()):
        for k, value in enumerate(row):
            cells[(r + 1, first_col + k)] = value
    return cells


def run_smoke(api_url: str, backend: Backend, *, edits: int = 10, clients: int = 3, timeout: float = 180.0,
              make_client: Callable[[str], SeglogClient] = SeglogClient,
              sleep: Callable[[float], None] = time.sleep) -> SmokeReport:
    """Run the workload against ``api_url``, wait for the sheet's snapshots, verify through ``backend``."""
    started = time.monotonic()
    report = SmokeReport(api_url=api_url)
    first = make_client(api_url)
    log_id = first.create().log_id
    report.log_id = log_id
    acknowledged: list[uuid.UUID] = [first.append(log_id, set_range(f"{BLOCK_COLUMN}1", block_rows())).entry_id]
    lock = threading.Lock()

    def edit(index: int) -> None:
        client = make_client(api_url)
        for n in range(edits):
            try:
                done = client.append(log_id, set_cell(f"{chr(ord('A') + index)}{n + 1}", index * 1000 + n))
            except Exception as exc:  # a lost edit is a finding, reported with the rest
                with lock:
                    report.problems.append(f"client {index} edit {n} failed: {exc}")
                continue
            with lock:
                acknowledged.append(done.entry_id)

    threads = [threading.Thread(target=edit, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report.appends = len(acknowledged)
    log.info("smoke.appended", log_id=str(log_id), appends=report.appends)
    _check_load(first, log_id, expected_cells(clients, edits), report)
    report.verify = _await_verified(backend, log_id, acknowledged, timeout=timeout, sleep=sleep, report=report)
    if report.verify.completed < 2:
        report.notes.append("no snapshot was due (fewer appends than SnapshotEvery): I3 checked the creation "
                            "snapshot only; pass more --edits to build one")
    report.seconds = time.monotonic() - started
    return report


def _check_load(client: SeglogClient, log_id: uuid.UUID, expected: dict[tuple[int, int], CellValue],
                report: SmokeReport) -> None:
    """The sheet loaded through the API holds exactly the cells the workload wrote."""
    rows = client.load(log_id).rows
    found = {(r + 1, c + 1): v for r, row in enumerate(rows) for c, v in enumerate(row) if v is not None}
    if found != expected:
        wrong = sorted(k for k in expected.keys() | found.keys() if found.get(k) != expected.get(k))
        report.problems.append(f"the sheet loaded through the API differs from what was written at {len(wrong)} "
                               f"cells, first {wrong[:5]}")


def _await_verified(backend: Backend, log_id: uuid.UUID, acknowledged: list[uuid.UUID], *, timeout: float,
                    sleep: Callable[[float], None], report: SmokeReport) -> VerifyReport:
    """Verify as a quiescent pipeline; while the only violations are ones the pipeline is still working off
    (I5: snapshots incomplete or pending; I6: a body not yet untagged, chunks of a build under way), wait and
    verify again, up to ``timeout``. Any other violation is final at once."""
    deadline = time.monotonic() + timeout
    while True:
        current = verify_log(backend.store, log_id, acknowledged=acknowledged, blobs=backend.blobs,
                             pending=backend.pending, quiescent=True)
        settling = {v.invariant for v in current.violations} <= PIPELINE_INVARIANTS
        if current.ok or not settling:
            return current
        if time.monotonic() > deadline:
            report.problems.append(f"the pipeline did not settle within {timeout:.0f} s: is it running (the stream "
                                   "router and the snapshot worker)?")
            return current
        sleep(1.0)
