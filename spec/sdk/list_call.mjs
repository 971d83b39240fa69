// tools/list, then tools/call echo, and point (an outputSchema) right and wrong.
import { connect, report, run } from "./common.mjs";

run(async () => {
  const { client } = await connect();
  const listed = await client.listTools();
  const result = await client.callTool({ name: "echo", arguments: { text: "hi from the sdk" } });
  const point = await client.callTool({ name: "point", arguments: {} });
  const badPoint = await client.callTool({ name: "point", arguments: { bad: true } })
    .then((r) => ({ result: r }), (e) => ({ error: { code: e.code, message: e.message } }));
  const unknown = await client.callTool({ name: "no_such_tool", arguments: {} })
    .then((r) => ({ result: r }), (e) => ({ error: { code: e.code, message: e.message } }));
  await report({
    server: client.getServerVersion(),
    tools: listed.tools,
    result,
    point,
    badPoint,
    unknown,
  }, client);
});
