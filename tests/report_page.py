"""What a report.html shows once Chromium has drawn it, read back from the page for the browser tests: the lanes
its timeline's axis labels, the traces drawn, the outlined events, where the view opens, the ledger's figures."""

from __future__ import annotations

from typing import Any

from browser import Page

#: Read one run's timeline from the drawn plot: the lane labels Plotly rendered (SVG text), the traces' points
#: (markers are scatter traces of mode "markers"; time series are of mode "lines"), how many are outlined (a bar's
#: 3 px red line, a marker's larger size), the x range, the section's position.
_TIMELINE_JS = """
(() => {
  const el = document.getElementById(%r);
  const labels = Array.from(el.querySelectorAll('.cartesianlayer .subplot.xy .yaxislayer-above .ytick text'))
    .map(t => t.textContent);
  const traces = el.data.map(t => ({
    name: t.name, type: t.type, mode: t.mode || null, points: (t.y || []).length,
    outlined: t.type === 'bar' ? (t.marker.line.width || []).filter(w => w === 3).length
            : t.mode === 'markers' ? (t.marker.size || []).filter(s => s === 15).length : 0}));
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


#: Every marker trace of a run's timeline as drawn (name, symbol, colour) and the legend entries Plotly rendered.
_LEGEND_JS = """
(() => {
  const el = document.getElementById(%r);
  const drawn = el._fullData.filter(t => t.type === 'scatter' && t.mode === 'markers').map(t => ({
    name: t.name, symbol: t.marker.symbol, color: t.marker.color}));
  const entries = Array.from(el.querySelectorAll('.legend .traces .legendtext')).map(t => t.textContent);
  return {drawn: drawn, entries: entries};
})()
"""


def legend_problems(page: Page, run: int) -> list[str]:
    """What is wrong with a timeline's fault legend as drawn: a marker kind without a legend entry, two kinds
    with one symbol, a kind drawn in more than one symbol or colour. Empty when every kind is told apart."""
    found: dict[str, Any] = page.evaluate(_LEGEND_JS % f"timeline-{run}")
    problems = []
    by_symbol: dict[str, list[str]] = {}
    for trace in found["drawn"]:
        symbol, color = trace["symbol"], trace["color"]
        if not isinstance(symbol, str) or not isinstance(color, str):
            problems.append(f"{trace['name']} is drawn in several symbols or colours: {symbol!r} {color!r}")
            continue
        by_symbol.setdefault(symbol, []).append(trace["name"])
        if trace["name"] not in found["entries"]:
            problems.append(f"{trace['name']} has no legend entry")
    problems += [f"{' and '.join(names)} share the symbol {symbol}" for symbol, names in by_symbol.items()
                 if len(names) > 1]
    return problems


_POSITION_JS = """
(() => {
  const el = document.getElementById(%r);
  const id = %r;
  for (const trace of el._fullData) {
    const at = (trace.customdata || []).indexOf(id);
    if (at < 0) continue;
    const x = trace.type === 'bar' ? trace.base[at] + trace.x[at] / 2 : trace.x[at];
    const layout = el._fullLayout;
    el.scrollIntoView({block: 'center'});
    const box = el.getBoundingClientRect();
    return {x: box.left + layout.xaxis._offset + layout.xaxis.l2p(x),
            y: box.top + layout.yaxis._offset + layout.yaxis.d2p(trace.y[at])};
  }
  return null;
})()
"""


def click_on(page: Page, run: int, item_id: str) -> dict[str, Any] | None:
    """Click the bar or marker ``item_id`` of a run's timeline where it is drawn; the page's selection."""
    where = page.evaluate(_POSITION_JS % (f"timeline-{run}", item_id))
    assert where is not None, f"{item_id} is not drawn in run {run}'s timeline"
    page.click(where["x"], where["y"])
    selection: dict[str, Any] | None = page.evaluate("window.seglogSelection")
    return selection


_OVERFLOW_JS = """
(() => {
  const found = [];
  const page = document.documentElement;
  if (page.scrollWidth > window.innerWidth + 1) found.push('the page is ' + page.scrollWidth + ' px wide');
  document.querySelectorAll('section, header, .timeline, .why, table, .key').forEach(el => {
    const box = el.getBoundingClientRect();
    const parent = el.parentElement.getBoundingClientRect();
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible')
      found.push((el.id || el.className || el.tagName) + ' overflows: ' + el.scrollWidth + ' > ' + el.clientWidth);
    if (box.right > parent.right + 1 && el.parentElement !== document.body)
      found.push((el.id || el.className || el.tagName) + ' sticks out of its box by ' + (box.right - parent.right));
  });
  return found;
})()
"""


def overflows(page: Page) -> list[str]:
    """The panels that do not fit their box at the page's width."""
    found: list[str] = page.evaluate(_OVERFLOW_JS)
    return found
