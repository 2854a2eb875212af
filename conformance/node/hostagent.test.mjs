// Delegated hosts and agents conformance (docs/hostagent.md, Agent Auth
// Protocol 1.0-draft): a host client written with jose (EdDSA, separate
// host and agent key pairs) against a real `faxhub serve`. The owner side
// uses the admin-made session (FAXHUB_SESSION_COOKIE): host create over
// HTTP same-origin, and the device approval through the console's real
// device page form (csrf field, Origin), exactly as a browser posts it. The
// send_fax approval needs a passkey with user verification: the browser
// suite approves one in Chromium; here a send_fax stays pending, and is
// declined from the inbox. Tests run in order and share state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as jose from 'jose';
import { BASE, env } from './lib.mjs';
import {
  API, CAPABILITIES, agentJWT, agentStatus, call, checkApproval, createHost, execute, expectError,
  expectInvalidJWT, faxArgs, granted, hostJWT, hs256, keyPair, register, sendStatus, sign, unsigned,
} from './hostagent-lib.mjs';
import { approveDevice, declineInbox, inboxCard, revokeHostInConsole } from './hostagent-owner.mjs';

const COOKIE = env('FAXHUB_SESSION_COOKIE');
const s = {}; // state passed between tests
const ASKED = ['create_upload', 'get_credits', 'get_fax_status', 'send_fax', 'validate_fax'];

test('discovery: /.well-known/agent-configuration on both origins, issuer = {api_url} whatever the Host header', async () => {
  // run-suites.sh serves one address: localhost and 127.0.0.1 reach the
  // same server with different Host headers; the issuer must not follow.
  const port = new URL(BASE).port;
  const docs = [];
  for (const origin of [...new Set([BASE, API, `http://127.0.0.1:${port}`])]) {
    const r = await call('GET', `${origin}/.well-known/agent-configuration`);
    assert.equal(r.status, 200, `${origin}: ${r.status} ${r.text}`);
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    docs.push(r.body);
  }
  for (const d of docs) assert.deepEqual(d, docs[0], 'every origin serves the same document');
  const d = docs[0];
  s.discovery = d;
  assert.equal(d.issuer, API);
  assert.equal(d.version, '1.0-draft');
  assert.ok(d.provider_name, 'provider_name');
  assert.ok(d.algorithms?.some((a) => a === 'Ed25519' || a === 'EdDSA'), `algorithms ${JSON.stringify(d.algorithms)}`);
  assert.ok(!d.algorithms.some((a) => /^(none|HS)/i.test(a)), `algorithms ${JSON.stringify(d.algorithms)}`);
  assert.ok(d.modes?.includes('delegated'), `modes ${JSON.stringify(d.modes)}`);
  assert.ok(d.approval_methods?.includes('device_authorization'), `approval_methods ${JSON.stringify(d.approval_methods)}`);
  assert.ok(d.endpoints && typeof d.endpoints === 'object', 'endpoints');
  const abs = (p) => new URL(p, `${API}/`).href;
  const want = {
    register: '/api/auth/agent/register', status: '/api/auth/agent/status', execute: '/api/auth/capability/execute',
    revoke: '/api/auth/agent/revoke',
  };
  for (const [k, p] of Object.entries(want)) {
    assert.ok(d.endpoints[k], `endpoints.${k} in ${JSON.stringify(d.endpoints)}`);
    assert.equal(new URL(abs(d.endpoints[k])).pathname, p, `endpoints.${k}`);
  }
  const caps = Array.isArray(d.capabilities) ? d.capabilities : Object.entries(d.capabilities ?? {}).map(([name, c]) => ({ name, ...c }));
  assert.deepEqual(caps.map((c) => c.name).sort(), [...CAPABILITIES].sort(), `capabilities ${JSON.stringify(caps.map((c) => c.name))}`);
  for (const c of caps) {
    const schema = c.input;
    assert.equal(schema?.type, 'object', `${c.name}: a JSON Schema of its arguments: ${JSON.stringify(c)}`);
    assert.ok(c.description, `${c.name}: description`);
  }
});

test('discovery points at the docs: /auth.md (section 4) and /llms.txt describe the delegated flow', async () => {
  const doc = s.discovery.documentation ?? `${BASE}/auth.md`;
  let res = await fetch(doc);
  const auth = await res.text();
  assert.equal(res.status, 200, `${doc}: ${res.status}`);
  for (const want of ['host+jwt', 'agent+jwt', '/.well-known/agent-configuration', '/api/auth/agent/register', 'send_fax']) {
    assert.ok(auth.includes(want), `${doc} mentions ${want}`);
  }
  res = await fetch(`${BASE}/llms.txt`);
  const llms = await res.text();
  assert.equal(res.status, 200);
  assert.ok(llms.includes('/.well-known/agent-configuration'), '/llms.txt names the discovery document');
});

test('host create: refused without the owner session, cross-origin, or with a private key', async () => {
  const k = await keyPair();
  const body = { name: 'no session', public_key: k.jwk, default_capabilities: [] };
  let r = await call('POST', `${BASE}/api/auth/host/create`, { json: body });
  assert.ok(r.status === 401 || r.status === 403, `no session: ${r.status} ${r.text}`);
  r = await call('POST', `${BASE}/api/auth/host/create`, { json: body, cookie: COOKIE, origin: 'https://evil.example' });
  assert.equal(r.status, 403, `cross-origin: ${r.status} ${r.text}`);
  r = await call('POST', `${BASE}/api/auth/host/create`, { json: { ...body, public_key: k.privateJWK }, cookie: COOKIE });
  assert.equal(r.status, 400, `private JWK: ${r.status} ${r.text}`);
  r = await call('POST', `${BASE}/api/auth/host/create`, { json: { ...body, public_key: { kty: 'EC', crv: 'P-256', x: 'AA', y: 'AA' } }, cookie: COOKIE });
  assert.equal(r.status, 400, `EC key: ${r.status} ${r.text}`);
});

test('host create with the public key (owner session) → hostId', async () => {
  s.host = await createHost(COOKIE, 'Conformance host');
});

test('host create without a key → enrollment token once; enroll; a failed enroll does not consume it, a used one is refused', async () => {
  const r = await call('POST', `${API}/api/auth/host/create`, { cookie: COOKIE, origin: BASE, json: { name: 'Enrolled host', default_capabilities: [] } });
  assert.ok(r.status === 200 || r.status === 201, `host/create: ${r.status} ${r.text}`);
  const token = r.body.enrollmentToken;
  assert.match(token ?? '', /^fxh_/, `enrollmentToken: ${r.text}`);
  const k = await keyPair();
  // A bad key (the private JWK) fails and leaves the token usable.
  let e = await call('POST', `${API}/api/auth/host/enroll`, { json: { token, public_key: k.privateJWK, name: 'Enrolled host' } });
  assert.equal(e.status, 400, `enroll with a private JWK: ${e.status} ${e.text}`);
  // The key of another host is refused too (every host has its own).
  e = await call('POST', `${API}/api/auth/host/enroll`, { json: { token, public_key: s.host.jwk, name: 'Enrolled host' } });
  assert.ok(e.status === 409 || e.status === 400, `enroll with another host's key: ${e.status} ${e.text}`);
  e = await call('POST', `${API}/api/auth/host/enroll`, { json: { token, public_key: k.jwk, name: 'Enrolled host' } });
  assert.ok(e.status === 200 || e.status === 201, `enroll: ${e.status} ${e.text}`);
  k.id = e.body.hostId ?? e.body.host_id;
  assert.match(k.id ?? '', /^hst_/, `enroll: ${e.text}`);
  s.enrolled = k;
  const again = await call('POST', `${API}/api/auth/host/enroll`, { json: { token, public_key: (await keyPair()).jwk, name: 'again' } });
  assert.ok(again.status >= 400 && again.status < 500, `a used token: ${again.status} ${again.text}`);
  // The enrolled host signs like any other: status of an unknown agent.
  expectError(await agentStatus(k, 'dag_unknown'), 404, 'agent_not_found', 'enrolled host, unknown agent');
});

test('register: pending with an approval object (device_authorization); a pending retry is idempotent', async () => {
  const { agent, r } = await register(s.host, 'Conformance agent', ASKED);
  assert.ok(r.status === 200 || r.status === 201, `register: ${r.status} ${r.text}`);
  assert.match(r.body.agent_id ?? '', /^dag_/);
  assert.equal(r.body.host_id, s.host.id);
  assert.equal(r.body.status, 'pending');
  assert.deepEqual(r.body.agent_capability_grants?.map((g) => g.capability).sort(), ASKED, `agent_capability_grants: ${r.text}`);
  assert.ok(r.body.agent_capability_grants.every((g) => g.status === 'pending'), `grants pending: ${r.text}`);
  checkApproval(r.body.approval, r.body.agent_id);
  s.agent = agent;
  s.approval = r.body.approval;
  const again = await register(s.host, 'Conformance agent', ASKED, { agent });
  assert.ok(again.r.status === 200 || again.r.status === 201, `retry: ${again.r.status} ${again.r.text}`);
  assert.equal(again.r.body.agent_id, agent.id, 'the retry answers the same agent');
  assert.equal(again.r.body.status, 'pending');
});

test('register: refusals (host key as agent key, anonymous/external identity, no agent key, agent key of another agent)', async () => {
  let { r } = await register(s.host, 'Same key', ['get_credits'], { agent: { ...s.host, id: undefined } });
  assert.ok(r.status === 400 || r.status === 409, `the host's own key: ${r.status} ${r.text}`);
  ({ r } = await register(s.host, 'Anonymous', ['get_credits'], { body: { type: 'anonymous' } }));
  assert.equal(r.status, 400, `anonymous: ${r.status} ${r.text}`);
  ({ r } = await register(s.host, 'External', ['get_credits'], { body: { mode: 'autonomous' } }));
  assert.equal(r.status, 400, `mode autonomous: ${r.status} ${r.text}`);
  ({ r } = await register(s.host, 'Unknown cap', ['launch_rockets']));
  expectError(r, 400, 'invalid_capabilities', 'unknown capability');
  const res = await call('POST', `${API}/api/auth/agent/register`, {
    bearer: await hostJWT(s.host), json: { name: 'No key', mode: 'delegated', capabilities: ['get_credits'], preferred_method: 'device_authorization' },
  });
  assert.ok(res.status === 400 || res.status === 401, `no agent_public_key: ${res.status} ${res.text}`);
  // Another host's key as the agent key: every key pair is used once.
  ({ r } = await register(s.host, 'Other host key', ['get_credits'], { agent: { ...s.enrolled, id: undefined } }));
  assert.ok(r.status === 400 || r.status === 409, `another host's key as the agent key: ${r.status} ${r.text}`);
  // An agent's key cannot become a host's either.
  const hk = await call('POST', `${BASE}/api/auth/host/create`, { cookie: COOKIE, json: { name: 'Agent key host', public_key: s.agent.jwk, default_capabilities: [] } });
  assert.ok(hk.status === 400 || hk.status === 409, `an agent's key as a host key: ${hk.status} ${hk.text}`);
  // Another host registering the same agent key: the key is taken.
  ({ r } = await register(s.enrolled, 'Stolen key', ['get_credits'], { agent: { ...s.agent } }));
  expectError(r, 409, 'agent_exists', 'agent key of another host\'s agent');
});

test('status: pending with host id and with the key thumbprint as iss; never repeats the user code', async () => {
  for (const iss of [s.host.id, s.host.thumbprint]) {
    const r = await agentStatus(s.host, s.agent.id, { iss });
    assert.equal(r.status, 200, `status (iss ${iss}): ${r.status} ${r.text}`);
    assert.equal(r.body.agent_id, s.agent.id);
    assert.equal(r.body.status, 'pending');
    assert.ok(!r.text.includes(s.approval.user_code), 'status does not repeat the user code');
  }
  expectError(await agentStatus(s.enrolled, s.agent.id), 404, 'agent_not_found', 'another host\'s agent');
});

test('host JWT refusals: replayed jti, exp − iat = 61 s, expired, future iat, wrong aud, Host-header aud, typ swap, alg none, HS256, unknown iss, wrong key, wrong kid', async () => {
  const url = `${API}/api/auth/agent/status?agent_id=${s.agent.id}`;
  const get = (bearer) => call('GET', url, { bearer });
  const jwt = await hostJWT(s.host);
  assert.equal((await get(jwt)).status, 200, 'first use');
  expectInvalidJWT(await get(jwt), 'the same host jti twice', ['invalid_jwt', 'jwt_replayed']);
  const t = Math.floor(Date.now() / 1000);
  expectInvalidJWT(await get(await hostJWT(s.host, {}, { lifetime: 61 })), 'exp − iat = 61 s');
  expectInvalidJWT(await get(await hostJWT(s.host, {}, { iat: t - 200, lifetime: 60 })), 'expired');
  expectInvalidJWT(await get(await hostJWT(s.host, {}, { iat: t + 120, lifetime: 30 })), 'iat in the future');
  expectInvalidJWT(await get(await hostJWT(s.host, { aud: `${API}/api/auth` })), 'wrong aud');
  expectInvalidJWT(await get(await hostJWT(s.host, { aud: `http://127.0.0.1:${new URL(BASE).port}` })), 'aud from the Host header');
  expectInvalidJWT(await get(await hostJWT(s.host, { jti: null })), 'no jti');
  expectInvalidJWT(await get(await sign(s.host, 'agent+jwt', { iss: s.host.id })), 'typ agent+jwt on a host endpoint');
  expectInvalidJWT(await get(await sign(s.host, 'JWT', { iss: s.host.id })), 'typ JWT');
  expectInvalidJWT(await get(unsigned('host+jwt', { iss: s.host.id })), 'alg none');
  expectInvalidJWT(await get(await hs256('host+jwt', s.host.jwk, { iss: s.host.id })), 'HS256 with the public key as secret');
  expectInvalidJWT(await get(await hostJWT(s.host, { iss: 'hst_unknown' })), 'unknown host');
  expectInvalidJWT(await get(await hostJWT({ ...(await keyPair()), id: s.host.id })), 'signed by another key');
  expectInvalidJWT(await get('not.a.jwt'), 'garbage');
  // kid, when sent, is the key's RFC 7638 thumbprint.
  assert.equal((await get(await hostJWT(s.host, {}, { header: { kid: s.host.thumbprint } }))).status, 200, 'kid = the key thumbprint');
  expectInvalidJWT(await get(await hostJWT(s.host, {}, { header: { kid: 'another-key' } })), 'kid of another key');
  const none = await call('GET', url);
  assert.equal(none.status, 401, `no bearer: ${none.status} ${none.text}`);
  assert.match(none.headers.get('www-authenticate') ?? '', /^AgentAuth /);
});

test('device/code re-issues the code: the old link stops working; an unknown agent is agent_not_found', async () => {
  const r = await call('POST', `${API}/api/auth/agent/device/code`, { bearer: await hostJWT(s.host), json: { agent_id: s.agent.id } });
  assert.equal(r.status, 200, `device/code: ${r.status} ${r.text}`);
  const ap = r.body.approval ?? r.body;
  checkApproval(ap, s.agent.id);
  assert.notEqual(ap.user_code, s.approval.user_code, 'a new user code');
  s.oldApproval = s.approval;
  s.approval = ap;
  expectError(await call('POST', `${API}/api/auth/agent/device/code`, { bearer: await hostJWT(s.host), json: { agent_id: 'dag_nope' } }),
    404, 'agent_not_found', 'device/code for an unknown agent');
  // The old code cannot approve.
  await assert.rejects(approveDevice(COOKIE, s.oldApproval.verification_uri_complete, s.oldApproval.user_code), 'the old link still approves');
  assert.equal((await agentStatus(s.host, s.agent.id)).body.status, 'pending');
});

test('the device approval is in the inbox too, linking to the device page without the code', async () => {
  const card = await inboxCard(COOKIE, new RegExp(`agent_id=${s.agent.id}`));
  assert.match(card.html, /Agent device approval/);
  assert.ok(card.html.includes(`href="/console/device?agent_id=${s.agent.id}"`), 'the card links to the device page');
  assert.ok(!card.html.includes(s.approval.user_code), 'the inbox does not show the user code');
});

test('a pending agent cannot execute: agent_pending', async () => {
  expectError(await execute(s.host, s.agent, 'get_credits'), 403, 'agent_pending', 'execute while pending');
});

test('the owner approves on the device page (console form, session, csrf): the agent is active with its grants', async () => {
  const page = await approveDevice(COOKIE, s.approval.verification_uri_complete, s.approval.user_code);
  assert.ok(page.includes('Conformance agent') || page.includes('approved'), 'the result page');
  const r = await agentStatus(s.host, s.agent.id);
  assert.equal(r.status, 200, `status: ${r.status} ${r.text}`);
  assert.equal(r.body.status, 'active');
  assert.deepEqual(granted(r.body), ASKED);
});

test('execute get_credits and validate_fax on its own (agent JWT, jose EdDSA)', async () => {
  let r = await execute(s.host, s.agent, 'get_credits');
  assert.equal(r.status, 200, `get_credits: ${r.status} ${r.text}`);
  assert.ok(r.body.data && 'balance' in r.body.data, `get_credits: ${r.text}`);
  r = await execute(s.host, s.agent, 'validate_fax', { to: '+12125550100', pages: 2 });
  assert.equal(r.status, 200, `validate_fax: ${r.status} ${r.text}`);
  assert.equal(r.body.data?.pages, 2, `validate_fax: ${r.text}`);
  assert.equal(r.body.data?.to, '+12125550100');
  assert.ok(r.body.data?.amount, `validate_fax quote: ${r.text}`);
  r = await execute(s.host, s.agent, 'create_credit_checkout', { pack: 'pack_10' });
  expectError(r, 403, 'capability_not_granted', 'a capability the agent was not granted');
});

test('agent JWT refusals: replayed jti, typ swap, wrong sub, wrong aud, 61 s, alg none, host key, wrong kid; iss = host thumbprint accepted', async () => {
  const url = `${API}/api/auth/capability/execute`;
  const post = (bearer) => call('POST', url, { bearer, json: { capability: 'get_credits', arguments: {} } });
  const jwt = await agentJWT(s.host, s.agent);
  assert.equal((await post(jwt)).status, 200, 'first use');
  expectInvalidJWT(await post(jwt), 'the same agent jti twice', ['invalid_jwt', 'jwt_replayed']);
  expectInvalidJWT(await post(await sign(s.agent, 'host+jwt', { iss: s.host.id, sub: s.agent.id })), 'typ host+jwt on execute');
  expectInvalidJWT(await post(await agentJWT(s.host, s.agent, { sub: 'dag_other' })), 'wrong sub');
  expectInvalidJWT(await post(await agentJWT(s.host, s.agent, { aud: BASE + '/api/auth' })), 'wrong aud');
  expectInvalidJWT(await post(await agentJWT(s.host, s.agent, {}, { lifetime: 61 })), 'exp − iat = 61 s');
  expectInvalidJWT(await post(unsigned('agent+jwt', { iss: s.host.id, sub: s.agent.id })), 'alg none');
  expectInvalidJWT(await post(await agentJWT(s.host, { ...s.host, id: s.agent.id })), 'agent JWT signed with the host key');
  expectInvalidJWT(await post(await agentJWT(s.host, s.agent, {}, { header: { kid: s.host.thumbprint } })), 'agent JWT with the host key\'s kid');
  assert.equal((await post(await agentJWT(s.host, s.agent, {}, { header: { kid: s.agent.thumbprint } }))).status, 200, 'kid = the agent key thumbprint');
  // The host's thumbprint as iss is accepted for agent JWTs too.
  const r = await post(await agentJWT(s.host, s.agent, { iss: s.host.thumbprint }));
  assert.equal(r.status, 200, `iss = host thumbprint: ${r.status} ${r.text}`);
});

test('send_fax is never autonomous: 202 pending with a status location bound to the exact fax; nothing is charged', async () => {
  const before = (await execute(s.host, s.agent, 'get_credits')).body.data;
  const r = await execute(s.host, s.agent, 'send_fax', faxArgs());
  assert.equal(r.status, 202, `send_fax: ${r.status} ${r.text}`);
  assert.equal(r.body.status, 'pending', r.text);
  assert.match(r.body.id ?? '', /^dsn_/);
  assert.equal(r.body.status_url, `${API}/api/auth/capability/status?id=${r.body.id}`);
  assert.equal(r.headers.get('location'), r.body.status_url);
  assert.match(r.body.approval_url ?? '', new RegExp(`^${BASE}/console/approvals/[A-Za-z0-9_-]+$`), `approval_url: ${r.text}`);
  const send = r.body.send;
  assert.equal(send?.to, '+12125550100', r.text);
  assert.equal(send.pages, 1, r.text);
  assert.match(send.document_sha256 ?? '', /^[0-9a-f]{64}$/, r.text);
  s.send = r.body;
  const st = await sendStatus(s.host, s.agent, r.body.status_url);
  assert.equal(st.status, 'pending', JSON.stringify(st));
  assert.equal(st.data, undefined, 'no fax while pending');
  // Another agent cannot read it.
  const other = await call('GET', r.body.status_url, { bearer: await agentJWT(s.host, { ...s.agent, id: 'dag_other' }) });
  assert.equal(other.status, 401, `another agent's JWT: ${other.status} ${other.text}`);
  const after = (await execute(s.host, s.agent, 'get_credits')).body.data;
  assert.equal(after.balance, before.balance, 'nothing charged while pending');
  // send_fax without create_upload cannot pass a file inline: tested with
  // the narrowed agent below.
});

test('the owner declines the send_fax on its approval page: declined, nothing sent', async () => {
  const card = await inboxCard(COOKIE, /Fax to send/, s.send.approval_url);
  assert.ok(card.html.includes(s.send.send.document_sha256), 'the approval shows the document digest');
  assert.match(card.html, /data-webauthn="approve"/, 'approving needs the passkey');
  assert.doesNotMatch(card.html, /name="decision" value="approve"/, 'no plain approve button');
  await declineInbox(COOKIE, /Fax to send/, s.send.approval_url);
  const st = await sendStatus(s.host, s.agent, s.send.status_url);
  assert.equal(st.status, 'declined', JSON.stringify(st));
  assert.equal(st.data, undefined, 'no fax');
});

test('never a 500: malformed JWTs, bodies and arguments are 4xx in the {error, message} shape', async () => {
  const exec = `${API}/api/auth/capability/execute`;
  const cases = [
    ['oversized JWT', () => call('POST', exec, { bearer: 'a'.repeat(20000), json: { capability: 'get_credits', arguments: {} } })],
    ['JWT with a broken base64 header', () => call('POST', exec, { bearer: '!!!.e30.sig', json: { capability: 'get_credits', arguments: {} } })],
    ['JWT whose claims are an array', async () => {
      const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
      return call('POST', exec, { bearer: `${b64({ alg: 'EdDSA', typ: 'agent+jwt' })}.${b64([1, 2])}.${'A'.repeat(86)}`, json: { capability: 'get_credits', arguments: {} } });
    }],
    ['two Authorization headers', async () => {
      const res = await fetch(exec, { method: 'POST', headers: [['authorization', 'Bearer a.b.c'], ['authorization', 'Bearer d.e.f'], ['content-type', 'application/json']], body: '{}' });
      return { status: res.status, body: await res.json().catch(() => ({})), text: '' };
    }],
    ['unknown capability', async () => call('POST', exec, { bearer: await agentJWT(s.host, s.agent), json: { capability: 'launch', arguments: {} } })],
    ['unknown argument', async () => execute(s.host, s.agent, 'get_credits', { extra: 1 })],
    ['arguments not an object', async () => call('POST', exec, { bearer: await agentJWT(s.host, s.agent), json: { capability: 'get_credits', arguments: [1] } })],
    ['body not JSON', async () => {
      const res = await fetch(exec, { method: 'POST', headers: { authorization: `Bearer ${await agentJWT(s.host, s.agent)}`, 'content-type': 'application/json' }, body: '{"capability":' });
      return { status: res.status, body: await res.json().catch(() => ({})), text: '' };
    }],
    ['invalid base64 document', async () => execute(s.host, s.agent, 'send_fax', { to: '+12125550100', content_base64: '***not base64***' })],
    ['not a PDF', async () => execute(s.host, s.agent, 'send_fax', { to: '+12125550100', content_base64: Buffer.from('hello').toString('base64') })],
    ['invalid destination', async () => execute(s.host, s.agent, 'validate_fax', { to: '12345', pages: 1 })],
    ['zero pages', async () => execute(s.host, s.agent, 'validate_fax', { to: '+12125550100', pages: 0 })],
    ['unknown fax id', async () => execute(s.host, s.agent, 'get_fax_status', { fax_id: 'fax_nope' })],
    ['unknown send id', async () => call('GET', `${API}/api/auth/capability/status?id=dsn_nope`, { bearer: await agentJWT(s.host, s.agent) })],
    ['status without agent_id', async () => call('GET', `${API}/api/auth/agent/status`, { bearer: await hostJWT(s.host) })],
    ['enroll with a made-up token', () => call('POST', `${API}/api/auth/host/enroll`, { json: { token: 'fxh_nope', public_key: { kty: 'OKP', crv: 'Ed25519', x: 'AA' }, name: 'x' } })],
    ['register with an empty capability list', async () => (await register(s.host, 'Empty', [])).r],
    ['register with agent_public_key not a JWK', async () => call('POST', `${API}/api/auth/agent/register`, {
      bearer: await hostJWT(s.host, { agent_public_key: 'nope' }), json: { name: 'x', mode: 'delegated', capabilities: ['get_credits'] },
    })],
    ['host create with an unknown default capability', () => call('POST', `${BASE}/api/auth/host/create`, { cookie: COOKIE, json: { name: 'x', public_key: null, default_capabilities: ['launch'] } })],
  ];
  for (const [what, run] of cases) {
    const r = await run();
    assert.ok(r.status >= 400 && r.status < 500, `${what}: want 4xx, got ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    assert.equal(typeof r.body.error, 'string', `${what}: {error, message}: ${JSON.stringify(r.body).slice(0, 300)}`);
  }
});

test('narrowing: the owner grants less than asked; the rest is capability_not_granted', async () => {
  const { agent, r } = await register(s.host, 'Narrow agent', ['get_credits', 'validate_fax', 'send_fax']);
  assert.equal(r.body.status, 'pending', r.text);
  await approveDevice(COOKIE, r.body.approval.verification_uri_complete, r.body.approval.user_code, { capabilities: ['get_credits', 'send_fax'] });
  const st = await agentStatus(s.host, agent.id);
  assert.deepEqual(granted(st.body), ['get_credits', 'send_fax']);
  assert.ok(st.body.agent_capability_grants.some((g) => g.capability === 'validate_fax' && g.status === 'denied'), st.text);
  assert.equal((await execute(s.host, agent, 'get_credits')).status, 200);
  expectError(await execute(s.host, agent, 'validate_fax', { to: '+12125550100', pages: 1 }), 403, 'capability_not_granted', 'narrowed away');
  // send_fax granted without create_upload: an inline file is refused.
  expectError(await execute(s.host, agent, 'send_fax', faxArgs()), 403, 'capability_not_granted', 'inline file without create_upload');
  s.narrow = agent;
});

test('revoke: the host revokes its agent (agent_revoked); the owner revokes the host (host_revoked for every JWT)', async () => {
  let r = await call('POST', `${API}/api/auth/agent/revoke`, { bearer: await hostJWT(s.host), json: { agent_id: s.narrow.id } });
  assert.equal(r.status, 200, `revoke: ${r.status} ${r.text}`);
  assert.equal(r.body.status, 'revoked');
  expectError(await execute(s.host, s.narrow, 'get_credits'), 403, 'agent_revoked', 'revoked agent');
  // The owner's session revokes an agent too.
  r = await call('POST', `${BASE}/api/auth/agent/revoke`, { cookie: COOKIE, json: { agent_id: s.agent.id } });
  assert.equal(r.status, 200, `owner revoke: ${r.status} ${r.text}`);
  expectError(await execute(s.host, s.agent, 'get_credits'), 403, 'agent_revoked', 'agent revoked by the owner');
  // A fresh agent of the enrolled host, then the owner revokes that host.
  const { agent } = await register(s.enrolled, 'Doomed agent', ['get_credits']);
  assert.ok(agent.id, 'registered');
  await revokeHostInConsole(COOKIE, s.enrolled.id);
  expectError(await agentStatus(s.enrolled, agent.id), 403, 'host_revoked', 'host JWT of a revoked host');
  expectError(await execute(s.enrolled, agent, 'get_credits'), 403, ['host_revoked', 'agent_revoked'], 'agent JWT under a revoked host');
});
