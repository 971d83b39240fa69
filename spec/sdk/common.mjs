// Shared by the spec/sdk scripts: connects the official TypeScript SDK client
// to luamcp and records every message on the wire.
//
// Environment (set by spec/sdk_spec.lua):
//   SDK_TRANSPORT  "stdio" (the client starts SDK_COMMAND with SDK_ARGS) or "http"
//   SDK_COMMAND, SDK_ARGS (a JSON array)   the server, for stdio
//   SDK_URL        the server's /mcp endpoint, for http
//
// A script ends with report({...}): one JSON line on stdout with its own facts
// plus `events` (every message in order: {seq, dir: "in"|"out", msg}),
// `stderr` (the server's stderr lines, stdio only), `errors` and `closeErrors`
// (client.onerror).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export const events = [];
export const stderr = [];
export const errors = [];
const mode = process.env.SDK_TRANSPORT || "stdio";
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function record(dir, msg) { events.push({ seq: events.length + 1, dir, msg }); }

// Wraps a transport so that every message it sends or delivers is recorded.
function tap(transport) {
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => { record("out", msg); return send(msg, opts); };
  let inner;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get() { return inner && ((msg, extra) => { record("in", msg); inner(msg, extra); }); },
    set(fn) { inner = fn; },
  });
  return transport;
}

export async function connect() {
  let transport;
  if (mode === "stdio") {
    transport = new StdioClientTransport({
      command: process.env.SDK_COMMAND,
      args: JSON.parse(process.env.SDK_ARGS || "[]"),
      env: { ...process.env },
      stderr: "pipe",
    });
    let buf = "";
    transport.stderr.on("data", (d) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) { stderr.push(buf.slice(0, nl)); buf = buf.slice(nl + 1); }
    });
  } else if (mode === "http") {
    transport = new StreamableHTTPClientTransport(new URL(process.env.SDK_URL));
  } else {
    throw new Error("SDK_TRANSPORT must be stdio or http, not " + mode);
  }
  const client = new Client({ name: "luamcp-sdk-spec", version: "0" });
  client.onerror = (e) => errors.push(String(e?.message ?? e));
  await client.connect(tap(transport));
  return { client, transport, mode };
}

// Waits until pred() holds or ms pass; returns pred().
export async function waitUntil(pred, ms) {
  const end = Date.now() + ms;
  while (!pred() && Date.now() < end) await sleep(10);
  return pred();
}

// After a cancel: over stdio, waits for the handler's "stopped" line on the
// server's stderr; then listens for `quiet` ms more, so that a response or
// progress sent after the cancel would be recorded.
export async function linger(quiet = 500) {
  if (mode === "stdio") await waitUntil(() => stderr.some((l) => /^fixture: wait \S+ stopped/.test(l)), 10000);
  else await sleep(quiet);   // the spec reads the server's stderr itself
  await sleep(quiet);
}

export function errorInfo(e) {
  return e ? { name: e.constructor?.name, code: e.code, message: String(e.message ?? e) } : null;
}

// `errors` holds what client.onerror saw before the close, `closeErrors` what
// it saw while closing (an SSE reconnection the close aborts, for one).
export async function report(facts, client) {
  const before = [...errors];
  if (client) {
    try { await client.close(); } catch (e) { errors.push("close: " + String(e)); }
  }
  const closeErrors = errors.slice(before.length);
  const line = JSON.stringify({ ...facts, events, stderr, errors: before, closeErrors }) + "\n";
  process.stdout.write(line, () => process.exit(0));
}

// A script's top level: runs main(), reports a crash as {crashed} and exit 1.
export function run(main) {
  main().catch((e) => {
    process.stdout.write(JSON.stringify({ crashed: String(e?.stack ?? e), events, stderr, errors }) + "\n",
      () => process.exit(1));
  });
}
