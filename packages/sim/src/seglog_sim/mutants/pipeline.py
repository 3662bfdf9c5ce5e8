"""Mutants of the snapshot pipeline (DESIGN §5): the worker's steps and order, claims and their increments, the
pending store, backoff, rebuild and reprocess, the router and the pollers."""

from __future__ import annotations

from typing import Final

from seglog_sim.mutants.model import Mutant

_WORKER: Final = "seglog_core.pipeline.worker"
_CLAIMS: Final = "seglog_core.pipeline.claims"
_PENDING: Final = "seglog_aws.dynamodb_pending_store"
_BACKOFF: Final = "seglog_core.pipeline.backoff"
_FALLBACK: Final = "seglog_core.pipeline.fallback"
_POLLERS: Final = "seglog_sim.pollers"
_ROUTER: Final = "seglog_core.pipeline.router"

MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(name="claimer_rule", module=_CLAIMS,
           old="        return item.claimer == message.message_id\n",
           new="        return False\n",
           breaks="a loser of the pending upsert always deletes its message, even when it is the claimer's own "
                  "message redelivered (the seed's rule: strands the snapshot if the first holder dies)"),
    Mutant(name="order_check", module=_WORKER,
           old="            if head is None:\n                return plan\n",
           new="            if True:\n                return plan\n",
           breaks="a snapshot is built while an earlier one of its log is incomplete (step 3)"),
    Mutant(name="done_already", module=_WORKER,
           old="        if snapshot.snapshot_root is not None:\n            self._complete(",
           new="        if False:\n            self._complete(",
           breaks="a job for a completed snapshot builds it again instead of finishing its completion steps "
                  "(step 1); once retention has archived the segment before it, a late job for it finds no "
                  "completed snapshot to fold from and fails on every receive, holding every later snapshot of "
                  "its log back (seed 101, found when operators and retention entered every world: the guard "
                  "is no longer only an economy)"),
    Mutant(name="completion_order", module=_WORKER,
           old="        log_id, segment, entry = snapshot.log_id, snapshot.segment, snapshot.num\n"
               "        if snapshot.snapshot_root is None:",
           new="        log_id, segment, entry = snapshot.log_id, snapshot.segment, snapshot.num\n"
               "        if message is not None:\n"
               "            self.queue.delete(message)\n"
               "        if snapshot.snapshot_root is None:",
           breaks="the message is deleted before the root, segment and pending item are written (step 6 order)"),
    Mutant(name="no_stale_takeover", module=_CLAIMS,
           old="                and item.modified < now - self.takeover_after):",
           new="                and False):",
           breaks="a stale claim (its holder dead, its message in the DLQ) is never taken over by a new message"),
    Mutant(name="claim_ignores_staleness", module=_PENDING,
           old='ConditionExpression="Q = :q AND (A = :f OR M < :stale)"',
           new='ConditionExpression="Q = :q AND (A = :f OR (M < :stale AND A = :f))"',
           breaks="an active claim is never reclaimed after the takeover timeout (a dead holder blocks for ever)"),
    Mutant(name="claim_ignores_claimer", module=_PENDING,
           old='ConditionExpression="Q = :q AND (A = :f OR M < :stale)"',
           new='ConditionExpression="(Q = :q OR Q <> :q) AND (A = :f OR M < :stale)"',
           breaks="any message may claim, not only the one the pending item names",
           survives="the pending upsert already stops every message but the claimer's before the claim (step 2), and "
                    "a second claimer that slips between the two raises X, which fences the first at its next "
                    "checkpoint; both cut the same chunks (the chunk size is pinned): the Q condition saves a wasted "
                    "build, it guards no invariant"),
    Mutant(name="checkpoint_increment", module=_PENDING,
           old='UpdateExpression="SET S = :s, M = :m", ConditionExpression="X = :x"',
           new='UpdateExpression="SET S = :s, M = :m", ConditionExpression="attribute_exists(P) OR X = :x"',
           breaks="a holder that was taken over goes on checkpointing and building (step 5's X condition)",
           survives="a chunk's key and bytes are a function of the snapshot, the chunk index and the chunk size, and "
                    "the first claim pins the chunk size (pin_chunk_size is killed): a zombie that goes on building "
                    "writes exactly the bytes the new holder writes, and completing twice sets the same root. The X "
                    "condition stops the zombie's wasted work at its next checkpoint; it would matter for I3 only if "
                    "two code versions cut the same chunk differently (a change of the chunk format), and even then "
                    "after one chunk written: such a change needs a new key scheme, not this guard"),
    Mutant(name="release_increment", module=_PENDING,
           old='UpdateExpression="SET A = :f, M = :m", ConditionExpression="X = :x"',
           new='UpdateExpression="SET A = :f, M = :m", ConditionExpression="attribute_exists(P) OR X = :x"',
           breaks="a holder that was taken over may hand off the new holder's claim",
           survives="a wrongly released claim only lets a third invocation claim sooner; its claim raises X, which "
                    "fences the live holder at its next checkpoint, and every builder cuts the same chunks (the "
                    "chunk size is pinned): churn, no broken invariant. Handoffs are rare besides (5 per 1,000 "
                    "seeds: builds here finish well within the function timeout)"),
    Mutant(name="takeover_increment", module=_PENDING,
           old='ConditionExpression="Q = :old AND X = :x AND M < :stale"',
           new='ConditionExpression="Q = :old AND (X = :x OR attribute_exists(X)) AND M < :stale"',
           breaks="two takers racing on one read may both take a stale claim over",
           survives="of two takers that both take over, only the one named last passes the claim's Q condition, "
                    "and the X fence and the pinned chunk size make a second builder harmless anyway; the increment "
                    "in the condition saves the loser a claim attempt and a wasted build"),
    Mutant(name="set_claimer_once", module=_PENDING,
           old='ConditionExpression="attribute_exists(P) AND attribute_not_exists(Q) AND X = :x"',
           new='ConditionExpression="attribute_exists(P) AND (attribute_not_exists(Q) OR Q <> :q) AND X = :x"',
           breaks="a second message may overwrite the claimer of a pending item",
           survives="the claim's Q condition decides: the message named last claims, the one overwritten is refused "
                    "(busy), comes back and is hidden as a duplicate until the snapshot is done; set_claimer's own "
                    "condition saves that round trip"),
    Mutant(name="pin_chunk_size", module=_WORKER,
           old="takeover_after=self.takeover_after, initial_state=self._pinned)",
           new="takeover_after=self.takeover_after, initial_state=None)",
           breaks="the first claim does not pin the chunk size: two code versions cut one snapshot's chunks "
                  "differently (the mixed_version bug)",
           # It needs a takeover before the holder's first checkpoint by a builder of the other version: a random
           # profile has all of it in 1 seed of 400 (it survived seeds 1-1000 once the simulator's
           # duplicate_delivery became the emulator's, issue 19); armed, in 1 of 45 (seeds 1-500).
           arms=("mixed_version", "clock_skew", "visibility_expiry", "duplicate_delivery")),
    Mutant(name="order_wait_bound", module=_PENDING,
           old='condition, values[":p"] = "L = :l AND P < :p", {"B": pending_key(*before)}',
           new='condition, values[":p"] = "L = :l AND P <= :p", {"B": pending_key(*before)}',
           breaks="the order wait's Query bounded one key too far counts a snapshot's own pending item as an "
                  "earlier one: every job defers behind itself until the DLQ (the bound moved into the Query when "
                  "the wait stopped reading the log's later items)"),
    Mutant(name="no_help", module=_WORKER,
           old="            helped = self._help(message, snapshot, head, remaining, margin)\n",
           new="            helped = Outcome.BUSY\n",
           breaks="a job behind an earlier snapshot whose own job was lost before its claim (a poller or worker that "
                  "died holding it) only waits and defers: the sheet's snapshots stall until the lost message's "
                  "visibility timeout (issue 34: 0/41 of a busy sheet froze for minutes under the README's faults)"),
    # ---- issue 18: each fix of a log's whole life, reverted (retention, rebuild, reused ids, late jobs, readers)
    Mutant(name="deferral_patience", module=_BACKOFF,
           old="        if receive > self.patience:",
           new="        if False:",
           breaks="deferral hides stay capped at 15 minutes: a waiting job reaches the DLQ in about 7.5 h, far "
                  "sooner than the template documents",
           survives=(
               "a job waits past 20 receives only behind a snapshot blocked or parked for hours; the worlds' "
               "faults stop after minutes and nothing blocks a snapshot there, so no job reaches the longer "
               "hides; tests/test_snapshot_backoff.py drives the worker through 50 receives and kills it")),
    Mutant(name="rebuild_keeps_completed", module=_FALLBACK,
           old="    if root is not None:\n        try:",
           new="    if root is not None and False:\n        try:",
           breaks="rebuild builds a completed snapshot again and writes over its chunks and root",
           survives=(
               "measured: survives 1,000 seeds with Scenario.rebuild on — in every world the rebuilt state "
               "equals the stored one (no change of the document model between code versions), so a rewrite "
               "changes no state a check can see; tests/test_verify_retention.py kills it with a stored state "
               "that differs from the fold")),
    Mutant(name="rebuild_from_empty", module=_FALLBACK,
           old="            previous, bodies = None, []",
           new="            previous, bodies = EMPTY_SNAPSHOT_ROOT, []",
           breaks="rebuild folds from an empty sheet past retired history and rewrites every later snapshot"),
    Mutant(name="rebuild_claims", module=_FALLBACK,
           # Rebuild as it was before issue 18: no claim, so no checkpoints either (there is no increment to hold).
           old="        increment = self._claim(entry)\n"
               "        if not isinstance(increment, int):\n"
               "            return increment\n"
               "        resumed = Checkpoint.of(pending.get(log_id, segment, num))\n"
               "        build = SnapshotBuild(self.blobs, log_id, segment, num, previous, bodies,\n"
               "                              chunk_cells=resumed.chunk_cells or self.chunk_cells)\n"
               "        # Step 5: after each chunk, checkpoint under our increment; a taker (we stalled past "
               "the takeover timeout)\n"
               "        # raised it, and then finishes the snapshot in our place.\n"
               "        for chunk in build.chunks(resumed.next_chunk):\n"
               "            self.blobs.put(chunk.key, chunk.data)\n"
               "            state = Checkpoint(next_chunk=chunk.index + 1, chunk_cells=build.chunk_cells).encode()\n"
               "            if not pending.checkpoint(log_id, segment, num, increment=increment, state=state, "
               "now=int(self.clock())):\n"
               "                return None\n",
           new="        resumed = Checkpoint.of(pending.get(log_id, segment, num))\n"
               "        build = SnapshotBuild(self.blobs, log_id, segment, num, previous, bodies,\n"
               "                              chunk_cells=resumed.chunk_cells or self.chunk_cells)\n"
               "        for chunk in build.chunks(resumed.next_chunk):\n"
               "            self.blobs.put(chunk.key, chunk.data)\n",
           breaks="rebuild builds without a claim, reading the pinned chunk size once: a job that claims the snapshot "
                  "in between cuts the same chunk keys another way (orphans, I6, or a corrupt chunk, I3: seed 79)",
           # A job of the other code version must claim while rebuild is slow between its read and its chunks: 1
           # random seed in 400 (seeds 1-800; the mutant used to die at seed 4 of a NameError of its own making,
           # not of a violation); armed, 1 in 150 (seeds 1-600).
           arms=("mixed_version", "s3_latency", "crash", "pause")),
    Mutant(name="segment_before_root", module=_WORKER,
           old="        if snapshot.snapshot_root is None:\n"
               "            self.store.set_snapshot_root(log_id, segment, entry, root)\n"
               "            self.crash(\"after_root\")\n"
               "        self.store.advance_snapshot(log_id, segment, entry)\n",
           new="        self.store.advance_snapshot(log_id, segment, entry)\n"
               "        self.crash(\"after_segment_update\")\n"
               "        if snapshot.snapshot_root is None:\n"
               "            self.store.set_snapshot_root(log_id, segment, entry, root)\n"
               "            self.crash(\"after_root\")\n",
           breaks="completion sets the segment's S before the entry's R: a load between the two finds no completed "
                  "snapshot where S points (CorruptLogError)"),
    # ---- issue 34: the loose ends of the last issues, reverted where a world can reach them
    Mutant(name="restart_repeats", module=_POLLERS,
           old='        key = restart_site(shard, f"{sequence_number(part[0])}:{attempt}", incarnation)\n',
           new='        key = restart_site(shard, f"{sequence_number(part[0])}:{attempt}", 0)\n',
           breaks="the poller_restart decision is keyed by the part's first SequenceNumber and its attempt, which "
                  "restarts at 1 in the new poller: the same restart fires in every new poller and the shard "
                  "stalls for as long as faults last, then catches up (the emulator's bug of issue 19: 17 restarts "
                  "in 4 minutes); only the check under faults, seglog_sim.liveness, sees it"),
    Mutant(name="router_keeps_a_gone_body", module=_ROUTER,
           old="    except BlobNotFoundError:\n        log.warning(",
           new="    except KeyError:\n        log.warning(",
           breaks="the router raises on a large body retention already deleted and retries the record until it "
                  "leaves the stream a day later, holding every later record of its shard",
           survives="needs the router to fall more than a segment behind `log retain --delete`: no seed of 1-5300 "
                    "does; it was found under restart_repeats (seeds 759 and 869) and "
                    "packages/core/tests/test_router.py holds it"),
)
