// Delivery receipts, verified independently of faxhub with jose: the
// receipt JWS checks out against faxhub's JWKS (EdDSA only, typ
// fax-receipt+jwt, the issuer), and the same receipt with one byte of its
// claims changed does not. Runs standalone, TAP with --test-reporter=tap:
//
//   FAXHUB_RECEIPT=receipt.jws FAXHUB_RECEIPT_JWKS=jwks.json \
//     node --test-reporter=tap conformance/node/receipt.mjs
//
// FAXHUB_RECEIPT is the compact JWS or a file holding it; FAXHUB_RECEIPT_JWKS
// a JWKS URL (http(s)://…, fetched with createRemoteJWKSet) or a JWKS file
// (createLocalJWKSet); FAXHUB_RECEIPT_ISSUER, if set, the issuer the receipt
// must name. The Go test oauth.TestReceiptVerifiesWithNodeJose runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as jose from 'jose';

function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (see the top of receipt.mjs)`);
  return v;
}

const raw = env('FAXHUB_RECEIPT');
const receipt = (existsSync(raw) ? readFileSync(raw, 'utf8') : raw).trim();
const jwksSource = env('FAXHUB_RECEIPT_JWKS');
const issuer = process.env.FAXHUB_RECEIPT_ISSUER || undefined;
const keys = /^https?:\/\//.test(jwksSource)
  ? jose.createRemoteJWKSet(new URL(jwksSource))
  : jose.createLocalJWKSet(JSON.parse(readFileSync(jwksSource, 'utf8')));

// The verification a relying party does: EdDSA only, the receipt typ, the
// issuer when it knows which one it trusts.
const verify = (jws) => jose.jwtVerify(jws, keys, { algorithms: ['EdDSA'], typ: 'fax-receipt+jwt', issuer });

test('the receipt verifies with jose against the JWKS', async () => {
  const { payload, protectedHeader } = await verify(receipt);
  assert.equal(protectedHeader.alg, 'EdDSA');
  assert.equal(protectedHeader.typ, 'fax-receipt+jwt');
  assert.ok(protectedHeader.kid, 'the header names its key');
  for (const claim of ['iss', 'sub', 'iat', 'jti', 'to', 'outcome', 'mode', 'completed_at']) {
    assert.ok(payload[claim] !== undefined && payload[claim] !== '', `claim ${claim} is present`);
  }
  assert.match(payload.sub, /^fax_/, 'sub is the fax id');
  if (payload.document_sha256 !== undefined) assert.match(payload.document_sha256, /^[0-9a-f]{64}$/);
});

test('a receipt with one byte of its claims changed fails', async () => {
  const [h, p, s] = receipt.split('.');
  const claims = Buffer.from(p, 'base64url');
  claims[Math.floor(claims.length / 2)] ^= 0x01;
  const changed = [h, claims.toString('base64url'), s].join('.');
  await assert.rejects(verify(changed), (err) => err.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
});

test('a receipt with one byte of its signature changed fails', async () => {
  const [h, p, s] = receipt.split('.');
  const sig = Buffer.from(s, 'base64url');
  sig[0] ^= 0x01;
  await assert.rejects(verify([h, p, sig.toString('base64url')].join('.')), (err) => err.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
});

test('the receipt is refused as another type of token', async () => {
  await assert.rejects(jose.jwtVerify(receipt, keys, { algorithms: ['EdDSA'], typ: 'oauth-id-jag+jwt' }),
    (err) => err.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && err.claim === 'typ');
});
