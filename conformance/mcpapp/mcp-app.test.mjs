// The MCP App in a chat host: faxhub's ui:// app (protocols/mcp/app),
// rendered by a test host page (served here, not by faxhub) with
// @modelcontextprotocol/ext-apps' AppBridge in headless Chromium, under the
// CSP the resource declares. The host's tool calls go to a real
// `faxhub serve` through the TypeScript MCP client (@modelcontextprotocol/client
// 2.4.0) holding the chat app's OAuth token. Through the app a person
// uploads a PDF, sees the page previews and the quote, sends, and follows
// the fax to delivered with its report and receipt links. Screenshots:
// conformance/out/mcp-app-NN-*.png. Tests run in order and share state.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import * as v2 from '@modelcontextprotocol/client';
import { BASE, MCP, OUT, env, payTestCard, until } from '../node/lib.mjs';
import { FAX_TO, minimalPDF, oauthToken } from '../node/mcp-lib.mjs';
import { build } from '../../protocols/mcp/app/build.mjs';

const CHROMIUM = env('FAXHUB_CHROMIUM');
const HERE = new URL('.', import.meta.url).pathname;
const APP_HTML = new URL('../../protocols/mcp/app/fax-app.html', import.meta.url).pathname;
const esbuild = createRequire(import.meta.url)('esbuild');

const s = {};
let browser, page, hostServer, hostOrigin;
let shot = 0;

async function screenshot(name) {
  shot++;
  await page.screenshot({ path: path.join(OUT, `mcp-app-${String(shot).padStart(2, '0')}-${name}.png`), fullPage: true });
}

// The host page and its bundled script, on a loopback origin of its own.
async function startHost() {
  const js = (await esbuild.build({
    entryPoints: [path.join(HERE, 'host.js')], bundle: true, write: false, format: 'iife', platform: 'browser', logLevel: 'error',
  })).outputFiles[0].text;
  const html = fs.readFileSync(path.join(HERE, 'host.html'));
  hostServer = http.createServer((req, res) => {
    if (req.url === '/host.js') { res.writeHead(200, { 'content-type': 'text/javascript' }); res.end(js); return; }
    if (req.url === '/favicon.ico') { res.writeHead(204); res.end(); return; }
    if (req.url === '/') { res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }); res.end(html); return; }
    res.writeHead(404); res.end();
  });
  await new Promise((r) => hostServer.listen(0, '127.0.0.1', r));
  hostOrigin = `http://127.0.0.1:${hostServer.address().port}`;
}

async function tool(name, args) {
  const r = await s.client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name}: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
}

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM} (make deps installs Debian's chromium)`);
  for (const f of fs.readdirSync(OUT)) if (/^mcp-app-.*\.png$/.test(f)) fs.rmSync(path.join(OUT, f));
  await startHost();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, timeout: 60000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
});

after(async () => {
  await s.client?.close().catch(() => {});
  await browser?.close();
  hostServer?.close();
});

test('the committed fax-app.html is the build of its source (protocols/mcp/app/build.mjs)', async () => {
  const built = await build();
  const committed = fs.readFileSync(APP_HTML, 'utf8');
  assert.ok(built === committed, `protocols/mcp/app/fax-app.html (${committed.length} bytes) differs from its build (${built.length} bytes): run node protocols/mcp/app/build.mjs and commit`);
});

test('the chat app connects with its OAuth token and buys test credits', async () => {
  const token = await oauthToken('Conformance MCP App host', 'http://127.0.0.1:53684/mcp-app');
  s.client = new v2.Client({ name: 'faxhub-test-host', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await s.client.connect(new v2.StreamableHTTPClientTransport(new URL(MCP), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  s.token = token;
  const co = await tool('create_credit_checkout', { packId: 'pack_10' });
  await payTestCard(co.checkoutUrl);
  const credits = await tool('get_credits', {});
  assert.ok(credits.balanceCents > 0, `credits: ${JSON.stringify(credits)}`);
});

test('the upload tool links the app; the resource is the app with its CSP', async () => {
  const { tools } = await s.client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const uri = byName.create_upload?._meta?.ui?.resourceUri;
  assert.match(uri ?? '', /^ui:\/\//, `create_upload _meta: ${JSON.stringify(byName.create_upload?._meta)}`);
  assert.equal(byName.create_fax_draft._meta?.ui?.resourceUri, uri);
  const { contents } = await s.client.readResource({ uri });
  assert.equal(contents.length, 1);
  assert.equal(contents[0].mimeType, 'text/html;profile=mcp-app');
  assert.deepEqual(contents[0]._meta?.ui?.csp?.connectDomains, [BASE]);
  assert.deepEqual(contents[0]._meta?.ui?.csp?.resourceDomains, [BASE]);
  assert.ok(!contents[0].text.includes(s.token), 'the page holds no token');
  s.app = contents[0];
  // What a host shows next to: create_upload's result (uploadPageUrl is
  // the fallback for hosts without Apps).
  s.upload = await s.client.callTool({ name: 'create_upload', arguments: { fileName: 'letter.pdf' } });
  assert.match(s.upload.structuredContent.uploadPageUrl, /\/upload#/);
});

// openHost opens the test host in a new tab whose tool calls go through
// client, and shows the app there next to toolResult.
async function openHost(client, toolResult) {
  const p = await browser.newPage({ viewport: { width: 900, height: 1000 } });
  p.setDefaultTimeout(30000);
  p.on('request', (r) => s.requests.push(r.url()));
  p.on('console', (m) => { if (m.type() === 'error') s.consoleErrors.push(m.text()); });
  // The host's side of tools/call: the MCP client (in Node, with the
  // token); a refusal by faxhub (HTTP 403 insufficient_scope) reaches the
  // app as a failed call.
  await p.exposeFunction('hostCallTool', async (params) => client.callTool(params));
  await p.goto(hostOrigin + '/');
  await p.evaluate(({ html, meta, toolResult }) => window.showApp({ html, meta, toolResult }),
    { html: s.app.text, meta: s.app._meta, toolResult });
  await p.waitForFunction(() => window.appReady === true);
  return p;
}

test('the host renders the app in a sandboxed frame; the app connects over the bridge', async () => {
  s.requests = [];
  s.consoleErrors = [];
  page = await openHost(s.client, s.upload);
  const app = page.frameLocator('#app');
  await app.locator('h1').waitFor();
  assert.equal(await app.locator('h1').textContent(), 'Send a fax');
  await screenshot('app');
});

test('upload a PDF through the app (PUT to the upload URL, with progress)', async () => {
  const app = page.frameLocator('#app');
  await app.locator('#file').setInputFiles({ name: 'letter.pdf', mimeType: 'application/pdf', buffer: minimalPDF(2) });
  await app.locator('#file-state[data-uploaded="true"]').waitFor();
  assert.match(await app.locator('#file-state').textContent(), /letter\.pdf uploaded \(2 pages\)/);
  assert.equal(await app.locator('#progress').getAttribute('value'), '100');
  assert.ok(s.requests.some((u) => u.startsWith(`${BASE}/api/v1/uploads/`)), `the app PUT the file to faxhub: ${s.requests.join(' ')}`);
  await screenshot('uploaded');
});

test('destination and cover page: the previews and the quote', async () => {
  const app = page.frameLocator('#app');
  await app.locator('#to').fill(FAX_TO);
  await app.locator('#cover').check();
  await app.locator('#recipientName').fill('Dr. Ada Lovelace');
  await app.locator('#subject').fill('The letter');
  await app.locator('#preview').click();
  await app.locator('#pages img').nth(2).waitFor();
  assert.equal(await app.locator('#pages img').count(), 3, 'a cover page and two pages');
  // The images load under the declared CSP (resourceDomains) from the
  // sandboxed frame.
  await page.waitForFunction(() => {
    const doc = document.querySelector('#app').contentDocument;
    return doc === null; // opaque origin: the host cannot read the frame
  });
  // Each page is rendered when first asked for: wait for all three.
  await until('the page images', () => app.locator('#pages img').evaluateAll((imgs) => imgs.map((i) => i.complete && i.naturalWidth > 0)),
    (loaded) => loaded.length === 3 && loaded.every(Boolean), { tries: 300 });
  const quote = await app.locator('#quote').textContent();
  assert.match(quote, new RegExp(`^3 pages to \\${FAX_TO}: \\$\\d+\\.\\d{2}`), `quote: ${quote}`);
  await screenshot('preview');
});

test('send, and follow the fax until delivered, with its report and receipt links', async () => {
  const app = page.frameLocator('#app');
  await app.locator('#send').click();
  await app.locator('#status[data-status="delivered"]').waitFor({ timeout: 60000 });
  await app.locator('a[data-tool="get_fax_receipt"]').waitFor();
  const tools = await page.evaluate(() => window.toolCalls);
  for (const t of ['create_upload', 'preview_fax', 'create_fax_draft', 'send_fax', 'get_fax_status', 'get_fax_report', 'get_fax_receipt']) {
    assert.ok(tools.includes(t), `the app called ${t} through the bridge: ${tools.join(', ')}`);
  }
  const status = await app.locator('#status').textContent();
  const faxId = status.match(/Fax (\S+) to/)?.[1];
  const fax = await tool('get_fax_status', { faxId });
  assert.equal(fax.status, 'delivered');
  assert.equal(fax.pages, 2);
  assert.equal(fax.coverPage?.recipientName, 'Dr. Ada Lovelace', `the cover page: ${JSON.stringify(fax)}`);
  await app.locator('a[data-tool="get_fax_report"]').click();
  await page.waitForFunction(() => window.openedLinks.length > 0);
  const [report] = await page.evaluate(() => window.openedLinks);
  assert.ok(report.startsWith(`${BASE}/api/v1/fax-reports/`), `report link: ${report}`);
  const r = await fetch(report);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/pdf');
  await screenshot('delivered');
});

test('without fax:send the app shows the owner the approval page and keeps asking; nothing is charged', async () => {
  const token = await oauthToken('Conformance MCP App drafts', 'http://127.0.0.1:53684/mcp-app-drafts', { drop: ['fax:send'] });
  // A 2025-11-25 host: send_fax's URL elicitation is the -32042 error,
  // which this host relays to the app as a failed call (its message names
  // the approval page).
  const client = new v2.Client({ name: 'faxhub-test-host', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
  await client.connect(new v2.StreamableHTTPClientTransport(new URL(MCP), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  try {
    const before = await tool('get_credits', {});
    page = await openHost(client);
    const app = page.frameLocator('#app');
    await app.locator('#file').setInputFiles({ name: 'memo.pdf', mimeType: 'application/pdf', buffer: minimalPDF(1) });
    await app.locator('#file-state[data-uploaded="true"]').waitFor();
    await app.locator('#to').fill(FAX_TO);
    await app.locator('#to').press('Enter'); // Enter previews (no <form> in a sandboxed frame)
    await app.locator('#pages img').first().waitFor();
    await app.locator('#send').click();
    await app.locator('#status[data-status="approval"]').waitFor();
    assert.match(await app.locator('#status').textContent(), /approve/i);
    const href = await app.locator('#approve').getAttribute('href');
    assert.match(href, new RegExp(`^${BASE}/console/approvals/apr_[A-Za-z0-9_-]+$`), `the owner's link: ${href}`);
    await app.locator('#approve').click();
    await page.waitForFunction(() => window.openedLinks.length > 0);
    assert.deepEqual(await page.evaluate(() => window.openedLinks), [href]);
    const after = await tool('get_credits', {});
    assert.equal(after.balanceCents, before.balanceCents, 'nothing charged');
    assert.equal(after.held, before.held, 'nothing held');
    await screenshot('approval-for-owner');
  } finally {
    await page.close().catch(() => {});
    await client.close().catch(() => {});
  }
});

test('the app reached nothing but the host, faxhub and data: URLs, and logged no error', async () => {
  const foreign = s.requests.filter((u) => !u.startsWith(hostOrigin + '/') && !u.startsWith(BASE + '/') && !u.startsWith('data:') && u !== 'about:srcdoc');
  assert.deepEqual(foreign, []);
  assert.deepEqual(s.consoleErrors, []);
});
