"""report.html: one offline file, a section per run, the failing run first and zoomed on its violation."""

from __future__ import annotations

import json
import re
from pathlib import Path

from seglog_core.violations import Violation
from seglog_report import figures, html
from seglog_report.cost import ledger
from seglog_report.model import Marker, Meter, Report, RunData, Span, decode


def run(n: int, *, failing: bool = False) -> RunData:
    spans = [Span(lane=f"ApiFunction pid {n}", group="function", start=0.0, end=0.4, outcome="success",
                  ids={"request_id": f"r{n}"}),
             Span(lane="client 0", group="client", start=0.1, end=0.5, outcome="acknowledged"),
             Span(lane="snapshots 3f0c6f7e", group="snapshot", start=2.0, end=9.0, outcome="completed",
                  highlight=failing)]
    markers = [Marker(lane=f"ApiFunction pid {n}", group="function", at=0.2, kind="ddb_5xx", highlight=failing)]
    violations = [Violation(invariant="I3", message="broke", at=9.0)] if failing else []
    return RunData(kind="chaos", title="chaos run", run=n, seed=100 + n, spans=spans, markers=markers,
                   violations=violations, latencies={"append": [0.4, 0.5]}, meter=Meter(appends=1))


def summary(page: str) -> dict[str, object]:
    found = re.search(r'<script type="application/json" id="seglog-summary">(.*?)</script>', page, re.S)
    assert found is not None
    value: dict[str, object] = json.loads(found.group(1))
    return value


def test_the_page_is_self_contained() -> None:
    page = html.render(Report(kind="chaos", title="t", command="seglog chaos", created_at=0, runs=[run(0)]))
    assert "Plotly" in page and len(page) > 3_000_000  # plotly.js itself, inline
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)  # nothing fetched


def test_a_failing_report_opens_on_its_first_failing_run() -> None:
    report = Report(kind="chaos", title="t", command="c", created_at=0, runs=[run(0), run(1, failing=True)])
    page = html.render(report)
    found = summary(page)
    assert found["opens_on"] == "run-1" and found["ok"] is False
    runs = found["runs"]
    assert isinstance(runs, list) and runs[1]["highlighted"] == 2 and runs[0]["highlighted"] == 0
    assert "I3: broke" in page


def test_the_failing_timeline_is_zoomed_on_the_violation_and_lanes_are_grouped() -> None:
    data = run(1, failing=True)
    fig = figures.timeline(data)
    lo, hi = fig.layout.xaxis.range
    assert lo <= 0.2 and hi >= 9.0 and hi < 20
    assert data.lanes() == ["client 0", "ApiFunction pid 1", "snapshots 3f0c6f7e"]
    assert list(fig.layout.yaxis.categoryarray) == list(reversed(data.lanes()))
    assert {t.name for t in fig.data} == {"success", "acknowledged", "completed", "ddb_5xx"}
    assert figures.timeline(run(0)).layout.xaxis.range is None  # a passing run opens on the whole run


def test_write_keeps_the_json_next_to_the_page(tmp_path: Path) -> None:
    report = Report(kind="chaos", title="t", command="c", created_at=0, runs=[run(0)])
    priced = ledger(Meter(dynamodb_write_units=2_000_000, appends=1_000_000))
    path = html.write(report, tmp_path, priced)
    assert path.name == "report.html"
    assert decode((tmp_path / "report.json").read_bytes()) == report
    page = path.read_text()
    assert f'id="ledger-total" data-dollars="{priced.total!r}">$1.25<' in page  # 2M WRU at $0.625 per million
    assert summary(page)["ledger"] == priced.to_dict()
