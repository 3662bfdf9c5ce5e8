"""A failing seed's report.html, opened in headless Chromium: it opens on the violation, with the events that led
to it outlined, and draws exactly the run's lanes and faults (issue 12, point 4 and "Done when")."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from browser import Page
from report_page import ledger, open_report, timeline
from seglog_report import figures
from seglog_report.cost import money
from seglog_report.model import decode

#: A mutant the simulator kills with this seed: the worker's order check removed, a snapshot completes after a
#: later one (I4) — a real failing run, made by the real (mutated) worker code.
MUTANT, SEED = "order_check", 4


def test_a_failing_seeds_report_opens_on_its_violation(chromium: Page, tmp_path: Path) -> None:
    ran = subprocess.run([sys.executable, "-m", "seglog_sim.mutants", MUTANT, "1", str(SEED), str(tmp_path)],
                         capture_output=True, text=True, check=False)
    outcome = json.loads(ran.stdout.strip().splitlines()[-1])
    assert outcome["killed"], (outcome, ran.stderr[-2000:])
    report = decode((tmp_path / "report.json").read_bytes())
    [run] = report.runs
    assert not run.ok and run.violations[0].invariant == "I4"

    summary = open_report(chromium, outcome["report"])
    assert chromium.errors == []
    assert summary["opens_on"] == f"run-{run.run}"
    drawn = timeline(chromium, run.run)
    # The failing run's section is at the top of the view, under the page's header ...
    assert 0 <= drawn["top"] < 200, drawn
    # ... zoomed on the events that led to the violation, each outlined ...
    window = figures.violation_window(run)
    assert window is not None and drawn["range"] == pytest.approx(list(window))
    outlined = sum(t["outlined"] for t in drawn["traces"])
    assert outlined == sum(s.highlight for s in run.spans) + sum(m.highlight for m in run.markers) > 0
    assert any(s.highlight and s.group == "snapshot" for s in run.spans)
    # ... with every lane of the run labelled, and every fault that fired as a marker of its kind.
    assert drawn["labels"][::-1] == run.lanes()
    markers = {t["name"]: t["points"] for t in drawn["traces"] if t["type"] == "scatter"}
    assert markers == dict(Counter(m.kind for m in run.markers))
    page = ledger(chromium)
    assert page["shown"] == money(summary["ledger"]["total"]) and page["total"] == summary["ledger"]["total"]
    chromium.screenshot("failing-seed")
