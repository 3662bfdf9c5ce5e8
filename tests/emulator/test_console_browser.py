"""The live console in headless Chromium during a real emulator run (issue 12, point 4): the page follows the run
by push, and once the run is over it draws exactly the lanes, bars and markers the console holds, with no script
errors; each in the legend's style, and every panel fits its box at 1280 px (issue 21); a screenshot is kept as a
test artifact."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from browser import Page
from console_page import check_legend_styles, check_panels_fit
from emulator.test_supervisor import edit_and_wait, settings_for, wait_for
from seglog_emulator.supervisor import Supervisor
from seglog_report.console import Console
from seglog_report.cost import money
from seglog_report.legend import EMULATOR_STARTED, EMULATOR_STOPPED
from seglog_report.model import GROUPS
from seglog_stack import local

pytestmark = pytest.mark.stack

#: What the page drew: the lane labels Plotly rendered (SVG text, top to bottom) and each trace's points.
_DRAWN_JS = """
(() => {
  const el = document.getElementById('timeline');
  return {labels: Array.from(el.querySelectorAll('.yaxislayer-above .ytick text')).map(t => t.textContent),
          traces: el.data.map(t => ({name: t.name, type: t.type, points: (t.y || []).length})),
          seq: window.seglogState.seq,
          tables: Object.fromEntries(Array.from(document.querySelectorAll('#panels table')).map(
            t => [t.id, Array.from(t.rows).map(r => Array.from(r.cells).map(c => c.textContent))]))};
})()
"""


def lanes(state: dict[str, Any]) -> list[str]:
    """The lanes of a state, top to bottom: by group, then in order of first appearance."""
    seen: dict[str, tuple[int, int]] = {}
    for n, item in enumerate(state["items"]):
        rank = GROUPS.index(item["group"]) if item["group"] in GROUPS else len(GROUPS)
        seen.setdefault(item["lane"], (rank, n))
    return sorted(seen, key=lambda lane: seen[lane])


def test_the_live_console_draws_what_the_run_fed_it(chromium: Page, chaos_deployment: local.LocalDeployment,
                                                    console: Console, tmp_path: Path, lambda_artifact: Path) -> None:
    with (tmp_path / "emulator.log").open("w") as sink:
        supervisor = Supervisor(settings_for(chaos_deployment, tmp_path / "state", lambda_artifact), output=sink)
        supervisor.start()
        try:
            supervisor.wait_ready()
            chromium.open(console.url, ready="window.seglogReady === true", timeout=30)
            opened = chromium.evaluate("window.seglogState.seq")
            edit_and_wait(supervisor, chaos_deployment, 11)
            # pushed while the run went on, without a reload: the page drew invocations as they ended
            chromium.wait_for("window.seglogState.items.some(i => i.group === 'function')", timeout=20)
            assert chromium.evaluate("window.seglogState.seq") > opened
        finally:
            supervisor.stop()

    def settled() -> bool:
        """No push for longer than two push intervals, and the page has drawn the last one."""
        held = console.broadcaster.state()["seq"]
        time.sleep(0.6)
        chromium.wait_for(f"window.seglogState.seq >= {held}", timeout=10)
        return bool(held == console.broadcaster.state()["seq"])

    wait_for(settled, 30, "the console to stop changing and the page to catch up")
    held = console.broadcaster.state()
    drawn = chromium.evaluate(_DRAWN_JS)
    assert held["seq"] == drawn["seq"]
    spans = [item for item in held["items"] if item["type"] == "span"]
    markers = [item for item in held["items"] if item["type"] == "marker"]
    assert lanes(held) == drawn["labels"][::-1]  # SVG text from the bottom lane up
    assert {t["name"]: t["points"] for t in drawn["traces"] if t["type"] == "bar"} == dict(
        Counter(span["outcome"] for span in spans))
    assert {t["name"]: t["points"] for t in drawn["traces"] if t["type"] == "scatter"} == dict(
        Counter(marker["kind"] for marker in markers))
    assert {EMULATOR_STARTED, EMULATOR_STOPPED} <= {marker["kind"] for marker in markers}
    # issue 21: every marker kind and outcome in the legend's style, no two kinds one symbol; no panel overflows
    check_legend_styles(chromium)
    check_panels_fit(chromium)
    assert any(lane.startswith("SnapshotWorkerFunction pid ") for lane in drawn["labels"])
    # the panels: nothing in flight, the queues read from the stack, the bill of what the run metered
    tables = drawn["tables"]
    assert [["none"]] == tables["in-flight"]
    assert {"queue", "dlq"} <= {row[0] for row in tables["queues"]}
    [total] = [row for row in tables["cost"] if row[0] == "total"]
    assert money(held["panels"]["cost"]["total"]) == total[2] != money(0)
    assert [] == chromium.errors
    assert chromium.screenshot("live-console").stat().st_size > 10_000
