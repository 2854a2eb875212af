// Package receipts verifies faxhub's signed delivery receipts offline: a
// compact JWS (EdDSA, typ fax-receipt+jwt) over faxes.Receipt, checked
// against a JWKS. It needs no database and no network; the caller brings
// the JWKS (faxhub's, published at {issuer}/jwks) and decides which issuer
// it trusts. The oauth adapter signs receipts with its keyring
// (oauth.Server.SignReceipt) and checks the claims it signs with Check, so
// that faxhub never signs a receipt this package would refuse.
package receipts

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core/faxes"
)

// MaxTokenBytes bounds a receipt: its claims are a few hundred bytes, so
// anything larger is not one of ours.
const MaxTokenBytes = 16 << 10

// Errors Verify wraps, for callers that tell them apart.
var (
	// ErrMalformed: not a compact JWS, or not a receipt (alg, typ, kid).
	ErrMalformed = errors.New("not a faxhub receipt")
	// ErrUnknownKey: the kid is not in the JWKS (or not an Ed25519 signing key).
	ErrUnknownKey = errors.New("receipt signing key not in the JWKS")
	// ErrSignature: the signature does not verify: the receipt was changed
	// or signed by someone else.
	ErrSignature = errors.New("receipt signature does not verify")
	// ErrClaims: the signed claims are missing or wrong.
	ErrClaims = errors.New("receipt claims invalid")
)

// terminal reports whether outcome is one a receipt may state: a terminal
// state of a fax order.
func terminal(outcome string) bool {
	s := faxes.Status(outcome)
	return s.Terminal()
}

// Header is the part of a receipt readable before verification: what a
// verifier needs to find the right JWKS. Nothing in it is trusted.
type Header struct {
	KeyID  string
	Issuer string // the iss claim, unverified
}

// Parse reads a receipt's kid and (unverified) issuer, for finding the
// JWKS to verify it with. token is trimmed of surrounding whitespace.
func Parse(token string) (Header, error) {
	obj, err := parse(token)
	if err != nil {
		return Header{}, err
	}
	var cl struct {
		Iss string `json:"iss"`
	}
	if err := json.Unmarshal(obj.UnsafePayloadWithoutVerification(), &cl); err != nil {
		return Header{}, fmt.Errorf("%w: the payload is not a JSON object", ErrMalformed)
	}
	return Header{KeyID: obj.Signatures[0].Header.KeyID, Issuer: cl.Iss}, nil
}

// Verify checks a receipt against jwks — alg EdDSA only, typ
// fax-receipt+jwt, a kid present in jwks as an Ed25519 key, the signature
// and the required claims (Check) — and returns its claims. It does not
// decide whom to trust: the caller compares Receipt.Issuer with the issuer
// whose JWKS it passed.
func Verify(token string, jwks jose.JSONWebKeySet) (faxes.Receipt, error) {
	obj, err := parse(token)
	if err != nil {
		return faxes.Receipt{}, err
	}
	kid := obj.Signatures[0].Header.KeyID
	pub, ok := findKey(jwks, kid)
	if !ok {
		return faxes.Receipt{}, fmt.Errorf("%w: kid %q", ErrUnknownKey, kid)
	}
	payload, err := obj.Verify(pub)
	if err != nil {
		return faxes.Receipt{}, ErrSignature
	}
	var r faxes.Receipt
	if err := json.Unmarshal(payload, &r); err != nil {
		return faxes.Receipt{}, fmt.Errorf("%w: %v", ErrClaims, err)
	}
	if err := Check(r); err != nil {
		return faxes.Receipt{}, err
	}
	return r, nil
}

// parse reads the compact JWS and checks its header: one signature, alg
// EdDSA (go-jose refuses any other), typ fax-receipt+jwt, a kid.
func parse(token string) (*jose.JSONWebSignature, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, fmt.Errorf("%w: empty", ErrMalformed)
	}
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenBytes)
	}
	obj, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(obj.Signatures) != 1 {
		return nil, fmt.Errorf("%w: %d signatures", ErrMalformed, len(obj.Signatures))
	}
	h := obj.Signatures[0].Header
	if h.Algorithm != string(jose.EdDSA) {
		return nil, fmt.Errorf("%w: alg %q, want EdDSA", ErrMalformed, h.Algorithm)
	}
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != faxes.ReceiptType {
		return nil, fmt.Errorf("%w: typ %q, want %s", ErrMalformed, typ, faxes.ReceiptType)
	}
	if h.KeyID == "" {
		return nil, fmt.Errorf("%w: no kid", ErrMalformed)
	}
	return obj, nil
}

// findKey returns the Ed25519 signing key of kid in jwks.
func findKey(jwks jose.JSONWebKeySet, kid string) (ed25519.PublicKey, bool) {
	for _, k := range jwks.Key(kid) {
		if k.Algorithm != "" && k.Algorithm != string(jose.EdDSA) {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if pub, ok := k.Key.(ed25519.PublicKey); ok {
			return pub, true
		}
	}
	return nil, false
}

// Check reports whether r has the claims every receipt must: iss, sub
// (the fax id), iat, jti, to, a terminal outcome, mode test or live,
// completed_at; the document's SHA-256 (64 lowercase hex digits) when the
// fax was delivered in whole or part; page and time counts that agree.
func Check(r faxes.Receipt) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrClaims, fmt.Sprintf(format, a...))
	}
	for _, c := range []struct{ name, v string }{{"iss", r.Issuer}, {"sub", r.Subject}, {"jti", r.ID}, {"to", r.To}} {
		if c.v == "" {
			return bad("%s is missing", c.name)
		}
	}
	if r.IssuedAt <= 0 {
		return bad("iat is missing")
	}
	if !terminal(r.Outcome) {
		return bad("outcome %q is not one of delivered, partial, failed, canceled", r.Outcome)
	}
	if r.Mode != "test" && r.Mode != "live" {
		return bad("mode %q is not test or live", r.Mode)
	}
	if r.CompletedAt <= 0 {
		return bad("completed_at is missing")
	}
	if r.QueuedAt < 0 || r.QueuedAt > r.CompletedAt {
		return bad("queued_at is after completed_at")
	}
	if r.Pages < 0 || r.PagesSent < 0 || r.PagesSent > r.Pages || r.Attempts < 0 {
		return bad("pages %d, pages_sent %d, attempts %d do not add up", r.Pages, r.PagesSent, r.Attempts)
	}
	needHash := r.Outcome == string(faxes.Delivered) || r.Outcome == string(faxes.Partial)
	if r.DocumentSHA256 != "" || needHash {
		if b, err := hex.DecodeString(r.DocumentSHA256); err != nil || len(b) != 32 || strings.ToLower(r.DocumentSHA256) != r.DocumentSHA256 {
			return bad("document_sha256 is not 64 lowercase hex digits")
		}
	}
	return nil
}
