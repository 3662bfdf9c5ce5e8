"""The simulated world's clock and scheduler: tasks are greenlets, time is a number, one task runs at a time.

Every task (a client, a Lambda invocation, an event source mapping's poller) runs until it sleeps — which it does
at every storage call, in both directions (request and answer, :meth:`World.io`) — and the scheduler then resumes
whichever task's wake-up time comes first. Latencies, and so the interleaving of tasks at every storage call,
are drawn from the seed; ties are broken by the order of scheduling. Nothing reads the wall clock, so the same
seed gives the same history, bit for bit (FoundationDB's simulation and TigerBeetle's VOPR work the same way:
one thread, simulated time, every choice from one seed).

A task is killed (a crash, a function timeout) by raising :class:`Killed` in it, a BaseException the code under
test does not catch; while it unwinds, any storage call it attempts raises again, so nothing after the kill
reaches a store — as when Lambda loses an execution environment.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import greenlet


class Killed(BaseException):
    """Raised inside a task that was killed: it must unwind without touching any store."""


class SimulationError(Exception):
    """The simulation itself went wrong (not the code under test): a task misused the world, or ran away."""


@dataclass(eq=False, kw_only=True)
class Task:
    """One greenlet of the world, with what the scheduler and the fault model need to know about it."""

    name: str
    #: "client", "api", "router", "worker", "poller", "operator": faults are decided per kind.
    kind: str
    glet: greenlet.greenlet | None = None
    #: The simulated time after which the task is killed (a function's timeout), or None.
    deadline: float | None = None
    #: Seconds this task's clock runs ahead of the world's (the clock_skew fault).
    skew: float = 0.0
    #: Why the task was killed, once it was.
    killed: str | None = None
    done: bool = False
    result: Any = None
    error: BaseException | None = None
    #: Storage calls made so far (faults are keyed by task name and this count).
    calls: int = 0
    started: float = 0.0
    ended: float | None = None
    #: Free-form attributes the actors keep (message ids, log ids) for the history and reports.
    tags: dict[str, Any] = field(default_factory=dict)
    _token: int = 0
    _waiters: list[Task] = field(default_factory=list)


@dataclass(eq=False)
class Signal:
    """Something tasks wait for (new stream records, a message sent): :meth:`World.notify` wakes them all."""

    name: str
    _waiters: list[Task] = field(default_factory=list)


class World:
    """The clock and the run queue. Tasks call :meth:`sleep`, :meth:`join` and :meth:`io`; the driver calls
    :meth:`spawn` and :meth:`run`."""

    def __init__(self, *, start: float = 1_700_000_000.0, max_steps: int = 5_000_000) -> None:
        self.now = start
        self.start = start
        self._heap: list[tuple[float, int, Task, int]] = []
        self._seq = itertools.count()
        self._main: greenlet.greenlet | None = None
        self._current: Task | None = None
        self.steps = 0
        self.max_steps = max_steps
        self.tasks: list[Task] = []
        self._stopped = False
        self._until: float | None = None

    # --------------------------------------------------------------------------------------------- tasks

    @property
    def current(self) -> Task:
        if self._current is None:
            raise SimulationError("no task is running: storage calls and sleeps happen inside tasks")
        return self._current

    def clock(self) -> float:
        """The running task's clock (the world's time plus its skew), or the world's time outside tasks."""
        task = self._current
        return self.now + (task.skew if task is not None else 0.0)

    def spawn(self, name: str, kind: str, fn: Callable[..., Any], *args: Any, delay: float = 0.0,
              timeout: float | None = None, skew: float = 0.0, **tags: Any) -> Task:
        """Start ``fn(*args)`` as a task ``delay`` seconds from now; ``timeout`` kills it that long after it starts."""
        task = Task(name=name, kind=kind, skew=skew, tags=tags)
        self.tasks.append(task)

        def body() -> None:
            task.started = self.now
            if timeout is not None:
                task.deadline = self.now + timeout
            try:
                task.result = fn(*args)
            except Killed:
                pass
            except BaseException as exc:
                task.error = exc
            finally:
                task.done = True
                task.ended = self.now
                for waiter in task._waiters:
                    self._wake(waiter, self.now)
                task._waiters.clear()

        task.glet = greenlet.greenlet(body, parent=self._main_greenlet())
        self._wake(task, self.now + delay)
        return task

    def _main_greenlet(self) -> greenlet.greenlet:
        if self._main is None:
            raise SimulationError("spawn tasks from the driver inside World.run, or before it")
        return self._main

    def _wake(self, task: Task, at: float) -> None:
        if task.deadline is not None and at > task.deadline:
            at = task.deadline  # Lambda ends the invocation at its timeout, whatever it is waiting for
        task._token += 1
        heapq.heappush(self._heap, (at, next(self._seq), task, task._token))

    def kill(self, task: Task, reason: str) -> None:
        """Kill ``task``: it raises :class:`Killed` the next time it runs (at once, if it is waiting)."""
        if task.done or task.killed is not None:
            return
        task.killed = reason
        if task is not self._current:
            self._wake(task, self.now)

    # ------------------------------------------------------------------------------------ inside a task

    def sleep(self, seconds: float) -> None:
        """Let simulated time pass for the running task (others run meanwhile)."""
        task = self.current
        if task.killed is not None:
            raise Killed(task.killed)
        self._wake(task, self.now + max(0.0, seconds))
        self._yield(task)

    def join(self, other: Task, timeout: float | None = None) -> bool:
        """Wait until ``other`` is done, at most ``timeout`` seconds; whether it is done."""
        task = self.current
        if other.done:
            return True
        other._waiters.append(task)
        if timeout is not None:
            self._wake(task, self.now + timeout)
        elif task.deadline is not None:
            self._wake(task, task.deadline)
        else:
            task._token += 1  # only the other task's end wakes us
        self._yield(task)
        if task in other._waiters:
            other._waiters.remove(task)
        return other.done

    def wait(self, signal: Signal, timeout: float) -> None:
        """Wait until ``signal`` is notified or ``timeout`` seconds pass (a poller's idle wait: event-driven here,
        where the real poller asks again and again, so an idle hour costs a few steps, not thousands)."""
        task = self.current
        signal._waiters.append(task)
        self._wake(task, self.now + timeout)
        try:
            self._yield(task)
        finally:
            if task in signal._waiters:
                signal._waiters.remove(task)

    def notify(self, signal: Signal) -> None:
        """Wake every task waiting for ``signal``."""
        for task in signal._waiters:
            self._wake(task, self.now)
        signal._waiters.clear()

    def _yield(self, task: Task) -> None:
        self._switch_from(task)
        # Resumed (by the scheduler, or by the task that ran before).
        if task.killed is not None:
            raise Killed(task.killed)
        if task.deadline is not None and self.now >= task.deadline:
            task.killed = "timeout"
            raise Killed("timeout")

    def _switch_from(self, task: Task) -> None:
        """Take the scheduler's next step from inside the yielding ``task``, exactly as :meth:`run` would take it,
        but without passing through the scheduler's greenlet: go on at once when the next wake-up is ``task``'s own,
        else switch straight to the task due. A greenlet switch copies C stack out and in, the dearest part of a
        step; through the scheduler a step took two. Whatever :meth:`run` alone decides — a stop, the step bound,
        ``until``, an empty queue — is left to it."""
        assert self._main is not None
        if not self._stopped and self.steps < self.max_steps:
            due = self._pop_due(self._until)
            if due is not None:
                self.steps += 1
                if due is not task:
                    self._current = due
                    assert due.glet is not None
                    due.glet.switch()
                return
        self._main.switch()

    def _pop_due(self, until: float | None) -> Task | None:
        """The next task due, its wake-up taken off the queue and the clock moved to it (stale wake-ups dropped);
        None when the queue is empty or its next wake-up is after ``until``. The one step rule of :meth:`run` and
        :meth:`_switch_from`."""
        heap = self._heap
        while heap:
            at, _, task, token = heap[0]
            if until is not None and at > until:
                return None
            heapq.heappop(heap)
            if token != task._token or task.done:
                continue
            if at > self.now:
                self.now = at
            return task
        return None

    # --------------------------------------------------------------------------------------------- driver

    def run(self, driver: Callable[[World], None] | None = None, *, until: float | None = None) -> None:
        """Run tasks in time order until none is left, or the next wake-up is after ``until``. ``driver`` is called
        first, inside the scheduler's greenlet, to spawn the initial tasks."""
        self._main = greenlet.getcurrent()
        self._until = until
        if driver is not None:
            driver(self)
        self._stopped = False
        while not self._stopped and (task := self._pop_due(until)) is not None:
            self.steps += 1
            if self.steps > self.max_steps:
                raise SimulationError(f"more than {self.max_steps} scheduling steps: a task is spinning")
            self._current = task
            assert task.glet is not None
            task.glet.switch()
            self._current = None
        if until is not None:
            self.now = max(self.now, until)

    def stop(self) -> None:
        """End :meth:`run` once the running task yields (the driver decides the run is over)."""
        self._stopped = True

    def close(self) -> None:
        """Kill every task still alive (the run is over): each unwinds now, not when it is garbage collected."""
        self._heap.clear()
        for task in self.tasks:
            if not task.done and task.glet is not None and task.glet:
                task.killed = task.killed or "end of run"
                task.glet.throw(Killed("end of run"))


class TaskLock:
    """A re-entrant lock of the world's tasks: the tasks are greenlets of one thread, which a threading lock cannot
    tell apart, so a task that finds it held by another waits here (simulated time passes) until it is released.
    Given to :class:`seglog_core.turns.Turns` for a simulated process whose writers take turns on a log."""

    def __init__(self, world: World) -> None:
        self._world = world
        self._owner: Task | None = None
        self._depth = 0
        self._released = Signal("lock released")

    def __enter__(self) -> None:
        world = self._world
        me = world.current
        while self._owner is not None and self._owner is not me:
            world.wait(self._released, 600.0)
        self._owner = me
        self._depth += 1

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if not self._depth:
            self._owner = None
            self._world.notify(self._released)
