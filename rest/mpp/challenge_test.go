package mpp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var secret = []byte("faxhub-test-secret")

func sample() Challenge {
	return Challenge{
		Realm: "fax.example.com", Method: "stripe", Intent: "charge",
		Request:     json.RawMessage(`{"currency":"usd","amount":"142","methodDetails":{"paymentMethodTypes":["card"],"networkId":"profile_x"}}`),
		Expires:     time.Date(2026, 11, 23, 8, 30, 0, 0, time.UTC),
		Digest:      ContentDigest([]byte(`{"to":"+12025550100"}`)),
		Description: `Fax to +1 202 555 0100, "3 pages" \ 0.42 USD`,
		Opaque:      map[string]string{"request_id": "r-1"},
	}
}

// independentID recomputes the binding without the package's helpers
// (its own JCS of this fixed input is written out by hand).
func independentID(key []byte, realm, method, intent, canonRequest, expires, digest, canonOpaque string) string {
	enc := base64.RawURLEncoding
	op := ""
	if canonOpaque != "" {
		op = enc.EncodeToString([]byte(canonOpaque))
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(realm + "|" + method + "|" + intent + "|" + enc.EncodeToString([]byte(canonRequest)) + "|" + expires + "|" + digest + "|" + op))
	return enc.EncodeToString(m.Sum(nil))
}

func TestBindIndependentComputation(t *testing.T) {
	c := sample()
	if err := c.Bind(secret); err != nil {
		t.Fatal(err)
	}
	want := independentID(secret, "fax.example.com", "stripe", "charge",
		`{"amount":"142","currency":"usd","methodDetails":{"networkId":"profile_x","paymentMethodTypes":["card"]}}`,
		"2026-11-23T08:30:00Z", c.Digest, `{"request_id":"r-1"}`)
	if c.ID != want {
		t.Fatalf("id = %s, independent computation = %s", c.ID, want)
	}
	bare := Challenge{Realm: "r", Method: "tempo", Intent: "charge", Request: json.RawMessage(`{ "b" : 2, "a" : 1 }`)}
	if err := bare.Bind(secret); err != nil {
		t.Fatal(err)
	}
	if want := independentID(secret, "r", "tempo", "charge", `{"a":1,"b":2}`, "", "", ""); bare.ID != want {
		t.Fatalf("bare id = %s, want %s (absent slots empty)", bare.ID, want)
	}
}

func TestTamperingBreaksBinding(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(*Challenge)
	}{
		{"realm", func(c *Challenge) { c.Realm = "evil.example.com" }},
		{"method", func(c *Challenge) { c.Method = "tempo" }},
		{"intent", func(c *Challenge) { c.Intent = "session" }},
		{"request amount", func(c *Challenge) { c.Request = json.RawMessage(`{"currency":"usd","amount":"1"}`) }},
		{"expires later", func(c *Challenge) { c.Expires = c.Expires.Add(time.Hour) }},
		{"expires dropped", func(c *Challenge) { c.Expires = time.Time{} }},
		{"digest", func(c *Challenge) { c.Digest = ContentDigest([]byte("other body")) }},
		{"digest dropped", func(c *Challenge) { c.Digest = "" }},
		{"opaque value", func(c *Challenge) { c.Opaque = map[string]string{"request_id": "r-2"} }},
		{"opaque emptied", func(c *Challenge) { c.Opaque = map[string]string{} }},
		{"opaque dropped", func(c *Challenge) { c.Opaque = nil }},
		{"id", func(c *Challenge) { c.ID = c.ID[:len(c.ID)-1] + "A" }},
		{"id empty", func(c *Challenge) { c.ID = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sample()
			if err := c.Bind(secret); err != nil {
				t.Fatal(err)
			}
			tt.tamper(&c)
			if c.Verify(secret) {
				t.Fatal("tampered challenge still verifies")
			}
		})
	}
	c := sample()
	if err := c.Bind(secret); err != nil {
		t.Fatal(err)
	}
	if c.Verify([]byte("another secret")) || c.Verify(nil) {
		t.Fatal("verifies under another secret")
	}
	c.Description = "display only, not bound"
	if !c.Verify(secret) {
		t.Fatal("description is display only and must not be bound")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Challenge)
	}{
		{"uppercase method", func(c *Challenge) { c.Method = "Stripe" }},
		{"method with digit", func(c *Challenge) { c.Method = "x402" }},
		{"empty intent", func(c *Challenge) { c.Intent = "" }},
		{"intent with dash", func(c *Challenge) { c.Intent = "one-time" }},
		{"long method", func(c *Challenge) { c.Method = strings.Repeat("a", 65) }},
		{"no realm", func(c *Challenge) { c.Realm = "" }},
		{"newline in description", func(c *Challenge) { c.Description = "a\r\nSet-Cookie: x" }},
		{"control in realm", func(c *Challenge) { c.Realm = "a\x00b" }},
		{"request array", func(c *Challenge) { c.Request = json.RawMessage(`[1]`) }},
		{"request invalid", func(c *Challenge) { c.Request = json.RawMessage(`{"a":`) }},
		{"request empty", func(c *Challenge) { c.Request = nil }},
		{"huge description", func(c *Challenge) { c.Description = strings.Repeat("x", 5000) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sample()
			tt.mod(&c)
			err := c.Bind(secret)
			if ProblemOf(err) != ProblemInvalidChallenge {
				t.Fatalf("Bind = %v, want invalid-challenge", err)
			}
			if c.ID != "" {
				t.Fatal("a refused challenge kept an id")
			}
		})
	}
	c := sample()
	if err := c.Bind(nil); err == nil {
		t.Fatal("Bind with an empty secret succeeded")
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Challenge)
	}{
		{"everything", func(*Challenge) {}},
		{"required only", func(c *Challenge) {
			c.Expires, c.Digest, c.Description, c.Opaque = time.Time{}, "", "", nil
		}},
		{"empty opaque kept", func(c *Challenge) { c.Opaque = map[string]string{} }},
		{"odd characters", func(c *Challenge) {
			c.Realm = `a "quoted" realm, with \ backslash`
			c.Description = "tab\there, comma, equals=, café"
		}},
		{"unicode request", func(c *Challenge) { c.Request = json.RawMessage(`{"description":"café ☕ <b>&","amount":"1"}`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sample()
			tt.mod(&c)
			if err := c.Bind(secret); err != nil {
				t.Fatal(err)
			}
			h, err := c.Header()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(h, `Payment id="`+c.ID+`", realm="`) {
				t.Fatalf("header = %s", h)
			}
			got, err := ParseChallenges([]string{h})
			if err != nil {
				t.Fatalf("ParseChallenges(%s): %v", h, err)
			}
			if len(got) != 1 {
				t.Fatalf("parsed %d challenges", len(got))
			}
			p := got[0]
			if p.ID != c.ID || p.Realm != c.Realm || p.Method != c.Method || p.Intent != c.Intent ||
				p.Digest != c.Digest || p.Description != c.Description || !p.Expires.Equal(c.Expires) ||
				(p.Opaque == nil) != (c.Opaque == nil) {
				t.Fatalf("parsed %+v\nfrom %+v", p, c)
			}
			if !p.Verify(secret) {
				t.Fatal("parsed challenge does not verify")
			}
		})
	}
}

func TestHeaderUnbound(t *testing.T) {
	c := sample()
	if _, err := c.Header(); err == nil {
		t.Fatal("Header of an unbound challenge succeeded")
	}
}

func TestParseChallengesLists(t *testing.T) {
	a, b := sample(), sample()
	b.Method = "tempo"
	for _, c := range []*Challenge{&a, &b} {
		if err := c.Bind(secret); err != nil {
			t.Fatal(err)
		}
	}
	ha, _ := a.Header()
	hb, _ := b.Header()
	tests := []struct {
		name    string
		values  []string
		methods []string
	}{
		{"two headers", []string{ha, hb}, []string{"stripe", "tempo"}},
		{"one joined value", []string{ha + ", " + hb}, []string{"stripe", "tempo"}},
		{"other schemes skipped", []string{`Bearer realm="x", error="invalid_token", ` + ha, "Basic abc==, " + hb + ", Negotiate"}, []string{"stripe", "tempo"}},
		{"lowercase scheme", []string{"payment" + strings.TrimPrefix(ha, "Payment")}, []string{"stripe"}},
		{"none", []string{`Bearer realm="api"`}, nil},
		{"unquoted tokens", []string{`Payment id=abc, realm=r, method=tempo, intent=charge, request=e30, extra="ignored"`}, []string{"tempo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseChallenges(tt.values)
			if err != nil {
				t.Fatal(err)
			}
			var methods []string
			for _, c := range got {
				methods = append(methods, c.Method)
			}
			if strings.Join(methods, ",") != strings.Join(tt.methods, ",") {
				t.Fatalf("methods = %v, want %v", methods, tt.methods)
			}
		})
	}
	for _, bad := range []string{
		`Payment id="a", realm="r", method="tempo", intent="charge"`, // no request
		`Payment id="a", id="b", realm="r", method="tempo", intent="charge", request="e30"`,
		`Payment id="a, realm="r"`,
		`Payment id="a", realm="r", method="Tempo", intent="charge", request="e30"`,
		`Payment id="a", realm="r", method="tempo", intent="charge", request="W10"`, // [] is no object
		`Payment id="a", realm="r", method="tempo", intent="charge", request="e30", expires="tomorrow"`,
		`Payment id="a", realm="r", method="tempo", intent="charge", request="e30", opaque="!!"`,
	} {
		if _, err := ParseChallenges([]string{bad}); err == nil {
			t.Errorf("ParseChallenges(%s) succeeded", bad)
		}
	}
}

func TestExpired(t *testing.T) {
	c := sample()
	at := c.Expires
	for _, tt := range []struct {
		now  time.Time
		want bool
	}{{at.Add(-time.Second), false}, {at, true}, {at.Add(time.Minute), true}} {
		if got := c.Expired(tt.now); got != tt.want {
			t.Errorf("Expired(%v) = %v", tt.now, got)
		}
	}
	c.Expires = time.Time{}
	if c.Expired(at.Add(100 * time.Hour)) {
		t.Error("a challenge without expires expired")
	}
}

func TestProblems(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range AllProblemTypes() {
		name := strings.TrimPrefix(string(p), ProblemBase)
		if name == string(p) || seen[name] {
			t.Fatalf("bad or duplicate type %s", p)
		}
		seen[name] = true
		pr := NewProblem(p, "detail", "cid")
		want := 402
		if name == "method-unsupported" {
			want = 400
		}
		if pr.Status != want || pr.Title == "" || pr.Title == "Payment Error" {
			t.Fatalf("%s: %+v", name, pr)
		}
		raw, err := json.Marshal(pr)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), `"challengeId":"cid"`) || !strings.Contains(string(raw), `"type":"`+string(p)+`"`) {
			t.Fatalf("json %s", raw)
		}
	}
	if len(seen) != 8 {
		t.Fatalf("%d problem types", len(seen))
	}
	err := error(&Error{Type: ProblemPaymentExpired, Detail: "expired"})
	if ProblemOf(err) != ProblemPaymentExpired || ProblemOf(errors.New("x")) != "" || ProblemOf(nil) != "" {
		t.Fatal("ProblemOf")
	}
	if pr := err.(*Error).Problem("c1"); pr.ChallengeID != "c1" || pr.Status != 402 {
		t.Fatalf("%+v", pr)
	}
}

func FuzzParseChallenges(f *testing.F) {
	c := sample()
	if err := c.Bind(secret); err != nil {
		f.Fatal(err)
	}
	h, _ := c.Header()
	for _, s := range []string{h, `Bearer realm="x", ` + h, "Basic abc==, Payment id=a", `Payment id="\"`, ", ,", "Payment a=b, c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		chs, err := ParseChallenges([]string{s})
		if err != nil {
			if ProblemOf(err) != ProblemInvalidChallenge {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, ch := range chs {
			ch.Verify(secret)
		}
	})
}

// BenchmarkChallenge402 is the per-offer cost of the unpaid 402 path:
// bind one challenge and render its header.
func BenchmarkChallenge402(b *testing.B) {
	c := sample()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Bind(secret); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Header(); err != nil {
			b.Fatal(err)
		}
	}
}
