// tools/call steps {n} with onprogress: every notifications/progress arrives
// at the callback before the result.
import { connect, report, run } from "./common.mjs";

run(async () => {
  const { client } = await connect();
  const n = 5;
  const progress = [];
  let resolved = false;
  const result = await client.callTool({ name: "steps", arguments: { n } }, undefined, {
    onprogress: (p) => progress.push({ ...p, beforeResult: !resolved }),
  });
  resolved = true;
  await report({ n, progress, result }, client);
});
