package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/app"
)

// TestReceiptVerify: `faxhub receipt verify` checks a receipt the server
// signed, offline with a JWKS file, from stdin, by discovery from the
// receipt's issuer, and as JSON; a one-byte change, another issuer and a
// JWKS without the key exit non-zero with a clear message.
func TestReceiptVerify(t *testing.T) {
	var (
		mu sync.RWMutex
		h  http.Handler = http.NotFoundHandler()
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.RLock()
		defer mu.RUnlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	ctx := t.Context()
	dir := t.TempDir()
	args := append(dataArgs(t), "--base-url", ts.URL)
	claims := faxes.Receipt{
		Subject: "fax_01receipt", To: "+12125550100", Pages: 2, PagesSent: 2,
		DocumentSHA256: strings.Repeat("0f", 32), Outcome: "delivered", Resolution: "fine",
		QueuedAt: 1760000000, CompletedAt: 1760000060, Attempts: 1, Provider: "simulated", Mode: "test",
	}
	err := withApp(ctx, "test", args, io.Discard, nil, func(a *app.App) error {
		jws, err := a.OAuth.SignReceipt(ctx, claims)
		if err != nil {
			return err
		}
		set, err := a.OAuth.JWKS(ctx)
		if err != nil {
			return err
		}
		b, err := json.Marshal(set)
		if err != nil {
			return err
		}
		write := func(name, content string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		receipt := write("receipt.jws", jws+"\n")
		jwks := write("jwks.json", string(b))
		empty := write("empty.json", `{"keys":[]}`)
		parts := strings.Split(jws, ".")
		payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
		payload[len(payload)/2] ^= 0x01
		changed := write("changed.jws", parts[0]+"."+base64.RawURLEncoding.EncodeToString(payload)+"."+parts[2])
		issuer := a.OAuth.Issuer()

		mu.Lock()
		h = a.Handler()
		mu.Unlock()

		// Offline, human-readable.
		out, err := faxhub(t, "receipt", "verify", receipt, "--jwks", jwks, "--issuer", issuer)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"receipt verified: signed by the key ", issuer, "fax_01receipt", "delivered", "+12125550100", strings.Repeat("0f", 32), "2025-10-09T08:54:20Z"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		// Flags before the file, JSON out.
		out, err = faxhub(t, "receipt", "verify", "--json", "--jwks", jwks, receipt)
		if err != nil {
			t.Fatal(err)
		}
		var got faxes.Receipt
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("--json printed %q: %v", out, err)
		}
		want := claims
		want.Issuer, want.IssuedAt, want.ID = issuer, got.IssuedAt, got.ID
		if got != want || got.IssuedAt == 0 || got.ID == "" {
			t.Fatalf("--json claims\n got %+v\nwant %+v", got, want)
		}
		// From stdin.
		var stdout bytes.Buffer
		if err := receiptCmd(ctx, []string{"verify", "-", "--jwks", jwks}, strings.NewReader(jws), &stdout, io.Discard); err != nil || !strings.Contains(stdout.String(), "fax_01receipt") {
			t.Fatalf("stdin: %v\n%s", err, stdout.String())
		}
		// Discovery: the receipt's issuer's RFC 8414 metadata names the JWKS.
		if out, err := faxhub(t, "receipt", "verify", receipt); err != nil || !strings.Contains(out, "pass --issuer") {
			t.Fatalf("discovery: %v\n%s", err, out)
		}
		if _, err := faxhub(t, "receipt", "verify", receipt, "--jwks", ts.URL+"/api/auth/jwks", "--issuer", issuer); err != nil {
			t.Fatalf("--jwks URL: %v", err)
		}

		var ue usageError
		for _, tc := range []struct {
			name  string
			args  []string
			msg   string
			usage bool
		}{
			{"one byte changed", []string{changed, "--jwks", jwks}, "signature does not verify", false},
			{"another issuer", []string{receipt, "--jwks", jwks, "--issuer", "https://elsewhere.example/api/auth"}, "not \"https://elsewhere.example/api/auth\"", false},
			{"key not in the JWKS", []string{receipt, "--jwks", empty}, "not in the JWKS", false},
			{"not a receipt", []string{jwks, "--jwks", jwks}, "not a faxhub receipt", false},
			{"no such file", []string{filepath.Join(dir, "nope"), "--jwks", jwks}, "no such file", false},
			{"no file", []string{"--jwks", jwks}, "one FILE", true},
			{"two files", []string{receipt, receipt}, "one FILE", true},
		} {
			_, err := faxhub(t, append([]string{"receipt", "verify"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.msg) || errors.As(err, &ue) != tc.usage {
				t.Errorf("%s: %v, want %q (usage error %v)", tc.name, err, tc.msg, tc.usage)
			}
		}
		if _, err := faxhub(t, "receipt"); !errors.As(err, &ue) {
			t.Errorf("receipt without verify: %v, want a usage error", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
