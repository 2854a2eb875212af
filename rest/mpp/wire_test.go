package mpp

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestReceipt(t *testing.T) {
	at := time.Date(2026, 11, 23, 8, 20, 1, 5e8, time.FixedZone("x", 3600))
	r := Receipt{Method: "stripe", Timestamp: at, Reference: "pi_123", ChallengeID: "cid", ExternalID: "r-1"}
	s, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(s, "=+/") {
		t.Fatalf("receipt %q is not unpadded base64url", s)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(s)
	if want := `{"status":"success","method":"stripe","timestamp":"2026-11-23T07:20:01.5Z","reference":"pi_123","challengeId":"cid","externalId":"r-1"}`; string(raw) != want {
		t.Fatalf("receipt json %s", raw)
	}
	got, err := ParseReceipt(s)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "success" || !got.Timestamp.Equal(at) || got.Reference != "pi_123" || got.ChallengeID != "cid" {
		t.Fatalf("parsed %+v", got)
	}
	for name, bad := range map[string]Receipt{
		"failed status": {Status: "failed", Method: "stripe", Timestamp: at, Reference: "pi"},
		"no method":     {Timestamp: at, Reference: "pi"},
		"no reference":  {Method: "tempo", Timestamp: at},
		"no timestamp":  {Method: "tempo", Reference: "0xabc"},
	} {
		if _, err := bad.Encode(); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	for _, bad := range []string{"***", base64.RawURLEncoding.EncodeToString([]byte(`{"timestamp":"x"}`))} {
		if _, err := ParseReceipt(bad); err == nil {
			t.Errorf("ParseReceipt(%q) succeeded", bad)
		}
	}
}

func TestDigest(t *testing.T) {
	body := []byte(`{"to":"+12025550100","base64":"JVBERi0="}`)
	d := ContentDigest(body)
	if !strings.HasPrefix(d, "sha-256=:") || !strings.HasSuffix(d, ":") {
		t.Fatalf("digest %s", d)
	}
	if got := ContentDigest(nil); got != "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:" {
		t.Fatalf("empty body digest %s", got)
	}
	other := ContentDigest([]byte("x"))
	tests := []struct {
		name, header string
		want         bool
	}{
		{"match", d, true},
		{"with other algorithm first", "sha-512=:AAAA:, " + d, true},
		{"uppercase name", "SHA-256" + strings.TrimPrefix(d, "sha-256"), true},
		{"other body", other, false},
		{"only sha-512", "sha-512=:AAAA:", false},
		{"no colons", "sha-256=" + strings.Trim(strings.TrimPrefix(d, "sha-256="), ":"), false},
		{"bad base64", "sha-256=:!!!:", false},
		{"empty", "", false},
		{"oversize", strings.Repeat(" ", 2000) + d, false},
	}
	for _, tt := range tests {
		if got := CheckDigest(tt.header, body); got != tt.want {
			t.Errorf("%s: CheckDigest = %v", tt.name, got)
		}
	}
}

func TestAcceptPayment(t *testing.T) {
	server := []Offer{{"stripe", "charge"}, {"tempo", "charge"}, {"tempo", "session"}}
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"no header", nil, "stripe/charge tempo/charge tempo/session"},
		{"empty header", []string{""}, "stripe/charge tempo/charge tempo/session"},
		{"all malformed", []string{"stripe, ;q=1, a/b/c;q=x"}, "stripe/charge tempo/charge tempo/session"},
		{"research example", []string{"tempo/charge, stripe/charge;q=0.5"}, "tempo/charge stripe/charge"},
		{"brief example", []string{"tempo/charge, stripe/charge;q=0.5, */*;q=0"}, "tempo/charge stripe/charge"},
		{"only stripe", []string{"stripe/charge"}, "stripe/charge"},
		{"method wildcard", []string{"tempo/*"}, "tempo/charge tempo/session"},
		{"intent wildcard", []string{"*/charge;q=0.3, tempo/charge;q=0.9"}, "tempo/charge stripe/charge"},
		{"specific beats wildcard q=0", []string{"*/*;q=0.1, stripe/*;q=0"}, "tempo/charge tempo/session"},
		{"exact q=0 excludes", []string{"*/*, tempo/session;q=0"}, "stripe/charge tempo/charge"},
		{"ties keep server order", []string{"tempo/charge;q=0.5, stripe/charge;q=0.5"}, "stripe/charge tempo/charge"},
		{"case insensitive", []string{"STRIPE/Charge"}, "stripe/charge"},
		{"q bounds", []string{"stripe/charge;q=1.0, tempo/charge;q=0.001"}, "stripe/charge tempo/charge"},
		{"q over 1 ignored", []string{"stripe/charge;q=1.5, tempo/charge"}, "tempo/charge"},
		{"q four digits ignored", []string{"stripe/charge;q=0.5555, tempo/charge"}, "tempo/charge"},
		{"negative q ignored", []string{"stripe/charge;q=-1, tempo/charge"}, "tempo/charge"},
		{"other params kept", []string{"stripe/charge;foo=bar;q=0.2, tempo/*;q=0.4"}, "tempo/charge tempo/session stripe/charge"},
		{"two header lines", []string{"stripe/charge;q=0.1", "tempo/charge"}, "tempo/charge stripe/charge"},
		{"nothing matches", []string{"card/charge"}, ""},
		{"whitespace", []string{"  tempo / charge ,stripe/charge ; q = 0.5"}, "stripe/charge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, o := range ParseAcceptPayment(tt.values).Order(server) {
				got = append(got, o.Method+"/"+o.Intent)
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("Order = %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
	many := strings.Repeat("x/y, ", 100) + "stripe/charge"
	if got := ParseAcceptPayment([]string{many}).Order(server); len(got) != 0 {
		t.Fatalf("entries past the bound were read: %v", got)
	}
}
