// Makes test/jwt_vectors.h: keys and tokens from Node's own crypto (an
// implementation independent of ours), for test/test_jwt.c.
//   node test/jwt_vectors.js > test/jwt_vectors.h
const crypto = require('crypto');
const b64u = (b) => Buffer.from(b).toString('base64url');
const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = crypto.generateKeyPairSync('ed25519');
const jwk = (k, kid) => Object.assign(k.publicKey.export({ format: 'jwk' }), { kid, use: 'sig' });
const jwks = { keys: [jwk(rsa, 'rs'), jwk(ec, 'es'), jwk(ed, 'ed')] };
const claims = { iss: 'https://as.example', aud: 'https://mcp.example/mcp', sub: 'alice',
                 scope: 'notes:read', iat: 1700000000, exp: 1700003600 };
function sign(header, payload, alg, key) {
  const input = b64u(JSON.stringify(header)) + '.' + b64u(JSON.stringify(payload));
  let sig;
  if (alg === 'RS256') sig = crypto.sign('sha256', Buffer.from(input), key);
  else if (alg === 'ES256') sig = crypto.sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  else if (alg === 'EdDSA') sig = crypto.sign(null, Buffer.from(input), key);
  else if (alg === 'HS256') sig = crypto.createHmac('sha256', key).update(input).digest();
  else sig = Buffer.alloc(0);
  return input + '.' + b64u(sig);
}
const t = {};
t.RS256 = sign({ alg: 'RS256', kid: 'rs', typ: 'at+jwt' }, claims, 'RS256', rsa.privateKey);
t.ES256 = sign({ alg: 'ES256', kid: 'es' }, claims, 'ES256', ec.privateKey);
t.EDDSA = sign({ alg: 'EdDSA', kid: 'ed' }, claims, 'EdDSA', ed.privateKey);
t.NOKID = sign({ alg: 'ES256' }, claims, 'ES256', ec.privateKey);
const bad = t.RS256.split('.');
const s = Buffer.from(bad[2], 'base64url'); s[10] ^= 1;
t.BADSIG = bad[0] + '.' + bad[1] + '.' + b64u(s);
t.TAMPERED = bad[0] + '.' + b64u(JSON.stringify(Object.assign({}, claims, { sub: 'mallory' }))) + '.' + bad[2];
t.NONE = sign({ alg: 'none', kid: 'rs' }, claims, 'none') ;
t.HS256 = sign({ alg: 'HS256', kid: 'rs' }, claims, 'HS256',
               rsa.publicKey.export({ type: 'spki', format: 'pem' }));
t.KIDALG = sign({ alg: 'RS256', kid: 'es' }, claims, 'RS256', rsa.privateKey);  // kid of the EC key
t.UNKNOWNKID = sign({ alg: 'RS256', kid: 'other' }, claims, 'RS256', rsa.privateKey);
t.OTHERKEY = sign({ alg: 'RS256', kid: 'rs' }, claims, 'RS256',
                  crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey);
t.NOSUB = sign({ alg: 'EdDSA', kid: 'ed' }, Object.assign({}, claims, { sub: undefined }), 'EdDSA', ed.privateKey);
t.NBF = sign({ alg: 'EdDSA', kid: 'ed' }, Object.assign({}, claims, { nbf: 1700001000 }), 'EdDSA', ed.privateKey);
t.AUDS = sign({ alg: 'EdDSA', kid: 'ed' }, Object.assign({}, claims, { aud: ['x', 'https://mcp.example/mcp/'] }), 'EdDSA', ed.privateKey);
const q = (s) => JSON.stringify(s);
let out = '/* Made by test/jwt_vectors.js (Node ' + process.version + ' crypto); claims: ' +
          JSON.stringify(claims).replace(/\*\//g, '') + ' */\n';
out += '#define JWKS ' + q(JSON.stringify(jwks)) + '\n';
for (const k of Object.keys(t)) out += '#define TOK_' + k + ' ' + q(t[k]) + '\n';
process.stdout.write(out);
