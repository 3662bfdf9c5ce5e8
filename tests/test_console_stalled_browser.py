"""The live console in headless Chromium flags a stalled stream shard (issue 19, point 4): a shard whose iterator
age keeps growing past the threshold gets a "stalled" row and a banner counting it; a healthy shard does not. No
stack: the console is fed the pollers' usage lines directly."""

from __future__ import annotations

from browser import Page
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
        banner = chromium.evaluate("document.getElementById('stalled').textContent")
        visible = chromium.evaluate("getComputedStyle(document.getElementById('stalled')).display")
        chromium.screenshot("stalled-shard")
    finally:
        console.stop()

    assert [] == chromium.errors
    # The page shows a shard id's last 14 characters, as it did before.
    assert [["stalled", STUCK[-14:], "stalled"], ["", FINE[-14:], ""]] == rows
    assert banner.startswith("1 stream shard stalled") and STUCK[-14:] in banner and "fine" not in banner
    assert "none" != visible
