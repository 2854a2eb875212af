package mpp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// MaxCredentialBytes bounds one credential's base64url text. A stripe or
// tempo credential is well under 4 KiB; the bound keeps a hostile header
// from costing more than a small decode.
const MaxCredentialBytes = 16 << 10

// ChallengeEcho is the challenge as the client echoes it in a credential:
// the wire parameters, strings as they were sent (request and opaque still
// base64url).
type ChallengeEcho struct {
	ID          string  `json:"id"`
	Realm       string  `json:"realm"`
	Method      string  `json:"method"`
	Intent      string  `json:"intent"`
	Request     string  `json:"request"`
	Expires     string  `json:"expires,omitempty"`
	Digest      string  `json:"digest,omitempty"`
	Opaque      *string `json:"opaque,omitempty"`
	Description string  `json:"description,omitempty"`
}

// Credential is the payer's proof: the challenge it answers, an optional
// source (e.g. a did:pkh payer address) and the method's payload (for
// stripe {spt, externalId?}, for tempo {type, hash|signature}).
type Credential struct {
	Echo    ChallengeEcho   `json:"challenge"`
	Source  string          `json:"source,omitempty"`
	Payload json.RawMessage `json:"payload"`
}

// Encode renders the credential as an Authorization value (clients, tests).
func (c *Credential) Encode() (string, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("mpp: encode credential: %w", err)
	}
	return Scheme + " " + b64.EncodeToString(raw), nil
}

// Challenge rebuilds the challenge the credential answers so the server
// can re-bind it (Challenge.Verify) instead of trusting the echoed id.
func (c *Credential) Challenge() (Challenge, error) {
	e := c.Echo
	return fromParams(e.ID, e.Realm, e.Method, e.Intent, e.Request, e.Expires, e.Digest, e.Description, e.Opaque)
}

// ParseAuthorization finds the one Payment credential among Authorization
// values. Other schemes are ignored; none is ErrNoCredential, more than one
// ErrMultipleCredentials (400). Every other failure is an *Error of type
// malformed-credential (the payer gets a fresh challenge) or, for an echo
// that is no valid challenge, invalid-challenge. Error texts never contain
// the credential.
func ParseAuthorization(values []string) (*Credential, error) {
	var token string
	found, listed := 0, false
	for _, v := range values {
		// A credential is "Payment <token68>"; proxies may join several
		// Authorization lines with commas, and token68 has no commas.
		// So a part after a Payment credential that is a lone token (no
		// scheme before it) continues that credential: "Payment <a>, <b>"
		// is one malformed credential, not <a> beside a scheme named <b>.
		// Empty list elements are skipped, as RFC 9110 §5.6.1 asks.
		inPayment := false
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			scheme, rest, spaced := strings.Cut(part, " ")
			if !strings.EqualFold(scheme, Scheme) {
				if inPayment && !spaced {
					listed = true
				}
				inPayment = false
				continue
			}
			found++
			token = strings.TrimSpace(rest)
			inPayment = true
		}
	}
	switch {
	case found == 0:
		return nil, ErrNoCredential
	case found > 1:
		return nil, ErrMultipleCredentials
	case listed:
		return nil, malformed("the Payment credential is followed by a comma and another token: send one credential (base64url, which has no commas)", nil)
	}
	if token == "" {
		return nil, malformed("empty Payment credential", nil)
	}
	if len(token) > MaxCredentialBytes {
		return nil, malformed(fmt.Sprintf("credential longer than %d bytes", MaxCredentialBytes), nil)
	}
	raw, err := decodeB64URL(token)
	if err != nil {
		return nil, malformed("credential is not base64url", nil)
	}
	var c Credential
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	// The echo is decoded apart, leniently: clients echo parameters we
	// may not know, and unknown challenge parameters must be ignored.
	var top struct {
		Challenge json.RawMessage `json:"challenge"`
		Source    *string         `json:"source"`
		Payload   json.RawMessage `json:"payload"`
	}
	if err := dec.Decode(&top); err != nil {
		return nil, malformed("credential is not the expected JSON object", err)
	}
	if dec.More() {
		return nil, malformed("trailing data after the credential", nil)
	}
	if !isObject(top.Challenge) {
		return nil, malformed("credential has no challenge object", nil)
	}
	if !isObject(top.Payload) {
		return nil, malformed("credential has no payload object", nil)
	}
	if err := json.Unmarshal(top.Challenge, &c.Echo); err != nil {
		return nil, malformed("credential challenge has wrong member types", err)
	}
	if top.Source != nil {
		c.Source = *top.Source
	}
	c.Payload = top.Payload
	e := c.Echo
	if e.ID == "" || e.Realm == "" || e.Method == "" || e.Intent == "" || e.Request == "" {
		return nil, malformed("credential challenge lacks id, realm, method, intent or request", nil)
	}
	return &c, nil
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}
