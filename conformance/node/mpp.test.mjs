// Machine payments conformance (docs/payments.md, draft-ryan-httpauth-payment):
// the real mppx CLI (0.11.0, the reference TypeScript client) pays faxhub's
// POST /api/v1/machine/faxes with a test card through the server's built-in
// Stripe test backend, whose shared-payment-token mint faxhub serves at
// {api}/test/stripe/v1/test_helpers/shared_payment/granted_tokens
// (MPPX_STRIPE_SPT_URL). `mppx validate` checks discovery (/llms.txt,
// /openapi.json x-payment-info), the challenge, the malformed-credential
// answer and a test payment; raw fetch checks what the CLI does not show
// (headers, problem bodies, Accept-Payment, request_id replays and
// conflicts). Challenges and receipts are parsed with mppx's own Challenge
// and Receipt modules, never with faxhub's code. Tests run in order and
// share state; nothing here reaches beyond loopback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Challenge, Credential, Receipt } from 'mppx';
import { BASE, OUT } from './lib.mjs';
import { CONF_DIR, minimalPDF } from './mcp-lib.mjs';

const API = (process.env.FAXHUB_API_URL ?? BASE).replace(/\/+$/, '');
const FAXES = `${API}/api/v1/machine/faxes`;
const MINT = `${API}/test/stripe/v1/test_helpers/shared_payment/granted_tokens`;
const MPPX = join(CONF_DIR, 'node_modules/mppx/dist/bin.js');
const PROBLEMS = 'https://paymentauth.org/problems/';
// Destinations of the simulated provider (docs/test-numbers.md).
const DELIVERED = '+12125550100';
const NOT_A_FAX = '+12125550103'; // fails at once, not retried
const PDF = minimalPDF(1).toString('base64');
// A Tempo offer for the ordering test: Moderato testnet's pathUSD and a
// recipient no one holds.
const TEMPO_TOKEN = '0x20c0000000000000000000000000000000000000';
const TEMPO_RECIPIENT = '0x000000000000000000000000000000000000fa11';
const s = {}; // state passed between tests

// mppx's own state (config, update cache) goes to the run's output, not
// the home directory, and it never asks the registry for a newer version.
const MPPX_HOME = mkdtempSync(join(OUT, 'mppx-home-'));
const MPPX_ENV = {
  ...process.env, HOME: MPPX_HOME, XDG_CONFIG_HOME: MPPX_HOME, XDG_CACHE_HOME: MPPX_HOME, NO_UPDATE_NOTIFIER: '1',
  // A test-mode key: mppx sends it to the mint (faxhub's stand-in accepts
  // any sk_test_ key) and never to Stripe.
  MPPX_STRIPE_SECRET_KEY: 'sk_test_conformance', MPPX_STRIPE_SPT_URL: MINT,
};

function mppx(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [MPPX, ...args], { cwd: MPPX_HOME, env: MPPX_ENV, timeout: 90000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
  });
}

// body is one machine fax request as the payer sends it.
function body(requestID, { to = DELIVERED, ...extra } = {}) {
  return JSON.stringify({ to, base64: PDF, request_id: requestID, ...extra });
}

function rid(name) { return `conformance-${name}-${Date.now().toString(36)}`; }

async function post(payload, headers = {}, url = FAXES) {
  const res = await fetch(url, {
    method: 'POST', body: payload,
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
  });
  const text = await res.text();
  let json = {};
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { res, status: res.status, headers: res.headers, text, json };
}

// challenges parses every Payment challenge of a 402 with mppx's parser.
function challenges(r) {
  return Challenge.fromResponseList(new Response(null, { status: r.status, headers: r.headers }));
}

// expect402 checks the shape every 402 must have and returns its challenges.
function expect402(r, problem, what) {
  assert.equal(r.status, 402, `${what}: ${r.status} ${r.text}`);
  assert.ok((r.headers.get('www-authenticate') ?? '').startsWith('Payment '), `${what}: WWW-Authenticate ${r.headers.get('www-authenticate')}`);
  assert.match(r.headers.get('cache-control') ?? '', /no-store/, `${what}: Cache-Control`);
  assert.match(r.headers.get('content-type') ?? '', /^application\/problem\+json/, `${what}: Content-Type`);
  assert.equal(r.headers.get('payment-receipt'), null, `${what}: a receipt on a 402`);
  assert.equal(r.json.type, PROBLEMS + problem, `${what}: problem type in ${r.text}`);
  assert.equal(r.json.status, 402, `${what}: problem status`);
  assert.ok(r.json.title, `${what}: problem title`);
  assert.equal(r.json.code, problem, `${what}: the house code member`);
  const chs = challenges(r);
  assert.ok(chs.length >= 1, `${what}: no challenge`);
  assert.equal(r.json.challengeId, chs[0].id, `${what}: challengeId names the first challenge`);
  return chs;
}

// responses splits `mppx -i` output into the HTTP responses it printed
// (the 402 it answered, then the paid one): status, headers, body text.
function responses(out) {
  return out.split(/^(?=HTTP\/1\.[01] \d{3})/m).filter((p) => p.startsWith('HTTP/')).map((part) => {
    const [head, ...rest] = part.split(/\r?\n\r?\n/);
    const [statusLine, ...lines] = head.split(/\r?\n/);
    const headers = new Headers();
    for (const l of lines) { const i = l.indexOf(':'); if (i > 0) headers.append(l.slice(0, i).trim(), l.slice(i + 1).trim()); }
    return { status: Number(statusLine.split(' ')[1]), headers, text: rest.join('\n\n').trim() };
  });
}

// payWithCLI pays one machine fax with the mppx CLI and a test card.
async function payWithCLI(payload, paymentMethod = 'pm_card_visa') {
  return mppx([FAXES, '-J', payload, '-i', '-M', `paymentMethod=${paymentMethod}`, '-H', 'Accept-Payment: stripe/charge']);
}

// paidOrder checks the CLI's run ended in a 200 with a receipt and returns
// the order and the receipt.
function paidOrder(r, what) {
  assert.equal(r.code, 0, `${what}: mppx exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  const all = responses(r.stdout);
  const last = all.at(-1);
  assert.ok(last, `${what}: no HTTP response in mppx's output: ${r.stdout}`);
  assert.equal(last.status, 200, `${what}: ${last.status} ${last.text}`);
  const raw = last.headers.get('payment-receipt');
  assert.ok(raw, `${what}: no Payment-Receipt`);
  const receipt = Receipt.deserialize(raw);
  assert.equal(receipt.status, 'success');
  assert.equal(receipt.method, 'stripe');
  assert.match(receipt.reference, /^pi_/, `${what}: receipt reference ${receipt.reference}`);
  // mppx prints the body after the headers; the order is its JSON.
  const order = JSON.parse(last.text.slice(last.text.indexOf('{'), last.text.lastIndexOf('}') + 1));
  return { order, receipt, responses: all };
}

// startServe runs a second `faxhub serve` (the binary run-suites.sh built)
// with extra environment on its own loopback port and SQLite data dir,
// stopped when the test ends; it returns its base URL.
async function startServe(t, extraEnv) {
  const port = await new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => { const p = srv.address().port; srv.close(() => resolve(p)); });
  });
  const base = `http://localhost:${port}`;
  const data = mkdtempSync(join(OUT, 'mpp-serve-'));
  const env = { ...process.env, ...extraEnv };
  delete env.FAXHUB_DATABASE_URL; // its own SQLite, whatever the suites' serve uses
  const log = openSync(join(OUT, `mpp-serve-${port}.log`), 'w');
  const child = spawn(join(OUT, 'faxhub'), ['serve', '--dev', '--sim-timescale', '0', '--data', data,
    '--addr', `127.0.0.1:${port}`, '--base-url', base, '--log-level', 'warn'], { env, stdio: ['ignore', log, log] });
  t.after(() => { child.kill('SIGTERM'); rmSync(data, { recursive: true, force: true }); });
  const end = Date.now() + 15000;
  for (;;) {
    if (child.exitCode !== null) assert.fail(`the second serve exited ${child.exitCode}; see ${join(OUT, `mpp-serve-${port}.log`)}`);
    try { if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200) return base; } catch { /* not up yet */ }
    if (Date.now() > end) assert.fail('the second serve never answered /readyz');
    await new Promise((r) => setTimeout(r, 100));
  }
}

// poll GETs url until done(body) or the deadline, never sleeping blindly.
async function poll(url, done, { deadline = 30000, every = 200, what = url } = {}) {
  const end = Date.now() + deadline;
  let last;
  for (;;) {
    const res = await fetch(url, { headers: { accept: 'application/json' } });
    last = { status: res.status, text: await res.text(), headers: res.headers };
    if (res.status === 200) {
      last.json = JSON.parse(last.text);
      if (done(last.json)) return last;
    }
    if (Date.now() > end) assert.fail(`${what}: still ${last.status} ${last.text} after ${deadline} ms`);
    await new Promise((r) => setTimeout(r, every));
  }
}

test('discovery: /openapi.json declares the machine operation with its 402 and x-payment-info; /llms.txt explains the flow', async () => {
  let res = await fetch(`${API}/openapi.json`);
  assert.equal(res.status, 200);
  const doc = await res.json();
  const op = doc.paths?.['/api/v1/machine/faxes']?.post;
  assert.ok(op, 'POST /api/v1/machine/faxes is in the document');
  assert.ok(op.responses?.['402'], 'the operation declares its 402');
  const offers = op['x-payment-info']?.offers;
  assert.ok(Array.isArray(offers) && offers.length > 0, `x-payment-info: ${JSON.stringify(op['x-payment-info'])}`);
  const stripe = offers.find((o) => o.method === 'stripe');
  assert.ok(stripe, `a stripe offer in ${JSON.stringify(offers)}`);
  assert.equal(stripe.intent, 'charge');
  assert.equal(stripe.currency, 'usd');
  assert.equal(stripe.amount, null, 'priced per destination: amount null');
  res = await fetch(`${BASE}/llms.txt`);
  const llms = await res.text();
  assert.equal(res.status, 200);
  for (const want of ['/api/v1/machine/faxes', 'request_id', '402', 'mppx']) assert.ok(llms.includes(want), `/llms.txt mentions ${want}`);
});

test('mppx validate: discovery, challenge, malformed credential → fresh 402, test payment → 200', async (t) => {
  const payload = body(rid('validate'));
  const r = await mppx(['validate', API, '-e', 'POST:/api/v1/machine/faxes', '--body', payload, '-H', 'Accept-Payment: stripe/charge', '-j']);
  if (r.stderr.trim()) t.diagnostic(`stderr: ${r.stderr.trim().slice(0, 400)}`);
  let out;
  try { out = JSON.parse(r.stdout); } catch { assert.fail(`mppx validate printed no JSON (exit ${r.code}): ${r.stdout.slice(0, 800)} ${r.stderr.slice(0, 800)}`); }
  const checks = [...out.discovery.checks, ...out.endpoints.flatMap((e) => [...e.challenge, ...e.errorHandling, ...e.payment])];
  for (const c of checks) t.diagnostic(`${c.severity}: ${c.label}${c.detail ? ` (${c.detail})` : ''}`);
  // faxhub's realm is the API URL's host name (core machineRealm), as mppx
  // expects: every check passes, none warns.
  const bad = checks.filter((c) => c.severity === 'fail' || c.severity === 'warn');
  assert.deepEqual(bad, [], 'no check fails or warns');
  assert.equal(r.code, 0, `exit ${r.code}`);
  // Each check the issue names must have run and passed (a skip is not a pass:
  // validate skips a paid attempt the server answered with a non-2xx).
  const passed = new Set(checks.filter((c) => c.severity === 'pass').map((c) => c.label));
  for (const want of ['llms.txt found and nonempty', 'Document found and parseable', 'Valid OpenAPI structure',
    'Returns 402 without credentials', 'Challenge parseable', 'Challenge has id', 'Challenge expires in the future',
    'Realm matches server hostname', 'Amount is valid integer string', 'Valid currency code', 'Has networkId',
    'Has paymentMethodTypes', 'Malformed credential returns 402', 'Error response includes fresh challenge',
    'Payment [stripe]: submitted', 'Payment [stripe]: successful']) {
    assert.ok(passed.has(want), `mppx validate passed "${want}"`);
  }
  assert.equal(out.summary.failed, 0);
});

test('no credential → 402: one WWW-Authenticate per method, Cache-Control no-store, problem+json with the challenge id', async () => {
  s.unpaid = { id: rid('unpaid') };
  s.unpaid.body = body(s.unpaid.id);
  const r = await post(s.unpaid.body);
  const chs = expect402(r, 'payment-required', 'unpaid');
  const host = new URL(API).hostname;
  for (const ch of chs) {
    assert.equal(ch.realm, host, 'realm is the API URL\'s host name');
    assert.equal(ch.intent, 'charge');
    assert.match(ch.id, /^[A-Za-z0-9_-]{43}$/, 'an HMAC-SHA256 id in base64url');
    assert.ok(new Date(ch.expires) > new Date(), `expires ${ch.expires} is in the future`);
    assert.match(ch.digest ?? '', /^sha-256=:[A-Za-z0-9+/]+=*:$/, `digest ${ch.digest}`);
    assert.match(ch.request.amount, /^[1-9][0-9]*$/, `amount ${ch.request.amount} in base units`);
  }
  const stripe = chs.find((c) => c.method === 'stripe');
  assert.ok(stripe, `a stripe offer among ${chs.map((c) => c.method)}`);
  assert.equal(stripe.request.currency, 'usd');
  assert.ok(Number(stripe.request.amount) >= 50, 'Stripe takes no usd charge under 50 cents');
  assert.match(stripe.request.methodDetails?.networkId ?? '', /\S/, 'networkId');
  assert.deepEqual(stripe.request.methodDetails?.paymentMethodTypes, ['card']);
  s.unpaid.challenges = chs;
});

test('same request_id and body while the challenge is live → the same challenges', async () => {
  const r = await post(s.unpaid.body);
  const chs = expect402(r, 'payment-required', 'the same request again');
  assert.deepEqual(chs.map((c) => c.id), s.unpaid.challenges.map((c) => c.id));
});

test('Accept-Payment filters and orders the offers (raw fetch; a second serve that also offers tempo)', async (t) => {
  // The suites' serve offers stripe only (no Tempo configured), so order
  // is seen on a serve of its own that offers both; its Tempo RPC is a
  // closed loopback port, never called for an unpaid request.
  const tempo = await startServe(t, {
    FAXHUB_TEMPO_RPC_URL: 'http://127.0.0.1:9/', FAXHUB_TEMPO_RECIPIENT: TEMPO_RECIPIENT, FAXHUB_TEMPO_TOKEN: TEMPO_TOKEN,
  });
  const url = `${tempo}/api/v1/machine/faxes`;
  const payload = body(rid('accept'));
  const methods = async (accept) => {
    const r = await post(payload, accept === undefined ? {} : { 'accept-payment': accept }, url);
    return expect402(r, 'payment-required', `Accept-Payment: ${accept}`);
  };
  let chs = await methods(undefined);
  assert.deepEqual(chs.map((c) => c.method), ['stripe', 'tempo'], 'no preference: the configured order');
  const tc = chs.find((c) => c.method === 'tempo');
  assert.equal(tc.request.currency.toLowerCase(), TEMPO_TOKEN.toLowerCase());
  assert.equal(tc.request.recipient.toLowerCase(), TEMPO_RECIPIENT.toLowerCase());
  assert.equal(tc.request.methodDetails?.chainId, 42431);
  assert.deepEqual(tc.request.methodDetails?.supportedModes, ['push']);
  assert.match(tc.request.amount, /^[1-9][0-9]*$/, 'token base units');
  chs = await methods('tempo/charge, stripe/charge;q=0.5');
  assert.deepEqual(chs.map((c) => c.method), ['tempo', 'stripe']);
  chs = await methods('stripe/charge, tempo/charge;q=0.1');
  assert.deepEqual(chs.map((c) => c.method), ['stripe', 'tempo']);
  chs = await methods('tempo/charge');
  assert.deepEqual(chs.map((c) => c.method), ['tempo']);
  chs = await methods('stripe/charge');
  assert.deepEqual(chs.map((c) => c.method), ['stripe']);
  chs = await methods('stripe/*;q=0, */*');
  assert.deepEqual(chs.map((c) => c.method), ['tempo'], 'q=0 excludes');
  // And on the suites' serve: stripe/charge keeps the stripe offer.
  const r = await post(s.unpaid.body, { 'accept-payment': 'stripe/charge' });
  assert.deepEqual(expect402(r, 'payment-required', 'main serve').map((c) => c.method), ['stripe']);
});

test('a malformed credential → a fresh 402 (malformed-credential), not a 500', async () => {
  const r = await post(s.unpaid.body, { authorization: 'Payment dGhpcyBpcyBnYXJiYWdl' });
  expect402(r, 'malformed-credential', 'malformed credential');
});

test('a credential bound to another body → 402, nothing charged (the digest binds the body)', async () => {
  // A well-formed credential for the unpaid challenge, presented with a
  // different request_id (so the body, and its digest, differ).
  const ch = s.unpaid.challenges.find((c) => c.method === 'stripe');
  const auth = Credential.serialize(Credential.from({ challenge: ch, payload: { spt: 'spt_test_notminted' } }));
  const r = await post(body(rid('otherbody')), { authorization: auth });
  assert.equal(r.status, 402, `${r.status} ${r.text}`);
  assert.ok(['verification-failed', 'invalid-challenge'].includes(r.json.code), `problem ${r.text}`);
});

test('two Payment credentials → 400', async () => {
  const ch = s.unpaid.challenges.find((c) => c.method === 'stripe');
  const auth = Credential.serialize(Credential.from({ challenge: ch, payload: { spt: 'spt_test_x' } }));
  const res = await fetch(FAXES, {
    method: 'POST', body: s.unpaid.body,
    headers: [['content-type', 'application/json'], ['authorization', auth], ['authorization', auth]],
  });
  const text = await res.text();
  assert.equal(res.status, 400, `${res.status} ${text}`);
});

test('mppx pays a fax with a test card: 402 → SPT from the test mint → 200 with a receipt', async () => {
  s.paid = { id: rid('paid') };
  s.paid.body = body(s.paid.id);
  const r = await payWithCLI(s.paid.body);
  const { order, receipt, responses: all } = paidOrder(r, 'paid');
  assert.equal(all[0].status, 402, 'mppx saw the challenge first');
  assert.match(all.at(-1).headers.get('cache-control') ?? '', /private/, 'a paid answer is private');
  assert.match(order.id ?? '', /\S/, `order id: ${JSON.stringify(order)}`);
  assert.equal(order.requestId, s.paid.id);
  assert.equal(order.to, DELIVERED);
  assert.equal(order.pages, 1);
  assert.equal(order.method, 'stripe');
  assert.equal(order.mode, 'test', 'the built-in backend pays test-mode faxes');
  assert.equal(order.currency, 'usd');
  assert.match(order.amount, /^[1-9][0-9]*$/);
  const challenge = Challenge.fromResponseList(new Response(null, { status: 402, headers: all[0].headers }))[0];
  assert.equal(order.amount, challenge.request.amount, 'charged what the challenge said');
  if (receipt.challengeId) assert.equal(receipt.challengeId, challenge.id);
  assert.ok(order.statusUrl?.startsWith(API), `statusUrl ${order.statusUrl}`);
  s.paid.order = order;
  s.paid.receipt = receipt;
});

test('the status URL works without credentials and shows the fax delivered by the simulator', async () => {
  const url = s.paid.order.statusUrl;
  const r = await poll(url, (o) => o.status === 'delivered', { what: 'paid fax' });
  assert.equal(r.json.id, s.paid.order.id);
  assert.equal(r.json.pagesSent, 1);
  assert.match(r.headers.get('cache-control') ?? '', /no-store/);
  assert.ok(!r.json.refund, `a delivered fax is not refunded: ${r.text}`);
  // A forged token is refused, never another fax.
  const forged = url.slice(0, -2) + (url.endsWith('AA') ? 'BB' : 'AA');
  const res = await fetch(forged);
  assert.ok(res.status === 404 || res.status === 400, `forged status token: ${res.status}`);
});

test('same request_id and body again → the same order and receipt, one charge', async () => {
  // Without a credential: the stored 200 (a payer that lost the answer).
  const r = await post(s.paid.body);
  assert.equal(r.status, 200, `${r.status} ${r.text}`);
  assert.equal(r.json.id, s.paid.order.id);
  const receipt = Receipt.deserialize(r.headers.get('payment-receipt'));
  assert.equal(receipt.reference, s.paid.receipt.reference, 'the same PaymentIntent: one charge');
  // The CLI again: it gets the stored 200 at once and pays nothing.
  const again = paidOrder(await payWithCLI(s.paid.body), 'CLI replay');
  assert.equal(again.order.id, s.paid.order.id);
  assert.equal(again.receipt.reference, s.paid.receipt.reference);
  assert.equal(again.responses.length, 1, 'no 402, so no second payment');
});

test('same request_id with another body → 409 request_id_conflict', async () => {
  for (const payload of [body(s.paid.id, { to: '+12125550105' }), body(s.unpaid.id, { cover: true })]) {
    const r = await post(payload);
    assert.equal(r.status, 409, `${r.status} ${r.text}`);
    assert.equal(r.json.code, 'request_id_conflict', r.text);
    assert.equal(r.headers.get('www-authenticate'), null, 'a conflict offers no payment');
  }
});

test('a declined card (pm_card_chargeDeclined) → 402 verification-failed, and no fax', async () => {
  const id = rid('declined');
  const payload = body(id);
  const r = await payWithCLI(payload, 'pm_card_chargeDeclined');
  assert.notEqual(r.code, 0, `mppx should fail: ${r.stdout}`);
  const all = responses(r.stdout);
  assert.ok(all.every((x) => x.status !== 200), `no 200: ${r.stdout}`);
  assert.match(r.stdout + r.stderr, /verification-failed/, `the problem type reaches the payer: ${r.stdout} ${r.stderr}`);
  // Nothing was ordered: the request is still unpaid.
  const after = await post(payload);
  expect402(after, 'payment-required', 'after a decline');
});

test('a fax that fails is refunded: statusUrl shows refund "due", then "refunded" after the sweep', async (t) => {
  const r = await payWithCLI(body(rid('refund'), { to: NOT_A_FAX }));
  const { order } = paidOrder(r, 'failing fax');
  const failed = await poll(order.statusUrl, (o) => o.status === 'failed', { what: 'failing fax' });
  assert.equal(failed.json.failureCode, 'not_a_fax_machine', failed.text);
  // The refund is recorded as due in the transaction that ends the fax,
  // and performed by the machine-payments sweep.
  assert.ok(['due', 'refunded'].includes(failed.json.refund), `refund due when the fax failed: ${failed.text}`);
  // serve's sweep (--machine-sweep-interval, 2 s under run-suites.sh) pays
  // the refund back; wait for it with a deadline (FAXHUB_MPP_REFUND_DEADLINE_MS,
  // default 90 s: enough for the default one-minute sweep).
  const deadline = Number(process.env.FAXHUB_MPP_REFUND_DEADLINE_MS || 90000);
  t.diagnostic(`waiting up to ${deadline} ms for the sweep to refund`);
  const refunded = await poll(order.statusUrl, (o) => o.refund === 'refunded', { deadline, every: 500, what: 'refund' });
  assert.equal(refunded.json.id, order.id);
}, { timeout: 180000 });
