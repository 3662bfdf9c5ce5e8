"""Mutants of the write path: appends and their conditions, the idempotent append (scan, rebase, since), the
writer's tail and policy, reads and their retry, large bodies, the API's routes and the client's batcher."""

from __future__ import annotations

from typing import Final

from seglog_sim.mutants.model import Mutant

_LOG_STORE: Final = "seglog_aws.dynamodb_log_store"
_LOG: Final = "seglog_core.log"
_BODIES: Final = "seglog_core.bodies"
_IDEMPOTENCE: Final = "seglog_core.idempotence"
_READS: Final = "seglog_core.reads"
_ROUTES: Final = "seglog_services.api.routes"
_BATCHER: Final = "seglog_client.batcher"
#: Where the batcher keeps a batch whose answers were lost at the head of its queue, as it was.
_KEEP_BATCH: Final = ("                batch.since, batch.first_try = exc.since or batch.since, "
                      "exc.first_try or batch.first_try\n")

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
    Mutant(name="load_cursor_unpinned", module=_ROUTES,
           old="        sheet, root = document.load_at(lid, cursor.snapshot, cursor.upto), None\n",
           new="        sheet, root = document.load(lid)[0], None\n",
           breaks="a paged load's later pages come from the latest state, not the one its first page pinned: a "
                  "load mixes two states"),
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
    Mutant(name="read_hole_kept", module=_READS,
           old="        if after.num != before.num + 1:  # 0.: a hole, which the log never has\n",
           new="        if False:\n",
           breaks="a read that skipped a num a racing append wrote (DynamoDB's Query is read-committed) is taken as "
                  "it is: a load folds without the entry, a sync's next position passes it (this stop)",
           survives="the simulated DynamoDB answers a Query as one snapshot (a stale one is a prefix), so no world "
                    "shows a skipped num; tests/test_reads.py::"
                    "test_a_read_that_skipped_a_num_a_racing_append_wrote_is_read_again_from_it kills it"),
    Mutant(name="request_class_wide", module=_ROUTES,
           old="    return current if current is not None else app.current_event\n",
           new="    return app.current_event\n",
           breaks="the routes read Powertools' class-wide current_event: two requests answered at once in one "
                  "process read each other's bodies (CI, test_retries_of_one_entry_id_racing_other_writers_store_"
                  "it_once)",
           survives="every route reads its request before its first store call, and the simulator's tasks switch "
                    "only at store calls; tests/test_api.py::"
                    "test_two_requests_answered_at_once_in_one_process_each_read_their_own_body kills it"),
)
