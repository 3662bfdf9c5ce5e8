"""The default scenario: a few clients on a few logs, snapshots and segments every few entries, every fault kind.

Small numbers on purpose: a snapshot every few entries and a segment every few snapshots make each seed build
several snapshots across segment boundaries with a few dozen appends, and 4-cell chunks give every build several
chunks and checkpoints, so each seed passes through every step of the protocol in milliseconds of real time.

Each seed draws its own variant (:meth:`Scenario.draw`, from the seed: replays stay bit for bit): how many logs
and clients, how long the logs grow, segment and snapshot sizes, the large-body share and the
retention policy. One fixed shape let a whole class hide: with a segment every 10 entries and two logs, about 2
seeds in 1,000 ever archived a segment, so nothing after retention was ever exercised (issue 18).

Operators act in every world (:mod:`seglog_sim.operators`): the scheduled retention function, ``seglog log
retain`` (archive, or delete behind :attr:`Scenario.retain_delete`), ``seglog reprocess``, ``seglog redrive`` and
``seglog rebuild`` (behind :attr:`Scenario.rebuild`) at drawn moments while clients write.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any, Final

from seglog_awsmodel.faults import SIMULATED, FaultKind
from seglog_sim.aws.dynamodb_throughput import PARTITION_READ_UNITS, PARTITION_WRITE_UNITS

#: What an outage (:attr:`Scenario.outage`) takes away: every SQS call, every S3 call, every write to the
#: Entries table; or S3's speed (every call answered, seconds late).
OUTAGES: Final = ("sqs", "s3", "entries", "s3-slow")


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """What one seed runs. Template parameters not named here keep the template's values."""

    logs: int = 2
    #: Clients of the HTTP API (append_after with entry_id and since, retried as seglog_client retries).
    api_clients: int = 3
    #: Clients using EventLog in their own process (the library's own retries and lost-answer handling).
    library_clients: int = 1
    #: Readers of the HTTP API: paged loads and syncs (through seglog_client) while the others write.
    readers: int = 1
    #: Loads or syncs per reader: drawn in this range.
    reads: tuple[int, int] = (1, 3)
    #: The most a load page's body takes (the API's 4 MB, scaled down so a load takes several pages).
    page_bytes: int = 160
    #: Whether the API clients sign their requests (SigV4). The gateway in the world verifies no signature (the
    #: emulator's does), so signing would check nothing here and costs about 90 us a try: off.
    sign_requests: bool = False
    #: Chance that an API client vanishes (its process ends) instead of waiting to try again after a try failed:
    #: an entry it never heard back about may or may not be stored, and nothing is owed for it.
    vanish_share: float = 0.02
    #: Chance that an API client's next entry reuses the id of one of its acknowledged entries with another body,
    #: from the position that entry's first try sent. The API must refuse it (422 entry_id_reused); before issue 18
    #: it answered ``deduplicated``, and a large body was overwritten.
    reuse_share: float = 0.05
    #: Share of API clients that keep the ``since`` of their first answer for every entry, across retention, and
    #: do what the API answers (a 410 since_retired is followed by seglog_client inside the retry horizon). Before
    #: issue 18 a 409 unknown_position sent them to load and resend, which could store an entry twice.
    stale_since_share: float = 0.4
    #: Share of API clients that pause mid-retry: between two tries of one entry (after a try whose answer was
    #: lost, say) such a client sometimes stops for a while (a laptop lid closed, a process swapped out) and
    #: then retries with the same entry id and ``since``, as seglog_client does. Retention may retire ``since``'s
    #: segment, or the segment the first try landed in, meanwhile. Without them every retry came seconds after
    #: its first try and two of issue 18's fixes could be reverted unseen (the mutants retention_by_creation and
    #: since_retired_lookup).
    pause_share: float = 0.3
    #: Chance that a pausing client pauses at one wait between two tries, and for how many seconds (drawn).
    pause_chance: float = 0.5
    pause: tuple[float, float] = (5.0, 240.0)
    #: Seconds a client keeps short of the retry horizon before it follows a 410 since_retired
    #: (SeglogClient.horizon_margin). The client and the API share the world's clock here, so no skew to allow
    #: for: a small margin lets the resend path run at the drawn horizons (0 to 120 s); the library's default
    #: of 120 s would turn every 410 into OutcomeUnknownError.
    horizon_margin: float = 1.0
    #: Share of API clients that come back after their appends, a while later (seconds drawn in ``return_after``),
    #: and append a few entries more (``returns``), each of which (by ``return_reuse_share``) reuses one of their
    #: acknowledged entry ids with another body, from the position its first try sent. By then retention has
    #: often retired that position's segment, or the entry's: the lookup after a deleted ``since`` runs in a few
    #: seeds in a hundred, not in one in a thousand.
    return_share: float = 0.3
    return_after: tuple[float, float] = (60.0, 300.0)
    returns: tuple[int, int] = (2, 5)
    return_reuse_share: float = 0.5
    #: Appends per client: drawn in this range.
    appends: tuple[int, int] = (5, 9)
    #: Seconds a client thinks between appends: drawn in this range.
    think: tuple[float, float] = (0.0, 2.0)
    #: Seconds the API client waits for an answer before it retries (the earlier try may still be running).
    client_timeout: float = 20.0
    snapshot_every: int = 4
    segment_entries: int = 10
    #: Bodies above this many bytes go to S3 (the API's 16 KB, scaled down so a few entries go there).
    large_threshold: int = 48
    #: Share of appends with a large body.
    large_share: float = 0.15
    chunk_cells: int = 4
    #: The chunk size of the other code version (the mixed_version fault).
    other_chunk_cells: int = 7
    #: Seconds of simulated time with faults on; then the liveness phase.
    fault_window: float = 120.0
    #: Seconds within which every client must have finished (or given up on) its appends.
    client_bound: float = 4 * 3600.0
    #: Seconds after the faults stop within which every snapshot must complete and the queues drain (I5).
    liveness_bound: float = 3 * 3600.0
    #: DynamoDB stream shards.
    shards: int = 2
    #: maxReceiveCount while the dlq fault is on (the template's is 50).
    dlq_max_receive_count: int = 3
    faults: tuple[FaultKind, ...] = SIMULATED
    #: Kinds on in every seed (the others are drawn): the combination a guard needs, when a random profile reaches
    #: it too rarely for a campaign to show the guard matters (a mutant's ``arms``, seglog_sim.mutants).
    armed: tuple[FaultKind, ...] = ()
    #: Seconds between two runs of the scheduled retention function while faults last (drawn up to twice this).
    retention_every: float = 60.0
    #: Template parameter overrides: retention keeps the two latest segments and archives one older than 30 s, so
    #: segments are retired while jobs for them may still arrive (the template's week would never come).
    parameters: tuple[tuple[str, Any], ...] = field(
        default=(("RetentionKeep", 2), ("RetentionMinAgeSeconds", 30)))
    #: Draw a variant per seed (:meth:`draw`); False runs this scenario as it is in every seed.
    vary: bool = True
    #: Operators (``seglog log retain``, ``reprocess``, ``redrive``, ``rebuild``) act at drawn moments: seconds
    #: between two of their actions while the faults last (drawn up to twice this).
    operator_every: float = 60.0
    #: Chance that, in the last round of retention, another operator rebuilds a log a moment before it is deleted
    #: (their commands overlap).
    operator_pairs: float = 0.3
    #: ``seglog log retain`` (archive form) among the operators' actions.
    retain: bool = True
    #: ``seglog log retain --delete`` among them, beside the scheduled archive runs (it found overlapping archive and
    #: delete runs retiring one segment both ways: seeds 96, 170, 356 before retention claimed segments).
    retain_delete: bool = True
    #: How many times more often than each other action the operators pick ``retain --delete`` (drawn per seed):
    #: a segment deleted, then a later one archived by the schedule, is the pattern that leaves archived history
    #: after a gap (the mutant deleted_since_reads_archives needs it).
    delete_weight: int = 1
    #: ``seglog rebuild`` among them: it claims what it builds as a worker does and leaves live claims to their jobs
    #: (issue 18; seed 79 found a rebuild and a worker cutting one snapshot two ways).
    rebuild: bool = True
    #: ``seglog reprocess --since`` among them.
    reprocess: bool = True
    #: ``seglog redrive`` among them (besides the redrive fault, which models it at run level).
    redrive: bool = True
    #: Seconds every retention keeps a segment while clients write, on top of the drawn policy. None since issue
    #: 18's retry horizon landed: the drawn RetentionMinAgeSeconds is the horizon, and a retry whose ``since`` was
    #: retired is answered or refused with 410 since_retired (a stand-in of 900 s kept that dead end out of reach).
    retry_horizon: float | None = None
    #: Share of seeds with a busy sheet (issue 34): one more API client appends to the first log all through the fault
    #: window, an edit every ``busy_think`` seconds, so its snapshots fall due one after another while worker crashes
    #: (armed in those seeds) lose jobs before their claims — the world where one lost job froze a busy sheet's
    #: snapshots for minutes in the emulator, and where seglog_sim.liveness.idle_snapshots judges the help.
    busy_share: float = 0.05
    busy: bool = False
    busy_think: tuple[float, float] = (0.5, 2.0)
    #: After the faults stop, every retention run that was cut short is run again to its end, so verify judges
    #: whole archives only (a run killed between its archive and its deletes leaves a half-retired segment that
    #: only a later run finishes). False only in the test that shows what an unfinished run leaves.
    finish_retention: bool = True
    # ---- issue 34, point 4: worlds that reach what the guarantees rest on (each drawn per seed, after the above)
    #: Share of seeds with an outage while clients write: for ``outage_length`` seconds (drawn) one thing the
    #: functions call refuses every call — SQS or S3 with 5xx (a regional error spike), or the Entries table
    #: every write (ThrottlingException: a sheet's burst past what on-demand capacity absorbs at once) — or S3
    #: answers every call seconds late (a brownout). The stream router then fails records past its retries (a
    #: partial batch response, bisected; DESIGN §9.1, §9.4), the API's appends give up inside its time limit (503
    #: with Retry-After), library writers run out of tries, workers fail jobs or build slowly (renewing their
    #: claims, handing off). None: no outage; else (what, seconds into the run it starts, seconds it lasts),
    #: ``what`` one of :data:`OUTAGES`.
    outage_share: float = 0.15
    outage_length: tuple[float, float] = (5.0, 45.0)
    outage: tuple[str, float, float] | None = None
    #: Share of seeds deployed with a short SnapshotWorkerTimeout (one of ``worker_timeouts``, the queue's
    #: visibility timeout 6x it, as the template asks): builds slowed by S3 latency hand off near the time limit
    #: (DESIGN §5 step 5), a helper's too. None: the template's.
    short_timeout_share: float = 0.1
    worker_timeouts: tuple[int, ...] = (3, 5, 10)
    worker_timeout: int | None = None
    #: Share of seeds whose library clients each run two writers in one process (a server with a thread per
    #: request): each its own EventLog on the process's store, taking turns on the log and handing each other the
    #: tail (seglog_core.turns).
    library_writers_share: float = 0.3
    library_writers: int = 1
    #: Share of seeds whose library writers append with an expected num (optimistic concurrency: their last num
    #: + 1), appending again without one after a VersionConflictError.
    optimistic_share: float = 0.2
    optimistic_library: bool = False
    #: Share of seeds whose first API client appends with ``expected`` (its latest position + 1): a 409
    #: version_conflict sends it to sync and try again, as an optimistic editor does.
    strict_share: float = 0.15
    strict_client: bool = False
    #: Share of seeds whose last API client uses seglog_client as its README does: it starts knowing only the sheet's
    #: id (as text, from a URL), sends no ``since`` (the client's default: the latest position it saw, at first
    #: looked up with GET /snapshots) and signs its requests (SigV4).
    fresh_share: float = 0.2
    fresh_client: bool = False
    #: Share of seeds whose second API client is impatient (an interactive app: a few tries, 20 s of patience): an
    #: outage makes it give up (RetriesExhaustedError, nothing owed).
    impatient_share: float = 0.2
    impatient_client: bool = False
    #: Share of seeds whose API clients wait less for an answer than the API function may run (a mobile app's few
    #: seconds): a retry may land while its first try still runs, so a first try's put can lose to its own retry's
    #: copy (issue 35: the rebase must answer it, mutant rebase_own_copy). Their timeout is drawn in this range.
    short_client_share: float = 0.3
    short_client_timeout: tuple[float, float] = (1.0, 5.0)
    # ---- issue 35: a hot sheet
    #: Each partition key's (read, write) units a second (seglog_sim.aws.dynamodb_throughput): DynamoDB's 3,000 and
    #: 1,000, which a world of a few clients never reaches.
    partition_units: tuple[float, float] = (PARTITION_READ_UNITS, PARTITION_WRITE_UNITS)
    #: Share of seeds whose partitions take a few write units a second (``tight_write_units``, drawn; reads three
    #: times that, as on AWS): a sheet as hot for a world of a few clients as for DynamoDB one of hundreds, so its
    #: appends, loads, snapshot builds and retention meet throttles that come from load, not from a fault's draw.
    tight_partition_share: float = 0.1
    tight_write_units: tuple[float, float] = (2.0, 8.0)
    #: Seconds each way between an API client and the API function (the internet, API Gateway, Lambda's invoke),
    #: drawn per try; (0, 0) in the seeds: their clients' timing stays as it was. AWS publishes no figure (API
    #: Gateway's ``Latency`` metric is the integration's plus its own overhead): the hot-sheet benchmark chooses.
    api_latency: tuple[float, float] = (0.0, 0.0)
    #: The API's EventLog.rebases_before_backoff (None: EventLog's own): a benchmark's knob, 1 rebases never.
    rebases_before_backoff: int | None = None
    #: Share of seeds with a batching client (issue 35): seglog_client's Batcher sends its edits, made in bursts
    #: within ``batch_window`` seconds of each other and now and then as an offline backlog, as ``edits`` entries.
    batch_share: float = 0.3
    batching_client: bool = False
    batch_window: float = 1.0
    #: Edits the batching client makes (drawn in this range), and the chance that a burst is queued offline.
    batch_edits: tuple[int, int] = (10, 40)
    offline_share: float = 0.15

    def draw(self, rng: random.Random) -> Scenario:
        """This scenario's variant for one seed (itself when :attr:`vary` is False).

        Drawn so that at least a quarter of seeds retire a segment: logs long enough for three segments or more
        under a policy that keeps two, and segments that close quickly (a segment closes at a snapshot multiple
        once its snapshot is complete, DESIGN §3).
        """
        if not self.vary:
            return self
        snapshot_every = rng.randint(3, 5)
        low = rng.randint(4, 7)
        drawn = dataclasses.replace(
            self,
            logs=rng.randint(1, 3),
            api_clients=rng.randint(2, 3),
            library_clients=rng.randint(0, 2),
            appends=(low, low + rng.randint(1, 4)),
            snapshot_every=snapshot_every,
            segment_entries=snapshot_every * rng.choice((1, 1, 2)),
            large_share=round(rng.uniform(0.0, 0.35), 3),
            retention_every=rng.choice((40.0, 60.0, 90.0)),
            operator_every=rng.choice((20.0, 40.0, 60.0)),
            parameters=(("RetentionKeep", rng.choice((2, 2, 2, 3))),
                        ("RetentionMinAgeSeconds", rng.choice((0, 10, 30, 60, 120)))),
            delete_weight=rng.choice((1, 5)),
            # Last, so every draw above is what it was before busy sheets joined.
            busy=rng.random() < self.busy_share,
        )
        return drawn.widened(rng)

    def widened(self, rng: random.Random) -> Scenario:
        """The worlds of issue 34's point 4, drawn after every draw of :meth:`draw` (so those stay as they were):
        each of them a fixed number of draws, whether it is on or not."""
        outage = rng.random() < self.outage_share
        what, start, length = rng.choice(OUTAGES), rng.uniform(0.0, 25.0), rng.uniform(*self.outage_length)
        short = rng.random() < self.short_timeout_share
        timeout = rng.choice(self.worker_timeouts)
        parameters = self.parameters
        if short:
            parameters += (("SnapshotWorkerTimeout", timeout), ("SnapshotQueueVisibilityTimeout", 6 * timeout))
        return dataclasses.replace(
            # Not in a busy sheet's seed: its snapshot liveness check (seglog_sim.liveness.idle_snapshots) counts jobs
            # an outage fails before they can help as jobs that left a snapshot idle (seed 3980).
            self, outage=(what, round(start, 3), round(length, 3)) if outage and not self.busy else None,
            worker_timeout=timeout if short else None, parameters=parameters,
            library_writers=2 if rng.random() < self.library_writers_share else 1,
            optimistic_library=rng.random() < self.optimistic_share,
            strict_client=rng.random() < self.strict_share,
            fresh_client=rng.random() < self.fresh_share,
            impatient_client=rng.random() < self.impatient_share,
            client_timeout=(round(rng.uniform(*self.short_client_timeout), 3)
                            if rng.random() < self.short_client_share else self.client_timeout),
            partition_units=self._partition_units(rng),
            batching_client=rng.random() < self.batch_share)

    def _partition_units(self, rng: random.Random) -> tuple[float, float]:
        """The seed's partition limit (two draws, whether tight or not)."""
        tight, write = rng.random() < self.tight_partition_share, round(rng.uniform(*self.tight_write_units), 2)
        return (round(3 * write, 2), write) if tight else self.partition_units

    def describe(self) -> dict[str, Any]:
        """What a seed's summary shows of its scenario."""
        return {"logs": self.logs, "api_clients": self.api_clients, "library_clients": self.library_clients,
                "appends": list(self.appends), "snapshot_every": self.snapshot_every,
                "segment_entries": self.segment_entries, "large_share": self.large_share,
                "retention_every": self.retention_every, "operator_every": self.operator_every,
                "delete_weight": self.delete_weight, "busy": self.busy,
                "parameters": dict(self.parameters), "outage": self.outage,
                "library_writers": self.library_writers, "optimistic_library": self.optimistic_library,
                "strict_client": self.strict_client, "fresh_client": self.fresh_client,
                "impatient_client": self.impatient_client, "client_timeout": self.client_timeout,
                "partition_units": list(self.partition_units),
                "batching_client": self.batching_client,
                "operators": [name for name in ("retain", "retain_delete", "rebuild", "reprocess", "redrive")
                              if getattr(self, name)]}
