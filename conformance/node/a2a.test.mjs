// A2A conformance: faxhub's A2A endpoint ({base}/a2a, JSON-RPC) driven by
// the official JavaScript SDK, @a2a-js/sdk 1.3.0 (A2A 1.0), against a real
// `faxhub serve --dev`: the agent card through the SDK's resolver, the fax
// task from upload to delivery (the owner pays at the draft's checkout),
// followed by polling, by a stream (sendMessageStream) and by
// resubscribing (resubscribeTask) and by push notifications to a loopback
// receiver (configs through the SDK's push config calls and on sendMessage;
// every push's JWT verified with jose against the JWKS), cancel, and the
// refusals. What an SDK would never send (no token, DPoP,
// raw 0.3 calls, an unknown A2A-Version) goes over plain fetch. The access
// tokens come from the real OAuth flow with the owner's consent in the
// console. Tests run in order and share state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { A2A, BASE, ISSUER, payNumber, simulateInbound, testAPIKey } from './lib.mjs';
import { minimalPDF } from './mcp-lib.mjs';
import {
  AP2, FAX_TO, SKILLS, a2aClient, a2aToken, artifactData, dataOf, payDraft, rpc, skillPart, textOf, until, uploadSample, userMessage,
} from './a2a-lib.mjs';

const REDIRECT = 'http://127.0.0.1:53684/a2a-sdk';
const FULL = 'fax:draft fax:read credits:read credits:checkout';
const s = {}; // shared between tests

const auth = (token = s.token) => ({ serviceParameters: { Authorization: `Bearer ${token}` } });

// send sends one SDK message whose only part is the data part of a skill.
function sdkMessage(skill, args = {}, extra = {}) {
  return {
    messageId: crypto.randomUUID(), role: Role.ROLE_USER, contextId: '', taskId: '', metadata: undefined, extensions: [], referenceTaskIds: [],
    parts: [{ content: { $case: 'data', value: { skill, arguments: args } }, metadata: undefined, filename: '', mediaType: '' }],
    ...extra,
  };
}
async function send(skill, args, token) {
  return s.client.sendMessage({ tenant: '', message: sdkMessage(skill, args), configuration: undefined, metadata: undefined }, auth(token));
}
const isTask = (r) => r && 'status' in r && 'id' in r;

// newFaxTask runs create_upload → PUT → create_fax and returns the task.
async function newFaxTask() {
  const up = await send('create_upload', { contentType: 'application/pdf', fileName: 'sample-letter.pdf' });
  assert.ok(!isTask(up), `create_upload answers with a message, not a task: ${JSON.stringify(up)}`);
  const u = dataOf(up.parts);
  await uploadSample(u);
  const task = await send('create_fax', { to: FAX_TO, uploadToken: u.uploadToken });
  assert.ok(isTask(task), `create_fax answers with a task: ${JSON.stringify(task)}`);
  return task;
}

// rpcError asserts a JSON-RPC error response and returns its error (the
// HTTP status is not part of the contract: a2a-go's handlers answer 200,
// faxhub's transport checks 4xx; the SDKs read both).
function rpcError(r, code) {
  assert.ok(r.status === 200 || (r.status >= 400 && r.status < 500), `HTTP ${r.status} ${JSON.stringify(r.body)}`);
  assert.ok(r.body?.error, `expected error ${code}, got ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, code, JSON.stringify(r.body.error));
  return r.body.error;
}

// One registered client (DCR is rate-limited per address): the owner first
// authorizes it for credits:read only, then again with the fax and
// checkout scopes, as the first token's refusal asks.
test('a token for /a2a by OAuth (DCR, PKCE S256, resource, consent) with credits:read only: get_credits works, create_upload is refused naming fax:draft', async () => {
  s.oauthClient = await a2aClient('Conformance A2A SDK', REDIRECT);
  const narrow = await a2aToken(s.oauthClient, { scope: 'credits:read' });
  const ok = await rpc('SendMessage', { message: userMessage([skillPart('get_credits')]) }, { token: narrow });
  assert.ok('balance' in (dataOf(ok.body?.result?.message?.parts) ?? {}), `get_credits with credits:read: ${ok.status} ${JSON.stringify(ok.body)}`);
  const r = await rpc('SendMessage', { message: userMessage([skillPart('create_upload', {})]) }, { token: narrow });
  if (r.status === 403) {
    assert.match(r.headers.get('www-authenticate') ?? '', /insufficient_scope/);
    assert.match(r.headers.get('www-authenticate') ?? '', /fax:draft/);
  } else {
    assert.equal(r.status, 200, `${r.status} ${JSON.stringify(r.body)}`);
    assert.ok(r.body.error, `create_upload without fax:draft succeeded: ${JSON.stringify(r.body)}`);
    assert.ok(JSON.stringify(r.body.error).includes('fax:draft'), `the error names the scope: ${JSON.stringify(r.body.error)}`);
  }
});

test('the owner authorizes the client again with the fax and credit scopes: a token for /a2a (PKCE S256, resource, consent in the console)', async () => {
  assert.ok(s.oauthClient, 'no registered client from the previous test');
  s.token = await a2aToken(s.oauthClient, { scope: FULL });
});

test('the agent card through the SDK resolver (ClientFactory.createFromUrl)', async (t) => {
  s.client = await new ClientFactory().createFromUrl(BASE);
  const card = await s.client.getAgentCard();
  assert.equal(s.client.protocolVersion, '1.0', 'the SDK picks the 1.0 interface');
  const ifaces = card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`);
  t.diagnostic(`interfaces: ${ifaces.join('; ')}`);
  assert.ok(ifaces.includes(`JSONRPC 1.0 ${A2A}`), `supportedInterfaces: ${ifaces}`);
  assert.ok(ifaces.includes(`JSONRPC 0.3 ${A2A}`), `supportedInterfaces: ${ifaces}`);
  const ids = card.skills.map((k) => k.id);
  for (const id of SKILLS) assert.ok(ids.includes(id), `skill ${id} missing from ${ids}`);
  for (const k of card.skills) assert.ok(k.id && k.name && k.description, `skill ${JSON.stringify(k)}`);
  assert.equal(card.capabilities?.streaming, true, 'streaming is offered');
  assert.equal(card.capabilities?.pushNotifications, true, 'push notifications are offered');
  const ap2 = (card.capabilities?.extensions ?? []).find((e) => e.uri === AP2);
  assert.ok(ap2, `the AP2 extension is declared: ${JSON.stringify(card.capabilities?.extensions)}`);
  assert.equal(ap2.required, false);
  // The SDK read securityRequirements as ProtoJSON ({schemes: {name: {list}}}).
  assert.ok(card.securityRequirements.length > 0, 'securityRequirements');
  for (const req of card.securityRequirements) {
    for (const [name, scopes] of Object.entries(req.schemes)) {
      assert.ok(card.securitySchemes[name], `requirement names the unknown scheme ${name}`);
      assert.ok(Array.isArray(scopes.list), `requirement ${name}: ${JSON.stringify(scopes)}`);
    }
  }
  // The wire form itself: ProtoJSON, not the 0.3 list of maps of arrays.
  const raw = await (await fetch(`${BASE}/.well-known/agent-card.json`)).json();
  assert.ok(Array.isArray(raw.securityRequirements), `wire securityRequirements: ${JSON.stringify(raw.securityRequirements)}`);
  for (const req of raw.securityRequirements) {
    for (const v of Object.values(req.schemes)) assert.ok(Array.isArray(v.list), `wire requirement: ${JSON.stringify(req)}`);
  }
  const oauthScheme = Object.values(raw.securitySchemes).find((x) => x.oauth2SecurityScheme);
  assert.ok(oauthScheme, `an OAuth 2 scheme: ${JSON.stringify(raw.securitySchemes)}`);
  assert.ok(JSON.stringify(oauthScheme).includes(ISSUER), 'the OAuth scheme names faxhub\'s issuer');
});

test('create_upload, PUT a PDF, create_fax: INPUT_REQUIRED with a checkoutUrl', async () => {
  assert.ok(s.client && s.token, 'no client or token from the earlier tests');
  const task = await newFaxTask();
  assert.match(task.id, /^tsk_/);
  assert.ok(task.contextId, 'the task has a contextId');
  assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const draft = artifactData(task, 'fax-draft');
  assert.ok(draft?.draftId && draft.quote && draft.checkoutUrl && draft.expiresAt, `fax-draft artifact: ${JSON.stringify(task.artifacts)}`);
  assert.equal(draft.quote.to, FAX_TO);
  const status = dataOf(task.status.message?.parts);
  assert.equal(status?.checkoutUrl, draft.checkoutUrl, 'the status message carries the checkoutUrl');
  assert.ok(textOf(task.status.message.parts), 'the status message has a text line');
  s.task = task;
  s.draft = draft;
});

test('the owner pays at the checkout; GetTask reaches COMPLETED with the fax', async () => {
  assert.ok(s.task, 'no task from the previous test');
  const before = await s.client.getTask({ tenant: '', id: s.task.id }, auth());
  assert.equal(before.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  await payDraft(s.draft.checkoutUrl);
  const done = await until(`task ${s.task.id} COMPLETED`, () => s.client.getTask({ tenant: '', id: s.task.id }, auth()),
    (t) => t.status.state === TaskState.TASK_STATE_COMPLETED || t.status.state === TaskState.TASK_STATE_FAILED);
  assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED, `final state: ${JSON.stringify(done.status)}`);
  const fax = artifactData(done, 'fax');
  assert.ok(fax?.faxId, `fax artifact: ${JSON.stringify(done.artifacts)}`);
  assert.equal(fax.status, 'delivered');
  assert.equal(fax.to, FAX_TO);
  // get_fax (fax:read) sees the same fax.
  const got = await send('get_fax', { faxId: fax.faxId });
  assert.equal(dataOf(got.parts)?.status, 'delivered');
  s.completed = done;
});

// readStream reads an SDK stream to its end and returns its payloads
// ({$case, value}); onEvent runs on each as it arrives (the owner pays
// when the task asks for it). A stream that does not end within a minute
// fails the test.
async function readStream(open, onEvent) {
  const signal = AbortSignal.timeout(60_000);
  const payloads = [];
  for await (const ev of open({ ...auth(), signal })) {
    assert.ok(ev.payload, `an event without a payload: ${JSON.stringify(ev)}`);
    payloads.push(ev.payload);
    if (onEvent) await onEvent(ev.payload, payloads);
  }
  return payloads;
}

// checkUpdates checks what follows a stream's first event: status and
// artifact updates of taskId, no status said twice in a row, the fax
// artifact (delivered) just before the last status, COMPLETED; it
// returns the states in order.
function checkUpdates(updates, taskId) {
  const states = [];
  let last;
  for (const { $case, value } of updates) {
    assert.ok($case === 'statusUpdate' || $case === 'artifactUpdate', `after the task: ${$case} ${JSON.stringify(value)}`);
    assert.equal(value.taskId, taskId, `an update of another task: ${JSON.stringify(value)}`);
    if ($case === 'statusUpdate') {
      const said = `${value.status.state} ${textOf(value.status.message?.parts)}`;
      assert.notEqual(said, last, `a status said twice: ${said}`);
      last = said;
      states.push(value.status.state);
    }
  }
  const n = updates.length;
  assert.ok(n >= 2, `updates: ${JSON.stringify(updates)}`);
  assert.equal(updates[n - 1].$case, 'statusUpdate');
  assert.equal(updates[n - 1].value.status.state, TaskState.TASK_STATE_COMPLETED, `the last status: ${JSON.stringify(updates[n - 1].value.status)}`);
  assert.equal(updates[n - 2].$case, 'artifactUpdate', `the fax artifact before the end: ${JSON.stringify(updates[n - 2])}`);
  assert.equal(updates[n - 2].value.artifact.name, 'fax');
  assert.equal(dataOf(updates[n - 2].value.artifact.parts)?.status, 'delivered');
  return states;
}

// The simulator here delivers at once (--sim-timescale 0): the fax may be
// delivered between two polls of the stream, so WORKING is not always
// seen; the Go tests (protocols/a2a, core/tasks) follow every step.
test('sendMessageStream: create_fax streams the task INPUT_REQUIRED, the owner pays, then the fax artifact and COMPLETED; the stream ends', async (t) => {
  assert.ok(s.client && s.token, 'no client or token from the earlier tests');
  const up = dataOf((await send('create_upload', { contentType: 'application/pdf' })).parts);
  await uploadSample(up);
  const req = { tenant: '', message: sdkMessage('create_fax', { to: FAX_TO, uploadToken: up.uploadToken }), configuration: undefined, metadata: undefined };
  const payloads = await readStream((o) => s.client.sendMessageStream(req, o), async (p, all) => {
    if (all.length === 1) {
      assert.equal(p.$case, 'task', `the first event is the task: ${JSON.stringify(p)}`);
      assert.equal(p.value.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      const draft = artifactData(p.value, 'fax-draft');
      assert.ok(draft?.checkoutUrl, `fax-draft artifact: ${JSON.stringify(p.value.artifacts)}`);
      await payDraft(draft.checkoutUrl);
    }
  });
  const task = payloads[0].value;
  const states = checkUpdates(payloads.slice(1), task.id);
  t.diagnostic(`states: ${states.map((x) => TaskState[x] ?? x).join(' → ')}; events: ${payloads.map((p) => p.$case).join(', ')}`);
  const got = await s.client.getTask({ tenant: '', id: task.id }, auth());
  assert.equal(got.status.state, TaskState.TASK_STATE_COMPLETED, 'GetTask agrees with the stream');
});

test('resubscribeTask: a task created without a stream, followed by a client that goes away, then resubscribed to COMPLETED; a final task answers itself and ends', async () => {
  assert.ok(s.client, 'no client');
  const task = await newFaxTask();
  // A first subscriber reads the task and goes away.
  const gone = new AbortController();
  await assert.rejects((async () => {
    for await (const ev of s.client.resubscribeTask({ tenant: '', id: task.id }, { ...auth(), signal: gone.signal })) {
      assert.equal(ev.payload.$case, 'task');
      assert.equal(ev.payload.value.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      gone.abort();
    }
  })(), (err) => err.name === 'AbortError' || /abort/i.test(String(err)) || assert.fail(`${err}`));

  await payDraft(artifactData(task, 'fax-draft').checkoutUrl);
  const payloads = await readStream((o) => s.client.resubscribeTask({ tenant: '', id: task.id }, o));
  assert.equal(payloads[0].$case, 'task', `the first event is the task: ${JSON.stringify(payloads[0])}`);
  const first = payloads[0].value;
  assert.equal(first.id, task.id);
  if (first.status.state === TaskState.TASK_STATE_COMPLETED) {
    // Delivered before the subscription: the task and the end.
    assert.equal(payloads.length, 1);
    assert.equal(artifactData(first, 'fax')?.status, 'delivered');
  } else {
    assert.equal(first.status.state, TaskState.TASK_STATE_WORKING, `resubscribed: ${JSON.stringify(first.status)}`);
    checkUpdates(payloads.slice(1), task.id);
  }

  const again = await readStream((o) => s.client.resubscribeTask({ tenant: '', id: task.id }, o));
  assert.equal(again.length, 1, `a final task: the task, then the end: ${JSON.stringify(again)}`);
  assert.equal(again[0].value.status.state, TaskState.TASK_STATE_COMPLETED);
  await assert.rejects(readStream((o) => s.client.resubscribeTask({ tenant: '', id: 'tsk_doesnotexist' }, o)),
    (err) => (err.cause?.envelopeCode ?? err.envelopeCode) === -32001 || assert.fail(`${err}`));
});

// pushReceiver is an agent's push notification endpoint: node http on
// loopback (serve runs with --dev, which delivers to loopback over http),
// keeping each push's headers and exact body bytes, answering 200.
async function pushReceiver() {
  const got = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      got.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200).end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { got, base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

// verifyPushes checks every push a config got as its receiver would: the
// A2A-Notification-Token, the Authorization Bearer JWT against the
// issuer's JWKS (EdDSA, iss, aud = the config's URL, exp), the body's
// SHA-256 in request_body_sha256, the task in task_id; then the bodies, A2A
// 1.0 StreamResponses: statusUpdates in order, no push repeating the one
// before, the last the COMPLETED task with its delivered fax.
async function verifyPushes(pushes, url, taskId, token) {
  const keys = createRemoteJWKSet(new URL(`${ISSUER}/jwks`));
  const rank = { TASK_STATE_SUBMITTED: 0, TASK_STATE_WORKING: 1, TASK_STATE_INPUT_REQUIRED: 1, TASK_STATE_COMPLETED: 2 };
  let last = -1;
  let prev;
  for (const [i, p] of pushes.entries()) {
    assert.equal(p.headers['content-type'], 'application/json', `push ${i}`);
    assert.equal(p.headers['a2a-notification-token'], token, `push ${i}: the token`);
    const bearer = /^Bearer (\S+)$/.exec(p.headers.authorization ?? '');
    assert.ok(bearer, `push ${i}: Authorization ${p.headers.authorization}`);
    const { payload, protectedHeader } = await jwtVerify(bearer[1], keys, { issuer: ISSUER, audience: url, algorithms: ['EdDSA'], clockTolerance: 60 });
    assert.ok(protectedHeader.kid, `push ${i}: the JWT names its key`);
    assert.equal(payload.request_body_sha256, createHash('sha256').update(p.body).digest('hex'), `push ${i}: the body hash`);
    assert.equal(payload.task_id, taskId, `push ${i}: task_id`);
    assert.ok(payload.jti && payload.exp > payload.iat, `push ${i}: ${JSON.stringify(payload)}`);
    const text = p.body.toString('utf8');
    assert.notEqual(text, prev, `push ${i} repeats the push before it: ${text.slice(0, 300)}`);
    prev = text;
    const body = JSON.parse(text);
    const t = body.task ?? body.statusUpdate;
    assert.ok(t, `push ${i}: a StreamResponse with task or statusUpdate: ${text.slice(0, 300)}`);
    assert.equal(body.task ? body.task.id : t.taskId, taskId, `push ${i}`);
    const r = rank[t.status?.state];
    assert.ok(r !== undefined && r >= last, `push ${i}: ${t.status?.state} after a later state`);
    last = r;
  }
  const final = JSON.parse(pushes.at(-1).body.toString('utf8'));
  assert.equal(final.task?.status?.state, 'TASK_STATE_COMPLETED', `the last push: ${JSON.stringify(final).slice(0, 500)}`);
  assert.equal(artifactData(final.task, 'fax')?.status, 'delivered', `the last push carries the fax: ${JSON.stringify(final.task.artifacts)}`);
}

// completedPush waits for a receiver's pushes on path to end in the
// completed task (the webhook engine delivers them in the background).
async function completedPush(rx, path) {
  const of = () => rx.got.filter((p) => p.path === path);
  return until(`a COMPLETED push to ${path}`, async () => of(), (ps) => ps.length > 0 && JSON.parse(ps.at(-1).body).task?.status?.state === 'TASK_STATE_COMPLETED',
    { tries: 300 });
}

test('push notifications through the SDK: create, get, list (the token reads ********), delete; the paid fax task\'s updates reach a loopback receiver to COMPLETED, each with the token and a JWT verified against the JWKS and binding the body', async (t) => {
  assert.ok(s.client, 'no client');
  const rx = await pushReceiver();
  t.after(rx.close);
  const task = await newFaxTask();
  const url = `${rx.base}/push/main`;
  const cfg = await s.client.createTaskPushNotificationConfig({ tenant: '', id: 'main', taskId: task.id, url, token: 'tok-main-1', authentication: undefined }, auth());
  assert.equal(cfg.id, 'main');
  assert.equal(cfg.taskId, task.id);
  assert.equal(cfg.url, url);
  assert.equal(cfg.token, '********', 'a set token is answered redacted, and the SDK takes it');
  const other = await s.client.createTaskPushNotificationConfig({ tenant: '', id: 'other', taskId: task.id, url: `${rx.base}/push/other`, token: '',
    authentication: { scheme: 'Bearer', credentials: 'receiver-secret' } }, auth());
  assert.deepEqual(other.authentication, { scheme: 'Bearer', credentials: '********' });
  assert.equal(other.token, '', 'no token: none is answered');
  const got = await s.client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'main' }, auth());
  assert.deepEqual({ id: got.id, url: got.url, token: got.token }, { id: 'main', url, token: '********' });
  const list = await s.client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }, auth());
  assert.deepEqual(list.configs.map((c) => c.id), ['main', 'other']);
  await s.client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'other' }, auth());
  await assert.rejects(s.client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'other' }, auth()),
    (err) => (err.cause?.envelopeCode ?? err.envelopeCode) === -32602 || assert.fail(`get a deleted config: ${err}`));
  await assert.rejects(s.client.createTaskPushNotificationConfig({ tenant: '', id: 'x', taskId: task.id, url: 'http://169.254.169.254/latest', token: '', authentication: undefined }, auth()),
    (err) => (err.cause?.envelopeCode ?? err.envelopeCode) === -32602 || assert.fail(`cloud metadata: ${err}`));
  await assert.rejects(s.client.createTaskPushNotificationConfig({ tenant: '', id: 'x', taskId: 'tsk_doesnotexist', url, token: '', authentication: undefined }, auth()),
    (err) => (err.cause?.envelopeCode ?? err.envelopeCode) === -32001 || assert.fail(`an unknown task: ${err}`));

  await payDraft(artifactData(task, 'fax-draft').checkoutUrl);
  const pushes = await completedPush(rx, '/push/main');
  t.diagnostic(`pushes: ${pushes.map((p) => { const b = JSON.parse(p.body); return (b.task ?? b.statusUpdate).status.state; }).join(' → ')}`);
  await verifyPushes(pushes, url, task.id, 'tok-main-1');
  assert.equal(rx.got.filter((p) => p.path === '/push/other').length, 0, 'a deleted config gets nothing');
});

test('push notifications set with the message: configuration.taskPushNotificationConfig on sendMessage (create_fax) is stored on the new task and gets its updates to COMPLETED', async (t) => {
  assert.ok(s.client, 'no client');
  const rx = await pushReceiver();
  t.after(rx.close);
  const up = await send('create_upload', { contentType: 'application/pdf', fileName: 'sample-letter.pdf' });
  const u = dataOf(up.parts);
  await uploadSample(u);
  const url = `${rx.base}/push/send`;
  const task = await s.client.sendMessage({
    tenant: '', message: sdkMessage('create_fax', { to: FAX_TO, uploadToken: u.uploadToken }), metadata: undefined,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: { tenant: '', id: '', taskId: '', url, token: 'tok-send', authentication: undefined } },
  }, auth());
  assert.ok(isTask(task), `create_fax answers with a task: ${JSON.stringify(task)}`);
  const list = await s.client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }, auth());
  assert.equal(list.configs.length, 1, JSON.stringify(list));
  assert.deepEqual({ id: list.configs[0].id, url: list.configs[0].url, token: list.configs[0].token }, { id: task.id, url, token: '********' },
    'a config sent without an id is named by its task');
  await payDraft(artifactData(task, 'fax-draft').checkoutUrl);
  const pushes = await completedPush(rx, '/push/send');
  await verifyPushes(pushes, url, task.id, 'tok-send');
  await s.client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: '' }, auth());
  const after = await s.client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }, auth());
  assert.equal(after.configs.length, 0, 'deleted by the empty id (the task\'s own config)');
});

test('CancelTask on an unpaid fax task: CANCELED; a final task is not cancelable', async () => {
  assert.ok(s.client, 'no client');
  const task = await newFaxTask();
  assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const canceled = await s.client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, auth());
  assert.equal(canceled.status.state, TaskState.TASK_STATE_CANCELED);
  const again = await s.client.getTask({ tenant: '', id: task.id }, auth());
  assert.equal(again.status.state, TaskState.TASK_STATE_CANCELED);
  await assert.rejects(s.client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, auth()),
    (err) => err.envelopeCode === -32002 || assert.fail(`cancel twice: ${err}`));
  if (s.completed) {
    await assert.rejects(s.client.cancelTask({ tenant: '', id: s.completed.id, metadata: undefined }, auth()),
      (err) => err.envelopeCode === -32002 || assert.fail(`cancel a completed task: ${err}`));
  }
});

test('GetTask of an unknown task is TaskNotFound (-32001)', async () => {
  await assert.rejects(s.client.getTask({ tenant: '', id: 'tsk_doesnotexist' }, auth()),
    (err) => err.envelopeCode === -32001 || assert.fail(`${err}`));
});

test('refused: a free-text message, an unknown skill, missing arguments are InvalidParams (-32602) naming the skills or the field', async () => {
  const msg = sdkMessage('x');
  msg.parts = [{ content: { $case: 'text', value: 'please fax my letter to +12125550100' }, metadata: undefined, filename: '', mediaType: '' }];
  await assert.rejects(s.client.sendMessage({ tenant: '', message: msg, configuration: undefined, metadata: undefined }, auth()), (err) => {
    assert.equal(err.envelopeCode, -32602, `${err}`);
    const said = `${err.message} ${JSON.stringify(err.data)}`;
    assert.ok(said.includes('create_fax') && said.includes('skill'), `the error names the skills: ${said}`);
    return true;
  });
  // An unknown skill and bad arguments are refused the same way.
  await assert.rejects(send('send_everything', {}), (err) => err.envelopeCode === -32602 || assert.fail(`${err}`));
  await assert.rejects(send('create_fax', { to: FAX_TO }), (err) => {
    assert.equal(err.envelopeCode, -32602, `${err}`);
    assert.ok(`${err.message} ${JSON.stringify(err.data)}`.includes('uploadToken'), `the error names the field: ${err.message} ${JSON.stringify(err.data)}`);
    return true;
  });
});

test('refused: no token is 401 with a Bearer resource_metadata challenge', async () => {
  const r = await rpc('SendMessage', { message: userMessage([skillPart('get_credits')]) });
  assert.equal(r.status, 401);
  const www = r.headers.get('www-authenticate') ?? '';
  assert.match(www, /^Bearer /);
  assert.ok(www.includes(`resource_metadata="${BASE}/.well-known/oauth-protected-resource/a2a"`), `WWW-Authenticate: ${www}`);
  const bad = await rpc('SendMessage', { message: userMessage([skillPart('get_credits')]) }, { token: 'fxo_not_a_token' });
  assert.equal(bad.status, 401);
  assert.match(bad.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
});

test('refused: a DPoP proof or the DPoP scheme is 401 (DPoP-bound tokens are not accepted)', async () => {
  const proof = 'eyJhbGciOiJFUzI1NiIsInR5cCI6ImRwb3Arand0In0.e30.sig';
  for (const headers of [{ dpop: proof }, { authorization: `DPoP ${s.token}`, dpop: proof }]) {
    const r = await rpc('SendMessage', { message: userMessage([skillPart('get_credits')]) }, { token: headers.authorization ? undefined : s.token, headers });
    assert.equal(r.status, 401, `${JSON.stringify(Object.keys(headers))}: ${r.status} ${JSON.stringify(r.body)}`);
    const www = r.headers.get('www-authenticate') ?? '';
    assert.match(www, /DPoP/, `the challenge says DPoP is not accepted: ${www}`);
  }
});

test('refused: buy_credits without the AP2 extension is ExtensionSupportRequired (-32008) naming it', async () => {
  const r = await rpc('SendMessage', { message: userMessage([skillPart('buy_credits', { packId: 'pack_10' })]) }, { token: s.token });
  const e = rpcError(r, -32008);
  assert.ok(JSON.stringify(e).includes(AP2), `the error names ${AP2}: ${JSON.stringify(e)}`);
});

test('an unsupported A2A-Version is VersionNotSupported (-32009)', async () => {
  const r = await rpc('GetTask', { id: s.task?.id ?? 'tsk_x' }, { token: s.token, version: '2.0' });
  rpcError(r, -32009);
});

test('0.3 raw message/send and tasks/get (A2A-Version 0.3, and absent)', async () => {
  for (const version of ['0.3', undefined]) {
    const credits = await rpc('message/send', {
      message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'data', data: { skill: 'get_credits', arguments: {} } }] },
    }, { token: s.token, version });
    assert.equal(credits.status, 200, JSON.stringify(credits.body));
    assert.equal(credits.body.result?.kind, 'message', `0.3 result: ${JSON.stringify(credits.body)}`);
    const part = credits.body.result.parts.find((p) => p.kind === 'data');
    assert.ok(part && 'balance' in part.data, `0.3 data part: ${JSON.stringify(credits.body.result.parts)}`);

    assert.ok(s.completed, 'no completed task from the fax journey');
    const got = await rpc('tasks/get', { id: s.completed.id }, { token: s.token, version });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.result?.kind, 'task', `0.3 task: ${JSON.stringify(got.body)}`);
    assert.equal(got.body.result.id, s.completed.id);
    assert.equal(got.body.result.status.state, 'completed');

    const text = await rpc('message/send', {
      message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'hello' }] },
    }, { token: s.token, version });
    rpcError(text, -32602);
  }
});

test('0.3 raw tasks/resubscribe of a completed task: server-sent events, one task (kind task, completed), then the end', async () => {
  assert.ok(s.completed, 'no completed task from the fax journey');
  const res = await fetch(A2A, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${s.token}`, 'a2a-version': '0.3' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 31, method: 'tasks/resubscribe', params: { id: s.completed.id } }),
    signal: AbortSignal.timeout(30_000),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const events = (await res.text()).split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
  assert.equal(events.length, 1, `events: ${JSON.stringify(events)}`);
  assert.equal(events[0].id, 31);
  assert.equal(events[0].result?.kind, 'task', JSON.stringify(events[0]));
  assert.equal(events[0].result.id, s.completed.id);
  assert.equal(events[0].result.status.state, 'completed');
});

// A number bought over A2A: buy_number is a task that waits for the owner
// to pay the first month at the number's console page, works while the
// simulator provisions it and completes with the number; then a fax
// delivered to it (the owner's test-mode simulate, REST) is read as text
// through read_inbox_fax (inbox:read).
test('number bought over A2A: search_numbers, then buy_number is INPUT_REQUIRED with the number and its checkoutUrl', async () => {
  assert.ok(s.client && s.token, 'no client or token from the earlier tests');
  const found = dataOf((await send('search_numbers', { areaCode: '202', limit: 3 })).parts);
  assert.ok(found?.numbers?.length > 0, `search_numbers: ${JSON.stringify(found)}`);
  const pick = found.numbers[0];
  assert.match(pick.number, /^\+1202/);
  assert.ok(pick.monthlyPrice, `a monthly price: ${JSON.stringify(pick)}`);
  const task = await send('buy_number', { number: pick.number });
  assert.ok(isTask(task), `buy_number answers with a task: ${JSON.stringify(task)}`);
  assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const data = dataOf(task.status.message?.parts);
  assert.equal(data?.number, pick.number, `status data: ${JSON.stringify(data)}`);
  assert.equal(data.status, 'awaiting_payment');
  assert.equal(data.checkoutUrl, `${BASE}/console/numbers/${data.id}?mode=test`, 'the checkoutUrl is the number\'s console page');
  assert.ok(data.reservedUntil, 'the reservation has an end');
  assert.ok(textOf(task.status.message.parts), 'the status message has a text line');
  s.numberTask = task;
  s.number = data;
});

test('number bought over A2A: the owner pays at the checkout; GetTask reaches COMPLETED with the number', async () => {
  assert.ok(s.numberTask, 'no number task from the previous test');
  await payNumber(s.number.checkoutUrl);
  const done = await until(`number task ${s.numberTask.id} COMPLETED`, () => s.client.getTask({ tenant: '', id: s.numberTask.id }, auth()),
    (t) => [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED].includes(t.status.state));
  assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED, `final state: ${JSON.stringify(done.status)}`);
  const num = artifactData(done, 'number');
  assert.equal(num?.id, s.number.id, `number artifact: ${JSON.stringify(done.artifacts)}`);
  assert.equal(num.status, 'active');
  assert.ok(num.paidThrough, 'the month is paid through a date');
  const listed = dataOf((await send('list_numbers', {})).parts);
  assert.ok(listed.numbers.some((n) => n.id === s.number.id && n.status === 'active'), `list_numbers: ${JSON.stringify(listed)}`);
  await assert.rejects(s.client.cancelTask({ tenant: '', id: s.numberTask.id, metadata: undefined }, auth()),
    (err) => err.envelopeCode === -32002 || assert.fail(`cancel an active number: ${err}`));
  s.activeNumber = num;
});

test('number bought over A2A: a fax delivered to it is read as text through read_inbox_fax', async (t) => {
  assert.ok(s.activeNumber, 'no active number from the previous test');
  const refused = await rpc('SendMessage', { message: userMessage([skillPart('list_inbox', {})]) }, { token: s.token });
  assert.ok(refused.status === 403 || refused.body?.error, `list_inbox without inbox:read: ${refused.status} ${JSON.stringify(refused.body)}`);
  assert.ok(JSON.stringify(refused.body).includes('inbox:read') || (refused.headers.get('www-authenticate') ?? '').includes('inbox:read'), 'the refusal names inbox:read');
  // The owner authorizes the client again, adding inbox:read (the grant is
  // the client's: the later tests use this token).
  s.token = await a2aToken(s.oauthClient, { scope: `${FULL} inbox:read` });
  const inboxToken = s.token;
  const key = await testAPIKey('conformance a2a inbox');
  const sent = await simulateInbound(key, s.activeNumber.number, minimalPDF(2));
  const fax = await until(`received fax ${sent.id}`, async () => dataOf((await send('read_inbox_fax', { id: sent.id }, inboxToken)).parts),
    (f) => f?.status !== 'receiving');
  assert.equal(fax.status, 'received', `read_inbox_fax: ${JSON.stringify(fax)}`);
  assert.equal(fax.to, s.activeNumber.number);
  assert.equal(fax.from, '+13125550100');
  assert.equal(fax.pages, 2);
  t.diagnostic(`textStatus ${fax.textStatus}, textMethod ${fax.textMethod}, textNote ${fax.textNote ?? ''}`);
  assert.equal(fax.textStatus, 'extracted', `textStatus: ${JSON.stringify(fax)}`);
  assert.match(fax.text, /faxhub test page 1/);
  assert.match(fax.text, /faxhub test page 2/);
  assert.ok(fax.downloadUrl && fax.downloadExpiresAt, `a download link: ${JSON.stringify(fax)}`);
  for (const k of ['bytes', 'document', 'contentBase64']) assert.ok(!(k in fax) || typeof fax[k] !== 'string', `no document in the answer (${k})`);
  const pdf = await fetch(fax.downloadUrl);
  assert.equal(pdf.status, 200, `download: ${pdf.status}`);
  assert.match(Buffer.from(await pdf.arrayBuffer()).subarray(0, 5).toString('latin1'), /^%PDF-/);
  const listed = dataOf((await send('list_inbox', { numberId: s.activeNumber.id }, inboxToken)).parts);
  assert.ok(listed.faxes.some((f) => f.id === sent.id), `list_inbox: ${JSON.stringify(listed)}`);
});

test('CancelTask on an unpaid number task: CANCELED, and the number can be reserved again', async () => {
  assert.ok(s.client, 'no client');
  const found = dataOf((await send('search_numbers', { areaCode: '202', limit: 1 })).parts);
  const number = found.numbers[0].number;
  const task = await send('buy_number', { number });
  assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const canceled = await s.client.cancelTask({ tenant: '', id: task.id, metadata: undefined }, auth());
  assert.equal(canceled.status.state, TaskState.TASK_STATE_CANCELED);
  const again = await send('buy_number', { number });
  assert.equal(again.status.state, TaskState.TASK_STATE_INPUT_REQUIRED, 'the reservation was given back');
  await s.client.cancelTask({ tenant: '', id: again.id, metadata: undefined }, auth());
});
