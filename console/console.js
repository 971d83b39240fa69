// The console's page: five panels fed by /mcp (the Tools panel speaks MCP
// itself), /console/api/... and the one event stream /console/events.
import { Mcp } from "./mcp.js";
import { schemaForm, el } from "./form.js";
import { Charts } from "./charts.js";
import { Traces } from "./traces.js";

const $ = (s) => document.querySelector(s);
const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
const TERMINAL = new Set(["done", "failed", "cancelled", "timed out", "refused"]);
const listeners = new Set();            // the Tools panel's watch of its own call's aftermath

// Tabs.
for (const b of document.querySelectorAll("#tabs button")) {
  b.onclick = () => {
    document.querySelectorAll("#tabs button, .panel").forEach((x) => x.classList.remove("on"));
    b.classList.add("on");
    $("#" + b.dataset.panel).classList.add("on");
    if (b.dataset.panel === "plugins") loadPlugins();
  };
}

async function api(path, opts) {
  const res = await fetch("/console/api/" + path, opts);
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.headers.get("content-type").startsWith("application/json") ? res.json() : res.text();
}

// Tools.
const mcp = new Mcp();

// A request id as the call events name it (after "SESSION."): its JSON text, percent-encoded.
function keyOf(id) {
  return [...new TextEncoder().encode(JSON.stringify(id))].map((b) =>
    /[A-Za-z0-9_-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : "%" + b.toString(16).toUpperCase().padStart(2, "0")).join("");
}
let running = null;                     // {id, tool, abort, cancelled}

function tree(v) {
  if (v === null || typeof v !== "object") return el("span", { textContent: JSON.stringify(v) });
  const ul = el("ul", { className: "tree" });
  for (const [k, x] of Object.entries(v)) ul.append(el("li", {}, el("span", { className: "k", textContent: k + ": " }), tree(x)));
  return ul;
}

function showResult(out, r, ms) {
  out.replaceChildren();
  out.classList.toggle("error", !!r.isError);
  out.append(el("div", { className: r.isError ? "iserror" : "hint",
    textContent: (r.isError ? "isError: the tool failed" : "result") + ` in ${ms.toFixed(0)} ms` }));
  for (const c of r.content || []) {
    if (c.type === "text") out.append(el("pre", { textContent: c.text }));
    else if (c.type === "image") out.append(el("img", { src: `data:${c.mimeType};base64,${c.data}`, alt: "image" }));
    else out.append(el("pre", { textContent: JSON.stringify(c, null, 2) }));
  }
  if (r.structuredContent !== undefined) out.append(el("h4", { textContent: "structuredContent" }), tree(r.structuredContent));
}

function openTool(t, li) {
  document.querySelectorAll("#tool-list li").forEach((x) => x.classList.remove("on"));
  li.classList.add("on");
  const form = schemaForm(t.inputSchema);
  const run = el("button", { className: "run", textContent: "Run" });
  const stop = el("button", { className: "stop", textContent: "Cancel", disabled: true });
  const bar = el("progress", { hidden: true });
  const msg = el("span", { className: "hint" });
  const out = el("div", { className: "out", hidden: true });
  const after = el("ul", { className: "plain after" });
  $("#tool-view").replaceChildren(el("h2", { textContent: t.name }), el("p", { className: "hint", textContent: t.description || "" }),
    form.node, el("div", { className: "actions" }, run, stop, bar, msg), out, after);
  run.onclick = async () => {
    let args;
    try { args = form.read(); } catch (e) { msg.textContent = "bad JSON: " + e.message; return; }
    const id = "console-" + Date.now();
    const abort = new AbortController();
    running = { id, tool: t.name, abort };
    const mine = "." + keyOf(id);
    const ended = (kind, ev) => {
      if (kind !== "call" || !ev.id.endsWith(mine) || ev.state !== "cancelled" || running?.cancelled) return;
      listeners.delete(ended);
      running.cancelled = true;
      out.hidden = false; out.classList.add("error");
      out.textContent = `cancelled elsewhere: ${ev.reason || "no reason given"}`;
      abort.abort();
    };
    listeners.add(ended);
    run.disabled = true; stop.disabled = false; bar.hidden = false; bar.removeAttribute("value");
    out.hidden = true; after.replaceChildren(); msg.textContent = "running…";
    const t0 = performance.now();
    try {
      const r = await mcp.request("tools/call", { name: t.name, arguments: args, _meta: { progressToken: id } }, {
        id, signal: abort.signal,
        onMessage(m) {
          if (m.method !== "notifications/progress") return;
          const p = m.params;
          if (p.total) { bar.max = p.total; bar.value = p.progress; }
          msg.textContent = `progress ${p.progress}${p.total ? " / " + p.total : ""}${p.message ? ": " + p.message : ""}`;
        },
      });
      out.hidden = false;
      showResult(out, r, performance.now() - t0);
      msg.textContent = "";
    } catch (e) {
      if (!running?.cancelled) { out.hidden = false; out.classList.add("error"); out.textContent = e.message; msg.textContent = ""; }
    } finally {
      listeners.delete(ended);
      run.disabled = false; stop.disabled = true; bar.hidden = true;
      running = null;
    }
  };
  stop.onclick = async () => {
    if (!running) return;
    const r = running;
    r.cancelled = true;
    stop.disabled = true;
    msg.textContent = "cancel sent; what the handler did after:";
    const watch = (kind, ev) => {
      if (ev.tool !== r.tool) return;
      if (kind === "log") after.append(el("li", { textContent: `${ev.level}: ${ev.msg}` }));
      if (kind === "call" && TERMINAL.has(ev.state)) {
        after.append(el("li", { textContent: `the call ended: ${ev.state} after ${ev.elapsed_ms.toFixed(0)} ms` }));
        listeners.delete(watch);
        r.abort.abort();
      }
    };
    listeners.add(watch);
    await mcp.notify("notifications/cancelled", { requestId: r.id, reason: "cancelled from the console's Tools panel" });
  };
}

async function loadTools() {
  await mcp.connect();
  const list = $("#tool-list");
  for (const t of await mcp.tools()) {
    const li = el("li", {}, t.name, el("small", { textContent: t.description || "" }));
    li.dataset.tool = t.name;
    li.onclick = () => openTool(t, li);
    list.append(li);
  }
}

// Calls.
const calls = new Map();                // id -> {ev, seen (ms), row}

function fmtBytes(n) { return n < 1024 ? n + " B" : n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB" : (n / 1048576).toFixed(1) + " MiB"; }

function callRow(ev) {
  let c = calls.get(ev.id);
  if (!c) {
    const tr = el("tr");
    tr.dataset.id = ev.id;
    $("#call-table tbody").prepend(tr);
    c = { row: tr };
    calls.set(ev.id, c);
    if (calls.size > 200) { const [old] = calls.keys(); calls.get(old).row.remove(); calls.delete(old); }
  }
  c.ev = { ...c.ev, ...ev };
  c.seen = performance.now();
  drawCall(c);
  $("#inflight").textContent = [...calls.values()].filter((x) => !TERMINAL.has(x.ev.state)).length;
}

// The row's cells are made once: a tick or an event changes their text, and
// the Cancel button stays the same node (a click never lands on a stale one).
function drawCall(c) {
  const e = c.ev, live = !TERMINAL.has(e.state);
  if (!c.cells) {
    c.cells = Array.from({ length: 8 }, () => el("td"));
    c.cancel = el("button", { className: "stop", textContent: "Cancel" });
    c.cancel.onclick = async () => {
      c.cancel.disabled = true;
      try { await api(`calls/${c.ev.id}/cancel`, { method: "POST" }); } catch (err) { c.cancel.title = err.message; }
    };
    c.row.append(...c.cells, el("td", {}, c.cancel));
  }
  const elapsed = e.elapsed_ms + (live ? performance.now() - c.seen : 0);
  const why = [e.limit ? "limit: " + e.limit : null, e.reason].filter(Boolean).join(" · ");
  const text = [decodeURIComponent(e.id), e.tool, [e.client, e.session].filter(Boolean).join(" · "), e.state, (elapsed / 1000).toFixed(1) + " s", e.progress ?? "",
    e.cpu_ms !== undefined ? `${e.cpu_ms.toFixed(0)} ms / ${fmtBytes(e.memory)}` : "", why];
  text.forEach((t, i) => { if (c.cells[i].textContent !== String(t)) c.cells[i].textContent = t; });
  c.cells[3].className = "state";
  c.row.className = "s-" + e.state.replace(" ", "-");
  c.cancel.hidden = !live;
  if (e.state === "cancelling") c.cancel.disabled = true;
}

setInterval(() => { for (const c of calls.values()) if (!TERMINAL.has(c.ev.state)) drawCall(c); }, 500);

// Plugins.
const reloads = [];

async function loadPlugins() {
  const p = await api("plugins");
  const list = Array.isArray(p.plugins) ? p.plugins : [];
  $("#plugin-cards").replaceChildren(...list.map((x) => {
    const tags = [el("span", { className: "tag " + (x.sandboxed ? "sandboxed" : "trusted"), textContent: x.sandboxed ? "sandboxed" : "trusted" })];
    const rows = [el("div", {}, "tools: ", (Array.isArray(x.tools) ? x.tools : []).join(", ") || "none")];
    if (x.grants) rows.push(el("div", {}, "grants: ", el("code", { textContent: JSON.stringify(x.grants) })));
    if (Array.isArray(x.middleware) && x.middleware.length) rows.push(el("div", {}, "middleware: " + x.middleware.join(", ")));
    if (x.mount) rows.push(el("div", {}, `mount: ${x.mount.fetching ? "fetching" : x.mount.stale ? "stale (fetched on next use)" : "up to date"}`));
    if (x.reload) rows.push(el("div", {}, `last reload ${new Date(x.reload.time * 1000).toLocaleTimeString()}: ${x.reload.changes}`));
    const card = el("div", { className: "card" }, el("h3", { textContent: x.name + " " }, ...tags), el("div", { className: "hint", textContent: x.file }), ...rows);
    card.dataset.plugin = x.name;
    return card;
  }));
  $("#failed").replaceChildren(p.failed ? el("div", { className: "card failed" },
    el("h3", { textContent: "last failed reload" }), el("pre", { textContent: p.failed.message })) : "");
}

function onReload(ev) {
  reloads.unshift(ev);
  $("#reloads").prepend(el("li", { className: "l-" + ev.level, textContent: `${new Date().toLocaleTimeString()} ${ev.msg}` }));
  loadPlugins().catch(() => {});
}

// Logs.
const filter = $("#log-filter");
function logShown(ev) {
  const f = new FormData(filter);
  return LEVELS.indexOf(ev.level) >= LEVELS.indexOf(f.get("level")) &&
    (!f.get("plugin") || (ev.plugin || "").includes(f.get("plugin"))) &&
    (!f.get("tool") || (ev.tool || "").includes(f.get("tool")));
}
function onLog(ev) {
  const tr = el("tr", { className: "l-" + ev.level }, el("td", { textContent: new Date().toLocaleTimeString() }),
    el("td", { textContent: ev.level }), el("td", { textContent: ev.plugin || "" }), el("td", { textContent: ev.tool || "" }),
    el("td", { textContent: ev.msg }));
  tr.ev = ev;
  tr.hidden = !logShown(ev);
  const body = $("#log-table tbody");
  body.prepend(tr);
  if (body.rows.length > 500) body.lastChild.remove();
}
filter.oninput = () => { for (const tr of $("#log-table tbody").rows) tr.hidden = !logShown(tr.ev); };

// Numbers.
const charts = new Charts($("#charts"));
async function sample() { try { charts.add(await api("metrics")); } catch { /* offline: the next one */ } }
setInterval(sample, 2000);

// Traces.
const traces = new Traces($("#trace-list"));

// The event stream.
function stream() {
  const es = new EventSource("/console/events");
  es.onopen = () => { $("#live").className = "live on"; $("#live").textContent = "live"; };
  es.onerror = () => { $("#live").className = "live off"; $("#live").textContent = "reconnecting"; };
  es.addEventListener("calls", (m) => JSON.parse(m.data).forEach(callRow));
  es.addEventListener("call", (m) => { const ev = JSON.parse(m.data); callRow(ev); listeners.forEach((f) => f("call", ev)); });
  es.addEventListener("log", (m) => { const ev = JSON.parse(m.data); onLog(ev); listeners.forEach((f) => f("log", ev)); });
  es.addEventListener("span", (m) => traces.add(JSON.parse(m.data)));
  es.addEventListener("reload", (m) => { const ev = JSON.parse(m.data); onLog(ev); onReload(ev); });
}

stream();
sample();
loadPlugins().catch((e) => console.warn(e.message));
loadTools().catch((e) => { $("#tool-view").replaceChildren(el("p", { className: "iserror", textContent: "cannot reach /mcp: " + e.message })); });
