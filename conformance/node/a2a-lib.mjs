// Shared by the A2A suites (a2a, a2a-cli, the browser's AP2 approval): an
// access token for {base}/a2a by the real OAuth flow, raw JSON-RPC calls
// for what a client SDK would not send, paying a fax draft at its checkout
// as the owner, and reading data parts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as oauth from 'oauth4webapi';
import { A2A, ISSUER, consent, env, payOnConsolePage, registerClient, until } from './lib.mjs';

export { until };

// AP2 is the AP2 extension URI faxhub declares (docs/a2a-design: v0.1).
export const AP2 = 'https://github.com/google-agentic-commerce/ap2/tree/v0.1';
export const SKILLS = ['validate_fax', 'create_upload', 'create_fax', 'get_fax', 'list_faxes', 'get_credits',
  'create_credit_checkout', 'buy_credits', 'search_numbers', 'buy_number', 'list_numbers', 'list_inbox', 'read_inbox_fax',
  'preview_fax', 'get_fax_document', 'get_fax_report', 'get_fax_receipt', 'get_fax_batch', 'cancel_fax_batch'];
export const FAX_TO = '+12125550100';
export const SAMPLE_PDF = new URL('../../docs/sample-letter.pdf', import.meta.url).pathname;

const insecure = { [oauth.allowInsecureRequests]: true }; // http on loopback only
let as;

async function authorizationServer() {
  if (!as) as = await oauth.processDiscoveryResponse(new URL(ISSUER), await oauth.discoveryRequest(new URL(ISSUER), { algorithm: 'oauth2', ...insecure }));
  return as;
}

// a2aClient registers a public client by RFC 7591 (RFC 8414 discovery
// first). Registration is rate-limited per address (10 an hour) and every
// suite of a run talks to one server from one address, so a suite
// registers once and gets all its tokens through that client.
export async function a2aClient(clientName, redirect) {
  const reg = await registerClient((await authorizationServer()).registration_endpoint, clientName, redirect);
  return { client_id: reg.client_id, token_endpoint_auth_method: 'none', clientName, redirect };
}

// a2aToken runs the chat-app flow for the A2A resource with oauth4webapi
// for client (from a2aClient): authorize with PKCE S256 and
// resource={base}/a2a, the owner's consent in the console (the admin-made
// session unless cookie is given), and the code exchange. consentIn, when
// given, plays the consent instead (the browser suite uses Chromium) and
// returns the callback URL.
export async function a2aToken(client, { scope, cookie, consentIn, resource = A2A } = {}) {
  const as = await authorizationServer();
  const { clientName, redirect } = client;
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const u = new URL(as.authorization_endpoint);
  for (const [k, v] of Object.entries({
    response_type: 'code', client_id: client.client_id, redirect_uri: redirect, scope, state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', resource,
  })) u.searchParams.set(k, v);
  const cb = consentIn ? await consentIn(u) : await consent(u, clientName, redirect, { cookie: cookie ?? env('FAXHUB_SESSION_COOKIE'), resource });
  const params = oauth.validateAuthResponse(as, client, cb, state); // iss (RFC 9207) and state
  const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirect, verifier,
    { additionalParameters: { resource }, ...insecure });
  const tok = await oauth.processAuthorizationCodeResponse(as, client, res);
  assert.equal(tok.token_type.toLowerCase(), 'bearer');
  assert.deepEqual(new Set(tok.scope.split(' ')), new Set(scope.split(' ')), 'the granted scope is the requested one');
  return tok.access_token;
}

// rpc posts one JSON-RPC request to /a2a with the given headers and
// returns the HTTP status, headers and parsed body.
export async function rpc(method, params, { token, version = '1.0', extensions, headers = {} } = {}) {
  const h = { 'content-type': 'application/json', accept: 'application/json', ...headers };
  if (token) h.authorization = `Bearer ${token}`;
  if (version !== undefined) h['a2a-version'] = version;
  if (extensions) h['a2a-extensions'] = extensions;
  const res = await fetch(A2A, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id: crypto.randomUUID(), method, params }) });
  const text = await res.text();
  let body;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: res.status, headers: res.headers, body };
}

// userMessage is a 1.0 (ProtoJSON) user message with the given parts.
export function userMessage(parts, extra = {}) {
  return { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts, ...extra };
}

// skillPart is the 1.0 data part that calls a skill.
export function skillPart(skill, args = {}) {
  return { data: { skill, arguments: args } };
}

// dataOf returns the value of the first data part of parts, in either the
// SDK's shape ({content: {$case: 'data', value}}) or the wire's ({data}).
export function dataOf(parts = []) {
  for (const p of parts) {
    if (p?.content?.$case === 'data') return p.content.value;
    if (p && 'data' in p) return p.data;
  }
  return undefined;
}

// textOf joins the text parts of parts (either shape).
export function textOf(parts = []) {
  return parts.map((p) => (p?.content?.$case === 'text' ? p.content.value : p?.text ?? '')).filter(Boolean).join('\n');
}

// artifact finds a task's artifact by name and returns its data.
export function artifactData(task, name) {
  const a = (task.artifacts ?? []).find((x) => x.name === name);
  return a && dataOf(a.parts);
}

// uploadSample PUTs docs/sample-letter.pdf to a create_upload result.
export async function uploadSample(up) {
  assert.equal(up.method, 'PUT', `create_upload: ${JSON.stringify(up)}`);
  assert.ok(up.uploadUrl && up.uploadToken, `create_upload: ${JSON.stringify(up)}`);
  const res = await fetch(up.uploadUrl, { method: 'PUT', headers: { 'content-type': 'application/pdf' }, body: fs.readFileSync(SAMPLE_PDF) });
  const body = await res.text();
  assert.ok(res.status >= 200 && res.status < 300, `PUT ${up.uploadUrl}: ${res.status} ${body}`);
  return body;
}

// payDraft pays a fax draft the way its owner does: the draft page at
// checkoutUrl (session cookie), "Pay and send" (csrf, same-origin), the
// test checkout page it redirects to, and the test card that pays.
export async function payDraft(checkoutUrl, cookie = env('FAXHUB_SESSION_COOKIE')) {
  await payOnConsolePage(checkoutUrl, /^\/console\/drafts\/[^/]+$/, 'draft page', /<form method="post" action="([^"]+)"/, cookie);
}

// paymentMandate builds an AP2 v0.1 PaymentMandate for a CartMandate with
// the test-mode credential token (tok_visa pays, tok_chargeDeclined is
// declined).
export function paymentMandate(cart, token = 'tok_visa') {
  const c = cart.contents;
  const details = c.payment_request.details;
  return {
    payment_mandate_contents: {
      payment_mandate_id: crypto.randomUUID(),
      payment_details_id: details.id,
      payment_details_total: details.total,
      payment_response: { request_id: details.id, method_name: c.payment_request.method_data?.[0]?.supported_methods ?? 'CARD', details: { token } },
      merchant_agent: c.merchant_name ?? 'faxhub',
      timestamp: new Date().toISOString(),
    },
    user_authorization: 'conformance-suite',
  };
}
