// report.html's script: draws the figures, opens a failing report on its violation, and follows cause and effect.
//
// Clicking any bar or marker of a timeline selects it: everything on its chain (what led to it and what it led
// to, walking the run's links both ways as seglog_report.causes.chain does) stays, the rest is dimmed, and the
// panel under the timeline says why the selected snapshot waited and lists the links. Escape or "clear" ends it.
//
// For tests: window.seglogReady turns true once every plot is drawn; window.seglogReport is the page's summary;
// window.seglogSelection is {run, id, chain: [ids], why} after a selection (null when none);
// window.seglogSelect(run, id) selects as a click does.
(function () {
  "use strict";
  const figures = JSON.parse(document.getElementById("seglog-figures").textContent);
  const graphs = JSON.parse(document.getElementById("seglog-graphs").textContent);
  const seeds = JSON.parse(document.getElementById("seglog-seeds").textContent);
  window.seglogReport = JSON.parse(document.getElementById("seglog-summary").textContent);
  window.seglogSelection = null;
  const DIM = 0.12;

  // The ids on start's chains, as seglog_report.causes.chain finds them (a browser test holds the two equal):
  // start and its loose ties (links of no chain), the whole chain of every Snapshot entry one of those is on, then
  // the loose ties of all of them.
  function chain(links, start) {
    const loose = new Map();
    const members = new Map();
    const chainsOf = new Map();
    const add = (map, key, value) => { if (!map.has(key)) map.set(key, new Set()); map.get(key).add(value); };
    links.forEach(([from, to, , k]) => {
      if (k) {
        add(members, k, from); add(members, k, to); add(chainsOf, from, k); add(chainsOf, to, k);
      } else {
        add(loose, from, to); add(loose, to, from);
      }
    });
    const found = new Set([start, ...(loose.get(start) || [])]);
    const keys = new Set();
    found.forEach((item) => (chainsOf.get(item) || []).forEach((k) => keys.add(k)));
    keys.forEach((k) => members.get(k).forEach((item) => found.add(item)));
    Array.from(found).forEach((item) => (loose.get(item) || []).forEach((other) => found.add(other)));
    return found;
  }

  function text(tag, content, cls) {
    const el = document.createElement(tag);
    el.textContent = content;
    if (cls) el.className = cls;
    return el;
  }

  function select(run, id) {
    const graph = graphs[run];
    const el = document.getElementById("timeline-" + run);
    if (!graph || !el) return null;
    const on = chain(graph.links, id);
    const traces = [];
    const opacity = [];
    el.data.forEach((trace, i) => {
      if (!Array.isArray(trace.customdata)) return;
      traces.push(i);
      opacity.push(trace.customdata.map((c) => (on.has(c) ? 1 : DIM)));
    });
    Plotly.restyle(el, { "marker.opacity": opacity }, traces);
    const why = [];
    [id, ...Array.from(on).filter((c) => c !== id)].forEach((c) => { if (graph.waits[c]) why.push([c, graph.waits[c]]); });
    const panel = document.getElementById("why-" + run);
    panel.replaceChildren();
    panel.appendChild(text("h3", "Selected: " + (graph.labels[id] || id)));
    why.slice(0, 5).forEach(([c, w]) => panel.appendChild(text("p", (graph.labels[c] || c) + " — " + w, "wait")));
    const list = document.createElement("ol");
    const listed = new Set();  // a link serving two snapshots' chains is in the data once per chain: listed once
    graph.links.filter(([from, to]) => on.has(from) && on.has(to) && !listed.has(from + ">" + to)
                       && listed.add(from + ">" + to)).slice(0, 80).forEach(([from, to, reason]) => {
      list.appendChild(text("li", (graph.labels[from] || from) + " → " + (graph.labels[to] || to) + ": " + reason));
    });
    panel.appendChild(text("p", on.size + " event(s) on its chain; the rest are dimmed. Press Escape or "
                                + "click \u201cclear\u201d to see them all.", "hint"));
    panel.appendChild(list);
    const clear = text("button", "clear");
    clear.addEventListener("click", () => unselect(run));
    panel.appendChild(clear);
    panel.hidden = false;
    window.seglogSelection = { run: run, id: id, chain: Array.from(on), why: why.map(([, w]) => w) };
    return window.seglogSelection;
  }

  function unselect(run) {
    const el = document.getElementById("timeline-" + run);
    const traces = [];
    el.data.forEach((trace, i) => { if (Array.isArray(trace.customdata)) traces.push(i); });
    Plotly.restyle(el, { "marker.opacity": 1 }, traces);
    document.getElementById("why-" + run).hidden = true;
    window.seglogSelection = null;
  }
  window.seglogSelect = select;

  function showSeed(seed) {
    const row = seeds.rows.find((r) => String(r.seed) === String(seed));
    const panel = document.getElementById("seed-detail");
    if (!row || !panel) return;
    panel.replaceChildren();
    const table = document.createElement("table");
    const rows = [["seed", row.seed], ["verdict", row.ok ? "ok" : "FAILED"],
                  ["faults fired", row.faults || 0], ["invocations", row.invocations || 0],
                  ["appends acknowledged", row.acknowledged || 0],
                  ["simulated seconds (modelled)", (row.seconds || 0).toFixed(1)]];
    rows.forEach(([k, v]) => {
      const tr = document.createElement("tr");
      tr.appendChild(text("th", k));
      tr.appendChild(text("td", String(v), "n"));
      table.appendChild(tr);
    });
    panel.appendChild(text("h3", "This seed's figures"));
    panel.appendChild(table);
    (row.violations || []).forEach((v) => panel.appendChild(text("div", v, "violation")));
    const section = document.getElementById("run-" + row.seed);
    if (section && section.querySelector(".timeline")) {
      const link = text("a", "its timeline, below");
      link.href = "#run-" + row.seed;
      panel.appendChild(link);
    } else {
      panel.appendChild(text("p", "Not drawn in this page. Draw it here (the seed runs again, bit for bit):"));
      panel.appendChild(text("code", "seglog report " + seeds.directory + " --seed " + row.seed));
      if (row.replay) {
        panel.appendChild(text("p", "or replay it with its history:"));
        panel.appendChild(text("code", row.replay));
      }
    }
  }

  const drawn = figures.map((f) => Plotly.newPlot(f.id, f.figure.data, f.figure.layout,
                                                  { responsive: true, displaylogo: false }).then((el) => {
    if (!f.id.startsWith("timeline-")) return;
    const run = f.id.slice("timeline-".length);
    el.on("plotly_click", (event) => {
      const point = event.points && event.points[0];
      if (point && typeof point.customdata === "string") select(run, point.customdata);
    });
  }));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && window.seglogSelection) unselect(window.seglogSelection.run);
  });
  const picker = document.getElementById("seed-picker");
  if (picker) {
    picker.addEventListener("change", () => showSeed(picker.value));
    showSeed(picker.value);
  }
  Promise.all(drawn).then(() => {
    const failing = window.seglogReport.opens_on;
    if (failing) { document.getElementById(failing).scrollIntoView(); }
    window.seglogReady = true;
  });
})();
