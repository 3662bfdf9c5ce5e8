"""The chaos campaign's default rates (seglog_plugin.chaos.runner)."""

from __future__ import annotations

from seglog_awsmodel.faults import EMULATED, FaultKind
from seglog_plugin.chaos.runner import DEFAULT_RATES, default_plan


def test_chaos_gives_every_kind_a_rate_of_its_own() -> None:
    """``seglog chaos --faults all`` uses DEFAULT_RATES: every kind, the recovery-path ones included, has one
    (a kind without would make the default plan fail), and each is a probability per decision site."""
    plan = default_plan(1, "all")

    assert set(EMULATED) == set(plan.specs)
    assert {kind: DEFAULT_RATES[kind] for kind in EMULATED} == {kind: spec.rate for kind, spec in plan.specs.items()}
    assert all(0 < rate <= 1 for rate in DEFAULT_RATES.values())
    assert {FaultKind.DLQ: 0.5, FaultKind.REDRIVE: 0.3, FaultKind.MIXED_VERSION: 0.2} == {
        kind: spec.rate for kind, spec in default_plan(1, "dlq,redrive,mixed_version").specs.items()}
