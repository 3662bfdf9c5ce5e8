// The live console's page: keeps the state the server pushes (/events, server-sent events) and draws it with
// Plotly — one horizontal bar per invocation or client try on its lane, markers for faults, crash points and
// restarts — plus small tables. It draws only after a push changed something.
//
// Every style comes from the legend the server embeds (seglog_report.legend, the report's own visual language):
// a marker kind is its symbol and colour, an outcome its colour and fill pattern, looked up by name and set on
// each trace, never left to Plotly's colour cycle, so a kind looks the same in every push, every screenshot
// and in report.html. One trace per outcome and per marker kind, named by it, in a fixed order.
//
// For tests: window.seglogState is the last state drawn, window.seglogDrawn what went into the timeline,
// window.seglogReady turns true once the first state has been drawn.
(function () {
  "use strict";
  const config = JSON.parse(document.getElementById("seglog-config").textContent);
  const LEGEND = config.legend;
  const GROUPS = config.groups;
  const OUTCOME_ORDER = Object.keys(LEGEND.outcomes);
  const markerStyle = (kind) => LEGEND.faults[kind] || LEGEND.unknown_fault;
  const spanStyle = (outcome) => LEGEND.outcomes[outcome] || LEGEND.unknown_outcome;
  // Invocations still running: the colour of an incomplete one, with a pattern no outcome has.
  const IN_FLIGHT = spanStyle("in_flight");
  const outcomeRank = (outcome) => (OUTCOME_ORDER.indexOf(outcome) < 0 ? OUTCOME_ORDER.length
                                                                        : OUTCOME_ORDER.indexOf(outcome));
  const DRAW_MS = 250;

  let state = null;
  let source = null;
  let timer = null;
  let lastDraw = 0;
  window.seglogReady = false;

  function setStatus(text, cls) {
    const el = document.getElementById("status");
    el.textContent = text;
    el.className = cls || "";
  }

  function connect() {
    if (source !== null) source.close();
    source = new EventSource("events");
    source.addEventListener("state", (e) => {
      state = JSON.parse(e.data);
      schedule();
      setStatus("live", "live");
    });
    source.addEventListener("delta", (e) => {
      const delta = JSON.parse(e.data);
      if (state === null || delta.seq !== state.seq + 1) {
        connect(); // a push was missed: start again from a fresh state
        return;
      }
      const items = state.items.concat(delta.items).filter((item) => item.n >= delta.low);
      state = Object.assign({}, state, delta, { items: items });
      schedule();
    });
    source.onerror = () => setStatus("reconnecting…", "down");
  }

  // ------------------------------------------------------------------------------------------ timeline

  function lanes(items, inFlight) {
    const rank = (group) => (GROUPS.indexOf(group) < 0 ? GROUPS.length : GROUPS.indexOf(group));
    const seen = new Map();
    items.forEach((item, i) => { if (!seen.has(item.lane)) seen.set(item.lane, [rank(item.group), i]); });
    inFlight.forEach((f, i) => { if (!seen.has(f.lane)) seen.set(f.lane, [rank("function"), items.length + i]); });
    return Array.from(seen.keys()).sort((a, b) => seen.get(a)[0] - seen.get(b)[0] || seen.get(a)[1] - seen.get(b)[1]);
  }

  function groupBy(list, key) {
    const found = new Map();
    list.forEach((x) => {
      const k = key(x);
      if (!found.has(k)) found.set(k, []);
      found.get(k).push(x);
    });
    return found;
  }

  function hover(thing, title) {
    const ids = Object.entries(thing.ids || {}).map(([k, v]) => k + ": " + v);
    return [title].concat(ids).join("<br>");
  }

  // A marker's hover names its kind, then what happened (unless the label already says the kind).
  function markerTitle(m) {
    return m.label && m.label.indexOf(m.kind) < 0 ? m.kind + ": " + m.label : m.label || m.kind;
  }

  function barMarker(style) {
    return { color: style.color, line: { color: "rgba(0,0,0,0.35)", width: 0.5 },
             pattern: { shape: style.pattern || "", fgcolor: "rgba(0,0,0,0.45)", size: 6 } };
  }

  function traces(s) {
    const spans = s.items.filter((item) => item.type === "span");
    const markers = s.items.filter((item) => item.type === "marker");
    const found = [];
    const byOutcome = Array.from(groupBy(spans, (x) => x.outcome).entries())
      .sort((a, b) => outcomeRank(a[0]) - outcomeRank(b[0]) || (a[0] < b[0] ? -1 : 1));
    byOutcome.forEach(([outcome, list]) => {
      found.push({ type: "bar", orientation: "h", name: outcome, legendgroup: "outcomes",
                   legendgrouptitle: { text: "outcomes" }, y: list.map((x) => x.lane),
                   base: list.map((x) => x.start), x: list.map((x) => Math.max(x.end - x.start, 0.002)),
                   marker: barMarker(spanStyle(outcome)), hovertext: list.map((x) => hover(x, x.label || x.outcome)),
                   hoverinfo: "text", customdata: list.map((x) => x.n) });
    });
    if (s.in_flight.length) {
      found.push({ type: "bar", orientation: "h", name: "in flight", legendgroup: "outcomes",
                   legendgrouptitle: { text: "outcomes" }, y: s.in_flight.map((f) => f.lane),
                   base: s.in_flight.map((f) => f.start),
                   x: s.in_flight.map((f) => Math.max(s.now - f.start, 0.002)), marker: barMarker(IN_FLIGHT),
                   hovertext: s.in_flight.map((f) => f.function + " in flight<br>request_id: " + f.request_id),
                   hoverinfo: "text" });
    }
    const byKind = Array.from(groupBy(markers, (x) => x.kind).entries()).sort((a, b) => (a[0] < b[0] ? -1 : 1));
    byKind.forEach(([kind, list]) => {
      const style = markerStyle(kind);
      found.push({ type: "scatter", mode: "markers", name: kind, legendgroup: "markers",
                   legendgrouptitle: { text: "faults and events" }, x: list.map((x) => x.at),
                   y: list.map((x) => x.lane), hovertext: list.map((x) => hover(x, markerTitle(x))),
                   hoverinfo: "text", customdata: list.map((x) => x.n),
                   marker: { symbol: style.symbol, color: style.color, size: 11,
                             line: { color: "#ffffff", width: 1 } } });
    });
    return { traces: found, spans: spans.length, markers: markers.length };
  }

  function drawTimeline(s) {
    const drawn = traces(s);
    const order = lanes(s.items, s.in_flight);
    // Tall enough for its lanes, and for the whole legend (a trace each, and the two group titles).
    const height = Math.max(320, 26 * order.length + 140, 20 * (drawn.traces.length + 2) + 70);
    const layout = {
      barmode: "overlay", bargap: 0.25, showlegend: true, legend: { groupclick: "toggleitem" }, height: height,
      margin: { l: 230, r: 20, t: 20, b: 50 }, uirevision: "keep",
      xaxis: { title: { text: "seconds since the console started" }, zeroline: false },
      yaxis: { type: "category", categoryorder: "array", categoryarray: order, autorange: "reversed" },
    };
    Plotly.react("timeline", drawn.traces, layout, { displaylogo: false, responsive: true });
    return { seq: s.seq, lanes: order, spans: drawn.spans, markers: drawn.markers };
  }

  // ------------------------------------------------------------------------------------------ panels

  // Every table is laid out fixed (table-layout: fixed) in the columns ``cols`` gives: a CSS width for a column of
  // figures, null for one that shares the rest. A cell never widens its panel: a long text ends in an ellipsis
  // and carries the whole of it in its title. A cell is a value, or {text, title, span, wrap, long} (span: columns
  // it takes; wrap: a list of texts that wraps between its items, never inside one; long: a message that wraps
  // anywhere, an error say). rowClass(i) names a row's class.
  function table(id, cols, rows, empty, rowClass) {
    const el = document.getElementById(id);
    el.replaceChildren();
    const group = document.createElement("colgroup");
    cols.forEach((width) => {
      const col = document.createElement("col");
      if (width) col.style.width = width;
      group.appendChild(col);
    });
    el.appendChild(group);
    if (!rows.length) {
      const td = el.insertRow().insertCell();
      td.textContent = empty || "none";
      td.className = "empty";
      td.colSpan = cols.length;
      return;
    }
    rows.forEach((row, r) => {
      const tr = el.insertRow();
      if (rowClass && rowClass(r)) tr.className = rowClass(r);
      row.forEach((value, i) => {
        const td = tr.insertCell();
        const cell = value !== null && typeof value === "object" ? value : { text: value };
        if (cell.wrap) {
          td.className = "wrap";
          cell.wrap.forEach((part, k) => {
            const item = document.createElement("span");
            item.textContent = part + (k < cell.wrap.length - 1 ? "," : "");
            td.appendChild(item);
            if (k < cell.wrap.length - 1) td.appendChild(document.createTextNode(" "));
          });
        } else {
          td.textContent = cell.text === null || cell.text === undefined ? "" : String(cell.text);
          if (i > 0 && typeof cell.text === "number") td.className = "n";
          if (cell.long) td.className = "long";
        }
        td.title = cell.title || td.textContent;
        if (cell.span) td.colSpan = cell.span;
      });
    });
  }

  const sorted = (obj) => Object.entries(obj || {}).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const total = (obj) => Object.values(obj || {}).reduce((a, b) => a + b, 0);

  function drawPanels(s) {
    const p = s.panels;
    const stack = p.stack || {};
    const queueRows = Object.entries(stack.queues || {}).map(([name, q]) => [name, q.visible + " visible",
                                                                             q.in_flight + " in flight"]);
    Object.entries(p.pollers).filter(([, f]) => f.service === "sqs").forEach(([name, f]) => {
      queueRows.push([name, "oldest " + (f.oldest_age_ms / 1000).toFixed(1) + " s", f.requests + " requests"]);
    });
    (stack.errors || []).forEach((e) => queueRows.push(["error", { text: e, span: 2, long: true }]));
    table("queues", [null, "9em", "9em"], queueRows, "no queue figures yet");
    // A shard the aggregator marks stalled (its age past a minute and still growing) is flagged in its row and
    // counted in the banner. A shard id shows its last 14 characters, the whole id in its title.
    const shards = Object.entries(p.iterator_age);
    table("shards", ["10em", null, "7em", "5em"],
          shards.map(([shard, f]) => [{ text: shard.slice(-14), title: shard }, f.poller, f.age_ms + " ms",
                                      f.stalled ? "stalled" : ""]),
          "no stream figures yet", (r) => (shards[r][1].stalled ? "stalled" : ""));
    const stalled = p.stalled_shards || [];
    const banner = document.getElementById("stalled");
    banner.hidden = stalled.length === 0;
    banner.textContent = stalled.length + " stream shard" + (stalled.length === 1 ? "" : "s") +
      " stalled (iterator age past a minute and growing): " + stalled.map((s) => s.slice(-14)).join(", ");
    table("in-flight", [null, "4em"], sorted(p.in_flight));
    const pending = sorted(stack.pending).map(([log, n]) => [log, n]);
    if (stack.pending_total !== undefined) pending.unshift(["total", stack.pending_total]);
    table("pending", [null, "5em"], pending, "none pending");
    table("faults", [null, "4em"],
          sorted(p.faults).concat(sorted(p.crash_points).map(([k, n]) => ["crash point " + k, n])), "no faults");
    const cost = p.cost;
    const bill = (cost.rows || []).slice(1).map((row) => [(row[0] + " " + row[1]).trim(), row[2] + " " + row[3], row[5]]);
    if (cost.per_million_appends !== null && cost.per_million_appends !== undefined) {
      bill.push(["per million appends", "", "$" + cost.per_million_appends.toFixed(2)]);
    }
    if (cost.error) bill.push(["unpriced", { text: cost.error, span: 2, long: true }]);
    table("cost", [null, "11em", "9em"], bill, "nothing metered yet");
    // Per function: its outcomes (a list that wraps between outcomes) and how many invocations in all.
    table("invocations", ["40%", null, "4em"],
          Object.entries(p.invocations).sort((a, b) => total(b[1]) - total(a[1]) || (a[0] < b[0] ? -1 : 1))
            .map(([f, outcomes]) => [f, { wrap: sorted(outcomes).map(([o, n]) => o + " " + n) }, total(outcomes)]),
          "no invocations yet");
    table("jobs", [null, "4em"], sorted(p.jobs).concat([["routed", p.routed], ["child restarts", p.restarts]]));
    table("feed", [null, "6em"], [["received", p.feed.received], ["malformed", p.feed.malformed],
                                  ["kept", p.feed.retained], ["rolled into totals", p.feed.evicted]]);
    document.getElementById("clock").textContent = "t = " + s.now.toFixed(1) + " s";
  }

  // A push asks for a drawing; pushes that come faster than DRAW_MS apart are drawn together.
  function schedule() {
    if (timer === null) timer = window.setTimeout(draw, Math.max(0, DRAW_MS - (Date.now() - lastDraw)));
  }

  function draw() {
    timer = null;
    lastDraw = Date.now();
    const drawn = drawTimeline(state);
    drawPanels(state);
    window.seglogState = state;
    window.seglogDrawn = drawn;
    window.seglogReady = true;
  }

  connect();
})();
