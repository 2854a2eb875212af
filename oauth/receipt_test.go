package oauth_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
	"github.com/faxhub/faxhub/oauth/receipts"
)

// testReceipt is the claims of a delivered fax, as the REST endpoint builds
// them (iss, iat and jti left for the signer).
func testReceipt() faxes.Receipt {
	return faxes.Receipt{
		Subject: "fax_01hzyx", To: "+12125550100", From: "+12125550199",
		Pages: 3, PagesSent: 3, DocumentSHA256: strings.Repeat("ab", 32),
		Outcome: "delivered", Resolution: "fine", QueuedAt: 1760000000, CompletedAt: 1760000090,
		Attempts: 1, Provider: "simulated", ProviderRef: "sim_123", RemoteStationID: "+1 212 555 0100", Mode: "test",
	}
}

// flipByte changes one byte of the decoded segment i (0 header, 1 claims,
// 2 signature) of a compact JWS.
func flipByte(t *testing.T, jws string, i int) string {
	t.Helper()
	parts := strings.Split(jws, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	parts[i] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

// TestSignReceipt: a receipt is a compact JWS {alg EdDSA, kid, typ
// fax-receipt+jwt} over the claims, iss the issuer, that verifies with the
// published JWKS; one changed byte anywhere fails; claims faxhub must not
// attest are refused before signing.
func TestSignReceipt(t *testing.T) {
	h := newAgentHarness(t)
	ctx := t.Context()
	jws, err := h.srv.SignReceipt(ctx, testReceipt())
	if err != nil {
		t.Fatal(err)
	}
	obj, err := jose.ParseSignedCompact(jws, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	hd := obj.Signatures[0].Header
	if hd.Algorithm != "EdDSA" || hd.ExtraHeaders["typ"] != faxes.ReceiptType || hd.KeyID == "" {
		t.Fatalf("header = %+v", hd)
	}
	set := h.jwks()
	keys := set.Key(hd.KeyID)
	if len(keys) != 1 || keys[0].Algorithm != "EdDSA" || keys[0].Use != "sig" {
		t.Fatalf("JWKS entry of the receipt key %s = %+v", hd.KeyID, keys)
	}

	got, err := receipts.Verify(jws, set)
	if err != nil {
		t.Fatal(err)
	}
	want := testReceipt()
	want.Issuer, want.IssuedAt, want.ID = h.srv.Issuer(), h.clock.now().Unix(), got.ID
	if got != want || !strings.HasPrefix(got.ID, "jti_") {
		t.Fatalf("verified claims\n got %+v\nwant %+v", got, want)
	}
	// Whitespace around the token (a file with a newline) is fine.
	if _, err := receipts.Verify("\n "+jws+"\n", set); err != nil {
		t.Fatalf("trimmed receipt: %v", err)
	}

	for _, tc := range []struct {
		name string
		jws  string
		want error
	}{
		{"one byte of the claims", flipByte(t, jws, 1), receipts.ErrSignature},
		{"one byte of the signature", flipByte(t, jws, 2), receipts.ErrSignature},
		{"one byte of the header", flipByte(t, jws, 0), nil},
		{"not a JWS", "hello", receipts.ErrMalformed},
		{"empty", " ", receipts.ErrMalformed},
		{"too long", strings.Repeat("a", receipts.MaxTokenBytes+1), receipts.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// nil: any refusal (which one depends on the byte changed).
			if _, err := receipts.Verify(tc.jws, set); err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
	// The receipt keys are not in another issuer's JWKS.
	if _, err := receipts.Verify(jws, jose.JSONWebKeySet{}); !errors.Is(err, receipts.ErrUnknownKey) {
		t.Fatalf("Verify with an empty JWKS = %v", err)
	}

	for _, tc := range []struct {
		name string
		mod  func(*faxes.Receipt)
	}{
		{"another issuer", func(r *faxes.Receipt) { r.Issuer = "https://elsewhere.example/api/auth" }},
		{"no fax id", func(r *faxes.Receipt) { r.Subject = "" }},
		{"an outcome that is not final", func(r *faxes.Receipt) { r.Outcome = "sending" }},
		{"delivered without the document's hash", func(r *faxes.Receipt) { r.DocumentSHA256 = "" }},
		{"an uppercase hash", func(r *faxes.Receipt) { r.DocumentSHA256 = strings.Repeat("AB", 32) }},
		{"more pages sent than faxed", func(r *faxes.Receipt) { r.PagesSent = 4 }},
		{"no mode", func(r *faxes.Receipt) { r.Mode = "" }},
		{"completed before queued", func(r *faxes.Receipt) { r.CompletedAt = r.QueuedAt - 1 }},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			r := testReceipt()
			tc.mod(&r)
			if jws, err := h.srv.SignReceipt(ctx, r); err == nil {
				t.Fatalf("signed %s", jws)
			}
		})
	}
	// A canceled fax that never rendered has no hash to attest.
	r := testReceipt()
	r.Outcome, r.DocumentSHA256, r.Pages, r.PagesSent, r.Attempts = "canceled", "", 0, 0, 0
	if _, err := h.srv.SignReceipt(ctx, r); err != nil {
		t.Fatalf("canceled receipt: %v", err)
	}
}

// TestReceiptKeysOutliveRotation: a rotation gives receipts a new key too,
// and the old receipt key stays in the JWKS, and old receipts verify, ten
// years on, long after the token keys rotated with it left.
func TestReceiptKeysOutliveRotation(t *testing.T) {
	h := newAgentHarness(t)
	ctx := t.Context()
	old, err := h.srv.SignReceipt(ctx, testReceipt())
	if err != nil {
		t.Fatal(err)
	}
	oldKid, err := receipts.Parse(old)
	if err != nil {
		t.Fatal(err)
	}
	_, oldTokenKid := h.anonymousAssertion()
	if oldTokenKid == oldKid.KeyID {
		t.Fatal("receipts and identity assertions share a key")
	}

	rotated, err := h.srv.RotateSigningKeys(ctx)
	if err != nil || len(rotated) != 3 || rotated[2].Purpose != "receipt" || rotated[2].Alg != oauth.AlgEdDSA {
		t.Fatalf("rotate: %+v %v", rotated, err)
	}
	h.clock.add(rotated[2].SignsFrom.Sub(h.clock.now()))
	fresh, err := h.srv.SignReceipt(ctx, testReceipt())
	if err != nil {
		t.Fatal(err)
	}
	if hd, _ := receipts.Parse(fresh); hd.KeyID != rotated[2].KeyID {
		t.Fatalf("receipt signed after the rotation with %s, want the new key %s", hd.KeyID, rotated[2].KeyID)
	}

	h.clock.add(10 * 365 * 24 * time.Hour)
	set := h.jwks()
	if len(set.Key(oldTokenKid)) != 0 {
		t.Fatal("the retired token key is still published ten years on")
	}
	for name, jws := range map[string]string{"old": old, "new": fresh} {
		if _, err := receipts.Verify(jws, set); err != nil {
			t.Fatalf("%s receipt ten years on: %v", name, err)
		}
	}
}

// TestReceiptVerifiesWithNodeJose: conformance/node/receipt.mjs verifies a
// receipt and the JWKS this server publishes with jose, a JOSE library
// that is not ours, and sees a one-byte change fail.
func TestReceiptVerifiesWithNodeJose(t *testing.T) {
	h := newAgentHarness(t)
	jws, err := h.srv.SignReceipt(t.Context(), testReceipt())
	if err != nil {
		t.Fatal(err)
	}
	set, err := json.Marshal(h.jwks())
	if err != nil {
		t.Fatal(err)
	}
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, set, 0o600); err != nil {
		t.Fatal(err)
	}
	// Once with the JWKS file (offline), once with the served JWKS URL.
	for _, src := range []string{jwksFile, h.base + oauth.PathJWKS} {
		testenv.VerifyReceiptWithNodeJose(t, jws, src, h.srv.Issuer())
	}
}
