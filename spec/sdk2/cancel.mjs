// tools/call wait, aborted through an AbortSignal once the handler's first
// progress arrives. Under 2025-11-25 the client sends notifications/cancelled;
// under 2026-07-28 it closes the request's HTTP stream. The script then
// listens for SDK_LINGER_MS (default 800) for anything more the server sends,
// and calls echo to show the client still works.
import { connect, errorInfo, httpNow, mark, report, run, sleep } from "./common.mjs";

run(async () => {
  const { client } = await connect();
  const progress = [];
  const ac = new AbortController();
  const opts = {
    signal: ac.signal, timeout: 20000,
    onprogress: (p) => {
      progress.push(p);
      if (progress.length === 1) { mark("abort"); ac.abort("spec abort"); }
    },
  };
  let result = null, error = null;
  try {
    result = await client.callTool({ name: "wait", arguments: { seconds: 30 } }, opts);
  } catch (e) {
    error = errorInfo(e);
  }
  await sleep(Number(process.env.SDK_LINGER_MS || 800));
  mark("linger done");
  const httpAfterAbort = httpNow();
  const after = await client.callTool({ name: "echo", arguments: { text: "still there" } });
  await report({ result, error, progress, httpAfterAbort, after }, client);
});
