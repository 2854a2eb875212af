package core_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/blob"
	"github.com/faxhub/faxhub/core/convert"
	"github.com/faxhub/faxhub/core/payments/mpp"
	"github.com/faxhub/faxhub/core/payments/stripe"
	"github.com/faxhub/faxhub/core/payments/tempo"
	"github.com/faxhub/faxhub/core/phone"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/internal/stripetest"
	"github.com/faxhub/faxhub/internal/tempotest"
	"github.com/faxhub/faxhub/internal/testenv"
)

const (
	tempoRecipient = "0x1111111111111111111111111111111111111111"
	tempoToken     = "0x20c0000000000000000000000000000000000000"
	tempoPayer     = "0x2222222222222222222222222222222222222222"
	deliverable    = "+12125550100"
)

// machineEnv is a service with machine payments on, paying through the
// Stripe stand-in (stripe) and the Tempo JSON-RPC stand-in (tempo), over a
// testenv store, on an adjustable clock.
type machineEnv struct {
	*testenv.Env
	svc    *core.Service
	clk    *clock
	stripe *stripetest.Server
	tempo  *tempotest.Server
	secret []byte
}

type machineOption func(*core.Config, *core.Deps)

func newMachineEnv(t *testing.T, opts ...machineOption) *machineEnv {
	t.Helper()
	clk := newClock()
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *core.Config) { c.Now = clk.now }))
	me := &machineEnv{Env: e, clk: clk, stripe: stripetest.New(stripetest.WithClock(clk.now)), tempo: tempotest.New(tempo.DefaultChainID)}
	sm, err := stripe.New(stripe.Options{SecretKey: "sk_test_x", BaseURL: "https://stripe.test", HTTPClient: &http.Client{Transport: me.stripe.Transport()}})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := tempo.New(tempo.Options{RPCURL: "http://tempo.test/rpc", Recipient: tempoRecipient, Token: tempoToken,
		HTTPClient: &http.Client{Transport: me.tempo.Transport()}})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(t.TempDir(), "blobs")))
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{
		BaseURL: "http://faxhub.test", APIURL: "https://api.faxhub.test", UploadSecret: bytes.Repeat([]byte{7}, 32),
		TempDir: t.TempDir(), Now: clk.now, NoRetryDelay: true,
		Machine: core.MachineConfig{Enabled: true},
	}
	deps := core.Deps{
		Store: e.Store, Blobs: blobs, Converter: convert.New(convert.Options{}), Destination: phone.New(), Queue: e.Queue,
		Providers: map[core.Mode]core.FaxProvider{core.ModeTest: simulated.New(simulated.Options{Now: clk.now})},
		Machine: []core.MachineMethod{
			{Method: sm, Mode: core.ModeTest, Currency: "usd", UnitsPerUSD: 100, MinAmount: 50, Refunds: true,
				MethodDetails: map[string]any{"paymentMethodTypes": []string{"card"}}},
			{Method: tm, Mode: core.ModeTest, Currency: tempoToken, UnitsPerUSD: 1_000_000, Recipient: tempoRecipient,
				MethodDetails: map[string]any{"chainId": tempo.DefaultChainID, "supportedModes": []string{"push"}}},
		},
	}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	me.svc, err = core.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if me.secret, err = e.Store.Secret(ctx, "mpp-challenge"); err != nil {
		t.Fatal(err)
	}
	return me
}

// machineBody is a request as the adapter reads it, with the digest of a
// raw body standing for the JSON the payer sent.
func machineBody(to, requestID string, pages int) core.MachineFaxRequest {
	pdf := testenv.MinimalPDF(pages)
	raw, _ := json.Marshal(map[string]any{"to": to, "base64": base64.StdEncoding.EncodeToString(pdf), "request_id": requestID})
	return core.MachineFaxRequest{To: to, PDF: pdf, RequestID: requestID, BodyDigest: mpp.ContentDigest(raw), ClientIP: "192.0.2.1"}
}

func (m *machineEnv) fax(t *testing.T, r core.MachineFaxRequest) *core.MachineFaxResult {
	t.Helper()
	res, err := m.svc.MachineFax(ctx, r)
	if err != nil {
		t.Fatalf("MachineFax: %v", err)
	}
	return res
}

// challenge returns the parsed challenge of method among res's.
func challenge(t *testing.T, res *core.MachineFaxResult, method string) mpp.Challenge {
	t.Helper()
	chs, err := mpp.ParseChallenges(res.Challenges)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chs {
		if c.Method == method {
			return c
		}
	}
	t.Fatalf("no %s challenge among %v", method, res.Challenges)
	return mpp.Challenge{}
}

// credential answers c with payload, as a client echoes it.
func credential(t *testing.T, c mpp.Challenge, payload string) string {
	t.Helper()
	req, err := c.RequestB64()
	if err != nil {
		t.Fatal(err)
	}
	echo := mpp.ChallengeEcho{ID: c.ID, Realm: c.Realm, Method: c.Method, Intent: c.Intent, Request: req, Expires: c.ExpiresParam(), Digest: c.Digest}
	if c.Opaque != nil {
		o, err := c.OpaqueB64()
		if err != nil {
			t.Fatal(err)
		}
		echo.Opaque = &o
	}
	cred := mpp.Credential{Echo: echo, Payload: json.RawMessage(payload)}
	v, err := cred.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (m *machineEnv) spt(t *testing.T, pm string) string {
	t.Helper()
	tok, err := m.stripe.Mint(pm, 10_000, "usd")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"spt":%q}`, tok)
}

func hashOf(c byte) string { return "0x" + strings.Repeat(string(c), 64) }

func tempoPayload(h string) string { return fmt.Sprintf(`{"type":"hash","hash":%q}`, h) }

func wantProblem(t *testing.T, res *core.MachineFaxResult, want mpp.ProblemType) {
	t.Helper()
	if res.Order != nil || res.Problem == nil || res.Problem.Type != want {
		t.Fatalf("want problem %s, got order %+v problem %+v", want, res.Order, res.Problem)
	}
	if len(res.Challenges) == 0 {
		t.Fatalf("problem %s without fresh challenges", want)
	}
}

// paid pays res's stripe challenge with a visa token and returns the 200.
func (m *machineEnv) paid(t *testing.T, r core.MachineFaxRequest) *core.MachineFaxResult {
	t.Helper()
	res := m.fax(t, r)
	r.Authorization = []string{credential(t, challenge(t, res, "stripe"), m.spt(t, "pm_card_visa"))}
	out := m.fax(t, r)
	if out.Order == nil {
		t.Fatalf("paid retry: %+v", out.Problem)
	}
	return out
}

func (m *machineEnv) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := m.DB.SQL().QueryRowContext(ctx, m.rebind(query), args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMachineUnpaidChallenges(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-1", 3)
	res := m.fax(t, r)
	if res.Order != nil || res.Problem == nil || res.Problem.Type != mpp.ProblemPaymentRequired || res.Problem.Status != 402 {
		t.Fatalf("unpaid: %+v", res)
	}
	if len(res.Challenges) != 2 {
		t.Fatalf("challenges: %v", res.Challenges)
	}
	chs, err := mpp.ParseChallenges(res.Challenges)
	if err != nil {
		t.Fatal(err)
	}
	if chs[0].Method != "stripe" || chs[1].Method != "tempo" || res.Problem.ChallengeID != chs[0].ID {
		t.Fatalf("order or problem id: %s %s %s", chs[0].Method, chs[1].Method, res.Problem.ChallengeID)
	}
	q, err := m.svc.Quote(ctx, core.QuoteRequest{To: deliverable, Pages: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chs {
		if !c.Verify(m.secret) {
			t.Errorf("%s challenge does not verify under the secret", c.Method)
		}
		var req map[string]any
		if err := json.Unmarshal(c.Request, &req); err != nil {
			t.Fatal(err)
		}
		if c.Realm != "api.faxhub.test" || c.Intent != "charge" || c.Digest != r.BodyDigest || c.Opaque["request_id"] != "req-1" ||
			!c.Expires.Equal(m.clk.now().Add(5*time.Minute).Truncate(time.Second)) || req["externalId"] != "req-1" {
			t.Errorf("%s challenge fields: %+v %v", c.Method, c, req)
		}
		switch c.Method {
		case "stripe":
			cents := max(core.CentsUp(q.AmountMicros), 50)
			if req["amount"] != fmt.Sprint(cents) || req["currency"] != "usd" || req["recipient"] != nil {
				t.Errorf("stripe request: %v (price %s)", req, q.Amount)
			}
		case "tempo":
			if req["amount"] != fmt.Sprint(q.AmountMicros) || req["currency"] != tempoToken || req["recipient"] != tempoRecipient {
				t.Errorf("tempo request: %v (price %s)", req, q.Amount)
			}
		}
	}

	// The same request_id and body: the same challenges while they live.
	m.clk.advance(time.Minute)
	again := m.fax(t, r)
	if strings.Join(again.Challenges, "\n") != strings.Join(res.Challenges, "\n") {
		t.Fatal("a retry got other challenges")
	}
	// Accept-Payment filters and orders them.
	r.AcceptPayment = []string{"tempo/charge, stripe/*;q=0.5"}
	ordered := m.fax(t, r)
	oc, _ := mpp.ParseChallenges(ordered.Challenges)
	if len(oc) != 2 || oc[0].Method != "tempo" || ordered.Problem.ChallengeID != oc[0].ID {
		t.Fatalf("Accept-Payment order: %v", ordered.Challenges)
	}
	r.AcceptPayment = []string{"stripe/charge"}
	only := m.fax(t, r)
	if len(only.Challenges) != 1 || !strings.Contains(only.Challenges[0], `method="stripe"`) {
		t.Fatalf("Accept-Payment filter: %v", only.Challenges)
	}
	r.AcceptPayment = nil

	// Another body under the same request_id: 409.
	other := machineBody(deliverable, "req-1", 2)
	_, err = m.svc.MachineFax(ctx, other)
	wantCode(t, err, core.CodeRequestIDConflict)

	// Expired: fresh challenges with other ids.
	m.clk.advance(5 * time.Minute)
	fresh := m.fax(t, r)
	if challenge(t, fresh, "stripe").ID == chs[0].ID {
		t.Fatal("expired challenges were not re-issued")
	}
	if n := m.count(t, "SELECT count(*) FROM charges"); n != 0 {
		t.Fatalf("%d charges without payment", n)
	}
}

func TestMachinePaid(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-paid", 2)
	res := m.fax(t, r)
	ch := challenge(t, res, "stripe")
	r.Authorization = []string{credential(t, ch, m.spt(t, "pm_card_visa"))}
	out := m.fax(t, r)
	o := out.Order
	if o == nil {
		t.Fatalf("paid: %+v", out.Problem)
	}
	if o.Status != core.FaxQueued || o.Method != "stripe" || o.Currency != "usd" || o.Mode != core.ModeTest || o.Pages != 2 ||
		o.RequestID != "req-paid" || !strings.HasPrefix(o.StatusURL, "https://api.faxhub.test/api/v1/machine/faxes/status/fax_") {
		t.Fatalf("order: %+v", o)
	}
	rc, err := mpp.ParseReceipt(out.Receipt)
	if err != nil || rc.Status != "success" || rc.Method != "stripe" || !strings.HasPrefix(rc.Reference, "pi_") || rc.ChallengeID != ch.ID || rc.ExternalID != "req-paid" {
		t.Fatalf("receipt: %+v %v", rc, err)
	}
	if m.stripe.Charges() != 1 || m.count(t, "SELECT count(*) FROM charges WHERE fax_id = ?", o.ID) != 1 {
		t.Fatal("want one charge")
	}
	if n := m.count(t, "SELECT count(*) FROM river_job WHERE kind = 'deliver_fax'"); n < 1 {
		t.Fatalf("no delivery job (%d)", n)
	}
	f, err := m.Store.GetFaxByID(ctx, o.ID)
	if err != nil || f.OwnerID != core.MachineOwnerID || f.PaymentMethod != core.PayMachine {
		t.Fatalf("fax: %+v %v", f, err)
	}

	// A replay (with or without the credential) answers the same 200.
	for _, auth := range [][]string{r.Authorization, nil} {
		r.Authorization = auth
		again := m.fax(t, r)
		if again.Order == nil || again.Order.ID != o.ID || again.Receipt != out.Receipt {
			t.Fatalf("replay: %+v", again)
		}
	}
	if m.stripe.Charges() != 1 {
		t.Fatalf("replay charged again: %d", m.stripe.Charges())
	}

	// The same credential on another request_id is refused.
	r2 := machineBody(deliverable, "req-other", 2)
	r2.Authorization = []string{credential(t, ch, m.spt(t, "pm_card_visa"))}
	wantProblem(t, m.fax(t, r2), mpp.ProblemVerificationFailed)
	if m.stripe.Charges() != 1 {
		t.Fatal("charged for a foreign challenge")
	}

	// Status link.
	token := strings.TrimPrefix(o.StatusURL, "https://api.faxhub.test"+core.MachineStatusPath)
	st, err := m.svc.MachineFaxStatus(ctx, token)
	if err != nil || st.ID != o.ID || st.Amount != o.Amount || st.RequestID != "req-paid" || st.Method != "stripe" {
		t.Fatalf("status: %+v %v", st, err)
	}
	for name, bad := range map[string]string{
		"forged":    token[:len(token)-2] + "AA",
		"other fax": strings.Replace(token, o.ID, "fax_0000000000000000000000", 1),
		"garbage":   "nope",
		"empty":     "",
	} {
		if _, err := m.svc.MachineFaxStatus(ctx, bad); core.ErrorCode(err) != core.CodeMachineStatusToken || core.ErrorKind(err) != core.KindNotFound {
			t.Errorf("%s token: %v", name, err)
		}
	}
	m.clk.advance(31 * 24 * time.Hour)
	_, err = m.svc.MachineFaxStatus(ctx, token)
	wantCode(t, err, core.CodeMachineStatusToken)
}

func TestMachineCredentialProblems(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-bad", 1)
	res := m.fax(t, r)
	ch := challenge(t, res, "stripe")
	visa := m.spt(t, "pm_card_visa")

	tampered := ch
	tampered.Request = json.RawMessage(strings.Replace(string(ch.Request), `"amount":"50"`, `"amount":"1"`, 1))
	if string(tampered.Request) == string(ch.Request) {
		t.Fatalf("amount not found in %s", ch.Request)
	}
	foreign := ch
	foreign.Realm = "evil.example"
	if err := foreign.Bind([]byte("another secret entirely, 32 bytes")); err != nil {
		t.Fatal(err)
	}
	unknown := ch
	unknown.Method = "lightning"
	if err := unknown.Bind(m.secret); err != nil {
		t.Fatal(err)
	}
	realm := ch
	realm.Realm = "other.faxhub.test"
	if err := realm.Bind(m.secret); err != nil {
		t.Fatal(err)
	}
	digest := ch
	digest.Digest = mpp.ContentDigest([]byte("another body"))
	if err := digest.Bind(m.secret); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		auth []string
		want mpp.ProblemType
	}{
		{"tampered amount", []string{credential(t, tampered, visa)}, mpp.ProblemInvalidChallenge},
		{"foreign secret", []string{credential(t, foreign, visa)}, mpp.ProblemInvalidChallenge},
		{"foreign realm", []string{credential(t, realm, visa)}, mpp.ProblemInvalidChallenge},
		{"unknown method", []string{credential(t, unknown, visa)}, mpp.ProblemMethodUnsupported},
		{"wrong digest", []string{credential(t, digest, visa)}, mpp.ProblemVerificationFailed},
		{"malformed", []string{"Payment !!!not-base64!!!"}, mpp.ProblemMalformedCredential},
		{"no payload", []string{"Payment " + base64.RawURLEncoding.EncodeToString([]byte(`{"challenge":{}}`))}, mpp.ProblemMalformedCredential},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := r
			r.Authorization = tc.auth
			out := m.fax(t, r)
			wantProblem(t, out, tc.want)
			if tc.want == mpp.ProblemMethodUnsupported && out.Problem.Status != 400 {
				t.Errorf("method-unsupported status %d", out.Problem.Status)
			}
		})
	}

	r.Authorization = []string{credential(t, ch, visa), credential(t, ch, visa)}
	_, err := m.svc.MachineFax(ctx, r)
	wantCode(t, err, core.CodeMultipleCredentials)
	if core.ErrorKind(err) != core.KindInvalid {
		t.Fatalf("two credentials: kind %v", core.ErrorKind(err))
	}

	// Expired: payment-expired with fresh challenges.
	m.clk.advance(6 * time.Minute)
	r.Authorization = []string{credential(t, ch, visa)}
	out := m.fax(t, r)
	wantProblem(t, out, mpp.ProblemPaymentExpired)
	if challenge(t, out, "stripe").ID == ch.ID {
		t.Fatal("payment-expired without fresh challenges")
	}
	if m.stripe.Charges() != 0 || m.count(t, "SELECT count(*) FROM machine_claims") != 0 {
		t.Fatal("a refused credential was charged or claimed")
	}
	_, err = m.svc.MachineFax(ctx, core.MachineFaxRequest{To: deliverable, PDF: []byte("%PDF"), RequestID: "bad id", BodyDigest: "x"})
	wantCode(t, err, core.CodeInvalidRequest)
}

func TestMachineRefusals(t *testing.T) {
	m := newMachineEnv(t)
	for _, tc := range []struct {
		pm   string
		want mpp.ProblemType
	}{
		{"pm_card_chargeDeclined", mpp.ProblemVerificationFailed},
		{"pm_card_authenticationRequired", mpp.ProblemPaymentActionRequired},
	} {
		r := machineBody(deliverable, "req-"+tc.pm, 1)
		ch := challenge(t, m.fax(t, r), "stripe")
		r.Authorization = []string{credential(t, ch, m.spt(t, tc.pm))}
		wantProblem(t, m.fax(t, r), tc.want)
		// The same credential again: the same refusal, no second call.
		wantProblem(t, m.fax(t, r), tc.want)
		// Another credential on the same challenge pays.
		r.Authorization = []string{credential(t, ch, m.spt(t, "pm_card_visa"))}
		if out := m.fax(t, r); out.Order == nil {
			t.Fatalf("%s then visa: %+v", tc.pm, out.Problem)
		}
	}
	if m.stripe.Charges() != 2 {
		t.Fatalf("charges %d", m.stripe.Charges())
	}
}

func TestMachineTempo(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-tempo", 1)
	ch := challenge(t, m.fax(t, r), "tempo")
	var req struct{ Amount string }
	_ = json.Unmarshal(ch.Request, &req)
	amount, _ := new(big.Int).SetString(req.Amount, 10)

	// Not mined yet: 402 with Retry-After, the same challenge stays payable.
	m.tempo.AddPending(hashOf('a'))
	r.Authorization = []string{credential(t, ch, tempoPayload(hashOf('a')))}
	out := m.fax(t, r)
	wantProblem(t, out, mpp.ProblemVerificationFailed)
	if out.RetryAfter != 2 {
		t.Fatalf("not mined: retry after %d", out.RetryAfter)
	}
	m.tempo.AddTransfer(hashOf('a'), tempoPayer, tempoRecipient, tempoToken, amount, true)
	out = m.fax(t, r)
	if out.Order == nil || out.Order.Method != "tempo" || out.Order.Currency != tempoToken {
		t.Fatalf("mined: %+v", out.Problem)
	}
	rc, _ := mpp.ParseReceipt(out.Receipt)
	if rc.Reference != hashOf('a') {
		t.Fatalf("receipt reference %s", rc.Reference)
	}

	// The same hash for another request's challenge: refused.
	r2 := machineBody(deliverable, "req-tempo-2", 1)
	ch2 := challenge(t, m.fax(t, r2), "tempo")
	r2.Authorization = []string{credential(t, ch2, tempoPayload(hashOf('a')))}
	wantProblem(t, m.fax(t, r2), mpp.ProblemVerificationFailed)
	if n := m.count(t, "SELECT count(*) FROM charges WHERE method = 'tempo'"); n != 1 {
		t.Fatalf("tempo charges %d", n)
	}
	if n := m.count(t, "SELECT count(*) FROM faxes WHERE owner_id = ?", core.MachineOwnerID); n != 1 {
		t.Fatalf("machine faxes %d", n)
	}
}

func TestMachineConcurrentRetries(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-race", 1)
	ch := challenge(t, m.fax(t, r), "stripe")
	r.Authorization = []string{credential(t, ch, m.spt(t, "pm_card_visa"))}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]int{}
	inProgress := 0
	for range 50 {
		wg.Go(func() {
			res, err := m.svc.MachineFax(ctx, r)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case core.ErrorCode(err) == core.CodePaymentInProgress:
				inProgress++
			case err != nil:
				t.Errorf("retry: %v", err)
			case res.Order == nil:
				t.Errorf("retry: %+v", res.Problem)
			default:
				ids[res.Order.ID]++
			}
		})
	}
	wg.Wait()
	if m.stripe.Charges() != 1 || len(ids) != 1 {
		t.Fatalf("charges %d, fax ids %v", m.stripe.Charges(), ids)
	}
	if n := m.count(t, "SELECT count(*) FROM faxes WHERE owner_id = ?", core.MachineOwnerID); n != 1 {
		t.Fatalf("faxes %d", n)
	}
	t.Logf("%d answered with the fax, %d payment_in_progress", 50-inProgress, inProgress)
}

func TestMachineOff(t *testing.T) {
	m := newMachineEnv(t, func(c *core.Config, _ *core.Deps) { c.Machine.Enabled = false })
	r := machineBody(deliverable, "req-off", 1)
	_, err := m.svc.MachineFax(ctx, r)
	wantCode(t, err, core.CodeMachinePaymentsOff)
	if core.ErrorKind(err) != core.KindUnavailable {
		t.Fatalf("kind %v", core.ErrorKind(err))
	}
	_, err = m.svc.MachineQuote(ctx, core.MachineQuoteRequest{To: deliverable, Pages: 1})
	wantCode(t, err, core.CodeMachinePaymentsOff)
	for _, table := range []string{"machine_requests", "machine_claims", "charges", "rate_limits"} {
		if n := m.count(t, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("%s: %d rows with machine payments off", table, n)
		}
	}
	none := newMachineEnv(t, func(_ *core.Config, d *core.Deps) { d.Machine = nil })
	_, err = none.svc.MachineFax(ctx, r)
	wantCode(t, err, core.CodeMachinePaymentsMissing)
}

func TestMachineQuote(t *testing.T) {
	m := newMachineEnv(t)
	q, err := m.svc.MachineQuote(ctx, core.MachineQuoteRequest{To: deliverable, PDF: testenv.MinimalPDF(4)})
	if err != nil {
		t.Fatal(err)
	}
	if q.Pages != 4 || len(q.Offers) != 2 || q.Offers[0].Method != "stripe" || q.Offers[1].Amount != fmt.Sprint(q.AmountMicros) || !q.Offers[0].Refunds || q.Offers[1].Refunds {
		t.Fatalf("quote: %+v", q)
	}
	_, err = m.svc.MachineQuote(ctx, core.MachineQuoteRequest{To: deliverable, PDF: []byte("\x89PNG\r\n\x1a\nnot really")})
	wantCode(t, err, core.CodeUnsupportedType)
	_, err = m.svc.MachineQuote(ctx, core.MachineQuoteRequest{To: "+15555550100", Pages: 1})
	wantCode(t, err, core.CodeInvalidDestination)
}

// A claim whose settlement was interrupted after the method charged: the
// sweeper finishes it with the same idempotency key, once, and a racing
// retry gets the same fax.
func TestMachineSweepFinishesInterruptedClaim(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-crash", 1)
	ch := challenge(t, m.fax(t, r), "stripe")
	payload := m.spt(t, "pm_card_visa")
	r.Authorization = []string{credential(t, ch, payload)}
	// Crash simulation: the charge happened (same key as core derives),
	// the claim stayed settling; nothing else was recorded.
	m.crashAfterCharge(t, r, ch, payload)
	if m.stripe.Charges() != 1 {
		t.Fatal("setup: not charged")
	}
	// A retry while the lease lives: in progress.
	_, err := m.svc.MachineFax(ctx, r)
	wantCode(t, err, core.CodePaymentInProgress)

	// The sweeper and a retry race for the lapsed claim: one settles it
	// (replaying the first charge), both end with the same fax.
	m.clk.advance(5 * time.Minute)
	var wg sync.WaitGroup
	var retried *core.MachineFaxResult
	var retryErr error
	wg.Go(func() {
		if err := m.svc.SweepMachinePayments(ctx); err != nil {
			t.Errorf("sweep: %v", err)
		}
	})
	wg.Go(func() { retried, retryErr = m.svc.MachineFax(ctx, r) })
	wg.Wait()
	if err := m.svc.SweepMachinePayments(ctx); err != nil {
		t.Fatal(err)
	}
	if m.stripe.Charges() != 1 || m.count(t, "SELECT count(*) FROM faxes WHERE owner_id = ?", core.MachineOwnerID) != 1 {
		t.Fatalf("charges %d", m.stripe.Charges())
	}
	out := m.fax(t, r)
	if out.Order == nil {
		t.Fatalf("retry after the sweep: %+v", out.Problem)
	}
	if retryErr == nil && (retried.Order == nil || retried.Order.ID != out.Order.ID) {
		t.Fatalf("racing retry: %+v", retried)
	} else if retryErr != nil && core.ErrorCode(retryErr) != core.CodePaymentInProgress {
		t.Fatalf("racing retry: %v", retryErr)
	}
}

// A retry with another credential that takes over an interrupted claim
// finishes the interrupted settlement (under its key), never charging the
// new credential too.
func TestMachineTakeOverKeepsTheFirstCredential(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-takeover", 1)
	ch := challenge(t, m.fax(t, r), "stripe")
	first := m.spt(t, "pm_card_visa")
	r.Authorization = []string{credential(t, ch, first)}
	m.crashAfterCharge(t, r, ch, first)
	m.clk.advance(3 * time.Minute)
	r.Authorization = []string{credential(t, ch, m.spt(t, "pm_card_mastercard"))}
	out := m.fax(t, r)
	if out.Order == nil {
		t.Fatalf("take-over: %+v", out.Problem)
	}
	if m.stripe.Charges() != 1 || m.count(t, "SELECT count(*) FROM charges") != 1 {
		t.Fatalf("charges %d", m.stripe.Charges())
	}
	if n := m.count(t, "SELECT count(*) FROM machine_claims WHERE credential IS NOT NULL"); n != 0 {
		t.Fatalf("%d paid claims keep their credential", n)
	}
}

// crashAfterCharge claims ch for r through the service up to the method's
// answer, then loses the rest: it calls MachineFax with a Stripe backend
// that charges and then fails the connection.
func (m *machineEnv) crashAfterCharge(t *testing.T, r core.MachineFaxRequest, ch mpp.Challenge, payload string) {
	t.Helper()
	broken := newMachineEnvSharing(t, m, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			res, err := rt.RoundTrip(req)
			if err == nil {
				res.Body.Close()
			}
			return nil, errors.New("connection reset after the charge")
		})
	})
	_, err := broken.MachineFax(ctx, r)
	wantCode(t, err, core.CodePaymentProcessorUnavailable)
	// The release put the lease to now; a crash leaves it running.
	if _, err := m.DB.SQL().ExecContext(ctx, m.rebind("UPDATE machine_claims SET lease_until = ? WHERE challenge_id = ?"),
		sqlTime(m, m.clk.now().Add(2*time.Minute)), ch.ID); err != nil {
		t.Fatal(err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// newMachineEnvSharing is a second service over m's store and stand-ins
// whose Stripe transport is wrapped.
func newMachineEnvSharing(t *testing.T, m *machineEnv, wrap func(http.RoundTripper) http.RoundTripper) *core.Service {
	t.Helper()
	sm, err := stripe.New(stripe.Options{SecretKey: "sk_test_x", BaseURL: "https://stripe.test", HTTPClient: &http.Client{Transport: wrap(m.stripe.Transport())}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.svc.Config()
	deps := core.Deps{
		Store: m.Store, Blobs: nil, Converter: convert.New(convert.Options{}), Destination: phone.New(), Queue: m.Queue,
		Providers: map[core.Mode]core.FaxProvider{core.ModeTest: simulated.New(simulated.Options{Now: m.clk.now})},
		Machine:   []core.MachineMethod{{Method: sm, Mode: core.ModeTest, Currency: "usd", UnitsPerUSD: 100, MinAmount: 50, Refunds: true}},
	}
	blobs, err := blob.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(t.TempDir(), "blobs2")))
	if err != nil {
		t.Fatal(err)
	}
	deps.Blobs = blobs
	svc, err := core.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// rebind turns ? placeholders into PostgreSQL's $n where needed.
func (m *machineEnv) rebind(q string) string {
	if m.DB.Dialect() == "sqlite" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func sqlTime(m *machineEnv, t time.Time) any {
	if m.DB.Dialect() == "sqlite" {
		return t.UTC().Format("2006-01-02 15:04:05.000000Z")
	}
	return t.UTC()
}

func TestMachineRefunds(t *testing.T) {
	m := newMachineEnv(t)
	// A fax that fails: its whole charge goes back, once.
	out := m.paid(t, machineBody("+12125550103", "req-fail", 2))
	if err := m.svc.Deliver(ctx, out.Order.ID); err != nil {
		t.Fatal(err)
	}
	st := m.fax(t, machineBody("+12125550103", "req-fail", 2))
	if st.Order.Status != core.FaxFailed || st.Order.Refund != core.RefundDue {
		t.Fatalf("failed fax: %+v", st.Order)
	}
	for range 2 {
		if err := m.svc.SweepMachinePayments(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c := m.charge(t, out.Order.ID)
	if c.Status != core.ChargeRefunded || c.RefundState != core.RefundDone || !strings.HasPrefix(c.RefundReference, "re_") || c.RefundDueUnits != c.AmountUnits {
		t.Fatalf("refunded charge: %+v", c)
	}
	if got := m.stripe.Refunds(); got != 1 {
		t.Fatalf("stripe refunds %d", got)
	}

	// Tempo cannot refund: recorded as not_refundable.
	r := machineBody("+12125550103", "req-fail-tempo", 1)
	ch := challenge(t, m.fax(t, r), "tempo")
	var req struct{ Amount string }
	_ = json.Unmarshal(ch.Request, &req)
	amount, _ := new(big.Int).SetString(req.Amount, 10)
	m.tempo.AddTransfer(hashOf('b'), tempoPayer, tempoRecipient, tempoToken, amount, true)
	r.Authorization = []string{credential(t, ch, tempoPayload(hashOf('b')))}
	tout := m.fax(t, r)
	if tout.Order == nil {
		t.Fatalf("tempo: %+v", tout.Problem)
	}
	if err := m.svc.Deliver(ctx, tout.Order.ID); err != nil {
		t.Fatal(err)
	}
	if c := m.charge(t, tout.Order.ID); c.RefundState != core.RefundNotRefundable || c.Status != core.ChargeSucceeded {
		t.Fatalf("tempo charge: %+v", c)
	}

	// A partial fax: the unsent pages' share, rounded down.
	pout := m.paid(t, machineBody("+12125550104", "req-partial", 4))
	if err := m.svc.Deliver(ctx, pout.Order.ID); err != nil {
		t.Fatal(err)
	}
	pc := m.charge(t, pout.Order.ID)
	if pc.RefundState != core.RefundDue || pc.RefundDueUnits <= 0 || pc.RefundDueUnits >= pc.AmountUnits {
		t.Fatalf("partial charge: %+v", pc)
	}
	// A delivered fax: nothing.
	dout := m.paid(t, machineBody(deliverable, "req-ok", 1))
	if err := m.svc.Deliver(ctx, dout.Order.ID); err != nil {
		t.Fatal(err)
	}
	if dc := m.charge(t, dout.Order.ID); dc.RefundState != core.RefundNone {
		t.Fatalf("delivered charge: %+v", dc)
	}
}

func (m *machineEnv) charge(t *testing.T, faxID string) *core.Charge {
	t.Helper()
	c, err := m.Store.GetChargeByFax(ctx, faxID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
