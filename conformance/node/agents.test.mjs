// Agent registration conformance (docs/agents.md): the service_auth and
// anonymous journeys over plain HTTP against a real `faxhub serve`, with the
// identity assertion verified by jose (a JOSE library by someone else). The
// owner creates the enrollment token with the admin-made session
// (FAXHUB_SESSION_COOKIE) and approves the claim through the console's real
// claim page form (csrf field, Origin), exactly as a browser posts it.
// Tests run in order and share state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as jose from 'jose';
import { BASE, ISSUER, MCP, env, hiddenField } from './lib.mjs';

const COOKIE = env('FAXHUB_SESSION_COOKIE');
const OWNER = 'conformance@example.com'; // made by run-suites.sh
const TOKEN = `${ISSUER}/oauth2/token`;
const GRANT_CLAIM = 'urn:faxhub:agent-auth:grant-type:claim';
const GRANT_JWT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const s = {}; // state passed between tests

async function postJSON(path, body, headers = {}) {
  const res = await fetch(`${BASE}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json = {};
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: json, text, headers: res.headers };
}

async function postForm(url, params) {
  const res = await fetch(url, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(params),
  });
  const text = await res.text();
  let json = {};
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: json, text };
}

// enroll creates an enrollment token as the signed-in owner (same-origin).
async function enroll(name, scopes) {
  const r = await postJSON('/api/auth/agent/identity/manage', { action: 'enroll', name, scopes },
    { cookie: COOKIE, origin: BASE, 'sec-fetch-site': 'same-origin' });
  assert.equal(r.status, 201, `enroll: ${r.status} ${r.text}`);
  assert.match(r.body.enrollment_token, /^fxe_/);
  return r.body.enrollment_token;
}

const poll = (claimToken) => postForm(TOKEN, { grant_type: GRANT_CLAIM, claim_token: claimToken, resource: MCP });
const exchange = (assertion) => postForm(TOKEN, { grant_type: GRANT_JWT, assertion, resource: MCP });

function oauthError(r, want, what) {
  assert.ok(r.status >= 400, `${what}: expected an error, got ${r.status} ${r.text}`);
  assert.equal(r.body.error, want, `${what}: ${r.status} ${r.text}`);
}

// mcpStatus sends an MCP initialize with the bearer token and returns the status.
async function mcpStatus(token) {
  const res = await fetch(MCP, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'conformance', version: '0' } } }),
  });
  await res.body?.cancel();
  return res.status;
}

const jwks = jose.createRemoteJWKSet(new URL(`${ISSUER}/jwks`));
async function verifyAssertion(assertion) {
  return jose.jwtVerify(assertion, jwks, {
    typ: 'oauth-id-jag+jwt', issuer: ISSUER, audience: ISSUER, algorithms: ['EdDSA'],
  });
}

test('service_auth: enrollment and registration give a claim (user_code, verification_uri, interval 5)', async () => {
  s.enrollment = await enroll('Conformance bot', ['fax:read', 'credits:read']);
  const r = await postJSON('/api/auth/agent/identity', { type: 'service_auth', enrollment_token: s.enrollment, login_hint: OWNER });
  assert.equal(r.status, 201, `register: ${r.status} ${r.text}`);
  assert.equal(r.headers.get('cache-control'), 'no-store');
  assert.equal(r.body.identity_assertion, undefined, 'no assertion before approval');
  assert.match(r.body.claim_token, /^fxc_/);
  const cl = r.body.claim;
  assert.ok(cl, `no claim: ${r.text}`);
  assert.match(cl.user_code, /^[0-9]{6}$/);
  assert.equal(cl.interval, 5);
  const vu = new URL(cl.verification_uri);
  assert.equal(vu.origin, BASE);
  assert.match(vu.pathname, /^\/agent\/claim\/fxt_/);
  assert.ok(!cl.verification_uri.includes(cl.user_code), 'the user code is not in the link');
  s.claimToken = r.body.claim_token;
  s.claim = cl;
});

test('service_auth: polling before approval is authorization_pending, an immediate second poll slow_down', async () => {
  oauthError(await poll(s.claimToken), 'authorization_pending', 'first poll');
  const r = await poll(s.claimToken);
  oauthError(r, 'slow_down', 'immediate second poll');
  if (r.body.interval !== undefined) assert.ok(r.body.interval > 5, `interval after slow_down = ${r.body.interval}`);
});

test('service_auth: the owner approves by entering the code on the claim page', async () => {
  let res = await fetch(s.claim.verification_uri, { headers: { cookie: COOKIE } });
  const page = await res.text();
  assert.equal(res.status, 200, `claim page: ${res.status} ${page}`);
  assert.ok(page.includes('Conformance bot'), 'the claim page names the agent');
  assert.ok(!page.includes(s.claim.user_code), 'the claim page does not show the code');
  const action = page.match(/<form class="card" method="post" action="([^"]*)"/);
  assert.ok(action, 'the claim page has its form');
  const form = new URLSearchParams({ csrf: hiddenField(page, 'csrf'), user_code: s.claim.user_code, decision: 'approve' });
  const scopes = [...page.matchAll(/name="scope" value="([^"]+)" checked/g)].map((m) => m[1]);
  assert.deepEqual(scopes.sort(), ['credits:read', 'fax:read']);
  for (const sc of scopes) form.append('scope', sc);
  res = await fetch(new URL(action[1].replaceAll('&amp;', '&'), s.claim.verification_uri), {
    method: 'POST', redirect: 'manual', body: form,
    headers: { cookie: COOKIE, origin: BASE, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
  });
  const done = await res.text();
  assert.equal(res.status, 200, `claim post: ${res.status} ${done}`);
  assert.match(done, /Agent approved/);
});

test('service_auth: the next poll gets the access token and identity assertion, no refresh token', async () => {
  let r = await poll(s.claimToken);
  if (r.body.error === 'slow_down' || r.body.error === 'authorization_pending') {
    // Only if the server still wants a wait: wait the interval it says, once.
    await new Promise((ok) => setTimeout(ok, (r.body.interval ?? s.claim.interval) * 1000));
    r = await poll(s.claimToken);
  }
  assert.equal(r.status, 200, `poll: ${r.status} ${r.text}`);
  assert.match(r.body.access_token, /^fxa_/);
  assert.equal(r.body.token_type, 'Bearer');
  assert.equal(r.body.scope, 'credits:read fax:read');
  assert.ok(r.body.expires_in > 0 && r.body.expires_in <= 3600, `expires_in = ${r.body.expires_in}`);
  assert.ok(r.body.identity_assertion, 'identity_assertion');
  assert.ok(r.body.assertion_expires, 'assertion_expires');
  assert.equal(r.body.refresh_token, undefined, 'no refresh_token');
  s.token = r.body;
  oauthError(await poll(s.claimToken), 'invalid_grant', 'the claim is redeemed once');
});

test('jose verifies the identity assertion against the JWKS (EdDSA, oauth-id-jag+jwt, iss = aud = issuer)', async () => {
  const { payload, protectedHeader } = await verifyAssertion(s.token.identity_assertion);
  assert.equal(protectedHeader.alg, 'EdDSA');
  assert.equal(protectedHeader.typ, 'oauth-id-jag+jwt');
  assert.ok(protectedHeader.kid, 'kid');
  assert.equal(payload.iss, ISSUER);
  assert.equal(payload.aud, ISSUER);
  assert.ok(payload.sub && payload.jti && payload.client_id, `claims ${JSON.stringify(payload)}`);
  assert.equal(payload.exp - payload.iat, 30 * 24 * 3600);
  // Pinned algorithm and audience: anything else is refused.
  await assert.rejects(jose.jwtVerify(s.token.identity_assertion, jwks, { algorithms: ['RS256'] }));
  await assert.rejects(jose.jwtVerify(s.token.identity_assertion, jwks, { algorithms: ['EdDSA'], audience: MCP }));
});

test('jwt-bearer re-exchange of the assertion gives a fresh access token', async () => {
  const r = await exchange(s.token.identity_assertion);
  assert.equal(r.status, 200, `exchange: ${r.status} ${r.text}`);
  assert.match(r.body.access_token, /^fxa_/);
  assert.notEqual(r.body.access_token, s.token.access_token);
  assert.equal(r.body.scope, 'credits:read fax:read');
  assert.equal(r.body.refresh_token, undefined);
});

test('revoking the access token (RFC 7009) leaves the assertion exchangeable', async () => {
  assert.notEqual(await mcpStatus(s.token.access_token), 401, '/mcp accepts the agent token before revocation');
  for (let i = 0; i < 2; i++) { // idempotent
    const r = await postForm(`${ISSUER}/oauth2/revoke`, { token: s.token.access_token, token_type_hint: 'access_token' });
    assert.equal(r.status, 200, `revoke: ${r.status} ${r.text}`);
  }
  assert.equal(await mcpStatus(s.token.access_token), 401, '/mcp refuses the revoked agent token');
  const r = await exchange(s.token.identity_assertion);
  assert.equal(r.status, 200, `re-exchange after revoke: ${r.status} ${r.text}`);
  s.fresh = r.body.access_token;
});

test('revoking the registration ends the assertion: invalid_grant', async () => {
  const r = await postJSON('/api/auth/agent/identity/revoke', { identity_assertion: s.token.identity_assertion });
  assert.equal(r.status, 200, `revoke registration: ${r.status} ${r.text}`);
  oauthError(await exchange(s.token.identity_assertion), 'invalid_grant', 'exchange after registration revoke');
  assert.equal(await mcpStatus(s.fresh), 401, '/mcp refuses the registration\'s tokens after revocation');
});

test('anonymous: the assertion at once, verified by jose; its exchange has an empty scope', async () => {
  const tok = await enroll('Conformance anonymous bot');
  const r = await postJSON('/api/auth/agent/identity', { type: 'anonymous', enrollment_token: tok });
  assert.equal(r.status, 201, `anonymous: ${r.status} ${r.text}`);
  assert.ok(r.body.identity_assertion, 'identity_assertion');
  assert.match(r.body.claim_token, /^fxc_/);
  await verifyAssertion(r.body.identity_assertion);
  const x = await exchange(r.body.identity_assertion);
  assert.equal(x.status, 200, `exchange: ${x.status} ${x.text}`);
  assert.match(x.body.access_token, /^fxa_/);
  assert.equal(x.body.scope, '');
});

test('errors: no enrollment token is enrollment_required; a reused token is invalid_enrollment', async () => {
  oauthError(await postJSON('/api/auth/agent/identity', { type: 'service_auth', login_hint: OWNER }),
    'enrollment_required', 'no token');
  const tok = await enroll('Conformance reuse bot');
  const first = await postJSON('/api/auth/agent/identity', { type: 'service_auth', enrollment_token: tok, login_hint: OWNER });
  assert.equal(first.status, 201, `first use: ${first.status} ${first.text}`);
  oauthError(await postJSON('/api/auth/agent/identity', { type: 'service_auth', enrollment_token: tok, login_hint: OWNER }),
    'invalid_enrollment', 'reused token');
});
