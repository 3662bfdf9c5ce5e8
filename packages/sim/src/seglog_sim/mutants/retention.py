"""Mutants of retention (DESIGN §3): its claims, forms, due index and stray archives, and what other parts must do
about a segment retention retired (late jobs, late snapshot writes, rebuild)."""

from __future__ import annotations

from typing import Final

from seglog_sim.mutants.model import Mutant

_WORKER: Final = "seglog_core.pipeline.worker"
_LOG_STORE: Final = "seglog_aws.dynamodb_log_store"
_RETENTION: Final = "seglog_core.retention"
_FALLBACK: Final = "seglog_core.pipeline.fallback"

MUTANTS: Final[tuple[Mutant, ...]] = (
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
)
