package receipts_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/oauth/receipts"
)

func claims() faxes.Receipt {
	return faxes.Receipt{Issuer: "https://faxhub.example/api/auth", Subject: "fax_1", IssuedAt: 2, ID: "jti_1", To: "+12125550100",
		Pages: 1, PagesSent: 1, DocumentSHA256: strings.Repeat("00", 32), Outcome: "delivered", QueuedAt: 1, CompletedAt: 2, Mode: "live"}
}

// sign makes a JWS over claims with a fresh Ed25519 key (or an HMAC key
// for alg HS256) and returns it with a JWKS holding the key.
func sign(t *testing.T, alg jose.SignatureAlgorithm, typ, kid string) (string, jose.JSONWebKeySet) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	var key any = priv
	if alg == jose.HS256 {
		key = make([]byte, 32)
	}
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(typ))
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims())
	obj, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	jws, _ := obj.CompactSerialize()
	return jws, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA", Use: "sig"}}}
}

// TestVerifyHeader: only EdDSA, the receipt typ and a kid pass.
func TestVerifyHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		alg  jose.SignatureAlgorithm
		typ  string
		kid  string
		want error
	}{
		{"a receipt", jose.EdDSA, faxes.ReceiptType, "k1", nil},
		{"HS256", jose.HS256, faxes.ReceiptType, "k1", receipts.ErrMalformed},
		{"another typ", jose.EdDSA, "JWT", "k1", receipts.ErrMalformed},
		{"no kid", jose.EdDSA, faxes.ReceiptType, "", receipts.ErrMalformed},
		{"unknown kid", jose.EdDSA, faxes.ReceiptType, "k2", receipts.ErrUnknownKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jws, set := sign(t, tc.alg, tc.typ, tc.kid)
			_, err := receipts.Verify(jws, set)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*faxes.Receipt)
		ok   bool
	}{
		{"complete", func(*faxes.Receipt) {}, true},
		{"failed without a hash", func(r *faxes.Receipt) { r.Outcome, r.DocumentSHA256, r.PagesSent = "failed", "", 0 }, true},
		{"no iss", func(r *faxes.Receipt) { r.Issuer = "" }, false},
		{"no iat", func(r *faxes.Receipt) { r.IssuedAt = 0 }, false},
		{"no jti", func(r *faxes.Receipt) { r.ID = "" }, false},
		{"no to", func(r *faxes.Receipt) { r.To = "" }, false},
		{"queued", func(r *faxes.Receipt) { r.Outcome = "queued" }, false},
		{"mode prod", func(r *faxes.Receipt) { r.Mode = "prod" }, false},
		{"no completed_at", func(r *faxes.Receipt) { r.CompletedAt, r.QueuedAt = 0, 0 }, false},
		{"short hash", func(r *faxes.Receipt) { r.DocumentSHA256 = "00" }, false},
		{"negative attempts", func(r *faxes.Receipt) { r.Attempts = -1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := claims()
			tc.mod(&r)
			if err := receipts.Check(r); (err == nil) != tc.ok || err != nil && !errors.Is(err, receipts.ErrClaims) {
				t.Fatalf("Check = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
