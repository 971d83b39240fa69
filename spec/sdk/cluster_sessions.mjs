// Through HAProxy (spec/cluster_spec.lua): opens `sessions` client sessions
// one after the other, each lists the tools and calls `whoami` (the pid of
// the instance that ran it) `calls` times. The sessions are left open (the
// client closes its connections without DELETE), for cluster_resume.mjs.
import { connect, errorInfo, report, run } from "./common.mjs";

const sessions = Number(process.argv[2] || 6), calls = Number(process.argv[3] || 20);

run(async () => {
  const out = [];
  for (let s = 0; s < sessions; s++) {
    const { client, transport } = await connect();
    const mine = [];                      // this client's onerror calls while it works
    client.onerror = (e) => mine.push(String(e?.message ?? e));
    const listed = await client.listTools();
    const pids = [];
    for (let i = 0; i < calls; i++) {
      const r = await client.callTool({ name: "whoami", arguments: {} })
        .then((x) => x.content[0].text, (e) => ({ error: errorInfo(e) }));
      pids.push(r);
    }
    out.push({ id: transport.sessionId, version: transport.protocolVersion,
               tools: listed.tools.map((t) => t.name), pids, errors: [...mine] });
    await client.close();                 // (aborting its GET stream: "This operation was aborted")
  }
  // the session's events are not needed: keep the report small
  await report({ sessions: out, events: undefined });
});
