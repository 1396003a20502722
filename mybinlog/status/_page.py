"""The status page a status server shows a browser (``/ui``, and ``/`` when the browser asks for HTML): one HTML
document with its CSS and JavaScript inline and no other asset, so it works without a build step, a CDN or network
access beyond the status server itself.

Every second it fetches ``status`` (the JSON document), ``history`` (the server's ring of one sample per second) and
``readyz`` from where it was loaded, and redraws: a table of replicas (state, leader, position, lag in seconds and
bytes, rows and transactions per second, checkpoint age, binlog purge risk, stopped tables, the source server being
read with its failovers and the reason of the last one), a table of consumers (position, the dispatcher's position,
the server it reads and its read rates, queue fill) and an SVG chart of the lag over the minutes the
server keeps. Each chart line carries ``data-points`` (its number of points), which the browser test reads.
"""

from __future__ import annotations

import json
from typing import Final

from ..replication import ReplicaState

__all__ = ["STATUS_PAGE"]

STATE_BADGES: Final[dict[ReplicaState, str]] = {
    "starting": "warn",
    "standby": "warn",
    "initial load": "warn",
    "streaming": "ok",
    "retrying": "warn",
    "stopped": "bad",
    "failed": "bad",
}
"""The badge colour of each replica state (``ok``, ``warn``, ``bad``): the page's script reads this table, so a new
state in :data:`~mybinlog.replication.REPLICA_STATES` gets its colour here and nowhere else (a unit test checks
that every state has one)."""

_HTML = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mybinlog status</title>
<style>
  :root { --fg: #1d2330; --muted: #667085; --line: #e4e7ec; --ok: #127a3e; --warn: #b54708; --bad: #b42318; }
  * { box-sizing: border-box; }
  body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 0;
         background: #f8f9fb; }
  header { display: flex; gap: 16px; align-items: baseline; padding: 12px 20px; background: #fff;
           border-bottom: 1px solid var(--line); flex-wrap: wrap; }
  header h1 { font-size: 18px; margin: 0; }
  main { padding: 16px 20px; display: grid; gap: 16px; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; overflow-x: auto; }
  h2 { font-size: 15px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 4px 10px 4px 0; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th { color: var(--muted); font-weight: 600; font-size: 12px; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .muted { color: var(--muted); }
  .badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; font-weight: 600;
           background: #eef0f3; }
  .ok { color: var(--ok); background: #e7f6ec; } .warn { color: var(--warn); background: #fef0e4; }
  .bad { color: var(--bad); background: #fde8e7; }
  .bar { width: 120px; height: 10px; background: #eef0f3; border-radius: 5px; display: inline-block;
         vertical-align: middle; overflow: hidden; }
  .bar > span { display: block; height: 100%; background: #3b82f6; }
  svg { width: 100%; height: 240px; display: block; }
  svg text { font-size: 11px; fill: var(--muted); }
  .legend span { margin-right: 14px; white-space: nowrap; }
  .legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; }
  #error { color: var(--bad); }
</style>
</head>
<body>
<header>
  <h1>mybinlog</h1>
  <span id="process" class="muted">loading...</span>
  <span id="ready" class="badge">...</span>
  <span id="error"></span>
</header>
<main>
  <section>
    <h2>Lag <span class="muted" id="chart-span"></span></h2>
    <svg id="lag-chart" viewBox="0 0 900 240" preserveAspectRatio="none" role="img" aria-label="lag over time"></svg>
    <div class="legend" id="legend"></div>
  </section>
  <section id="replicas-section">
    <h2>Replicas</h2>
    <table id="replicas"><thead><tr>
      <th>replica</th><th>state</th><th>role</th><th>position</th><th>lag</th><th>behind</th><th>rows/s</th>
      <th>txn/s</th><th>rows written</th><th>checkpoint age</th><th>binlog purge risk</th><th>stopped tables</th>
      <th>source server</th><th>source failovers</th>
    </tr></thead><tbody></tbody></table>
  </section>
  <section>
    <h2>Consumers</h2>
    <table id="consumers"><thead><tr>
      <th>client</th><th>consumer</th><th>position</th><th>dispatcher</th><th>dispatcher position</th>
      <th>source server</th><th>queue</th><th>events read/s</th><th>bytes read/s</th>
    </tr></thead><tbody></tbody></table>
  </section>
</main>
<script>
"use strict";
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d", "#4d7c0f"];
const SVG = "http://www.w3.org/2000/svg";

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}
function seconds(s) {
  if (s === null || s === undefined) return "-";
  if (s < 10) return s.toFixed(2) + " s";
  if (s < 120) return s.toFixed(0) + " s";
  if (s < 7200) return (s / 60).toFixed(1) + " min";
  return (s / 3600).toFixed(1) + " h";
}
function bytes(n) {
  if (n === null || n === undefined) return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n.toFixed(0)) + " " + units[i];
}
function num(n, digits) {
  if (n === null || n === undefined || Number.isNaN(n)) return "-";
  return Number(n).toLocaleString(undefined, {maximumFractionDigits: digits || 0});
}
function row(tbody, cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = c instanceof Node ? document.createElement("td") : el("td", c.text, c.cls);
    if (c instanceof Node) td.appendChild(c);
    tr.appendChild(td);
  }
  tbody.appendChild(tr);
}
const STATE_BADGES = __STATE_BADGES__;
function stateBadge(state) {
  const cls = STATE_BADGES[state] || "warn";
  return el("span", state || "?", "badge " + cls);
}
function rate(samples, name, key) {
  if (samples.length < 2) return null;
  const a = samples[samples.length - 2], b = samples[samples.length - 1];
  const ra = (a.replicas || {})[name], rb = (b.replicas || {})[name];
  if (!ra || !rb || ra[key] === null || rb[key] === null || b.time <= a.time) return null;
  return Math.max(0, (rb[key] - ra[key]) / (b.time - a.time));
}

function drawChart(samples, useReplicas) {
  const chart = document.getElementById("lag-chart");
  const legend = document.getElementById("legend");
  chart.replaceChildren();
  legend.replaceChildren();
  const W = 900, H = 240, L = 50, R = 10, T = 10, B = 24;
  const kind = useReplicas ? "replicas" : "consumers";
  const names = [];
  for (const s of samples) for (const n of Object.keys(s[kind] || {})) if (!names.includes(n)) names.push(n);
  if (!samples.length) { chart.appendChild(svg("text", {x: L, y: H / 2}, "no samples yet")); return; }
  const t1 = samples[samples.length - 1].time, t0 = Math.min(samples[0].time, t1 - 60);
  let max = 1;
  for (const s of samples) for (const n of names) {
    const v = ((s[kind] || {})[n] || {}).lag;
    if (typeof v === "number" && v > max) max = v;
  }
  const x = t => L + (W - L - R) * (t - t0) / Math.max(1, t1 - t0);
  const y = v => T + (H - T - B) * (1 - v / max);
  for (const f of [0, 0.5, 1]) {
    chart.appendChild(svg("line", {x1: L, x2: W - R, y1: y(max * f), y2: y(max * f), stroke: "#e4e7ec"}));
    chart.appendChild(svg("text", {x: 4, y: y(max * f) + 4}, seconds(max * f)));
  }
  chart.appendChild(svg("text", {x: L, y: H - 6}, "-" + seconds(t1 - t0)));
  chart.appendChild(svg("text", {x: W - R - 24, y: H - 6}, "now"));
  names.forEach((n, i) => {
    const pts = [];
    for (const s of samples) {
      const v = ((s[kind] || {})[n] || {}).lag;
      if (typeof v === "number") pts.push(x(s.time).toFixed(1) + "," + y(v).toFixed(1));
    }
    const color = COLORS[i % COLORS.length];
    chart.appendChild(svg("polyline", {points: pts.join(" "), fill: "none", stroke: color, "stroke-width": 2,
                                       "data-series": n, "data-points": pts.length}));
    const item = el("span");
    const swatch = el("i");
    swatch.style.background = color;
    item.append(swatch, document.createTextNode(n));
    legend.appendChild(item);
  });
  document.getElementById("chart-span").textContent =
    "(" + kind + ", last " + seconds(t1 - samples[0].time) + ", " + samples.length + " samples)";
}

function render(doc, history, ready) {
  const samples = (history && history.samples) || [];
  const replicas = doc.replicas || [];
  document.getElementById("process").textContent =
    "pid " + doc.pid + " · " + new Date(doc.time * 1000).toLocaleTimeString() + " · " +
    replicas.length + " replica(s), " + doc.mysql_binlogs.length + " consumer(s)";
  const badge = document.getElementById("ready");
  badge.textContent = ready.ok ? "ready" : "not ready";
  badge.className = "badge " + (ready.ok ? "ok" : "bad");
  badge.title = JSON.stringify(ready.details);

  document.getElementById("replicas-section").style.display = replicas.length ? "" : "none";
  const rt = document.querySelector("#replicas tbody");
  rt.replaceChildren();
  for (const r of replicas) {
    const risk = r.binlog_purge_risk || "unknown";
    const riskCls = risk === "ok" ? "ok" : risk === "warning" ? "warn" : risk === "purged" ? "bad" : "";
    const riskEl = el("span", risk, "badge " + riskCls);
    if (r.binlog_purge_reason) riskEl.title = r.binlog_purge_reason;
    const stopped = Object.keys(r.stopped_tables || {});
    const failovers = r.source_failovers || 0;
    const failoverEl = el("span");
    failoverEl.appendChild(el("span", String(failovers), "badge " + (failovers ? "warn" : "")));
    if (r.last_source_failover) {
      failoverEl.appendChild(el("span", " last: " + r.last_source_failover, "muted"));
    }
    row(rt, [
      {text: r.replica + (r.delivery ? " (" + r.delivery + ")" : "")}, stateBadge(r.state),
      {text: r.leader === false ? "standby" : "leader"},
      {text: r.position || "-", cls: "muted"}, {text: seconds(r.lag_seconds), cls: "num"},
      {text: bytes(r.lag_bytes), cls: "num"}, {text: num(rate(samples, r.replica, "rows"), 1), cls: "num"},
      {text: num(rate(samples, r.replica, "transactions"), 1), cls: "num"},
      {text: num(r.rows_written), cls: "num"}, {text: seconds(r.checkpoint_age_seconds), cls: "num"},
      riskEl, {text: stopped.length ? stopped.join(", ") : "none", cls: stopped.length ? "bad" : "muted"},
      {text: r.source_server ? r.source_server + (r.source_server_id === null || r.source_server_id === undefined
        ? "" : " (server_id " + r.source_server_id + ")") : "-"}, failoverEl,
    ]);
  }
  const ct = document.querySelector("#consumers tbody");
  ct.replaceChildren();
  if (!doc.mysql_binlogs.length) row(ct, [{text: "no consumer now", cls: "muted"}]);
  for (const c of doc.mysql_binlogs) {
    const fill = c.max_bytes ? Math.min(1, c.bytes / c.max_bytes) : 0;
    const queue = el("span");
    const bar = el("span", null, "bar");
    const inner = el("span");
    inner.style.width = (100 * fill).toFixed(1) + "%";
    bar.appendChild(inner);
    queue.append(bar, document.createTextNode(" " + bytes(c.bytes) + " / " +
      (c.max_bytes ? bytes(c.max_bytes) : "unlimited") + " (" + c.size + " events)"));
    row(ct, [
      {text: c.binlog_client_name}, {text: c.name},
      {text: c.mysql_binlog_name + ":" + c.mysql_binlog_pos, cls: "muted"}, {text: c.dispatcher_name},
      {text: c.dispatcher_mysql_binlog_name + ":" + c.dispatcher_mysql_binlog_pos, cls: "muted"},
      {text: c.dispatcher_source_server || "-"}, queue,
      {text: num(c.dispatcher_events_read_per_sec), cls: "num"},
      {text: bytes(c.dispatcher_bytes_read_per_sec) + "/s", cls: "num"},
    ]);
  }
  drawChart(samples, replicas.length > 0);
}

async function refresh() {
  try {
    const [doc, history, readyz] = await Promise.all([
      fetch("status", {cache: "no-store"}).then(r => r.json()),
      fetch("history", {cache: "no-store"}).then(r => r.json()),
      fetch("readyz", {cache: "no-store"}).then(async r => ({ok: r.ok, details: await r.json()})),
    ]);
    render(doc, history, readyz);
    document.getElementById("error").textContent = "";
  } catch (e) {
    document.getElementById("error").textContent = "cannot read the status: " + e;
  }
}
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>
"""

STATUS_PAGE: Final[bytes] = _HTML.replace("__STATE_BADGES__", json.dumps(STATE_BADGES)).encode("utf-8")
