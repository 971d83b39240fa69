// A small MCP client over Streamable HTTP (2025-11-25) with fetch: the
// console's Tools panel speaks to /mcp as any client would.
const VERSION = "2025-11-25";

// Each JSON-RPC message of a response: one JSON body, or Server-Sent Events.
async function* messages(res) {
  const type = res.headers.get("content-type") || "";
  if (!type.startsWith("text/event-stream")) {
    const text = await res.text();
    if (text) yield JSON.parse(text);
    return;
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart());
      if (data.join("") !== "") yield JSON.parse(data.join("\n"));   // a priming event has none
    }
  }
}

export class Mcp {
  constructor(url = "/mcp") {
    this.url = url;
    this.session = null;
    this.next = 1;
  }

  async post(body, signal) {
    const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
                      "MCP-Protocol-Version": VERSION };
    if (this.session) headers["Mcp-Session-Id"] = this.session;
    const res = await fetch(this.url, { method: "POST", headers, body: JSON.stringify(body), signal });
    if (!res.ok && res.status !== 202) throw new Error(`/mcp answered ${res.status}: ${await res.text()}`);
    return res;
  }

  // A request; onMessage sees every notification on its stream.
  async request(method, params, { onMessage, signal, id } = {}) {
    id = id ?? this.next++;
    const res = await this.post({ jsonrpc: "2.0", id, method, params }, signal);
    for await (const msg of messages(res)) {
      if (msg.id === id && (msg.result !== undefined || msg.error !== undefined)) {
        if (msg.error) throw Object.assign(new Error(msg.error.message), { rpc: msg.error });
        return msg.result;
      }
      if (onMessage) onMessage(msg);
    }
    throw new Error("the stream ended without an answer");
  }

  async notify(method, params) {
    await this.post({ jsonrpc: "2.0", method, params });
  }

  async connect() {
    const res = await this.post({ jsonrpc: "2.0", id: this.next++, method: "initialize", params: {
      protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "luamcp-console", version: "1" } } });
    this.session = res.headers.get("mcp-session-id");
    for await (const msg of messages(res)) if (msg.error) throw new Error(msg.error.message);
    await this.notify("notifications/initialized");
  }

  async tools() {
    const all = [];
    let cursor;
    do {
      const r = await this.request("tools/list", cursor ? { cursor } : {});
      all.push(...r.tools);
      cursor = r.nextCursor;
    } while (cursor);
    return all;
  }
}
