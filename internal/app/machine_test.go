package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	machinepay "github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/tempotest"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest/mpp"
)

// The machine-payment tests run the whole process (app.Open + Handler,
// delivery workers, the simulated provider at zero delay) over real HTTP,
// on SQLite or, with FAXHUB_TESTENV_POSTGRES, on PostgreSQL. The stripe
// method is the built-in test backend, paid with SPTs minted through its
// public mint, as mppx does; tempo runs against a local JSON-RPC stand-in.

const (
	deliverable    = "+12125550100"
	tempoRecipient = "0x1111111111111111111111111111111111111111"
	tempoToken     = "0x20c0000000000000000000000000000000000000"
	tempoPayer     = "0x2222222222222222222222222222222222222222"
)

type machine struct {
	t     *testing.T
	a     *app.App
	base  string
	tempo *tempotest.Server
	logs  *lockedBuffer
}

func newMachine(t *testing.T, opts ...func(*app.Options)) *machine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	dsn := ""
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		dsn = storetest.OpenPostgresSchema(t, pg)
	}
	tempo := tempotest.New(42431)
	rpc := httptest.NewServer(tempo)
	t.Cleanup(rpc.Close)
	logs := &lockedBuffer{}
	o := app.Options{
		BaseURL: base, DataDir: testenv.DataDirFor(t, dsn), Database: dsn, SimTimeScale: 0, PollInterval: 20 * time.Millisecond,
		MachinePayments: true,
		Machine:         app.MachineOptions{TempoRPCURL: rpc.URL, TempoRecipient: tempoRecipient, TempoToken: tempoToken},
		Core:            func(c *services.Config) { c.Faxes.NoRetryDelay = true; c.Machine.MaxPDFBytes = 64 << 10 },
		Logger:          slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	for _, f := range opts {
		f(&o)
	}
	a, err := app.Open(t.Context(), o)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if !o.InsertOnly {
		if err := a.Queue.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = a.Queue.Stop(ctx)
		})
	}
	srv := httptest.NewUnstartedServer(a.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return &machine{t: t, a: a, base: base, tempo: tempo, logs: logs}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (r answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %T: %v: %s", v, err, r.body)
	}
}

func (m *machine) do(method, path string, body []byte, header http.Header) answer {
	m.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, m.base+path, rd)
	if err != nil {
		m.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}
}

func faxBody(t *testing.T, to string, pdf []byte, requestID string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"to": to, "base64": base64.StdEncoding.EncodeToString(pdf), "request_id": requestID})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// problem asserts a problem+json answer and returns it.
func (r answer) problem(t *testing.T, status int, code string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var p map[string]any
	r.json(t, &p)
	if p["code"] != code {
		t.Fatalf("code %v, want %s: %s", p["code"], code, r.body)
	}
	return p
}

// challenged asserts a payment answer: the status, one WWW-Authenticate per
// offer in the order given, no-store, and the problem body of the payment
// protocol with faxhub's code; it returns the challenges.
func (r answer) challenged(t *testing.T, status int, problem mpp.ProblemType, methods ...string) []mpp.Challenge {
	t.Helper()
	p := r.problem(t, status, strings.TrimPrefix(string(problem), mpp.ProblemBase))
	if p["type"] != string(problem) || p["title"] != problem.Title() || p["status"] != float64(status) {
		t.Errorf("problem %v", p)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	if r.header.Get(mpp.ReceiptHeader) != "" {
		t.Error("a receipt on a payment problem")
	}
	values := r.header.Values("WWW-Authenticate")
	if len(values) != len(methods) {
		t.Fatalf("%d WWW-Authenticate headers, want %d (%v): %q", len(values), len(methods), methods, values)
	}
	var cs []mpp.Challenge
	for i, v := range values {
		c, err := mpp.ParseChallenges([]string{v})
		if err != nil || len(c) != 1 {
			t.Fatalf("WWW-Authenticate %q: %v", v, err)
		}
		if c[0].Method != methods[i] || c[0].Intent != "charge" || c[0].ID == "" || c[0].Digest == "" || c[0].Expires.IsZero() || !strings.HasPrefix(c[0].Realm, "localhost") {
			t.Errorf("challenge %d: %s %s %s realm %s expires %v digest %q", i, c[0].ID, c[0].Method, c[0].Intent, c[0].Realm, c[0].Expires, c[0].Digest)
		}
		cs = append(cs, c[0])
	}
	if p["challengeId"] != cs[0].ID {
		t.Errorf("challengeId %v, want the first challenge's %s", p["challengeId"], cs[0].ID)
	}
	return cs
}

// chargeRequest is the part of a challenge's request the tests read.
type chargeRequest struct {
	Amount        string         `json:"amount"`
	Currency      string         `json:"currency"`
	Recipient     string         `json:"recipient"`
	MethodDetails map[string]any `json:"methodDetails"`
}

func requestOf(t *testing.T, c mpp.Challenge) chargeRequest {
	t.Helper()
	var r chargeRequest
	if err := json.Unmarshal(c.Request, &r); err != nil {
		t.Fatalf("challenge request %s: %v", c.Request, err)
	}
	return r
}

// mint mints a test SPT through the server's public mint, as mppx does
// with MPPX_STRIPE_SPT_URL.
func (m *machine) mint(pm string, c mpp.Challenge) string {
	m.t.Helper()
	r := requestOf(m.t, c)
	form := url.Values{
		"payment_method":             {pm},
		"usage_limits[currency]":     {r.Currency},
		"usage_limits[max_amount]":   {r.Amount},
		"usage_limits[expires_at]":   {strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)},
		"seller_details[network_id]": {fmt.Sprint(r.MethodDetails["networkId"])},
	}
	req, _ := http.NewRequest(http.MethodPost, m.base+app.StripeTestMintPath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("sk_test_client", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	var spt struct{ ID string }
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &spt) != nil || !strings.HasPrefix(spt.ID, "spt_") {
		m.t.Fatalf("mint: %d %s", resp.StatusCode, b)
	}
	return spt.ID
}

func credential(t *testing.T, c mpp.Challenge, payload any) string {
	t.Helper()
	req, err := c.RequestB64()
	if err != nil {
		t.Fatal(err)
	}
	echo := mpp.ChallengeEcho{ID: c.ID, Realm: c.Realm, Method: c.Method, Intent: c.Intent, Request: req,
		Expires: c.ExpiresParam(), Digest: c.Digest, Description: c.Description}
	if c.Opaque != nil {
		o, _ := c.OpaqueB64()
		echo.Opaque = &o
	}
	raw, _ := json.Marshal(payload)
	cred := mpp.Credential{Echo: echo, Payload: raw}
	v, err := cred.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func paid(cred string) http.Header { return http.Header{"Authorization": {cred}} }

// TestMachinePaymentOverHTTP walks the whole flow a paying machine sees:
// the quote, the 402, a test SPT from the public mint, the paid retry with
// its receipt, the replay, the status URL without credentials until the
// simulator delivered the fax.
func TestMachinePaymentOverHTTP(t *testing.T) {
	m := newMachine(t)
	pdf := testenv.MinimalPDF(2)
	body := faxBody(t, deliverable, pdf, "req-1")

	// The quote names both methods and what each charges.
	var q machinepay.Quote
	res := m.do("POST", "/api/v1/machine/faxes/validate", []byte(`{"to":"`+deliverable+`","base64":"`+base64.StdEncoding.EncodeToString(pdf)+`"}`), nil)
	if res.status != http.StatusOK {
		t.Fatalf("validate: %d %s", res.status, res.body)
	}
	res.json(t, &q)
	if q.Pages != 2 || len(q.Offers) != 2 || q.Offers[0].Method != "stripe" || q.Offers[1].Method != "tempo" || !q.Offers[0].Refunds || q.Offers[1].Refunds {
		t.Fatalf("quote %+v", q)
	}

	// Unpaid: 402 with both challenges, stripe first.
	cs := m.do("POST", "/api/v1/machine/faxes", body, nil).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentRequired, "stripe", "tempo")
	stripe := cs[0]
	if r := requestOf(t, stripe); r.Amount != q.Offers[0].Amount || r.Currency != "usd" || r.MethodDetails["networkId"] != "profile_test_faxhub" {
		t.Errorf("stripe request %+v, quote offer %+v", r, q.Offers[0])
	}
	if stripe.Digest != mpp.ContentDigest(body) {
		t.Errorf("digest %s is not the body's", stripe.Digest)
	}
	// The same request_id and body get the same challenges.
	again := m.do("POST", "/api/v1/machine/faxes", body, nil).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentRequired, "stripe", "tempo")
	if again[0].ID != stripe.ID || again[1].ID != cs[1].ID {
		t.Error("the same request got other challenges")
	}

	// Malformed credential: a fresh 402 saying so, no charge.
	m.do("POST", "/api/v1/machine/faxes", body, paid("Payment not-base64-json!")).challenged(t, http.StatusPaymentRequired, mpp.ProblemMalformedCredential, "stripe", "tempo")
	// Two credentials: 400, no challenge.
	spt := m.mint("pm_card_visa", stripe)
	cred := credential(t, stripe, map[string]string{"spt": spt})
	two := m.do("POST", "/api/v1/machine/faxes", body, http.Header{"Authorization": {cred, cred}})
	two.problem(t, http.StatusBadRequest, machinepay.CodeMultipleCredentials)
	if two.header.Get("WWW-Authenticate") != "" {
		t.Error("a challenge with the 400")
	}

	// Paid: 200, the order, a receipt, private caching.
	ok := m.do("POST", "/api/v1/machine/faxes", body, paid(cred))
	if ok.status != http.StatusOK {
		t.Fatalf("paid retry: %d %s", ok.status, ok.body)
	}
	if cc := ok.header.Get("Cache-Control"); cc != "private" {
		t.Errorf("Cache-Control %q", cc)
	}
	rc, err := mpp.ParseReceipt(ok.header.Get(mpp.ReceiptHeader))
	if err != nil || rc.Status != "success" || rc.Method != "stripe" || !strings.HasPrefix(rc.Reference, "pi_") || rc.ChallengeID != stripe.ID {
		t.Fatalf("receipt %+v: %v", rc, err)
	}
	var order machinepay.Order
	ok.json(t, &order)
	if order.ID == "" || order.To != deliverable || order.Pages != 2 || order.Method != "stripe" || order.Mode != core.ModeTest ||
		order.Amount != q.Offers[0].Amount || order.Currency != "usd" || order.RequestID != "req-1" ||
		!strings.HasPrefix(order.StatusURL, m.base+"/api/v1/machine/faxes/status/") {
		t.Fatalf("order %+v", order)
	}

	// The replay: the same 200 and receipt, nothing charged again.
	replay := m.do("POST", "/api/v1/machine/faxes", body, paid(cred))
	var again2 machinepay.Order
	replay.json(t, &again2)
	if replay.status != http.StatusOK || again2.ID != order.ID || replay.header.Get(mpp.ReceiptHeader) != ok.header.Get(mpp.ReceiptHeader) {
		t.Fatalf("replay: %d %s", replay.status, replay.body)
	}
	// Without the credential too: the request_id is paid.
	if r := m.do("POST", "/api/v1/machine/faxes", body, nil); r.status != http.StatusOK {
		t.Fatalf("unpaid replay of a paid request_id: %d %s", r.status, r.body)
	}
	// The same request_id with another body: 409.
	m.do("POST", "/api/v1/machine/faxes", faxBody(t, deliverable, testenv.MinimalPDF(1), "req-1"), nil).problem(t, http.StatusConflict, machinepay.CodeRequestIDConflict)

	// The status URL needs no credential; the simulator delivers.
	statusPath := strings.TrimPrefix(order.StatusURL, m.base)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := m.do("GET", statusPath, nil, nil)
		if st.status != http.StatusOK {
			t.Fatalf("status: %d %s", st.status, st.body)
		}
		if cc := st.header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("status Cache-Control %q", cc)
		}
		var o machinepay.Order
		st.json(t, &o)
		if o.Status == faxes.Delivered {
			if o.PagesSent != 2 || o.ID != order.ID {
				t.Fatalf("delivered order %+v", o)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %+v", o)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A forged status token: 404 with a code.
	m.do("GET", statusPath+"x", nil, nil).problem(t, http.StatusNotFound, machinepay.CodeStatusToken)

	// Never logged: the credential, the SPT, the status token.
	token := strings.TrimPrefix(statusPath, "/api/v1/machine/faxes/status/")
	logs := m.logs.String()
	for name, secret := range map[string]string{"credential": strings.TrimPrefix(cred, "Payment "), "SPT": spt, "status token": token} {
		if strings.Contains(logs, secret) {
			t.Errorf("the %s is in the log", name)
		}
	}
	if !strings.Contains(logs, "/api/v1/machine/faxes/status/…") {
		t.Error("the status request is not in the access log with its token redacted")
	}
}

// TestMachineAcceptPayment: the offers are filtered and ordered by
// Accept-Payment; a header that accepts none of them gets every offer in
// the server's order (a 402 always carries a challenge).
func TestMachineAcceptPayment(t *testing.T) {
	m := newMachine(t)
	body := faxBody(t, deliverable, testenv.MinimalPDF(1), "req-accept")
	for _, c := range []struct {
		accept  string
		methods []string
	}{
		{"", []string{"stripe", "tempo"}},
		{"stripe/charge", []string{"stripe"}},
		{"tempo/*", []string{"tempo"}},
		{"tempo/charge, stripe/charge;q=0.5", []string{"tempo", "stripe"}},
		{"*/*, stripe/charge;q=0", []string{"tempo"}},
		{"lightning/charge", []string{"stripe", "tempo"}},
	} {
		h := http.Header{}
		if c.accept != "" {
			h.Set("Accept-Payment", c.accept)
		}
		m.do("POST", "/api/v1/machine/faxes", body, h).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentRequired, c.methods...)
	}
}

// TestMachineTempoPush pays the tempo challenge with a transfer the local
// JSON-RPC stand-in reports mined: 200, a receipt whose reference is the
// transaction hash, and an order that says it cannot be refunded; a hash
// not mined yet gets a 402 with Retry-After.
func TestMachineTempoPush(t *testing.T) {
	m := newMachine(t)
	body := faxBody(t, deliverable, testenv.MinimalPDF(1), "req-tempo")
	cs := m.do("POST", "/api/v1/machine/faxes", body, http.Header{"Accept-Payment": {"tempo/charge"}}).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentRequired, "tempo")
	r := requestOf(t, cs[0])
	if r.Recipient != tempoRecipient || r.Currency != tempoToken {
		t.Fatalf("tempo request %+v", r)
	}
	pending := "0x" + strings.Repeat("ab", 32)
	m.tempo.AddPending(pending)
	wait := m.do("POST", "/api/v1/machine/faxes", body, paid(credential(t, cs[0], map[string]string{"type": "hash", "hash": pending})))
	if wait.status != http.StatusPaymentRequired || wait.header.Get("Retry-After") == "" {
		t.Fatalf("a transfer not mined yet: %d %v %s", wait.status, wait.header, wait.body)
	}

	// Once mined, the same credential pays.
	hash := pending
	amount, _ := new(big.Int).SetString(r.Amount, 10)
	m.tempo.AddTransfer(hash, tempoPayer, tempoRecipient, tempoToken, amount, true)
	ok := m.do("POST", "/api/v1/machine/faxes", body, paid(credential(t, cs[0], map[string]string{"type": "hash", "hash": hash})))
	if ok.status != http.StatusOK {
		t.Fatalf("paid: %d %s", ok.status, ok.body)
	}
	rc, err := mpp.ParseReceipt(ok.header.Get(mpp.ReceiptHeader))
	if err != nil || rc.Method != "tempo" || rc.Reference != hash {
		t.Fatalf("receipt %+v: %v", rc, err)
	}
	var o machinepay.Order
	ok.json(t, &o)
	if o.Method != "tempo" || o.Currency != tempoToken || o.Amount != r.Amount {
		t.Fatalf("order %+v", o)
	}
}

// TestMachineBodies: what a bad body gets, each a 4xx problem with a code
// and never a challenge; a declared oversize body is refused before it is
// read.
func TestMachineBodies(t *testing.T) {
	m := newMachine(t)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")
	limit := m.a.Svc.Machine.MaxBodyBytes()
	for _, c := range []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"invalid base64", []byte(`{"to":"` + deliverable + `","base64":"JVB*","request_id":"r"}`), 400, "invalid_base64"},
		{"empty base64", []byte(`{"to":"` + deliverable + `","base64":"","request_id":"r"}`), 400, documents.CodeEmptyFile},
		{"unknown field", []byte(`{"to":"` + deliverable + `","base64":"JVBERg==","request_id":"r","price":0}`), 400, core.CodeInvalidRequest},
		{"no request_id", []byte(`{"to":"` + deliverable + `","base64":"JVBERg=="}`), 400, core.CodeInvalidRequest},
		{"not a PDF", faxBody(t, deliverable, png, "r-png"), 415, documents.CodeUnsupportedType},
		{"invalid destination", faxBody(t, "+1555", testenv.MinimalPDF(1), "r-dest"), 422, core.CodeInvalidDestination},
		{"too large", faxBody(t, deliverable, bytes.Repeat([]byte("%PDF"), int(limit)/4), "r-big"), 413, documents.CodeFileTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := m.do("POST", "/api/v1/machine/faxes", c.body, nil)
			res.problem(t, c.status, c.code)
			if res.header.Get("WWW-Authenticate") != "" {
				t.Error("a payment challenge for a bad body")
			}
		})
	}

	// A declared Content-Length over the limit is answered before the body
	// is sent: the client is still writing when the 413 arrives.
	conn, err := net.Dial("tcp", strings.TrimPrefix(m.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/machine/faxes HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", limit+1)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	head := make([]byte, 12)
	if _, err := io.ReadFull(conn, head); err != nil || string(head) != "HTTP/1.1 413" {
		t.Fatalf("oversize declared body: %q %v", head, err)
	}

	// Nothing was recorded for any of them.
	if n := count(t, m, `SELECT count(*) FROM faxes WHERE owner_id = '`+core.MachineOwnerID+`'`); n != 0 {
		t.Errorf("%d machine faxes", n)
	}
}

// TestMachinePaymentsOff: --machine-payments off answers 503 on every
// machine route, serves no test mint and records nothing.
func TestMachinePaymentsOff(t *testing.T) {
	m := newMachine(t, func(o *app.Options) { o.MachinePayments = false })
	body := faxBody(t, deliverable, testenv.MinimalPDF(1), "req-off")
	for _, r := range []struct{ method, path string }{
		{"POST", "/api/v1/machine/faxes"},
		{"POST", "/api/v1/machine/faxes/validate"},
		{"GET", "/api/v1/machine/faxes/status/ms1.x.y"},
	} {
		var b []byte
		if r.method == "POST" {
			b = body
		}
		res := m.do(r.method, r.path, b, nil)
		res.problem(t, http.StatusServiceUnavailable, machinepay.CodeMachinePaymentsOff)
		if res.header.Get("WWW-Authenticate") != "" {
			t.Errorf("%s: a challenge while off", r.path)
		}
	}
	if res := m.do("POST", app.StripeTestMintPath, []byte("{}"), nil); res.status != http.StatusNotFound {
		t.Errorf("the test mint answers while machine payments are off: %d", res.status)
	}
	for _, table := range []string{"machine_requests", "charges", "faxes"} {
		if n := count(t, m, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("%d rows in %s", n, table)
		}
	}
}

// TestStripeTestMintOnlyMints: the built-in backend's settle and refund
// endpoints are the server's own; only the mint is public, and it is
// absent when a Stripe key is configured.
func TestStripeTestMintOnlyMints(t *testing.T) {
	m := newMachine(t)
	for _, p := range []string{"/test/stripe/v1/payment_intents", "/test/stripe/v1/refunds", "/test/stripe/v1/payment_intents/pi_1"} {
		if res := m.do("POST", p, []byte("{}"), nil); res.status != http.StatusNotFound {
			t.Errorf("POST %s: %d", p, res.status)
		}
	}
	keyed := newMachine(t, func(o *app.Options) {
		o.Machine.StripeSecretKey, o.Machine.StripeNetworkID = "sk_test_configured", "profile_x"
	})
	if res := keyed.do("POST", app.StripeTestMintPath, []byte("{}"), nil); res.status != http.StatusNotFound {
		t.Errorf("the test mint answers with a Stripe key configured: %d", res.status)
	}
	var llms string
	res := keyed.do("GET", "/llms.txt", nil, nil)
	llms = string(res.body)
	if strings.Contains(llms, app.StripeTestMintPath) || !strings.Contains(llms, "HTTP 402") {
		t.Errorf("llms.txt with a Stripe key:\n%s", llms)
	}
}

func count(t *testing.T, m *machine, query string) int {
	t.Helper()
	var n int
	if err := m.a.DB.SQL().QueryRowContext(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestStripeTestBackendShared: two replicas on one database share the
// built-in Stripe test backend, so an SPT minted through one replica's
// public mint pays a fax on the other.
func TestStripeTestBackendShared(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "shared.db")
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		dsn = storetest.OpenPostgresSchema(t, pg)
	}
	onShared := func(o *app.Options) { o.Database = dsn }
	a, b := newMachine(t, onShared), newMachine(t, onShared)
	body := faxBody(t, deliverable, testenv.MinimalPDF(1), "req-shared")
	stripe := a.do("POST", "/api/v1/machine/faxes", body, nil).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentRequired, "stripe", "tempo")[0]
	spt := b.mint("pm_card_visa", stripe)
	if ok := a.do("POST", "/api/v1/machine/faxes", body, paid(credential(t, stripe, map[string]string{"spt": spt}))); ok.status != http.StatusOK {
		t.Fatalf("paid on A with an SPT minted on B: %d %s", ok.status, ok.body)
	}
	if n := count(t, b, "SELECT count(*) FROM stripe_standin_objects WHERE kind = 'charge'"); n != 1 {
		t.Fatalf("%d charges in the shared backend, want 1", n)
	}
}

// TestMachineChallengeExpiryOverHTTP: a challenge is paid a nanosecond
// before its 5 minutes end (200 with a receipt); another presented at the
// instant they end is a 402 payment-expired with fresh challenges. The
// server's clock is the injected one.
func TestMachineChallengeExpiryOverHTTP(t *testing.T) {
	clk := testenv.NewClockAt(time.Now().Truncate(time.Second))
	m := newMachine(t, func(o *app.Options) {
		base := o.Core
		o.Core = func(c *services.Config) { base(c); c.Now = clk.Now }
	})
	inTime, late := faxBody(t, deliverable, testenv.MinimalPDF(1), "req-in-time"), faxBody(t, deliverable, testenv.MinimalPDF(2), "req-late")
	chIn := m.do("POST", "/api/v1/machine/faxes", inTime, nil).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentRequired, "stripe", "tempo")[0]
	chLate := m.do("POST", "/api/v1/machine/faxes", late, nil).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentRequired, "stripe", "tempo")[0]
	if want := clk.Now().Add(5 * time.Minute); !chIn.Expires.Equal(want) || !chLate.Expires.Equal(want) {
		t.Fatalf("challenges expire %v and %v, want %v", chIn.Expires, chLate.Expires, want)
	}
	credIn := credential(t, chIn, map[string]string{"spt": m.mint("pm_card_visa", chIn)})
	credLate := credential(t, chLate, map[string]string{"spt": m.mint("pm_card_visa", chLate)})

	clk.Advance(5*time.Minute - time.Nanosecond)
	if ok := m.do("POST", "/api/v1/machine/faxes", inTime, paid(credIn)); ok.status != http.StatusOK || ok.header.Get(mpp.ReceiptHeader) == "" {
		t.Fatalf("paid a nanosecond before the expiry: %d %s", ok.status, ok.body)
	}
	clk.Advance(time.Nanosecond)
	fresh := m.do("POST", "/api/v1/machine/faxes", late, paid(credLate)).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentExpired, "stripe", "tempo")
	if fresh[0].ID == chLate.ID || !fresh[0].Expires.After(clk.Now()) {
		t.Fatalf("payment-expired without fresh challenges: %+v", fresh[0])
	}
}

// mintFor mints a test SPT through the public mint with form's
// seller_details[network_id] set to network (left out when empty) and
// answers the status and the token id.
func (m *machine) mintFor(network, ip string, c mpp.Challenge) (int, string) {
	m.t.Helper()
	r := requestOf(m.t, c)
	form := url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {r.Currency}, "usage_limits[max_amount]": {r.Amount}}
	if network != "" {
		form.Set("seller_details[network_id]", network)
	}
	req, _ := http.NewRequest(http.MethodPost, m.base+app.StripeTestMintPath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("sk_test_client", "")
	if ip != "" {
		req.Header.Set("X-Forwarded-For", ip)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	var spt struct{ ID string }
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &spt)
	return resp.StatusCode, spt.ID
}

// TestStripeTestTokenBoundToProfile: the built-in backend settles only
// tokens granted to the server's profile (profile_test_faxhub), as Stripe
// settles only a seller's own; one minted for another profile, or for
// none, is refused (verification-failed) and charges nothing (issue 26,
// defect 9).
func TestStripeTestTokenBoundToProfile(t *testing.T) {
	m := newMachine(t)
	body := faxBody(t, deliverable, testenv.MinimalPDF(1), "req-profile")
	stripe := m.do("POST", "/api/v1/machine/faxes", body, nil).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentRequired, "stripe", "tempo")[0]
	for _, network := range []string{"profile_someone_else", ""} {
		status, spt := m.mintFor(network, "", stripe)
		if status != http.StatusOK || spt == "" {
			t.Fatalf("mint for %q: %d", network, status)
		}
		m.do("POST", "/api/v1/machine/faxes", body, paid(credential(t, stripe, map[string]string{"spt": spt}))).
			challenged(t, http.StatusPaymentRequired, mpp.ProblemVerificationFailed, "stripe", "tempo")
	}
	if n := count(t, m, "SELECT count(*) FROM stripe_standin_objects WHERE kind = 'charge'"); n != 0 {
		t.Fatalf("%d charges for tokens of other profiles", n)
	}
	if ok := m.do("POST", "/api/v1/machine/faxes", body, paid(credential(t, stripe, map[string]string{"spt": m.mint("pm_card_visa", stripe)}))); ok.status != http.StatusOK {
		t.Fatalf("a token for the server's profile: %d %s", ok.status, ok.body)
	}
}

// TestStripeTestMintRateLimited: the public mint is limited per client
// address as docs/limits.md says (core.LimitStripeTestMint: a burst of 60;
// its refill is slowed here so the count is exact), and one address's
// refusals leave another's allowance alone.
func TestStripeTestMintRateLimited(t *testing.T) {
	m := newMachine(t, func(o *app.Options) {
		o.TrustedProxies = "127.0.0.0/8"
		prev := o.Core
		o.Core = func(c *services.Config) {
			prev(c)
			c.SetLimit(core.LimitStripeTestMint, core.Rate{Interval: time.Hour})
		}
	})
	body := faxBody(t, deliverable, testenv.MinimalPDF(1), "req-mint-limit")
	stripe := m.do("POST", "/api/v1/machine/faxes", body, nil).challenged(t, http.StatusPaymentRequired, mpp.ProblemPaymentRequired, "stripe", "tempo")[0]
	burst := core.Limits()[core.LimitStripeTestMint].Rate.Burst
	for i := range burst {
		if status, _ := m.mintFor("profile_test_faxhub", "203.0.113.7", stripe); status != http.StatusOK {
			t.Fatalf("mint %d of the burst of %d: %d", i+1, burst, status)
		}
	}
	status, _ := m.mintFor("profile_test_faxhub", "203.0.113.7", stripe)
	if status != http.StatusTooManyRequests {
		t.Fatalf("mint %d: %d, want 429", burst+1, status)
	}
	if status, _ := m.mintFor("profile_test_faxhub", "203.0.113.8", stripe); status != http.StatusOK {
		t.Fatalf("another address: %d", status)
	}
}
