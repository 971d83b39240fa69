// Small helpers for test/conformance/run.sh, run with the cache's Node 22.
// No dependencies of its own (a requirement set's YAML is read with the
// `yaml` package the conformance suite itself uses).
//
//   node util.mjs wait URL SECONDS
//       exit 0 once URL answers HTTP at all, 1 if it never does
//   node util.mjs summary SET DIR LOG --requirements FILE
//   node util.mjs summary SET DIR LOG --scenarios NAME,NAME...
//       the per-scenario summary of a run: DIR holds the CLI's results
//       (server-<scenario>-<timestamp>/checks.json), LOG its output. With
//       --requirements (a requirements/<revision>.yaml of the suite) the
//       scenarios are the set's scored ones and its not_scored ones; with
//       --scenarios, those. Exit 1 when a counted scenario failed or did not
//       run, or none was counted.
//
// What counts: every scenario of the run, scored or not (pending,
// added-after-release), except the set's `extension` ones, which are listed
// on one line and not counted here (run.sh's `tasks` set runs and counts the
// tasks-* ones on their own). A scenario passes when none of its checks is a
// FAILURE; one whose checks were all SKIPPED by the suite itself is reported
// as SKIP and counts neither way.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [cmd, ...args] = process.argv.slice(2);

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

// The scenarios of a requirement set's server leg: [{name, reason}] (reason:
// undefined when scored, else the not_scored reason).
function requirementSet(file) {
  const YAML = createRequire(path.resolve(file))("yaml");
  const doc = YAML.parse(fs.readFileSync(file, "utf8")) ?? {};
  const out = (doc.server ?? []).map((name) => ({ name }));
  for (const e of doc.not_scored ?? []) {
    if (e.leg === "server") out.push({ name: e.scenario, reason: e.reason });
  }
  return out;
}

// Errors the CLI printed for scenarios that could not run at all.
function runErrors(log) {
  const errs = {};
  const lines = log.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(/^Failed to run scenario (\S+?):? ?(.*)$/);
    if (m) errs[m[1]] = (m[2] || lines[i + 1] || "").trim();
  }
  return errs;
}

// checks.json of each scenario: DIR/server-<scenario>-<timestamp>/checks.json
// (the latest, should a scenario have run twice).
function checksByScenario(dir) {
  const res = {};
  let entries = [];
  try { entries = fs.readdirSync(dir).sort(); } catch { return res; }
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

// One scenario's verdict: {verdict: PASS|FAIL|SKIP, head, details[]}.
function judge(name, list, runError) {
  if (!list) {
    return { verdict: "FAIL", head: `${name}: did not run (no checks.json)`,
             details: [`      x ${oneLine(runError || "see the CLI log")}`] };
  }
  const count = (s) => list.filter((k) => k.status === s);
  const failures = count("FAILURE"), warnings = count("WARNING"), skipped = count("SKIPPED");
  const passed = count("SUCCESS").length;
  const details = [];
  for (const f of failures) {
    const msg = f.errorMessage ?? (f.details ? JSON.stringify(f.details) : f.description);
    details.push(`      x [${f.id}] ${oneLine(msg)}`);
  }
  for (const w of warnings) {
    if (w.errorMessage) details.push(`      ! [${w.id}] ${oneLine(w.errorMessage)}`);
  }
  let head = `${name}: ${passed} passed, ${failures.length} failed`;
  if (warnings.length) head += `, ${warnings.length} warning${warnings.length > 1 ? "s" : ""}`;
  if (failures.length) return { verdict: "FAIL", head, details };
  if (passed === 0 && skipped.length > 0) {
    const why = skipped.map((k) => k.errorMessage ?? k.details?.message).filter(Boolean).pop();
    return { verdict: "SKIP", head: `${name}: skipped by the suite${why ? ": " + oneLine(why, 300) : ""}`, details };
  }
  if (passed === 0) {
    // Every check was informational: the scenario did not apply.
    const why = list.map((k) => k.details?.message ?? k.errorMessage).filter(Boolean).pop();
    head += ` (nothing checked${why ? ": " + oneLine(why, 200) : ""})`;
  }
  return { verdict: "PASS", head, details };
}

function summary(set, dir, logFile, opt, value) {
  const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8") : "";
  let scenarios;
  if (opt === "--requirements") scenarios = requirementSet(value);
  else if (opt === "--scenarios") scenarios = value.split(",").filter(Boolean).map((name) => ({ name }));
  else throw new Error("summary needs --requirements FILE or --scenarios LIST");
  const checks = checksByScenario(dir);
  const errors = runErrors(log);

  const n = { PASS: 0, FAIL: 0, SKIP: 0 };
  const lines = [], aside = [];
  for (const { name, reason } of scenarios) {
    const j = judge(name, checks[name], errors[name]);
    if (reason === "extension") { aside.push(`${name} ${j.verdict}`); continue; }
    n[j.verdict]++;
    const tag = reason ? ` [not scored: ${reason}]` : "";
    lines.push(`  ${j.verdict} ${j.head.replace(/^(\S+):/, `$1${tag}:`)}`);
    lines.push(...j.details);
  }
  const counted = n.PASS + n.FAIL + n.SKIP;
  const ok = n.FAIL === 0 && n.PASS > 0;
  let head = `conformance ${set}: ${ok ? "PASS" : "FAIL"}, ${counted} scenario${counted === 1 ? "" : "s"}: ` +
             `${n.PASS} passed, ${n.FAIL} failed`;
  if (n.SKIP) head += `, ${n.SKIP} skipped by the suite`;
  console.log(head);
  for (const l of lines) console.log(l);
  if (aside.length) {
    console.log(`  also run, not counted here (extension; the tasks set counts the tasks-* ones): ${aside.join(", ")}`);
  }
  if (counted === 0) console.log("  (no scenario ran: see the CLI log)");
  return ok;
}

switch (cmd) {
  case "wait":
    process.exit((await waitFor(args[0], Number(args[1] || 10))) ? 0 : 1);
    break;
  case "summary":
    process.exit(summary(...args) ? 0 : 1);
    break;
  default:
    console.error("usage: util.mjs wait URL SECONDS | summary SET DIR LOG (--requirements FILE | --scenarios LIST)");
    process.exit(2);
}
