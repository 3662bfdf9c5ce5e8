"""The world's scheduler: time order, joins, waits, kills and timeouts, all in simulated time."""

from __future__ import annotations

import pytest

from seglog_sim.world import Killed, Signal, World


def test_tasks_run_in_wake_up_order_and_time_only_moves_when_they_sleep() -> None:
    world, seen = World(start=0.0), []

    def task(name: str, pause: float) -> None:
        world.sleep(pause)
        seen.append((name, world.now))

    world.run(lambda w: [w.spawn("slow", "client", task, "slow", 2.0), w.spawn("fast", "client", task, "fast", 1.0)])
    assert [("fast", 1.0), ("slow", 2.0)] == seen


def test_join_returns_when_the_other_ends_or_its_timeout_passes() -> None:
    world, seen = World(start=0.0), []

    def worker(pause: float) -> str:
        world.sleep(pause)
        return "done"

    def waiter() -> None:
        quick = world.spawn("quick", "worker", worker, 1.0)
        slow = world.spawn("slow", "worker", worker, 10.0)
        seen.append((world.join(quick, timeout=5.0), world.now, quick.result))
        seen.append((world.join(slow, timeout=2.0), world.now, slow.result))

    world.run(lambda w: w.spawn("waiter", "client", waiter))
    assert [(True, 1.0, "done"), (False, 3.0, None)] == seen


def test_a_killed_task_raises_at_its_next_step_and_runs_nothing_after() -> None:
    world, seen = World(start=0.0), []

    def victim() -> None:
        world.sleep(5.0)
        seen.append("after the kill")

    def killer(target: list[object]) -> None:
        world.sleep(1.0)
        world.kill(target[0], "crash")  # type: ignore[arg-type]

    holder: list[object] = []

    def driver(w: World) -> None:
        holder.append(w.spawn("victim", "worker", victim))
        w.spawn("killer", "operator", killer, holder)

    world.run(driver)
    assert [] == seen
    assert holder[0].killed == "crash"  # type: ignore[attr-defined]


def test_a_task_past_its_timeout_is_killed_when_it_next_wakes() -> None:
    world = World(start=0.0)
    task = None

    def slow() -> None:
        world.sleep(10.0)
        raise AssertionError("ran past its timeout")

    def driver(w: World) -> None:
        nonlocal task
        task = w.spawn("slow", "worker", slow, timeout=3.0)

    world.run(driver)
    assert task is not None
    assert (task.killed, task.error, task.done) == ("timeout", None, True)


def test_wait_wakes_on_notify_or_timeout_and_stop_ends_the_run() -> None:
    world, signal, seen = World(start=0.0), Signal("s"), []

    def waiter() -> None:
        world.wait(signal, 100.0)
        seen.append(world.now)
        world.wait(signal, 7.0)
        seen.append(world.now)
        world.stop()

    def notifier() -> None:
        world.sleep(2.0)
        world.notify(signal)

    def forever() -> None:
        while True:
            world.sleep(1.0)

    world.run(lambda w: [w.spawn("w", "client", waiter), w.spawn("n", "client", notifier),
                         w.spawn("f", "poller", forever)])
    assert [2.0, 9.0] == seen
    world.close()
    assert all(t.done for t in world.tasks)


def test_sleep_outside_a_task_is_refused() -> None:
    with pytest.raises(Exception, match="inside tasks"):
        World().sleep(1.0)


def test_killed_is_not_an_exception_the_code_under_test_can_swallow() -> None:
    assert not issubclass(Killed, Exception)
