package mpp

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core/jcs"
)

// Scheme is the HTTP authentication scheme of the protocol.
const Scheme = "Payment"

// Bounds on what this package accepts or renders. The draft asks to keep
// challenges under 8 KB; a header line is far smaller in practice.
const (
	MaxChallengeBytes = 8 << 10
	maxTokenLen       = 64
	maxParamLen       = 4 << 10
)

var b64 = base64.RawURLEncoding

// Challenge is one offer of a 402: pay with Method under Intent the
// Request (for charge: amount, currency, recipient, methodDetails...).
type Challenge struct {
	ID          string
	Realm       string
	Method      string          // lowercase a-z, e.g. "stripe", "tempo"
	Intent      string          // lowercase a-z, e.g. "charge"
	Request     json.RawMessage // a JSON object; sent as base64url(JCS(Request))
	Expires     time.Time       // zero: no expiry; rendered RFC 3339 in UTC to the second
	Digest      string          // optional RFC 9530 value, e.g. "sha-256=:…:"
	Description string          // optional, display only, not bound
	Opaque      map[string]string
	// Opaque: nil means absent; an empty map is sent (and bound) as "{}".
}

// RequestB64 is the request parameter: base64url without padding of the
// JCS form of Request, which must be a JSON object.
func (c *Challenge) RequestB64() (string, error) {
	if len(bytes.TrimSpace(c.Request)) == 0 || bytes.TrimSpace(c.Request)[0] != '{' {
		return "", invalidChallenge("request must be a JSON object", nil)
	}
	canon, err := jcs.Canonicalize(c.Request)
	if err != nil {
		return "", invalidChallenge("request is not valid JSON", err)
	}
	return b64.EncodeToString(canon), nil
}

// OpaqueB64 is the opaque parameter ("" when Opaque is nil).
func (c *Challenge) OpaqueB64() (string, error) {
	if c.Opaque == nil {
		return "", nil
	}
	canon, err := jcs.MarshalStrings(c.Opaque)
	if err != nil {
		return "", invalidChallenge("opaque", err)
	}
	return b64.EncodeToString(canon), nil
}

// ExpiresParam is the expires parameter ("" when Expires is zero).
func (c *Challenge) ExpiresParam() string {
	if c.Expires.IsZero() {
		return ""
	}
	return c.Expires.UTC().Format(time.RFC3339)
}

// Expired reports whether the challenge has an expiry at or before now.
func (c *Challenge) Expired(now time.Time) bool {
	return !c.Expires.IsZero() && !now.Before(c.Expires.Truncate(time.Second))
}

// Validate checks what must hold for the challenge to be rendered: token
// syntax of method and intent, a realm, header-safe text, a JSON object
// request and the size bound.
func (c *Challenge) Validate() error {
	if err := c.validateFields(); err != nil {
		return err
	}
	_, _, err := c.encodedSlots()
	return err
}

// validateFields checks everything but the JSON slots.
func (c *Challenge) validateFields() error {
	if !isLowerToken(c.Method) {
		return invalidChallenge("method must be 1-64 lowercase letters a-z", nil)
	}
	if !isLowerToken(c.Intent) {
		return invalidChallenge("intent must be 1-64 lowercase letters a-z", nil)
	}
	if c.Realm == "" {
		return invalidChallenge("realm is required", nil)
	}
	for _, f := range [...]struct{ name, v string }{
		{"id", c.ID}, {"realm", c.Realm}, {"digest", c.Digest}, {"description", c.Description},
	} {
		if len(f.v) > maxParamLen || !headerSafe(f.v) {
			return invalidChallenge(f.name+" is too long or has control characters", nil)
		}
	}
	return nil
}

// encodedSlots canonicalizes request and opaque once for binding and
// rendering (the 402 path does both per offer).
func (c *Challenge) encodedSlots() (request, opaque string, err error) {
	if request, err = c.RequestB64(); err != nil {
		return "", "", err
	}
	if opaque, err = c.OpaqueB64(); err != nil {
		return "", "", err
	}
	return request, opaque, nil
}

// bindingID computes the HMAC over the seven slots
// realm|method|intent|request_b64|expires|digest|opaque_b64, absent ones
// empty, as every SDK of the draft does, so ids are portable across them.
func (c *Challenge) bindingID(secret []byte, request, opaque string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strings.Join([]string{
		c.Realm, c.Method, c.Intent, request, c.ExpiresParam(), c.Digest, opaque,
	}, "|")))
	return b64.EncodeToString(mac.Sum(nil))
}

// Bind validates the challenge and sets ID to its HMAC binding under
// secret, which makes the server stateless about what it offered: a
// credential echoing the challenge proves the offer by re-binding.
func (c *Challenge) Bind(secret []byte) error {
	_, _, err := c.bind(secret)
	return err
}

// bind is Bind, returning the encoded slots it bound so that a caller
// rendering the challenge next (Binder.Issue) does not encode them again.
func (c *Challenge) bind(secret []byte) (request, opaque string, err error) {
	if len(secret) == 0 {
		return "", "", errors.New("mpp: bind: empty secret")
	}
	c.ID = ""
	if err := c.validateFields(); err != nil {
		return "", "", err
	}
	if request, opaque, err = c.encodedSlots(); err != nil {
		return "", "", err
	}
	c.ID = c.bindingID(secret, request, opaque)
	return request, opaque, nil
}

// Verify reports whether ID is the binding of the other fields under
// secret, comparing in constant time.
func (c *Challenge) Verify(secret []byte) bool {
	if len(secret) == 0 || c.ID == "" {
		return false
	}
	req, opaque, err := c.encodedSlots()
	if err != nil {
		return false
	}
	want := c.bindingID(secret, req, opaque)
	return hmac.Equal([]byte(want), []byte(c.ID))
}

// Header renders the challenge as one WWW-Authenticate value. The
// challenge must have been bound (or validated); a field that cannot be
// rendered is an error rather than a broken header.
func (c *Challenge) Header() (string, error) {
	if c.ID == "" {
		return "", invalidChallenge("challenge is not bound", nil)
	}
	if err := c.validateFields(); err != nil {
		return "", err
	}
	req, opaque, err := c.encodedSlots()
	if err != nil {
		return "", err
	}
	return c.render(req, opaque)
}

// render writes the header value of a challenge whose fields are valid,
// from its encoded request and opaque slots.
func (c *Challenge) render(req, opaque string) (string, error) {
	var b strings.Builder
	b.WriteString(Scheme)
	b.WriteByte(' ')
	first := true
	param := func(name, v string) {
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(quote(v))
	}
	param("id", c.ID)
	param("realm", c.Realm)
	param("method", c.Method)
	param("intent", c.Intent)
	param("request", req)
	if e := c.ExpiresParam(); e != "" {
		param("expires", e)
	}
	if c.Digest != "" {
		param("digest", c.Digest)
	}
	if c.Description != "" {
		param("description", c.Description)
	}
	if c.Opaque != nil {
		param("opaque", opaque)
	}
	if b.Len() > MaxChallengeBytes {
		return "", invalidChallenge(fmt.Sprintf("challenge longer than %d bytes", MaxChallengeBytes), nil)
	}
	return b.String(), nil
}

// fromParams rebuilds a challenge from its wire parameters (header
// auth-params or a credential's echo): request and opaque are decoded
// from base64url (padding tolerated), expires parsed as RFC 3339.
func fromParams(id, realm, method, intent, request, expires, digest, description string, opaque *string) (Challenge, error) {
	c := Challenge{ID: id, Realm: realm, Method: method, Intent: intent, Digest: digest, Description: description}
	if id == "" || realm == "" || method == "" || intent == "" || request == "" {
		return c, invalidChallenge("id, realm, method, intent and request are required", nil)
	}
	raw, err := decodeB64URL(request)
	if err != nil {
		return c, invalidChallenge("request is not base64url", err)
	}
	if !json.Valid(raw) || len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '{' {
		return c, invalidChallenge("request is not a JSON object", nil)
	}
	c.Request = raw
	if expires != "" {
		t, err := time.Parse(time.RFC3339, expires)
		if err != nil {
			return c, invalidChallenge("expires is not RFC 3339", err)
		}
		c.Expires = t
	}
	if opaque != nil {
		raw, err := decodeB64URL(*opaque)
		if err != nil {
			return c, invalidChallenge("opaque is not base64url", err)
		}
		m := map[string]string{}
		if err := json.Unmarshal(raw, &m); err != nil {
			return c, invalidChallenge("opaque is not a JSON object of strings", err)
		}
		c.Opaque = m
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// decodeB64URL accepts base64url with or without padding.
func decodeB64URL(s string) ([]byte, error) {
	return b64.Strict().DecodeString(strings.TrimRight(s, "="))
}

func isLowerToken(s string) bool {
	if s == "" || len(s) > maxTokenLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// headerSafe: a quoted-string may hold HTAB, SP, VCHAR and obs-text but no
// other control character (RFC 9110 §5.6.4).
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if ch := s[i]; (ch < 0x20 && ch != '\t') || ch == 0x7f {
			return false
		}
	}
	return true
}

// quote renders v as an RFC 9110 quoted-string.
func quote(v string) string {
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
	return b.String()
}
