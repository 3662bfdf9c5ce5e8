"""What a report.html shows once Chromium has drawn it, read back from the page for the browser tests: the lanes
its timeline's axis labels, the traces drawn, the outlined events, where the view opens, the ledger's figures."""

from __future__ import annotations

from typing import Any

from browser import Page

#: Read one run's timeline from the drawn plot: the lane labels Plotly rendered (SVG text), the traces' points,
#: how many are outlined (a bar's 3 px red line, a marker's larger size), the x range, the section's position.
_TIMELINE_JS = """
(() => {
  const el = document.getElementById(%r);
  const labels = Array.from(el.querySelectorAll('.yaxislayer-above .ytick text')).map(t => t.textContent);
  const traces = el.data.map(t => ({
    name: t.name, type: t.type, points: (t.y || []).length,
    outlined: t.type === 'bar' ? (t.marker.line.width || []).filter(w => w === 3).length
                               : (t.marker.size || []).filter(s => s === 14).length}));
  return {labels: labels, traces: traces, range: el._fullLayout.xaxis.range,
          top: el.closest('section').getBoundingClientRect().top, scrollY: window.scrollY};
})()
"""

_LEDGER_JS = """
(() => {
  const total = document.getElementById('ledger-total');
  const rows = Array.from(document.querySelectorAll('table.ledger tbody tr')).map(r => ({
    item: r.dataset.item, quantity: Number(r.dataset.quantity), dollars: Number(r.dataset.dollars),
    cells: Array.from(r.cells).map(c => c.textContent)}));
  return {total: Number(total.dataset.dollars), shown: total.textContent, rows: rows};
})()
"""


def open_report(page: Page, path: Any) -> dict[str, Any]:
    """Open a report, wait for it to draw, and return its ``window.seglogReport``."""
    page.open(path, ready="window.seglogReady === true", timeout=60.0)
    summary: dict[str, Any] = page.evaluate("window.seglogReport")
    return summary


def timeline(page: Page, run: int) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(_TIMELINE_JS % f"timeline-{run}")
    return found


def ledger(page: Page) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(_LEDGER_JS)
    return found
