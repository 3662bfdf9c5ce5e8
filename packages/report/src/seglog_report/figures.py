"""The report's Plotly figures, built from a :class:`~seglog_report.model.RunData`: the timeline (with the run's
time series under it) and the latency distributions. Plotly draws them; this module only says what goes where.

The timeline has one lane per function worker, client, snapshot and operator; spans are horizontal bars (one trace
per outcome, so the legend is the key), markers are points (one trace per kind); every style comes from
:mod:`seglog_report.legend`. Each point carries its span's or marker's id in ``customdata``, so the page can walk
the run's links from a click. Events that led to a violation get a thick red outline, and a failing run's view
opens zoomed on them. A snapshot's bar says why it took as long as it did (:attr:`RunData.waits`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from seglog_report import legend
from seglog_report.model import Ids, Marker, RunData, Series, Span

#: Latency plots, in order, with their titles.
LATENCIES: Final = {
    "append": "client append (acknowledged, with its retries)",
    "snapshot": "Snapshot entry committed -> snapshot complete",
    "stream_hop": "entry committed -> stream router invoked",
    "quiescence": "faults stopped -> quiescent",
}
HIGHLIGHT: Final = "#d62728"
#: The least width a span is drawn with (seconds), so an instant invocation still shows.
MIN_WIDTH: Final = 0.004
#: Fewer samples than this are drawn as points, not a histogram.
FEW: Final = 20
#: Height of one lane, and of one time-series panel, in pixels.
LANE_PX: Final = 26
SERIES_PX: Final = 150
#: What the time series of each unit are (a panel per unit): a shard's iterator age, a queue's depth.
SERIES_AXES: Final = {"s": "iterator age", "messages": "queue depth"}


def hover(title: str, ids: Ids, extra: Iterable[str] = ()) -> str:
    rows = [f"<b>{title}</b>", *extra, *(f"{k}: {v}" for k, v in ids.items())]
    return "<br>".join(rows)


def _short_wait(text: str) -> str:
    """A snapshot bar's label: how long it took and the first thing that held it."""
    took, _, parts = text.partition(": ")
    held = next((p for p in parts.split("; ") if not p.startswith(("stream", "queued", "completed"))), "")
    return f"{took.removeprefix('took ')}" + (f": {held.split(',')[0]}" if held else "")


def timeline(run: RunData) -> go.Figure:
    """The run's timeline: lanes top to bottom in :meth:`RunData.lanes` order, then a panel per unit of the
    run's time series (iterator age, queue depth) on the same time axis."""
    lanes = run.lanes()
    units = list(dict.fromkeys(series.unit for series in run.series))
    lanes_px = max(260, LANE_PX * len(lanes) + 80)
    rows = 1 + len(units)
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.04 if rows > 1 else 0.0,
                        row_heights=[lanes_px] + [SERIES_PX] * len(units))
    by_outcome: dict[str, list[Span]] = {}
    for span in run.spans:
        by_outcome.setdefault(span.outcome, []).append(span)
    for outcome, spans in sorted(by_outcome.items(), key=lambda kv: legend.outcome_rank(kv[0])):
        style = legend.outcome(outcome)
        fig.add_trace(go.Bar(
            name=outcome, orientation="h", y=[s.lane for s in spans], base=[s.start for s in spans],
            x=[max(s.end - s.start, MIN_WIDTH) for s in spans], customdata=[s.id for s in spans],
            text=[_short_wait(run.waits[s.id]) if s.id in run.waits else "" for s in spans],
            textposition="inside", insidetextanchor="start", textfont={"size": 10},
            marker={"color": style.color, "pattern": {"shape": style.pattern, "fgcolor": "rgba(0,0,0,0.45)",
                                                      "size": 6},
                    "line": {"color": [HIGHLIGHT if s.highlight else "rgba(0,0,0,0.35)" for s in spans],
                             "width": [3 if s.highlight else 0.5 for s in spans]}},
            hovertext=[hover(f"{s.outcome}: {s.label}", s.ids,
                             [f"{s.start:.3f}s -> {s.end:.3f}s ({s.end - s.start:.3f}s)",
                              *([run.waits[s.id]] if s.id in run.waits else [])]) for s in spans],
            hovertemplate="%{hovertext}<extra></extra>", legendgroup="spans", legendgrouptitle_text="outcomes"),
            row=1, col=1)
    by_kind: dict[str, list[Marker]] = {}
    for marker in run.markers:
        by_kind.setdefault(marker.kind, []).append(marker)
    for kind, markers in sorted(by_kind.items()):
        look = legend.marker(kind)
        fig.add_trace(go.Scatter(
            name=kind, mode="markers", y=[m.lane for m in markers], x=[m.at for m in markers],
            customdata=[m.id for m in markers],
            marker={"symbol": look.symbol, "color": look.color,
                    "size": [15 if m.highlight else 11 for m in markers],
                    "line": {"width": [2.5 if m.highlight else 1 for m in markers],
                             "color": [HIGHLIGHT if m.highlight else "#ffffff" for m in markers]}},
            hovertext=[hover(f"{m.kind}: {m.label}", m.ids, [f"at {m.at:.3f}s"]) for m in markers],
            hovertemplate="%{hovertext}<extra></extra>", legendgroup="markers", legendgrouptitle_text="faults"),
            row=1, col=1)
    for series in run.series:
        row = 2 + units.index(series.unit)
        fig.add_trace(go.Scatter(
            name=series.name, mode="lines", x=[t for t, _ in series.points], y=[v for _, v in series.points],
            line={"shape": "hv", "width": 1.5}, legendgroup="series",
            legendgrouptitle_text="modelled series" if series.basis == "modelled" else "measured series",
            hovertemplate=f"{series.name}: %{{y}} {series.unit} at %{{x:.2f}}s<extra></extra>"), row=row, col=1)
        fig.update_yaxes(title_text=_series_title(series), row=row, col=1, rangemode="tozero")
    unit = "simulated seconds" if run.clock == "simulated" else "seconds"
    fig.update_xaxes(title_text=f"{unit} since the run started", row=rows, col=1)
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(lanes)), automargin=True, fixedrange=True,
                     title_text="lane", row=1, col=1)
    layout: dict[str, Any] = {
        "barmode": "overlay", "height": lanes_px + SERIES_PX * len(units) + 90,
        "margin": {"l": 10, "r": 10, "t": 30, "b": 40}, "uniformtext": {"minsize": 8, "mode": "hide"},
        "legend": {"orientation": "v", "groupclick": "toggleitem"}, "hovermode": "closest", "clickmode": "event",
    }
    focus = violation_window(run)
    if focus is not None:
        fig.update_xaxes(range=list(focus))
        for violation in run.violations:
            if violation.at is not None:
                fig.add_vline(x=violation.at, line={"color": HIGHLIGHT, "dash": "dash"},
                              annotation_text=violation.invariant or "violation", annotation_position="top",
                              row=1, col=1)
    fig.update_layout(**layout)
    return fig


def _series_title(series: Series) -> str:
    """A series panel's axis title: what its unit measures (one panel per unit), and whether it is modelled."""
    what = SERIES_AXES.get(series.unit, series.unit)
    return f"{what} ({series.unit})" + (" (modelled)" if series.basis == "modelled" else "")


def violation_window(run: RunData) -> tuple[float, float] | None:
    """Where a failing run's timeline opens: around the highlighted events and the violation's moment."""
    if run.ok:
        return None
    times = [t for s in run.spans if s.highlight for t in (s.start, s.end)]
    times += [m.at for m in run.markers if m.highlight]
    times += [v.at for v in run.violations if v.at is not None]
    if not times:
        return None
    lo, hi = min(times), max(times)
    pad = max(0.5, (hi - lo) * 0.1)
    return max(0.0, lo - pad), hi + pad


def latencies(runs: list[RunData]) -> go.Figure | None:
    """Every latency the runs measured, one panel per kind (None when none did): a histogram with a count axis
    when there are :data:`FEW` samples or more, each sample as a point when fewer; every title says how many."""
    kinds = [k for k in LATENCIES if any(run.latencies.get(k) for run in runs)]
    if not kinds:
        return None
    simulated = any(run.clock == "simulated" for run in runs)
    cols = 2 if len(kinds) > 1 else 1
    rows = (len(kinds) + cols - 1) // cols
    values = {k: [v for run in runs for v in run.latencies.get(k, [])] for k in kinds}
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[
        f"{LATENCIES[k]} (n={len(values[k])}{', simulated seconds' if simulated else ''})" for k in kinds])
    for n, kind in enumerate(kinds):
        found = values[kind]
        at = {"row": n // cols + 1, "col": n % cols + 1}
        if len(found) >= FEW:
            fig.add_trace(go.Histogram(x=found, name=kind, nbinsx=min(40, max(5, len(found) // 3)),
                                       hovertemplate="%{x}s: %{y}<extra>" + kind + "</extra>"), **at)
            fig.update_yaxes(title_text="samples", **at)
        else:
            fig.add_trace(go.Scatter(x=found, y=[(i % 5) / 4 for i in range(len(found))], mode="markers",
                                     name=kind, marker={"size": 9, "symbol": "circle", "color": legend.BLUE},
                                     hovertemplate="%{x}s<extra>" + kind + "</extra>"), **at)
            fig.update_yaxes(title_text="each sample", showticklabels=False, range=[-0.5, 1.5], **at)
        fig.update_xaxes(title_text="simulated seconds" if simulated else "seconds", rangemode="tozero", **at)
    fig.update_layout(height=300 * rows, showlegend=False, margin={"l": 10, "r": 10, "t": 40, "b": 40})
    return fig
