"""The report's Plotly figures, built from a :class:`~seglog_report.model.RunData`: the timeline and the
latency distributions. Plotly draws them; this module only says what goes where.

The timeline has one lane per function worker, client, snapshot and operator; spans are horizontal bars
(one trace per outcome, so the legend is the colour key), markers are points (one trace per kind). Events that
led to a violation get a thick red outline, and a failing run's view opens zoomed on them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from seglog_report.model import OUTCOME_COLOURS, Ids, Marker, RunData, Span

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
MARKER_SYMBOLS: Final = ("x", "triangle-down", "diamond", "star", "cross", "triangle-up", "square", "hexagon")


def hover(title: str, ids: Ids, extra: Iterable[str] = ()) -> str:
    rows = [f"<b>{title}</b>", *extra, *(f"{k}: {v}" for k, v in ids.items())]
    return "<br>".join(rows)


def timeline(run: RunData) -> go.Figure:
    """The run's timeline: lanes top to bottom in :meth:`RunData.lanes` order."""
    lanes = run.lanes()
    fig = go.Figure()
    by_outcome: dict[str, list[Span]] = {}
    for span in run.spans:
        by_outcome.setdefault(span.outcome, []).append(span)
    for outcome, spans in sorted(by_outcome.items(), key=lambda kv: _outcome_rank(kv[0])):
        fig.add_trace(go.Bar(
            name=outcome, orientation="h", y=[s.lane for s in spans], base=[s.start for s in spans],
            x=[max(s.end - s.start, MIN_WIDTH) for s in spans],
            marker={"color": OUTCOME_COLOURS.get(outcome, "#aec7e8"),
                    "line": {"color": [HIGHLIGHT if s.highlight else "rgba(0,0,0,0.25)" for s in spans],
                             "width": [3 if s.highlight else 0.5 for s in spans]}},
            customdata=[hover(f"{s.outcome}: {s.label}", s.ids,
                              [f"{s.start:.3f}s -> {s.end:.3f}s ({s.end - s.start:.3f}s)"]) for s in spans],
            hovertemplate="%{customdata}<extra></extra>", legendgroup="spans", legendgrouptitle_text="spans"))
    by_kind: dict[str, list[Marker]] = {}
    for marker in run.markers:
        by_kind.setdefault(marker.kind, []).append(marker)
    for n, (kind, markers) in enumerate(sorted(by_kind.items())):
        fig.add_trace(go.Scatter(
            name=kind, mode="markers", y=[m.lane for m in markers], x=[m.at for m in markers],
            marker={"symbol": MARKER_SYMBOLS[n % len(MARKER_SYMBOLS)], "size": [14 if m.highlight else 9
                                                                             for m in markers],
                    "color": [HIGHLIGHT if m.highlight else "#222" for m in markers], "line": {"width": 1}},
            customdata=[hover(f"{m.kind}: {m.label}", m.ids, [f"at {m.at:.3f}s"]) for m in markers],
            hovertemplate="%{customdata}<extra></extra>", legendgroup="markers", legendgrouptitle_text="faults"))
    unit = "simulated seconds" if run.clock == "simulated" else "seconds"
    layout: dict[str, Any] = {
        "barmode": "overlay", "height": max(320, 26 * len(lanes) + 140), "margin": {"l": 10, "r": 10, "t": 30, "b": 40},
        "xaxis": {"title": {"text": f"{unit} since the run started"}, "rangeslider": {"visible": True,
                                                                                      "thickness": 0.06}},
        "yaxis": {"categoryorder": "array", "categoryarray": list(reversed(lanes)), "automargin": True,
                  "fixedrange": True},
        "legend": {"orientation": "v", "groupclick": "toggleitem"}, "hovermode": "closest",
    }
    focus = violation_window(run)
    if focus is not None:
        layout["xaxis"]["range"] = list(focus)
        for violation in run.violations:
            if violation.at is not None:
                fig.add_vline(x=violation.at, line={"color": HIGHLIGHT, "dash": "dash"},
                              annotation_text=violation.invariant or "violation", annotation_position="top")
    fig.update_layout(**layout)
    return fig


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
    """Histograms of every latency the runs measured, one panel per kind (None when none did)."""
    kinds = [k for k in LATENCIES if any(run.latencies.get(k) for run in runs)]
    if not kinds:
        return None
    cols = 2 if len(kinds) > 1 else 1
    rows = (len(kinds) + cols - 1) // cols
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[LATENCIES[k] for k in kinds])
    for n, kind in enumerate(kinds):
        values = [v for run in runs for v in run.latencies.get(kind, [])]
        fig.add_trace(go.Histogram(x=values, name=kind, nbinsx=min(40, max(5, len(values) // 3)),
                                   hovertemplate="%{x}s: %{y}<extra>" + kind + "</extra>"),
                      row=n // cols + 1, col=n % cols + 1)
        fig.update_xaxes(title_text="seconds", row=n // cols + 1, col=n % cols + 1)
    fig.update_layout(height=280 * rows, showlegend=False, margin={"l": 10, "r": 10, "t": 40, "b": 40})
    return fig


def _outcome_rank(outcome: str) -> int:
    order = list(OUTCOME_COLOURS)
    return order.index(outcome) if outcome in order else len(order)
