"""What the live console's page must look like in a browser (issue 21), for the browser tests that open it: every
panel fits its box at 1280 px, and every trace the timeline drew wears the legend's style.

The checks read what Chromium laid out and what Plotly drew (``document.getElementById('timeline').data``), not
what page.js meant to draw, and compare it with :mod:`seglog_report.legend` itself, not with the copy the server
embedded in the page, so a page that lost or garbled the legend fails too.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from browser import WINDOW, Page
from seglog_report import legend

#: Each panel and each table in it: how wide its content is against its box; and each cell whose text is cut.
_FIT_JS = """
(() => {
  const boxes = [];
  document.querySelectorAll('#panels section').forEach((section) => {
    const name = section.querySelector('h2').textContent;
    boxes.push({name: name, scroll: section.scrollWidth, client: section.clientWidth});
    section.querySelectorAll('table').forEach((t) =>
      boxes.push({name: name + ' #' + t.id, scroll: t.scrollWidth, client: t.parentElement.clientWidth}));
  });
  const cut = [];
  document.querySelectorAll('#panels td').forEach((td) => {
    if (td.scrollWidth > td.clientWidth + 1) cut.push({text: td.textContent, title: td.title});
  });
  return {width: window.innerWidth, page: document.documentElement.scrollWidth, boxes: boxes, cut: cut};
})()
"""

#: A figure ("$0.0000123", "1465 ms", "12"): never cut short (a name or an id may be, its title whole).
_FIGURE = re.compile(r"^[$]?[\d.,]+(\s.*)?$")

#: Every trace Plotly drew: its name and type, how many points, and the style it was given.
_TRACES_JS = """
document.getElementById('timeline').data.map((t) => ({
  name: t.name, type: t.type, points: (t.y || []).length, symbol: t.marker.symbol, color: t.marker.color,
  pattern: (t.marker.pattern || {}).shape || ''}))
"""


def check_panels_fit(page: Page) -> None:
    """At the test browser's 1280 px: no panel (and no table in one) is wider than its box, the page does not
    scroll sideways, and a cell whose text is cut (an ellipsis) carries the whole text in its title."""
    found = page.evaluate(_FIT_JS)
    # (Messages spelled out: this module's asserts are not rewritten by pytest, it is not a test module.)
    assert WINDOW[0] == 1280 == found["width"], f"the window is {found['width']} px wide"
    assert found["page"] <= found["width"], f"the page scrolls sideways: {found['page']} px of {found['width']}"
    overflowing = [box for box in found["boxes"] if box["scroll"] > box["client"] + 1]
    assert not overflowing, f"wider than their box: {overflowing}"
    untitled = [cell for cell in found["cut"] if not cell["text"] or cell["text"] not in cell["title"]]
    assert not untitled, f"cut without the whole text in the title: {untitled}"
    figures = [cell["text"] for cell in found["cut"] if _FIGURE.match(cell["text"])]
    assert not figures, f"figures cut short: {figures}"


def drawn_traces(page: Page) -> list[dict[str, Any]]:
    traces: list[dict[str, Any]] = page.evaluate(_TRACES_JS)
    return traces


def check_legend_styles(page: Page) -> list[dict[str, Any]]:
    """Every marker kind drawn in the legend's symbol and colour (a kind the legend does not know in its unknown
    style), every outcome in its colour and pattern; one trace per kind and per outcome, named by it; no two kinds
    drawn share a symbol. Returns the traces."""
    traces = drawn_traces(page)
    twice = [name for name, n in Counter(t["name"] for t in traces).items() if n > 1]
    assert not twice, f"more than one trace for {twice}"
    markers = [t for t in traces if t["type"] == "scatter"]
    for trace in markers:
        style = legend.marker(trace["name"])
        drawn = (trace["symbol"], trace["color"])
        assert (style.symbol, style.color) == drawn, f"{trace['name']} drawn as {drawn}, the legend says {style}"
    known = [t for t in markers if t["name"] in legend.FAULTS]
    shared = [s for s, n in Counter(t["symbol"] for t in known).items() if n > 1]
    assert not shared, f"symbols drawn for more than one kind: {shared}"
    for trace in traces:
        if trace["type"] == "bar" and trace["name"] != "in flight":
            span = legend.outcome(trace["name"])
            filled = (trace["color"], trace["pattern"])
            assert (span.color, span.pattern) == filled, f"{trace['name']} drawn as {filled}, the legend says {span}"
    return traces
