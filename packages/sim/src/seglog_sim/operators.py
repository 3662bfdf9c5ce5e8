"""Operators in the world: ``seglog log retain``, ``reprocess``, ``redrive`` and ``rebuild``, as a person runs them.

Each action is a task of kind ``operator`` that calls the real code the CLI calls (seglog_cli.log_commands and
pipeline_commands), over the run's backend — so its every storage call goes through the world's door: a
scheduling point where clients, routers and workers interleave with it, and a fault site (throttles, 5xx, lost
answers, stale reads; an operator's process is not a Lambda invocation, so it does not crash at a call). The
operator task of :mod:`seglog_sim.run` draws when, and which:

    operator task                         action task (kind "operator")
      | sleep(drawn)                          |
      | pick one of the enabled actions ----> spawn: retain LOG [--delete] | reprocess --since | redrive | rebuild LOG
      | sleep(drawn)                          | storage calls (interleaved, faulted)
      | ...                                   | done, or failed half-way (an operator runs it again)
      | clients done: a last round under faults (the schedule, a retain), free of the retry horizon
      | faults stop
      | finish every retention cut short ---> retain again (same log, same form) until it ends without error

Retention is finished, not only started (issue 18): a run that died between writing an archive and deleting the
segment's entries, or half-way through the deletes, leaves a half-retired segment that only a later run
completes. The scheduled function does that on its next run; a ``log retain`` cut short is run again by its
operator. :attr:`Operators.unfinished` keeps what was cut short, and the run is not quiet until it is empty.

A rebuild must never change a completed snapshot's state (DESIGN §5 "Manual fallback"): the states of the log's
completed snapshots are read before the rebuild starts and again after it ends, both straight from the
simulated stores (no world time passes, no fault fires), and any difference is a violation.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seglog_aws.redrive import redrive
from seglog_aws.s3_blob_store import S3BlobStore
from seglog_core import errors
from seglog_core.pipeline.fallback import rebuild, reprocess
from seglog_core.retention import MIN_KEEP, RetentionPolicy, apply_retention
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, split_segment_key
from seglog_core.snapshot import read_sheet
from seglog_core.violations import Violation
from seglog_sim.aws.dynamodb import SimDynamoDB
from seglog_sim.aws.s3 import SimS3, SimS3Client
from seglog_sim.faults import Faults
from seglog_sim.lambdas import Lambdas
from seglog_sim.scenario import Scenario
from seglog_sim.topology import Topology
from seglog_sim.world import Task, World


@dataclass(frozen=True, kw_only=True)
class Retain:
    """A ``seglog log retain`` an operator started (and must see through)."""

    log_id: uuid.UUID
    policy: RetentionPolicy


@dataclass(kw_only=True)
class Operators:
    world: World
    faults: Faults
    scenario: Scenario
    topology: Topology
    lambdas: Lambdas
    ddb: SimDynamoDB
    s3: SimS3
    queue_url: str
    dlq_url: str
    logs: list[uuid.UUID]
    #: Called after a redrive moved messages (the queue's pollers wake up).
    on_redrive: Callable[[], None] = lambda: None
    #: Actions started, by name (``retain``, ``retain --delete``, ``reprocess``, ``redrive``, ``rebuild``), and
    #: those that failed half-way (``... failed``).
    counts: Counter[str] = field(default_factory=Counter)
    #: Retention runs cut short (failed or killed): run again, after the faults stop, until they end.
    unfinished: list[Retain] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    _counter: int = 0

    def enabled(self) -> list[str]:
        s = self.scenario
        return [name for name, on in (("retain", s.retain), ("retain --delete", s.retain_delete),
                                      ("reprocess", s.reprocess), ("redrive", s.redrive), ("rebuild", s.rebuild))
                if on]

    def act(self, me: Task, *, min_age: float = 0.0, only: tuple[str, ...] = (), log: uuid.UUID | None = None,
            keep: int | None = None) -> Task | None:
        """Start one of the enabled actions (of ``only``, when given) on ``log`` (or a drawn one), drawn from the
        operator's generator; None when none is enabled. A retain keeps segments younger than ``min_age`` (the
        CLI's default keeps none) and the latest ``keep`` (drawn when None)."""
        names = [n for n in self.enabled() if not only or n in only]
        # An operator who deletes does so more often than the other commands (Scenario.delete_weight).
        names += ["retain --delete"] * (self.scenario.delete_weight - 1) if "retain --delete" in names else []
        if not names or not self.logs:
            return None
        rng = self.faults.rng(me)
        name = names[rng.randrange(len(names))]
        log_id = self.logs[rng.randrange(len(self.logs))] if log is None else log
        if name.startswith("retain"):
            if keep is None:
                # Deletes often keep more than the schedule's archive does (delete what is old, archive what is
                # recent): the schedule then archives segments after the deleted ones, history after a gap.
                keep = self._keep + (rng.choice((0, 1, 2)) if name == "retain --delete" else 0)
            return self.retain(Retain(log_id=log_id, policy=RetentionPolicy(keep=keep, min_age=min_age,
                                                                             archive=name == "retain")))
        if name == "reprocess":
            return self._spawn("reprocess", self._reprocess, self.world.now - rng.uniform(0.0, 120.0))
        if name == "redrive":
            return self._spawn("redrive", self._redrive)
        return self._spawn("rebuild", self._rebuild, log_id)

    def retain(self, retain: Retain) -> Task:
        name = "retain" if retain.policy.archive else "retain --delete"
        return self._spawn(name, self._retain, retain)

    def _spawn(self, name: str, fn: Callable[..., Any], *args: Any) -> Task:
        self._counter += 1
        self.counts[name] += 1
        task_name = f"op-{name.replace(' --', '-')}-{self._counter}"

        def body() -> Any:
            try:
                return fn(*args)
            except errors.SeglogError:
                self.counts[f"{name} failed"] += 1  # as the CLI would report it; the operator runs it again
                raise

        return self.world.spawn(task_name, "operator", body)

    # ------------------------------------------------------------------------------------------- actions

    def _retain(self, retain: Retain) -> list[int]:
        """``seglog log retain LOG [--delete]`` (log_commands.retain): apply_retention on one log."""
        backend = self.lambdas.backend
        try:
            return apply_retention(backend.store, backend.blobs, retain.log_id, retain.policy,
                                   clock=self.world.clock)
        except BaseException:
            if retain not in self.unfinished:
                self.unfinished.append(retain)  # cut short: its operator runs it again
            raise

    def _reprocess(self, since: float) -> int:
        """``seglog reprocess --since`` (pipeline_commands.reprocess) over every log."""
        backend = self.lambdas.backend
        return len(reprocess(backend.store, backend.blobs, backend.queue, since=since).enqueued)

    def _redrive(self) -> int:
        """``seglog redrive`` (pipeline_commands.redrive) with its default delay, the takeover timeout."""
        moved = redrive(self.lambdas.backend.sqs, dlq_url=self.dlq_url, queue_url=self.queue_url,
                        delay=self._takeover)
        self.on_redrive()
        return moved

    def _rebuild(self, log_id: uuid.UUID) -> int:
        """``seglog rebuild LOG`` (pipeline_commands.rebuild), checked: no completed snapshot changes state."""
        backend = self.lambdas.backend
        before = self.states(log_id)
        try:
            # Under the worker's takeover timeout and the world's clock: rebuild claims what it builds as a worker
            # would (a claimer named after its task), and leaves a live claim to its worker (seed 79).
            report = rebuild(backend.store, backend.blobs, backend.pending, log_id, body_of=backend.document().body,
                             chunk_cells=self.scenario.chunk_cells, takeover_after=self._takeover,
                             clock=self.world.clock, claimer=self.world.current.name)
            # A refusal says a completed snapshot differs from rebuild's fold: a wrong snapshot (I3) or a wrong fold
            # (a rebuild that folds from empty past deleted history refuses every later snapshot, and changes none).
            self.violations += [Violation(invariant="I3", log_id=str(log_id), segment=segment, entry=entry,
                                          message=f"rebuild refused this completed snapshot: {why}")
                                for segment, entry, why in report.refused]
        finally:
            after = self.states(log_id)
            # A segment retention claimed for deletion meanwhile loses its snapshots' objects: not rebuild's doing
            # (seeds 1427, 4817: a deletion half way through segment 1 when the rebuild ended).
            deleting = self.deleting(log_id)
            for position, state in before.items():
                if position[0] not in deleting and after.get(position, state) != state:
                    self.violations.append(Violation(
                        invariant="I3", log_id=str(log_id), segment=position[0], entry=position[1],
                        message="a rebuild changed this completed snapshot's state (DESIGN §5: a rebuild never "
                                "gives a completed snapshot a different state)"))
        return report.snapshots

    @property
    def _keep(self) -> int:
        """The segments a retain keeps at least: the schedule's RetentionKeep, and never fewer than retention's own
        floor."""
        return max(MIN_KEEP, int(dict(self.scenario.parameters).get("RetentionKeep", 3)))

    @property
    def _takeover(self) -> int:
        """The worker's takeover timeout (SnapshotTakeoverSeconds)."""
        return self.topology.takeover

    # -------------------------------------------------------------------------------------------- reading

    def deleting(self, log_id: uuid.UUID) -> set[int]:
        """The log's segments retention deleted or claimed for deletion (``D``), straight from the table."""
        return {int(item["N"]["N"]) for item in self.ddb.items(self.topology.segments_table, copy=False)
                if bytes(item["L"]["B"]) == log_id.bytes and "D" in item}

    def states(self, log_id: uuid.UUID) -> dict[tuple[int, int], Any]:
        """Every completed snapshot of the log still in the Entries table, and the state its root reads back
        (an unreadable one as its error's name), straight from the simulated stores."""
        blobs = S3BlobStore(SimS3Client.of(self.s3), bucket=self.topology.bucket)
        found: dict[tuple[int, int], Any] = {}
        for item in self.ddb.items(self.topology.entries_table, copy=False):
            if item.get("T", {}).get("S") != "snap" or "R" not in item:
                continue
            owner, segment = split_segment_key(bytes(item["G"]["B"]))
            root = item["R"]["S"]
            if owner != log_id or root == EMPTY_SNAPSHOT_ROOT:
                continue
            try:
                found[(segment, int(item["N"]["N"]))] = read_sheet(blobs, root)
            except errors.SeglogError as exc:
                found[(segment, int(item["N"]["N"]))] = type(exc).__name__
        return found
