// A2A conformance with the a2a-go CLI (github.com/a2aproject/a2a-go/v2
// cmd/a2a v2.4.0, a go tool of this module: `go tool a2a`, run from the
// repository root) against a real `faxhub serve --dev`: discover the card,
// send the data parts of the fax task with a bearer token from the real
// OAuth flow, get the task until COMPLETED after the owner pays, follow one
// with subscribe (server-sent events), cancel, and refusals. Tests run in order and share state.
//
// a2a-go v2.4.0 cannot parse a spec-shaped (ProtoJSON) agent card
// (securityRequirements {"name": {"list": [...]}}: a2aproject/a2a-go#430), so
// `discover` fails against faxhub (baselined in conformance/baseline.yml) and
// the other commands are given the endpoint with --transport jsonrpc, which
// the CLI offers to skip card resolution.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { A2A, BASE } from './lib.mjs';
import { AP2, FAX_TO, SKILLS, a2aClient, a2aToken, artifactData, dataOf, payDraft, until, uploadSample } from './a2a-lib.mjs';

const ROOT = new URL('../..', import.meta.url).pathname;
// The CLI binary run-suites.sh built (FAXHUB_A2A_CLI); `go tool a2a` when
// the suite is run by hand.
const CLI = process.env.FAXHUB_A2A_CLI ? [process.env.FAXHUB_A2A_CLI] : [process.env.GO || 'go', 'tool', 'a2a'];
const REDIRECT = 'http://127.0.0.1:53684/a2a-cli';
const s = {};

// a2a runs `go tool a2a args…` and resolves {code, stdout, stderr}.
function a2a(...args) {
  return new Promise((resolve) => {
    execFile(CLI[0], [...CLI.slice(1), ...args], { cwd: ROOT, timeout: 90000, maxBuffer: 8 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr });
    });
  });
}
// a2aStream runs `go tool a2a args…` whose output is a stream of events;
// onEvents is called with the events printed so far each time more
// arrive (the CLI prints each as it comes). Resolves {code, stdout, stderr}.
function a2aStream(onEvents, ...args) {
  return new Promise((resolve) => {
    const p = spawn(CLI[0], [...CLI.slice(1), ...args], { cwd: ROOT, timeout: 90000 });
    let stdout = '', stderr = '', acting = Promise.resolve();
    p.stdout.on('data', (b) => { stdout += b; const evs = jsonSeq(stdout); acting = acting.then(() => onEvents(evs)); });
    p.stderr.on('data', (b) => { stderr += b; });
    p.on('close', async (code) => { await acting; resolve({ code, stdout, stderr }); });
  });
}
async function a2aJSON(...args) {
  const r = await a2a(...args, '-o', 'json');
  assert.equal(r.code, 0, `a2a ${args.join(' ')}: exit ${r.code}\n${r.stderr}${r.stdout}`);
  return JSON.parse(r.stdout);
}
const parts = (skill, args = {}) => JSON.stringify([{ data: { skill, arguments: args } }]);
const JSONRPC = ['--transport', 'jsonrpc'];
const sendSkill = (skill, args, ...extra) => a2aJSON('send', A2A, ...JSONRPC, '--auth', `Bearer ${s.token}`, '--parts', parts(skill, args), ...extra);

async function newFaxTask() {
  const up = await sendSkill('create_upload', { contentType: 'application/pdf', fileName: 'sample-letter.pdf' });
  const u = dataOf(up.parts);
  assert.ok(u?.uploadToken, `create_upload: ${JSON.stringify(up)}`);
  await uploadSample(u);
  const task = await sendSkill('create_fax', { to: FAX_TO, uploadToken: u.uploadToken });
  assert.equal(task.status?.state, 'TASK_STATE_INPUT_REQUIRED', `create_fax: ${JSON.stringify(task)}`);
  return task;
}

test('go tool a2a runs, and an access token for /a2a by OAuth', async () => {
  const help = await a2a('--help');
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /discover/);
  s.token = await a2aToken(await a2aClient('Conformance a2a-go CLI', REDIRECT), { scope: 'fax:draft fax:read credits:read credits:checkout' });
});

test('discover -o json: the card with the JSON-RPC 1.0 interface and the skills', async () => {
  const card = await a2aJSON('discover', BASE);
  const ifaces = card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`);
  assert.ok(ifaces.includes(`JSONRPC 1.0 ${A2A}`), `supportedInterfaces: ${ifaces}`);
  const ids = card.skills.map((k) => k.id);
  for (const id of SKILLS) assert.ok(ids.includes(id), `skill ${id} missing from ${ids}`);
});

test('send create_upload and create_fax (data parts, --auth Bearer): INPUT_REQUIRED with a checkoutUrl', async () => {
  assert.ok(s.token, 'no token');
  const task = await newFaxTask();
  const draft = artifactData(task, 'fax-draft');
  assert.ok(draft?.checkoutUrl, `fax-draft artifact: ${JSON.stringify(task.artifacts)}`);
  s.task = task;
  s.draft = draft;
});

test('get task until COMPLETED after the owner pays', async () => {
  assert.ok(s.task, 'no task from the previous test');
  await payDraft(s.draft.checkoutUrl);
  const done = await until(`task ${s.task.id} COMPLETED`, () => a2aJSON('get', 'task', A2A, s.task.id, ...JSONRPC, '--auth', `Bearer ${s.token}`),
    (t) => ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'].includes(t.status?.state), { tries: 60, every: 250 });
  assert.equal(done.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(done.status));
  assert.equal(artifactData(done, 'fax')?.status, 'delivered', JSON.stringify(done.artifacts));
});

// jsonSeq splits the CLI's -o json output of a stream (one JSON object per
// event, indented) into the objects.
function jsonSeq(text) {
  const out = [];
  let depth = 0, start = -1, inString = false, escaped = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') { if (depth++ === 0) start = i; }
    else if (c === '}' && --depth === 0) out.push(JSON.parse(text.slice(start, i + 1)));
  }
  return out;
}

test('subscribe (SubscribeToTask, server-sent events) follows a fax task to COMPLETED as the owner pays; a final task answers itself and the stream ends', async (t) => {
  const task = await newFaxTask();
  // The owner pays once the CLI has printed the task: the rest arrives
  // over the open stream.
  let paid = false;
  const r = await a2aStream(async (evs) => {
    if (evs.length > 0 && !paid) {
      paid = true;
      await payDraft(artifactData(task, 'fax-draft').checkoutUrl);
    }
  }, 'subscribe', A2A, task.id, ...JSONRPC, '--auth', `Bearer ${s.token}`, '-o', 'json');
  assert.equal(r.code, 0, `subscribe: exit ${r.code}\n${r.stderr}${r.stdout}`);
  const events = jsonSeq(r.stdout);
  t.diagnostic(`events: ${events.map((e) => Object.keys(e)[0]).join(', ')}`);
  assert.ok(events[0]?.task, `the first event is the task: ${r.stdout.slice(0, 500)}`);
  assert.equal(events[0].task.id, task.id);
  assert.equal(events[0].task.status.state, 'TASK_STATE_INPUT_REQUIRED');
  assert.ok(events.length > 1, 'updates followed the task');
  const last = events[events.length - 1];
  const state = last.statusUpdate?.status?.state ?? last.task?.status?.state;
  assert.equal(state, 'TASK_STATE_COMPLETED', `the stream ends COMPLETED: ${JSON.stringify(last).slice(0, 500)}`);

  const again = await a2a('subscribe', A2A, task.id, ...JSONRPC, '--auth', `Bearer ${s.token}`, '-o', 'json');
  assert.equal(again.code, 0, again.stderr);
  const final = jsonSeq(again.stdout);
  assert.equal(final.length, 1, again.stdout.slice(0, 500));
  assert.equal(final[0].task?.status?.state, 'TASK_STATE_COMPLETED');
  assert.equal(artifactData(final[0].task, 'fax')?.status, 'delivered');
});

test('cancel an unpaid fax task: CANCELED', async () => {
  const task = await newFaxTask();
  const canceled = await a2aJSON('cancel', A2A, task.id, ...JSONRPC, '--auth', `Bearer ${s.token}`);
  assert.equal(canceled.status.state, 'TASK_STATE_CANCELED', JSON.stringify(canceled));
});

test('buy_credits with --svc-param A2A-Extensions (AP2): INPUT_REQUIRED with the CartMandate', async () => {
  const task = await sendSkill('buy_credits', { packId: 'pack_10' }, '--svc-param', `A2A-Extensions=${AP2}`);
  assert.equal(task.status?.state, 'TASK_STATE_INPUT_REQUIRED', JSON.stringify(task));
  const cart = (task.artifacts ?? []).map((a) => dataOf(a.parts)).find((d) => d?.['ap2.mandates.CartMandate']);
  assert.ok(cart?.['ap2.mandates.CartMandate']?.merchant_authorization, `CartMandate artifact: ${JSON.stringify(task.artifacts)}`);
});

test('refused: free text, and a bad token', async () => {
  const text = await a2a('send', A2A, 'please fax my letter', ...JSONRPC, '--auth', `Bearer ${s.token}`);
  assert.notEqual(text.code, 0, `free text was accepted: ${text.stdout}`);
  assert.match(text.stderr, /skill/i, `the CLI shows the server's explanation: ${text.stderr}`);
  const bad = await a2a('send', A2A, ...JSONRPC, '--auth', 'Bearer fxo_not_a_token', '--parts', parts('get_credits'));
  assert.notEqual(bad.code, 0, `a bad token was accepted: ${bad.stdout}`);
  assert.match(bad.stderr, /401|unauthenticated|unauthorized/i, bad.stderr);
});
