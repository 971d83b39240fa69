// Small helpers for test/conformance/run.sh, run with the cache's Node 22.
// No dependencies.
//
//   node util.mjs port                  a free TCP port on 127.0.0.1
//   node util.mjs wait URL SECONDS      exit 0 once URL answers HTTP at all, 1 if it never does
//   node util.mjs summary SUITE DIR LOG the per-scenario summary of a conformance run;
//                                       exit 1 when a scenario failed or none ran
import net from "node:net";
import fs from "node:fs";
import path from "node:path";

const [cmd, ...args] = process.argv.slice(2);

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(url, seconds) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await r.body?.cancel();
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return false;
}

// The CLI's own summary lines ("✓ name: 3 passed, 0 failed"), in order.
function cliSummary(log) {
  const out = [];
  let inSummary = false;
  for (const raw of log.split("\n")) {
    const line = raw.replace(/\x1b\[[0-9;]*m/g, "");
    if (line.startsWith("=== SUMMARY ===")) { inSummary = true; continue; }
    if (!inSummary) continue;
    const m = line.match(/^[✓✗] (\S+): (\d+) passed, (\d+) failed/);
    if (m) out.push({ scenario: m[1], passed: +m[2], failed: +m[3] });
  }
  return out;
}

// Errors the CLI printed for scenarios that could not run at all.
function runErrors(log) {
  const errs = {};
  const lines = log.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(/^Failed to run scenario (\S+): ?(.*)$/);
    if (m) errs[m[1]] = (m[2] || lines[i + 1] || "").trim();
  }
  return errs;
}

// checks.json of each scenario: DIR/server-<scenario>-<timestamp>/checks.json
function checksByScenario(dir) {
  const res = {};
  let entries = [];
  try { entries = fs.readdirSync(dir); } catch { return res; }
  for (const e of entries) {
    const m = e.match(/^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/);
    if (!m) continue;
    try {
      res[m[1]] = JSON.parse(fs.readFileSync(path.join(dir, e, "checks.json"), "utf8"));
    } catch { /* written only when the scenario ran */ }
  }
  return res;
}

function oneLine(s, max = 400) {
  s = String(s).replace(/\s+/g, " ").trim();
  return s.length > max ? s.slice(0, max - 3) + "..." : s;
}

function summary(suite, dir, logFile) {
  const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8") : "";
  const cli = cliSummary(log);
  const checks = checksByScenario(dir);
  const errors = runErrors(log);
  const names = cli.map((c) => c.scenario);
  for (const n of Object.keys(checks)) if (!names.includes(n)) names.push(n);

  let failedScenarios = 0;
  const lines = [];
  for (const name of names) {
    const list = checks[name];
    const c = cli.find((x) => x.scenario === name);
    const failures = list ? list.filter((k) => k.status === "FAILURE") : [];
    const warnings = list ? list.filter((k) => k.status === "WARNING") : [];
    const passed = list ? list.filter((k) => k.status === "SUCCESS").length : c?.passed ?? 0;
    const failed = list ? failures.length : c?.failed ?? 1;
    const ok = failed === 0 && (list !== undefined || c !== undefined);
    if (!ok) failedScenarios++;
    let head = `${ok ? "PASS" : "FAIL"} ${name}: ${passed} passed, ${failed} failed`;
    if (warnings.length) head += `, ${warnings.length} warning${warnings.length > 1 ? "s" : ""}`;
    if (ok && list && passed === 0) {
      // Every check was informational: the scenario did not apply.
      const why = list.map((k) => k.details?.message).filter(Boolean).pop();
      head += ` (nothing checked${why ? ": " + oneLine(why, 200) : ""})`;
    }
    lines.push("  " + head);
    for (const f of failures) {
      const msg = f.errorMessage ?? (f.details ? JSON.stringify(f.details) : f.description);
      lines.push(`      x [${f.id}] ${oneLine(msg)}`);
    }
    for (const w of warnings) {
      if (w.errorMessage) lines.push(`      ! [${w.id}] ${oneLine(w.errorMessage)}`);
    }
    if (!list && errors[name]) lines.push(`      x ${oneLine(errors[name])}`);
  }
  const total = names.length;
  console.log(`conformance ${suite}: ${total} scenario${total === 1 ? "" : "s"}, ` +
              `${total - failedScenarios} passed, ${failedScenarios} failed`);
  for (const l of lines) console.log(l);
  if (total === 0) console.log("  (no scenario ran: see the log)");
  return total > 0 && failedScenarios === 0;
}

switch (cmd) {
  case "port":
    console.log(await freePort());
    break;
  case "wait":
    process.exit((await waitFor(args[0], Number(args[1] || 10))) ? 0 : 1);
    break;
  case "summary":
    process.exit(summary(args[0], args[1], args[2]) ? 0 : 1);
    break;
  default:
    console.error("usage: util.mjs port | wait URL SECONDS | summary SUITE DIR LOG");
    process.exit(2);
}
