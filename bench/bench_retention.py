"""What retention costs, measured on the simulated DynamoDB (template.yaml's tables, the real adapters): the write
units a retired entry costs, and what a scheduled run reads when every sheet is idle (issue 35).

Run: uv run --no-sync python -m bench.bench_retention [--quick]

1. Retired entry: one log whose oldest segment holds ENTRIES small entries (~75-byte items), archived by the
   scheduled run (retain_due); every write unit the run consumed (the entries' deletes, the segment's claim,
   mark and due mark), over the entries it removed.
2. Idle sheets: SHEETS logs of three segments each (the oldest already archived), then one scheduled run
   of the old kind (retain_logs: a Scan of the Segments table and a Query per log) and one of the new (retain_due:
   the index Due). Reads are the calls and read units the run made; per idle sheet is the run's reads over the
   sheets, beyond what the same run makes with no sheet at all. A month is 730 hourly runs (RetentionSchedule's
   default), priced at us-east-1's list prices (seglog_report.prices) with Lambda's duration at the simulator's
   DynamoDB latency (seglog_sim.cloud.LATENCY, its midpoint) and RetentionFunction's 512 MB.
"""

from __future__ import annotations

import argparse
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.support import Headline, quiet_logs
from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.s3_blob_store import S3BlobStore
from seglog_awsmodel.template import load_template
from seglog_core.ports import BlobStore
from seglog_core.retention import RetentionPolicy, retain_due, retain_logs
from seglog_core.schema import EndSegment, Entry, EntryType, Segment, SetCell, SnapshotMarker, encode_body
from seglog_report.prices import load as load_prices
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec
from seglog_sim.aws.s3 import SimS3, SimS3Client
from seglog_sim.cloud import LATENCY

REPO = Path(__file__).resolve().parent.parent
TABLES = {"SegmentsTable": "Segments", "EntriesTable": "Entries"}
ENTRIES = 1_000
SHEETS, QUICK_SHEETS = 10_000, 1_000
RUNS_A_MONTH = 730
MEMORY_GB = 0.5
POLICY = RetentionPolicy(keep=1, min_age=3_600)  # keep 1: RetentionPolicy keeps MIN_KEEP (2) whatever it says
NEVER: Callable[[], bool] = lambda: False  # noqa: E731
CLOSED = 1_700_000_000
LATER = CLOSED + 86_400


def stores() -> tuple[DynamoDBLogStore, BlobStore, SimDynamoDB]:
    resources = load_template(REPO / "template.yaml").resources
    ticks = itertools.count()
    sim = SimDynamoDB([TableSpec.from_properties(name, resources[logical]["Properties"])
                       for logical, name in TABLES.items()], clock=lambda: LATER + next(ticks) / 1e6)
    store = DynamoDBLogStore(SimDynamoDBClient.of(sim), segments_table="Segments", entries_table="Entries")
    s3 = SimS3()
    s3.create_bucket("bench")
    return store, S3BlobStore(SimS3Client.of(s3), bucket="bench"), sim


def sheet(store: DynamoDBLogStore, edits: int) -> uuid.UUID:
    """A log of three segments, closed at CLOSED: segment 0 holds ``edits`` SetCells (retention archives it:
    two are always kept), segment 1 its Snapshot entry, segment 2 is the tail."""
    log_id = uuid.uuid4()
    snap = encode_body(SnapshotMarker())
    store.create_log(Segment(log_id=log_id, num=0, created=CLOSED - 10, last_snapshot=0),
                     Entry(log_id=log_id, segment=0, num=0, created=CLOSED - 10, type=EntryType.SNAPSHOT, body=snap))
    for num in range(1, edits + 1):
        store.put_entry(Entry(log_id=log_id, segment=0, num=num, created=CLOSED - 5, type=EntryType.SET_CELL,
                              body=encode_body(SetCell(row=num, col=1, value=num))))
    for segment, end in ((1, edits + 1), (2, 1)):
        store.new_segment(
            Entry(log_id=log_id, segment=segment - 1, num=end, created=CLOSED, type=EntryType.END_SEGMENT,
                  body=encode_body(EndSegment(next_segment=segment))),
            Segment(log_id=log_id, num=segment, created=CLOSED),
            Entry(log_id=log_id, segment=segment, num=0, created=CLOSED, type=EntryType.SNAPSHOT, body=snap))
        store.advance_snapshot(log_id, segment, 0)
    return log_id


@dataclass(frozen=True)
class Reads:
    calls: int
    units: float

    def __sub__(self, other: Reads) -> Reads:
        return Reads(self.calls - other.calls, self.units - other.units)


def run_reads(store: DynamoDBLogStore, blobs: BlobStore, run: Callable[..., object]) -> Reads:
    store.meter.reset()
    run(store, blobs, POLICY, stop=NEVER, clock=lambda: float(LATER))
    tallies = store.meter.snapshot()
    reads = [t for op, t in tallies.items() if op in ("Query", "Scan", "GetItem")]
    return Reads(int(sum(t["calls"] for t in reads)), sum(t["rcu"] for t in reads))


def retired_entry() -> float:
    """Write units per retired entry: the scheduled run archiving a segment of ENTRIES edits."""
    store, blobs, _ = stores()
    sheet(store, ENTRIES)
    store.meter.reset()
    run = retain_due(store, blobs, POLICY, stop=NEVER, clock=lambda: float(LATER))
    units = sum(t["wcu"] for t in store.meter.snapshot().values())
    assert run.segments == 1, run
    retired = ENTRIES + 1  # the edits and the segment's Snapshot entry; the EndSegment stays (a tombstone)
    print(f"retired entry: {ENTRIES + 1:,} entries removed, {units:,.0f} WRU in all (the deletes, the claim, the "
          f"mark, the due mark) = {units / retired:.3f} WRU per retired entry")
    return units / retired


def idle(sheets: int) -> dict[str, tuple[Reads, Reads]]:
    """One scheduled run over ``sheets`` idle sheets and over none, the old kind (every log) and the new (the
    index Due): the reads of each."""
    per: dict[str, tuple[Reads, Reads]] = {}
    for name, run in (("every log (before)", retain_logs), ("index Due (now)", retain_due)):
        empty_store, empty_blobs, _ = stores()
        base = run_reads(empty_store, empty_blobs, run)
        store, blobs, _ = stores()
        for _ in range(sheets):
            sheet(store, 1)
        retain_due(store, blobs, POLICY, stop=NEVER, clock=lambda: float(LATER))  # their retention is done
        reads = run_reads(store, blobs, run)
        per[name] = reads, base
        print(f"{name:<20} {sheets:,} idle sheets: {reads.calls:,} read calls, {reads.units:,.1f} RRU per run "
              f"(no sheet: {base.calls} calls, {base.units:.1f} RRU)")
    return per


def monthly(reads: Reads) -> float:
    """Dollars a month of hourly runs that each read ``reads``, at list prices."""
    prices = load_prices()
    rru = prices.unit_price("us-east-1", "dynamodb_read")
    request = prices.unit_price("us-east-1", "lambda_request")
    gb_second = prices.unit_price("us-east-1", "lambda_duration_arm64")
    latency = sum(LATENCY["dynamodb"]) / 2
    seconds = reads.calls * latency
    return RUNS_A_MONTH * (reads.units * rru + request + seconds * MEMORY_GB * gb_second)


def main(quick: bool = False) -> list[Headline]:
    quiet_logs()
    sheets = QUICK_SHEETS if quick else SHEETS
    print(f"## retention on the simulated DynamoDB ({'--quick: ' if quick else ''}{sheets:,} idle sheets)")
    wru = retired_entry()
    runs = idle(sheets)
    (before, before_base), (now, now_base) = runs["every log (before)"], runs["index Due (now)"]
    per_before, per_now = (before - before_base).calls / sheets, (now - now_base).calls / sheets
    cost_before, cost_now = monthly(before), monthly(now)
    print(f"retention reads per idle sheet per run: {per_before:.4f} before, {per_now:.4f} now")
    print(f"idle cost of {sheets:,} sheets a month (730 hourly runs): ${cost_before:.4f} before, ${cost_now:.4f} now "
          "(DynamoDB reads, Lambda requests and duration)")
    return [
        Headline(name="WRU per retired entry", figure=f"{wru:.3f}",
                 target="0 by TTL is unsafe (README); <= 1.01, a paid delete", met=wru <= 1.01),
        Headline(name="retention reads per idle sheet per run", figure=f"{per_now:.4f} (before {per_before:.4f})",
                 target="0", met=(now - now_base).calls == 0),
        Headline(name="retention idle cost a month", figure=f"${cost_now:.4f} for {sheets:,} idle sheets "
                 f"(before ${cost_before:.2f})", target="context: the README's cost section", met=None),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
