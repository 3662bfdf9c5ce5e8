"""A campaign keeps each run's drawing on disk the moment the run ends (``run.json``), and a Ctrl-C ends it with a
report of what ran instead of an exception: the runs finished, then the interrupted one, marked as such. The runner
is a stand-in (no stack): what is checked is the campaign's loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seglog_core.violations import Violation
from seglog_plugin.chaos.campaign import Campaign
from seglog_plugin.chaos.runner import RunReport
from seglog_report.files import RUN_FILE, load_run
from seglog_report.model import RunData, Span


class Runner:
    """Runs that end in order; run ``interrupted_at`` is stopped by Ctrl-C (as ChaosRunner reports one), and
    starting run ``raises_at`` raises KeyboardInterrupt (a Ctrl-C between runs)."""

    def __init__(self, state: Path, *, interrupted_at: int | None = None, raises_at: int | None = None) -> None:
        self.state = state
        self.interrupted_at = interrupted_at
        self.raises_at = raises_at
        self.started: list[int] = []

    def run(self, run: int, plan: Any, *, seed: int | None = None, monitor: Any = None) -> RunReport:
        if run == self.raises_at:
            raise KeyboardInterrupt
        self.started.append(run)
        run_dir = self.state / f"run-{run:03d}-seed-{seed}"
        run_dir.mkdir(parents=True)
        report = RunReport(run=run, seed=seed or 0, log_file=str(run_dir / "emulator.log"), seconds=2.0,
                           data=RunData(kind="chaos", title="chaos run", run=run, seed=seed or 0,
                                        spans=[Span(lane="client 0", group="client", start=0.0, end=1.0,
                                                    outcome="acknowledged")]))
        if run == self.interrupted_at:
            report.interrupted = True
            report.violations.append(Violation(invariant="RUN", message="interrupted while clients editing"))
        return report


def campaign_with(runner: Runner) -> Campaign:
    campaign = Campaign.__new__(Campaign)  # no resources: the loop is what is under test
    campaign.runner = runner  # type: ignore[assignment]
    return campaign


def test_every_run_is_saved_in_its_directory_as_it_ends(tmp_path: Path) -> None:
    runner = Runner(tmp_path)
    result = campaign_with(runner).run(40, 3, faults="none", replay_args="--faults none --sheets 1")
    saved = [load_run(path) for path in sorted(tmp_path.glob(f"*/{RUN_FILE}"))]
    assert [(0, 40), (1, 41), (2, 42)] == [(run.run, run.seed) for run in saved]
    assert not result.interrupted
    assert {"seglog chaos"} == {run.title for run in saved}
    assert all(run.summary["seconds"] == 2.0 and len(run.spans) == 1 for run in saved)


def test_a_run_stopped_by_ctrl_c_ends_the_campaign_and_is_kept_marked_interrupted(tmp_path: Path) -> None:
    runner = Runner(tmp_path, interrupted_at=1)
    seen: list[int] = []
    result = campaign_with(runner).run(40, 5, faults="none", on_run=lambda report: seen.append(report.run),
                                       replay_args="--faults none")
    assert ([0, 1], [0, 1], True) == (runner.started, seen, result.interrupted)
    report = result.to_report("seglog chaos --runs 5")
    assert "seglog chaos (interrupted after 2 run(s))" == report.title
    assert ["seglog chaos", "seglog chaos (interrupted)"] == [run.title for run in report.runs]
    last = report.runs[1]
    assert (True, "seglog chaos --seed 41 --runs 1 --faults none") == (last.summary["interrupted"], last.replay)
    assert "interrupted" in result.render().splitlines()[0]
    assert "seglog chaos (interrupted)" == load_run(tmp_path / "run-001-seed-41" / RUN_FILE).title


def test_ctrl_c_between_runs_keeps_the_runs_finished(tmp_path: Path) -> None:
    runner = Runner(tmp_path, raises_at=2)
    result = campaign_with(runner).run(40, 5, faults="none")
    assert ([0, 1], True, True) == ([run.run for run in result.runs], result.interrupted, result.ok)
    assert 2 == len(list(tmp_path.glob(f"*/{RUN_FILE}")))


@pytest.mark.parametrize("kind", ["chaos", "demo"])
def test_the_kind_names_the_report_and_its_runs(tmp_path: Path, kind: str) -> None:
    result = campaign_with(Runner(tmp_path)).run(1, 1, faults="none", kind=kind)
    report = result.to_report(f"seglog {kind}")
    assert (kind, f"seglog {kind}", [kind]) == (report.kind, report.title, [run.kind for run in report.runs])
