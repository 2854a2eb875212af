// OAuth conformance: faxhub's authorization server driven by oauth4webapi
// (a spec-following client by someone else) and jose, against a real
// `faxhub serve`. The owner's consent is given through the console's real
// endpoints with an admin-made session (FAXHUB_SESSION_COOKIE), exactly as a
// browser posts the consent form. Tests run in order and share state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import * as jose from 'jose';
import { BASE, ISSUER, MCP, A2A, env, hiddenField, registerClient } from './lib.mjs';

const COOKIE = env('FAXHUB_SESSION_COOKIE');
const REDIRECT = 'http://127.0.0.1:53682/callback';
const insecure = { [oauth.allowInsecureRequests]: true }; // http on loopback only
const SCOPES = ['openid', 'profile', 'email', 'fax:read', 'credits:read', 'offline_access'];

let as; // authorization server metadata (validated by oauth4webapi)
let client; // registered public client
const none = oauth.None();
const s = {}; // tokens passed between tests

// consent drives one authorization request as the signed-in owner: the
// authorize redirect, the consent page, the form post (csrf, binding,
// return, scopes, Origin) and the resume redirect. It returns the URL the
// browser would land on at the client.
async function consent(authURL, decision = 'approve') {
  let res = await fetch(authURL, { headers: { cookie: COOKIE }, redirect: 'manual' });
  assert.equal(res.status, 303, `authorize: ${res.status} ${await res.text()}`);
  const consentURL = new URL(res.headers.get('location'), BASE);
  assert.match(consentURL.pathname, /^\/console\/approvals\/[^/]+$/, `authorize redirects to ${consentURL}`);
  const ret = consentURL.searchParams.get('return');
  assert.ok(ret.startsWith('/api/auth/oauth2/authorize/resume?'), `return = ${ret}`);

  res = await fetch(consentURL, { headers: { cookie: COOKIE } });
  const page = await res.text();
  assert.equal(res.status, 200, `consent page: ${res.status}`);
  assert.ok(page.includes('Conformance oauth4webapi'), 'the consent page names the client');
  assert.ok(page.includes(MCP), 'the consent page names the resource');
  const form = new URLSearchParams({
    csrf: hiddenField(page, 'csrf'), binding: hiddenField(page, 'binding'), return: hiddenField(page, 'return'),
    decision,
  });
  assert.equal(form.get('return'), ret);
  for (const m of page.matchAll(/name="scope" value="([^"]+)" checked/g)) form.append('scope', m[1]);
  res = await fetch(new URL(consentURL.pathname, BASE), {
    method: 'POST', redirect: 'manual', body: form,
    headers: { cookie: COOKIE, origin: BASE, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(res.status, 303, `consent post: ${res.status} ${await res.text()}`);
  assert.equal(res.headers.get('location'), ret);

  res = await fetch(new URL(ret, BASE), { headers: { cookie: COOKIE }, redirect: 'manual' });
  assert.equal(res.status, 303, `resume: ${res.status} ${await res.text()}`);
  const cb = new URL(res.headers.get('location'));
  assert.equal(`${cb.origin}${cb.pathname}`, REDIRECT, `resume redirects to ${cb}`);
  return cb;
}

function authorizeURL(params) {
  const u = new URL(as.authorization_endpoint);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u;
}

async function pkce() {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier) };
}

// authorizeError sends an authorization request that must be refused with
// an error redirect to the client carrying iss (RFC 9207), and returns the
// error code as oauth4webapi's validateAuthResponse reports it.
async function authorizeError(params) {
  const res = await fetch(authorizeURL(params), { headers: { cookie: COOKIE }, redirect: 'manual' });
  assert.ok(res.status >= 300 && res.status < 400, `expected an error redirect, got ${res.status} ${await res.text()}`);
  const cb = new URL(res.headers.get('location'), BASE);
  assert.equal(`${cb.origin}${cb.pathname}`, REDIRECT, `error redirect goes to ${cb}`);
  assert.throws(() => oauth.validateAuthResponse(as, client, cb, params.state), (err) => {
    assert.ok(err instanceof oauth.AuthorizationResponseError, `${err}`);
    s.lastError = err.error;
    return true;
  });
  return s.lastError;
}

async function tokenError(response) {
  try {
    await oauth.processGenericTokenEndpointResponse(as, client, response);
  } catch (err) {
    assert.ok(err instanceof oauth.ResponseBodyError, `${err}`);
    return err.error;
  }
  assert.fail('the token endpoint accepted the request');
}

test('RFC 9728 protected resource metadata for /mcp names the issuer', async () => {
  const res = await oauth.resourceDiscoveryRequest(new URL(MCP), insecure);
  const rs = await oauth.processResourceDiscoveryResponse(new URL(MCP), res);
  assert.equal(rs.resource, MCP);
  assert.deepEqual(rs.authorization_servers, [ISSUER]);
});

test('RFC 9728 protected resource metadata for /a2a', async () => {
  const res = await oauth.resourceDiscoveryRequest(new URL(A2A), insecure);
  const rs = await oauth.processResourceDiscoveryResponse(new URL(A2A), res);
  assert.equal(rs.resource, A2A);
  assert.deepEqual(rs.authorization_servers, [ISSUER]);
});

test('RFC 8414 discovery at the path-inserted URL with exact issuer match', async () => {
  const res = await oauth.discoveryRequest(new URL(ISSUER), { algorithm: 'oauth2', ...insecure });
  assert.equal(new URL(res.url).pathname, '/.well-known/oauth-authorization-server/api/auth');
  as = await oauth.processDiscoveryResponse(new URL(ISSUER), res);
  assert.equal(as.issuer, ISSUER);
  assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
  assert.ok(as.registration_endpoint && as.revocation_endpoint && as.token_endpoint && as.authorization_endpoint);
  assert.equal(as.authorization_response_iss_parameter_supported, true, 'RFC 9207 iss advertised');
});

test('OpenID discovery (oidc algorithm) yields the same issuer', async () => {
  const res = await oauth.discoveryRequest(new URL(ISSUER), { algorithm: 'oidc', ...insecure });
  const meta = await oauth.processDiscoveryResponse(new URL(ISSUER), res);
  assert.equal(meta.issuer, ISSUER);
  assert.equal(meta.token_endpoint, as.token_endpoint);
});

test('RFC 7591 dynamic client registration (public client)', async () => {
  const reg = await registerClient(as.registration_endpoint, 'Conformance oauth4webapi', REDIRECT);
  client = { client_id: reg.client_id, token_endpoint_auth_method: 'none' };
});

test('DCR refuses unsupported client metadata', async () => {
  const res = await fetch(as.registration_endpoint, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', jwks_uri: 'https://example.com/jwks' }),
  });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error, 'invalid_client_metadata');
});

test('authorization code with PKCE S256 and resource, consent given in the console', async () => {
  const { verifier, challenge } = await pkce();
  const state = oauth.generateRandomState();
  const nonce = oauth.generateRandomNonce();
  const cb = await consent(authorizeURL({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: SCOPES.join(' '),
    state, nonce, code_challenge: challenge, code_challenge_method: 'S256', resource: MCP,
  }));
  assert.equal(cb.searchParams.get('iss'), ISSUER);
  const params = oauth.validateAuthResponse(as, client, cb, state); // checks iss and state
  const res = await oauth.authorizationCodeGrantRequest(as, client, none, params, REDIRECT, verifier,
    { additionalParameters: { resource: MCP }, ...insecure });
  const tok = await oauth.processAuthorizationCodeResponse(as, client, res, { expectedNonce: nonce, requireIdToken: true });
  assert.equal(tok.token_type.toLowerCase(), 'bearer');
  assert.ok(tok.access_token && tok.refresh_token && tok.id_token);
  assert.deepEqual(new Set(tok.scope.split(' ')), new Set(SCOPES));
  const claims = oauth.getValidatedIdTokenClaims(tok);
  assert.equal(claims.email, 'conformance@example.com');
  Object.assign(s, { at: tok.access_token, rt: tok.refresh_token, idToken: tok.id_token, nonce });
});

test('jose verifies the id_token against {issuer}/jwks with typ, iss, aud and alg pinned', async () => {
  assert.ok(s.idToken, 'no id_token from the previous test');
  const jwksURL = new URL(`${ISSUER}/jwks`);
  assert.equal(as.jwks_uri, jwksURL.href);
  const jwks = jose.createRemoteJWKSet(jwksURL);
  const { payload, protectedHeader } = await jose.jwtVerify(s.idToken, jwks, {
    issuer: ISSUER, audience: client.client_id, algorithms: ['RS256'], typ: 'JWT', requiredClaims: ['sub', 'exp', 'iat', 'auth_time'],
  });
  assert.equal(payload.nonce, s.nonce);
  assert.equal(payload.email_verified, true);
  assert.ok(protectedHeader.kid);
  // Pinned algorithm: the same token is refused when only EdDSA is allowed.
  await assert.rejects(jose.jwtVerify(s.idToken, jwks, { issuer: ISSUER, audience: client.client_id, algorithms: ['EdDSA'] }),
    { code: 'ERR_JOSE_ALG_NOT_ALLOWED' });
  await assert.rejects(jose.jwtVerify(s.idToken, jwks, { issuer: ISSUER, audience: 'someone-else', algorithms: ['RS256'] }),
    { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
});

test('refresh rotates both tokens', async () => {
  let res = await oauth.refreshTokenGrantRequest(as, client, none, s.rt, insecure);
  const tok = await oauth.processRefreshTokenResponse(as, client, res);
  assert.ok(tok.access_token && tok.refresh_token);
  assert.notEqual(tok.access_token, s.at);
  assert.notEqual(tok.refresh_token, s.rt);
  s.at2 = tok.access_token;
  s.rt2 = tok.refresh_token;
  // Reuse of a rotated refresh token is invalid_grant and ends the whole
  // authorization (RFC 6819 5.2.2.3), so it is checked on a second
  // authorization below, not here.
});

async function mcpStatus(token) {
  const res = await fetch(MCP, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'conformance', version: '0' } } }),
  });
  await res.body?.cancel();
  return res;
}

test('revocation (RFC 7009) makes the authorization inactive', async (t) => {
  const before = await mcpStatus(s.at2);
  if (before.status !== 404) assert.notEqual(before.status, 401, '/mcp refuses the access token before it is revoked');
  let res = await oauth.revocationRequest(as, client, none, s.at2, { additionalParameters: { token_type_hint: 'access_token' }, ...insecure });
  await oauth.processRevocationResponse(res);
  // The MCP endpoint, once served, must refuse the revoked token.
  const mcp = await mcpStatus(s.at2);
  if (mcp.status === 404) {
    t.diagnostic('/mcp is not served yet: only the refresh token is checked');
  } else {
    assert.equal(mcp.status, 401, `/mcp with a revoked token: ${mcp.status}`);
    assert.match(mcp.headers.get('www-authenticate') ?? '', /^Bearer /);
    t.diagnostic('/mcp refuses the revoked access token (401)');
  }
  // The refresh token of the revoked authorization no longer works.
  res = await oauth.refreshTokenGrantRequest(as, client, none, s.rt2, insecure);
  assert.equal(await tokenError(res), 'invalid_grant');
});

test('a rotated refresh token presented again is invalid_grant and ends the authorization', async () => {
  const { verifier, challenge } = await pkce();
  const state = oauth.generateRandomState();
  const cb = await consent(authorizeURL({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'fax:read offline_access',
    state, code_challenge: challenge, code_challenge_method: 'S256', resource: MCP,
  }));
  const params = oauth.validateAuthResponse(as, client, cb, state);
  let res = await oauth.authorizationCodeGrantRequest(as, client, none, params, REDIRECT, verifier, insecure);
  const tok = await oauth.processAuthorizationCodeResponse(as, client, res);
  res = await oauth.refreshTokenGrantRequest(as, client, none, tok.refresh_token, insecure);
  const tok2 = await oauth.processRefreshTokenResponse(as, client, res);
  res = await oauth.refreshTokenGrantRequest(as, client, none, tok.refresh_token, insecure);
  assert.equal(await tokenError(res), 'invalid_grant');
  res = await oauth.refreshTokenGrantRequest(as, client, none, tok2.refresh_token, insecure);
  assert.equal(await tokenError(res), 'invalid_grant', 'the newest refresh token survives reuse of an older one');
});

test('the authorization code is single use', async () => {
  const { verifier, challenge } = await pkce();
  const state = oauth.generateRandomState();
  const cb = await consent(authorizeURL({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'fax:read',
    state, code_challenge: challenge, code_challenge_method: 'S256', resource: MCP,
  }));
  const params = oauth.validateAuthResponse(as, client, cb, state);
  let res = await oauth.authorizationCodeGrantRequest(as, client, none, params, REDIRECT, verifier, insecure);
  await oauth.processAuthorizationCodeResponse(as, client, res);
  res = await oauth.authorizationCodeGrantRequest(as, client, none, params, REDIRECT, verifier, insecure);
  assert.equal(await tokenError(res), 'invalid_grant');
});

test('a wrong PKCE verifier is refused at the token endpoint', async () => {
  const { challenge } = await pkce();
  const state = oauth.generateRandomState();
  const cb = await consent(authorizeURL({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'fax:read',
    state, code_challenge: challenge, code_challenge_method: 'S256', resource: MCP,
  }));
  const params = oauth.validateAuthResponse(as, client, cb, state);
  const res = await oauth.authorizationCodeGrantRequest(as, client, none, params, REDIRECT, oauth.generateRandomCodeVerifier(), insecure);
  assert.equal(await tokenError(res), 'invalid_grant');
});

test('negative: plain PKCE is refused (invalid_request)', async () => {
  const verifier = oauth.generateRandomCodeVerifier();
  const err = await authorizeError({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'fax:read',
    state: oauth.generateRandomState(), code_challenge: verifier, code_challenge_method: 'plain', resource: MCP,
  });
  assert.equal(err, 'invalid_request');
});

test('negative: missing PKCE is refused (invalid_request)', async () => {
  const err = await authorizeError({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'fax:read',
    state: oauth.generateRandomState(), resource: MCP,
  });
  assert.equal(err, 'invalid_request');
});

test('negative: unknown resource is refused (invalid_target)', async () => {
  const { challenge } = await pkce();
  const err = await authorizeError({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'fax:read',
    state: oauth.generateRandomState(), code_challenge: challenge, code_challenge_method: 'S256', resource: `${BASE}/elsewhere`,
  });
  assert.equal(err, 'invalid_target');
});

test('negative: an unregistered redirect_uri is never redirected to', async () => {
  const { challenge } = await pkce();
  const evil = 'http://127.0.0.1:53682/evil';
  const res = await fetch(authorizeURL({
    response_type: 'code', client_id: client.client_id, redirect_uri: evil, scope: 'fax:read',
    state: oauth.generateRandomState(), code_challenge: challenge, code_challenge_method: 'S256', resource: MCP,
  }), { headers: { cookie: COOKIE }, redirect: 'manual' });
  const loc = res.headers.get('location') ?? '';
  assert.ok(!loc.startsWith(evil), `redirected to the unregistered URI: ${loc}`);
  assert.equal(res.status, 400, `status ${res.status} (location ${loc})`);
});

test('negative: unsupported grant type (unsupported_grant_type)', async () => {
  const res = await oauth.genericTokenEndpointRequest(as, client, none, 'password',
    { username: 'conformance@example.com', password: 'x' }, insecure);
  assert.equal(await tokenError(res), 'unsupported_grant_type');
});

test('negative: a token request for another resource is invalid_target', async () => {
  const { verifier, challenge } = await pkce();
  const state = oauth.generateRandomState();
  const cb = await consent(authorizeURL({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'fax:read',
    state, code_challenge: challenge, code_challenge_method: 'S256', resource: MCP,
  }));
  const params = oauth.validateAuthResponse(as, client, cb, state);
  const res = await oauth.authorizationCodeGrantRequest(as, client, none, params, REDIRECT, verifier,
    { additionalParameters: { resource: A2A }, ...insecure });
  assert.equal(await tokenError(res), 'invalid_target');
});

test('a declined consent returns access_denied with iss', async () => {
  const { challenge } = await pkce();
  const state = oauth.generateRandomState();
  const cb = await consent(authorizeURL({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'fax:read',
    state, code_challenge: challenge, code_challenge_method: 'S256', resource: MCP,
  }), 'decline');
  assert.equal(cb.searchParams.get('iss'), ISSUER);
  assert.throws(() => oauth.validateAuthResponse(as, client, cb, state),
    (err) => err instanceof oauth.AuthorizationResponseError && err.error === 'access_denied');
});
