"""Cause and effect in one run (issue 21, point 2): the links between a run's spans and markers, what selecting
one lights up, and why a snapshot waited — on a run built by hand, so each rule is seen to hold and to fail."""

from __future__ import annotations

import msgspec

from seglog_report import causes
from seglog_report.model import Link, Marker, RunData, Span

LOG = "0f0e0d0c-0000-4000-8000-000000000001"
K1 = causes.key(LOG, 0, 4)  # the earlier snapshot
K2 = causes.key(LOG, 0, 9)


def _span(lane: str, group: str, start: float, end: float, outcome: str, **ids: str | int) -> Span:
    return Span(lane=lane, group=group, start=start, end=end, outcome=outcome, ids=dict(ids))


def _run() -> RunData:
    spans = [
        _span("client-1", "client", 0.9, 1.2, "acknowledged", task="api-1"),
        _span("Api #1", "function", 1.0, 1.1, "success", task="api-1"),
        _span(f"snapshot {K1}", "snapshot", 0.5, 3.0, "completed", log_id=LOG, segment=0, entry=4),
        _span(f"snapshot {K2}", "snapshot", 1.1, 9.0, "completed", log_id=LOG, segment=0, entry=9),
        _span("Router #1", "function", 1.2, 1.3, "success", task="router-1"),
        _span("Worker #1", "function", 1.4, 1.6, "deferred", task="worker-1", message_id="q2"),
        _span("Worker #2", "function", 0.6, 3.0, "completed", task="worker-2", message_id="q1"),
        _span("Worker #1", "function", 2.6, 4.0, "completed", task="worker-3", message_id="q2"),
        _span("Worker #3", "function", 3.0, 3.2, "busy", task="worker-4", message_id="q2b"),
    ]
    spans[1].acts = {causes.APPENDED: [K2]}
    spans[4].acts = {causes.ROUTED: [K2]}
    spans[5].acts = {causes.WORKED: [K2], causes.ROUTED: [K1]}  # it sends a job for its predecessor
    spans[6].acts = {causes.WORKED: [K1]}
    spans[7].acts = {causes.WORKED: [K2]}
    spans[8].acts = {causes.WORKED: [K2]}
    markers = [Marker(lane="Worker #2", group="function", at=1.0, kind="ddb_5xx", ids={"task": "worker-2"}),
               Marker(lane="Worker #1", group="function", at=3.5, kind="pause", ids={"task": "worker-3"})]
    return causes.connect(RunData(kind="simulate", title="t", run=1, seed=1, spans=spans, markers=markers))


def _edges(run: RunData) -> set[tuple[str, str, str]]:
    return {(link.source, link.target, link.why) for link in run.links}


def test_each_span_and_marker_gets_an_id_and_the_chain_is_linked_in_order() -> None:
    run = _run()
    assert [s.id for s in run.spans] == [f"s{n}" for n in range(9)] and [m.id for m in run.markers] == ["m0", "m1"]
    edges = _edges(run)
    assert ("s0", "s1", "served by") in edges
    assert ("s1", "s3", "appended the Snapshot entry") in edges
    assert ("s3", "s4", "routed: job sent") in edges
    assert ("s4", "s5", "job received") in edges
    assert ("s5", "s7", causes.NEXT_AFTER["deferred"]) in edges
    assert ("s7", "s3", "completed the snapshot") in edges
    # The busy one started while s7 held the claim: it ran beside it.
    assert ("s7", "s8", "ran beside it (the same job delivered twice)") in edges
    # The later snapshot's worker sent the earlier one's job: the job's receiver is linked from it, not the entry.
    assert any(src == "s5" and dst == "s6" for src, dst, _ in edges) is False  # s6 started before s5 sent
    assert ("m0", "s6", "ddb_5xx hit it") in edges and ("m1", "s7", "pause hit it") in edges


def test_selecting_a_snapshot_lights_up_its_own_chain_not_its_predecessors() -> None:
    run = _run()
    chain = causes.chain(run, "s3")
    assert {"s0", "s1", "s3", "s4", "s5", "s7", "s8", "m1"} <= chain
    assert "s2" not in chain and "s6" not in chain and "m0" not in chain
    # A fault selects what it hit, and that invocation's chain.
    assert causes.chain(run, "m0") == {"m0", "s6", "s2"}


def test_why_a_snapshot_waited_names_what_held_it() -> None:
    run = _run()
    why = run.waits["s3"]
    assert why.startswith("took 7.90 s: stream 0.10 s; queued 0.10 s;")
    assert ("deferred at 1.40 s: behind snapshot 0/4 (completed at 3.00 s); then 1.00 s until the next try (the "
            "backoff its deferral set on the message)") in why
    assert "busy at 3.00 s: claim held by message q2 until 4.00 s" in why
    assert "faults that hit its invocations: 1 pause" in why
    assert why.endswith("completed by Worker #1 at 4.00 s, after 1.40 s in that invocation")


def test_links_are_written_as_from_to_why() -> None:
    encoded = msgspec.json.decode(msgspec.json.encode(Link("s1", "s2", "because", "k")))
    assert encoded == {"from": "s1", "to": "s2", "why": "because", "chain": "k"}


def test_a_lost_try_is_linked_to_the_retry_it_caused() -> None:
    spans = [_span("client-2", "client", 0.0, 0.5, "lost", attempt=1, task="api-7"),
             _span("client-2", "client", 0.6, 0.9, "acknowledged", attempt=2, task="api-8"),
             _span("client-2", "client", 1.0, 1.2, "acknowledged", attempt=1, task="api-9"),
             _span("Api #1", "function", 0.1, 0.2, "success", task="api-7")]
    markers = [Marker(lane="Api #1", group="function", at=0.2, kind="lost_response", ids={"task": "api-7"})]
    run = causes.connect(RunData(kind="simulate", title="t", run=1, seed=1, spans=spans, markers=markers))
    assert _edges(run) == {("s0", "s1", "retried: the try before was lost"), ("s0", "s3", "served by"),
                           ("m0", "s3", "lost_response hit it")}
    assert causes.chain(run, "s0") == {"s0", "s1", "s3", "m0"}


def test_a_snapshot_a_later_job_built_first_is_completed_by_that_job() -> None:
    """Issue 34: the job of 0/9 finds 0/4's own job lost and builds 0/4 first, then 0/9, in one invocation. 0/4's
    chain ends in that invocation, which completed it; 0/4's own job, back later, found it done."""
    spans = [
        _span(f"snapshot {K1}", "snapshot", 0.5, 2.0, "completed", log_id=LOG, segment=0, entry=4),
        _span(f"snapshot {K2}", "snapshot", 1.1, 2.2, "completed", log_id=LOG, segment=0, entry=9),
        _span("Worker #1", "function", 0.6, 0.7, "crashed", task="worker-1", message_id="q1", log_id=LOG,
              segment=0, entry=4),
        _span("Worker #2", "function", 1.5, 2.2, "completed", task="worker-2", message_id="q2", log_id=LOG,
              segment=0, entry=9),
        _span("Worker #1", "function", 9.0, 9.1, "already_done", task="worker-3", message_id="q1", log_id=LOG,
              segment=0, entry=4),
    ]
    spans[2].acts = {causes.WORKED: [K1]}
    spans[3].acts = {causes.WORKED: [K2, K1], causes.COMPLETED: [K1, K2]}
    spans[4].acts = {causes.WORKED: [K1]}
    run = causes.connect(RunData(kind="simulate", title="t", run=1, seed=1, spans=spans))
    assert ("s3", "s0", "completed the snapshot") in _edges(run) and ("s3", "s1", "completed the snapshot") in \
        _edges(run)
    assert run.waits["s0"].endswith("completed by Worker #2 at 2.20 s, after 0.70 s in that invocation")
    assert "crashed at 0.60 s" in run.waits["s0"]



def test_workers_that_worked_on_two_snapshots_are_on_both_chains() -> None:
    """One router batch sent both snapshots' jobs, and three invocations helped the earlier one before their own
    (issue 34's helping): the links router -> first worker -> next worker serve both chains, and each snapshot's
    chain still has every worker invocation on it (a demo run lost the first two from the later one's)."""
    spans = [
        _span(f"snapshot {K1}", "snapshot", 0.5, 3.0, "completed", log_id=LOG, segment=0, entry=4),
        _span(f"snapshot {K2}", "snapshot", 1.0, 5.0, "completed", log_id=LOG, segment=0, entry=9),
        _span("Router #1", "function", 1.1, 1.2, "success", task="router-1"),
        _span("Worker #1", "function", 1.3, 1.5, "busy", task="worker-1", message_id="q2"),
        _span("Worker #1", "function", 1.6, 1.8, "busy", task="worker-2", message_id="q2"),
        _span("Worker #1", "function", 1.9, 3.0, "busy", task="worker-3", message_id="q2"),
        _span("Worker #2", "function", 3.1, 4.0, "completed", task="worker-4", message_id="q2"),
    ]
    spans[2].acts = {causes.ROUTED: [K1, K2]}
    for worker in spans[3:6]:
        worker.acts = {causes.WORKED: [K1, K2]}
    spans[5].acts[causes.COMPLETED] = [K1]
    spans[6].acts = {causes.WORKED: [K2], causes.COMPLETED: [K2]}
    run = causes.connect(RunData(kind="simulate", title="t", run=1, seed=1, spans=spans, markers=[]))
    assert {"s3", "s4", "s5"} <= causes.chain(run, "s0")
    assert {"s3", "s4", "s5", "s6"} <= causes.chain(run, "s1")
