// spec/console_spec.lua's browser: Debian's Chromium, headless, through
// puppeteer-core. Env: CONSOLE_URL (with its token), BASE (http://host:port),
// PLUGIN_FILE (a plugin file the server watches, edited here), SHOTS (where
// the screenshots go). Prints one JSON report line.
import puppeteer from "puppeteer-core";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";

const { CONSOLE_URL, BASE, PLUGIN_FILE, SHOTS } = process.env;
const report = { checks: {}, console_errors: [], csp: [], steps: [] };
const step = (s) => report.steps.push(s);

// Another client, elsewhere: its own session, a call that it does not wait for.
async function otherClient() {
  const h = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  const init = await fetch(BASE + "/mcp", { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id: 1,
    method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "other", version: "1" } } }) });
  await init.text();
  h["Mcp-Session-Id"] = init.headers.get("mcp-session-id");
  await (await fetch(BASE + "/mcp", { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text();
  return (name, args, id) => fetch(BASE + "/mcp", { method: "POST", headers: h,
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }) }).then((r) => r.text());
}

const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 640 });
  page.on("console", (m) => { if (m.type() === "error") report.console_errors.push(m.text()); });
  page.on("response", (r) => { if (r.status() >= 400) report.steps.push(`${r.status()} ${r.url()}`); });
  page.on("pageerror", (e) => report.console_errors.push(String(e)));
  await page.evaluateOnNewDocument(() => {
    document.addEventListener("securitypolicyviolation", (e) => (window.__csp ||= []).push(e.violatedDirective + " " + e.blockedURI));
  });
  const shot = (name) => page.screenshot({ path: `${SHOTS}/${name}.png` });
  mkdirSync(SHOTS, { recursive: true });

  // No token: refused.
  const stranger = await browser.newPage();   // its errors (a favicon's 404) are not the console's
  report.checks.without_token = (await stranger.goto(BASE + "/console/")).status();
  report.checks.without_token_body = await stranger.evaluate(() => document.body.textContent);
  await stranger.close();

  // With it: the page, then its cookie.
  const res = await page.goto(CONSOLE_URL, { waitUntil: "domcontentloaded" });
  report.checks.with_token = res.status();
  report.checks.url_after = page.url();
  await page.waitForSelector("#tool-list li[data-tool=greet]");
  await page.waitForSelector("#live.on");
  step("loaded");

  // Tools: the generated form, progress, the result.
  await page.click("#tool-list li[data-tool=greet]");
  report.checks.fields = await page.$$eval("#tool-view .field", (f) => f.map((x) => x.dataset.name));
  report.checks.required = await page.$$eval("#tool-view .field .req", (r) => r.length);
  report.checks.default_times = await page.$eval("#tool-view .field[data-name=times] input", (i) => i.value);
  report.checks.mood_default = await page.$eval("#tool-view .field[data-name=mood] select", (s) => s.options[s.selectedIndex].textContent);
  await page.type("#tool-view .field[data-name=name] input", "Ada");
  await page.click("#tool-view .field[data-name=loud] input");
  await page.click("#tool-view .field[data-name=tags] button");
  await page.type("#tool-view .field[data-name=tags] .items input", "math");
  await page.type("#tool-view .field[data-name=city] input", "London");
  await page.click("#tool-view button.run");
  await page.waitForFunction(() => !document.querySelector("#tool-view .out").hidden);
  report.checks.greet_result = await page.$eval("#tool-view .out", (o) => o.textContent);
  await page.setViewport({ width: 1100, height: 900 });
  await shot("tools-form");
  await page.setViewport({ width: 1100, height: 640 });
  step("greet ran");

  await page.click("#tool-list li[data-tool=slow]");
  await page.$eval("#tool-view .field[data-name=steps] input", (i) => (i.value = ""));
  await page.type("#tool-view .field[data-name=steps] input", "4");
  await page.click("#tool-view button.run");
  await page.waitForFunction(() => /progress 2 \/ 4/.test(document.querySelector("#tool-view .actions").textContent));
  report.checks.progress_seen = await page.$eval("#tool-view .actions", (a) => a.textContent);
  await shot("tools-progress");
  await page.waitForFunction(() => !document.querySelector("#tool-view .out").hidden);
  report.checks.slow_result = await page.$eval("#tool-view .out", (o) => o.textContent);
  await shot("tools");
  step("slow ran");

  // The Tools panel's Cancel: notifications/cancelled, then what the handler did.
  await page.$eval("#tool-view .field[data-name=steps] input", (i) => (i.value = "50"));
  await page.click("#tool-view button.run");
  await page.waitForFunction(() => /progress 1/.test(document.querySelector("#tool-view .actions").textContent));
  await page.click("#tool-view button.stop");
  await page.waitForFunction(() => /the call ended/.test(document.querySelector("#tool-view .after").textContent), { timeout: 15000 });
  report.checks.tools_cancel_after = await page.$eval("#tool-view .after", (a) => a.textContent);
  await shot("tools-cancel");
  step("tools cancel");

  // Calls: another client's long call, cancelled from the panel.
  const other = await otherClient();
  const long = other("slow", { steps: 100 }, "long-1");
  await page.click("#tabs button[data-panel=calls]");
  await page.waitForSelector("#call-table tr.s-running[data-id$='.%22long-1%22'] button.stop");
  await shot("calls-running");
  await page.click("#call-table tr[data-id$='.%22long-1%22'] button.stop");
  await page.waitForSelector("#call-table tr.s-cancelled[data-id$='.%22long-1%22']", { timeout: 15000 });
  report.checks.calls_cancelled_row = await page.$eval("#call-table tr[data-id$='.%22long-1%22']", (r) => r.textContent);
  step("calls cancel");

  // A sandboxed call past its CPU limit.
  await other("spin", {}, "spin-1");
  await page.waitForSelector("#call-table tr[data-id$='.%22spin-1%22'].s-failed");
  report.checks.spin_row = await page.$eval("#call-table tr[data-id$='.%22spin-1%22']", (r) => r.textContent);
  await shot("calls");
  step("spin");
  long.catch(() => {});

  // Logs: the handler's own stop message, filtered by tool.
  await page.click("#tabs button[data-panel=logs]");
  await page.type("#log-filter input[name=tool]", "slow");
  report.checks.log_lines = await page.$$eval("#log-table tr", (r) => r.filter((x) => !x.hidden).map((x) => x.textContent));
  await shot("logs");

  // Plugins: an edit reloads, a broken edit fails with file:line.
  await page.click("#tabs button[data-panel=plugins]");
  await page.waitForSelector("#plugin-cards .card[data-plugin=hog]");
  const source = readFileSync(PLUGIN_FILE, "utf8");
  writeFileSync(PLUGIN_FILE, source.replace('mcp.tool {\n      name = "slow"',
    'mcp.tool { name = "wave", description = "Wave", handler = function() return mcp.text("o/") end },\n    mcp.tool {\n      name = "slow"'));
  await page.waitForFunction(() => /reloaded plugin desk/.test(document.querySelector("#reloads").textContent), { timeout: 15000 });
  await page.waitForFunction(() => /wave/.test(document.querySelector("#plugin-cards .card[data-plugin=desk]").textContent));
  report.checks.reload_line = await page.$eval("#reloads", (r) => r.textContent);
  writeFileSync(PLUGIN_FILE, source.replace("return mcp.plugin {", "return mcp.plugin {\n  oops oops"));
  await page.waitForFunction(() => /plugin not reloaded/.test(document.querySelector("#reloads").textContent), { timeout: 15000 });
  await page.waitForFunction(() => document.querySelector("#failed").textContent.length > 0);
  report.checks.failed = await page.$eval("#failed", (f) => f.textContent);
  report.checks.desk_card = await page.$eval("#plugin-cards .card[data-plugin=desk]", (c) => c.textContent);
  report.checks.hog_card = await page.$eval("#plugin-cards .card[data-plugin=hog]", (c) => c.textContent);
  await shot("plugins");
  writeFileSync(PLUGIN_FILE, source);
  step("plugins");

  // Numbers: charts from the metrics.
  await page.click("#tabs button[data-panel=numbers]");
  await page.waitForFunction(() => {
    const l = document.querySelector(".chart[data-tool=greet] polyline.calls");
    return l && l.getAttribute("points").split(" ").length >= 2;
  }, { timeout: 15000 });
  report.checks.charts = await page.$$eval(".chart", (c) => c.map((x) => x.dataset.tool));
  report.checks.greet_numbers = await page.$eval(".chart[data-tool=greet] .nums", (n) => n.textContent);
  await shot("numbers");
  step("numbers");

  // Traces (tracing is on): the waterfall, the cancelled call's span marked.
  await page.click("#tabs button[data-panel=traces]");
  await page.waitForSelector("#trace-list .trace.cancelled rect.bar.cancelled", { timeout: 15000 });
  report.checks.cancelled_trace = await page.$eval("#trace-list .trace.cancelled", (t) => t.textContent);
  report.checks.traces = await page.$$eval("#trace-list .trace", (t) => t.length);
  await shot("traces");
  step("traces");

  report.csp = await page.evaluate(() => window.__csp || []);
  report.ok = true;
  report.failed_requests = report.steps.filter((s) => /^\d{3} /.test(s));
} catch (e) {
  report.crashed = String(e.stack || e) + "\nsteps: " + report.steps.join(", ") + "\nerrors: " + report.console_errors.join("\n");
  try { await (await browser.pages()).at(-1).screenshot({ path: `${SHOTS}/crash.png` }); } catch {}
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
process.exit(0);
