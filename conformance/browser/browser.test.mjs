// The owner's browser: Debian Chromium (headless, driven by playwright-core)
// with a CDP virtual WebAuthn authenticator, against a real `faxhub serve`.
// Every page is saved as a screenshot to conformance/out/browser-NN-*.png.
// Tests run in order and share one browser context (one owner).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import * as oauth from 'oauth4webapi';
import * as mcpClient from '@modelcontextprotocol/client';
import { BASE, ISSUER, MCP, OUT, env, registerClient } from '../node/lib.mjs';
import { AP2, a2aToken, artifactData, dataOf, paymentMandate, rpc, skillPart, textOf, until, userMessage } from '../node/a2a-lib.mjs';
import { agentStatus, checkApproval, execute, faxArgs, granted, keyPair, register, sendStatus } from '../node/hostagent-lib.mjs';
import { minimalPDF } from '../node/mcp-lib.mjs';

const CHROMIUM = env('FAXHUB_CHROMIUM');
const EMAIL = 'grace@example.com';
const REDIRECT = 'http://127.0.0.1:53683/callback';
const insecure = { [oauth.allowInsecureRequests]: true };

let browser, context, page, cdp, authenticatorId, profile;
// apiKey is the test-mode API key the suite creates on /console/keys.
let apiKey;
let shot = 0;

async function screenshot(name) {
  shot++;
  await page.screenshot({ path: path.join(OUT, `browser-${String(shot).padStart(2, '0')}-${name}.png`), fullPage: true });
}

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM} (make deps installs Debian's chromium)`);
  for (const f of fs.readdirSync(OUT)) if (/^browser-.*\.png$/.test(f)) fs.rmSync(path.join(OUT, f));
  profile = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'faxhub-chromium-'));
  // launchPersistentContext gives the fresh --user-data-dir the machine needs.
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, timeout: 60000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  context.setDefaultTimeout(20000);
  page = context.pages()[0] ?? await context.newPage();
  // The OAuth client's redirect URI: nothing listens there; the browser
  // lands on a stub so the callback URL can be read.
  await context.route('http://127.0.0.1:53683/**', (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'client callback' }));
  cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  ({ authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  }));
});

after(async () => {
  await context?.close();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
});

async function credentials() {
  return (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
}

test('sign up with a passkey (verification link from the dev mailbox)', async () => {
  await page.goto(`${BASE}/signup`);
  await screenshot('signup');
  await page.fill('#email', EMAIL);
  await page.fill('#name', 'Grace Hopper');
  await page.click('button[type=submit]:has-text("Send verification link")');
  await page.waitForSelector('text=Check your email');
  await screenshot('signup-sent');

  await page.goto(`${BASE}/console/mailbox`);
  await screenshot('mailbox');
  const card = page.locator('li.card', { hasText: `To ${EMAIL}` }).first();
  const link = await card.locator('a[href*="/verify?token="]').first().getAttribute('href');
  assert.ok(link?.startsWith(`${BASE}/verify?token=`), `verification link ${link}`);

  await page.goto(link);
  await page.fill('#passkey-name', 'Virtual authenticator');
  await screenshot('verify');
  await page.click('button:has-text("Create passkey")');
  await page.waitForURL(`${BASE}/console`);
  await page.waitForSelector('h1:has-text("Dashboard")');
  await screenshot('dashboard');
  const creds = await credentials();
  assert.equal(creds.length, 1, 'one passkey on the authenticator');
  assert.equal(creds[0].isResidentCredential, true, 'the passkey is discoverable');
  assert.equal(creds[0].rpId, 'localhost');
});

test('sign out, then sign in with the discoverable passkey', async () => {
  await page.click('form.signout button');
  await page.waitForLoadState();
  await page.goto(`${BASE}/console`);
  await page.waitForURL(/\/signin/);
  await screenshot('signin');
  await page.click('button:has-text("Sign in with a passkey")');
  await page.waitForURL(`${BASE}/console`);
  await page.goto(`${BASE}/console/account`);
  await page.waitForSelector(`text=${EMAIL}`);
  await screenshot('account');
});

test('create an API key; it works on the API', async () => {
  await page.goto(`${BASE}/console/keys`);
  await page.fill('#key-name', 'browser suite');
  await page.check('input[name=mode][value=test]');
  await page.click('button:has-text("Create key")');
  const secret = await page.locator('#secret').inputValue();
  await screenshot('api-key');
  assert.match(secret, /^fxk_test_[A-Za-z0-9_]+$/);
  apiKey = secret;
  const res = await fetch(`${BASE}/api/v1/credits`, { headers: { authorization: `Bearer ${secret}` } });
  assert.equal(res.status, 200, `GET /api/v1/credits with the new key: ${res.status}`);
  await page.goto(`${BASE}/console/keys`);
  assert.ok(!(await page.content()).includes(secret), 'the keys page shows the secret again');
});

// An OAuth client (DCR and token calls from node with oauth4webapi); the
// authorization request runs in the signed-in browser.
let as, client;
async function startAuthorization() {
  if (!as) {
    as = await oauth.processDiscoveryResponse(new URL(ISSUER), await oauth.discoveryRequest(new URL(ISSUER), { algorithm: 'oauth2', ...insecure }));
    const reg = await registerClient(as.registration_endpoint, 'Conformance Browser App', REDIRECT);
    client = { client_id: reg.client_id, token_endpoint_auth_method: 'none' };
  }
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const u = new URL(as.authorization_endpoint);
  for (const [k, v] of Object.entries({
    response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'fax:read credits:read',
    state, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', resource: MCP,
  })) u.searchParams.set(k, v);
  await page.goto(u.href);
  await page.waitForURL(/\/console\/approvals\//);
  await page.waitForSelector('text=Conformance Browser App');
  return { verifier, state };
}

test('approve an OAuth consent (narrowed to one scope)', async () => {
  const { verifier, state } = await startAuthorization();
  await screenshot('consent');
  await page.uncheck('input[name=scope][value="credits:read"]');
  await page.click('button[name=decision][value=approve]');
  await page.waitForURL((u) => u.href.startsWith(REDIRECT));
  await screenshot('consent-callback');
  const cb = new URL(page.url());
  const params = oauth.validateAuthResponse(as, client, cb, state);
  const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure);
  const tok = await oauth.processAuthorizationCodeResponse(as, client, res);
  assert.equal(tok.scope, 'fax:read', 'the owner unticked credits:read');
  await page.goto(`${BASE}/console/apps`);
  await page.waitForSelector('text=Conformance Browser App');
  await screenshot('apps');
});

test('decline an OAuth consent: the client gets access_denied', async () => {
  const { state } = await startAuthorization();
  await page.click('button[name=decision][value=decline]');
  await page.waitForURL((u) => u.href.startsWith(REDIRECT));
  const cb = new URL(page.url());
  assert.equal(cb.searchParams.get('iss'), ISSUER);
  assert.throws(() => oauth.validateAuthResponse(as, client, cb, state),
    (err) => err instanceof oauth.AuthorizationResponseError && err.error === 'access_denied');
});

// Agent registration (docs/agents.md): the enrollment token is created over
// HTTP with the browser's own session cookie (same-origin), the agent
// registers from node, and the owner approves in Chromium by typing the
// code on the claim page.
test('approve an agent claim by entering its code', async () => {
  const cookie = (await context.cookies(BASE)).map((c) => `${c.name}=${c.value}`).join('; ');
  const post = async (p, body, headers = {}) => {
    const res = await fetch(`${BASE}${p}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
    return { status: res.status, body: await res.json() };
  };
  const en = await post('/api/auth/agent/identity/manage', { action: 'enroll', name: 'Browser agent', scopes: ['fax:read', 'credits:read'] },
    { cookie, origin: BASE, 'sec-fetch-site': 'same-origin' });
  assert.equal(en.status, 201, `enroll: ${en.status} ${JSON.stringify(en.body)}`);
  const reg = await post('/api/auth/agent/identity', { type: 'service_auth', enrollment_token: en.body.enrollment_token, login_hint: EMAIL });
  assert.equal(reg.status, 201, `register: ${reg.status} ${JSON.stringify(reg.body)}`);
  const { user_code: userCode, verification_uri: verificationURI } = reg.body.claim;
  const poll = async () => {
    const res = await fetch(`${ISSUER}/oauth2/token`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:faxhub:agent-auth:grant-type:claim', claim_token: reg.body.claim_token, resource: MCP }),
    });
    return { status: res.status, body: await res.json() };
  };
  const pending = await poll();
  assert.equal(pending.body.error, 'authorization_pending', `poll before approval: ${pending.status} ${JSON.stringify(pending.body)}`);

  await page.goto(verificationURI);
  await page.waitForSelector('text=Approve agent Browser agent');
  await page.fill('#user-code', userCode);
  await screenshot('agent-claim');
  await page.click('button[name=decision][value=approve]');
  await page.waitForSelector('h1:has-text("Agent approved")');
  await screenshot('agent-approved');

  const r = await poll();
  assert.equal(r.status, 200, `poll after approval: ${r.status} ${JSON.stringify(r.body)}`);
  assert.match(r.body.access_token, /^fxa_/);
  assert.equal(r.body.scope, 'credits:read fax:read');
  assert.ok(r.body.identity_assertion, 'identity_assertion');
});

// Chromium itself refuses the ceremony (faxhub requires userVerification),
// so this proves the whole chain ends signed out; the server's own check of
// the UV flag is covered by the Go tests with a software authenticator.
test('sign-in fails when the authenticator cannot verify the user', async () => {
  await page.goto(`${BASE}/console`);
  await page.click('form.signout button');
  await page.waitForLoadState();
  await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false });
  try {
    await page.goto(`${BASE}/signin`);
    await page.click('button:has-text("Sign in with a passkey")');
    const status = page.locator('[data-webauthn-status].error');
    await status.waitFor();
    await screenshot('signin-no-uv');
    assert.ok((await status.textContent()).trim().length > 0, 'an error is shown');
    const res = await page.goto(`${BASE}/console`);
    assert.match(page.url(), /\/signin/, 'still signed out');
    assert.ok(res);
  } finally {
    await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: true });
  }
  await page.click('button:has-text("Sign in with a passkey")');
  await page.waitForURL(`${BASE}/console`);
});

// AP2 (docs/a2a-design): an agent buys credits over A2A JSON-RPC (plain
// fetch, token with credits:checkout, the AP2 extension activated):
// buy_credits → CartMandate → PaymentMandate (tok_visa) → INPUT_REQUIRED
// with an approvalUrl that the owner opens in Chromium and approves with
// the passkey, user verification required.
const ap2 = {};

async function getTask(id) {
  const r = await rpc('GetTask', { id }, { token: ap2.token, extensions: AP2 });
  assert.ok(r.body?.result, `GetTask: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.result;
}

async function balance() {
  const r = await rpc('SendMessage', { message: userMessage([skillPart('get_credits')]) }, { token: ap2.token });
  const credits = dataOf(r.body?.result?.message?.parts);
  assert.ok(credits && 'balance' in credits, `get_credits: ${r.status} ${JSON.stringify(r.body)}`);
  return Number(credits.balance);
}

// purchase runs buy_credits and the PaymentMandate and returns the task id
// and the approval page the owner must open.
async function purchase(packId, credential = 'tok_visa') {
  let r = await rpc('SendMessage', { message: userMessage([skillPart('buy_credits', { packId })]) }, { token: ap2.token, extensions: AP2 });
  const task = r.body?.result?.task;
  assert.ok(task, `buy_credits: ${r.status} ${JSON.stringify(r.body)}`);
  assert.ok((r.headers.get('a2a-extensions') ?? '').includes(AP2), `the AP2 extension is echoed: ${r.headers.get('a2a-extensions')}`);
  assert.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED');
  const cart = artifactData(task, 'ap2.mandates.CartMandate')?.['ap2.mandates.CartMandate'];
  assert.ok(cart?.contents && cart.merchant_authorization, `CartMandate artifact: ${JSON.stringify(task.artifacts)}`);
  r = await rpc('SendMessage', {
    message: userMessage([{ data: { 'ap2.mandates.PaymentMandate': paymentMandate(cart, credential) } }], { taskId: task.id, contextId: task.contextId }),
  }, { token: ap2.token, extensions: AP2 });
  const waiting = r.body?.result?.task;
  assert.ok(waiting, `PaymentMandate: ${r.status} ${JSON.stringify(r.body)}`);
  assert.equal(waiting.id, task.id);
  assert.equal(waiting.status.state, 'TASK_STATE_INPUT_REQUIRED', JSON.stringify(waiting.status));
  const parts = waiting.status.message?.parts;
  const approvalUrl = dataOf(parts)?.approvalUrl ?? textOf(parts).match(/https?:\/\/\S+\/console\/approvals\/[A-Za-z0-9_-]+/)?.[0];
  assert.ok(approvalUrl?.startsWith(`${BASE}/console/approvals/`), `approvalUrl in the status message: ${JSON.stringify(waiting.status.message)}`);
  return { id: task.id, approvalUrl };
}

test('AP2: a credit purchase over A2A approved with the passkey (UV): COMPLETED, balance up', async () => {
  // The OAuth client of the consent tests (DCR is rate-limited per address).
  assert.ok(client, 'no OAuth client from the consent tests');
  ap2.token = await a2aToken({ ...client, clientName: 'Conformance Browser App', redirect: REDIRECT }, {
    scope: 'credits:checkout credits:read fax:read',
    consentIn: async (u) => {
      await page.goto(u.href);
      await page.waitForURL(/\/console\/approvals\//);
      await page.waitForSelector('text=Conformance Browser App');
      await page.waitForSelector(`text=${BASE}/a2a`);
      await page.click('button[name=decision][value=approve]');
      await page.waitForURL((x) => x.href.startsWith(REDIRECT));
      return new URL(page.url());
    },
  });
  const before = await balance();
  const { id, approvalUrl } = await purchase('pack_10');
  await page.goto(approvalUrl);
  const approve = page.locator('button[data-webauthn="approve"]');
  await approve.waitFor();
  await screenshot('ap2-approval');
  await approve.click();
  await page.waitForURL((u) => u.href !== approvalUrl);
  await screenshot('ap2-approved');
  const done = await until(`task ${id} COMPLETED`, () => getTask(id), (t) => t.status.state !== 'TASK_STATE_INPUT_REQUIRED' && t.status.state !== 'TASK_STATE_WORKING');
  assert.equal(done.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(done.status));
  const receipt = artifactData(done, 'receipt');
  assert.ok(receipt?.chargeId && receipt.cartId, `receipt artifact: ${JSON.stringify(done.artifacts)}`);
  assert.equal(receipt.packId, 'pack_10');
  assert.equal(await balance(), before + Number(receipt.credit), 'the balance went up by the pack\'s credit');
});

test('AP2: a purchase approval is refused when the authenticator reports no UV; the task stays INPUT_REQUIRED', async () => {
  assert.ok(ap2.token, 'no A2A token from the previous test');
  const before = await balance();
  const { id, approvalUrl } = await purchase('pack_10');
  await page.goto(approvalUrl);
  const approve = page.locator('button[data-webauthn="approve"]');
  await approve.waitFor();
  await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false });
  try {
    await approve.click();
    const status = page.locator('[data-webauthn-status].error');
    await status.waitFor();
    await screenshot('ap2-approval-no-uv');
    assert.ok((await status.textContent()).trim().length > 0, 'the page shows the error');
    assert.equal(page.url(), approvalUrl, 'the page stays on the approval');
  } finally {
    await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: true });
  }
  const t = await getTask(id);
  assert.equal(t.status.state, 'TASK_STATE_INPUT_REQUIRED', JSON.stringify(t.status));
  assert.equal(await balance(), before, 'nothing was charged');
  // The approval is still pending: a reload offers the passkey again.
  await page.goto(approvalUrl);
  await page.locator('button[data-webauthn="approve"]').waitFor();
});

test('AP2: a declined test card (tok_chargeDeclined), approved with the passkey: FAILED payment_declined, nothing charged', async () => {
  assert.ok(ap2.token, 'no A2A token from the earlier test');
  const before = await balance();
  const { id, approvalUrl } = await purchase('pack_10', 'tok_chargeDeclined');
  await page.goto(approvalUrl);
  const approve = page.locator('button[data-webauthn="approve"]');
  await approve.waitFor();
  await approve.click();
  await page.waitForURL((u) => u.href !== approvalUrl);
  await screenshot('ap2-declined');
  const done = await until(`task ${id} final`, () => getTask(id), (t) => t.status.state !== 'TASK_STATE_INPUT_REQUIRED' && t.status.state !== 'TASK_STATE_WORKING');
  assert.equal(done.status.state, 'TASK_STATE_FAILED', JSON.stringify(done.status));
  assert.equal(dataOf(done.status.message?.parts)?.failureCode, 'payment_declined', JSON.stringify(done.status.message));
  assert.equal(artifactData(done, 'receipt'), undefined, 'no receipt');
  assert.equal(await balance(), before, 'nothing was credited');
});

// pagesLoaded checks the page images inside scope (a fax's pages as
// faxed, an approval's preview): alt "Page n of N", each one loaded
// (naturalWidth > 0); it returns how many there are.
async function pagesLoaded(scope) {
  const imgs = scope.locator('.fax-pages img');
  await imgs.first().waitFor();
  const n = await imgs.count();
  assert.ok(n >= 1, 'page images are shown');
  for (let i = 0; i < n; i++) {
    const img = imgs.nth(i);
    assert.equal(await img.getAttribute('alt'), `Page ${i + 1} of ${n}`);
    await img.scrollIntoViewIfNeeded();
    await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await img.elementHandle(), { timeout: 20000 });
  }
  return n;
}

// Delegated hosts and agents (docs/hostagent.md): the owner provisions a
// host on /console/hosts by pasting the public JWK a host client (this test
// process, jose) generated; the host registers an agent; Chromium opens the
// device link and approves; the agent reads credits on its own; every
// send_fax waits for the owner's passkey with user verification.
const dh = {};
const DH_ASKED = ['create_upload', 'get_credits', 'get_fax_status', 'send_fax', 'validate_fax'];

// sendCard is the inbox card of the pending send_fax approval (one at a
// time in this suite), found by its kind label and the passkey button.
async function sendCard() {
  await page.goto(`${BASE}/console/approvals`);
  const card = page.locator('article.approval', { hasText: 'Fax to send' }).filter({ has: page.locator('button[data-webauthn="approve"]') }).first();
  await card.waitFor();
  return card;
}

test('delegated: the owner creates a host on /console/hosts by pasting the host\'s public JWK', async () => {
  dh.host = await keyPair();
  await page.goto(`${BASE}/console/hosts`);
  await page.fill('#host-name', 'Browser host');
  await page.fill('#host-key', JSON.stringify(dh.host.jwk));
  await screenshot('hosts-create');
  await page.click('button:has-text("Add host")');
  await page.waitForSelector('#new-host h2:has-text("Host Browser host created")');
  await screenshot('hosts-created');
  dh.host.id = (await page.locator('#new-host dd.mono').first().textContent()).trim();
  assert.match(dh.host.id, /^hst_/, 'the page shows the host id');
  assert.equal((await page.locator('#new-host dd.mono').nth(1).textContent()).trim(), dh.host.thumbprint, 'the key thumbprint jose computes');
});

test('delegated: the host registers an agent; Chromium opens verification_uri_complete and approves', async () => {
  const { agent, r } = await register(dh.host, 'Browser delegated agent', DH_ASKED);
  assert.ok(r.status === 200 || r.status === 201, `register: ${r.status} ${r.text}`);
  assert.equal(r.body.status, 'pending');
  checkApproval(r.body.approval, agent.id);
  dh.agent = agent;
  await page.goto(r.body.approval.verification_uri_complete);
  await page.waitForSelector('h1:has-text("Approve agent Browser delegated agent")');
  await page.waitForSelector('text=Browser host');
  assert.equal(await page.inputValue('#user-code'), r.body.approval.user_code, 'the link fills in the code');
  for (const c of DH_ASKED) {
    assert.ok(await page.isChecked(`input[name=capability][value=${c}]`), `${c} is ticked`);
  }
  await screenshot('device');
  await page.click('button[name=decision][value=approve]');
  await page.waitForSelector('h1:has-text("Agent approved")');
  await screenshot('device-approved');
  const st = await agentStatus(dh.host, agent.id);
  assert.equal(st.body.status, 'active', `status: ${st.text}`);
  assert.deepEqual(granted(st.body), DH_ASKED, 'nothing narrowed');
});

test('delegated: the agent executes get_credits on its own', async () => {
  const r = await execute(dh.host, dh.agent, 'get_credits');
  assert.equal(r.status, 200, `get_credits: ${r.status} ${r.text}`);
  assert.ok('balance' in (r.body.data ?? {}), r.text);
  dh.balance = Number(r.body.data.balance);
});

test('delegated: send_fax → 202; approved in the inbox with the passkey (UV) → sent, with the fax', async () => {
  const r = await execute(dh.host, dh.agent, 'send_fax', faxArgs());
  assert.equal(r.status, 202, `send_fax: ${r.status} ${r.text}`);
  assert.equal(r.body.status, 'pending');
  const url = r.body.status_url;
  assert.equal((await sendStatus(dh.host, dh.agent, url)).status, 'pending');
  // The owner follows the approval link (the agent would show it).
  assert.ok(r.body.approval_url?.startsWith(`${BASE}/console/approvals/`), `approval_url: ${r.text}`);
  await page.goto(r.body.approval_url);
  const card = page.locator('article.approval', { hasText: 'Fax to send' });
  await card.locator('button[data-webauthn="approve"]').waitFor();
  // The pages the passkey approves, beside the facts, loaded.
  await pagesLoaded(card);
  await screenshot('fax-send-approval');
  const here = page.url();
  await card.locator('button[data-webauthn="approve"]').click();
  await page.waitForURL((u) => u.href !== here);
  await screenshot('fax-send-approved');
  const done = await until(`send ${r.body.id} sent`, () => sendStatus(dh.host, dh.agent, url), (d) => d.status !== 'pending');
  assert.equal(done.status, 'sent', JSON.stringify(done));
  assert.match(done.data?.fax_id ?? '', /^fax_/, `the fax: ${JSON.stringify(done)}`);
  assert.equal(done.data.to, '+12125550100');
  const fax = await execute(dh.host, dh.agent, 'get_fax_status', { fax_id: done.data.fax_id });
  assert.equal(fax.status, 200, `get_fax_status: ${fax.status} ${fax.text}`);
  assert.equal(fax.body.data?.fax_id, done.data.fax_id);
  const after = await execute(dh.host, dh.agent, 'get_credits');
  assert.ok(Number(after.body.data.balance) + Number(after.body.data.held ?? 0) < dh.balance + 1e-9, `the fax was paid: ${after.text}`);
});

test('delegated: a send_fax approval without UV is refused (stays pending), then declined: nothing sent', async () => {
  const r = await execute(dh.host, dh.agent, 'send_fax', faxArgs());
  assert.equal(r.status, 202, `send_fax: ${r.status} ${r.text}`);
  const url = r.body.status_url;
  const card = await sendCard();
  await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false });
  try {
    await card.locator('button[data-webauthn="approve"]').click();
    const status = card.locator('[data-webauthn-status].error');
    await status.waitFor();
    await screenshot('fax-send-no-uv');
    assert.ok((await status.textContent()).trim().length > 0, 'the page shows the error');
  } finally {
    await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: true });
  }
  assert.equal((await sendStatus(dh.host, dh.agent, url)).status, 'pending', 'still pending after the refused approval');
  const again = await sendCard();
  await again.locator('button[name=decision][value=decline]').click();
  await page.waitForLoadState();
  await screenshot('fax-send-declined');
  const d = await sendStatus(dh.host, dh.agent, url);
  assert.equal(d.status, 'declined', JSON.stringify(d));
  assert.equal(d.data, undefined, 'no fax');
});

// A chat app allowed only to draft (fax:draft, no fax:send) calls send_fax
// with the TypeScript MCP SDK client: the answer is the -32042 URL
// elicitation of the approval page; the owner approves in Chromium with
// the passkey (UV); the retry sends, once. A declined one sends nothing.
const chat = {};

async function chatCall(name, args) {
  const r = await chat.client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name}: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
}

async function chatDraft() {
  const up = await chatCall('create_upload', { fileName: 'chat.pdf' });
  const put = await fetch(up.uploadUrl, { method: 'PUT', headers: { 'content-type': 'application/pdf' }, body: minimalPDF(1) });
  assert.ok(put.ok, `upload: ${put.status}`);
  return chatCall('create_fax_draft', { to: '+12125550100', uploadToken: up.uploadToken });
}

// askOwner calls send_fax and wants the URL elicitation (-32042).
async function askOwner(draftId) {
  const err = await chat.client.callTool({ name: 'send_fax', arguments: { draftId } }).then(
    (r) => assert.fail(`send_fax sent without the owner: ${JSON.stringify(r)}`), (e) => e);
  assert.equal(err.code, -32042, `send_fax: ${err}`);
  const el = err.elicitations?.[0] ?? err.data?.elicitations?.[0];
  assert.equal(el?.mode, 'url', `elicitation: ${JSON.stringify(err.data ?? err.elicitations)}`);
  assert.equal(el.url, `${BASE}/console/approvals/${el.elicitationId}`);
  return el;
}

async function chatBalance() {
  const c = await chatCall('get_credits', {});
  return c.balanceCents;
}

test('chat app: send_fax with a draft-only token → URL elicitation; the owner approves with the passkey (UV); the retry sends once', async () => {
  assert.ok(client, 'no OAuth client from the consent tests');
  const token = await a2aToken({ ...client, clientName: 'Conformance Browser App', redirect: REDIRECT }, {
    scope: 'fax:read fax:draft credits:read', resource: MCP,
    consentIn: async (u) => {
      await page.goto(u.href);
      await page.waitForURL(/\/console\/approvals\//);
      await page.waitForSelector(`text=${MCP}`);
      await page.click('button[name=decision][value=approve]');
      await page.waitForURL((x) => x.href.startsWith(REDIRECT));
      return new URL(page.url());
    },
  });
  chat.client = new mcpClient.Client({ name: 'faxhub-chat', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
  await chat.client.connect(new mcpClient.StreamableHTTPClientTransport(new URL(MCP), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  const before = await chatBalance();
  const draft = await chatDraft();
  const el = await askOwner(draft.draftId);
  assert.equal((await askOwner(draft.draftId)).elicitationId, el.elicitationId, 'the same arguments ask the same approval');

  await page.goto(el.url);
  const card = page.locator('article.approval', { hasText: 'Fax to send from a chat app' });
  await card.locator('button[data-webauthn="approve"]').waitFor();
  await pagesLoaded(card);
  await screenshot('chat-send-approval');
  const here = page.url();
  await card.locator('button[data-webauthn="approve"]').click();
  await page.waitForURL((u) => u.href !== here);
  assert.equal(await chatBalance(), before, 'approving charges nothing: the retry sends');

  const fax = await chatCall('send_fax', { draftId: draft.draftId, approvalId: el.elicitationId });
  assert.match(fax.faxId, /^fax_/);
  assert.equal(fax.alreadyPaid, undefined);
  const again = await chatCall('send_fax', { draftId: draft.draftId });
  assert.equal(again.faxId, fax.faxId);
  assert.equal(again.alreadyPaid, true);
  chat.spent = before - await chatBalance();
  assert.ok(chat.spent > 0, `the fax was paid once: ${chat.spent}`);
});

test('chat app: a declined send_fax approval is a tool error; nothing is charged', async () => {
  assert.ok(chat.client, 'no chat client from the previous test');
  const before = await chatBalance();
  const draft = await chatDraft();
  const el = await askOwner(draft.draftId);
  await page.goto(el.url);
  const card = page.locator('article.approval', { hasText: 'Fax to send from a chat app' });
  await card.locator('button[name=decision][value=decline]').click();
  await page.waitForLoadState();
  await screenshot('chat-send-declined');
  const r = await chat.client.callTool({ name: 'send_fax', arguments: { draftId: draft.draftId, approvalId: el.elicitationId } });
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.match(r.content?.[0]?.text ?? '', /^approval_declined: /);
  assert.equal(await chatBalance(), before, 'nothing charged');
  await chat.client.close();
});

test('delegated: the Hosts page lists the agent with its grants; revoking the host stops its agent', async () => {
  await page.goto(`${BASE}/console/hosts`);
  const card = page.locator('article.card', { has: page.locator(`h3:has-text("Browser host")`) }).first();
  const row = card.locator('tr', { hasText: dh.agent.id });
  await row.waitFor();
  assert.match(await row.textContent(), /active/);
  for (const c of DH_ASKED) assert.ok((await row.textContent()).includes(c), `granted ${c} is listed`);
  await screenshot('hosts-agents');
  await card.locator('input[name=confirm]').check();
  await card.locator('button:has-text("Revoke host Browser host")').click();
  await page.waitForLoadState();
  await page.locator('article.card', { has: page.locator('h3:has-text("Browser host")') }).first().locator('text=revoked').first().waitFor();
  await screenshot('hosts-revoked');
  const r = await execute(dh.host, dh.agent, 'get_credits');
  assert.equal(r.status, 403, `after the host's revocation: ${r.status} ${r.text}`);
  assert.ok(['host_revoked', 'agent_revoked'].includes(r.body.error), r.text);
  const st = await agentStatus(dh.host, dh.agent.id);
  assert.equal(st.body.error, 'host_revoked', `host JWT after revocation: ${st.text}`);
});

// The Send a fax page (/console/send): the owner faxes from the console
// with test credits; the number is checked as it is typed; the pages and
// the price are shown before anything is sent or charged.
async function testBalance() {
  assert.ok(apiKey, 'the API key of the earlier test');
  const res = await fetch(`${BASE}/api/v1/credits`, { headers: { authorization: `Bearer ${apiKey}` } });
  assert.equal(res.status, 200, `GET /api/v1/credits: ${res.status}`);
  const b = await res.json();
  return Number(b.balance);
}

test('send page: test credits bought on the dashboard when the balance is short', async () => {
  if (await testBalance() >= 1) return;
  await page.goto(`${BASE}/console?mode=test`);
  await page.click('button:has-text("Buy credits")');
  await page.waitForURL(/\/checkout\/test\//);
  const year = String((new Date().getUTCFullYear() + 3) % 100).padStart(2, '0');
  await page.fill('#card', '4242 4242 4242 4242');
  await page.fill('#exp', `12/${year}`);
  await page.fill('#cvc', '123');
  await page.click('button[type=submit]');
  await page.waitForLoadState();
  await until('test credits', () => testBalance(), (b) => b >= 1);
});

test('send page: upload a two-page PDF (with progress), the number checked as typed, previews (cover + 2 pages) and price, send', async () => {
  const before = await testBalance();
  await page.goto(`${BASE}/console`);
  await page.click('nav[aria-label=Console] a:has-text("Send a fax")');
  await page.waitForURL(`${BASE}/console/send`);
  await page.waitForSelector('h1:has-text("Send a fax")');
  await screenshot('send-form');

  await page.setInputFiles('#send-file', { name: 'two-pages.pdf', mimeType: 'application/pdf', buffer: minimalPDF(2) });
  await page.click('[data-send-upload] button[type=submit]');
  await page.locator('[data-send-upload-status].ok').waitFor();
  assert.equal(await page.locator('[data-send-progress]').evaluate((e) => e.value), 100, 'the progress bar reached 100');
  assert.match(await page.locator('[data-send-doc-summary]').textContent(), /2 pages, PDF/);
  assert.match(page.url(), /\/console\/send\?mode=test&document=doc_/, 'the URL keeps the document');
  const doc = await page.locator('[data-send-document]').inputValue();
  assert.match(doc, /^doc_/);
  await screenshot('send-uploaded');

  await page.fill('#send-to', '+12125550100');
  const check = page.locator('#send-to-check.ok');
  await check.waitFor();
  assert.match(await check.textContent(), /United States \(US\).*\$0\.07 a page/);
  await page.check('input[name=cover]');
  await page.fill('#send-recipientName', 'Dr. Ada Lovelace');
  await page.fill('#send-subject', 'Two pages from the console');
  await page.fill('#send-message', 'Sent from the faxhub console by the browser suite.');
  await screenshot('send-number-checked');

  await page.click('button:has-text("Preview pages and price")');
  await page.waitForSelector('#send-preview');
  const imgs = page.locator('#send-preview img');
  assert.equal(await imgs.count(), 3, 'a cover page and two pages');
  for (let i = 0; i < 3; i++) {
    await imgs.nth(i).scrollIntoViewIfNeeded();
    await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await imgs.nth(i).elementHandle());
  }
  const price = await page.locator('[data-send-price]').textContent();
  assert.match(price, /^\$0\.21 USD from your test credits$/, `price: ${price}`);
  await screenshot('send-preview');

  await page.click('[data-send-submit]');
  await page.waitForURL(/\/console\/faxes\/fax_[a-z0-9]+\?mode=test$/);
  const id = new URL(page.url()).pathname.split('/').pop();
  await screenshot('send-sent');
  const res = await fetch(`${BASE}/api/v1/faxes/${id}`, { headers: { authorization: `Bearer ${apiKey}` } });
  assert.equal(res.status, 200, `GET /api/v1/faxes/${id}: ${res.status}`);
  const fax = await res.json();
  assert.equal(fax.to, '+12125550100');
  assert.equal(fax.documentId, doc);
  assert.equal(fax.cover, true);
  assert.equal(fax.price, '0.21');
  // The fax's own page follows the fax by itself (fax.js asks for the page
  // again and swaps it in): no reload here; then its report and receipt.
  await until(`fax ${id} delivered on its page, without a reload`, () => page.locator('.facts').textContent(),
    (t) => /delivered/.test(t), { tries: 300 });
  assert.equal(new URL(page.url()).pathname, `/console/faxes/${id}`);
  const faxed = page.locator('section[aria-labelledby="faxed-h"]');
  assert.equal(await pagesLoaded(faxed), 3, 'the pages as faxed: the cover page and two pages');
  await screenshot('send-delivered');
  const rep = await fetch(await page.locator('#report-link').getAttribute('href'));
  assert.equal(rep.status, 200, `report: ${rep.status}`);
  assert.match(rep.headers.get('content-type') ?? '', /^application\/pdf/);
  const jws = (await page.locator('#receipt').textContent()).trim();
  const claims = JSON.parse(Buffer.from(jws.split('.')[1], 'base64url').toString());
  assert.equal(claims.sub, id, `receipt claims: ${JSON.stringify(claims)}`);
  assert.match(await page.locator('.facts').textContent(), /console/i, 'the door: the console');
  await screenshot('send-delivered-receipt');
  assert.ok(Math.abs(before - 0.21 - await testBalance()) < 1e-9, 'charged once, the price');
});

test('send page: a premium-rate number is refused with its explanation before anything is charged', async () => {
  const before = await testBalance();
  await page.goto(`${BASE}/console/send?mode=test`);
  await page.setInputFiles('#send-file', { name: 'one-page.pdf', mimeType: 'application/pdf', buffer: minimalPDF(1) });
  await page.click('[data-send-upload] button[type=submit]');
  await page.locator('[data-send-upload-status].ok').waitFor();
  await page.fill('#send-to', '+19005550123');
  const check = page.locator('#send-to-check.error');
  await check.waitFor();
  assert.match(await check.textContent(), /premium-rate number in US.*before anything is charged/);
  assert.equal(await page.locator('#send-to').getAttribute('aria-invalid'), 'true');
  await screenshot('send-premium-typed');
  await page.click('button:has-text("Preview pages and price")');
  await page.waitForLoadState();
  await page.locator('.alert.error:has-text("Nothing was sent")').waitFor();
  assert.match(await page.locator('#send-to-check').textContent(), /premium-rate/);
  assert.equal(await page.locator('#send-to').inputValue(), '+19005550123', 'the form keeps the number');
  assert.equal(await page.locator('#send-preview').count(), 0, 'no preview, no send button');
  await screenshot('send-premium-refused');
  assert.equal(await testBalance(), before, 'the balance did not move');
});

// The owner's faxes (docs/console.md#faxes): a fax sent through the API
// key the suite created reaches delivered, /console/faxes lists it with
// its door, and its page shows its attempts, its pages as faxed, its
// transmission report and its signed receipt.
const fx = {};
async function api(method, path, body, headers = {}) {
  const res = await fetch(`${BASE}${path}`, {
    method, headers: { authorization: `Bearer ${apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

test('faxes: a fax sent with the suite\'s API key reaches delivered; /console/faxes lists it with the door "API key"', async () => {
  assert.ok(apiKey, 'the API key of the earlier test');
  const up = await api('POST', '/api/v1/uploads', {});
  assert.ok([200, 201].includes(up.status), `upload: ${up.status} ${up.text}`);
  const put = await fetch(up.body.uploadUrl, { method: 'PUT', body: fs.readFileSync(new URL('../../docs/sample-letter.pdf', import.meta.url)) });
  assert.ok([200, 201].includes(put.status), `PUT the document: ${put.status} ${await put.text()}`);
  const sent = await api('POST', '/api/v1/faxes', { to: '+12125550100', uploadToken: up.body.uploadToken, cover: true, coverText: 'From the browser suite' },
    { 'idempotency-key': `browser-faxes-${Date.now()}` });
  assert.equal(sent.status, 200, `send: ${sent.status} ${sent.text}`);
  assert.equal(sent.body.sentBy?.kind, 'api_key', `sentBy: ${sent.text}`);
  assert.equal(sent.body.sentBy?.name, 'browser suite');
  fx.id = sent.body.id;
  const done = await until(`fax ${fx.id} delivered`, () => api('GET', `/api/v1/faxes/${fx.id}`), (r) => r.body?.status !== 'queued' && r.body?.status !== 'sending', { tries: 300 });
  assert.equal(done.body.status, 'delivered', done.text);
  fx.faxedPages = done.body.faxedPages;

  await page.goto(`${BASE}/console`);
  await page.click('nav[aria-label="Console"] a:has-text("Faxes")');
  await page.waitForSelector('h1:has-text("Faxes")');
  const row = page.locator('tbody tr', { has: page.locator(`a[href^="/console/faxes/${fx.id}"]`) });
  await row.waitFor();
  const text = await row.textContent();
  assert.match(text, /delivered/);
  assert.match(text, /API key/);
  assert.match(text, /browser suite/);
  await screenshot('faxes-list');
  // The filters: delivered today lists it; failed does not.
  await page.selectOption('#f-status', 'failed');
  await page.click('button:has-text("Filter")');
  await page.waitForLoadState();
  assert.equal(await page.locator(`a[href^="/console/faxes/${fx.id}"]`).count(), 0, 'a failed-only list lists the delivered fax');
  await page.selectOption('#f-status', 'delivered');
  await page.click('button:has-text("Filter")');
  await page.locator(`a[href^="/console/faxes/${fx.id}"]`).waitFor();
  await screenshot('faxes-filtered');
});

test('faxes: its page shows the attempts, the pages as faxed, the report (PDF) and the signed receipt', async () => {
  assert.ok(fx.id, 'the fax of the earlier test');
  await page.click(`a[href^="/console/faxes/${fx.id}"]`);
  await page.waitForSelector('h1:has-text("Fax to")');
  assert.match(await page.locator('.facts').textContent(), /delivered/);
  assert.match(await page.locator('.facts').textContent(), /API key · browser suite/);
  const attempt = page.locator('section[aria-labelledby="attempts-h"] tbody tr').first();
  assert.match(await attempt.textContent(), /delivered/);
  const faxed = page.locator('section[aria-labelledby="faxed-h"]');
  assert.equal(await pagesLoaded(faxed), fx.faxedPages, 'every page as faxed, the cover page included');
  const report = await page.locator('#report-link').getAttribute('href');
  const rep = await fetch(report);
  assert.equal(rep.status, 200, `report: ${rep.status}`);
  assert.match(rep.headers.get('content-type') ?? '', /^application\/pdf/);
  assert.equal(Buffer.from(await rep.arrayBuffer()).subarray(0, 5).toString(), '%PDF-');
  const jws = (await page.locator('#receipt').textContent()).trim();
  assert.match(jws, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'a compact JWS');
  const claims = JSON.parse(Buffer.from(jws.split('.')[1], 'base64url').toString());
  assert.equal(claims.sub, fx.id, `receipt claims: ${JSON.stringify(claims)}`);
  const dl = await page.request.get(`${BASE}/console/faxes/${fx.id}/receipt?mode=test`);
  assert.equal(dl.status(), 200);
  assert.match(dl.headers()['content-disposition'] ?? '', /attachment/);
  await screenshot('faxes-fax');
  await page.locator('#report-link').scrollIntoViewIfNeeded();
  await screenshot('faxes-fax-report');
});
