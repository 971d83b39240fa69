// tools/list, then tools/call echo, then a call of an unknown tool.
import { connect, report, run } from "./common.mjs";

run(async () => {
  const { client } = await connect();
  const listed = await client.listTools();
  const result = await client.callTool({ name: "echo", arguments: { text: "hi from the sdk v2" } });
  const unknown = await client.callTool({ name: "no_such_tool", arguments: {} })
    .then((r) => ({ result: r }), (e) => ({ error: { name: e.constructor?.name, code: e.code, message: e.message } }));
  await report({
    server: client.getServerVersion(),
    tools: listed.tools,
    result,
    unknown,
  }, client);
});
