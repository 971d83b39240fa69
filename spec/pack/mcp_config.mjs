// The command a client of MCP Bundles runs for a bundle: the manifest's
// mcp_config with ${__dirname} and ${user_config.KEY} substituted by the
// mcpb library's own getMcpConfigForManifest (what Claude Desktop uses).
//   node mcp_config.mjs DIR/manifest.json DIR '{"key": "value"}'
// prints {config, missing} (missing: a required user_config is not given).
import { readFileSync } from "node:fs";
import { getMcpConfigForManifest, hasRequiredConfigMissing } from "@anthropic-ai/mcpb";

const [manifestPath, dir, values] = process.argv.slice(2);
const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
const userConfig = JSON.parse(values || "{}");
try {
  const config = await getMcpConfigForManifest({
    manifest, extensionPath: dir, systemDirs: {}, userConfig, pathSeparator: "/",
  });
  console.log(JSON.stringify({ config: config ?? null, missing: hasRequiredConfigMissing({ manifest, userConfig }) }));
} catch (e) {
  console.log(JSON.stringify({ crashed: String(e && e.stack || e) }));
}
