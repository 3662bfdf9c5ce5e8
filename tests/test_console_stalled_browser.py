"""The live console in headless Chromium, fed directly (no stack, no emulator): it flags a stalled stream shard
(issue 19, point 4), and it speaks the report's visual language with panels that fit a 1280 px window (issue 21).

A shard whose iterator age keeps growing past the threshold gets a "stalled" row and a banner counting it; a
healthy shard does not. Every fault kind, the crash point and the supervisor's markers are drawn in the legend's
symbol and colour, every outcome in its colour and pattern, and no panel is wider than its box however long the
names and ids in it."""

from __future__ import annotations

import uuid

from browser import Page
from console_page import check_legend_styles, check_panels_fit
from seglog_awsmodel.faults import FaultKind
from seglog_report import legend
from seglog_report.console import Console

STUCK, FINE = "shardId-00000000000000000001-stuck", "shardId-00000000000000000002-fine"


def test_the_page_flags_a_stalled_shard_in_its_row_and_a_banner_and_not_a_healthy_one(chromium: Page) -> None:
    now = [1_000_000.0]
    console = Console(clock=lambda: now[0], push_seconds=0.05).start()
    try:
        for period in range(1, 6):  # every 5 s, as seglog_emulator.pollers.usage reports
            now[0] += 5.0
            console.aggregator.ingest({
                "event": "poller usage", "ts": now[0], "poller": "StreamRouterFunction.Entries",
                "service": "dynamodbstreams", "requests": 3,
                "shards": {STUCK: 45_000 + 5_000 * period, FINE: 0}})
        chromium.open(console.url, ready="window.seglogReady === true")
        chromium.wait_for("window.seglogState.panels.stalled_shards.length === 1")
        chromium.wait_for("!document.getElementById('stalled').hidden")

        rows = chromium.evaluate("Array.from(document.querySelectorAll('#shards tr')).map(r => "
                                 "[r.className, r.cells[0].textContent, r.cells[3].textContent])")
        titles = chromium.evaluate("Array.from(document.querySelectorAll('#shards tr')).map(r => r.cells[0].title)")
        banner = chromium.evaluate("document.getElementById('stalled').textContent")
        visible = chromium.evaluate("getComputedStyle(document.getElementById('stalled')).display")
        chromium.screenshot("stalled-shard")
    finally:
        console.stop()

    assert [] == chromium.errors
    # The page shows a shard id's last 14 characters, as it did before; the whole id is its title.
    assert [["stalled", STUCK[-14:], "stalled"], ["", FINE[-14:], ""]] == rows
    assert [STUCK, FINE] == titles
    assert banner.startswith("1 stream shard stalled") and STUCK[-14:] in banner and "fine" not in banner
    assert "none" != visible


#: Functions with the template's longest names, and a poller's.
FUNCTIONS = ("ApiFunction", "SnapshotWorkerFunction", "StreamRouterFunction", "SnapshotSweepFunction")


def test_every_kind_and_outcome_is_drawn_in_the_legends_style_and_every_panel_fits_at_1280px(
        chromium: Page) -> None:
    now = [1_000_000.0]
    console = Console(clock=lambda: now[0], push_seconds=0.05).start()
    feed = console.aggregator.ingest
    t0 = now[0]
    kinds = [str(kind) for kind in FaultKind]
    try:
        for i, kind in enumerate(kinds):
            feed({"event": "fault injected", "ts": t0 + 0.1 * i, "fault": kind,
                  "lane": f"SnapshotWorkerFunction pid {100 + i % 3}"})
        feed({"event": "crash point reached: killing this process", "ts": t0 + 3, "crash_point": "mid_chunk",
              "lane": "SnapshotWorkerFunction pid 100", "pid": 100})
        feed({"event": "emulator started", "ts": t0 + 0.5})
        feed({"event": "child exited: restarting", "ts": t0 + 4, "child": "queue:SnapshotWorkerFunction.Jobs",
              "pid": 9, "status": -9})
        feed({"event": "emulator stopped", "ts": t0 + 6})
        # Every outcome on every function: the Invocations panel's longest rows.
        for i, outcome in enumerate(legend.OUTCOMES):
            for k, function in enumerate(FUNCTIONS):
                feed({"event": "invocation", "ts": t0 + 0.05 * i + 0.01 * k, "function": function, "pid": 200 + k,
                      "request_id": f"r{i}-{k}", "outcome": outcome, "duration_ms": 30, "memory_mb": 1024})
        for period in range(3):
            feed({"event": "poller usage", "ts": t0 + 5 * period, "poller": "SnapshotWorkerFunction.Jobs",
                  "service": "sqs", "requests": 3, "oldest_age_ms": 123_456})
            feed({"event": "poller usage", "ts": t0 + 5 * period, "poller": "StreamRouterFunction.Entries",
                  "service": "dynamodbstreams", "requests": 3,
                  "shards": {f"shardId-0000017000000000000{n}-{uuid.UUID(int=n).hex}": 1000 * n for n in range(3)}})
        log_ids = [str(uuid.uuid4()) for _ in range(4)]
        console.aggregator.stack({
            "queues": {"queue": {"visible": 12, "in_flight": 3}, "dlq": {"visible": 0, "in_flight": 0}},
            "pending": dict.fromkeys(log_ids, 3), "pending_total": 12,
            "errors": ["pending table not read: ResourceNotFoundException: Requested resource not found: Table: "
                       "seglog-chaos-PendingTable-0123456789ABCDEF0123456789ABCDEF not found"]})
        now[0] = t0 + 7
        chromium.open(console.url, ready="window.seglogReady === true")
        chromium.wait_for(f"window.seglogState.items.length === {len(console.aggregator.window)}")
        chromium.wait_for("window.seglogState.panels.stack.pending_total === 12")

        traces = check_legend_styles(chromium)
        check_panels_fit(chromium)
        pending = chromium.evaluate("Array.from(document.querySelectorAll('#pending tr')).slice(1).map("
                                    "r => [r.cells[0].textContent, r.cells[0].title])")
        invocations = chromium.evaluate("Array.from(document.querySelectorAll('#invocations tr')).map("
                                        "r => Array.from(r.cells).map(c => c.textContent))")
        chromium.screenshot("legend-and-panels")
    finally:
        console.stop()

    assert [] == chromium.errors
    drawn = {t["name"] for t in traces if t["type"] == "scatter"}
    assert {*kinds, legend.CRASH_POINT, legend.CHILD_RESTART, legend.EMULATOR_STARTED,
            legend.EMULATOR_STOPPED} == drawn
    assert set(legend.OUTCOMES) == {t["name"] for t in traces if t["type"] == "bar"}
    assert sorted([log_id, log_id] for log_id in log_ids) == sorted(pending)
    # One row per function: every outcome and the total, none cut.
    assert sorted(FUNCTIONS) == sorted(row[0] for row in invocations)
    for row in invocations:
        assert all(f"{outcome} 1" in row[1] for outcome in legend.OUTCOMES) and str(len(legend.OUTCOMES)) == row[2]
