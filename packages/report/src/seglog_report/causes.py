"""Cause and effect in one run (issue 21): ids for its spans and markers, the links between them, and why each
snapshot took as long as it did. Both drivers (the chaos runner and demo from their logs, the simulator from its
world) say what each span did — its ``ids`` and ``acts`` — and this module alone draws the edges, so the two
reports link the same things for the same reasons.

The chain of one Snapshot entry ``k`` (``"<log_id>/<segment>/<entry>"``)::

    client try ──served by──▶ API invocation ──appended──▶ snapshot k ──routed──▶ router batch
        ──job received──▶ worker invocation 1 ──after deferred: redelivered──▶ ... ──▶ worker invocation n
        ──completed──▶ snapshot k

    fault marker ──hit──▶ the invocation it fired in          (the same request_id or simulated task)
    client try (lost, retried) ──retried──▶ the client's next try of that request
    worker i (its claim taken over) ──took over the claim──▶ worker j

1. Ids: spans ``s<n>``, markers ``m<n>``, in the run's order (stable for a run read twice).
2. A client try and the invocation that served it share ``api_request_id`` (the gateway's request id, which the
   emulator's invocation line and the client's answer both carry) or, in the simulator, ``task``.
3. A marker hit the function span that shares its ``request_id`` (emulator) or ``task`` (simulator).
4. The worker invocations on ``k`` are chained in order of start; each link says what the one before ended in
   and so why there was a next one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Final

from seglog_report.model import Link, Marker, RunData, Span

#: What a span can do to a Snapshot entry (:attr:`Span.acts`' keys). A worker invocation works on its own job's
#: snapshot, and on every earlier one of its log that it builds first (it helps: DESIGN §5 step 3 since issue 34);
#: it completed those whose keys are under COMPLETED. A run drawn before COMPLETED existed has none: there a
#: worker completed its own job's snapshot when its outcome says so.
APPENDED: Final = "appended"
ROUTED: Final = "routed"
WORKED: Final = "worked"
COMPLETED: Final = "completed"
ACTS: Final = (APPENDED, ROUTED, WORKED, COMPLETED)

#: Why a worker invocation was followed by another on the same job, by the outcome it ended in.
NEXT_AFTER: Final[dict[str, str]] = {
    "deferred": "deferred (an earlier snapshot was incomplete): redelivered after its backoff",
    "busy": "busy (another message held the claim): redelivered later",
    "crashed": "crashed: redelivered after the visibility timeout",
    "timeout": "timed out: redelivered after the visibility timeout",
    "error": "failed: redelivered after the visibility timeout",
    "incomplete": "never reported its end: redelivered",
    "handed_off": "handed off near its time limit: the next invocation resumes",
    "taken_over": "lost its claim to a takeover",
    "blocked": "blocked (an entry needs newer code): redelivered later",
    "duplicate": "a duplicate of a live claim's job",
}
#: The keys that tie a span to the request it served (emulator, simulator).
_REQUEST_KEYS: Final = ("request_id", "task")
_SERVED_KEYS: Final = ("api_request_id", "task")


def key(log_id: object, segment: object, entry: object) -> str:
    """A Snapshot entry's key in :attr:`Span.acts`."""
    return f"{log_id}/{segment}/{entry}"


def snapshot_key(span: Span) -> str | None:
    """The Snapshot entry a span of the snapshot group is the life of."""
    if span.group != "snapshot" or "log_id" not in span.ids:
        return None
    return key(span.ids["log_id"], span.ids.get("segment"), span.ids.get("entry"))


def connect(run: RunData) -> RunData:
    """Give every span and marker of ``run`` an id, and set its :attr:`RunData.links` and
    :attr:`RunData.waits` (in place; returns ``run``)."""
    for n, span in enumerate(run.spans):
        span.id = f"s{n}"
    for n, marker in enumerate(run.markers):
        marker.id = f"m{n}"
    run.links = _dedupe([*_served(run.spans), *_retries(run.spans), *_snapshot_chains(run.spans),
                         *_hits(run.spans, run.markers)])
    run.waits = waits(run)
    return run


def _dedupe(links: Iterable[Link]) -> list[Link]:
    """Each link once per chain. Two worker invocations that both worked on two snapshots (a job that helped its
    predecessor, then its own; issue 34's helping) are linked on each snapshot's chain: kept once for both, the
    later snapshot's chain lost them (tests/emulator/test_run_report.py, a demo run where helping happened)."""
    seen: set[tuple[str, str, str | None]] = set()
    found = []
    for link in links:
        if (link.source, link.target, link.chain) not in seen and link.source != link.target:
            seen.add((link.source, link.target, link.chain))
            found.append(link)
    return found


def _by_id(spans: list[Span], names: tuple[str, ...]) -> dict[tuple[str, str | int], list[Span]]:
    """The function spans by each of ``names`` they carry in their ids, in the run's order."""
    found: dict[tuple[str, str | int], list[Span]] = defaultdict(list)
    for span in spans:
        if span.group == "function":
            for name in names:
                if name in span.ids:
                    found[(name, span.ids[name])].append(span)
    return found


def _sharing(ids: Mapping[str, str | int], index: dict[tuple[str, str | int], list[Span]],
             names: tuple[str, ...]) -> list[Span]:
    """The spans of ``index`` that share the first of ``names`` that ``ids`` has and any span carries."""
    for name in names:
        found = index.get((name, ids[name]), []) if name in ids else []
        if found:
            return found
    return []


def _served(spans: list[Span]) -> list[Link]:
    """Client try -> the API invocation that served it."""
    index = _by_id(spans, _SERVED_KEYS)
    links = []
    for span in spans:
        served = _sharing(span.ids, index, _SERVED_KEYS) if span.group == "client" else []
        if served:
            links.append(Link(span.id, served[0].id, "served by"))
    return links


def _retries(spans: list[Span]) -> list[Link]:
    """A client's try -> its next try of the same request (on the client's lane, the attempt one higher): the
    retry a lost answer, a throttle or a 5xx caused."""
    last: dict[str, Span] = {}
    links = []
    for span in sorted((s for s in spans if s.group == "client"), key=lambda s: s.start):
        before = last.get(span.lane)
        attempt, previous = span.ids.get("attempt"), before.ids.get("attempt") if before else None
        if before is not None and isinstance(attempt, int) and isinstance(previous, int) and attempt == previous + 1:
            links.append(Link(before.id, span.id, f"retried: the try before was {before.outcome}"))
        last[span.lane] = span
    return links


def _hits(spans: list[Span], markers: list[Marker]) -> list[Link]:
    """Fault -> the invocation it fired in (of those with its request id or task, the one it fell in or nearest)."""
    index = _by_id(spans, _REQUEST_KEYS)
    links = []
    for marker in markers:
        hit = _sharing(marker.ids, index, _REQUEST_KEYS)
        if hit:
            closest = min(hit, key=lambda s: 0 if s.start <= marker.at <= s.end else
                          min(abs(s.start - marker.at), abs(s.end - marker.at)))
            links.append(Link(marker.id, closest.id, f"{marker.kind} hit it"))
    return links


def _acting(spans: list[Span], act: str) -> dict[str, list[Span]]:
    found: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        for k in span.acts.get(act, []):
            found[k].append(span)
    for listed in found.values():
        listed.sort(key=lambda s: (s.start, s.end))
    return found


def completed(worker: Span, k: str) -> bool:
    """Whether the worker invocation ``worker`` completed the snapshot ``k`` (its own job's, or one it helped)."""
    if COMPLETED in worker.acts:
        return k in worker.acts[COMPLETED]
    return worker.outcome == "completed"


def _snapshot_chains(spans: list[Span]) -> list[Link]:
    appended, sent, worked = (_acting(spans, act) for act in (APPENDED, ROUTED, WORKED))
    links = []
    for life in spans:
        k = snapshot_key(life)
        if k is None:
            continue
        links += [Link(api.id, life.id, "appended the Snapshot entry", k) for api in appended.get(k, [])]
        senders = sent.get(k, [])
        routers = [s for s in senders if WORKED not in s.acts]
        links += [Link(life.id, r.id, "routed: job sent" if n == 0 else "routed again: the stream batch came back",
                       k) for n, r in enumerate(routers)]
        previous: Span | None = None
        for worker in worked.get(k, []):
            if previous is None:
                sender = next((s for s in reversed(senders) if s.start <= worker.start), None)
                why = "job received" if sender is None or sender in routers else \
                    "job received, sent by a later snapshot's worker (its predecessor had none)"
                links.append(Link((sender or life).id, worker.id, why, k))
            else:
                links.append(Link(previous.id, worker.id, _next_why(previous, worker), k))
            if completed(worker, k):
                links.append(Link(worker.id, life.id, "completed the snapshot", k))
            previous = worker
        links += _takeovers(worked.get(k, []), k)
    return links


def _next_why(previous: Span, worker: Span) -> str:
    if worker.start < previous.end:
        return "ran beside it (the same job delivered twice)"
    return NEXT_AFTER.get(previous.outcome, f"{previous.outcome}: the job came again")


def _takeovers(workers: list[Span], k: str) -> list[Link]:
    """A worker whose claim was taken over -> the one that took it (started while it ran)."""
    links = []
    for lost in workers:
        if lost.outcome != "taken_over":
            continue
        taker = next((w for w in workers if w is not lost and lost.start < w.start < lost.end), None)
        if taker is not None:
            links.append(Link(lost.id, taker.id, "took over the claim", k))
    return links


def waits(run: RunData) -> dict[str, str]:
    """Why each Snapshot entry's span took as long as it did, by span id: the stream hop, the queue, and what
    each invocation that did not complete it ended in, with what held it (a predecessor, another claim)."""
    routed, worked = _acting(run.spans, ROUTED), _acting(run.spans, WORKED)
    lives = [s for s in run.spans if snapshot_key(s) is not None]
    kinds = {m.id: m.kind for m in run.markers}
    hits: dict[str, Counter[str]] = defaultdict(Counter)
    for link in run.links:
        if link.source in kinds:
            hits[link.target][kinds[link.source]] += 1
    found = {}
    for life in lives:
        k = snapshot_key(life)
        assert k is not None
        parts = []
        routers = routed.get(k, [])
        workers = worked.get(k, [])
        if routers:
            parts.append(f"stream {routers[0].start - life.start:.2f} s")
        if workers:
            since = routers[0].end if routers else life.start
            parts.append(f"queued {max(0.0, workers[0].start - since):.2f} s")
        parts += _tries(life, lives, workers)
        hit = sum((hits[w.id] for w in workers), Counter())
        if hit:
            parts.append("faults that hit its invocations: " + ", ".join(
                f"{count} {kind}" for kind, count in hit.most_common()))
        done = next((w for w in workers if completed(w, k)), None)
        if life.outcome == "completed":
            parts.append(f"completed by {done.lane} at {done.end:.2f} s, after {done.end - done.start:.2f} s in that "
                         "invocation" if done else "completed")
        else:
            parts.append("not complete when the run ended")
        found[life.id] = f"took {life.end - life.start:.2f} s: " + "; ".join(parts)
    return found


#: What keeps a job away after a try that ended so, until its next try.
GAP_CAUSE: Final[dict[str, str]] = {
    "deferred": "the backoff its deferral set on the message",
    "busy": "the message hidden until the claim would go stale",
    "duplicate": "the copy hidden until the live claim would go stale",
    "blocked": "the backoff a blocked snapshot waits",
    "crashed": "the visibility timeout", "timeout": "the visibility timeout", "error": "the visibility timeout",
    "incomplete": "the visibility timeout",
}


def _tries(life: Span, lives: list[Span], workers: list[Span]) -> list[str]:
    """What each try that did not complete the snapshot ended in — a run of tries held by the same thing told once,
    with its count and span of time — and how long the job then stayed away, and why."""
    told: list[tuple[str, int, float, float, float, float]] = []  # reason, count, first, last, between, after
    k = snapshot_key(life)
    for n, worker in enumerate(workers):
        if k is None or completed(worker, k) or worker.outcome == "already_done":
            continue
        own = worker.ids
        if {"log_id", "segment", "entry"} <= own.keys() and key(own["log_id"], own["segment"], own["entry"]) != k:
            continue  # a later snapshot's job that tried to help: its outcome is its own job's
        reason = _why_not_done(worker, life, lives, workers)
        after = max(0.0, workers[n + 1].start - worker.end) if n + 1 < len(workers) else 0.0
        if told and told[-1][0] == reason:
            _, count, first, _, between, before = told[-1]
            told[-1] = (reason, count + 1, first, worker.start, between + before, after)
        else:
            told.append((reason, 1, worker.start, worker.start, 0.0, after))
    parts = []
    for reason, count, first, last, between, after in told:
        when = f"at {first:.2f} s" if count == 1 else f"{count}x from {first:.2f} to {last:.2f} s"
        text = reason.replace("{when}", when)
        if count > 1 and between >= 0.01:
            text += f" ({between:.2f} s away between them)"
        if after >= 0.01:
            outcome = reason.split(" ", 1)[0]
            text += f"; then {after:.2f} s until the next try ({GAP_CAUSE.get(outcome, 'redelivery')})"
        parts.append(text)
    return parts


def _why_not_done(worker: Span, life: Span, lives: list[Span], workers: list[Span]) -> str:
    at = "{when}"
    if worker.outcome == "deferred":
        before = [s for s in lives if s.ids.get("log_id") == life.ids.get("log_id") and _position(s) < _position(life)
                  and s.start <= worker.start and (s.outcome != "completed" or s.end > worker.start)]
        if before:
            behind = max(before, key=_position)
            done = f"completed at {behind.end:.2f} s" if behind.outcome == "completed" else "never completed"
            return f"deferred {at}: behind snapshot {_where(behind)} ({done})"
        return f"deferred {at}: an earlier snapshot was incomplete"
    if worker.outcome == "busy":
        holder = next((w for w in workers if w is not worker and w.start <= worker.start <= w.end
                       and w.outcome not in ("busy", "duplicate")), None)
        if holder is not None:
            message = holder.ids.get("message_id", holder.lane)
            return f"busy {at}: claim held by message {message} until {holder.end:.2f} s"
        return f"busy {at}: another message held the claim"
    if worker.outcome == "blocked":
        return f"blocked {at}: {worker.label}"
    if worker.outcome in ("crashed", "timeout", "error", "incomplete"):
        return f"{worker.outcome} {at}"
    return f"{worker.outcome} {at}"


def _position(span: Span) -> tuple[int, int]:
    segment, entry = span.ids.get("segment", 0), span.ids.get("entry", 0)
    return (segment if isinstance(segment, int) else 0, entry if isinstance(entry, int) else 0)


def _where(span: Span) -> str:
    segment, entry = _position(span)
    return f"{segment}/{entry}"


def chain(run: RunData, start: str) -> set[str]:
    """The ids on ``start``'s chains — what selecting it in the page highlights (the page's script does the same):

    1. ``start``, and what is tied to it by a link of no chain (the client try it served, the faults that hit it);
    2. every Snapshot entry's chain one of those is on, whole (its append, routing, every worker invocation on
       its job, its completion) — but not the chains those reach in turn: a worker that sent a job for its
       predecessor is on both chains, and selecting the later snapshot does not light up the earlier one's;
    3. what is tied by a link of no chain to anything found so far (a fault that hit a worker on the chain).
    """
    loose: dict[str, set[str]] = defaultdict(set)
    members: dict[str, set[str]] = defaultdict(set)
    chains_of: dict[str, set[str]] = defaultdict(set)
    for link in run.links:
        if link.chain:
            members[link.chain] |= {link.source, link.target}
            chains_of[link.source].add(link.chain)
            chains_of[link.target].add(link.chain)
        else:
            loose[link.source].add(link.target)
            loose[link.target].add(link.source)
    found = {start} | loose[start]
    for k in {k for item in found for k in chains_of[item]}:
        found |= members[k]
    for item in list(found):
        found |= loose[item]
    return found
