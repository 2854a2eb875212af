package stripecheckout_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/payments/stripecheckout"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
)

// Stripe-mock (github.com/stripe/stripe-mock, a go.mod tool) is Stripe's
// own mock of its API: it validates every request against Stripe's OpenAPI
// description and answers with fixtures. EnvStripeMockURL points the tests
// at a running one; EnvStripeMock=1 starts one with `go tool stripe-mock`
// (make check sets it, so there these tests fail rather than skip).
const (
	EnvStripeMock    = "FAXHUB_STRIPE_MOCK"
	EnvStripeMockURL = "FAXHUB_STRIPE_MOCK_URL"
)

// stripeMock returns the URL of a stripe-mock for this test.
func stripeMock(t *testing.T) string {
	t.Helper()
	if u := os.Getenv(EnvStripeMockURL); u != "" {
		return strings.TrimRight(u, "/")
	}
	if os.Getenv(EnvStripeMock) != "1" {
		t.Skipf("stripe-mock not requested: set %s=1 (make check does) or %s", EnvStripeMock, EnvStripeMockURL)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("%s=1 but the go command is not on PATH to run stripe-mock: %v", EnvStripeMock, err)
	}
	// `go tool -n` builds the tool and prints its binary, which is run
	// directly: killing a `go tool` process would leave its child running.
	bin, err := exec.Command(goBin, "tool", "-n", "stripe-mock").Output()
	if err != nil {
		t.Fatalf("build stripe-mock: %v", err)
	}
	cmd := exec.Command(strings.TrimSpace(string(bin)), "-http-port", strconv.Itoa(port))
	cmd.WaitDelay = 5 * time.Second
	out, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		w.Close()
	})
	ready := make(chan struct{})
	var mu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		signaled := false
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !signaled && strings.Contains(sc.Text(), "Listening for HTTP") {
				close(ready)
				signaled = true
			}
		}
	}()
	// The first run compiles stripe-mock; later ones start in a second.
	select {
	case <-ready:
	case <-time.After(5 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("stripe-mock did not start within 5 minutes:\n%s", log.String())
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// recorder keeps the bodies and idempotency keys of the calls to Stripe.
type recorder struct {
	mu    sync.Mutex
	forms []url.Values
	keys  []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		form, _ := url.ParseQuery(string(b))
		r.mu.Lock()
		r.forms = append(r.forms, form)
		r.keys = append(r.keys, req.Header.Get("Idempotency-Key"))
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

func TestGatewayAgainstStripeMock(t *testing.T) {
	mock := stripeMock(t)
	rec := &recorder{}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	gw, err := stripecheckout.New(stripecheckout.Options{
		SecretKey: "sk_test_faxhub", BaseURL: "https://faxhub.example/", APIURL: mock,
		HTTPClient: &http.Client{Transport: rec, Timeout: 30 * time.Second}, Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	draftID := "drf_abc"
	for _, tc := range []struct {
		name      string
		c         checkout.Checkout
		desc      string
		returnURL string
	}{
		{"credit pack", checkout.Checkout{ID: "chk_pack1", Mode: core.ModeLive, Kind: checkout.KindCreditPack, PackID: "pack_10",
			AmountMicros: 10_000_000, CreditMicros: 10_000_000, ExpiresAt: now.Add(time.Hour)}, "10 USD of fax credit", "https://faxhub.example/console?mode=live"},
		{"draft", checkout.Checkout{ID: "chk_draft1", Mode: core.ModeLive, Kind: checkout.KindDraft, DraftID: &draftID,
			AmountMicros: 214_999, ExpiresAt: now.Add(time.Hour)}, "Fax of 2 page(s) to +12125550100", "https://faxhub.example/console/drafts/drf_abc?mode=live"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ext, err := gw.Start(t.Context(), &tc.c, tc.desc)
			if err != nil {
				t.Fatalf("stripe-mock refused the session: %v", err)
			}
			if !strings.HasPrefix(u, "https://checkout.stripe.com/") || !strings.HasPrefix(ext, "cs_") {
				t.Fatalf("Start = %q, %q; want a Checkout URL and session id", u, ext)
			}
			rec.mu.Lock()
			form, key := rec.forms[len(rec.forms)-1], rec.keys[len(rec.keys)-1]
			rec.mu.Unlock()
			want := map[string]string{
				"mode":                                          "payment",
				"line_items[0][quantity]":                       "1",
				"line_items[0][price_data][currency]":           "usd",
				"line_items[0][price_data][unit_amount]":        strconv.FormatInt(core.CentsUp(tc.c.AmountMicros), 10),
				"line_items[0][price_data][product_data][name]": tc.desc,
				"client_reference_id":                           tc.c.ID,
				"metadata[checkout_id]":                         tc.c.ID,
				"payment_intent_data[metadata][checkout_id]":    tc.c.ID,
				"success_url":                                   tc.returnURL + "&checkout=paid",
				"cancel_url":                                    tc.returnURL + "&checkout=canceled",
				"expires_at":                                    strconv.FormatInt(now.Add(time.Hour).Unix(), 10),
			}
			for k, v := range want {
				if got := form.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if key != stripecheckout.IdempotencyKey(tc.c.ID) {
				t.Errorf("Idempotency-Key = %q, want %q", key, stripecheckout.IdempotencyKey(tc.c.ID))
			}
		})
	}
	t.Run("test mode is refused", func(t *testing.T) {
		if _, _, err := gw.Start(t.Context(), &checkout.Checkout{ID: "chk_t", Mode: core.ModeTest, AmountMicros: 1}, "x"); err == nil {
			t.Fatal("a test-mode checkout was sent to Stripe")
		}
	})
}

func TestSessionExpiryClamped(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   time.Duration
		want time.Duration
	}{
		{"inside the window", time.Hour, time.Hour},
		{"shorter than Stripe's 30 minutes", 5 * time.Minute, stripecheckout.MinSessionLifetime},
		{"longer than Stripe's 24 hours", 48 * time.Hour, stripecheckout.MaxSessionLifetime},
		{"already past", -time.Hour, stripecheckout.MinSessionLifetime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stripecheckout.SessionExpiry(&checkout.Checkout{ExpiresAt: now.Add(tc.in)}, now)
			if want := now.Add(tc.want); !got.Equal(want) {
				t.Fatalf("SessionExpiry = %v, want %v", got, want)
			}
		})
	}
}

// whsec is the webhook signing secret the live checkouts are configured
// with (the webhook itself is tested in rest/webhooks/stripe).
const whsec = "whsec_faxhub_test_secret"

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestLiveCheckoutWithStripeMock is the console's and the API's view: with
// Stripe configured, a live credit pack goes to Stripe Checkout (here
// stripe-mock's session URL) instead of answering 503.
func TestLiveCheckoutWithStripeMock(t *testing.T) {
	mock := stripeMock(t)
	e := testenv.New(t, testenv.WithStripe(app.StripeOptions{SecretKey: "sk_test_faxhub", WebhookSecret: whsec, APIURL: mock}))
	srv := e.Serve(e.App.Handler())
	pack := e.Svc.Credits.Packs()[0].ID

	t.Run("API", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/credits/checkout", strings.NewReader(`{"packId":"`+pack+`"}`))
		req.Header.Set("Authorization", "Bearer "+e.KeyALive)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out checkout.Session
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("answer %d (%v)", res.StatusCode, err)
		}
		if !strings.HasPrefix(out.CheckoutURL, "https://checkout.stripe.com/") {
			t.Fatalf("checkoutUrl = %q, want Stripe Checkout's", out.CheckoutURL)
		}
	})
	t.Run("console", func(t *testing.T) {
		session, _, err := e.Svc.Accounts.CreateSession(t.Context(), e.OwnerA.ID, "stripe test")
		if err != nil {
			t.Fatal(err)
		}
		cookie := web.SessionCookieName + "=" + session
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console?mode=live", nil)
		req.Header.Set("Cookie", cookie)
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := csrfField.FindSubmatch(page)
		if m == nil {
			t.Fatalf("dashboard (%d) has no form token", res.StatusCode)
		}
		form := url.Values{"mode": {"live"}, "pack": {pack}, "csrf": {string(m[1])}}
		req, _ = http.NewRequest(http.MethodPost, srv.URL+"/console/credits", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Origin", srv.URL)
		res, err = noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "https://checkout.stripe.com/") {
			t.Fatalf("buy credits answered %d to %q, want 303 to Stripe Checkout", res.StatusCode, loc)
		}
	})
}
