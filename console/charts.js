// The Numbers panel: per tool, from /console/api/metrics (the /metrics
// text): calls and errors a second, p50 and p99 of the handler's time.
import { el } from "./form.js";

const SVG = "http://www.w3.org/2000/svg";
const KEEP = 150;                       // points kept: 5 minutes at one every 2 s

// {tool: {ok, err, buckets: [[le, count]...]}} of tools/call from the text.
export function parse(text) {
  const tools = {};
  const at = (tool) => (tools[tool] ??= { ok: 0, err: 0, cancelled: 0, buckets: [] });
  for (const line of text.split("\n")) {
    const m = line.match(/^(luamcp_requests_total|luamcp_handler_duration_seconds_bucket)\{([^}]*)\} ([0-9.eE+-]+)/);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (labels.method !== "tools/call" || !labels.tool) continue;
    const v = Number(m[3]);
    if (m[1] === "luamcp_requests_total") {
      if (labels.outcome === "ok") at(labels.tool).ok += v;
      else if (labels.outcome === "error") at(labels.tool).err += v;
      else at(labels.tool).cancelled += v;
    } else {
      at(labels.tool).buckets.push([labels.le === "+Inf" ? Infinity : Number(labels.le), v]);
    }
  }
  return tools;
}

// The q quantile of the calls between two cumulative bucket lists.
function quantile(now, then, q) {
  const d = now.map(([le, n], i) => [le, n - (then?.[i]?.[1] ?? 0)]);
  const total = d.length ? d[d.length - 1][1] : 0;
  if (total <= 0) return null;
  for (const [le, n] of d) if (n >= q * total) return le;
  return null;
}

const all = (t) => t.ok + t.err + t.cancelled;

function ms(s) { return s == null ? "–" : s === Infinity ? "> max" : s < 1 ? (s * 1000).toFixed(s < 0.01 ? 1 : 0) + " ms" : s.toFixed(2) + " s"; }

export class Charts {
  constructor(box) { this.box = box; this.samples = []; this.cards = {}; }

  add(text, t = Date.now()) {
    this.samples.push({ t, tools: parse(text) });
    if (this.samples.length > KEEP) this.samples.shift();
    this.draw();
  }

  draw() {
    const s = this.samples, last = s[s.length - 1];
    if (!last) return;
    const minuteAgo = s.find((x) => x.t >= last.t - 60000) || s[0];
    for (const [tool, now] of Object.entries(last.tools)) {
      const rates = [], errs = [];
      for (let i = 1; i < s.length; i++) {
        const a = s[i - 1].tools[tool], b = s[i].tools[tool], dt = (s[i].t - s[i - 1].t) / 1000;
        rates.push(b && a ? (all(b) - all(a)) / dt : 0);
        errs.push(b && a ? (b.err - a.err) / dt : 0);
      }
      const then = minuteAgo.tools[tool];
      const calls = all(now) - (then ? all(then) : 0);
      const seconds = Math.max((last.t - minuteAgo.t) / 1000, 1);
      const card = this.card(tool);
      card.nums.textContent = `${(calls / seconds).toFixed(2)} calls/s · errors ${now.err - (then?.err ?? 0)}` +
        ` · p50 ${ms(quantile(now.buckets, then?.buckets, 0.5))} · p99 ${ms(quantile(now.buckets, then?.buckets, 0.99))}` +
        ` · cancelled ${now.cancelled - (then?.cancelled ?? 0)} · ${all(now)} calls in all`;
      plot(card.calls, rates);
      plot(card.errs, errs, Math.max(...rates, 0.001));
    }
  }

  card(tool) {
    if (this.cards[tool]) return this.cards[tool];
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", `0 0 ${KEEP} 60`);
    svg.setAttribute("preserveAspectRatio", "none");
    const axis = document.createElementNS(SVG, "line");
    Object.entries({ x1: 0, y1: 59, x2: KEEP, y2: 59, class: "axis" }).forEach(([k, v]) => axis.setAttribute(k, v));
    const calls = document.createElementNS(SVG, "polyline"), errs = document.createElementNS(SVG, "polyline");
    calls.setAttribute("class", "calls");
    errs.setAttribute("class", "errs");
    svg.append(axis, calls, errs);
    const nums = el("div", { className: "nums" });
    const node = el("div", { className: "chart" }, el("h3", { textContent: tool }), svg, nums);
    node.dataset.tool = tool;
    this.box.append(node);
    return (this.cards[tool] = { nums, calls, errs });
  }
}

function plot(line, values, top) {
  const max = top ?? Math.max(...values, 0.001);
  const x0 = KEEP - values.length;
  line.setAttribute("points", values.map((v, i) => `${x0 + i},${(58 - (v / max) * 54).toFixed(1)}`).join(" "));
}
