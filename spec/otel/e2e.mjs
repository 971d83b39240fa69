// One trace from an OpenTelemetry JS SDK span through luamcp: the official
// TypeScript SDK client (v1, Streamable HTTP at E2E_URL), inside a span of
// @opentelemetry/sdk-trace-base, calls `trip` (ctx:http), `up_echo` (an
// upstream luamcp through a mount) and `up_slow`, which it cancels at its
// first progress. Every request carries the span's context in
// params._meta.traceparent. Prints one JSON report: the client span's ids
// and what each call returned.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer("luamcp-e2e");
  const client = new Client({ name: "luamcp-e2e", version: "0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(process.env.E2E_URL)));
  const span = tracer.startSpan("e2e client");
  const sc = span.spanContext();
  const _meta = { traceparent: `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags}` };
  const trip = await client.callTool({ name: "trip", arguments: { url: process.env.E2E_ORIGIN }, _meta });
  const echo = await client.callTool({ name: "up_echo", arguments: { text: "through the mount" }, _meta });
  const ac = new AbortController();
  let cancelError = null, progress = 0;
  try {
    await client.callTool({ name: "up_slow", arguments: { steps: 400, delay: 0.05, tag: "e2e" }, _meta }, undefined, {
      signal: ac.signal, timeout: 20000,
      onprogress: () => { if (++progress === 1) ac.abort("e2e cancel"); },
    });
  } catch (e) {
    cancelError = String(e?.message ?? e);
  }
  await sleep(300);
  span.end();
  await client.close();
  const ended = exporter.getFinishedSpans().map((s) => ({ name: s.name, traceId: s.spanContext().traceId,
                                                          spanId: s.spanContext().spanId }));
  console.log(JSON.stringify({ traceId: sc.traceId, spanId: sc.spanId, trip, echo, cancelError, progress, ended }));
}

main().catch((e) => console.log(JSON.stringify({ crashed: String(e?.stack ?? e) })));
