// Shared by the delegated host/agent suites (hostagent, and the browser's
// device and send_fax approvals): a host client written with jose, the way
// an agent runtime on the owner's machine would be (docs/hostagent.md).
// The host and each agent have key pairs of their own (Ed25519); every
// request carries a fresh, short-lived JWT signed with the right one.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import * as jose from 'jose';
import { BASE } from './lib.mjs';

// API is {api_url}: the audience of every host and agent JWT and the
// discovery document's issuer. run-suites.sh serves both origins from one
// address, so it equals BASE unless FAXHUB_API_URL says otherwise.
export const API = (process.env.FAXHUB_API_URL ?? BASE).replace(/\/+$/, '');
export const DISCOVERY = `${API}/.well-known/agent-configuration`;
export const CAPABILITIES = ['validate_fax', 'create_upload', 'send_fax', 'get_fax_status', 'get_credits', 'create_credit_checkout', 'list_inbox', 'read_inbox_fax'];
export const FAX_TO = '+12125550100';
export const SAMPLE_PDF = new URL('../../docs/sample-letter.pdf', import.meta.url).pathname;

// keyPair makes an Ed25519 key pair; jwk is the public JWK (kty, crv, x),
// thumbprint its RFC 7638 thumbprint.
export async function keyPair() {
  const { publicKey, privateKey } = await jose.generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const jwk = await jose.exportJWK(publicKey);
  return { publicKey, privateKey, jwk, thumbprint: await jose.calculateJwkThumbprint(jwk), privateJWK: await jose.exportJWK(privateKey) };
}

const now = () => Math.floor(Date.now() / 1000);

// sign signs a JWT with key (EdDSA) and typ. Every claim can be overridden
// (null drops it) so the refusal cases are one line each.
export async function sign(key, typ, claims, { iat = now(), lifetime = 30, header = {} } = {}) {
  const body = { aud: API, iat, exp: iat + lifetime, jti: crypto.randomUUID(), ...claims };
  for (const k of Object.keys(body)) if (body[k] === null) delete body[k];
  return new jose.SignJWT(body).setProtectedHeader({ alg: 'EdDSA', typ, ...header }).sign(key.privateKey);
}

// hostJWT is a host+jwt of host (iss = its host id unless claims.iss).
export const hostJWT = (host, claims = {}, opts) => sign(host, 'host+jwt', { iss: host.id, ...claims }, opts);
// agentJWT is an agent+jwt of agent (iss = its host, sub = the agent).
export const agentJWT = (host, agent, claims = {}, opts) => sign(agent, 'agent+jwt', { iss: host.id, sub: agent.id, ...claims }, opts);

// unsigned is the alg "none" form of the same claims: never accepted.
export function unsigned(typ, claims) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const iat = now();
  return `${b64({ alg: 'none', typ })}.${b64({ aud: API, iat, exp: iat + 30, jti: crypto.randomUUID(), ...claims })}.`;
}

// hs256 signs with HS256 using the public key's bytes as the secret (the
// algorithm-confusion attack): never accepted.
export async function hs256(typ, publicJWK, claims) {
  const iat = now();
  return new jose.SignJWT({ aud: API, iat, exp: iat + 30, jti: crypto.randomUUID(), ...claims })
    .setProtectedHeader({ alg: 'HS256', typ }).sign(new TextEncoder().encode(JSON.stringify(publicJWK)));
}

// call sends one request and returns {status, body, text, headers}; body
// is the parsed JSON answer ({} when it is not JSON).
export async function call(method, url, { json, bearer, cookie, origin, headers = {} } = {}) {
  const h = { accept: 'application/json', ...headers };
  if (json !== undefined) h['content-type'] = 'application/json';
  if (bearer) h.authorization = `Bearer ${bearer}`;
  if (cookie) { h.cookie = cookie; h.origin = origin ?? BASE; h['sec-fetch-site'] = origin && origin !== BASE ? 'cross-site' : 'same-origin'; }
  const res = await fetch(url, { method, headers: h, body: json === undefined ? undefined : JSON.stringify(json), redirect: 'manual' });
  const text = await res.text();
  let body = {};
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body, text, headers: res.headers };
}

// expectError checks an Agent Auth error answer: status and {error, message}.
export function expectError(r, status, codes, what) {
  const want = [].concat(codes);
  assert.equal(r.status, status, `${what}: want ${status} ${want.join('|')}, got ${r.status} ${r.text.slice(0, 400)}`);
  assert.ok(want.includes(r.body.error), `${what}: want ${want.join('|')}, got ${r.text.slice(0, 400)}`);
  assert.equal(typeof r.body.message, 'string', `${what}: {error, message}: ${r.text.slice(0, 400)}`);
}

// expectInvalidJWT checks a 401 for a refused JWT, with the AgentAuth
// challenge naming the discovery document.
export function expectInvalidJWT(r, what, codes = ['invalid_jwt']) {
  expectError(r, 401, codes, what);
  const ch = r.headers.get('www-authenticate') ?? '';
  assert.match(ch, /^AgentAuth /, `${what}: WWW-Authenticate ${ch}`);
  assert.ok(ch.includes(`discovery="${DISCOVERY}"`), `${what}: WWW-Authenticate ${ch}`);
}

// createHost makes a host as the owner (cookie: a signed-in session),
// same-origin, with the host's public key.
export async function createHost(cookie, name, { capabilities = [] } = {}) {
  const host = await keyPair();
  const r = await call('POST', `${BASE}/api/auth/host/create`, { cookie, json: { name, public_key: host.jwk, default_capabilities: capabilities } });
  assert.ok(r.status === 200 || r.status === 201, `host/create: ${r.status} ${r.text}`);
  host.id = r.body.hostId;
  assert.match(host.id ?? '', /^hst_/, `host/create: ${r.text}`);
  return host;
}

// register registers an agent for host with its own key pair and returns
// the agent key (with .id) and the answer.
export async function register(host, name, capabilities, { agent, body = {}, claims = {} } = {}) {
  agent = agent ?? await keyPair();
  const jwt = await hostJWT(host, { agent_public_key: agent.jwk, ...claims });
  const r = await call('POST', `${API}/api/auth/agent/register`, {
    bearer: jwt, json: { name, mode: 'delegated', capabilities, preferred_method: 'device_authorization', force_approval: false, ...body },
  });
  agent.id = r.body.agent_id;
  return { agent, r };
}

// status reads an agent with a fresh host JWT.
export async function agentStatus(host, agentID, claims) {
  return call('GET', `${API}/api/auth/agent/status?agent_id=${encodeURIComponent(agentID)}`, { bearer: await hostJWT(host, claims) });
}

// execute runs a capability with a fresh agent JWT.
export async function execute(host, agent, capability, args = {}, claims) {
  return call('POST', `${API}/api/auth/capability/execute`, { bearer: await agentJWT(host, agent, claims), json: { capability, arguments: args } });
}

// faxArgs are send_fax's arguments for the sample letter, passed inline
// (content_base64, a tiny file; docs/hostagent.md: it needs create_upload
// granted too, larger files go through create_upload and document_id).
export function faxArgs(to = FAX_TO) {
  return { to, content_base64: fs.readFileSync(SAMPLE_PDF).toString('base64') };
}

// sendStatus reads a send_fax request at its status URL with a fresh agent
// JWT: {status: pending|sent|declined|expired, id, send, data (the fax)}.
export async function sendStatus(host, agent, statusURL) {
  const r = await call('GET', statusURL, { bearer: await agentJWT(host, agent) });
  assert.equal(r.status, 200, `send status: ${r.status} ${r.text}`);
  return r.body;
}

// granted lists the capabilities an agent answer shows as active.
export function granted(body) {
  return (body.agent_capability_grants ?? []).filter((g) => g.status === 'active').map((g) => g.capability).sort();
}

// checkApproval checks the approval object of a pending registration.
export function checkApproval(ap, agentID) {
  assert.ok(ap, 'approval object');
  assert.equal(ap.method, 'device_authorization');
  assert.equal(ap.verification_uri, `${BASE}/console/device`);
  const u = new URL(ap.verification_uri_complete);
  assert.equal(`${u.origin}${u.pathname}`, `${BASE}/console/device`);
  assert.equal(u.searchParams.get('agent_id'), agentID);
  assert.ok(u.searchParams.get('code'), `verification_uri_complete has the code: ${ap.verification_uri_complete}`);
  assert.ok(ap.user_code?.length >= 6, `user_code ${ap.user_code}`);
  assert.ok(ap.expires_in > 0 && ap.expires_in <= 600, `expires_in ${ap.expires_in}`);
  assert.equal(ap.interval, 5);
}

// until polls get until done(result), at most tries times, waiting only
// for the server's asynchronous work (the simulated fax delivery).
export async function until(what, get, done, { tries = 150, every = 100 } = {}) {
  let last;
  for (let i = 0; i < tries; i++) {
    last = await get();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, every));
  }
  assert.fail(`${what}: never reached after ${tries} polls; last: ${JSON.stringify(last).slice(0, 800)}`);
}
