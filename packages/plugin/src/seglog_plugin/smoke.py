"""`seglog smoke`: a small workload through the HTTP API of any deployment, then I1-I6 read from its stores.

The workload goes through the client library only (what a real client does, retries included): a new sheet,
a block whose body is over 16 KB (so it travels through S3 and the stream router untags it), and single-cell
edits from a few concurrent clients. The sheet loaded back through the API must hold exactly those cells.
Then the pipeline is given time to finish (every Snapshot entry of the sheet complete, nothing pending for
it), and :func:`seglog_core.verify.verify_log` judges the log by reading the tables and the bucket directly:
gap-free, every acknowledged entry once, snapshots equal to the fold, completed in order, no orphans.

By default the workload reaches a snapshot wherever it points, so the pipeline's whole path is exercised: the API
appends a Snapshot entry after the append at num ``SnapshotEvery`` (DESIGN §3), and the API neither says its
SnapshotEvery nor takes one per sheet. Knowing it (a stack's parameters), the clients make just enough edits; not
knowing it (``--api-url`` alone), they edit until the sheet's log holds a Snapshot entry past the creation one, read
from the tables, up to :data:`MAX_SEARCH_APPENDS`. Then at least one snapshot past creation must complete within
the wait, or the run fails.
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
from seglog_core.schema import EntryType
from seglog_core.verify import VerifyReport, verify_log
from seglog_deploy.record import StackRecord

log = structlog.get_logger("seglog.smoke")

#: Rows of the large block: 400 rows of four cells encode to well over the 16 KB that sends a body to S3.
BLOCK_ROWS = 400
BLOCK_COLUMN = "F"
#: Invariants a running pipeline may still be making true right after the appends (DESIGN §6 I5, I6).
PIPELINE_INVARIANTS = frozenset({"I5", "I6"})
#: Without a known SnapshotEvery: the appends the clients make, at most, looking for the first Snapshot entry.
MAX_SEARCH_APPENDS = 5000
#: Most edits one client makes (the --edits limit).
MAX_EDITS = 5000
#: Seconds between two progress lines.
PROGRESS_EVERY = 5.0
#: What LocalStack's free tier answers as ApiUrl: CloudFormation's stand-in for an HTTP API it does not run.
PLACEHOLDER_API = "://unknown."


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


def has_api(record: StackRecord) -> bool:
    """Whether the stack's ApiUrl leads to an API (LocalStack's free tier answers a placeholder)."""
    return bool(record.api_url) and PLACEHOLDER_API not in record.api_url


def no_api_advice(record: StackRecord) -> str:
    """Why `seglog smoke` cannot test a stack deployed to LocalStack, and the command that tests the same code."""
    return (f"stack {record.stack_name} has no HTTP API to smoke: LocalStack's free tier runs none (its ApiUrl "
            f"{record.api_url or '(none)'} is a placeholder). The same handlers, artifact and pipeline run in the "
            "emulator: `seglog --localstack-port 4567 emulate` (beside this target), then in another shell "
            '`eval "$(seglog env)"; seglog smoke --api-url http://127.0.0.1:4599`')


def next_steps(record: StackRecord, *, profile: str | None = None) -> str:
    """What a deploy says last: how to use the stack from a shell, and the smoke command that works for it."""
    use = f'use it from a shell: eval "$(seglog env --stack {record.stack_name})"'
    if not has_api(record):
        return f"{use} (the CLI on its tables)\n{no_api_advice(record)}"
    return f"{use}; check it: seglog smoke --stack {record.stack_name}" + (f" --profile {profile}" if profile else "")


def block_rows() -> list[list[CellValue]]:
    return [[f"item {i}", i, i * 2, f"row {i} " + "x" * 40] for i in range(BLOCK_ROWS)]


def expected_cells(edits: list[int]) -> dict[tuple[int, int], CellValue]:
    """(row, col) -> value the workload leaves: client ``c`` writes column c+1, rows 1..edits[c]; the block at F1."""
    cells: dict[tuple[int, int], CellValue] = {}
    for c, count in enumerate(edits):
        for n in range(count):
            cells[(n + 1, c + 1)] = c * 1000 + n
    first_col = ord(BLOCK_COLUMN) - ord("A") + 1
    for r, row in enumerate(block_rows()):
        for k, value in enumerate(row):
            cells[(r + 1, first_col + k)] = value
    return cells


def edits_for(snapshot_every: int, clients: int) -> int:
    """Edits per client that take the sheet's log past num ``snapshot_every`` (num 0 is the creation snapshot,
    num 1 the block), so the API appends a Snapshot entry: one spare each."""
    return min(MAX_EDITS, -(-(snapshot_every - 1) // clients) + 1)


def run_smoke(api_url: str, backend: Backend, *, edits: int | None = None, clients: int = 3, timeout: float = 180.0,
              snapshot_every: int | None = None, make_client: Callable[[str], SeglogClient] = SeglogClient,
              sleep: Callable[[float], None] = time.sleep,
              progress: Callable[[str], None] | None = None) -> SmokeReport:
    """Run the workload against ``api_url``, wait for the sheet's snapshots, verify through ``backend``.

    ``edits`` per client, if given; else enough to pass ``snapshot_every``, if known; else edits until the API has
    appended a Snapshot entry (read from ``backend``), at most :data:`MAX_SEARCH_APPENDS` appends. Unless ``edits``
    was given, a run in which no snapshot past the creation one completes fails. ``progress`` gets a line now and
    then while the clients edit and while the pipeline works.
    """
    say = progress or (lambda _line: None)
    started = time.monotonic()
    report = SmokeReport(api_url=api_url)
    searching = edits is None and snapshot_every is None
    if edits is not None:
        limit = edits
    elif snapshot_every is not None:
        limit = edits_for(snapshot_every, clients)
        say(f"SnapshotEvery is {snapshot_every}: {clients} clients x {limit} edits reach a snapshot")
    else:
        limit = -(-MAX_SEARCH_APPENDS // clients)
        say(f"SnapshotEvery unknown: {clients} clients edit until the API appends a Snapshot entry "
            f"(at most {MAX_SEARCH_APPENDS} appends; --edits to fix the number)")
    first = make_client(api_url)
    log_id = first.create().log_id
    report.log_id = log_id
    acknowledged: list[uuid.UUID] = [first.append(log_id, set_range(f"{BLOCK_COLUMN}1", block_rows())).entry_id]
    lock = threading.Lock()
    stop = threading.Event()
    written = [0] * clients

    def edit(index: int) -> None:
        client = make_client(api_url)
        for n in range(limit):
            if stop.is_set():
                return
            written[index] = n + 1
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
    watcher = SnapshotWatcher(backend, log_id)
    last_said = time.monotonic()
    while alive := [thread for thread in threads if thread.is_alive()]:
        alive[0].join(0.5)
        if searching and not stop.is_set() and watcher.appended():
            stop.set()
            say(f"the API appended a Snapshot entry at {watcher.found}: the clients stop")
        if time.monotonic() - last_said >= PROGRESS_EVERY:
            last_said = time.monotonic()
            with lock:
                count = len(acknowledged)
            total = "" if searching else f" of {1 + clients * limit}"
            say(f"{count}{total} appends acknowledged")
    report.appends = len(acknowledged)
    log.info("smoke.appended", log_id=str(log_id), appends=report.appends)
    _check_load(first, log_id, expected_cells(written), report)
    report.verify = _await_verified(backend, log_id, acknowledged, timeout=timeout, sleep=sleep, report=report,
                                    say=say)
    if report.verify.completed < 2:
        if edits is not None:
            report.notes.append("no snapshot was due (fewer appends than SnapshotEvery): I3 checked the creation "
                                "snapshot only; pass more --edits to build one")
        elif searching and not watcher.appended():
            report.problems.append(f"no Snapshot entry after {report.appends} appends: the deployment's "
                                   "SnapshotEvery is above that, or its API appends none; pass --edits")
        else:
            report.problems.append("no snapshot past the creation one completed (SnapshotEvery "
                                   f"{snapshot_every or 'unknown'}, {report.appends} appends)")
    report.seconds = time.monotonic() - started
    return report


class SnapshotWatcher:
    """Reads a log's new entries from the tables, a page at a time, until one is a Snapshot entry other than the
    creation one (segment 0, num 0); ``found`` is its "segment/num"."""

    def __init__(self, backend: Backend, log_id: uuid.UUID) -> None:
        self.backend, self.log_id = backend, log_id
        self.segment, self.next_num = 0, 1
        self.found: str | None = None

    def appended(self) -> bool:
        if self.found is None:
            for entry in self.backend.store.entries(self.log_id, self.segment, self.next_num):
                self.next_num = entry.num + 1
                if entry.type is EntryType.SNAPSHOT:
                    self.found = f"{entry.segment}/{entry.num}"
                    break
                if entry.type is EntryType.END_SEGMENT:
                    self.segment, self.next_num = self.segment + 1, 0
                    break
        return self.found is not None


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
                    sleep: Callable[[float], None], report: SmokeReport,
                    say: Callable[[str], None]) -> VerifyReport:
    """Verify as a quiescent pipeline; while the only violations are ones the pipeline is still working off
    (I5: snapshots incomplete or pending; I6: a body not yet untagged, chunks of a build under way), wait and
    verify again, up to ``timeout``, saying how far the snapshots are now and then. Any other violation is final
    at once."""
    began = time.monotonic()
    deadline, last_said = began + timeout, began
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
        if time.monotonic() - last_said >= PROGRESS_EVERY:
            last_said = time.monotonic()
            say(f"waiting for the pipeline: {current.completed}/{current.snapshots} snapshots complete, "
                f"{len(current.pending)} pending ({last_said - began:.0f} s of {timeout:.0f})")
        sleep(1.0)
