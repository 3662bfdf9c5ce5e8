"""Liveness under faults (seglog_sim.liveness): a shard whose checkpoint stops while faults last is named, a
healthy run is not, and the stuck poller the emulator had (issue 19) is caught by this check alone."""

from __future__ import annotations

from seglog_sim import quiet_logs
from seglog_sim.liveness import stalled_shards, stream_bound
from seglog_sim.mutants.catalogue import by_name
from seglog_sim.mutants.runner import run_mutant
from seglog_sim.run import execute, run_seed

quiet_logs()


def test_a_shard_whose_checkpoint_never_moves_under_faults_is_named_with_how_long_it_waited() -> None:
    """The same world judged twice: with its pollers' real checkpoint moves it passed; with no move at all every
    shard that got records held its first one until the faults stopped. Were the check blind to a checkpoint
    that stands still, a stuck poller would pass every seed (it catches up once the faults stop)."""
    run, result = execute(4)
    assert result.ok, result.violations
    assert run.faults_ended is not None
    table = run.topology.stream.table
    fed = [s for s in run.ddb.shard_ids(table) if run.ddb.stream_records(table, s, limit=1)]
    assert fed

    found = stalled_shards(run.ddb, run.topology, {}, start=run.world.start, until=run.faults_ended, bound=1.0)

    assert [f"stream shard {s} stalled under faults" for s in fed] == [v.message.split(":")[0] for v in found]
    first = run.ddb.stream_records(table, fed[0], limit=1)[0]["dynamodb"]
    waited = run.faults_ended - first["ApproximateCreationDateTime"].timestamp() - 1.0
    assert f"waited {waited:.0f} s unread" in found[0].message
    assert found[0].log_id is not None and found[0].segment is not None and found[0].entry is not None
    assert [] == stalled_shards(run.ddb, run.topology, run.pollers.moves, start=run.world.start,
                                until=run.faults_ended)


def test_the_bound_is_a_few_router_attempts_each_to_its_timeout_and_a_capped_retry_pause() -> None:
    run, _ = execute(4)
    # 5 attempts of (30 s timeout + 2 s retry pause + 0.5 s restart pause), after a quarter second's poll.
    assert 162.75 == stream_bound(run.topology)


#: A seed that restarts one stream poller once, after an invocation and before its checkpoint.
RESTARTED = 3


def test_a_poller_restart_redelivers_from_the_checkpoint_once_and_a_replay_of_the_schedule_fires_it_again() -> None:
    """Seed RESTARTED restarts a stream poller after an invocation, before its checkpoint: the new poller
    (incarnation 1) reads the same batch again, decides anew at its own site, and the run passes. Replayed with the
    ids of the faults that fired, the same faults fire, the restart among them (its id is its site's)."""
    run, result = execute(RESTARTED)
    restarts = [f for f in result.fired if f.endswith(":poller_restart")]
    assert result.ok, result.violations
    assert 1 == len(restarts), f"seed {RESTARTED} must restart one poller once: pick another seed ({restarts})"
    shard, _, rest = restarts[0].partition(":")
    assert rest.endswith(":1:0:poller_restart")  # after the shard's first invocation, before its checkpoint
    assert 2 == run.pollers.incarnations[shard]

    replay = run_seed(RESTARTED, only=frozenset(result.fired))
    assert result.fired == replay.fired


def test_a_restart_that_repeats_in_every_new_poller_is_killed_by_the_check_under_faults_alone() -> None:
    """The mutant restart_repeats keys poller_restart without the poller's incarnation (the emulator's bug): the
    shard stalls while faults last and catches up after. The seed that kills it fails on the stalled shard only:
    quiescence after the faults, and every other check, pass."""
    result = run_mutant(by_name("restart_repeats"), seeds=100)

    assert result.error is None
    assert result.killed, result
    assert result.violations and all("stalled under faults" in v for v in result.violations), result.violations
