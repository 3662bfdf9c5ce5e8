"""Seeds: the same seed gives the same history bit for bit (here and in another process), seeds pass, and the
checks can fail."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from seglog_awsmodel.faults import SIMULATED
from seglog_sim import quiet_logs
from seglog_sim.campaign import run_campaign
from seglog_sim.history import lines
from seglog_sim.run import SeedResult, run_seed
from seglog_sim.scenario import Scenario


@pytest.fixture(autouse=True, scope="module")
def _quiet() -> None:
    quiet_logs()


def _digest(result: SeedResult) -> str:
    return hashlib.sha256("\n".join(lines(result.history)).encode()).hexdigest()


def test_the_same_seed_gives_the_same_history() -> None:
    first, second = run_seed(7), run_seed(7)
    assert first.fired == second.fired
    assert _digest(first) == _digest(second)
    assert _digest(first) != _digest(run_seed(8))


def test_the_same_seed_gives_the_same_history_in_another_process() -> None:
    code = ("import hashlib; import seglog_sim; seglog_sim.quiet_logs(); "
            "from seglog_sim.run import run_seed; from seglog_sim.history import lines; "
            "r = run_seed(11); print(hashlib.sha256(chr(10).join(lines(r.history)).encode()).hexdigest())")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout.strip().splitlines()[-1]
    assert _digest(run_seed(11)) == other


def test_a_campaign_passes_and_exercises_every_fault_kind() -> None:
    campaign = run_campaign(range(1, 121))
    assert campaign.ok, [f.summary() for f in campaign.failures]
    fired = {k for k in campaign.faults if "@" not in k}
    assert {str(f) for f in SIMULATED} == fired
    assert campaign.acknowledged > 120 * 10
    assert campaign.invocations["worker:completed"] > 0
    assert json.dumps(campaign.to_dict())


def test_without_faults_every_seed_is_quiet_and_passes() -> None:
    result = run_seed(3, Scenario(faults=()))
    assert result.ok, result.violations
    assert result.fired == []
    assert result.quiescent


def test_a_replay_with_no_faults_allowed_fires_none() -> None:
    result = run_seed(5, only=frozenset())
    assert result.fired == []
