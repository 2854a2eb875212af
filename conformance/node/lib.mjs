// Shared by the conformance suites: the server under test (started by
// conformance/run-suites.sh) and small HTML helpers for the console's
// server-rendered pages.
import assert from 'node:assert/strict';

export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the suites through conformance/run-suites.sh`);
  return v;
}

export const BASE = env('FAXHUB_BASE_URL');
export const OUT = env('FAXHUB_OUT');
export const ISSUER = `${BASE}/api/auth`;
export const MCP = `${BASE}/mcp`;
export const A2A = `${BASE}/a2a`;

const entities = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
export function unescapeHTML(s) {
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, e) => {
    if (e[0] === '#') return String.fromCodePoint(e[1].toLowerCase() === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return entities[e.toLowerCase()] ?? m;
  });
}

// hiddenField reads <input type="hidden" name=NAME value=…> from a page.
export function hiddenField(html, name) {
  const m = html.match(new RegExp(`name="${name}" value="([^"]*)"`));
  assert.ok(m, `the page has no ${name} field`);
  return unescapeHTML(m[1]);
}

// This suite's client address (TEST-NET-3), named to the server through
// X-Forwarded-For (run-suites.sh trusts loopback): registrations are
// limited per address, and every suite runs from 127.0.0.1.
const SUITE_ADDRESS = `203.0.113.${1 + Math.floor(Math.random() * 254)}`;

// A public client registered by RFC 7591 dynamic client registration.
export async function registerClient(registrationEndpoint, name, redirectURI) {
  const res = await fetch(registrationEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-forwarded-for': SUITE_ADDRESS },
    body: JSON.stringify({
      client_name: name, redirect_uris: [redirectURI], token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    }),
  });
  const body = await res.json();
  assert.equal(res.status, 201, `registration: ${res.status} ${JSON.stringify(body)}`);
  assert.ok(body.client_id, 'registration returned no client_id');
  assert.equal(body.token_endpoint_auth_method, 'none');
  assert.deepEqual(body.redirect_uris, [redirectURI]);
  return body;
}

// consent drives one authorization request as the signed-in owner (cookie:
// the session, by default the admin-made FAXHUB_SESSION_COOKIE): the
// authorize redirect, the consent page, the form post (csrf, binding,
// return, ticked scopes, Origin) and the resume redirect. The page must name
// the client and the resource the token is for. It returns the URL the
// browser would land on at the client.
export async function consent(authURL, clientName, redirectURI, { cookie = env('FAXHUB_SESSION_COOKIE'), resource = MCP, drop = [] } = {}) {
  let res = await fetch(authURL, { headers: { cookie }, redirect: 'manual' });
  assert.equal(res.status, 303, `authorize: ${res.status} ${await res.text()}`);
  const consentURL = new URL(res.headers.get('location'), BASE);
  assert.match(consentURL.pathname, /^\/console\/approvals\/[^/]+$/, `authorize redirects to ${consentURL}`);
  const ret = consentURL.searchParams.get('return');
  res = await fetch(consentURL, { headers: { cookie } });
  const page = await res.text();
  assert.equal(res.status, 200, `consent page: ${res.status}`);
  assert.ok(page.includes(clientName), `the consent page names the client ${clientName}`);
  assert.ok(page.includes(resource), `the consent page names the resource ${resource}`);
  const form = new URLSearchParams({
    csrf: hiddenField(page, 'csrf'), binding: hiddenField(page, 'binding'), return: hiddenField(page, 'return'),
    decision: 'approve',
  });
  // The owner unticks the scopes in drop (a narrower grant).
  for (const m of page.matchAll(/name="scope" value="([^"]+)" checked/g)) if (!drop.includes(m[1])) form.append('scope', m[1]);
  res = await fetch(new URL(consentURL.pathname, BASE), {
    method: 'POST', redirect: 'manual', body: form,
    headers: { cookie, origin: BASE, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(res.status, 303, `consent post: ${res.status} ${await res.text()}`);
  res = await fetch(new URL(ret, BASE), { headers: { cookie }, redirect: 'manual' });
  assert.equal(res.status, 303, `resume: ${res.status} ${await res.text()}`);
  const cb = new URL(res.headers.get('location'));
  assert.equal(`${cb.origin}${cb.pathname}`, redirectURI, `resume redirects to ${cb}`);
  return cb;
}

// payNumber pays the first month of a fax number the way its owner does:
// the number's console page at checkoutUrl (session cookie), its "Pay" form
// (csrf, same-origin), the test checkout page it redirects to, and the test
// card that pays.
export async function payNumber(checkoutUrl, cookie = env('FAXHUB_SESSION_COOKIE')) {
  await payOnConsolePage(checkoutUrl, /^\/console\/numbers\/num_[^/]+$/, "number's page", /<form[^>]* action="([^"]*\/pay\?[^"]*)"/, cookie);
}

// payOnConsolePage opens the owner's console page at checkoutUrl (its path
// must match pagePath), posts the pay form formAction finds (csrf,
// same-origin), and pays the test checkout page it redirects to with the
// test card.
export async function payOnConsolePage(checkoutUrl, pagePath, what, formAction, cookie = env('FAXHUB_SESSION_COOKIE')) {
  const u = new URL(checkoutUrl);
  assert.equal(u.origin, BASE, `checkoutUrl ${checkoutUrl} is on the server`);
  assert.match(u.pathname, pagePath, `checkoutUrl ${checkoutUrl} is the ${what}`);
  let res = await fetch(u, { headers: { cookie } });
  const page = await res.text();
  assert.equal(res.status, 200, `${what}: ${res.status}`);
  const action = page.match(formAction);
  assert.ok(action, `the ${what} offers no payment form (not payable?)`);
  res = await fetch(new URL(unescapeHTML(action[1]), BASE), {
    method: 'POST', redirect: 'manual', body: new URLSearchParams({ csrf: hiddenField(page, 'csrf') }),
    headers: { cookie, origin: BASE, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(res.status, 303, `pay: ${res.status} ${await res.text()}`);
  const checkout = new URL(res.headers.get('location'), BASE);
  assert.match(checkout.pathname, /^\/checkout\/test\//, `pay redirects to ${checkout}`);
  await payTestCard(checkout);
}

// payTestCard pays a test-mode checkout page (/checkout/test/{id}) with the
// test card, as a person at that page does.
export async function payTestCard(checkoutUrl) {
  const year = String((new Date().getUTCFullYear() + 3) % 100).padStart(2, '0');
  const res = await fetch(checkoutUrl, {
    method: 'POST', redirect: 'manual',
    body: new URLSearchParams({ card_number: '4242 4242 4242 4242', expiry: `12/${year}`, cvc: '123' }),
    headers: { origin: BASE, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(res.status, 303, `test card: ${res.status} ${await res.text()}`);
}

// testAPIKey creates a test-mode API key for the signed-in owner on the
// console's keys page and returns its secret.
export async function testAPIKey(name, cookie = env('FAXHUB_SESSION_COOKIE')) {
  let res = await fetch(new URL('/console/keys', BASE), { headers: { cookie } });
  const page = await res.text();
  assert.equal(res.status, 200, `keys page: ${res.status}`);
  res = await fetch(new URL('/console/keys', BASE), {
    method: 'POST', redirect: 'manual', body: new URLSearchParams({ csrf: hiddenField(page, 'csrf'), mode: 'test', name }),
    headers: { cookie, origin: BASE, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
  });
  const created = await res.text();
  assert.equal(res.status, 200, `create key: ${res.status}`);
  const m = created.match(/id="secret"[^>]* value="([^"]+)"/);
  assert.ok(m, 'the keys page shows no new key');
  return unescapeHTML(m[1]);
}

// simulateInbound has the simulator deliver pdf (a Buffer) to the owner's
// test number to, as a received fax (REST, test-mode API key), and returns
// the received fax.
export async function simulateInbound(apiKey, to, pdf, from = '+13125550100') {
  const form = new FormData();
  form.append('to', to);
  form.append('from', from);
  form.append('file', new Blob([pdf], { type: 'application/pdf' }), 'inbound.pdf');
  const res = await fetch(new URL('/api/v1/inbox/simulate', BASE), { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
  const body = await res.json().catch(() => ({}));
  assert.equal(res.status, 200, `simulate: ${res.status} ${JSON.stringify(body)}`);
  assert.match(body.id ?? '', /^inb_/, `simulate: ${JSON.stringify(body)}`);
  return body;
}

// until calls get until done(result) holds, at most tries times, waiting
// between calls only for the server's asynchronous work (delivery by the
// simulated provider); it fails with the last result.
export async function until(what, get, done, { tries = 150, every = 100 } = {}) {
  let last;
  for (let i = 0; i < tries; i++) {
    last = await get();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, every));
  }
  assert.fail(`${what}: never reached after ${tries} polls; last: ${JSON.stringify(last).slice(0, 800)}`);
}
