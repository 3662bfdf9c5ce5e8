"""seglog simulate: a campaign's report, one seed's replay, and a failing seed's report (replay command, history
around the violation, shrunk schedule)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from seglog_cli import simulate_commands
from seglog_cli.main import cli
from seglog_core.violations import Violation
from seglog_report.model import decode
from seglog_sim.shrink import Shrunk
from seglog_sim.timeline import run_data


def test_a_campaign_reports_speed_faults_call_sites_and_cost_as_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["simulate", "--seeds", "6", "--seed", "20", "--json", "--report", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["seeds"], report["ok"], report["failing_seeds"]) == (6, True, [])
    assert report["seeds_per_minute"] > 0
    assert "worker:DynamoDBPendingStore.claim" in report["sites"]
    # The ledger prices all six seeds; the page draws the first (a passing campaign has no failing one to show).
    drawn = decode((tmp_path / "report.json").read_bytes())
    assert [r.seed for r in drawn.runs] == [20]
    assert [(r.seed, r.ok) for r in drawn.seeds] == [(seed, True) for seed in range(20, 26)]  # every seed, listed
    assert report["ledger"]["appends"] == report["acknowledged_appends"] > drawn.runs[0].meter.appends
    assert report["report"] == str(tmp_path / "report.html") and f"report: {tmp_path}" in result.stderr


def test_a_campaigns_report_lists_every_seed_failing_first_each_with_its_replay(tmp_path: Path) -> None:
    """A real failing seed: with the mutant order_check (the worker's order check removed) seed 4 fails on I4. The
    campaign runs in a process of its own, the mutant installed before anything imports the worker."""
    code = ("import sys; from seglog_sim.mutants.catalogue import by_name; "
            "from seglog_sim.mutants.hook import install; install(by_name('order_check')); "
            "from seglog_cli.main import cli; cli(sys.argv[1:])")
    ran = subprocess.run([sys.executable, "-c", code, "simulate", "--seeds", "4", "--seed", "2", "--json", "--report",
                          str(tmp_path)], capture_output=True, text=True, check=False)
    assert ran.returncode == 1, ran.stderr[-2000:]
    failing = json.loads(ran.stdout)["failing_seeds"]
    assert 4 in failing
    report = decode((tmp_path / "report.json").read_bytes())
    assert [r.seed for r in report.seeds] == failing + sorted(set(range(2, 6)) - set(failing))
    assert [r.seed for r in report.runs] == failing  # drawn: the failing ones only
    for row in report.seeds:
        assert row.ok == (row.seed not in failing) and bool(row.violations) == (not row.ok)
        assert row.replay == f"seglog simulate --seed {row.seed}" and row.seconds > 0 and row.invocations > 0
    assert any(text.startswith("I4") for text in report.seeds[0].violations)
    assert report.runs[0].series  # the drawn seed's iterator ages and queue depths


def test_unknown_fault_kinds_are_refused_with_the_known_ones() -> None:
    result = CliRunner().invoke(cli, ["simulate", "--seeds", "1", "--faults", "crash,meteor"])
    assert result.exit_code == 2
    assert "unknown fault kinds meteor" in result.output and "stale_read" in result.output


def test_a_failing_seed_prints_its_replay_its_history_and_a_shrunk_schedule(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    failing, data = run_data(31)
    failing.violations = [Violation(invariant="I3", message="snapshot state differs", log_id=None)]
    data.violations = list(failing.violations)
    monkeypatch.setattr(simulate_commands, "run_data", lambda seed, scenario=None, only=None, replay="": (failing,
                                                                                                          data))
    monkeypatch.setattr(simulate_commands, "shrink",
                        lambda seed, scenario, result: Shrunk(faults=result.fired[:2], result=result, replays=7))
    result = CliRunner().invoke(cli, ["simulate", "--seed", "31", "--report", str(tmp_path)])
    assert result.exit_code == 1
    assert not decode((tmp_path / "report.json").read_bytes()).ok
    out = result.output
    assert "seed 31 FAILED" in out and "I3" in out
    assert "replay: seglog simulate --seed 31" in out
    assert "history around the violation" in out and "s  " in out
    assert "shrunk to" in out and "in 7 replays" in out
    assert "replay the shrunk schedule: seglog simulate --seed 31 --only-faults" in out


def test_a_campaign_reports_its_retired_share_and_waste_at_the_top_level(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["simulate", "--seeds", "8", "--seed", "1", "--json", "--report", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert 0.0 <= report["retired_share"] <= 1.0
    assert set(report["waste"]) == {"builds started per build completed", "receives per job",
                                    "failed conditional writes per append"}


def test_explained_mutants_print_their_waste_next_to_the_unmutated_code(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["simulate", "--mutants", "--mutant", "claim_ignores_claimer", "--seeds", "3",
                                      "--report", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "waste over 3 seeds" in result.output
    lines = [line.strip() for line in result.output.splitlines()]
    unmutated = next(line for line in lines if line.startswith("unmutated"))
    mutant = next(line for line in lines if line.startswith("claim_ignores_claimer") and "per job" in line)
    assert "builds started per build completed" in unmutated and "receives per job" in mutant
