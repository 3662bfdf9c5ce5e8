"""The mutant catalogue stays applicable, and a mutant really changes the code the simulator runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

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
