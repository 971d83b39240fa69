// Decodes OTLP/HTTP protobuf bodies (files named in argv) with the
// opentelemetry-proto messages that @opentelemetry/otlp-transformer ships
// (its protobufjs root), and prints one JSON report: each request as an
// object (ids in hex, 64-bit integers as strings, enums as numbers) and
// whether encoding it again gives the same bytes.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(import.meta.url);
const root = require("@opentelemetry/otlp-transformer/build/src/generated/root.js");
const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

function hexify(v) {
  if (v instanceof Uint8Array) return Buffer.from(v).toString("hex");
  if (Array.isArray(v)) return v.map(hexify);
  if (v && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = hexify(x);
    return out;
  }
  return v;
}

try {
  const requests = process.argv.slice(2).map((file) => {
    const body = readFileSync(file);
    const msg = Request.decode(body);
    const again = Buffer.from(Request.encode(msg).finish());
    return {
      request: hexify(Request.toObject(msg, { longs: String, enums: Number })),
      problem: Request.verify(msg) || false,       // verify: null when well-formed
      same_bytes: Buffer.compare(again, body) === 0,
    };
  });
  console.log(JSON.stringify({ requests }));
} catch (e) {
  console.log(JSON.stringify({ crashed: String(e && e.stack || e) }));
}
