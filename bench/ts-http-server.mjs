// Reference Streamable HTTP server for bench/run.sh: the official TypeScript
// SDK (@modelcontextprotocol/sdk, McpServer + StreamableHTTPServerTransport on
// the SDK's own Express app, createMcpExpressApp) serving the echo tool of
// bench/plugins/bench.lua on http://127.0.0.1:PORT/mcp.
//
//   node ts-http-server.mjs PORT stateless   a new McpServer + transport per
//                                            POST (sessionIdGenerator:
//                                            undefined), as the SDK's
//                                            simpleStatelessStreamableHttp
//                                            example does
//   node ts-http-server.mjs PORT sse         the default stateful mode: one
//                                            transport per session
//                                            (randomUUID session ids),
//                                            enableJsonResponse false, so every
//                                            answer is a text/event-stream,
//                                            as the simpleStreamableHttp
//                                            example does (without its event
//                                            store, which is optional)
//
// run.sh copies this file next to the cache's node_modules (ESM resolves
// imports from the script's own directory).
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const port = Number(process.argv[2] || 3000);
const mode = process.argv[3] || 'stateless';
if (mode !== 'stateless' && mode !== 'sse') {
  console.error(`ts-http-server: unknown mode ${mode} (stateless|sse)`);
  process.exit(2);
}

const getServer = () => {
  const server = new McpServer(
    { name: 'ts-bench-http', version: '1.0.0' },
    { capabilities: { logging: {} } },
  );
  server.registerTool(
    'echo',
    { description: 'Echo the text back', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  return server;
};

const rpcError = (res, status, code, message) => {
  if (!res.headersSent) res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
};

const app = createMcpExpressApp();

if (mode === 'stateless') {
  app.post('/mcp', async (req, res) => {
    const server = getServer();
    try {
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
      res.on('close', () => {
        transport.close();
        server.close();
      });
    } catch (error) {
      console.error('ts-http-server:', error);
      rpcError(res, 500, -32603, 'Internal server error');
    }
  });
} else {
  const transports = new Map();
  app.post('/mcp', async (req, res) => {
    const sessionId = req.headers['mcp-session-id'];
    try {
      let transport = sessionId ? transports.get(sessionId) : undefined;
      if (!transport) {
        if (sessionId) return rpcError(res, 404, -32001, 'Session not found');
        if (!isInitializeRequest(req.body)) return rpcError(res, 400, -32000, 'No valid session ID provided');
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: false,
          onsessioninitialized: (sid) => { transports.set(sid, transport); },
        });
        transport.onclose = () => {
          if (transport.sessionId) transports.delete(transport.sessionId);
        };
        await getServer().connect(transport);
      }
      await transport.handleRequest(req, res, req.body);
    } catch (error) {
      console.error('ts-http-server:', error);
      rpcError(res, 500, -32603, 'Internal server error');
    }
  });
  app.delete('/mcp', async (req, res) => {
    const transport = transports.get(req.headers['mcp-session-id']);
    if (!transport) return rpcError(res, 404, -32001, 'Session not found');
    await transport.handleRequest(req, res);
  });
}

app.listen(port, '127.0.0.1', (error) => {
  if (error) {
    console.error('ts-http-server:', error);
    process.exit(1);
  }
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
