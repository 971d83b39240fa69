// Peer server for bench/run.sh: FastMCP for TypeScript (npm `fastmcp`, on the
// official SDK) serving the tools of bench/plugins/bench.lua, written as its
// README writes a server: `addTool` with a zod schema, `server.start`.
//
//   node fastmcp-server.mjs              stdio (echo, sleep, spin)
//   node fastmcp-server.mjs http PORT    httpStream on 127.0.0.1:PORT/mcp, its
//                                        default mode: a session per client,
//                                        answers as text/event-stream
//
// run.sh copies this file next to the cache's node_modules (ESM resolves
// imports from the script's own directory).
//
// echo  {text}     -> the text
// sleep {seconds}  -> waits; when the request is cancelled (context.signal
//                     aborts) it sends a notifications/message "stopped"
//                     and returns
// spin  {seconds}  -> a busy loop that never yields to the event loop
import { FastMCP } from 'fastmcp';
import { z } from 'zod';

const [mode = 'stdio', port] = process.argv.slice(2);
if (mode !== 'stdio' && !(mode === 'http' && Number(port) > 0)) {
  console.error(`fastmcp-server: usage: fastmcp-server.mjs [stdio | http PORT]`);
  process.exit(2);
}

const server = new FastMCP({ name: 'fastmcp-bench', version: '1.0.0' });
// The stdio session, once FastMCP has it: start() resolves, and `sessions`
// fills, only some time after the handshake, and a call may come first.
const stdioSession = new Promise((resolve) => server.once('connect', ({ session }) => resolve(session)));

server.addTool({
  name: 'echo',
  description: 'Echo the text back',
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => text,
});

server.addTool({
  name: 'sleep',
  description: 'Sleep, stop early when cancelled',
  parameters: z.object({ seconds: z.number() }),
  execute: async ({ seconds }, { signal }) => {
    // Wait on the AbortSignal's event, as bench/ts-server.mjs does.
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
      // context.log.info("stopped") would send data {"message":"stopped"};
      // the driver counts data "stopped" exactly, so log through the session's
      // SDK server, as ts-server.mjs does (the same sendLoggingMessage).
      const session = await stdioSession;
      await session.server.sendLoggingMessage({ level: 'info', logger: 'bench', data: 'stopped' });
      return;
    }
    return 'slept';
  },
});

server.addTool({
  name: 'spin',
  description: 'Busy-loop for the given seconds',
  parameters: z.object({ seconds: z.number() }),
  execute: async ({ seconds }) => {
    const end = performance.now() + seconds * 1000;
    let n = 0;
    while (performance.now() < end) n++;
    return `spun ${n}`;
  },
});

if (mode === 'stdio') {
  await server.start({ transportType: 'stdio' });
} else {
  await server.start({
    transportType: 'httpStream',
    httpStream: { host: '127.0.0.1', port: Number(port), endpoint: '/mcp' },
  });
}
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
