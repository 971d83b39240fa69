// The official TypeScript SDK v2 server (@modelcontextprotocol/server, the
// 2026-07-28 line), an upstream for spec/client_spec.lua: `node
// server_v2.mjs stdio` or `node server_v2.mjs http` (createMcpHandler
// behind node:http on a free port, named on stderr: "listening on PORT"; a
// connection closed before the answer aborts the request). Same tools as
// server_v1.mjs.
import http from "node:http";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";
import { slow } from "./common.mjs";

function make() {
  const server = new McpServer({ name: "sdk-v2", version: "2.0.0" });
  server.registerTool("echo", { description: "Echoes its text", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }));
  server.registerTool("slow", {
    description: "Steps with progress",
    inputSchema: z.object({ steps: z.number().optional(), delay: z.number().optional(), tag: z.string().optional() }),
  }, async (args, ctx) => slow(args, ctx.mcpReq.signal, ctx.mcpReq._meta?.progressToken,
    (n) => ctx.mcpReq.notify(n)));
  return server;
}

if (process.argv[2] === "http") {
  const handler = createMcpHandler(() => make());
  const srv = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const abort = new AbortController();
    res.on("close", () => { if (!res.writableFinished) abort.abort(); });
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method, headers, signal: abort.signal,
      body: req.method === "POST" || req.method === "DELETE" ? Buffer.concat(chunks) : undefined,
    });
    let response;
    try { response = await handler.fetch(request); } catch (e) {
      res.writeHead(500).end(String(e));
      return;
    }
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (!response.body) { res.end(); return; }
    const reader = response.body.getReader();
    res.on("close", () => reader.cancel().catch(() => {}));
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        res.write(value);
      }
    } catch { /* the client went away */ }
    res.end();
  });
  srv.listen(0, "127.0.0.1", () => console.error(`listening on ${srv.address().port}`));
} else {
  serveStdio(() => make());                     // both eras, one factory
}
