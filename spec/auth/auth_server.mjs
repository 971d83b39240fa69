// A real OAuth 2.0 authorization server for spec/auth_spec.lua:
// oauth2-mock-server's issuer and service (OpenID discovery, JWKS, token,
// authorize, introspection) on 127.0.0.1, plus an admin listener the spec
// drives: mint a token with given claims and key, add a signing key (a new
// kid), register an opaque token for introspection, limit the scopes an
// authorization grants (as a user's consent would), read hit counts.
// Prints one JSON line: {"issuer": ..., "admin": ...}.
import http from 'node:http';
import { OAuth2Issuer, OAuth2Service } from 'oauth2-mock-server';

const issuer = new OAuth2Issuer();
const first = await issuer.keys.generate('RS256');
const service = new OAuth2Service(issuer);
const hits = {};
const opaque = new Map();

// RFC 8707: the token endpoint binds the token to the resource asked for;
// an authorization code grants the scope its authorization request asked
// for (the mock grants "dummy" otherwise), as a real server would.
const codeScopes = new Map();
let grantable = null;       // the scopes a user consents to (null: any asked for), set by /grantable
service.on('beforeAuthorizeRedirect', (redirect, req) => {
  const code = redirect.url.searchParams.get('code');
  const q = new URL(req.url, 'http://x').searchParams;
  if (code) codeScopes.set(code, { scope: q.get('scope'), resource: q.get('resource') });
});
service.on('beforeTokenSigning', (token, req) => {
  const b = req.body || {};
  const granted = b.code && codeScopes.get(b.code);
  if (granted && granted.scope) {
    token.payload.scope = granted.scope.split(' ').filter((s) => !grantable || grantable.includes(s)).join(' ');
  }
  if (b.resource) token.payload.aud = b.resource;
  if (b.client_id) token.payload.client_id = b.client_id;
});
service.on('beforeIntrospect', (response, req) => {
  const t = req.body && req.body.token;
  response.body = opaque.get(t) || { active: false };
});

// The service parses JSON bodies only; RFC 7662 introspection requests are
// forms: parsed here, and handed on as already parsed (body-parser skips a
// request whose _body is set).
const as = http.createServer((req, res) => {
  const path = req.url.split('?')[0];
  hits[path] = (hits[path] || 0) + 1;
  if (hits.down) { req.socket.destroy(); return; }
  if (path !== '/introspect') { service.requestHandler(req, res); return; }
  let s = '';
  req.on('data', (d) => { s += d; });
  req.on('end', () => {
    req.body = Object.fromEntries(new URLSearchParams(s));
    req._body = true;
    service.requestHandler(req, res);
  });
});
await new Promise((ok) => as.listen(0, '127.0.0.1', ok));
issuer.url = 'http://127.0.0.1:' + as.address().port;

function body(req) {
  return new Promise((ok) => {
    let s = '';
    req.on('data', (d) => { s += d; });
    req.on('end', () => ok(s ? JSON.parse(s) : {}));
  });
}

const admin = http.createServer(async (req, res) => {
  const b = await body(req);
  let out = {};
  try {
    if (req.url === '/mint') {
      const key = b.kid || first.kid;
      out.token = await issuer.buildToken({
        kid: key, expiresIn: b.expiresIn ?? 3600,
        scopesOrTransform: (header, payload) => {
          for (const [k, v] of Object.entries(b.claims || {})) {
            if (v === null) delete payload[k]; else payload[k] = v;
          }
        },
      });
    } else if (req.url === '/addkey') {
      const k = await issuer.keys.generate(b.alg || 'RS256', b.alg === 'EdDSA' ? { crv: 'Ed25519' } : undefined);
      out.kid = k.kid;
    } else if (req.url === '/opaque') {
      opaque.set(b.token, b.answer);
    } else if (req.url === '/grantable') {
      grantable = b.scopes || null;
    } else if (req.url === '/hits') {
      out = hits;
    } else if (req.url === '/down') {
      hits.down = b.down ? 1 : 0;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(out));
  } catch (e) {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: String(e) }));
  }
});
await new Promise((ok) => admin.listen(0, '127.0.0.1', ok));
process.stdout.write(JSON.stringify({ issuer: issuer.url, admin: 'http://127.0.0.1:' + admin.address().port }) + '\n');
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
