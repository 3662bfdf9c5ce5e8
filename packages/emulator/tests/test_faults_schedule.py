"""The seeded fault schedule and its plans (DESIGN §7): same seed, same faults, whatever the interleaving."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from seglog_core.snapshot import DEFAULT_CHUNK_CELLS
from seglog_emulator.faults import (
    AMOUNTS,
    EMULATED,
    ERROR_CODES,
    FaultKind,
    FaultPlan,
    FaultPlanError,
    FaultSchedule,
    FaultSpec,
)

#: A function's declared crash points (template Metadata SeglogEmulator CrashPoints).
POINTS = ("after_pending_upsert", "after_claim", "mid_chunk", "after_root")
KEYS = [f"sqs:m{i}:{attempt}" for i in range(500) for attempt in (1, 2)]


def every_kind(seed: int, rate: float = 0.2) -> FaultPlan:
    return FaultPlan.from_flags("all", rate=rate, seed=seed)


def run(plan: FaultPlan, order_seed: int) -> FaultSchedule:
    """Ask every (kind, key) from 8 threads, in an order shuffled by ``order_seed``."""
    schedule = FaultSchedule(plan)
    sites = [(kind, key) for kind in EMULATED for key in KEYS]
    random.Random(order_seed).shuffle(sites)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda site: schedule.decide(*site), sites))
    return schedule


def test_same_seed_gives_same_faults_whatever_the_thread_interleaving() -> None:
    first, second = run(every_kind(7), order_seed=1), run(every_kind(7), order_seed=2)

    assert first.fingerprint() == second.fingerprint()
    assert first.summary() == second.summary()
    assert [f.key for f in first.injected()] != [f.key for f in second.injected()]  # the orders did differ


def test_different_seed_gives_different_faults() -> None:
    assert run(every_kind(7), order_seed=1).fingerprint() != run(every_kind(8), order_seed=1).fingerprint()


def test_a_site_asked_twice_gets_the_same_answer() -> None:
    schedule = FaultSchedule(every_kind(3, rate=0.5))

    assert [schedule.peek(FaultKind.WORKER_CRASH, k) for k in KEYS] == [
        schedule.peek(FaultKind.WORKER_CRASH, k) for k in KEYS]


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.5])
def test_rates_are_roughly_respected_over_10k_keys(rate: float) -> None:
    schedule = FaultSchedule(FaultPlan.from_flags("ddb_throttle", rate=rate, seed=11))
    fired = sum(schedule.decide(FaultKind.DDB_THROTTLE, f"ddb:PutItem:{n}") is not None for n in range(10_000))

    sigma = (10_000 * rate * (1 - rate)) ** 0.5
    assert abs(fired - 10_000 * rate) < 5 * sigma
    assert {FaultKind.DDB_THROTTLE: fired} == schedule.summary()


def test_disabled_kinds_never_fire() -> None:
    plan = FaultPlan.from_flags("ddb_throttle=1,s3_error=0", rate=1.0, seed=5)
    schedule = FaultSchedule(plan)

    for kind in EMULATED:
        if kind is FaultKind.DDB_THROTTLE:
            continue
        assert all(schedule.decide(kind, key) is None for key in KEYS), kind
    assert not plan.enabled(FaultKind.S3_ERROR)
    assert {FaultKind.DDB_THROTTLE: 0, FaultKind.S3_ERROR: 0} == schedule.summary()


def test_parameters_stay_in_the_plan_s_ranges_and_cover_them() -> None:
    plan = FaultPlan.from_mapping({"seed": 1, "rate": 1.0, "faults": {
        "worker_crash": {"crash_points": ["after_claim", "mid_chunk"]},
        "s3_latency": {"latency_ms": [10, 12]},
        "s3_error": {},
        "stale_read": {"items_behind": [1, 3]},
    }})
    schedule = FaultSchedule(plan)
    points = ("after_pending_upsert", "after_claim", "mid_chunk")  # the function's; the plan names two of them
    crashes = [schedule.decide(FaultKind.WORKER_CRASH, k, points=points) for k in KEYS]
    latencies = [schedule.decide(FaultKind.S3_LATENCY, k) for k in KEYS]
    errors = [schedule.decide(FaultKind.S3_ERROR, k) for k in KEYS]
    stale = [schedule.decide(FaultKind.STALE_READ, k) for k in KEYS]

    assert {"after_claim", "mid_chunk"} == {d.crash_point for d in crashes if d}
    assert {10, 11, 12} == {d.amount for d in latencies if d}
    assert set(ERROR_CODES[FaultKind.S3_ERROR]) == {(d.error_code, d.http_status) for d in errors if d}
    assert {1, 2, 3} == {d.amount for d in stale if d}
    assert latencies[0] is not None
    assert {"latency_ms": latencies[0].amount} == latencies[0].params


def test_every_injected_fault_is_logged_with_its_parameters_and_time() -> None:
    schedule = FaultSchedule(FaultPlan.from_flags("worker_crash", rate=1.0, seed=2), clock=lambda: 42.0)
    with capture_logs() as logs:
        decision = schedule.decide(FaultKind.WORKER_CRASH, "invoke:m1:1", points=POINTS)

    assert decision is not None and decision.crash_point in POINTS
    [entry] = schedule.injected()
    assert (FaultKind.WORKER_CRASH, "invoke:m1:1", {"crash_point": decision.crash_point}, 42.0) == (
        entry.kind, entry.key, entry.params, entry.at)
    assert [{"event": "fault injected", "log_level": "info", "fault": "worker_crash", "key": "invoke:m1:1",
             "seed": 2, "crash_point": decision.crash_point}] == logs


# ---------------------------------------------------------------------------------------------- plans


def test_flags_name_kinds_with_a_shared_rate_and_per_kind_overrides() -> None:
    plan = FaultPlan.from_argv(["--faults", "worker_crash,ddb_throttle=0.3", "--rate=0.1", "--seed", "9"])

    assert FaultPlan(seed=9, specs={
        FaultKind.WORKER_CRASH: FaultSpec(rate=0.1),
        FaultKind.DDB_THROTTLE: FaultSpec(rate=0.3),
    }) == plan


def test_all_switches_every_kind_on_with_default_amounts() -> None:
    plan = FaultPlan.from_flags("all", rate=0.1, seed=0)

    assert set(EMULATED) == set(plan.specs)
    assert {kind: default for kind, (_, default) in AMOUNTS.items()} == {
        kind: spec.amount for kind, spec in plan.specs.items() if spec.amount is not None}


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_plan_file_round_trips(tmp_path: Path, suffix: str) -> None:
    plan = FaultPlan.from_mapping({"seed": 123, "faults": {
        "worker_crash": {"rate": 0.25, "crash_points": ["mid_chunk"]},
        "s3_latency": {"rate": 0.5, "latency_ms": [1, 2]},
        "lost_response": 0.05,
    }})
    path = tmp_path / f"plan{suffix}"
    plan.dump(path)

    assert plan == FaultPlan.from_file(path)
    assert plan == FaultPlan.from_argv(["--fault-plan", str(path)])


def test_a_toml_plan_reads_as_documented(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text('seed = 7\nrate = 0.05\n[faults]\nddb_throttle = 0.1\n[faults.reorder]\ndelay_ms = [5, 6]\n')

    assert FaultPlan(seed=7, specs={FaultKind.DDB_THROTTLE: FaultSpec(rate=0.1),
                                    FaultKind.REORDER: FaultSpec(rate=0.05, amount=(5, 6))}) == (
        FaultPlan.from_file(path))


def test_bad_plan_input_lists_every_problem() -> None:
    with pytest.raises(FaultPlanError) as caught:
        FaultPlan.from_mapping({"seed": "x", "colour": 1, "faults": {
            "worker_crash": {"rate": 1.5, "crash_points": "nowhere"},
            "ddb_throtle": 0.1,
            "s3_latency": {"rate": 0.1, "latency_ms": [5, 1], "jitter": 2},
            "reorder": {},
        }})

    problems = caught.value.problems
    assert 8 == len(problems), problems
    for needle in ("'colour'", "seed must be an integer", "rate must be a number from 0 to 1, got 1.5",
                   "crash_points must be", "unknown fault kind 'ddb_throtle'", "latency_ms must be [low, high]",
                   "unknown setting 'jitter'", "reorder: no rate"):
        assert any(needle in p for p in problems), needle
    assert "fix these and try again" in str(caught.value)


@pytest.mark.parametrize(("argv", "needle"), [
    (["--faults", "worker_crash", "--rate", "lots"], "--rate must be a number"),
    (["--rate", "0.1"], "--faults is required"),
    (["--faults", "worker_crash", "--bogus"], "unknown argument '--bogus'"),
    (["--faults"], "--faults needs a value"),
    (["--faults", "worker_crash=x"], "the rate after '=' must be a number"),
    (["--faults", "no_such_kind"], "unknown fault kind 'no_such_kind'"),
    (["--fault-plan", "p.toml", "--seed", "1"], "drop --faults, --rate and --seed"),
])
def test_bad_flags_say_what_is_wrong(argv: list[str], needle: str) -> None:
    with pytest.raises(FaultPlanError) as caught:
        FaultPlan.from_argv(argv)

    assert any(needle in p for p in caught.value.problems), caught.value.problems


@pytest.mark.parametrize(("name", "text", "needle"), [
    ("plan.yaml", "", "name it *.toml or *.json"),
    ("plan.toml", "seed = = 1", "not valid TOML"),
    ("plan.json", "{", "not valid JSON"),
    ("plan.json", "[1]", "expected a table/object"),
])
def test_bad_plan_files_say_what_is_wrong(tmp_path: Path, name: str, text: str, needle: str) -> None:
    path = tmp_path / name
    path.write_text(text)

    with pytest.raises(FaultPlanError) as caught:
        FaultPlan.from_file(path)

    assert any(needle in p for p in caught.value.problems), caught.value.problems


def test_a_missing_plan_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(FaultPlanError, match="cannot read it"):
        FaultPlan.from_file(tmp_path / "absent.json")


def test_json_and_toml_give_the_same_plan(tmp_path: Path) -> None:
    data = {"seed": 4, "faults": {"stale_read": {"rate": 0.2, "items_behind": [1, 2]}}}
    (tmp_path / "p.json").write_text(json.dumps(data))
    (tmp_path / "p.toml").write_text("seed = 4\n[faults.stale_read]\nrate = 0.2\nitems_behind = [1, 2]\n")

    assert FaultPlan.from_file(tmp_path / "p.json") == FaultPlan.from_file(tmp_path / "p.toml")


# ------------------------------------------------------------------------------------ recovery-path kinds


def test_recovery_path_kinds_draw_amounts_sqs_and_the_worker_accept() -> None:
    """dlq lowers maxReceiveCount to 2 or 3 (SQS accepts 1 to 1,000; "after the value of maxReceiveCount is
    exceeded": Amazon SQS Developer Guide, sqs-dead-letter-queues), so a job received three or four times is
    parked; mixed_version's chunk size is a valid one (ChunkWriter needs at least 1) far below the default, so
    a chaos sheet is cut into several chunks; redrive moves 1 to 10 messages at a time. If this failed, a run
    would park nothing, or build with a chunk size the worker refuses."""
    schedule = FaultSchedule(FaultPlan.from_flags("dlq,redrive,mixed_version", rate=1.0, seed=3))

    def amounts(kind: FaultKind) -> set[int | None]:
        return {d.amount for d in (schedule.decide(kind, k) for k in KEYS) if d is not None}

    assert {2, 3} == amounts(FaultKind.DLQ)
    assert set(range(1, 11)) == amounts(FaultKind.REDRIVE)
    assert set(range(3, 41)) == amounts(FaultKind.MIXED_VERSION)
    assert 40 < DEFAULT_CHUNK_CELLS


def test_recovery_path_kinds_name_their_amounts_in_the_log() -> None:
    """The injection log (faults.jsonl) says which maxReceiveCount, how many messages, which chunk size."""
    schedule = FaultSchedule(FaultPlan.from_flags("dlq,redrive,mixed_version", rate=1.0, seed=3))

    decisions = [schedule.decide(kind, "site") for kind in (FaultKind.DLQ, FaultKind.REDRIVE,
                                                             FaultKind.MIXED_VERSION)]

    assert [["max_receive_count"], ["messages"], ["chunk_cells"]] == [list(d.params) for d in decisions if d]


def test_a_plan_file_sets_the_recovery_path_kinds_amounts(tmp_path: Path) -> None:
    """A plan file pins maxReceiveCount, the redrive size and the other version's chunk size, and round trips."""
    path = tmp_path / "plan.toml"
    path.write_text("seed = 5\n[faults.dlq]\nrate = 1.0\nmax_receive_count = [2, 2]\n"
                    "[faults.redrive]\nrate = 0.3\nmessages = [4, 4]\n"
                    "[faults.mixed_version]\nrate = 0.2\nchunk_cells = [7, 9]\n")
    plan = FaultPlan.from_file(path)
    again = tmp_path / "again.toml"
    plan.dump(again)

    assert FaultPlan(seed=5, specs={FaultKind.DLQ: FaultSpec(rate=1.0, amount=(2, 2)),
                                    FaultKind.REDRIVE: FaultSpec(rate=0.3, amount=(4, 4)),
                                    FaultKind.MIXED_VERSION: FaultSpec(rate=0.2, amount=(7, 9))}) == plan
    assert plan == FaultPlan.from_file(again)


def test_a_plan_refuses_the_simulators_own_kinds_and_says_why() -> None:
    """One catalogue holds both drivers' kinds; a kind only the simulator injects is refused by name."""
    with pytest.raises(FaultPlanError, match=r"'crash'.*not emulated"):
        FaultPlan.from_flags("crash", rate=0.1, seed=1)
    assert FaultKind.CRASH not in FaultPlan.from_flags("all", rate=0.1, seed=1).specs
