"""Shrinking keeps the smallest set of fired faults that still fails with one of the same invariants."""

from __future__ import annotations

import pytest

from seglog_core.violations import Violation
from seglog_sim import shrink as shrink_module
from seglog_sim.run import SeedResult
from seglog_sim.scenario import Scenario


def _result(fired: list[str], failing: bool) -> SeedResult:
    return SeedResult(seed=9, violations=[Violation(invariant="I3", message="x")] if failing else [], kinds=[],
                      fired=fired, fault_counts={}, sites={}, operations={}, invocations={}, stats={},
                      acknowledged=0, snapshots=0, sim_seconds=0.0, steps=0)


def test_ddmin_finds_the_two_faults_that_together_break_the_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    replays: list[frozenset[str]] = []

    def fake_run_seed(seed: int, scenario: Scenario | None = None, *, only: frozenset[str] | None = None
                      ) -> SeedResult:
        assert only is not None
        replays.append(only)
        return _result(sorted(only), failing={"w-3#4:crash", "w-9#1:clock_skew"} <= only)

    monkeypatch.setattr(shrink_module, "run_seed", fake_run_seed)
    fired = [f"w-{i}#{i % 5}:ddb_throttle" for i in range(20)] + ["w-3#4:crash", "w-9#1:clock_skew"]
    shrunk = shrink_module.shrink(9, Scenario(), _result(fired, failing=True))
    assert ["w-3#4:crash", "w-9#1:clock_skew"] == sorted(shrunk.faults)
    assert shrunk.replays == len(replays) < 60


def test_a_seed_that_fails_without_any_fault_shrinks_to_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shrink_module, "run_seed", lambda seed, scenario=None, *, only=None: _result([], True))
    shrunk = shrink_module.shrink(9, Scenario(), _result(["a#1:crash"], failing=True))
    assert ([], 1) == (shrunk.faults, shrunk.replays)
