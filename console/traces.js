// The Traces panel: the spans of each recent trace as a waterfall, from the
// event stream's "span" events (tracing on). A cancelled span is marked.
const SVG = "http://www.w3.org/2000/svg";
const KEEP = 20;                        // traces shown
const ROW = 18, LABEL = 260, WIDTH = 1000;

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

export class Traces {
  constructor(box) { this.box = box; this.traces = new Map(); }

  add(span) {
    let t = this.traces.get(span.trace);
    if (!t) {
      t = { spans: [], node: document.createElement("div") };
      t.node.className = "trace";
      t.node.dataset.trace = span.trace;
      this.traces.set(span.trace, t);
      this.box.prepend(t.node);
      if (this.traces.size > KEEP) {
        const [old] = this.traces.keys();
        this.traces.get(old).node.remove();
        this.traces.delete(old);
      }
    }
    t.spans.push(span);
    this.draw(t);
  }

  draw(t) {
    const byId = new Map(t.spans.map((s) => [s.span, s]));
    const depth = (s) => { let d = 0; for (let p = byId.get(s.parent); p && d < 10; p = byId.get(p.parent)) d++; return d; };
    const spans = [...t.spans].sort((a, b) => a.start_us - b.start_us || depth(a) - depth(b));
    const t0 = spans[0].start_us;
    const end = Math.max(...spans.map((s) => s.start_us + s.dur_us));
    const scale = (WIDTH - LABEL - 150) / Math.max(end - t0, 1);
    const pic = svg("svg", { viewBox: `0 0 ${WIDTH} ${spans.length * ROW + 4}` });
    spans.forEach((s, i) => {
      const y = i * ROW + 2, x = LABEL + (s.start_us - t0) * scale;
      const state = s.cancelled !== undefined ? "cancelled" : s.error !== undefined ? "error" : "";
      pic.append(svg("text", { x: 4 + depth(s) * 12, y: y + 12 }, s.name));
      const bar = svg("rect", { x, y: y + 2, width: Math.max(s.dur_us * scale, 2), height: ROW - 6, class: "bar " + state });
      bar.append(svg("title", {}, `${s.name}: ${(s.dur_us / 1000).toFixed(1)} ms` +
        (state === "cancelled" ? ` (cancelled: ${s.cancelled})` : state ? ` (${s.error})` : "")));
      pic.append(bar);
      pic.append(svg("text", { x: x + Math.max(s.dur_us * scale, 2) + 4, y: y + 12, class: "dur" },
        `${(s.dur_us / 1000).toFixed(1)} ms${state === "cancelled" ? " · cancelled" : ""}`));
      if (state) t.node.classList.add(state);
    });
    const head = document.createElement("h3");
    head.textContent = `trace ${t.spans[0].trace.slice(0, 12)}… · ${spans[0].name} · ${((end - t0) / 1000).toFixed(1)} ms`;
    t.node.replaceChildren(head, pic);
  }
}
