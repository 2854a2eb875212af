package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/internal/testenv"
)

// faxhub runs the command in-process and returns its stdout.
func faxhub(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	if err != nil {
		t.Logf("faxhub %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), err
}

func dataArgs(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		return []string{"--data", dir, "--database", testenvSchema(t, pg)}
	}
	return []string{"--data", dir}
}

func TestOperatorCommands(t *testing.T) {
	d := dataArgs(t)
	if _, err := faxhub(t, append([]string{"migrate"}, d...)...); err != nil {
		t.Fatal(err)
	}
	id, err := faxhub(t, append([]string{"admin", "owner", "create", "--email", "Ops@Example.com", "--name", "Ops"}, d...)...)
	if err != nil || !strings.HasPrefix(id, "own_") {
		t.Fatalf("owner create printed %q (%v)", id, err)
	}
	key, err := faxhub(t, append([]string{"admin", "apikey", "create", "--owner", "ops@example.com", "--mode", "test"}, d...)...)
	if err != nil || !strings.HasPrefix(key, "fxk_test_") {
		t.Fatalf("apikey create printed %q (%v)", key, err)
	}
	led, err := faxhub(t, append([]string{"admin", "credits", "grant", "--owner", "ops@example.com", "--mode", "test", "--usd", "12.50", "--reason", "pilot"}, d...)...)
	if err != nil || !strings.HasPrefix(led, "led_") {
		t.Fatalf("credits grant printed %q (%v)", led, err)
	}
	cookie, err := faxhub(t, append([]string{"admin", "session", "create", "--owner", "ops@example.com"}, d...)...)
	if err != nil || !strings.HasPrefix(cookie, "faxhub_session=fxs_") {
		t.Fatalf("session create printed %q (%v)", cookie, err)
	}
	demo, err := faxhub(t, append([]string{"admin", "demo"}, d...)...)
	if err != nil || !strings.Contains(demo, "fxk_test_") {
		t.Fatalf("demo printed %q (%v)", demo, err)
	}

	var ue usageError
	tests := []struct {
		name  string
		args  []string
		usage bool
	}{
		{"no command", nil, true},
		{"unknown command", []string{"fly"}, true},
		{"unknown admin", []string{"admin", "owner", "delete"}, true},
		{"missing email", []string{"admin", "owner", "create"}, true},
		{"bad mode", []string{"admin", "apikey", "create", "--owner", "ops@example.com", "--mode", "prod"}, true},
		{"bad amount", []string{"admin", "credits", "grant", "--owner", "ops@example.com", "--mode", "test", "--usd", "-3"}, true},
		{"unknown owner", []string{"admin", "apikey", "create", "--owner", "nobody@example.com", "--mode", "test"}, false},
		{"duplicate owner", []string{"admin", "owner", "create", "--email", "ops@example.com"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if len(args) > 1 {
				args = append(append([]string{}, args...), d...)
			}
			_, err := faxhub(t, args...)
			if err == nil {
				t.Fatal("want an error")
			}
			if got := errors.As(err, &ue); got != tc.usage {
				t.Fatalf("usage error = %v, want %v (%v)", got, tc.usage, err)
			}
		})
	}
}

func TestServeStartsMigratesAndStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// WebAuthn needs a host name: the console refuses an IP base URL.
	base := "http://localhost:" + addr[strings.LastIndexByte(addr, ':')+1:]
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	args := append([]string{"serve", "--addr", addr, "--base-url", base, "--dev", "--sim-timescale", "0"}, dataArgs(t)...)
	go func() { done <- run(ctx, args, &out, &bytes.Buffer{}) }()

	// A bound, not a speed assertion: under the race detector on a loaded
	// CI machine a start has taken more than 10 s.
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 90s (%v)", err)
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped before it was ready: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/openapi.json": 200, "/llms.txt": 200, "/api/v1/faxes": 401, "/": 200} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
	// A request line or headers past maxHeaderBytes never reach a handler.
	if resp, err := http.Get(base + "/api/v1/faxes/" + strings.Repeat("a", 100<<10)); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("GET of a 100 KB path = %d, want 431", resp.StatusCode)
		}
	}
	// The banner is printed by its own goroutine: wait for it (bounded)
	// before stopping, or cancelling could cut it short.
	for i := 0; i < 500 && !strings.Contains(out.String(), "admin demo"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	for _, want := range []string{"faxhub is running at " + base, "admin demo"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out.String())
		}
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Setenv("FAXHUB_BASE_URL", "https://fax.example.com/")
	t.Setenv("FAXHUB_MACHINE_PAYMENTS", "off")
	t.Setenv("FAXHUB_CONVERT_SLOTS", "3")
	t.Setenv("FAXHUB_CONVERT_RECYCLE_AFTER", "7")
	var c config
	fs := serveFlags(&c, &bytes.Buffer{})
	if err := fs.Parse([]string{"--mcp-oauth", "off", "--convert-timeout", "90s", "--convert-max-rss-mb", "512"}); err != nil {
		t.Fatal(err)
	}
	if cv := c.Convert; cv.MaxConcurrent != 3 || cv.Timeout != 90*time.Second || cv.MaxConcurrentImages != 4 || cv.MaxQueuedPerOwner != 4 ||
		cv.ColdOffice || cv.OfficeRecycleAfter != 7 || cv.OfficeMaxRSS != 512<<20 {
		t.Fatalf("conversion bounds: %+v", cv)
	}
	if err := fs.Parse([]string{"--convert-max-rss-mb", "0"}); err == nil {
		t.Fatal("--convert-max-rss-mb accepted 0")
	}
	if err := c.finish(); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %s %v %v", c.BaseURL, c.APIURL, c.MachinePayments, c.MCPOAuth)
	if got != "https://fax.example.com https://fax.example.com false false" {
		t.Fatalf("config: %s", got)
	}
	if !strings.HasSuffix(c.Database, "faxhub.db") || !strings.HasPrefix(c.BlobURL, "file://") {
		t.Fatalf("defaults: %+v", c)
	}
	if err := fs.Parse([]string{"--machine-payments", "maybe"}); err == nil {
		t.Fatal("on|off flag accepted maybe")
	}
}

// syncBuffer is written by serve's banner goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMachinePaymentConfig: the machine payment settings come from the
// environment (the Stripe key from there only) and flags, and a partial
// Tempo configuration stops serve at startup with the missing names.
func TestMachinePaymentConfig(t *testing.T) {
	t.Setenv("FAXHUB_STRIPE_SECRET_KEY", "sk_test_fromenv")
	t.Setenv("FAXHUB_STRIPE_NETWORK_ID", "profile_env")
	t.Setenv("FAXHUB_TEMPO_RPC_URL", "https://rpc.example")
	t.Setenv("FAXHUB_TEMPO_CHAIN_ID", "4217")
	var c config
	fs := serveFlags(&c, &bytes.Buffer{})
	if err := fs.Parse([]string{"--tempo-recipient", "0x1111111111111111111111111111111111111111", "--stripe-api-url", "http://127.0.0.1:12111"}); err != nil {
		t.Fatal(err)
	}
	m := c.Machine
	if m.StripeSecretKey != "sk_test_fromenv" || m.StripeNetworkID != "profile_env" || m.StripeAPIURL != "http://127.0.0.1:12111" ||
		m.TempoRPCURL != "https://rpc.example" || m.TempoRecipient == "" || m.TempoToken != "" || m.TempoChainID != 4217 {
		t.Fatalf("machine config %+v", m)
	}
	if fs.Lookup("stripe-secret-key") != nil {
		t.Error("the Stripe secret key has a flag (it would show in the process list)")
	}

	// Tempo without its token: serve refuses to start and says what is missing.
	d := dataArgs(t)
	_, err := faxhub(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, d...)...)
	if err == nil || !strings.Contains(err.Error(), "FAXHUB_TEMPO_TOKEN") {
		t.Fatalf("serve with a partial Tempo configuration: %v", err)
	}
	if strings.Contains(err.Error(), "sk_test_fromenv") {
		t.Errorf("the error repeats the Stripe key: %v", err)
	}
	t.Setenv("FAXHUB_TEMPO_CHAIN_ID", "moderato")
	var bad config
	_ = serveFlags(&bad, &bytes.Buffer{}).Parse(nil)
	if err := bad.finish(); err == nil || !strings.Contains(err.Error(), "FAXHUB_TEMPO_CHAIN_ID") {
		t.Fatalf("a chain id that is no number: %v", err)
	}
}
