"""``report.html``: one self-contained page per command (Plotly's script embedded, nothing fetched), with a
section per run — its verdict, violations and replay command, its timeline with the legend's key and the panel
that explains a selection, its counters — a simulate campaign's seed picker, the latency plots and the cost
ledger. A failing report opens on its first failing run, zoomed on the events that led to the violation.

The script (:file:`report.js`) sets ``window.seglogReady`` once every plot is drawn, ``window.seglogReport`` to
what the page shows (lanes, markers and ledger figures per run), and ``window.seglogSelection`` to the chain a
click selected, so a browser test can compare the page with the run's data.
"""

from __future__ import annotations

import html
import json
import shlex
import time
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any, Final

import msgspec
import plotly.io
import plotly.offline

from seglog_report import figures, legend
from seglog_report.cost import Ledger, ledger
from seglog_report.model import Report, RunData, SeedRow, encode

#: Runs drawn with a timeline: every failing one and the first few others (a simulate campaign has thousands).
MAX_TIMELINES: Final = 8

STYLE: Final = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5em 3em; color: #222; }
header { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #ddd; padding: .5em 0; z-index: 10; }
h1 { font-size: 1.3em; margin: .2em 0; } h2 { font-size: 1.1em; margin-top: 1.5em; }
.ok { color: #2a7d2a; } .fail { color: #c62828; }
section.run { border-top: 2px solid #eee; scroll-margin-top: 7em; } section.run.failing { border-top-color: #c62828; }
.violation { background: #fdecea; border-left: 4px solid #c62828; padding: .4em .8em; margin: .5em 0; }
code, pre { font: 12px ui-monospace, monospace; } pre { background: #f6f6f6; padding: .6em; overflow-x: auto; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: .2em .7em; border-bottom: 1px solid #eee; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
nav a { margin-right: .8em; }
.key { font-size: 12px; color: #444; margin: .2em 0; } .key span.swatch { display: inline-block; width: .9em;
  height: .9em; vertical-align: -0.1em; margin: 0 .25em 0 .8em; border: 1px solid #0003; }
.why { background: #f4f8fb; border-left: 4px solid #0072B2; padding: .3em .8em; margin: .4em 0; max-height: 24em;
  overflow-y: auto; overflow-wrap: anywhere; } .why h3 { font-size: 1em; margin: .3em 0; } .why li { margin: .1em 0; }
.why .wait { font-weight: 600; } .hint { color: #555; font-size: 12px; }
.modelled { background: #fff7e0; border-left: 4px solid #E69F00; padding: .3em .8em; }
.timeline { width: 100%; } section { max-width: 100%; overflow-wrap: anywhere; }
#seed-detail table { margin-left: 0; }
"""

#: What the page runs (:file:`report.js`).
SCRIPT: Final = resources.files("seglog_report").joinpath("report.js").read_text()
#: Said next to every figure the simulator models rather than measures.
MODELLED: Final = ("Modelled, not measured: these are simulated seconds, and the ledger prices them as if they "
                   "were Lambda's billed duration; requests and units are counted from the simulator's model of "
                   "DynamoDB, S3 and SQS. A chaos run's ledger measures them.")


def render(report: Report, ledger: Ledger | None = None, directory: Path | None = None) -> str:
    """The page for ``report`` with its cost ledger (``directory``: where it is written, for the commands it
    shows)."""
    drawn = _drawn_runs(report.runs)
    figs: list[dict[str, Any]] = []
    sections = []
    graphs = {}
    for run in report.runs:
        if run in drawn:
            figs.append({"id": f"timeline-{run.run}", "figure": json.loads(plotly.io.to_json(figures.timeline(run)))})
            graphs[str(run.run)] = _graph(run)
        sections.append(_run_section(run, drawn=run in drawn))
    lat = figures.latencies(report.runs)
    if lat is not None:
        figs.append({"id": "latencies", "figure": json.loads(plotly.io.to_json(lat))})
    modelled = any(run.clock == "simulated" for run in report.runs) or report.kind == "simulate"
    created = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(report.created_at))
    body = [
        f"<header><h1>{html.escape(report.title)}</h1><div>{_verdict(report)} &middot; <code>"
        f"{html.escape(report.command)}</code> &middot; {created}</div><nav>{_nav(report)} <a href=\"#latency\">"
        "latency</a> <a href=\"#ledger\">cost</a></nav></header>",
        _seeds_section(report.seeds, drawn),
        *sections,
        '<section id="latency"><h2>Latency</h2>'
        + (f'<p class="modelled">{MODELLED}</p>' if modelled and lat is not None else "")
        + ('<div id="latencies"></div>' if lat is not None else "<p>No latencies measured.</p>") + "</section>",
        _ledger_section(ledger, modelled=modelled),
    ]
    if report.text:
        body.append(f"<section><h2>Text report</h2><pre>{html.escape(report.text)}</pre></section>")
    summary = _summary(report, drawn, ledger)
    seeds = {"rows": msgspec.to_builtins(report.seeds), "directory": shlex.quote(str(directory or "DIR"))}
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(report.title)}</title><style>{STYLE}</style>",
        f"<script>{plotly.offline.get_plotlyjs()}</script></head><body>",
        *body,
        f'<script type="application/json" id="seglog-figures">{_json_for_html(figs)}</script>',
        f'<script type="application/json" id="seglog-graphs">{_json_for_html(graphs)}</script>',
        f'<script type="application/json" id="seglog-seeds">{_json_for_html(seeds)}</script>',
        f'<script type="application/json" id="seglog-summary">{_json_for_html(summary)}</script>',
        f"<script>{SCRIPT}</script></body></html>",
    ])


def _verdict(report: Report) -> str:
    """The header's verdict: of the campaign's seeds when it has them (a simulate page draws only a few)."""
    if report.seeds:
        failing = sum(not row.ok for row in report.seeds)
        drawn = f"; {len(report.runs)} drawn below"
        if not failing:
            return f'<span class="ok">OK</span>: {len(report.seeds):,} seed(s), 0 violations{drawn}'
        return f'<span class="fail">FAILED</span>: {failing:,} of {len(report.seeds):,} seed(s) with violations{drawn}'
    failing_runs = sum(not run.ok for run in report.runs)
    if not failing_runs:
        return f'<span class="ok">OK</span>: {len(report.runs)} run(s), 0 violations'
    return f'<span class="fail">FAILED</span>: {failing_runs} of {len(report.runs)} run(s) with violations'


def _nav(report: Report) -> str:
    failing = [run for run in report.runs if not run.ok]
    ordered = failing + [run for run in report.runs if run.ok]
    links = [f'<a href="#run-{r.run}" class="{"ok" if r.ok else "fail"}">run {r.run} (seed {r.seed})</a>'
             for r in ordered[:40]]
    if report.seeds:
        links.insert(0, '<a href="#seeds">pick a seed</a>')
    return " ".join(links)


def _graph(run: RunData) -> dict[str, Any]:
    """What the page's script needs to follow cause and effect in one run: its links, why each snapshot waited,
    and a short label per id for the selection panel."""
    labels = {span.id: f"{span.lane} [{span.outcome}] {span.start:.2f}-{span.end:.2f} s" for span in run.spans}
    labels.update({m.id: f"{m.kind} on {m.lane} at {m.at:.2f} s" for m in run.markers})
    return {"links": [[link.source, link.target, link.why, link.chain] for link in run.links], "waits": run.waits,
            "labels": labels}


def _seeds_section(rows: list[SeedRow], drawn: list[RunData]) -> str:
    """A simulate campaign's seed picker (failing seeds first), the chosen seed's own figures beside it."""
    if not rows:
        return ""
    shown = {run.seed for run in drawn}
    ordered = sorted(rows, key=lambda row: (row.ok, row.seed))
    options = "".join(
        f'<option value="{row.seed}">seed {row.seed}: {"ok" if row.ok else "FAILED"}'
        f'{" (drawn)" if row.seed in shown else ""}</option>' for row in ordered)
    failing = sum(not row.ok for row in rows)
    return "\n".join([
        '<section id="seeds"><h2>Seeds of the campaign</h2>',
        f"<p>{len(rows):,} seed(s) ran, {failing:,} failing; the page draws {len(drawn)} of them. The campaign's "
        "figures (latency, cost) are for every seed; a seed's own figures are here.</p>",
        f'<label>Pick a seed (failing first): <select id="seed-picker">{options}</select></label>',
        '<div id="seed-detail"></div></section>'])
def write(report: Report, directory: Path, ledger: Ledger | None = None) -> Path:
    """``report.html`` and ``report.json`` in ``directory``; the HTML's path."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_bytes(encode(report))
    path = directory / "report.html"
    path.write_text(render(report, ledger, directory), encoding="utf-8")
    return path


def publish(report: Report, directory: Path) -> tuple[Path, Ledger]:
    """Price the report in its region and write it: the page's path and the ledger."""
    priced = ledger(report.meter(), region=report.region)
    return write(report, directory, priced), priced


def _drawn_runs(runs: list[RunData]) -> list[RunData]:
    failing = [run for run in runs if not run.ok and (run.spans or run.markers)]
    passing = [run for run in runs if run.ok and (run.spans or run.markers)]
    return (failing + passing)[:MAX_TIMELINES] if failing else passing[:MAX_TIMELINES]


def _run_section(run: RunData, *, drawn: bool) -> str:
    status = '<span class="ok">ok</span>' if run.ok else '<span class="fail">FAILED</span>'
    parts = [f'<section class="run{"" if run.ok else " failing"}" id="run-{run.run}">',
             f"<h2>{html.escape(run.title)} &middot; run {run.run} &middot; seed {run.seed} &middot; {status} "
             f"&middot; {run.seconds:.1f} {'simulated ' if run.clock == 'simulated' else ''}s</h2>"]
    for violation in run.violations:
        where = "" if violation.at is None else f" (at {violation.at:.3f}s)"
        parts.append(f'<div class="violation">{html.escape(violation.text)}{where}</div>')
    if run.replay:
        parts.append(f"<div>replay: <code>{html.escape(run.replay)}</code></div>")
    if drawn:
        highlighted = sum(s.highlight for s in run.spans) + sum(m.highlight for m in run.markers)
        if not run.ok:
            parts.append(f"<div>{highlighted} event(s) that led to the violation are outlined in red; the view "
                         "opens on them (double-click the plot for the whole run).</div>")
        parts.append(_key(run))
        parts.append(f'<div id="timeline-{run.run}" class="timeline"></div>')
        parts.append(f'<div id="why-{run.run}" class="why" hidden></div>')
        if run.links:
            parts.append('<p class="hint">Click any bar or marker to follow its cause and effect: the events on '
                         "its chain stay, the rest dim, and a snapshot says why it waited.</p>")
    elif run.spans or run.markers:
        parts.append("<div>(timeline not drawn: only failing runs and the first runs are)</div>")
    if run.summary:
        text = run.summary.get("text")
        counters = {k: v for k, v in run.summary.items() if k != "text"}
        parts.append("<details><summary>counters</summary><pre>"
                     + html.escape(text if isinstance(text, str) else json.dumps(counters, indent=1, default=str))
                     + "</pre></details>")
    parts.append("</section>")
    return "\n".join(parts)


def _key(run: RunData) -> str:
    """The timeline's key, readable without hovering: what each marker colour means (the shapes are in the plot's
    legend, one entry per kind)."""
    colours = {legend.marker(m.kind).color for m in run.markers}
    found = [f'<span class="swatch" style="background:{colour}"></span>{html.escape(family)}'
             for colour, family in legend.FAMILIES.items() if colour in colours]
    if not found:
        return ""
    return ('<div class="key">Fault colours: ' + "".join(found) + "; each kind has its own shape (the legend on "
            "the right). Bars are coloured by outcome.</div>")


def _ledger_section(priced: Ledger | None, *, modelled: bool = False) -> str:
    """The ledger's table as ``seglog cost`` prints it; each line's exact dollars in ``data-dollars``."""
    if priced is None:
        return '<section id="ledger"><h2>Cost</h2><p>No ledger.</p></section>'
    header, *body, total = priced.rows()
    numeric = {2, 4, 5}
    head = "".join(f'<th class="{"n" if n in numeric else ""}">{html.escape(cell)}</th>'
                   for n, cell in enumerate(header))
    rows = []
    for line, cells in zip(priced.lines, body, strict=True):
        rows.append(f'<tr data-item="{html.escape(line.item)}" data-quantity="{line.quantity!r}" '
                    f'data-dollars="{line.dollars!r}">'
                    + "".join(f'<td class="{"n" if n in numeric else ""}">{html.escape(c)}</td>'
                              for n, c in enumerate(cells)) + "</tr>")
    parts = [f'<section id="ledger"><h2>{html.escape(priced.title())}{" (modelled)" if modelled else ""}</h2>',
             *([f'<p class="modelled">{MODELLED}</p>'] if modelled else []),
             f'<table class="ledger"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>',
             f'<tfoot><tr><th colspan="5">{html.escape(total[0])}</th><th class="n" id="ledger-total" '
             f'data-dollars="{priced.total!r}">{html.escape(total[5])}</th><th></th></tr></tfoot></table>']
    parts += [f"<p>{html.escape(sentence)}</p>" for sentence in priced.summary()]
    parts.append("</section>")
    return "\n".join(parts)


def _summary(report: Report, drawn: list[RunData], ledger: Ledger | None) -> dict[str, Any]:
    failing = next((f"run-{r.run}" for r in report.runs if not r.ok), None)
    return {
        "ok": report.ok, "opens_on": failing,
        "runs": [{"run": r.run, "seed": r.seed, "ok": r.ok, "drawn": r in drawn, "lanes": r.lanes(),
                  "spans": len(r.spans), "markers": dict(Counter(m.kind for m in r.markers)),
                  "highlighted": sum(s.highlight for s in r.spans) + sum(m.highlight for m in r.markers),
                  "violations": [v.text for v in r.violations]} for r in report.runs],
        "ledger": None if ledger is None else ledger.to_dict(),
    }


def _json_for_html(value: Any) -> str:
    """JSON safe inside a <script> element (no "</" can close it)."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")
