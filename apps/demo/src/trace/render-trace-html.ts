import { InvalidArgumentError, type Span } from "@loopguard/core";
import type { TraceMeta } from "./build-trace-json.js";
import { traceView } from "./trace-view.js";

/**
 * Renders a run's spans as one self-contained HTML page (`trace.html`): inline CSS and JS, no
 * external assets, opens from `file://` offline. It shows totals at the top, the spans as a
 * tree beside a timeline with cost and tokens per span, blocked calls and flagged injections
 * marked, and a side panel with a span's attributes, events and content. Keyboard: arrows move
 * and fold, Enter opens details, Escape closes them.
 *
 * The data is embedded as JSON in a `<script type="application/json">` block with `<`, `>`,
 * `&`, U+2028 and U+2029 escaped, and drawn with `textContent` only, so no content of the run
 * can close the script or inject markup.
 *
 * @example
 * const trace = buildTraceJson(await store.read(runId), { redact });
 * await writeFile("trace.html", renderTraceHtml(trace.spans, trace.meta));
 */
export function renderTraceHtml(spans: readonly Span[], meta: TraceMeta): string {
  if (!Array.isArray(spans))
    throw new InvalidArgumentError(
      "[loopguard] renderTraceHtml(spans, meta): spans must be an array of spans, e.g. buildTraceJson(events).spans",
    );
  if (
    typeof meta !== "object" ||
    meta === null ||
    typeof meta.runId !== "string" ||
    meta.runId === ""
  ) {
    throw new InvalidArgumentError(
      "[loopguard] renderTraceHtml(spans, meta): meta.runId must be the run's id, e.g. buildTraceJson(events).meta",
    );
  }
  for (const span of spans) {
    if (
      typeof span?.spanId !== "string" ||
      typeof span.startTime !== "number" ||
      typeof span.endTime !== "number"
    ) {
      throw new InvalidArgumentError(
        "[loopguard] renderTraceHtml: every span needs spanId, startTime and endTime; build spans with core's spansFromEvents",
      );
    }
  }
  const view = traceView(spans);
  const title = meta.title ?? `loopguard trace ${meta.runId}`;
  const data = {
    meta: { ...meta, generatedAt: meta.generatedAt ?? Date.now() },
    startedAt: view.startedAt,
    totals: view.totals,
    rows: view.rows,
  };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>${escapeHtml(title)}</title>
<style>${css}</style>
</head>
<body>
<header class="top">
  <div class="heading"><h1 id="title"></h1><span id="status" class="badge"></span></div>
  <p id="subtitle" class="subtitle"></p>
  <dl id="totals" class="totals" aria-label="Run totals"></dl>
  <nav id="runs" class="runs" aria-label="Runs of this trace" hidden></nav>
  <p class="legend" aria-hidden="true"><span class="swatch k-run"></span>run <span class="swatch k-step"></span>step <span class="swatch k-model"></span>model call <span class="swatch k-tool"></span>tool call <span class="swatch k-blocked"></span>blocked <span class="swatch k-flagged"></span>injection flagged <span class="swatch k-error"></span>error</p>
</header>
<main class="layout">
  <section class="trace" aria-label="Spans">
    <div class="head-row" aria-hidden="true"><div class="col-name">span</div><div class="col-fig">cost</div><div class="col-fig">tokens in / out</div><div class="col-time" id="axis"></div></div>
    <div id="tree" role="tree" aria-label="Spans of the run, as a tree" class="tree"></div>
    <p id="empty" class="empty" hidden>This run has no spans.</p>
  </section>
  <aside id="details" class="details" role="region" aria-label="Span details" hidden>
    <div class="details-head"><h2 id="details-title"></h2><button type="button" id="close" aria-label="Close details">×</button></div>
    <div id="details-body"></div>
  </aside>
</main>
<noscript><p class="empty">This page needs JavaScript to draw the trace.</p></noscript>
<script type="application/json" id="trace-data">${embedJson(data)}</script>
<script>${script}</script>
</body>
</html>
`;
}

/** Serialises `value` for a `<script type="application/json">` block: nothing in it can end the block. */
export function embedJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

const css = `
:root { --bg:#f7f7f5; --panel:#fff; --ink:#1d1d1f; --muted:#5f6368; --line:#e3e3df; --run:#5b5bd6; --step:#8d8d99; --model:#2f6fdd; --tool:#1f8a5b; --blocked:#c62828; --flagged:#b26a00; --error:#c62828; --focus:#0b57d0; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:var(--ink); background:var(--bg); }
.top { padding:16px 20px 8px; background:var(--panel); border-bottom:1px solid var(--line); }
.heading { display:flex; align-items:center; gap:10px; }
h1 { font-size:18px; margin:0; font-weight:600; }
.subtitle { margin:4px 0 10px; color:var(--muted); overflow-wrap:anywhere; }
.totals { display:flex; flex-wrap:wrap; gap:8px; margin:0; }
.totals div { background:var(--bg); border:1px solid var(--line); border-radius:8px; padding:6px 10px; min-width:96px; }
.totals dt { font-size:11px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); }
.totals dd { margin:0; font-size:16px; font-weight:600; font-variant-numeric:tabular-nums; }
.totals .bad dd { color:var(--blocked); } .totals .warn dd { color:var(--flagged); }
.runs { margin:10px 0 0; font-size:13px; }
.runs ul { list-style:none; margin:4px 0 0; padding:0; }
.runs li { margin:2px 0; }
.runs a { color:var(--focus); }
.runs .meta { color:var(--muted); }
.legend { color:var(--muted); font-size:12px; margin:10px 0 0; }
.swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin:0 4px 0 10px; vertical-align:-1px; }
.swatch:first-child { margin-left:0; }
.k-run { background:var(--run); } .k-step { background:var(--step); } .k-model { background:var(--model); } .k-tool { background:var(--tool); } .k-blocked { background:var(--blocked); } .k-flagged { background:var(--flagged); } .k-error { background:repeating-linear-gradient(45deg,var(--error) 0 3px,#f3b4b4 3px 6px); }
.layout { display:flex; align-items:flex-start; gap:16px; padding:16px 20px; }
.trace { flex:1 1 auto; min-width:0; background:var(--panel); border:1px solid var(--line); border-radius:10px; overflow:hidden; }
.head-row, .row { display:grid; grid-template-columns:minmax(300px,2.4fr) 84px 128px minmax(200px,3fr); align-items:center; }
.head-row { font-size:11px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); border-bottom:1px solid var(--line); padding:6px 10px; }
.col-fig { text-align:right; padding-right:12px; font-variant-numeric:tabular-nums; }
.col-time { position:relative; height:16px; }
.tick { position:absolute; top:0; transform:translateX(-50%); white-space:nowrap; }
.tick:first-child { transform:none; } .tick:last-child { transform:translateX(-100%); }
.row { padding:3px 10px; border-bottom:1px solid #f0f0ec; cursor:pointer; outline:none; }
.row[hidden] { display:none; }
.row:hover { background:#f3f5fb; }
.row[aria-selected="true"] { background:#e8effd; }
.row:focus-visible { box-shadow:inset 0 0 0 2px var(--focus); }
.name { display:flex; align-items:center; gap:6px; min-width:0; white-space:nowrap; overflow:hidden; }
.name .label { flex:0 0 auto; }
.name .badge { min-width:0; overflow:hidden; text-overflow:ellipsis; flex:0 1 auto; }
.caret { width:16px; flex:none; text-align:center; color:var(--muted); font-size:10px; }
.dot { width:8px; height:8px; border-radius:50%; flex:none; }
.badge { display:inline-block; font-size:11px; font-weight:600; border-radius:999px; padding:1px 8px; border:1px solid transparent; white-space:nowrap; }
.b-blocked { color:#fff; background:var(--blocked); } .b-flagged { color:#fff; background:var(--flagged); } .b-error { color:var(--error); border-color:var(--error); }
.b-completed { color:#fff; background:var(--tool); } .b-failed, .b-halted { color:#fff; background:var(--blocked); } .b-stopped, .b-awaiting_approval, .b-awaiting_child, .b-running { color:#fff; background:var(--flagged); }
.fig { text-align:right; padding-right:12px; font-variant-numeric:tabular-nums; color:var(--ink); white-space:nowrap; }
.fig.dim { color:#9aa0a6; }
.lane { position:relative; height:18px; background:linear-gradient(90deg,#f1f1ee 1px,transparent 1px) 0 0/25% 100%; border-radius:3px; }
.bar { position:absolute; top:3px; height:12px; border-radius:3px; min-width:3px; }
.note { position:absolute; top:1px; font-size:11px; font-weight:600; white-space:nowrap; padding:0 6px; }
.note.bad { color:var(--blocked); } .note.warn { color:var(--flagged); }
.bar.run { background:var(--run); } .bar.step { background:var(--step); opacity:.55; } .bar.model { background:var(--model); } .bar.tool { background:var(--tool); }
.bar.blocked { background:var(--blocked); } .bar.flagged { box-shadow:0 0 0 2px var(--flagged); } .bar.error:not(.blocked) { background:repeating-linear-gradient(45deg,var(--error) 0 3px,#f3b4b4 3px 6px); }
.details { flex:0 0 380px; max-width:44vw; background:var(--panel); border:1px solid var(--line); border-radius:10px; padding:12px 14px; position:sticky; top:12px; max-height:calc(100vh - 24px); overflow:auto; }
.details-head { display:flex; justify-content:space-between; align-items:center; gap:8px; }
.details h2 { font-size:15px; margin:0; overflow-wrap:anywhere; }
.details h3 { font-size:12px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); margin:14px 0 6px; }
#close { font-size:20px; line-height:1; border:1px solid var(--line); background:var(--bg); border-radius:6px; width:30px; height:30px; cursor:pointer; }
#close:focus-visible { outline:2px solid var(--focus); }
table.kv { width:100%; border-collapse:collapse; font-size:12px; }
table.kv th { text-align:left; font-weight:500; color:var(--muted); padding:3px 8px 3px 0; vertical-align:top; width:48%; overflow-wrap:anywhere; }
table.kv td { padding:3px 0; overflow-wrap:anywhere; font-family:ui-monospace,SFMono-Regular,Menlo,monospace; }
.event { border-left:3px solid var(--line); padding:2px 0 2px 8px; margin-bottom:8px; }
.event.deny { border-color:var(--blocked); } .event.flag { border-color:var(--flagged); }
pre { white-space:pre-wrap; overflow-wrap:anywhere; background:var(--bg); border:1px solid var(--line); border-radius:6px; padding:8px; font-size:12px; margin:0 0 8px; }
.empty { padding:16px; color:var(--muted); }
@media (max-width: 900px) { .layout { flex-direction:column; } .details { max-width:none; width:100%; position:static; } }
`;

// Runs in the page. Plain ES2017, no dependencies; every string from the run goes through
// textContent, never innerHTML.
const script = `
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("trace-data").textContent);
  var rows = data.rows, totals = data.totals, meta = data.meta;
  var byId = {}; rows.forEach(function (row) { byId[row.id] = row; row.children = []; });
  rows.forEach(function (row) { if (row.parent && byId[row.parent]) byId[row.parent].children.push(row); });
  var span = Math.max(totals.durationMs, 1);
  var collapsed = {};
  var selected = null;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function usd(value) { if (!value) return "$0"; if (value < 0.0001) return "<$0.0001"; return "$" + value.toFixed(value < 1 ? 4 : 2); }
  function int(value) { return Math.round(value).toLocaleString("en-US"); }
  function ms(value) { if (value < 1000) return Math.round(value) + " ms"; return (value / 1000).toFixed(value < 10000 ? 2 : 1) + " s"; }
  function show(value) { if (typeof value === "string") return value; try { return JSON.stringify(value, null, 2); } catch (error) { return String(value); } }

  document.getElementById("title").textContent = meta.title || ("loopguard trace " + meta.runId);
  var status = document.getElementById("status");
  status.textContent = meta.status || "unknown";
  status.className = "badge b-" + String(meta.status || "running").replace(/[^a-z_]/g, "");
  var sub = [meta.agentId && ("agent " + meta.agentId), meta.model && ("model " + meta.model), meta.why && ("ended: " + meta.why), "run " + meta.runId];
  document.getElementById("subtitle").textContent = sub.filter(Boolean).join(" · ");
  var dl = document.getElementById("totals");
  [["Duration", ms(totals.durationMs)], ["Cost", usd(totals.costUsd)], ["Input tokens", int(totals.inputTokens)], ["Cache read", int(totals.cacheReadTokens)], ["Cache write", int(totals.cacheWriteTokens)], ["Output tokens", int(totals.outputTokens)], ["Model calls", int(totals.modelCalls)], ["Tool calls", int(totals.toolCalls)], ["Blocked", int(totals.blocked), totals.blocked ? "bad" : ""], ["Injections flagged", int(totals.flagged), totals.flagged ? "warn" : ""], ["Errors", int(totals.errors), totals.errors ? "bad" : ""]].forEach(function (entry) {
    var box = el("div", entry[2] || ""); box.setAttribute("data-total", entry[0]);
    box.appendChild(el("dt", "", entry[0])); box.appendChild(el("dd", "", entry[1])); dl.appendChild(box);
  });
  var nav = document.getElementById("runs");
  function safeHref(href) { return typeof href === "string" && /^(\\.\\.?\\/|\\/(?!\\/))/.test(href) ? href : null; }
  function runLink(link, text) { var a = el("a", "", text); var href = safeHref(link.href); if (href) a.setAttribute("href", href); a.setAttribute("target", "_top"); a.setAttribute("data-run-id", link.runId); return a; }
  if (meta.parent) {
    var up = el("p", "parent-run"); up.appendChild(document.createTextNode("Started by run ")); up.appendChild(runLink(meta.parent, meta.parent.runId)); nav.appendChild(up); nav.hidden = false;
  }
  if (meta.children && meta.children.length) {
    nav.appendChild(el("strong", "", "Runs it delegated to (" + meta.children.length + ")"));
    var list = el("ul", "child-runs");
    meta.children.forEach(function (child) {
      var item = el("li"); item.style.paddingLeft = ((child.level || 1) - 1) * 16 + "px";
      item.appendChild(runLink(child, child.runId));
      item.appendChild(el("span", "meta", " · " + [child.tool && ("tool " + child.tool), child.agentId && ("agent " + child.agentId), child.status].filter(Boolean).join(" · ")));
      list.appendChild(item);
    });
    nav.appendChild(list); nav.hidden = false;
  }
  var axis = document.getElementById("axis");
  [0, 0.25, 0.5, 0.75, 1].forEach(function (fraction) { var tick = el("span", "tick", ms(span * fraction)); tick.style.left = (fraction * 100) + "%"; axis.appendChild(tick); });

  var tree = document.getElementById("tree");
  var nodes = {};
  rows.forEach(function (row) {
    var node = el("div", "row");
    node.id = "span-" + row.id;
    node.setAttribute("role", "treeitem");
    node.setAttribute("aria-level", String(row.depth + 1));
    node.setAttribute("aria-selected", "false");
    node.setAttribute("data-span-id", row.id);
    node.setAttribute("data-kind", row.kind);
    node.tabIndex = -1;
    if (row.children.length) node.setAttribute("aria-expanded", "true");
    var label = [row.name];
    if (row.blocked) label.push("blocked: " + (row.blockReason || "refused"));
    if (row.flagged) label.push("flagged as " + row.flagged);
    if (row.status === "error" && !row.blocked) label.push("error");
    label.push(ms(row.durationMs));
    if (row.total.costUsd) label.push(usd(row.total.costUsd));
    node.setAttribute("aria-label", label.join(", "));

    var name = el("div", "name"); name.style.paddingLeft = (row.depth * 16) + "px";
    var caret = el("span", "caret", row.children.length ? "▼" : ""); caret.setAttribute("aria-hidden", "true"); name.appendChild(caret);
    var dot = el("span", "dot k-" + (row.blocked ? "blocked" : row.kind)); name.appendChild(dot);
    name.appendChild(el("span", "label", row.name));
    if (row.blocked) name.appendChild(el("span", "badge b-blocked", "blocked"));
    if (row.flagged) name.appendChild(el("span", "badge b-flagged", "flagged"));
    if (row.status === "error" && !row.blocked) name.appendChild(el("span", "badge b-error", "error"));
    node.appendChild(name);
    var rolled = row.kind === "run" || row.kind === "step";
    var cost = rolled ? row.total.costUsd : row.costUsd;
    var tokensIn = rolled ? row.total.inputTokens : row.inputTokens, tokensOut = rolled ? row.total.outputTokens : row.outputTokens;
    node.appendChild(el("div", "fig" + (cost ? "" : " dim"), cost ? usd(cost) : "–"));
    node.appendChild(el("div", "fig" + (tokensIn || tokensOut ? "" : " dim"), tokensIn || tokensOut ? int(tokensIn) + " / " + int(tokensOut) : "–"));
    var lane = el("div", "lane");
    var bar = el("div", "bar " + row.kind + (row.blocked ? " blocked" : "") + (row.flagged ? " flagged" : "") + (row.status === "error" ? " error" : ""));
    bar.style.left = Math.min(100, (row.start / span) * 100) + "%";
    bar.style.width = Math.max(0.3, (row.durationMs / span) * 100) + "%";
    bar.title = row.name + " · " + ms(row.durationMs);
    lane.appendChild(bar);
    var note = row.blocked ? (row.blockReason || "refused") : row.flagged ? "flagged as " + row.flagged : row.status === "error" ? (row.statusMessage || "error") : "";
    if (note) {
      var left = Math.min(100, ((row.start + row.durationMs) / span) * 100);
      var label = el("span", "note" + (row.blocked || row.status === "error" ? " bad" : " warn"), note);
      if (left > 70) { label.style.right = (100 - (row.start / span) * 100) + "%"; label.style.textAlign = "right"; } else label.style.left = "calc(" + left + "% + 6px)";
      lane.appendChild(label);
    }
    node.appendChild(lane);
    node.addEventListener("click", function () { focusRow(row.id); open(row.id); });
    tree.appendChild(node);
    nodes[row.id] = node;
  });
  if (!rows.length) document.getElementById("empty").hidden = false;

  function hiddenByFold(row) { var parent = row.parent && byId[row.parent]; while (parent) { if (collapsed[parent.id]) return true; parent = parent.parent && byId[parent.parent]; } return false; }
  function refresh() { rows.forEach(function (row) { nodes[row.id].hidden = hiddenByFold(row); if (row.children.length) { nodes[row.id].setAttribute("aria-expanded", collapsed[row.id] ? "false" : "true"); nodes[row.id].firstChild.firstChild.textContent = collapsed[row.id] ? "▶" : "▼"; } }); }
  function visible() { return rows.filter(function (row) { return !nodes[row.id].hidden; }); }
  var focused = rows.length ? rows[0].id : null;
  function focusRow(id) { if (focused && nodes[focused]) nodes[focused].tabIndex = -1; focused = id; nodes[id].tabIndex = 0; nodes[id].focus(); }
  if (focused) nodes[focused].tabIndex = 0;

  tree.addEventListener("keydown", function (event) {
    if (!focused) return;
    var list = visible(), index = list.findIndex(function (row) { return row.id === focused; }), row = byId[focused];
    var key = event.key, handled = true;
    if (key === "ArrowDown") { if (index < list.length - 1) focusRow(list[index + 1].id); }
    else if (key === "ArrowUp") { if (index > 0) focusRow(list[index - 1].id); }
    else if (key === "Home") { focusRow(list[0].id); }
    else if (key === "End") { focusRow(list[list.length - 1].id); }
    else if (key === "ArrowRight") { if (row.children.length && collapsed[row.id]) { collapsed[row.id] = false; refresh(); } else if (row.children.length) focusRow(row.children[0].id); }
    else if (key === "ArrowLeft") { if (row.children.length && !collapsed[row.id]) { collapsed[row.id] = true; refresh(); } else if (row.parent && byId[row.parent]) focusRow(row.parent); }
    else if (key === "Enter" || key === " ") { open(row.id); }
    else handled = false;
    if (handled) event.preventDefault();
  });

  var panel = document.getElementById("details"), body = document.getElementById("details-body");
  function table(entries) {
    var t = el("table", "kv"), tb = el("tbody");
    entries.forEach(function (entry) { var tr = el("tr"); tr.appendChild(el("th", "", entry[0])); tr.appendChild(el("td", "", Array.isArray(entry[1]) ? entry[1].join(", ") : entry[1])); tb.appendChild(tr); });
    t.appendChild(tb); return t;
  }
  function open(id) {
    var row = byId[id];
    if (selected && nodes[selected]) nodes[selected].setAttribute("aria-selected", "false");
    selected = id; nodes[id].setAttribute("aria-selected", "true");
    document.getElementById("details-title").textContent = row.name;
    body.textContent = "";
    var facts = [["kind", row.kind], ["status", row.status + (row.statusMessage ? " — " + row.statusMessage : "")], ["start", "+" + ms(row.start)], ["duration", ms(row.durationMs)]];
    if (row.total.costUsd) facts.push(["cost", usd(row.total.costUsd)]);
    if (row.total.inputTokens || row.total.outputTokens) facts.push(["tokens in / out", int(row.total.inputTokens) + " / " + int(row.total.outputTokens)]);
    if (row.blocked) facts.push(["blocked", row.blockReason || "refused"]);
    if (row.flagged) facts.push(["injection", row.flagged]);
    facts.push(["span id", row.id]);
    body.appendChild(table(facts));
    body.appendChild(el("h3", "", "Attributes"));
    body.appendChild(table(Object.keys(row.attributes).sort().map(function (key) { return [key, row.attributes[key]]; })));
    if (row.events.length) {
      body.appendChild(el("h3", "", "Events"));
      row.events.forEach(function (event) {
        var box = el("div", "event" + (event.attributes["loopguard.outcome"] === "deny" ? " deny" : "") + (event.name === "injection.flagged" ? " flag" : ""));
        box.appendChild(el("strong", "", event.name + "  +" + ms(event.offsetMs)));
        box.appendChild(table(Object.keys(event.attributes).map(function (key) { return [key, event.attributes[key]]; })));
        body.appendChild(box);
      });
    }
    if (row.content && (row.content.input !== undefined || row.content.output !== undefined)) {
      body.appendChild(el("h3", "", "Content"));
      if (row.content.input !== undefined) { body.appendChild(el("div", "", "input")); body.appendChild(el("pre", "", show(row.content.input))); }
      if (row.content.output !== undefined) { body.appendChild(el("div", "", "output")); body.appendChild(el("pre", "", show(row.content.output))); }
    }
    panel.hidden = false;
  }
  function close() { panel.hidden = true; if (selected && nodes[selected]) { nodes[selected].setAttribute("aria-selected", "false"); focusRow(selected); } selected = null; }
  document.getElementById("close").addEventListener("click", close);
  document.addEventListener("keydown", function (event) { if (event.key === "Escape" && !panel.hidden) { event.preventDefault(); close(); } });
})();
`;
