package mpp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// credentialFor answers c the way a client does: echo the header params.
func credentialFor(t *testing.T, c Challenge) Credential {
	t.Helper()
	req, err := c.RequestB64()
	if err != nil {
		t.Fatal(err)
	}
	echo := ChallengeEcho{ID: c.ID, Realm: c.Realm, Method: c.Method, Intent: c.Intent, Request: req,
		Expires: c.ExpiresParam(), Digest: c.Digest, Description: c.Description}
	if c.Opaque != nil {
		o, _ := c.OpaqueB64()
		echo.Opaque = &o
	}
	return Credential{Echo: echo, Payload: json.RawMessage(`{"spt":"spt_test_ok","externalId":"r-1"}`)}
}

func TestCredentialRoundTrip(t *testing.T) {
	c := sample()
	if err := c.Bind(secret); err != nil {
		t.Fatal(err)
	}
	cred := credentialFor(t, c)
	cred.Source = "did:pkh:eip155:4217:0xabc"
	h, err := cred.Encode()
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimPrefix(h, "Payment ")
	raw, _ := base64.RawURLEncoding.DecodeString(token)
	std := base64.URLEncoding.EncodeToString(raw) // padded variant
	tests := []struct {
		name   string
		values []string
	}{
		{"unpadded", []string{h}},
		{"padded", []string{"Payment " + std}},
		{"lowercase scheme", []string{"payment " + token}},
		{"beside another scheme", []string{"Bearer abc", h}},
		{"joined with another scheme", []string{"Bearer abc, " + h}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAuthorization(tt.values)
			if err != nil {
				t.Fatal(err)
			}
			if got.Source != cred.Source || string(got.Payload) != string(cred.Payload) {
				t.Fatalf("got %+v", got)
			}
			rebuilt, err := got.Challenge()
			if err != nil {
				t.Fatal(err)
			}
			if !rebuilt.Verify(secret) {
				t.Fatal("rebuilt challenge does not verify")
			}
			if !rebuilt.Expires.Equal(c.Expires) || rebuilt.Opaque["request_id"] != "r-1" {
				t.Fatalf("rebuilt %+v", rebuilt)
			}
		})
	}
}

func TestCredentialTamperedEchoFailsVerify(t *testing.T) {
	c := sample()
	if err := c.Bind(secret); err != nil {
		t.Fatal(err)
	}
	cheaper := base64.RawURLEncoding.EncodeToString([]byte(`{"amount":"1","currency":"usd"}`))
	later := c.Expires.Add(time.Hour).Format(time.RFC3339)
	otherOpaque := base64.RawURLEncoding.EncodeToString([]byte(`{"request_id":"r-9"}`))
	for name, mod := range map[string]func(*ChallengeEcho){
		"request":   func(e *ChallengeEcho) { e.Request = cheaper },
		"expires":   func(e *ChallengeEcho) { e.Expires = later },
		"digest":    func(e *ChallengeEcho) { e.Digest = "sha-256=:AAAA:" },
		"opaque":    func(e *ChallengeEcho) { e.Opaque = &otherOpaque },
		"no opaque": func(e *ChallengeEcho) { e.Opaque = nil },
		"method":    func(e *ChallengeEcho) { e.Method = "tempo" },
	} {
		t.Run(name, func(t *testing.T) {
			cred := credentialFor(t, c)
			mod(&cred.Echo)
			h, _ := cred.Encode()
			got, err := ParseAuthorization([]string{h})
			if err != nil {
				t.Fatal(err)
			}
			rebuilt, err := got.Challenge()
			if err != nil {
				t.Fatal(err)
			}
			if rebuilt.Verify(secret) {
				t.Fatal("tampered echo verifies")
			}
		})
	}
}

func enc(s string) string { return "Payment " + base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestParseAuthorizationRefusals(t *testing.T) {
	okEcho := `{"id":"x","realm":"r","method":"tempo","intent":"charge","request":"e30"}`
	tests := []struct {
		name   string
		values []string
		want   ProblemType // "" = a sentinel below
		is     error
	}{
		{"none", nil, ProblemPaymentRequired, ErrNoCredential},
		{"only bearer", []string{"Bearer abc"}, ProblemPaymentRequired, ErrNoCredential},
		{"two headers", []string{enc(`{}`), enc(`{}`)}, "", ErrMultipleCredentials},
		{"two in one value", []string{enc(`{}`) + ", " + enc(`{}`)}, "", ErrMultipleCredentials},
		{"empty token", []string{"Payment "}, ProblemMalformedCredential, nil},
		{"not base64url", []string{"Payment ab+/cd"}, ProblemMalformedCredential, nil},
		{"oversize", []string{"Payment " + strings.Repeat("A", MaxCredentialBytes+1)}, ProblemMalformedCredential, nil},
		{"not json", []string{enc(`nope`)}, ProblemMalformedCredential, nil},
		{"array", []string{enc(`[]`)}, ProblemMalformedCredential, nil},
		{"unknown member", []string{enc(`{"challenge":` + okEcho + `,"payload":{},"extra":1}`)}, ProblemMalformedCredential, nil},
		{"trailing data", []string{enc(`{"challenge":` + okEcho + `,"payload":{}} {}`)}, ProblemMalformedCredential, nil},
		{"no payload", []string{enc(`{"challenge":` + okEcho + `}`)}, ProblemMalformedCredential, nil},
		{"payload string", []string{enc(`{"challenge":` + okEcho + `,"payload":"spt"}`)}, ProblemMalformedCredential, nil},
		{"no challenge", []string{enc(`{"payload":{}}`)}, ProblemMalformedCredential, nil},
		{"challenge lacks id", []string{enc(`{"challenge":{"realm":"r","method":"tempo","intent":"charge","request":"e30"},"payload":{}}`)}, ProblemMalformedCredential, nil},
		{"challenge wrong type", []string{enc(`{"challenge":{"id":1,"realm":"r","method":"tempo","intent":"charge","request":"e30"},"payload":{}}`)}, ProblemMalformedCredential, nil},
		{"source not string", []string{enc(`{"challenge":` + okEcho + `,"payload":{},"source":5}`)}, ProblemMalformedCredential, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAuthorization(tt.values)
			if err == nil {
				t.Fatalf("accepted %+v", got)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if ProblemOf(err) != tt.want {
				t.Fatalf("problem = %q, want %q (%v)", ProblemOf(err), tt.want, err)
			}
			if strings.Contains(err.Error(), "spt_") {
				t.Fatal("error text leaks the credential")
			}
		})
	}
}

// TestParseAuthorizationTokenList: one Payment scheme followed by a
// comma-separated list of tokens is one credential with a comma in it, which
// token68 cannot hold, so it is malformed; before issue 26 (defect 7) the
// tokens after the first read as other schemes and were skipped, so
// "Payment <cred>, <cred>" paid.
func TestParseAuthorizationTokenList(t *testing.T) {
	c := sample()
	if err := c.Bind(secret); err != nil {
		t.Fatal(err)
	}
	cred := credentialFor(t, c)
	h, err := cred.Encode()
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimPrefix(h, "Payment ")
	other := credentialFor(t, c)
	other.Payload = json.RawMessage(`{"spt":"spt_test_other"}`)
	h2, _ := other.Encode()
	for name, values := range map[string][]string{
		"the same token twice":             {h + ", " + token},
		"two tokens":                       {h + ", " + strings.TrimPrefix(h2, "Payment ")},
		"no space after the comma":         {h + "," + token},
		"beside a Bearer":                  {"Bearer abc, " + h + ", " + token},
		"in a second header":               {"Bearer abc", h + ", " + token},
		"a token68 with padding after one": {h + ", abc=="},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseAuthorization(values)
			if err == nil {
				t.Fatalf("accepted %+v", got)
			}
			if ProblemOf(err) != ProblemMalformedCredential {
				t.Fatalf("problem = %q, want %q (%v)", ProblemOf(err), ProblemMalformedCredential, err)
			}
			if strings.Contains(err.Error(), token) {
				t.Fatal("error text leaks the credential")
			}
		})
	}
	// Another scheme's credentials after the Payment one are still
	// skipped, as a proxy joining Authorization lines writes them.
	for name, values := range map[string][]string{
		"Payment then Bearer": {h + ", Bearer abc"},
		"Bearer then Payment": {"Bearer abc, " + h},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseAuthorization(values); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCredentialUnknownEchoParamsIgnored(t *testing.T) {
	h := enc(`{"challenge":{"id":"x","realm":"r","method":"tempo","intent":"charge","request":"e30","future":"y"},"payload":{"type":"hash","hash":"0x1"}}`)
	got, err := ParseAuthorization([]string{h})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := got.Challenge(); err != nil {
		t.Fatal(err)
	}
}

func TestCredentialChallengeInvalid(t *testing.T) {
	for name, echo := range map[string]string{
		"request not b64":    `{"id":"x","realm":"r","method":"tempo","intent":"charge","request":"***"}`,
		"request not object": `{"id":"x","realm":"r","method":"tempo","intent":"charge","request":"MQ"}`,
		"bad expires":        `{"id":"x","realm":"r","method":"tempo","intent":"charge","request":"e30","expires":"soon"}`,
		"bad method":         `{"id":"x","realm":"r","method":"TEMPO","intent":"charge","request":"e30"}`,
		"bad opaque":         `{"id":"x","realm":"r","method":"tempo","intent":"charge","request":"e30","opaque":"MQ"}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseAuthorization([]string{enc(`{"challenge":` + echo + `,"payload":{}}`)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := got.Challenge(); ProblemOf(err) != ProblemInvalidChallenge {
				t.Fatalf("Challenge() = %v, want invalid-challenge", err)
			}
		})
	}
}

func FuzzParseAuthorization(f *testing.F) {
	c := sample()
	if err := c.Bind(secret); err != nil {
		f.Fatal(err)
	}
	cred := Credential{Echo: ChallengeEcho{ID: c.ID, Realm: c.Realm, Method: c.Method, Intent: c.Intent, Request: "e30"},
		Payload: json.RawMessage(`{"spt":"spt_x"}`)}
	h, _ := cred.Encode()
	for _, s := range []string{h, "Payment ", "Payment e30", "Bearer x, Payment y", enc(`{"challenge":{},"payload":{}}`), "Payment ====", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAuthorization([]string{s})
		if err != nil {
			if !errors.Is(err, ErrMultipleCredentials) && ProblemOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if ch, err := got.Challenge(); err == nil {
			ch.Verify(secret)
			_, _ = ch.Header()
		} else if ProblemOf(err) == "" {
			t.Fatalf("untyped error %v", err)
		}
	})
}
