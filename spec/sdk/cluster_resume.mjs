// Through HAProxy, after the spec killed an instance (spec/cluster_spec.lua):
// takes up each session of CLUSTER_SESSIONS ([{id, version}], from
// cluster_sessions.mjs) with a transport that carries its Mcp-Session-Id
// (the SDK does not initialize again then) and calls `whoami`. When that gets
// HTTP 404 (an instance that does not know the session), it does what the
// transport spec says a client MUST do: a new session, by a new initialize
// without a session id, and calls `whoami` there.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { errorInfo, report, run } from "./common.mjs";

const url = new URL(process.env.SDK_URL);
const whoami = (client) => client.callTool({ name: "whoami", arguments: {} }).then((r) => r.content[0].text);

async function open(sessionId, version) {
  const transport = new StreamableHTTPClientTransport(url, sessionId ? { sessionId } : undefined);
  if (version) transport.setProtocolVersion(version);
  const client = new Client({ name: "luamcp-cluster-spec", version: "0" });
  await client.connect(transport);
  return { client, transport };
}

run(async () => {
  const out = [];
  for (const s of JSON.parse(process.env.CLUSTER_SESSIONS)) {
    const entry = { id: s.id };
    const old = await open(s.id, s.version);
    try {
      entry.pid = await whoami(old.client);
      entry.again = await whoami(old.client);
    } catch (e) {
      entry.error = errorInfo(e);
    }
    await old.client.close();
    if (entry.error && entry.error.code === 404) {
      const fresh = await open();
      entry.newId = fresh.transport.sessionId;
      entry.newPid = await whoami(fresh.client);
      await fresh.client.close();
    }
    out.push(entry);
  }
  await report({ sessions: out, events: undefined });
});
