// Reference server for bench/run.sh: the official TypeScript SDK
// (@modelcontextprotocol/sdk, McpServer + StdioServerTransport) serving the
// same three tools as bench/plugins/bench.lua.
//
//   node ts-server.mjs        (run with NODE_PATH-free resolution: run.sh
//                              copies this file next to the SDK's node_modules)
//
// echo  {text}     -> the text
// sleep {seconds}  -> waits; when the request is cancelled (extra.signal
//                     aborts) it sends a notifications/message "stopped"
//                     and returns
// spin  {seconds}  -> a busy loop that never yields to the event loop
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer(
  { name: 'ts-bench', version: '1.0.0' },
  { capabilities: { logging: {} } },
);

server.registerTool(
  'echo',
  { description: 'Echo the text back', inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: 'text', text }] }),
);

server.registerTool(
  'sleep',
  { description: 'Sleep, stop early when cancelled', inputSchema: { seconds: z.number() } },
  async ({ seconds }, extra) => {
    const signal = extra.signal;
    // Wait on the AbortSignal's event rather than polling it on a timer: the
    // fastest the SDK allows, so the comparison is fair to it.
    const cancelled = await new Promise((resolve) => {
      if (signal.aborted) return resolve(true);
      const onAbort = () => { clearTimeout(timer); resolve(true); };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(false);
      }, Math.min(seconds * 1000, 2 ** 31 - 1));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    if (cancelled) {
      // extra.sendNotification is muted once the request is aborted, so log
      // through the server itself (not tied to the request).
      await server.sendLoggingMessage({ level: 'info', logger: 'bench', data: 'stopped' });
      return { content: [] };
    }
    return { content: [{ type: 'text', text: 'slept' }] };
  },
);

server.registerTool(
  'spin',
  { description: 'Busy-loop for the given seconds', inputSchema: { seconds: z.number() } },
  async ({ seconds }) => {
    const end = performance.now() + seconds * 1000;
    let n = 0;
    while (performance.now() < end) n++;
    return { content: [{ type: 'text', text: `spun ${n}` }] };
  },
);

await server.connect(new StdioServerTransport());
