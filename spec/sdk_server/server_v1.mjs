// The official TypeScript SDK v1 server (@modelcontextprotocol/sdk), an
// upstream for spec/client_spec.lua: `node server_v1.mjs stdio` or
// `node server_v1.mjs http` (Streamable HTTP with sessions on a free port,
// which it names on stderr: "listening on PORT"). Tools: echo {text}, and
// slow {steps, delay, tag} (progress each step), which says
// "sdk: slow aborted TAG" on stderr when its request is cancelled.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { slow } from "./common.mjs";

function make() {
  const server = new McpServer({ name: "sdk-v1", version: "1.0.0" });
  server.registerTool("echo", { description: "Echoes its text", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }));
  server.registerTool("slow", {
    description: "Steps with progress",
    inputSchema: { steps: z.number().optional(), delay: z.number().optional(), tag: z.string().optional() },
  }, async (args, extra) => slow(args, extra.signal, extra._meta?.progressToken,
    (n) => extra.sendNotification(n)));
  return server;
}

if (process.argv[2] === "http") {
  const sessions = {};
  const srv = http.createServer(async (req, res) => {
    let body;
    if (req.method === "POST") {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      try { body = JSON.parse(Buffer.concat(chunks).toString()); } catch { body = undefined; }
    }
    const sid = req.headers["mcp-session-id"];
    let t = sid && sessions[sid];
    if (!t) {
      if (sid || !(req.method === "POST" && isInitializeRequest(body))) {
        res.writeHead(sid ? 404 : 400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null,
          error: { code: -32000, message: sid ? "Session not found" : "Bad Request: no session" } }));
        return;
      }
      t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => { sessions[id] = t; },
      });
      await make().connect(t);
    }
    await t.handleRequest(req, res, body);
  });
  srv.listen(0, "127.0.0.1", () => console.error(`listening on ${srv.address().port}`));
} else {
  await make().connect(new StdioServerTransport());
}
