"""What a seed's timeline draws under its lanes (:class:`seglog_report.model.Series`, basis "modelled"): each
stream shard's iterator age, the snapshot queue's depth and the DLQ's, in simulated seconds since the run started.

Both are exact, not sampled: drawn as straight lines between their points, they are the quantity itself.

* The iterator age is AWS's IteratorAge for the stream mapping, read as the liveness check reads it
  (:func:`seglog_sim.liveness.waits`, one rule for both): 0 while no record waits past the checkpoint, then
  growing a second a second until the checkpoint moves, where it drops to the next record's age.
* A queue's depth is its messages, visible, in flight or delayed (:meth:`seglog_sim.aws.sqs.SimSQS.size`). It
  changes only when a call or a receive sends, deletes, purges or moves a message to the DLQ, so it is read after
  each (:class:`QueueDepths`, through :attr:`SimSQS.watch`, which only looks: the seed runs as it would without
  it) and drawn as steps: at a change, the point before it and the point after.

A series longer than :data:`MAX_POINTS` keeps, in each of :data:`MAX_POINTS` / 2 slices of the run, its lowest and
highest point (:func:`decimate`): every peak and trough stays where it was.
"""

from __future__ import annotations

from typing import Final

from seglog_report.model import Series
from seglog_sim.liveness import waits
from seglog_sim.phases import Run

#: The most points one series keeps.
MAX_POINTS: Final = 2_000
SNAPSHOT_QUEUE: Final = "snapshot queue depth"
DLQ: Final = "DLQ depth"

Points = list[tuple[float, float]]


class QueueDepths:
    """The snapshot queue's and the DLQ's depth at each change: pass :meth:`watch` to
    :func:`seglog_sim.run.execute`, then read :meth:`series` once the run ended."""

    def __init__(self) -> None:
        self._run: Run | None = None
        #: (series name, queue URL, [(simulated time, depth), ...]).
        self._queues: list[tuple[str, str, Points]] = []

    def watch(self, run: Run) -> None:
        """Start watching ``run``'s queues (before it runs)."""
        self._run = run
        self._queues = [(name, url, [(run.world.now, float(run.sqs.size(url)))])
                        for name, url in ((SNAPSHOT_QUEUE, run.queue_url), (DLQ, run.dlq_url))]
        run.sqs.watch = self._look

    def _look(self) -> None:
        assert self._run is not None
        sqs, now = self._run.sqs, self._run.world.now
        for _, url, points in self._queues:
            depth = float(sqs.size(url))
            if depth != points[-1][1]:
                points += [(now, points[-1][1]), (now, depth)]

    def series(self) -> list[Series]:
        """Each queue's depth from the run's start to its end."""
        assert self._run is not None
        world = self._run.world
        return [_series(name, "messages", [*points, (world.now, points[-1][1])], world.start)
                for name, _, points in self._queues]


def iterator_ages(run: Run) -> list[Series]:
    """Each shard's iterator age over the whole run, one series per shard of the mapping's stream
    ("iterator age <shard id>")."""
    table, start, end = run.topology.stream.table, run.world.start, run.world.now
    found = []
    for shard in run.ddb.shard_ids(table):
        points: Points = [(start, 0.0)]
        for wait in waits(run.ddb, table, shard, run.pollers.moves.get(shard, ()), start=start, until=end):
            # From the move (the age drops), through the arrival of the record that then waits, to the next move.
            begin = wait.since if wait.arrived is None else max(wait.since, min(wait.arrived, wait.until))
            points += [(wait.since, wait.age(wait.since)), (begin, wait.age(begin)),
                       (wait.until, wait.age(wait.until))]
        found.append(_series(f"iterator age {shard}", "s", points, start))
    return found


def _series(name: str, unit: str, points: Points, start: float) -> Series:
    relative = [(round(at - start, 3), round(value, 3)) for at, value in points]
    return Series(name=name, unit=unit, points=decimate(_tidy(relative), MAX_POINTS), basis="modelled")


def _tidy(points: Points) -> Points:
    """Without the points a straight line through their neighbours draws anyway: repeats, the middle of a flat
    stretch, and the middle ones of several at one instant."""
    kept: Points = []
    for point in points:
        if kept and point == kept[-1]:
            continue
        if len(kept) >= 2 and ((kept[-2][0] == kept[-1][0] == point[0]) or (kept[-2][1] == kept[-1][1] == point[1])):
            kept[-1] = point
        else:
            kept.append(point)
    return kept


def decimate(points: Points, limit: int) -> Points:
    """At most about ``limit`` points: in each of ``limit // 2`` equal slices of the time axis, the lowest and the
    highest (in time order), and always the first and the last."""
    if len(points) <= limit:
        return points
    first, last = points[0][0], points[-1][0]
    slices = max(1, limit // 2 - 1)
    width = (last - first) / slices or 1.0
    kept: Points = [points[0]]
    bucket: Points = []
    index = 0
    for point in points[1:-1]:
        slot = min(slices - 1, int((point[0] - first) / width))
        if slot != index and bucket:
            kept += _extremes(bucket)
            bucket = []
        index = slot
        bucket.append(point)
    if bucket:
        kept += _extremes(bucket)
    return [*kept, points[-1]]


def _extremes(bucket: Points) -> Points:
    low = min(range(len(bucket)), key=lambda i: bucket[i][1])
    high = max(range(len(bucket)), key=lambda i: bucket[i][1])
    return [bucket[i] for i in sorted({low, high})]
