// Shared by the spec/sdk2 scripts: connects the official TypeScript SDK v2
// client (@modelcontextprotocol/client) to luamcp over Streamable HTTP and
// records every message on the wire.
//
// Environment (set by spec/sdk2_spec.lua):
//   SDK_URL       the server's /mcp endpoint
//   SDK_REVISION  "default" (the client's own choice: no versionNegotiation
//                 option), "auto" (versionNegotiation mode 'auto': probe with
//                 server/discover) or a revision to pin ("2026-07-28":
//                 versionNegotiation mode {pin})
//
// A script ends with report({...}): one JSON line on stdout with its own facts
// plus `era` and `protocolVersion` (what the client negotiated), `events`
// (every message in order: {seq, dir: "in"|"out", msg}, and {seq, dir:
// "mark", what} from mark()), `http` (every HTTP request the transport made:
// {seq, method, protocolVersion, sessionId, mcpMethod, mcpName, status,
// aborted, abortedAt}; at the end, after the close), `errors` and
// `closeErrors` (client.onerror). seq numbers are shared by events and HTTP
// requests.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

export const events = [];
export const http = [];
export const errors = [];
const revision = process.env.SDK_REVISION || "default";
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let seq = 0;
function record(dir, msg) { events.push({ seq: ++seq, dir, msg }); }

// A point in the sequence of events and HTTP requests (e.g. "abort").
export function mark(what) { events.push({ seq: ++seq, dir: "mark", what }); }

// The HTTP requests as they are now (the close aborts every open one later).
export function httpNow() { return http.map((e) => ({ ...e })); }

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

// The transport's fetch, recording each HTTP request: its headers, its status,
// and whether the client aborted it (how a 2026-07-28 client cancels).
async function recordingFetch(url, init = {}) {
  const h = new Headers(init.headers);
  const entry = {
    seq: ++seq, method: init.method || "GET",
    protocolVersion: h.get("mcp-protocol-version"), sessionId: h.get("mcp-session-id"),
    mcpMethod: h.get("mcp-method"), mcpName: h.get("mcp-name"), status: null, aborted: false,
  };
  http.push(entry);
  init.signal?.addEventListener("abort", () => { entry.aborted = true; entry.abortedAt = ++seq; });
  const res = await fetch(url, init);
  entry.status = res.status;
  return res;
}

export async function connect() {
  const opts = {};
  if (revision === "auto") opts.versionNegotiation = { mode: "auto" };
  else if (revision !== "default") opts.versionNegotiation = { mode: { pin: revision } };
  const transport = new StreamableHTTPClientTransport(new URL(process.env.SDK_URL), { fetch: recordingFetch });
  const client = new Client({ name: "luamcp-sdk2-spec", version: "0" }, opts);
  client.onerror = (e) => errors.push(String(e?.message ?? e));
  await client.connect(tap(transport));
  return { client, transport };
}

export function errorInfo(e) {
  return e ? { name: e.constructor?.name, code: e.code, message: String(e.message ?? e) } : null;
}

// `errors` holds what client.onerror saw before the close, `closeErrors` what
// it saw while closing.
export async function report(facts, client) {
  const before = [...errors];
  const era = client?.getProtocolEra();
  const protocolVersion = client?.getNegotiatedProtocolVersion();
  if (client) {
    try { await client.close(); } catch (e) { errors.push("close: " + String(e)); }
  }
  const closeErrors = errors.slice(before.length);
  const line = JSON.stringify({ ...facts, revision, era, protocolVersion, events, http,
                                errors: before, closeErrors }) + "\n";
  process.stdout.write(line, () => process.exit(0));
}

// A script's top level: runs main(), reports a crash as {crashed} and exit 1.
export function run(main) {
  main().catch((e) => {
    process.stdout.write(JSON.stringify({ crashed: String(e?.stack ?? e), events, http, errors }) + "\n",
      () => process.exit(1));
  });
}
