// MCP conformance: faxhub's MCP server (/mcp) driven by the official MCP
// TypeScript SDKs — @modelcontextprotocol/sdk 1.32.2 (protocol 2025-11-25)
// and @modelcontextprotocol/client 2.4.0 (2026-07-28) — against a real
// `faxhub serve --dev`. Each SDK runs the same journey: discovery without a
// token, the 401 challenge, protected resource metadata, authorization
// server metadata, the full OAuth flow done by the SDK's own OAuth client
// provider interface (DCR, PKCE, resource; the owner's consent given in the
// console), tools/list and tool calls over the SDK's Streamable HTTP client
// transport. Tests run in order and share state per SDK.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as v1client from '@modelcontextprotocol/sdk/client/index.js';
import * as v1http from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as v1auth from '@modelcontextprotocol/sdk/client/auth.js';
import * as v2 from '@modelcontextprotocol/client';
import { BASE, ISSUER, MCP, payNumber, simulateInbound, testAPIKey, until } from './lib.mjs';
import { ConsoleOAuthProvider, minimalPDF, TOOLS, FAX_TO } from './mcp-lib.mjs';

const SDKS = [
  {
    label: 'sdk 1.32.2', clientName: 'Conformance MCP sdk 1.32.2', redirect: 'http://127.0.0.1:53682/mcp-sdk1',
    Client: v1client.Client, Transport: v1http.StreamableHTTPClientTransport, UnauthorizedError: v1auth.UnauthorizedError,
    extractWWWAuthenticateParams: v1auth.extractWWWAuthenticateParams,
    discoverPRM: v1auth.discoverOAuthProtectedResourceMetadata, discoverAS: v1auth.discoverAuthorizationServerMetadata,
    finishAuth: (transport, cb) => transport.finishAuth(cb.searchParams.get('code')), // 1.x does not check iss itself
    protocol: '2025-11-25', clientOptions: {},
  },
  {
    label: 'client 2.4.0', clientName: 'Conformance MCP client 2.4.0', redirect: 'http://127.0.0.1:53682/mcp-client2',
    Client: v2.Client, Transport: v2.StreamableHTTPClientTransport, UnauthorizedError: v2.UnauthorizedError,
    extractWWWAuthenticateParams: v2.extractWWWAuthenticateParams,
    discoverPRM: v2.discoverOAuthProtectedResourceMetadata, discoverAS: v2.discoverAuthorizationServerMetadata,
    finishAuth: (transport, cb) => transport.finishAuth(cb.searchParams), // 2.x checks iss (RFC 9207) itself
    // Pinned: connect probes with server/discover and never falls back to initialize.
    protocol: '2026-07-28', clientOptions: { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  },
];

async function rpc(body, headers = {}) {
  return fetch(MCP, {
    method: 'POST', body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  });
}

test('server/discover is answered without a token', async (t) => {
  // The request envelope of protocol 2026-07-28 (SEP-2575), with the meta
  // keys @modelcontextprotocol/client 2.4.0 exports.
  const _meta = {
    [v2.PROTOCOL_VERSION_META_KEY]: '2026-07-28',
    [v2.CLIENT_INFO_META_KEY]: { name: 'faxhub-conformance', version: '1.0.0' },
    [v2.CLIENT_CAPABILITIES_META_KEY]: {},
  };
  const res = await rpc({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' });
  const body = await res.json();
  assert.equal(res.status, 200, `server/discover: ${res.status} ${JSON.stringify(body)}`);
  assert.ok(body.result, `server/discover: ${JSON.stringify(body)}`);
  t.diagnostic(`server/discover: ${JSON.stringify(body.result).slice(0, 300)}`);
  assert.ok(body.result.capabilities?.tools, `discover result: ${JSON.stringify(body.result)}`);
  assert.ok(body.result.supportedVersions?.includes('2026-07-28'), `supportedVersions: ${body.result.supportedVersions}`);
  assert.ok(body.result.supportedVersions.includes('2025-11-25'), `supportedVersions: ${body.result.supportedVersions}`);
});

for (const sdk of SDKS) {
  const s = {};

  test(`${sdk.label}: initialize without a token is 401 with a Bearer resource_metadata challenge`, async () => {
    const res = await rpc({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'conformance', version: '0' } } });
    await res.body?.cancel();
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer /);
    const { resourceMetadataUrl, scope } = sdk.extractWWWAuthenticateParams(res);
    assert.equal(String(resourceMetadataUrl), `${BASE}/.well-known/oauth-protected-resource/mcp`);
    assert.ok(scope?.split(' ').includes('credits:read'), `challenge scope: ${scope}`);
    s.prmURL = resourceMetadataUrl;
  });

  test(`${sdk.label}: protected resource metadata (RFC 9728) from the challenge`, async () => {
    const prm = await sdk.discoverPRM(MCP, { resourceMetadataUrl: s.prmURL });
    assert.equal(prm.resource, MCP);
    assert.deepEqual(prm.authorization_servers, [ISSUER]);
    s.prm = prm;
  });

  test(`${sdk.label}: authorization server metadata (RFC 8414) from the PRM's issuer`, async () => {
    const as = await sdk.discoverAS(s.prm.authorization_servers[0]);
    assert.ok(as, 'no authorization server metadata');
    assert.equal(as.issuer, ISSUER);
    assert.ok(as.code_challenge_methods_supported?.includes('S256'));
    assert.ok(as.registration_endpoint && as.token_endpoint && as.authorization_endpoint);
  });

  test(`${sdk.label}: full OAuth by the SDK's OAuthClientProvider (DCR, PKCE S256, resource, consent in the console)`, async () => {
    const provider = new ConsoleOAuthProvider(sdk.clientName, sdk.redirect);
    // The default connect (initialize) meets the 401 at once; the pinned
    // 2026-07-28 connect of the next test starts with server/discover, which
    // needs no token.
    const client = new sdk.Client({ name: 'faxhub-conformance', version: '1.0.0' });
    const transport = new sdk.Transport(new URL(MCP), { authProvider: provider });
    await assert.rejects(client.connect(transport), (err) => err instanceof sdk.UnauthorizedError || /unauthorized/i.test(String(err)));
    assert.ok(provider.clientInformation()?.client_id, 'the SDK registered no client');
    const u = provider.authorizationURL;
    assert.ok(u, 'the SDK never sent the browser to the authorization endpoint');
    assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(u.searchParams.get('resource'), MCP);
    const cb = provider.callback;
    assert.equal(cb.searchParams.get('iss'), ISSUER);
    assert.equal(cb.searchParams.get('state'), provider.state());
    await sdk.finishAuth(transport, cb);
    const tokens = provider.tokens();
    assert.ok(tokens?.access_token, 'no access token saved');
    assert.equal(tokens.token_type.toLowerCase(), 'bearer');
    await transport.close().catch(() => {});
    s.provider = provider;
    s.token = tokens.access_token;
  });

  test(`${sdk.label}: connects with the token over Streamable HTTP`, async (t) => {
    assert.ok(s.provider, 'no OAuth provider from the previous test');
    s.client = new sdk.Client({ name: 'faxhub-conformance', version: '1.0.0' }, sdk.clientOptions);
    s.transport = new sdk.Transport(new URL(MCP), { authProvider: s.provider });
    await s.client.connect(s.transport);
    const info = s.client.getServerVersion();
    assert.ok(info?.name, `server info: ${JSON.stringify(info)}`);
    assert.ok(s.client.getServerCapabilities()?.tools, 'the server advertises no tools capability');
    t.diagnostic(`negotiated protocol version: ${s.transport.protocolVersion}`);
    assert.equal(s.transport.protocolVersion, sdk.protocol, 'the SDK\'s newest protocol version is negotiated');
  });

  test(`${sdk.label}: tools/list gives every tool an input schema, an output schema and annotations`, async () => {
    assert.ok(s.client, 'not connected');
    const { tools } = await s.client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
    for (const t of tools) {
      assert.equal(t.inputSchema?.type, 'object', `${t.name} inputSchema`);
      assert.equal(t.outputSchema?.type, 'object', `${t.name} outputSchema`);
      assert.ok(t.annotations && typeof t.annotations === 'object', `${t.name} has no annotations`);
      assert.ok(t.description, `${t.name} has no description`);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.equal(byName.get_credits.annotations.readOnlyHint, true);
    assert.equal(byName.validate_fax.annotations.readOnlyHint, true);
    assert.equal(byName.send_fax.annotations.destructiveHint, true);
    assert.equal(byName.read_inbox_fax.annotations.readOnlyHint, true);
    assert.equal(byName.search_numbers.annotations.readOnlyHint, true);
    assert.ok(byName.buy_number.description.includes('checkoutUrl'), 'buy_number says the owner pays at checkoutUrl');
    assert.equal(byName.read_inbox_fax.inputSchema.required?.[0], 'id');
  });

  test(`${sdk.label}: get_credits returns structured content`, async () => {
    assert.ok(s.client, 'not connected');
    const res = await s.client.callTool({ name: 'get_credits', arguments: {} });
    assert.ok(!res.isError, `get_credits: ${JSON.stringify(res.content)}`);
    assert.ok(res.structuredContent && 'balance' in res.structuredContent, `structuredContent: ${JSON.stringify(res.structuredContent)}`);
  });

  // One SDK buys a number (the owner pays at its console page), has the
  // simulator deliver a fax to it and reads the fax's text; the other lists.
  test(`${sdk.label}: the number and inbox tools${sdk === SDKS[0] ? ': buy_number, the owner pays, a received fax read with read_inbox_fax' : ''}`, async (t) => {
    assert.ok(s.client, 'not connected');
    const call = async (name, args) => {
      const res = await s.client.callTool({ name, arguments: args });
      assert.ok(!res.isError, `${name}: ${JSON.stringify(res.content)}`);
      return res.structuredContent;
    };
    const found = await call('search_numbers', { areaCode: '415', limit: 2 });
    assert.ok(found.numbers.length > 0 && found.numbers[0].monthlyPrice, `search_numbers: ${JSON.stringify(found)}`);
    assert.ok(Array.isArray((await call('list_numbers', {})).numbers));
    assert.ok(Array.isArray((await call('list_inbox', {})).faxes));
    const unknown = await s.client.callTool({ name: 'read_inbox_fax', arguments: { id: 'inb_doesnotexist' } });
    assert.equal(unknown.isError, true, 'an unknown received fax is a tool error');
    if (sdk !== SDKS[0]) return;

    const n = await call('buy_number', { number: found.numbers[0].number });
    assert.equal(n.status, 'awaiting_payment');
    assert.equal(n.checkoutUrl, `${BASE}/console/numbers/${n.id}?mode=test`);
    await payNumber(n.checkoutUrl);
    await until(`number ${n.id} active`, () => call('list_numbers', {}), (l) => l.numbers.some((x) => x.id === n.id && x.status === 'active'));
    const key = await testAPIKey('conformance mcp inbox');
    const sent = await simulateInbound(key, n.number, minimalPDF(2));
    const fax = await until(`received fax ${sent.id}`, () => call('read_inbox_fax', { id: sent.id }), (f) => f.status !== 'receiving');
    assert.equal(fax.status, 'received', `read_inbox_fax: ${JSON.stringify(fax)}`);
    assert.equal(fax.to, n.number);
    assert.equal(fax.pages, 2);
    t.diagnostic(`textStatus ${fax.textStatus}, textMethod ${fax.textMethod}, textNote ${fax.textNote ?? ''}`);
    assert.equal(fax.textStatus, 'extracted', `textStatus: ${JSON.stringify(fax)}`);
    assert.match(fax.text, /faxhub test page 1/);
    assert.ok(fax.downloadUrl, 'a download link, never the bytes');
    const pdf = await fetch(fax.downloadUrl);
    assert.equal(pdf.status, 200, `download: ${pdf.status}`);
    const listed = await call('list_inbox', { numberId: n.id });
    assert.ok(listed.faxes.some((f) => f.id === sent.id), `list_inbox: ${JSON.stringify(listed)}`);
  });

  test(`${sdk.label}: create_upload with an inline PDF, then validate_fax`, async () => {
    assert.ok(s.client, 'not connected');
    const up = await s.client.callTool({ name: 'create_upload', arguments: { contentType: 'application/pdf', fileName: 'conformance.pdf', contentBase64: minimalPDF(2).toString('base64') } });
    assert.ok(!up.isError, `create_upload: ${JSON.stringify(up.content)}`);
    assert.equal(up.structuredContent.uploaded, true);
    assert.equal(up.structuredContent.pages, 2);
    assert.ok(up.structuredContent.uploadToken);
    const q = await s.client.callTool({ name: 'validate_fax', arguments: { to: FAX_TO, pages: up.structuredContent.pages } });
    assert.ok(!q.isError, `validate_fax: ${JSON.stringify(q.content)}`);
    assert.equal(q.structuredContent.to, FAX_TO);
    assert.equal(q.structuredContent.pages, 2);
    assert.ok(q.structuredContent.amount, `quote: ${JSON.stringify(q.structuredContent)}`);
    const bad = await s.client.callTool({ name: 'validate_fax', arguments: { to: 'nope' } });
    assert.equal(bad.isError, true, 'an invalid destination is a tool error');
    await s.client.close();
  });
}
