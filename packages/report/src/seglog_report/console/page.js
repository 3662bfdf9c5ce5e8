// The live console's page: keeps the state the server pushes (/events, server-sent events) and draws it with
// Plotly — one horizontal bar per invocation or client try on its lane, coloured by outcome, markers for
// faults, crash points and restarts — plus small tables. It draws only after a push changed something.
//
// For tests: window.seglogState is the last state drawn, window.seglogDrawn what went into the timeline,
// window.seglogReady turns true once the first state has been drawn.
(function () {
  "use strict";
  const config = JSON.parse(document.getElementById("seglog-config").textContent);
  const COLOURS = config.colours;
  const GROUPS = config.groups;
  const MARKER_SYMBOLS = { "child restart": "diamond", "emulator started": "triangle-right",
                           "emulator stopped": "square" };
  const symbol = (kind) => (kind.startsWith("crash point") ? "star" : MARKER_SYMBOLS[kind] || "x");
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

  function hover(thing) {
    const ids = Object.entries(thing.ids || {}).map(([k, v]) => k + ": " + v);
    return [thing.label || thing.kind || thing.outcome].concat(ids).join("<br>");
  }

  function traces(s) {
    const spans = s.items.filter((item) => item.type === "span");
    const markers = s.items.filter((item) => item.type === "marker");
    const found = [];
    groupBy(spans, (x) => x.outcome).forEach((list, outcome) => {
      found.push({ type: "bar", orientation: "h", name: outcome, y: list.map((x) => x.lane),
                   base: list.map((x) => x.start), x: list.map((x) => Math.max(x.end - x.start, 0.002)),
                   marker: { color: COLOURS[outcome] || "#888888" }, hovertext: list.map(hover), hoverinfo: "text",
                   customdata: list.map((x) => x.n) });
    });
    if (s.in_flight.length) {
      found.push({ type: "bar", orientation: "h", name: "in flight", y: s.in_flight.map((f) => f.lane),
                   base: s.in_flight.map((f) => f.start),
                   x: s.in_flight.map((f) => Math.max(s.now - f.start, 0.002)),
                   marker: { color: COLOURS.incomplete, pattern: { shape: "/" } },
                   hovertext: s.in_flight.map((f) => f.function + " in flight<br>request_id: " + f.request_id),
                   hoverinfo: "text" });
    }
    groupBy(markers, (x) => x.kind).forEach((list, kind) => {
      found.push({ type: "scatter", mode: "markers", name: kind, x: list.map((x) => x.at),
                   y: list.map((x) => x.lane), hovertext: list.map(hover), hoverinfo: "text",
                   marker: { symbol: symbol(kind), size: 10 }, customdata: list.map((x) => x.n) });
    });
    return { traces: found, spans: spans.length, markers: markers.length };
  }

  function drawTimeline(s) {
    const drawn = traces(s);
    const order = lanes(s.items, s.in_flight);
    const layout = {
      barmode: "overlay", bargap: 0.25, showlegend: true, height: Math.max(320, 26 * order.length + 140),
      margin: { l: 230, r: 20, t: 20, b: 50 }, uirevision: "keep",
      xaxis: { title: { text: "seconds since the console started" }, zeroline: false },
      yaxis: { type: "category", categoryorder: "array", categoryarray: order, autorange: "reversed" },
    };
    Plotly.react("timeline", drawn.traces, layout, { displaylogo: false, responsive: true });
    return { seq: s.seq, lanes: order, spans: drawn.spans, markers: drawn.markers };
  }

  // ------------------------------------------------------------------------------------------ panels

  // rowClass(i) names a row's class (none by default).
  function table(id, rows, empty, rowClass) {
    const el = document.getElementById(id);
    el.replaceChildren();
    if (!rows.length) {
      const td = el.insertRow().insertCell();
      td.textContent = empty || "none";
      td.className = "empty";
      return;
    }
    rows.forEach((row, r) => {
      const tr = el.insertRow();
      if (rowClass && rowClass(r)) tr.className = rowClass(r);
      row.forEach((value, i) => {
        const td = tr.insertCell();
        td.textContent = value === null || value === undefined ? "" : String(value);
        if (i > 0 && typeof value === "number") td.className = "n";
      });
    });
  }

  const sorted = (obj) => Object.entries(obj || {}).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));

  function drawPanels(s) {
    const p = s.panels;
    const stack = p.stack || {};
    const queueRows = Object.entries(stack.queues || {}).map(([name, q]) => [name, q.visible + " visible",
                                                                             q.in_flight + " in flight"]);
    Object.entries(p.pollers).filter(([, f]) => f.service === "sqs").forEach(([name, f]) => {
      queueRows.push([name, "oldest " + (f.oldest_age_ms / 1000).toFixed(1) + " s", f.requests + " requests"]);
    });
    (stack.errors || []).forEach((e) => queueRows.push(["error", e, ""]));
    table("queues", queueRows, "no queue figures yet");
    // A shard the aggregator marks stalled (its age past a minute and still growing) is flagged in its row and
    // counted in the banner.
    const shards = Object.entries(p.iterator_age);
    table("shards", shards.map(([shard, f]) => [shard.slice(-14), f.poller, f.age_ms + " ms",
                                                f.stalled ? "stalled" : ""]),
          "no stream figures yet", (r) => (shards[r][1].stalled ? "stalled" : ""));
    const stalled = p.stalled_shards || [];
    const banner = document.getElementById("stalled");
    banner.hidden = stalled.length === 0;
    banner.textContent = stalled.length + " stream shard" + (stalled.length === 1 ? "" : "s") +
      " stalled (iterator age past a minute and growing): " + stalled.map((s) => s.slice(-14)).join(", ");
    table("in-flight", sorted(p.in_flight));
    const pending = sorted(stack.pending).map(([log, n]) => [log, n]);
    if (stack.pending_total !== undefined) pending.unshift(["total", stack.pending_total]);
    table("pending", pending, "none pending");
    table("faults", sorted(p.faults).concat(sorted(p.crash_points).map(([k, n]) => ["crash point " + k, n])),
          "no faults");
    const cost = p.cost;
    const bill = (cost.rows || []).slice(1).map((row) => [(row[0] + " " + row[1]).trim(), row[2] + " " + row[3], row[5]]);
    if (cost.per_million_appends !== null && cost.per_million_appends !== undefined) {
      bill.push(["per million appends", "", "$" + cost.per_million_appends.toFixed(2)]);
    }
    if (cost.error) bill.push(["unpriced", cost.error, ""]);
    table("cost", bill, "nothing metered yet");
    table("invocations", Object.entries(p.invocations).map(([f, outcomes]) => [f, sorted(outcomes).map(([o, n]) => o + " " + n).join(", ")]));
    table("jobs", sorted(p.jobs).concat([["routed", p.routed], ["child restarts", p.restarts]]));
    table("feed", [["received", p.feed.received], ["malformed", p.feed.malformed], ["kept", p.feed.retained],
                   ["rolled into totals", p.feed.evicted]]);
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
