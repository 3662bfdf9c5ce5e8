"""A failing seed's report.html, opened in headless Chromium: it opens on the violation, with the events that led
to it outlined, and draws exactly the run's lanes and faults (issue 12, point 4 and "Done when"); every fault kind
has a legend entry and a symbol of its own, selecting a snapshot lights up its chain and says why it waited, and
no panel overflows at 1280 px (issue 21, point 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from browser import WINDOW, Page
from report_page import click_on, ledger, legend_problems, open_report, overflows, timeline
from seglog_cli.main import cli
from seglog_report import causes, figures, legend
from seglog_report.cost import money
from seglog_report.html import publish
from seglog_report.model import Report, RunData, decode

#: A mutant the simulator kills with this seed: the worker's order check removed, a snapshot completes after a
#: later one (I4; the idle check of issue 34 sees the sheet's jobs leave one behind first, I5) — a real failing run,
#: made by the real (mutated) worker code.
MUTANT, SEED = "order_check", 24


@pytest.fixture(scope="module")
def mutant_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Report]:
    """The report of a failing mutant's seed, as ``seglog_sim.mutants`` writes it."""
    where = tmp_path_factory.mktemp("mutant-report")
    ran = subprocess.run([sys.executable, "-m", "seglog_sim.mutants", MUTANT, "1", str(SEED), str(where)],
                         capture_output=True, text=True, check=False)
    outcome = json.loads(ran.stdout.strip().splitlines()[-1])
    assert outcome["killed"], (outcome, ran.stderr[-2000:])
    return Path(outcome["report"]), decode((where / "report.json").read_bytes())


def test_a_failing_seeds_report_opens_on_its_violation(chromium: Page, mutant_report: tuple[Path, Report]) -> None:
    page, report = mutant_report
    [run] = report.runs
    assert not run.ok and {"I5", "I4"} <= {v.invariant for v in run.violations}

    summary = open_report(chromium, page)
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
    markers = {t["name"]: t["points"] for t in drawn["traces"] if t["mode"] == "markers"}
    assert markers == dict(Counter(m.kind for m in run.markers))
    page = ledger(chromium)
    assert page["shown"] == money(summary["ledger"]["total"]) and page["total"] == summary["ledger"]["total"]
    chromium.screenshot("failing-seed")


def _longest_snapshot(run: RunData) -> str:
    """The longest-lived snapshot a worker invocation completed (not one ``seglog rebuild`` completed)."""
    by_workers = {link.target for link in run.links if link.why == "completed the snapshot"}
    lives = [s for s in run.spans if s.group == "snapshot" and s.outcome == "completed" and s.id in run.waits
             and s.id in by_workers]
    return max(lives, key=lambda s: s.end - s.start).id


def test_selecting_a_snapshot_lights_up_its_chain_and_says_why_it_waited(
        chromium: Page, mutant_report: tuple[Path, Report]) -> None:
    page, report = mutant_report
    [run] = report.runs
    open_report(chromium, page)
    assert legend_problems(chromium, run.run) == []
    chosen = _longest_snapshot(run)
    selection = click_on(chromium, run.run, chosen)
    assert selection is not None and selection["id"] == chosen, selection
    # The page walks the links as seglog_report.causes does ...
    chain = set(selection["chain"])
    assert chain == causes.chain(run, chosen)
    # ... and the chain holds the Snapshot entry, the job sent for it, and the invocation that completed it.
    by_id = {s.id: s for s in run.spans}
    k = causes.snapshot_key(by_id[chosen])
    assert any(k in by_id[i].acts.get(causes.ROUTED, []) for i in chain if i in by_id), "no span that sent its job"
    completing = [link.source for link in run.links if link.target == chosen and link.why == "completed the snapshot"]
    assert completing and set(completing) <= chain
    # Everything else is dimmed, the chain is not.
    drawn = chromium.evaluate(f"""document.getElementById('timeline-{run.run}').data
        .filter(t => Array.isArray(t.customdata))
        .map(t => [t.customdata, Array.isArray(t.marker.opacity) ? t.marker.opacity : []])""")
    opacity = {item: o for ids, shown in drawn for item, o in zip(ids, shown, strict=True)}
    assert opacity and all((opacity[i] == 1) == (i in chain) for i in opacity)
    # The panel says why it waited, as the report's data do.
    panel = chromium.evaluate(f"document.getElementById('why-{run.run}').innerText")
    assert run.waits[chosen] in panel
    chromium.click(5, 5)  # the pointer off the plot, so no hover box covers the screenshot
    chromium.evaluate("window.scrollTo(0, 0)")  # the page from its top: the sticky header in its place
    chromium.screenshot("snapshot-selected")
    chromium.evaluate("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
    assert chromium.evaluate("window.seglogSelection") is None


def test_no_panel_overflows_at_1280_px(chromium: Page, mutant_report: tuple[Path, Report]) -> None:
    page, _ = mutant_report
    assert WINDOW[0] == 1280
    open_report(chromium, page)
    assert overflows(chromium) == []


def test_the_legend_check_fails_when_two_kinds_share_a_symbol(
        chromium: Page, mutant_report: tuple[Path, Report], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, report = mutant_report
    [run] = report.runs
    first, second, *_ = sorted({m.kind for m in run.markers})
    monkeypatch.setitem(legend.FAULTS, second, legend.FAULTS[first])
    page, _ = publish(report, tmp_path)
    open_report(chromium, page)
    assert legend_problems(chromium, run.run) == [f"{first} and {second} share the symbol "
                                                  f"{legend.FAULTS[first].symbol}"]


def test_the_seed_picker_shows_any_seed_of_the_campaign_and_how_to_draw_it(chromium: Page, tmp_path: Path) -> None:
    """Issue 21, point 3: a simulate campaign's page lists every seed, failing first, and picking one it does not
    draw shows that seed's own figures and the command that draws it onto this page."""
    ran = CliRunner().invoke(cli, ["simulate", "--seeds", "3", "--faults", "ddb_5xx", "--report", str(tmp_path)])
    assert ran.exit_code in (0, 1), ran.output
    report = decode((tmp_path / "report.json").read_bytes())
    drawn = {run.seed for run in report.runs}
    [other] = [row for row in report.seeds if row.seed not in drawn][:1]
    open_report(chromium, tmp_path / "report.html")
    assert chromium.errors == []
    options = chromium.evaluate("Array.from(document.querySelectorAll('#seed-picker option')).map(o => o.value)")
    assert options == [str(row.seed) for row in sorted(report.seeds, key=lambda r: (r.ok, r.seed))]
    chromium.evaluate(f"""(() => {{ const p = document.getElementById('seed-picker'); p.value = '{other.seed}';
                          p.dispatchEvent(new Event('change')); }})()""")
    shown = chromium.evaluate("document.getElementById('seed-detail').innerText")
    assert f"seglog report {tmp_path} --seed {other.seed}" in shown
    assert f"invocations\t{other.invocations}" in shown and f"faults fired\t{other.faults}" in shown
    assert overflows(chromium) == []
