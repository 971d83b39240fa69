// Through HAProxy, pinned to 2026-07-28: the SDK v2 client lists the tools,
// then makes a task of the tasks extension and cancels it. The client has no
// runtime for tasks (its typed surface refuses task methods), so the task's
// requests go out through its own transport, as the extension writes them.
// HAProxy spreads the POSTs round-robin: the cancel reaches another instance
// than the one running the handler (the spec checks that in their logs).
//
// Environment: as common.mjs, plus SDK_TOOL (default "slow").
import { connect, errorInfo, report, run, sleep } from "./common.mjs";

const EXT = "io.modelcontextprotocol/tasks";
const META = (caps) => ({
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": caps,
});

run(async () => {
  const { client, transport } = await connect();
  const tools = (await client.listTools()).tools.map((t) => t.name);
  // Answers to our own ids go to us; the rest to the client as before.
  // (common.mjs's tap made onmessage a property: the client's handler stays
  // behind it, ours goes in front.)
  const waiting = new Map();
  const tapped = Object.getOwnPropertyDescriptor(transport, "onmessage");
  const mine = (msg, extra) => {
    if (msg && waiting.has(msg.id)) {
      const done = waiting.get(msg.id);
      waiting.delete(msg.id);
      done(msg);
      return;
    }
    tapped.get.call(transport)?.(msg, extra);
  };
  Object.defineProperty(transport, "onmessage", { configurable: true, get: () => mine, set: tapped.set });
  let n = 0;
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = `store-${++n}`;
    const timer = setTimeout(() => { waiting.delete(id); reject(new Error(`${method}: no answer`)); }, 15000);
    waiting.set(id, (msg) => { clearTimeout(timer); resolve(msg); });
    transport.send({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META({ extensions: { [EXT]: {} } }) } })
      .catch((e) => { clearTimeout(timer); waiting.delete(id); reject(e); });
  });
  const steps = [];
  let error = null;
  try {
    const created = await request("tools/call", { name: process.env.SDK_TOOL || "slow",
                                                  arguments: { seconds: 30, tag: "sdk" } });
    steps.push({ step: "created", msg: created });
    const taskId = created.result?.taskId;
    await sleep(300);
    steps.push({ step: "get", msg: await request("tasks/get", { taskId }) });
    steps.push({ step: "cancel", msg: await request("tasks/cancel", { taskId }) });
    for (let i = 0; i < 50; i++) {
      const got = await request("tasks/get", { taskId });
      if (got.result?.status !== "working") { steps.push({ step: "after", msg: got }); break; }
      await sleep(100);
    }
  } catch (e) {
    error = errorInfo(e);
  }
  const after = await client.callTool({ name: "never", arguments: {} }).catch((e) => ({ error: errorInfo(e) }));
  await report({ tools, steps, error, after }, client);
});
