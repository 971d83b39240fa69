// The weather example's MCP App in a real browser: serves host.html (on
// 127.0.0.1) and sandbox.html (on localhost: another origin) with the
// packages they import from the cache's node_modules (an import map, no
// bundler), opens the host in Chromium (puppeteer-core, Debian's
// /usr/bin/chromium, headless), waits for the view to draw its chart, reads
// the view's DOM, takes a screenshot, and asks luamcp with two clients of its
// own (Node, the SDK v2 client): one that renders apps (the series the view
// should show) and one that does not (which tools it is shown).
//
// Environment (set by spec/apps_browser_spec.lua):
//   SDK_URL         luamcp's /mcp endpoint
//   SDK_REVISION    "default" (2025-11-25, a session) or a revision to pin ("2026-07-28")
//   APPS_CITY       the city asked for
//   APPS_SHOT       where the screenshot goes (a .png path)
//
// Prints one JSON line: {host, dom, reference, plainTools, console, shot}.
import { createServer } from "node:http";
import { readFile, mkdir, rename } from "node:fs/promises";
import { dirname, join, resolve, extname } from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const HERE = dirname(fileURLToPath(import.meta.url));
const NM = resolve(HERE, "../node_modules");
const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";
const revision = process.env.SDK_REVISION || "default";

// A bare specifier's file in node_modules, by the package's exports under
// the conditions a browser module loader has (browser, import, default).
async function resolveBare(spec) {
  const parts = spec.split("/");
  const name = spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  const sub = "." + spec.slice(name.length);
  const pkg = JSON.parse(await readFile(join(NM, name, "package.json"), "utf8"));
  const pick = (e) => {
    if (typeof e === "string" || e == null) return e;
    for (const [k, v] of Object.entries(e)) {
      if (k === "browser" || k === "import" || k === "default") {
        const r = pick(v);
        if (r) return r;
      }
    }
    return null;
  };
  let file;
  const exp = pkg.exports;
  if (exp && (typeof exp === "string" || !Object.keys(exp)[0].startsWith("."))) file = sub === "." ? pick(exp) : null;
  else if (exp) file = pick(exp[sub]);
  else file = sub === "." ? (pkg.module || pkg.main || "index.js") : sub;
  if (!file) throw new Error(`cannot resolve ${spec}`);
  return join(name, file);
}

// The import map of the module graph from the entry specifiers: every bare
// specifier met in a file reached (static or dynamic imports) that resolves.
async function importMap(entries) {
  const imports = {}, seen = new Set(), todo = [];
  const add = async (spec, dynamic) => {
    if (imports[spec]) return;
    try {
      const file = await resolveBare(spec);
      imports[spec] = "/nm/" + file;
      todo.push(file);
    } catch (e) {
      if (!dynamic) throw e;
    }
  };
  for (const e of entries) await add(e, false);
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s*)(["'])([^"'\s]+)\1/g;
  while (todo.length) {
    const file = todo.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    const src = await readFile(join(NM, file), "utf8");
    for (const m of src.matchAll(re)) {
      const spec = m[2];
      if (spec.startsWith(".")) todo.push(join(dirname(file), spec));
      else if (!spec.startsWith("node:")) await add(spec, true);
    }
  }
  return { imports };
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json" };

async function serve(config) {
  const map = await importMap(["@modelcontextprotocol/client", "@modelcontextprotocol/ext-apps/app-bridge"]);
  const server = createServer(async (req, res) => {
    try {
      const path = new URL(req.url, "http://x").pathname;
      let body, type;
      if (path === "/host.html") {
        body = (await readFile(join(HERE, "host.html"), "utf8"))
          .replace("__IMPORTMAP__", () => JSON.stringify(map))
          .replace("__CONFIG__", () => JSON.stringify(config(server.address().port)));
        type = TYPES[".html"];
      } else if (path === "/sandbox.html") {
        body = await readFile(join(HERE, "sandbox.html"));
        type = TYPES[".html"];
      } else if (path.startsWith("/nm/") && !path.includes("..")) {
        body = await readFile(join(NM, decodeURIComponent(path.slice(4))));
        type = TYPES[extname(path)] || "application/octet-stream";
      } else {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "Content-Type": type, "Cache-Control": "no-store" }).end(body);
    } catch (e) {
      res.writeHead(404).end(String(e));
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return server;
}

async function client(caps) {
  const opts = { capabilities: caps };
  if (revision !== "default") opts.versionNegotiation = { mode: { pin: revision } };
  const c = new Client({ name: "luamcp-apps-spec", version: "0" }, opts);
  await c.connect(new StreamableHTTPClientTransport(new URL(process.env.SDK_URL)));
  return c;
}

// The view's frame: the one whose body says how it ended (data-state).
async function viewFrame(page, deadline) {
  while (Date.now() < deadline) {
    for (const f of page.frames()) {
      const st = await f.evaluate(() => document.body?.dataset.state).catch(() => null);
      if (st) return f;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

async function main() {
  const city = process.env.APPS_CITY || "Lisbon";
  const server = await serve((port) => ({
    mcpUrl: process.env.SDK_URL, sandboxUrl: `http://localhost:${port}/sandbox.html`, revision, city,
  }));
  const port = server.address().port;
  const browser = await puppeteer.launch({
    executablePath: "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const consoleLines = [];
  let rep;
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 640, height: 560 });
    page.on("console", (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    page.on("pageerror", (e) => consoleLines.push(`pageerror: ${e.message}`));
    await page.goto(`http://127.0.0.1:${port}/host.html`);
    const frame = await viewFrame(page, Date.now() + 30000);
    const host = await page.evaluate(() => window.hostState);
    const dom = frame && await frame.evaluate(() => ({
      state: document.body.dataset.state,
      title: document.getElementById("title").textContent,
      summary: document.getElementById("summary").textContent,
      values: document.getElementById("values").textContent,
      points: [...document.querySelectorAll("#chart circle")].map((c) => ({
        hour: Number(c.dataset.hour), temp: Number(c.dataset.temp) })),
      polyline: (document.querySelector("#chart polyline")?.getAttribute("points") || "").trim().split(/\s+/).length,
      origin: self.origin, sandboxed: window.parent !== window.top,
    }));
    // written aside, then renamed: a run beside this one (the ASan specs) may read the same file
    const tmp = `${process.env.APPS_SHOT}.${process.pid}.png`;
    await mkdir(dirname(process.env.APPS_SHOT), { recursive: true });
    await page.screenshot({ path: tmp });
    await rename(tmp, process.env.APPS_SHOT);
    const renders = await client({ extensions: { [UI]: { mimeTypes: [MIME] } } });
    const reference = (await renders.callTool({ name: "weather_series", arguments: { city, hours: 24 } })).structuredContent;
    await renders.close();
    const plain = await client({});
    const plainTools = (await plain.listTools()).tools.map((t) => t.name).sort();
    await plain.close();
    rep = { host, dom, reference, plainTools, console: consoleLines, shot: process.env.APPS_SHOT };
  } finally {
    await browser.close();
    server.close();
  }
  process.stdout.write(JSON.stringify(rep) + "\n", () => process.exit(0));
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ crashed: String(e?.stack ?? e) }) + "\n", () => process.exit(1));
});
