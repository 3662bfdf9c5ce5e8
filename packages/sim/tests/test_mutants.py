"""The mutant catalogue stays applicable, and a mutant really changes the code the simulator runs."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from seglog_awsmodel.faults import SIMULATED, FaultKind
from seglog_sim.faults import Profile
from seglog_sim.mutants.catalogue import MUTANTS, by_name
from seglog_sim.mutants.hook import MutantNotApplicable, mutate
from seglog_sim.mutants.runner import run_mutant


def _source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).read_text(encoding="utf-8")


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_every_mutant_applies_once_and_compiles(mutant: object) -> None:
    source = _source(mutant.module)  # type: ignore[attr-defined]
    mutated = mutate(source, mutant)  # type: ignore[arg-type]
    assert mutated != source
    compile(mutated, mutant.module, "exec")  # type: ignore[attr-defined]


def test_names_are_unique_and_a_moved_guard_is_reported() -> None:
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    with pytest.raises(MutantNotApplicable, match="occurs 0 times"):
        mutate("nothing here", MUTANTS[0])


def test_a_mutant_is_killed_in_its_own_process_and_names_the_seed() -> None:
    result = run_mutant(by_name("append_not_exists"), seeds=200)
    assert result.error is None
    assert result.killed, result
    assert result.seed is not None and result.violations


def test_arms_name_kinds_the_simulator_injects_and_are_on_in_every_seed_calm_ones_included() -> None:
    """A mutant's arms (Scenario.armed) turn their kinds on in every seed and leave the other kinds as drawn."""
    armed_mutants = [m for m in MUTANTS if m.arms]
    assert armed_mutants
    for mutant in armed_mutants:
        assert {FaultKind(k) for k in mutant.arms} <= set(SIMULATED), mutant.name
    arms = (FaultKind.MIXED_VERSION, FaultKind.CLOCK_SKEW)
    for seed in range(200):
        plain = Profile.draw(random.Random(seed), SIMULATED)
        armed = Profile.draw(random.Random(seed), SIMULATED, armed=arms)
        assert set(arms) <= set(armed.rates)
        assert {k: r for k, r in armed.rates.items() if k not in arms} == \
            {k: r for k, r in plain.rates.items() if k not in arms}
