"""seglog simulate: a campaign's report, one seed's replay, and a failing seed's report (replay command, history
around the violation, shrunk schedule)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from seglog_cli import simulate_commands
from seglog_cli.main import cli
from seglog_sim.checks import Violation
from seglog_sim.run import run_seed
from seglog_sim.shrink import Shrunk


def test_a_campaign_reports_speed_faults_and_call_sites_as_json() -> None:
    result = CliRunner().invoke(cli, ["simulate", "--seeds", "6", "--seed", "20", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["seeds"], report["ok"], report["failing_seeds"]) == (6, True, [])
    assert report["seeds_per_minute"] > 0
    assert "worker:DynamoDBPendingStore.claim" in report["sites"]


def test_unknown_fault_kinds_are_refused_with_the_known_ones() -> None:
    result = CliRunner().invoke(cli, ["simulate", "--seeds", "1", "--faults", "crash,meteor"])
    assert result.exit_code == 2
    assert "unknown fault kinds meteor" in result.output and "stale_read" in result.output


def test_a_failing_seed_prints_its_replay_its_history_and_a_shrunk_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    failing = run_seed(31)
    failing.violations = [Violation(invariant="I3", message="snapshot state differs", log_id=None)]
    monkeypatch.setattr(simulate_commands, "run_seed", lambda seed, scenario=None, only=None: failing)
    monkeypatch.setattr(simulate_commands, "shrink",
                        lambda seed, scenario, result: Shrunk(faults=result.fired[:2], result=result, replays=7))
    result = CliRunner().invoke(cli, ["simulate", "--seed", "31"])
    assert result.exit_code == 1
    out = result.output
    assert "seed 31 FAILED" in out and "I3" in out
    assert "replay: seglog simulate --seed 31" in out
    assert "history around the violation" in out and "s  " in out
    assert "shrunk to" in out and "in 7 replays" in out
    assert "replay the shrunk schedule: seglog simulate --seed 31 --only-faults" in out
