"""The mutants: each names one module, the exact text it replaces there, and the guard or order it breaks.

Every guard of the protocol (DESIGN §3, §5) is here, and every bug the chaos runs and reviews found, brought
back. ``seglog simulate --mutants`` runs each against the simulator; a mutant no seed kills is either a gap in
the fault model or a guard that only defends in depth — then ``survives`` says why, and it is reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

_WORKER: Final = "seglog_core.pipeline.worker"
_CLAIMS: Final = "seglog_core.pipeline.claims"
_PENDING: Final = "seglog_aws.dynamodb_pending_store"
_LOG_STORE: Final = "seglog_aws.dynamodb_log_store"
_LOG: Final = "seglog_core.log"
_BODIES: Final = "seglog_core.bodies"
_BACKOFF: Final = "seglog_core.pipeline.backoff"
_IDEMPOTENCE: Final = "seglog_core.idempotence"
_READS: Final = "seglog_core.reads"
_RETENTION: Final = "seglog_core.retention"
_FALLBACK: Final = "seglog_core.pipeline.fallback"
_ROUTES: Final = "seglog_services.api.routes"
_POLLERS: Final = "seglog_sim.pollers"
_ROUTER: Final = "seglog_core.pipeline.router"
_BATCHER: Final = "seglog_client.batcher"
#: Where the batcher keeps a batch whose answers were lost at the head of its queue, as it was.
_KEEP_BATCH: Final = ("                batch.since, batch.first_try = exc.since or batch.since, "
                      "exc.first_try or batch.first_try\n")


@dataclass(frozen=True, kw_only=True)
class Mutant:
    name: str
    module: str
    old: str
    new: str
    #: What the edit breaks, in one sentence.
    breaks: str
    #: When the guard is defence in depth that no reachable history needs: why (the mutant is expected to live).
    survives: str | None = None
    #: Fault kinds (seglog_awsmodel.faults.FaultKind values; names here, so that importing the catalogue imports
    #: no module a mutant edits) on in every seed run against this mutant, the others drawn as usual
    #: (Scenario.armed): the combination that reaches a guard a random profile reaches in too few seeds.
    arms: tuple[str, ...] = ()


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(name="batch_resent_as_new", module=_BATCHER,
           old=_KEEP_BATCH,
           new="                with self._lock:\n"
               "                    self._queue[0] = _Batch(batch.tickets, self._ids())\n",
           breaks="a batch whose answers were lost is sent again under a new entry id: if an earlier try landed, "
                  "its edits are stored twice (issue 35)"),
    Mutant(name="batch_requeued_last", module=_BATCHER,
           old=_KEEP_BATCH,
           new="                with self._lock:\n                    self._queue.rotate(-1)\n",
           breaks="a batch whose answers were lost goes to the back of the queue: later edits land before it, out "
                  "of their caller's order (issue 35)"),
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
    Mutant(name="append_not_exists", module=_LOG_STORE,
           old="Item=entry_to_item(entry), ConditionExpression=_NOT_EXISTS_ENTRY,",
           new='Item=entry_to_item(entry), ConditionExpression="attribute_not_exists(N) OR attribute_exists(N)",',
           breaks="an append overwrites the entry at its num (attribute_not_exists dropped)"),
    Mutant(name="segment_s_moves_back", module=_LOG_STORE,
           old='"attribute_exists(N) AND (attribute_not_exists(S) OR S < :n)"',
           new='"attribute_exists(N) AND (attribute_not_exists(S) OR S <> :n)"',
           breaks="a late completion moves the segment's S back to an older snapshot (I4)"),
    Mutant(name="consistent_forward_read", module=_IDEMPOTENCE,
           old="    for entry in store.entries(log_id, segment, start):\n",
           new="    for entry in store.entries(log_id, segment, start, consistent=False):\n",
           breaks="the idempotent append reads forward from since with eventually consistent reads (it may miss "
                  "its own earlier try and write the entry twice)"),
    Mutant(name="short_read_retry", module=_READS,
           old="        if short is None:\n            return got\n",
           new="        if True:\n            return got\n",
           breaks="a read that lags is taken as the answer: a paged load's next page ends before the position the "
                  "first answered (unknown_position), a sync skips the end of a closed segment, a fold misses the "
                  "entries before its Snapshot entry (issue 35; seed 8: a snapshot folded without its last entries)"),
    Mutant(name="since_scan", module=_IDEMPOTENCE,
           old="                if scan.found is not None:\n",
           new="                if False:\n",
           breaks="the API's append does not look for its entry id after since: a retry writes a second copy"),
    Mutant(name="rebase_past_end", module=_IDEMPOTENCE,
           old="existing is not None and existing.type is not EntryType.END_SEGMENT and horizon",
           new="existing is not None and horizon",
           breaks="the API's append, its put lost to an EndSegment, writes right after it: an entry past the end of "
                  "a closed segment, which no reader follows (issue 35's rebase)"),
    Mutant(name="rebase_own_copy", module=_IDEMPOTENCE,
           old="                if existing is not None and existing.entry_id == entry_id:\n"
               "                    return event_log.deduplicated(prepared, existing, tries)\n",
           new="",
           breaks="the API's append, its put lost to its own first try, rebases past it and stores the entry twice "
                  "(issue 35's rebase: the winner's item is the read of that num). It takes a first try stalled "
                  "between its read and its put while its client retries (seed 70: a connection reset in flight)",
           arms=("pause",)),
    Mutant(name="rebase_ignores_horizon", module=_IDEMPOTENCE,
           old="            and now - read_at < horizon)",
           new="            )",
           breaks="the API's append rebases however long ago its read proved the segment open: a put may land at a "
                  "num retention deleted (issue 35's rebase, the argument of EventLog._fresh)",
           survives="a rebase follows its read within one invocation, milliseconds, and no world retires a segment "
                    "that fast after it closed while a put to it is in flight; kept as defence in depth"),
    Mutant(name="lost_answer_lookback", module=_LOG,
           old='                    if num >= 0 and getattr(exc, "outcome_unknown", False):',
           new="                    if False:",
           breaks="the library's append forgets where a lost answer may have landed and writes the entry again"),
    Mutant(name="policy_fails_append", module=_LOG,
           old="                    landed = self.landed(entry, tries)\n"
               "                    self.apply_policy_after(entry)",
           new="                    landed = self.landed(entry, tries)\n"
               "                    self._apply_policy(entry)",
           breaks="a failed snapshot policy after a landed append fails the append, which is then written again "
                  "(a bug chaos found)"),
    Mutant(name="large_body_retag", module="seglog_core.bodies",
           old="lambda: blobs.put_if_absent(key, data, discardable=True),",
           new="lambda: blobs.put(key, data, discardable=True),",
           breaks="a retried large append tags its already-kept body discardable again: it would expire under "
                  "its entry (I6); since issue 18 the conditional put is the only guard (routes.keep_body, which "
                  "untagged it again, is gone)"),
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
    Mutant(name="entry_id_reuse_check", module=_LOG,
           old="        if not prepared.same_as(stored, self.blobs):",
           new="        if False:",
           breaks="a request reusing an entry id with another body is answered as stored (deduplicated) instead of "
                  "refused with 422 entry_id_reused: the client believes an entry is in the log that is not"),
    Mutant(name="body_key_digest", module=_BODIES,
           old='    return f"entries/{log_id}/{entry_id}/{hashlib.sha256(data).hexdigest()}"',
           new='    return f"entries/{log_id}/{entry_id}"',
           breaks="two tries of one entry id with different large bodies share one object: the later put replaces "
                  "the acknowledged body (the log stops being append-only, I2/I3)"),
    Mutant(name="retention_by_creation", module=_RETENTION,
           old="        if is_retired(segment) or clock() - following.created < policy.min_age:",
           new="        if is_retired(segment) or clock() - segment.created < policy.min_age:",
           breaks="retention ages a segment from its creation, not its close: a try that landed within the retry "
                  "horizon can be retired before its retry comes, which then cannot find it (killed by the check "
                  "that the horizon is kept, seglog_sim.checks.horizon_kept: a paused retry inside the window "
                  "survived 2,000 seeds)"),
    Mutant(name="tombstone_end_segment", module=_LOG_STORE,
           old="if e.type is not EntryType.END_SEGMENT]",
           new="if True]",
           breaks="retention deletes a segment's EndSegment too: a reader paging through the segment as it is "
                  "retired takes its last entry for the tail and writes into retired history",
           survives=(
               "a simulated forward read reads a segment of a few dozen entries in one Query page, which the "
               "simulated table answers at one instant, so no deletion overtakes it between pages; "
               "tests/test_idempotence.py (a store that retires the segment between two pages) kills it")),
    Mutant(name="scan_hole", module=_IDEMPOTENCE,
           old="        if entry.num != expect:",
           new="        if False:",
           breaks="the forward read does not notice entries retention removed under it and answers from a hole"),
    Mutant(name="since_retired_lookup", module=_IDEMPOTENCE,
           old="                        found = _after_deleted(store, event_log.blobs, log_id, entry_id, since, "
               "lost.segment,\n                                               horizon)",
           new="                        raise errors.UnknownPositionError(log_id, since.segment, since.num) from None",
           breaks="a retry whose since retention deleted is answered 409 unknown_position again (the dead end: load "
                  "and resend stores the entry twice; killed since clients pause mid-retry and the history check "
                  "sees an entry id inserted twice across deleted segments)"),
    Mutant(name="tail_ttl", module=_LOG,
           old="        return self.tail_ttl is None or self.clock() - tail.checked < self.tail_ttl",
           new="        return True",
           breaks="a writer trusts its cached tail for ever: after an idle spell longer than the retry horizon it "
                  "writes at tail + 1 in a segment retention retired, where the put succeeds (seed 904)",
           survives=(
               "two guards on one path: in the worlds the stale tail came from a deduplicated answer, which no "
               "longer moves the tail (landed_tail_segment), so seed 904 passes with either one reverted. "
               "tests/test_tail_after_retention.py (the idle library writer) kills it")),
    Mutant(name="landed_tail_segment", module=_LOG,
           old="        if not deduplicated and (entry.segment, entry.num) > known:",
           new="        if tail is None or tail.segment == entry.segment:",
           breaks="a landing moves the tail only within the cached segment and a deduplicated old entry moves it "
                  "too: the Snapshot entry after the next append goes after a stale tail, into a segment retention "
                  "retired (seed 904)",
           survives=(
               "two guards on one path: the API's writer trusts its tail for EventLog.tail_ttl only (60 s at most, "
               "the retry horizon if shorter, 0 when not told it), and seed 904's next append came later, so it "
               "read the tail again (tail_ttl). "
               "tests/test_tail_after_retention.py (a retry answered from an archive) kills it")),
    Mutant(name="rebuild_restores_deleted", module=_FALLBACK,
           old="    if discard_late_snapshot(run.store, blobs, log_id, entry.segment, entry.num):",
           new="    if False:",
           breaks="rebuild writes again the objects of a snapshot whose segment retention deleted while it wrote "
                  "them: objects nothing references (I6, seed 801)",
           survives=(
               "the look before writing (the segment claimed for deletion: gone) already stops seed 801; this one "
               "is the look after, for a deletion that claims the segment while rebuild writes, a window of a few "
               "storage calls. tests/test_verify_retention.py::"
               "test_rebuild_writes_no_snapshot_of_a_segment_retention_deletes_meanwhile[memory-put] kills it")),
    Mutant(name="deleted_since_judged", module=_IDEMPOTENCE,
           old="                        return event_log.deduplicated(prepared, found, tries)",
           new="                        return event_log.landed(found, tries, deduplicated=True)",
           breaks="a retry whose since retention deleted answers the entry id it finds as stored without judging "
                  "it: an id reused with another body is answered deduplicated (seeds 1031, 2095, 3474; since "
                  "clients come back later to reuse ids, seed 51)"),
    Mutant(name="deleted_since_reads_archives", module=_IDEMPOTENCE,
           old="        start = Position(segment=kept[0], num=0) if kept else resend",
           new="        start = resend",
           breaks="after a deleted since the read begins past every retired segment, archived ones too: an entry in "
                  "an archive after the gap is not found, and its id reused with another body is stored again "
                  "(seed 3474; since deletes keep more than the schedule's archive, seed 51)"),
    Mutant(name="rebuild_refuses_deleting", module=_FALLBACK,
           old="        elif _deleting(run.store, log_id, entry.segment):",
           new="        elif False:",
           breaks="rebuild refuses, as a wrong snapshot, one it cannot read because retention is deleting its "
                  "segment meanwhile (seed 1716; since an operator may rebuild a moment before a deletion, seed "
                  "200)"),
    Mutant(name="retention_one_form", module=_LOG_STORE,
           old='                       f"attribute_exists(N) AND attribute_not_exists({other})", '
               '{":p": {"BOOL": True}, ":u": _DUE})',
           new='                       "attribute_exists(N)", {":p": {"BOOL": True}, ":u": _DUE})',
           breaks="an archive run and a delete run both claim one segment: an archived snapshot's root is deleted, "
                  "or bodies stay kept that nothing references (seeds 356, 170, 96)"),
    Mutant(name="retention_finishes_claims", module=_RETENTION,
           old="        if segment.retiring:\n            if stop():",
           new="        if False:\n            if stop():",
           breaks="a retention run cut short after its claim leaves its segment half removed for ever"),
    Mutant(name="due_cleared_unsettled", module=_RETENTION,
           old="        if settled[log_id]:\n            store.clear_due(log_id, segment)",
           new="        if True:\n            store.clear_due(log_id, segment)",
           breaks="a scheduled run clears the due marks of a log whose look was cut short after a claim (or failed): "
                  "no run looks at the log again until its next close, so its segment stays half removed (P) for "
                  "as long as the sheet is idle (seed 120 with DynamoDB 5xx armed; seed 971 without)",
           arms=("ddb_5xx",)),
    Mutant(name="claim_not_due", module=_LOG_STORE,
           old='"SET P = :p, U = :u"',
           new='"SET P = :p"',
           breaks="retention's claim does not mark its segment due: a run that dies holding it after a concurrent "
                  "run cleared the log's marks leaves the claim (P) for ever (seed 5783 of 10,000)",
           survives="the race needs two scheduled runs on one log, the second claiming after the first cleared and "
                    "then dying: about one seed in 8,000 draws it; tests/test_retention_due.py replays it on every "
                    "backend (test_a_claim_left_after_another_run_settled_the_log_is_due_and_finished)"),
    Mutant(name="late_chunk_kept", module=_WORKER,
           old="                    discard_late_snapshot(self.store, self.blobs, log_id, segment, entry)\n",
           new="",
           breaks="a builder stalled before a chunk's put while another completed the snapshot and retention deleted "
                  "its segment leaves the chunk it put late: an object nothing references (I6, seed 9345)",
           survives="the stall must outlast the takeover, the completion and a deletion of that very segment: seed "
                    "9345 of 10,000 draws it; tests in packages/core/tests/test_worker_late_put.py (chunk) replay it"),
    Mutant(name="late_root_kept", module=_WORKER,
           old="            if not discard_late_snapshot(self.store, self.blobs, log_id, segment, entry):\n",
           new="            if True:\n",
           breaks="a builder stalled before the root's put fails on the deleted entry and leaves the root it put "
                  "late (I6), its job failing until the next receive finds the segment retired",
           survives="seed 9345's race with the stall moved one put later, rarer still; "
                    "packages/core/tests/test_worker_late_put.py (root) replays it"),
    Mutant(name="retention_one_look", module=_RETENTION,
           old="        _remove_late_snapshot_objects(blobs, log_id, segment.num)\n",
           new="        pass\n",
           breaks="a root put after retention listed the segment's objects, its R set before the entries went, is "
                  "left: an object nothing references (I6)",
           survives="a window of a few storage calls inside seed 9345's race; packages/core/tests/"
                    "test_worker_late_put.py::test_retention_removes_a_root_put_after_its_listing_and_before_the_"
                    "entries_went kills it"),
    Mutant(name="due_mark_on_close", module=_LOG_STORE,
           old='"Item": {**segment_to_item(segment), "U": _DUE},',
           new='"Item": segment_to_item(segment),',
           breaks="closing a segment puts nothing in the index Due: the scheduled retention function never finds a "
                  "segment to retire (seed 1, by the check retention_behind)"),
    Mutant(name="late_job_legacy_deleted", module=_WORKER,
           old="        if segments and segment < segments[0].num:",
           new="        if False:",
           breaks="a late job for a segment deleted with its item fails on every receive, through the DLQ and "
                  "after every redrive",
           survives=(
               "no world deletes a segment with its item any more (retention leaves a tombstone since issue 18):"
               " only data written by older code has that form; packages/core/tests/test_worker_jobs.py kills it")),
    Mutant(name="late_job_tombstone", module=_WORKER,
           old="(s.archive is not None or s.retired is not None)",
           new="s.archive is not None",
           breaks="a late job for a segment retention deleted (its tombstone) fails on every receive for ever"),
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
    Mutant(name="load_cursor_unpinned", module=_ROUTES,
           old="        sheet, root = document.load_at(lid, cursor.snapshot, cursor.upto), None\n",
           new="        sheet, root = document.load(lid)[0], None\n",
           breaks="a paged load's later pages come from the latest state, not the one its first page pinned: a "
                  "load mixes two states"),
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
    Mutant(name="expected_past_tail", module=_LOG,
           old="        if tail.segment == segment and expected <= nxt:\n",
           new="        if True:\n",
           breaks="an expected-version append puts its num wherever the caller says: past the tail, or in a segment "
                  "started since the caller's last append (its own snapshot policy's), it leaves a gap (I1; seed 6 "
                  "of the optimistic library writers, found when point 4 widened the worlds)"),
    Mutant(name="expected_end_unfollowed", module=_LOG,
           old="                            self._follow_end(tail, existing)\n                        raise conflict",
           new="                            pass\n                        raise conflict",
           breaks="an expected-version append that meets an EndSegment leaves the writer in the ended segment with the "
                  "EndSegment's num as taken: after a stale read its next append lands after the end (seed 728)"),
    Mutant(name="tail_ttl_untold", module=_LOG,
           old="            self.tail_ttl = 0.0 if horizon is None else min(DEFAULT_TAIL_TTL, horizon)",
           new="            self.tail_ttl = DEFAULT_TAIL_TTL",
           breaks="a library writer on default settings trusts its cached tail for a minute whatever the retry "
                  "horizon: idle past a shorter one, it writes at tail + 1 in a segment retention retired",
           survives="the simulator's library clients are told the horizon, and the API's writer trusts only the tail "
                    "its own append just proved (500 seeds); tests/test_tail_after_retention.py::"
                    "test_a_writer_on_default_settings_never_trusts_its_tail_past_a_retry_horizon_under_a_minute kills "
                    "it"),
    Mutant(name="stray_archive_sweep", module=_RETENTION,
           old="                and clock() - segment.retired < STRAY_ARCHIVE_SECONDS):",
           new="                and False):",
           breaks="an archive run that lost its claim to a deletion and died before removing its archive leaves it "
                  "for ever (I6: nothing names it, and it holds deleted entries)",
           survives="two guards on one path: the losing run deletes its own archive, and no world kills it between "
                    "the two (seeds 1-2,000); tests/test_retention.py::"
                    "test_an_archive_left_by_a_run_that_lost_its_claim_and_died_is_reported_and_removed_by_the_next_run"
                    " kills it"),
    Mutant(name="stray_archive_on_loss", module=_RETENTION,
           old="                blobs.delete(key)  # nothing will ever name it: a segment marked D never gets an A",
           new="                pass  # nothing will ever name it: a segment marked D never gets an A",
           breaks="an archive run that loses its claim to a deletion leaves its archive until a later run sweeps it",
           survives="two guards on one path: the next run's sweep (STRAY_ARCHIVE_SECONDS) removes it (seeds 1-2,000); "
                    "with both guards gone, seed 181 is caught by verify's archive check"),
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


#: No edit at all: the code as it is, run over the same seeds for the waste figures a survivor is compared with.
BASELINE: Final = Mutant(name="baseline", module="", old="", new="", breaks="nothing: the unmutated code")


def by_name(name: str) -> Mutant:
    for mutant in (*MUTANTS, BASELINE):
        if mutant.name == name:
            return mutant
    raise KeyError(f"no mutant {name!r}; known: {', '.join(m.name for m in MUTANTS)}")
