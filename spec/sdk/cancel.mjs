// tools/call wait, cancelled by the client: `node cancel.mjs abort` aborts an
// AbortSignal once the handler's first progress arrives; `node cancel.mjs
// timeout` lets the request's `timeout` option (300 ms) run out. Either way the
// SDK sends notifications/cancelled; the report shows what came after it.
import { connect, errorInfo, linger, report, run } from "./common.mjs";

const how = process.argv[2];

run(async () => {
  const { client } = await connect();
  const progress = [];
  const ac = new AbortController();
  const opts = {
    onprogress: (p) => {
      progress.push(p);
      if (how === "abort" && progress.length === 1) ac.abort("spec abort");
    },
  };
  if (how === "abort") { opts.signal = ac.signal; opts.timeout = 20000; }
  else if (how === "timeout") opts.timeout = 300;
  else throw new Error("usage: cancel.mjs abort|timeout");
  let result = null, error = null;
  const t0 = Date.now();
  try {
    result = await client.callTool({ name: "wait", arguments: { seconds: 30 } }, undefined, opts);
  } catch (e) {
    error = errorInfo(e);
  }
  const rejectedAfterMs = Date.now() - t0;
  await linger();
  // the connection still works after the cancel
  const after = await client.callTool({ name: "echo", arguments: { text: "still there" } });
  await report({ how, result, error, rejectedAfterMs, progress, after }, client);
});
