//go:build bench

package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/validate"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest/mpp"
)

const (
	machineClients  = 16
	machineDuration = 5 * time.Second
	pathMachineFax  = "/api/v1/machine/faxes"
	// pathTestMint is the built-in Stripe test backend's SPT mint, served
	// by faxhub when no Stripe key is configured (docs/payments.md).
	pathTestMint = "/test/stripe/v1/test_helpers/shared_payment/granted_tokens"
	// machineAddrs client addresses (from the IPv6 documentation prefix,
	// sent only as X-Forwarded-For values) carry the load: faxhub limits
	// machine requests per address (a burst of 60, then 1 a second), so
	// one address cannot carry a throughput run; 8,192 keep every request
	// under its address's limit while the limiter stays in the path.
	machineAddrs = 8192
)

// benchMachine measures machine payments through the real app on SQLite:
//
//   - the 402 path: POST /api/v1/machine/faxes with a 1-page PDF and a
//     fresh request_id, no credential, against a bare net/http handler
//     doing the work any 402 for this body needs (strict JSON, base64
//     decode, pdfcpu page count, one HMAC-bound challenge, the 402);
//   - paid faxes per second: each one a 402, a fresh SPT from the built-in
//     test mint, and the paid retry (200 with a receipt), reported beside
//     the REST credit send path (POST /api/v1/faxes with an API key) of
//     the same app in the same run.
func benchMachine(t *testing.T, rep *report) {
	ctx := t.Context()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	a, err := app.Open(ctx, app.Options{BaseURL: base, DataDir: t.TempDir(), Dev: true, MachinePayments: true,
		InsertOnly: true, TrustedProxies: "127.0.0.1/32", Logger: slog.New(slog.DiscardHandler),
		Core: func(c *services.Config) {
			// The credit send path's per-key limit would stop the run
			// (benchEnv lifts it the same way); the machine path keeps
			// its per-address limit (see machineAddrs).
			c.SetLimit(core.LimitSend, core.Rate{Interval: time.Microsecond, Burst: 1 << 30})
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewUnstartedServer(a.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	client := newClient(machineClients)
	defer client.CloseIdleConnections()
	pdf := base64.StdEncoding.EncodeToString(testenv.MinimalPDF(1))
	var seq, addr atomic.Int64
	machineBody := func() []byte {
		return fmt.Appendf(nil, `{"to":"+12125550100","base64":%q,"request_id":"bench-%d"}`, pdf, seq.Add(1))
	}
	nextAddr := func() string { return fmt.Sprintf("2001:db8::%x", addr.Add(1)%machineAddrs+1) }

	unpaid := func(url string) func(ctx context.Context, c int) error {
		return func(ctx context.Context, c int) error {
			_, err := challenge(ctx, client, url, machineBody(), nextAddr())
			return err
		}
	}
	bl := newChallengeBaseline()
	bsrv := httptest.NewServer(bl)
	defer bsrv.Close()
	rs, err := interleaved(ctx, machineClients, time.Second, machineDuration, unpaid(base+pathMachineFax), unpaid(bsrv.URL+pathMachineFax))
	if err != nil {
		t.Fatalf("faxhub's 402 (load 0) and the baseline's (load 1): %v", err)
	}
	fx, blr := rs[0], rs[1]
	t.Logf("machine 402: faxhub %d requests in %s, baseline %d in %s", fx.requests, fx.elapsed.Round(time.Millisecond), blr.requests, blr.elapsed.Round(time.Millisecond))
	rep.add(fmt.Sprintf("machine  402 for POST %s, 1-page PDF, SQLite, %d clients, %s", pathMachineFax, machineClients, machineDuration), "req/s",
		fx.perSecond(), blr.perSecond(), ratioAtLeast(0.5), 0,
		fmt.Sprintf("machine 402: faxhub limits the request per client address, decodes the body strictly, checks and page-counts the PDF "+
			"where it is in memory (the structure index and pdfcpu), prices it per destination, binds and stores the challenges of the "+
			"request_id (one row) and answers the 402. Baseline: strict JSON, base64 decode, pdfcpu page count in memory, one "+
			"HMAC-bound challenge, the 402; no database. The two %s.", inTurns(machineDuration)))

	// Paid faxes: 402 → mint → paid retry, against the credit send path.
	paid := func(ctx context.Context, c int) error {
		body, ip := machineBody(), nextAddr()
		ch, err := challenge(ctx, client, base+pathMachineFax, body, ip)
		if err != nil {
			return err
		}
		spt, err := mint(ctx, client, base, ch, ip)
		if err != nil {
			return err
		}
		auth, err := credential(ch, spt)
		if err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+pathMachineFax, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth)
		req.Header.Set("X-Forwarded-For", ip)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var out struct {
			ID string `json:"id"`
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
			return fmt.Errorf("paid retry: %s: %s", resp.Status, bytes.TrimSpace(b))
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.ID == "" {
			return fmt.Errorf("paid retry: no order id (%v)", err)
		}
		if _, err := mpp.ParseReceipt(resp.Header.Get(mpp.ReceiptHeader)); err != nil {
			return fmt.Errorf("paid retry: receipt: %w", err)
		}
		return nil
	}
	pr, err := hammer(ctx, machineClients, time.Second, machineDuration, paid)
	if err != nil {
		t.Fatalf("faxhub paid: %v", err)
	}
	send, err := creditSend(ctx, t, a, client, base)
	if err != nil {
		t.Fatalf("credit send: %v", err)
	}
	t.Logf("machine paid: %d faxes in %s; credit send %d in %s", pr.requests, pr.elapsed.Round(time.Millisecond), send.requests, send.elapsed.Round(time.Millisecond))
	rep.add(fmt.Sprintf("machine  paid faxes (402, test mint, paid retry), SQLite, %d clients, %s", machineClients, machineDuration), "faxes/s",
		pr.perSecond(), send.perSecond(), noTarget(), 0,
		"machine paid: each fax is three requests: the 402, a fresh SPT from the built-in test mint, and the paid retry "+
			"(claim, Stripe test backend charge, then one transaction writing the charge, document, fax, job and the stored "+
			"answer) with its receipt. Baseline column: the REST credit send path (POST /api/v1/faxes, API key, one uploaded "+
			"document) of the same app in the same run, one request per fax.")
}

// challenge POSTs body without a credential and wants a 402 whose
// challenges parse; it returns the first (the stripe offer).
func challenge(ctx context.Context, c *http.Client, url string, body []byte, ip string) (mpp.Challenge, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Payment", "stripe/charge")
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := c.Do(req)
	if err != nil {
		return mpp.Challenge{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	if resp.StatusCode != http.StatusPaymentRequired {
		return mpp.Challenge{}, fmt.Errorf("POST %s: %s: %s", req.URL.Path, resp.Status, bytes.TrimSpace(b))
	}
	chs, err := mpp.ParseChallenges(resp.Header.Values("WWW-Authenticate"))
	if err != nil || len(chs) == 0 {
		return mpp.Challenge{}, fmt.Errorf("POST %s: 402 without a parseable challenge (%v)", req.URL.Path, err)
	}
	return chs[0], nil
}

// mint gets a test SPT for the challenge's amount from faxhub's built-in
// test mint, as mppx does (form body, Basic auth with a test key), for
// the client address ip.
func mint(ctx context.Context, c *http.Client, base string, ch mpp.Challenge, ip string) (string, error) {
	var r struct {
		Amount        string `json:"amount"`
		Currency      string `json:"currency"`
		MethodDetails struct {
			NetworkID string `json:"networkId"`
		} `json:"methodDetails"`
	}
	if err := json.Unmarshal(ch.Request, &r); err != nil {
		return "", fmt.Errorf("challenge request: %w", err)
	}
	// The token is granted to the seller's profile, as mppx grants it: the
	// backend settles no other (docs/payments.md).
	form := url.Values{"payment_method": {"pm_card_visa"}, "usage_limits[currency]": {r.Currency}, "usage_limits[max_amount]": {r.Amount},
		"usage_limits[expires_at]": {fmt.Sprint(time.Now().Add(10 * time.Minute).Unix())}, "seller_details[network_id]": {r.MethodDetails.NetworkID}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+pathTestMint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("sk_test_bench", "")
	req.Header.Set("X-Forwarded-For", ip) // the mint is limited per address too
	var out struct {
		ID string `json:"id"`
	}
	if err := call(c, req, &out); err != nil {
		return "", err
	}
	if !strings.HasPrefix(out.ID, "spt_") {
		return "", fmt.Errorf("mint answered no spt_ id: %q", out.ID)
	}
	return out.ID, nil
}

// credential is the Authorization value answering ch with spt.
func credential(ch mpp.Challenge, spt string) (string, error) {
	reqB64, err := ch.RequestB64()
	if err != nil {
		return "", err
	}
	echo := mpp.ChallengeEcho{ID: ch.ID, Realm: ch.Realm, Method: ch.Method, Intent: ch.Intent, Request: reqB64,
		Expires: ch.ExpiresParam(), Digest: ch.Digest}
	if ch.Opaque != nil {
		o, err := ch.OpaqueB64()
		if err != nil {
			return "", err
		}
		echo.Opaque = &o
	}
	payload, _ := json.Marshal(map[string]string{"spt": spt})
	cred := mpp.Credential{Echo: echo, Payload: payload}
	return cred.Encode()
}

// creditSend measures POST /api/v1/faxes on the same app: an owner with
// a test API key, credits and one uploaded 1-page PDF, unique
// Idempotency-Keys (as benchSendAndGet does on its own service).
func creditSend(ctx context.Context, t *testing.T, a *app.App, c *http.Client, base string) (loadResult, error) {
	o, err := a.Svc.Accounts.CreateOwner(ctx, "machine-bench@example.com", "Bench", true)
	if err != nil {
		return loadResult{}, err
	}
	key, _, err := a.Svc.Accounts.CreateAPIKey(ctx, o.ID, core.ModeTest, "bench")
	if err != nil {
		return loadResult{}, err
	}
	if _, err := a.Svc.Credits.Grant(ctx, o.ID, core.ModeTest, 1_000_000*core.MicrosPerDollar, "benchmark"); err != nil {
		return loadResult{}, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/uploads", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	var up struct {
		UploadToken string `json:"uploadToken"`
	}
	if err := call(c, req, &up); err != nil {
		return loadResult{}, err
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPut, base+"/api/v1/uploads/"+up.UploadToken, bytes.NewReader(testenv.MinimalPDF(1)))
	if err := call(c, req, nil); err != nil {
		return loadResult{}, err
	}
	body := fmt.Appendf(nil, `{"to":"+12125550100","uploadToken":%q}`, up.UploadToken)
	var seq atomic.Int64
	return hammer(ctx, machineClients, time.Second, machineDuration, func(ctx context.Context, _ int) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/faxes", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("machine-bench-%d", seq.Add(1)))
		return call(c, req, nil)
	})
}

// challengeBaseline is the least a 402 for a machine fax must do: read
// the body strictly, decode the document, count its pages with pdfcpu,
// bind one challenge for its price with HMAC and answer the 402.
type challengeBaseline struct {
	secret []byte
}

func newChallengeBaseline() *challengeBaseline {
	return &challengeBaseline{secret: []byte(core.RandomString(32))}
}

func (b *challengeBaseline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	var in struct {
		To        string `json:"to"`
		Base64    string `json:"base64"`
		RequestID string `json:"request_id"`
		Cover     bool   `json:"cover"`
	}
	if err := web.DecodeStrictJSON(raw, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	doc, err := base64.StdEncoding.DecodeString(in.Base64)
	if err != nil {
		http.Error(w, "invalid base64", http.StatusBadRequest)
		return
	}
	pages, err := pageCount(r.Context(), doc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	request, _ := json.Marshal(map[string]any{"amount": fmt.Sprint(max(50, 7*pages)), "currency": "usd",
		"methodDetails": map[string]any{"networkId": "profile_bench", "paymentMethodTypes": []string{"card"}}})
	ch := mpp.Challenge{Realm: "localhost", Method: "stripe", Intent: "charge", Request: request,
		Expires: time.Now().Add(5 * time.Minute), Digest: mpp.ContentDigest(raw), Opaque: map[string]string{"request_id": in.RequestID}}
	if err := ch.Bind(b.secret); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h, err := ch.Header()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	problem, _ := json.Marshal(mpp.NewProblem(mpp.ProblemPaymentRequired, "pay to send this fax", ch.ID))
	w.Header().Set("WWW-Authenticate", h)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusPaymentRequired)
	w.Write(problem)
}

// pageCount reads and validates the PDF with pdfcpu, as faxhub's
// converter does after its own structure index, with the converter's
// settings (built by hand: model.NewDefaultConfiguration reads a config
// directory under the home directory).
func pageCount(ctx context.Context, doc []byte) (int, error) {
	conf := &model.Configuration{Version: model.VersionStr, Reader15: true, ValidationMode: model.ValidationRelaxed,
		UnsupportedResourcePolicy: model.UnsupportedResourceSkip, Offline: true, Cmd: model.VALIDATE, Limits: model.DefaultResourceLimits()}
	conf.Limits.MaxStreamBytes = int64(len(doc))
	pctx, err := pdfcpu.ReadWithContext(ctx, bytes.NewReader(doc), conf)
	if err == nil {
		err = validate.XRefTable(pctx)
	}
	if err != nil {
		return 0, err
	}
	return pctx.PageCount, nil
}
