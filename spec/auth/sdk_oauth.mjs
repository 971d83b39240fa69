// The official TypeScript SDK client (v1) with its OAuth support, headless:
// its OAuthClientProvider's redirectToAuthorization follows the redirect of
// the authorization server's /authorize itself (no browser, no user) and
// keeps the code; the transport's finishAuth exchanges it (PKCE, resource).
// The authorization server grants notes:write only at first (SDK_ADMIN
// changes that); then: whoami, write, and a step-up on the 403 of a tool
// needing notes:admin too.
// Prints one JSON line, the report.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const url = new URL(process.env.SDK_URL);
const REDIRECT = 'http://127.0.0.1:9/callback';
const report = { authorizations: [] };
let verifier, tokens, code;

const provider = {
  get redirectUrl() { return REDIRECT; },
  get clientMetadata() {
    return { client_name: 'luamcp spec', redirect_uris: [REDIRECT], grant_types: ['authorization_code'],
             response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  clientInformation() { return { client_id: 'sdk-client' }; },   // registered beforehand (no DCR)
  tokens() { return tokens; },
  saveTokens(t) { tokens = { ...t }; delete tokens.refresh_token; },   // a step-up goes through /authorize
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
  async redirectToAuthorization(u) {
    report.authorizations.push({ scope: u.searchParams.get('scope'), resource: u.searchParams.get('resource'),
                                 method: u.searchParams.get('code_challenge_method') });
    const r = await fetch(u, { redirect: 'manual' });
    code = new URL(r.headers.get('location')).searchParams.get('code');
  },
};

async function authorized(fn, transport) {
  try {
    return await fn();
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    await transport.finishAuth(code);
    return await fn();
  }
}

try {
  let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  const client = new Client({ name: 'luamcp-spec', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    report.unauthorized = true;
    await transport.finishAuth(code);
    transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await client.connect(transport);
  }
  const who = await client.callTool({ name: 'whoami', arguments: {} });
  report.whoami = JSON.parse(who.content[0].text);
  const wrote = await authorized(() => client.callTool({ name: 'write', arguments: { text: 'sdk' } }), transport);
  report.write = wrote.content[0].text;
  await fetch(process.env.SDK_ADMIN + '/grantable', { method: 'POST', body: '{}' });   // any scope now
  const before = report.authorizations.length;
  const admin = await authorized(() => client.callTool({ name: 'admin', arguments: {} }), transport);
  report.admin = admin.content[0].text;
  report.stepped_up = report.authorizations.length - before;
  const again = await client.callTool({ name: 'whoami', arguments: {} });
  report.scopes_after = JSON.parse(again.content[0].text).scopes;
  await client.close();
} catch (e) {
  report.error = String(e && e.stack || e);
}
process.stdout.write(JSON.stringify(report) + '\n');
