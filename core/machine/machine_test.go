package machine_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/payments/stripe"
	"github.com/faxhub/faxhub/core/payments/tempo"
	"github.com/faxhub/faxhub/core/phone"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/stripetest"
	"github.com/faxhub/faxhub/internal/tempotest"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest/mpp"
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
	svc    *services.Set
	clk    *testenv.Clock
	stripe *stripetest.Server
	tempo  *tempotest.Server
	secret []byte
	blobs  core.BlobStore
}

type machineOption func(*services.Config, *services.Deps)

func newMachineEnv(t *testing.T, opts ...machineOption) *machineEnv {
	t.Helper()
	clk := testenv.NewClockAt(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.Now = clk.Now }))
	me := &machineEnv{Env: e, clk: clk, stripe: stripetest.New(stripetest.WithClock(clk.Now)), tempo: tempotest.New(tempo.DefaultChainID)}
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
	me.blobs = blobs
	cfg := services.Config{
		Config:    core.Config{BaseURL: "http://faxhub.test", APIURL: "https://api.faxhub.test", TempDir: t.TempDir(), Now: clk.Now},
		Documents: documents.Config{UploadSecret: bytes.Repeat([]byte{7}, 32)},
		Faxes:     faxes.Config{NoRetryDelay: true},
		Machine:   machine.Config{Enabled: true},
	}
	deps := services.Deps{Store: e.Store, Blobs: blobs, Converter: convert.New(convert.Options{}), Destination: phone.New(), Queue: e.Queue,
		Providers: map[core.Mode]faxes.Provider{core.ModeTest: simulated.New(simulated.Options{Now: clk.Now})}, MachineBinder: mpp.Binder{}, Machine: []machine.Method{
			{Method: sm, Mode: core.ModeTest, Currency: "usd", UnitsPerUSD: 100, MinAmount: 50, Refunds: true,
				MethodDetails: map[string]any{"paymentMethodTypes": []string{"card"}}},
			{Method: tm, Mode: core.ModeTest, Currency: tempoToken, UnitsPerUSD: 1_000_000, Recipient: tempoRecipient,
				MethodDetails: map[string]any{"chainId": tempo.DefaultChainID, "supportedModes": []string{"push"}}},
		}}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	me.svc, err = services.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if me.secret, err = e.Store.Secret(ctx, "mpp-challenge"); err != nil {
		t.Fatal(err)
	}
	return me
}

// machineBody is a request as the adapter reads it, with the digest of a
// raw body standing for the JSON the payer sent. These tests are of core's
// decisions on typed values; the wire format (headers, problems,
// Accept-Payment) is tested in rest and rest/mpp, the whole over HTTP in
// internal/app. Challenge ids are computed by rest/mpp's Binder, the one
// the app wires.
func machineBody(to, requestID string, pages int) machine.FaxRequest {
	pdf := testenv.MinimalPDF(pages)
	raw, _ := json.Marshal(map[string]any{"to": to, "base64": base64.StdEncoding.EncodeToString(pdf), "request_id": requestID})
	return machine.FaxRequest{To: to, PDF: pdf, RequestID: requestID, BodyDigest: mpp.ContentDigest(raw), ClientIP: "192.0.2.1"}
}

func (m *machineEnv) fax(t *testing.T, r machine.FaxRequest) *machine.FaxResult {
	t.Helper()
	res, err := m.svc.Machine.Fax(ctx, r)
	if err != nil {
		t.Fatalf("MachineFax: %v", err)
	}
	return res
}

// challenge returns the challenge of method among res's.
func challenge(t *testing.T, res *machine.FaxResult, method string) machine.Challenge {
	t.Helper()
	for _, c := range res.Challenges {
		if c.Method == method {
			return c
		}
	}
	t.Fatalf("no %s challenge among %+v", method, res.Challenges)
	return machine.Challenge{}
}

// credential answers c with payload, as the adapter hands a credential
// echoing c to core.
func credential(c machine.Challenge, payload string) *machine.Credential {
	return &machine.Credential{Challenge: c, Payload: json.RawMessage(payload)}
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

func wantRefusal(t *testing.T, res *machine.FaxResult, want machine.RefusalKind) {
	t.Helper()
	if res.Order != nil || res.Refusal == nil || res.Refusal.Kind != want {
		t.Fatalf("want refusal %s, got order %+v refusal %+v", want, res.Order, res.Refusal)
	}
	if len(res.Challenges) == 0 || res.Refusal.Detail == "" {
		t.Fatalf("refusal %s without fresh challenges or detail", want)
	}
}

// paid pays res's stripe challenge with a visa token and returns the 200.
func (m *machineEnv) paid(t *testing.T, r machine.FaxRequest) *machine.FaxResult {
	t.Helper()
	res := m.fax(t, r)
	r.Credential = credential(challenge(t, res, "stripe"), m.spt(t, "pm_card_visa"))
	out := m.fax(t, r)
	if out.Order == nil {
		t.Fatalf("paid retry: %+v", out.Refusal)
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
	wantRefusal(t, res, machine.PaymentRequired)
	chs := res.Challenges
	if len(chs) != 2 || chs[0].Method != "stripe" || chs[1].Method != "tempo" {
		t.Fatalf("challenges, in the server's order: %+v", chs)
	}
	q, err := m.svc.Faxes.Price(deliverable, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Refusal.Detail, q.Amount) {
		t.Errorf("detail %q does not name the price %s", res.Refusal.Detail, q.Amount)
	}
	for _, c := range chs {
		// The id is the binding on the wire's seven slots under the
		// server's secret: what any MPP SDK holding it computes.
		if w := mpp.FromMachine(c); !w.Verify(m.secret) {
			t.Errorf("%s challenge does not verify under the secret", c.Method)
		}
		var req map[string]any
		if err := json.Unmarshal(c.Request, &req); err != nil {
			t.Fatal(err)
		}
		if c.Realm != "api.faxhub.test" || c.Intent != "charge" || c.Digest != r.BodyDigest || c.Opaque["request_id"] != "req-1" ||
			!c.Expires.Equal(m.clk.Now().Add(5*time.Minute).Truncate(time.Second)) || req["externalId"] != "req-1" {
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
	// Stored typed, as offered.
	row, err := m.Store.GetMachineRequest(ctx, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	var stored []machine.Challenge
	if err := json.Unmarshal(row.Challenges, &stored); err != nil || len(stored) != 2 || stored[0].ID != chs[0].ID || stored[1].Realm != "api.faxhub.test" {
		t.Fatalf("stored challenges %s: %v", row.Challenges, err)
	}

	// The same request_id and body: the same challenges while they live.
	m.clk.Advance(time.Minute)
	again := m.fax(t, r)
	if fmt.Sprint(again.Challenges) != fmt.Sprint(res.Challenges) {
		t.Fatal("a retry got other challenges")
	}

	// Another body under the same request_id: 409.
	other := machineBody(deliverable, "req-1", 2)
	_, err = m.svc.Machine.Fax(ctx, other)
	testenv.WantCode(t, err, machine.CodeRequestIDConflict)

	// Expired: fresh challenges with other ids.
	m.clk.Advance(5 * time.Minute)
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
	r.Credential = credential(ch, m.spt(t, "pm_card_visa"))
	paidAt := m.clk.Now()
	out := m.fax(t, r)
	o := out.Order
	if o == nil {
		t.Fatalf("paid: %+v", out.Refusal)
	}
	if o.Status != faxes.Queued || o.Method != "stripe" || o.Currency != "usd" || o.Mode != core.ModeTest || o.Pages != 2 ||
		o.RequestID != "req-paid" || !strings.HasPrefix(o.StatusURL, "https://api.faxhub.test/api/v1/machine/faxes/status/fax_") {
		t.Fatalf("order: %+v", o)
	}
	rc := out.Receipt
	if rc == nil || rc.Status != "success" || rc.Method != "stripe" || !strings.HasPrefix(rc.Reference, "pi_") || rc.ChallengeID != ch.ID ||
		rc.ExternalID != "req-paid" || !rc.Timestamp.Equal(paidAt) {
		t.Fatalf("receipt: %+v", rc)
	}
	if m.stripe.Charges() != 1 || m.count(t, "SELECT count(*) FROM charges WHERE fax_id = ?", o.ID) != 1 {
		t.Fatal("want one charge")
	}
	if n := m.count(t, "SELECT count(*) FROM river_job WHERE kind = 'deliver_fax'"); n < 1 {
		t.Fatalf("no delivery job (%d)", n)
	}
	f, err := m.Store.GetFaxByID(ctx, o.ID)
	if err != nil || f.OwnerID != core.MachineOwnerID || f.PaymentMethod != faxes.PayMachine {
		t.Fatalf("fax: %+v %v", f, err)
	}
	if want := (faxes.SentBy{Kind: core.PrincipalMachinePayer, Name: "stripe"}); f.SentBy != want {
		t.Fatalf("sent by %+v, want %+v", f.SentBy, want)
	}
	// The document is the PDF sent, stored whole under its key.
	doc, err := m.Store.GetDocument(ctx, core.MachineOwnerID, core.ModeTest, f.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(r.PDF)
	if doc.Pages != 2 || doc.PDFBytes != int64(len(r.PDF)) || doc.SourceBytes != int64(len(r.PDF)) || doc.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("document: %+v", doc)
	}
	rc2, err := m.blobs.Open(ctx, doc.PDFKey)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := io.ReadAll(rc2)
	rc2.Close()
	if err != nil || !bytes.Equal(stored, r.PDF) {
		t.Fatalf("stored blob: %d bytes (%v), want the %d sent", len(stored), err, len(r.PDF))
	}

	// A replay (with or without the credential) answers the same 200 and
	// the same receipt, later too.
	m.clk.Advance(time.Minute)
	for _, cred := range []*machine.Credential{r.Credential, nil} {
		r.Credential = cred
		again := m.fax(t, r)
		if again.Order == nil || again.Order.ID != o.ID || again.Receipt == nil || *again.Receipt != *out.Receipt {
			t.Fatalf("replay: %+v", again)
		}
	}
	if m.stripe.Charges() != 1 {
		t.Fatalf("replay charged again: %d", m.stripe.Charges())
	}

	// The same credential on another request_id is refused: the challenge
	// is not one of that request's (invalid-challenge, as docs/payments.md
	// says; issue 26 found verification-failed).
	r2 := machineBody(deliverable, "req-other", 2)
	r2.Credential = credential(ch, m.spt(t, "pm_card_visa"))
	wantRefusal(t, m.fax(t, r2), machine.InvalidChallenge)
	if m.stripe.Charges() != 1 {
		t.Fatal("charged for a foreign challenge")
	}

	// Status link.
	token := strings.TrimPrefix(o.StatusURL, "https://api.faxhub.test"+core.LinkMachineStatus.PathPrefix())
	st, err := m.svc.Machine.FaxStatus(ctx, token)
	if err != nil || st.ID != o.ID || st.Amount != o.Amount || st.RequestID != "req-paid" || st.Method != "stripe" {
		t.Fatalf("status: %+v %v", st, err)
	}
	for name, bad := range map[string]string{
		"forged":    token[:len(token)-2] + "AA",
		"other fax": strings.Replace(token, o.ID, "fax_0000000000000000000000", 1),
		"garbage":   "nope",
		"empty":     "",
	} {
		if _, err := m.svc.Machine.FaxStatus(ctx, bad); core.ErrorCode(err) != machine.CodeStatusToken || core.ErrorKind(err) != core.KindNotFound {
			t.Errorf("%s token: %v", name, err)
		}
	}
	m.clk.Advance(31 * 24 * time.Hour)
	_, err = m.svc.Machine.FaxStatus(ctx, token)
	testenv.WantCode(t, err, machine.CodeStatusToken)
}

func TestMachineCredentialProblems(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-bad", 1)
	res := m.fax(t, r)
	ch := challenge(t, res, "stripe")
	visa := m.spt(t, "pm_card_visa")
	bind := func(c machine.Challenge, secret []byte) machine.Challenge {
		t.Helper()
		id, err := mpp.Binder{}.Bind(secret, c)
		if err != nil {
			t.Fatal(err)
		}
		c.ID = id
		return c
	}

	tampered := ch
	tampered.Request = json.RawMessage(strings.Replace(string(ch.Request), `"amount":"50"`, `"amount":"1"`, 1))
	if string(tampered.Request) == string(ch.Request) {
		t.Fatalf("amount not found in %s", ch.Request)
	}
	foreign := ch
	foreign.Realm = "evil.example"
	foreign = bind(foreign, []byte("another secret entirely, 32 bytes"))
	unknown := ch
	unknown.Method = "lightning"
	unknown = bind(unknown, m.secret)
	realm := ch
	realm.Realm = "other.faxhub.test"
	realm = bind(realm, m.secret)
	digest := ch
	digest.Digest = mpp.ContentDigest([]byte("another body"))
	digest = bind(digest, m.secret)
	otherID := ch
	otherID.Opaque = map[string]string{"request_id": "req-elsewhere"}
	otherID = bind(otherID, m.secret)
	noID := ch
	noID.ID = ""
	unbindable := ch
	unbindable.Request = json.RawMessage(`["not an object"]`)
	for _, tc := range []struct {
		name string
		cred *machine.Credential
		want machine.RefusalKind
	}{
		{"tampered amount", credential(tampered, visa), machine.InvalidChallenge},
		{"foreign secret", credential(foreign, visa), machine.InvalidChallenge},
		{"foreign realm", credential(realm, visa), machine.InvalidChallenge},
		{"no id", credential(noID, visa), machine.InvalidChallenge},
		{"request no object", credential(unbindable, visa), machine.InvalidChallenge},
		{"unknown method", credential(unknown, visa), machine.MethodUnsupported},
		{"wrong digest", credential(digest, visa), machine.VerificationFailed},
		{"other request_id", credential(otherID, visa), machine.InvalidChallenge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := r
			r.Credential = tc.cred
			wantRefusal(t, m.fax(t, r), tc.want)
		})
	}

	// What the adapter could not read is answered with the challenges and
	// its refusal as it is.
	for _, why := range []machine.Refusal{
		{Kind: machine.MalformedCredential, Detail: "credential is not base64url"},
		{Kind: machine.InvalidChallenge, Detail: "request is not base64url"},
	} {
		r := r
		r.Unreadable = &why
		out := m.fax(t, r)
		wantRefusal(t, out, why.Kind)
		if out.Refusal.Detail != why.Detail || fmt.Sprint(out.Challenges) != fmt.Sprint(res.Challenges) {
			t.Fatalf("unreadable %s: %+v", why.Kind, out)
		}
	}

	r.MultipleCredentials = true
	_, err := m.svc.Machine.Fax(ctx, r)
	testenv.WantCode(t, err, machine.CodeMultipleCredentials)
	if core.ErrorKind(err) != core.KindInvalid {
		t.Fatalf("two credentials: kind %v", core.ErrorKind(err))
	}
	r.MultipleCredentials = false

	// Expired: payment-expired with fresh challenges.
	m.clk.Advance(6 * time.Minute)
	r.Credential = credential(ch, visa)
	out := m.fax(t, r)
	wantRefusal(t, out, machine.PaymentExpired)
	if challenge(t, out, "stripe").ID == ch.ID {
		t.Fatal("payment-expired without fresh challenges")
	}
	if m.stripe.Charges() != 0 || m.count(t, "SELECT count(*) FROM machine_claims") != 0 {
		t.Fatal("a refused credential was charged or claimed")
	}
	_, err = m.svc.Machine.Fax(ctx, machine.FaxRequest{To: deliverable, PDF: []byte("%PDF"), RequestID: "bad id", BodyDigest: "x"})
	testenv.WantCode(t, err, core.CodeInvalidRequest)
}

// TestMachineCheckOrder: which answer wins when a request is wrong in
// several ways is what clients see, so the order of core's checks is
// pinned: off, then the per-address limit, request_id, several
// credentials, the request_id's body, a paid request's stored 200, and
// only then the credential.
func TestMachineCheckOrder(t *testing.T) {
	off := newMachineEnv(t, func(c *services.Config, _ *services.Deps) { c.Machine.Enabled = false })
	bad := machineBody(deliverable, "bad id", 1)
	bad.MultipleCredentials = true
	_, err := off.svc.Machine.Fax(ctx, bad)
	testenv.WantCode(t, err, machine.CodeMachinePaymentsOff)

	m := newMachineEnv(t)
	_, err = m.svc.Machine.Fax(ctx, bad)
	testenv.WantCode(t, err, core.CodeInvalidRequest)

	r := machineBody(deliverable, "req-order", 1)
	ch := challenge(t, m.fax(t, r), "stripe")
	other := machineBody(deliverable, "req-order", 2)
	other.MultipleCredentials = true
	_, err = m.svc.Machine.Fax(ctx, other)
	testenv.WantCode(t, err, machine.CodeMultipleCredentials)
	other.MultipleCredentials = false
	other.Unreadable = &machine.Refusal{Kind: machine.MalformedCredential, Detail: "x"}
	_, err = m.svc.Machine.Fax(ctx, other)
	testenv.WantCode(t, err, machine.CodeRequestIDConflict)

	r.Credential = credential(ch, m.spt(t, "pm_card_visa"))
	paid := m.fax(t, r)
	if paid.Order == nil {
		t.Fatalf("paid: %+v", paid.Refusal)
	}
	r.Credential = nil
	r.Unreadable = &machine.Refusal{Kind: machine.MalformedCredential, Detail: "x"}
	if again := m.fax(t, r); again.Order == nil || again.Order.ID != paid.Order.ID {
		t.Fatalf("a paid request with an unreadable credential: %+v", again.Refusal)
	}
}

func TestMachineRefusals(t *testing.T) {
	m := newMachineEnv(t)
	for _, tc := range []struct {
		pm   string
		want machine.RefusalKind
	}{
		{"pm_card_chargeDeclined", machine.VerificationFailed},
		{"pm_card_authenticationRequired", machine.PaymentActionRequired},
	} {
		r := machineBody(deliverable, "req-"+tc.pm, 1)
		ch := challenge(t, m.fax(t, r), "stripe")
		r.Credential = credential(ch, m.spt(t, tc.pm))
		wantRefusal(t, m.fax(t, r), tc.want)
		// The same credential again: the same refusal, no second call.
		wantRefusal(t, m.fax(t, r), tc.want)
		// Another credential on the same challenge pays.
		r.Credential = credential(ch, m.spt(t, "pm_card_visa"))
		if out := m.fax(t, r); out.Order == nil {
			t.Fatalf("%s then visa: %+v", tc.pm, out.Refusal)
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
	r.Credential = credential(ch, tempoPayload(hashOf('a')))
	out := m.fax(t, r)
	wantRefusal(t, out, machine.VerificationFailed)
	if out.RetryAfter != 2 {
		t.Fatalf("not mined: retry after %d", out.RetryAfter)
	}
	m.tempo.AddTransfer(hashOf('a'), tempoPayer, tempoRecipient, tempoToken, amount, true)
	out = m.fax(t, r)
	if out.Order == nil || out.Order.Method != "tempo" || out.Order.Currency != tempoToken {
		t.Fatalf("mined: %+v", out.Refusal)
	}
	if out.Receipt == nil || out.Receipt.Reference != hashOf('a') {
		t.Fatalf("receipt %+v", out.Receipt)
	}

	// The same hash for another request's challenge: refused.
	r2 := machineBody(deliverable, "req-tempo-2", 1)
	ch2 := challenge(t, m.fax(t, r2), "tempo")
	r2.Credential = credential(ch2, tempoPayload(hashOf('a')))
	wantRefusal(t, m.fax(t, r2), machine.VerificationFailed)
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
	r.Credential = credential(ch, m.spt(t, "pm_card_visa"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]int{}
	inProgress := 0
	for range 50 {
		wg.Go(func() {
			res, err := m.svc.Machine.Fax(ctx, r)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case core.ErrorCode(err) == machine.CodePaymentInProgress:
				inProgress++
			case err != nil:
				t.Errorf("retry: %v", err)
			case res.Order == nil:
				t.Errorf("retry: %+v", res.Refusal)
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
	m := newMachineEnv(t, func(c *services.Config, _ *services.Deps) { c.Machine.Enabled = false })
	r := machineBody(deliverable, "req-off", 1)
	_, err := m.svc.Machine.Fax(ctx, r)
	testenv.WantCode(t, err, machine.CodeMachinePaymentsOff)
	if core.ErrorKind(err) != core.KindUnavailable {
		t.Fatalf("kind %v", core.ErrorKind(err))
	}
	_, err = m.svc.Machine.Quote(ctx, machine.QuoteRequest{To: deliverable, Pages: 1})
	testenv.WantCode(t, err, machine.CodeMachinePaymentsOff)
	for _, table := range []string{"machine_requests", "machine_claims", "charges", "rate_limits"} {
		if n := m.count(t, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("%s: %d rows with machine payments off", table, n)
		}
	}
	none := newMachineEnv(t, func(_ *services.Config, d *services.Deps) { d.Machine = nil })
	_, err = none.svc.Machine.Fax(ctx, r)
	testenv.WantCode(t, err, machine.CodeMachinePaymentsMissing)
}

func TestMachineQuote(t *testing.T) {
	m := newMachineEnv(t)
	q, err := m.svc.Machine.Quote(ctx, machine.QuoteRequest{To: deliverable, PDF: testenv.MinimalPDF(4)})
	if err != nil {
		t.Fatal(err)
	}
	if q.Pages != 4 || len(q.Offers) != 2 || q.Offers[0].Method != "stripe" || q.Offers[1].Amount != fmt.Sprint(q.AmountMicros) || !q.Offers[0].Refunds || q.Offers[1].Refunds {
		t.Fatalf("quote: %+v", q)
	}
	_, err = m.svc.Machine.Quote(ctx, machine.QuoteRequest{To: deliverable, PDF: []byte("\x89PNG\r\n\x1a\nnot really")})
	testenv.WantCode(t, err, documents.CodeUnsupportedType)
	_, err = m.svc.Machine.Quote(ctx, machine.QuoteRequest{To: "+15555550100", Pages: 1})
	testenv.WantCode(t, err, core.CodeInvalidDestination)
}

// A claim whose settlement was interrupted after the method charged: the
// sweeper finishes it with the same idempotency key, once, and a racing
// retry gets the same fax.
func TestMachineSweepFinishesInterruptedClaim(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-crash", 1)
	ch := challenge(t, m.fax(t, r), "stripe")
	payload := m.spt(t, "pm_card_visa")
	r.Credential = credential(ch, payload)
	// Crash simulation: the charge happened (same key as core derives),
	// the claim stayed settling; nothing else was recorded.
	m.crashAfterCharge(t, r, ch, payload)
	if m.stripe.Charges() != 1 {
		t.Fatal("setup: not charged")
	}
	// A retry while the lease lives: in progress.
	_, err := m.svc.Machine.Fax(ctx, r)
	testenv.WantCode(t, err, machine.CodePaymentInProgress)

	// The sweeper and a retry race for the lapsed claim: one settles it
	// (replaying the first charge), both end with the same fax.
	m.clk.Advance(5 * time.Minute)
	var wg sync.WaitGroup
	var retried *machine.FaxResult
	var retryErr error
	wg.Go(func() {
		if err := m.svc.Machine.Sweep(ctx); err != nil {
			t.Errorf("sweep: %v", err)
		}
	})
	wg.Go(func() { retried, retryErr = m.svc.Machine.Fax(ctx, r) })
	wg.Wait()
	if err := m.svc.Machine.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if m.stripe.Charges() != 1 || m.count(t, "SELECT count(*) FROM faxes WHERE owner_id = ?", core.MachineOwnerID) != 1 {
		t.Fatalf("charges %d", m.stripe.Charges())
	}
	out := m.fax(t, r)
	if out.Order == nil {
		t.Fatalf("retry after the sweep: %+v", out.Refusal)
	}
	if retryErr == nil && (retried.Order == nil || retried.Order.ID != out.Order.ID) {
		t.Fatalf("racing retry: %+v", retried)
	} else if retryErr != nil && core.ErrorCode(retryErr) != machine.CodePaymentInProgress {
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
	r.Credential = credential(ch, first)
	m.crashAfterCharge(t, r, ch, first)
	m.clk.Advance(3 * time.Minute)
	r.Credential = credential(ch, m.spt(t, "pm_card_mastercard"))
	out := m.fax(t, r)
	if out.Order == nil {
		t.Fatalf("take-over: %+v", out.Refusal)
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
func (m *machineEnv) crashAfterCharge(t *testing.T, r machine.FaxRequest, ch machine.Challenge, payload string) {
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
	_, err := broken.Machine.Fax(ctx, r)
	testenv.WantCode(t, err, machine.CodePaymentProcessorUnavailable)
	// The release put the lease to now; a crash leaves it running.
	if _, err := m.DB.SQL().ExecContext(ctx, m.rebind("UPDATE machine_claims SET lease_until = ? WHERE challenge_id = ?"),
		sqlTime(m, m.clk.Now().Add(2*time.Minute)), ch.ID); err != nil {
		t.Fatal(err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// newMachineEnvSharing is a second service over m's store and stand-ins
// whose Stripe transport is wrapped.
func newMachineEnvSharing(t *testing.T, m *machineEnv, wrap func(http.RoundTripper) http.RoundTripper) *services.Set {
	t.Helper()
	sm, err := stripe.New(stripe.Options{SecretKey: "sk_test_x", BaseURL: "https://stripe.test", HTTPClient: &http.Client{Transport: wrap(m.stripe.Transport())}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.svc.Config()
	deps := services.Deps{Store: m.Store, Blobs: nil, Converter: convert.New(convert.Options{}), Destination: phone.New(), Queue: m.Queue,
		Providers: map[core.Mode]faxes.Provider{core.ModeTest: simulated.New(simulated.Options{Now: m.clk.Now})}, MachineBinder: mpp.Binder{}, Machine: []machine.Method{{Method: sm, Mode: core.ModeTest, Currency: "usd", UnitsPerUSD: 100, MinAmount: 50, Refunds: true}}}
	blobs, err := blob.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(t.TempDir(), "blobs2")))
	if err != nil {
		t.Fatal(err)
	}
	deps.Blobs = blobs
	svc, err := services.New(cfg, deps)
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
	if err := m.svc.Faxes.Deliver(ctx, out.Order.ID); err != nil {
		t.Fatal(err)
	}
	st := m.fax(t, machineBody("+12125550103", "req-fail", 2))
	if st.Order.Status != faxes.Failed || st.Order.Refund != machine.RefundDue {
		t.Fatalf("failed fax: %+v", st.Order)
	}
	for range 2 {
		if err := m.svc.Machine.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c := m.charge(t, out.Order.ID)
	if c.Status != credits.ChargeRefunded || c.RefundState != machine.RefundDone || !strings.HasPrefix(c.RefundReference, "re_") || c.RefundDueUnits != c.AmountUnits {
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
	r.Credential = credential(ch, tempoPayload(hashOf('b')))
	tout := m.fax(t, r)
	if tout.Order == nil {
		t.Fatalf("tempo: %+v", tout.Refusal)
	}
	if err := m.svc.Faxes.Deliver(ctx, tout.Order.ID); err != nil {
		t.Fatal(err)
	}
	if c := m.charge(t, tout.Order.ID); c.RefundState != machine.RefundNotRefundable || c.Status != credits.ChargeSucceeded {
		t.Fatalf("tempo charge: %+v", c)
	}

	// A partial fax: the unsent pages' share, rounded down.
	pout := m.paid(t, machineBody("+12125550104", "req-partial", 4))
	if err := m.svc.Faxes.Deliver(ctx, pout.Order.ID); err != nil {
		t.Fatal(err)
	}
	pc := m.charge(t, pout.Order.ID)
	if pc.RefundState != machine.RefundDue || pc.RefundDueUnits <= 0 || pc.RefundDueUnits >= pc.AmountUnits {
		t.Fatalf("partial charge: %+v", pc)
	}
	// A delivered fax: nothing.
	dout := m.paid(t, machineBody(deliverable, "req-ok", 1))
	if err := m.svc.Faxes.Deliver(ctx, dout.Order.ID); err != nil {
		t.Fatal(err)
	}
	if dc := m.charge(t, dout.Order.ID); dc.RefundState != machine.RefundNone {
		t.Fatalf("delivered charge: %+v", dc)
	}
}

func (m *machineEnv) charge(t *testing.T, faxID string) *credits.Charge {
	t.Helper()
	c, err := m.Store.GetChargeByFax(ctx, faxID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// legacyRow rewrites the stored challenges of requestID as the version
// before typed challenges wrote them: {id, method, intent, header}, the
// header the rendered WWW-Authenticate value, and no realm. It returns the
// challenges it replaced.
func (m *machineEnv) legacyRow(t *testing.T, requestID string) []machine.Challenge {
	t.Helper()
	row, err := m.Store.GetMachineRequest(ctx, requestID)
	if err != nil {
		t.Fatal(err)
	}
	var chs []machine.Challenge
	if err := json.Unmarshal(row.Challenges, &chs); err != nil {
		t.Fatal(err)
	}
	type legacy struct {
		ID     string `json:"id"`
		Method string `json:"method"`
		Intent string `json:"intent"`
		Header string `json:"header"`
	}
	var old []legacy
	for _, c := range chs {
		w := mpp.FromMachine(c)
		h, err := w.Header()
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, legacy{ID: c.ID, Method: c.Method, Intent: c.Intent, Header: h})
	}
	raw, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.DB.SQL().ExecContext(ctx, m.rebind("UPDATE machine_requests SET challenges = ? WHERE request_id = ?"), raw, requestID); err != nil {
		t.Fatal(err)
	}
	return chs
}

func (m *machineEnv) storedChallenges(t *testing.T, requestID string) (*machine.Request, []machine.Challenge) {
	t.Helper()
	row, err := m.Store.GetMachineRequest(ctx, requestID)
	if err != nil {
		t.Fatal(err)
	}
	var chs []machine.Challenge
	if err := json.Unmarshal(row.Challenges, &chs); err != nil {
		t.Fatal(err)
	}
	return row, chs
}

// A request whose challenges an earlier version stored as rendered
// headers: they count as expired and are issued again, typed; a payer who
// pays one of the old ones still pays (it verifies by its binding).
func TestMachineLegacyChallenges(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-legacy", 1)
	m.fax(t, r)
	old := m.legacyRow(t, "req-legacy")

	res := m.fax(t, r)
	wantRefusal(t, res, machine.PaymentRequired)
	if len(res.Challenges) != 2 || res.Challenges[0].ID == old[0].ID || res.Challenges[0].Opaque["generation"] != "1" {
		t.Fatalf("legacy challenges were not issued again: %+v", res.Challenges)
	}
	row, stored := m.storedChallenges(t, "req-legacy")
	if row.Generation != 1 || len(stored) != 2 || stored[0].Realm == "" || stored[0].ID != res.Challenges[0].ID {
		t.Fatalf("re-issued row: generation %d, %s", row.Generation, row.Challenges)
	}

	r.Credential = credential(old[0], m.spt(t, "pm_card_visa"))
	out := m.fax(t, r)
	if out.Order == nil || out.Receipt == nil || out.Receipt.ChallengeID != old[0].ID {
		t.Fatalf("paying an old challenge: %+v %+v", out.Refusal, out.Receipt)
	}
}

// The sweeper finishing a claim of a legacy row: a refusal re-issues the
// open request's challenges typed; a payment still pending on a request
// paid meanwhile answers fresh challenges without storing them.
func TestMachineLegacyChallengesSwept(t *testing.T) {
	m := newMachineEnv(t)
	r := machineBody(deliverable, "req-legacy-sweep", 1)
	ch := challenge(t, m.fax(t, r), "stripe")
	declined := m.spt(t, "pm_card_chargeDeclined")
	r.Credential = credential(ch, declined)
	m.crashAfterCharge(t, r, ch, declined)
	m.legacyRow(t, "req-legacy-sweep")
	m.clk.Advance(5 * time.Minute)
	if err := m.svc.Machine.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	claim, err := m.Store.GetMachineClaim(ctx, ch.ID)
	if err != nil || claim.State != machine.ClaimFailed {
		t.Fatalf("claim %+v %v", claim, err)
	}
	if row, stored := m.storedChallenges(t, "req-legacy-sweep"); row.Generation != 1 || len(stored) != 2 || stored[0].Realm == "" {
		t.Fatalf("swept legacy row: generation %d, %s", row.Generation, row.Challenges)
	}

	// A tempo payment left pending, then the request paid by card.
	p := machineBody(deliverable, "req-legacy-paid", 1)
	first := m.fax(t, p)
	m.tempo.AddPending(hashOf('d'))
	p.Credential = credential(challenge(t, first, "tempo"), tempoPayload(hashOf('d')))
	wantRefusal(t, m.fax(t, p), machine.VerificationFailed)
	p.Credential = credential(challenge(t, first, "stripe"), m.spt(t, "pm_card_visa"))
	if out := m.fax(t, p); out.Order == nil {
		t.Fatalf("paid by card: %+v", out.Refusal)
	}
	m.legacyRow(t, "req-legacy-paid")
	before, _ := m.Store.GetMachineRequest(ctx, "req-legacy-paid")
	m.clk.Advance(5 * time.Minute)
	if err := m.svc.Machine.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if after, _ := m.Store.GetMachineRequest(ctx, "req-legacy-paid"); string(after.Challenges) != string(before.Challenges) || after.Generation != 0 {
		t.Fatalf("a paid row's challenges were rewritten: %s", after.Challenges)
	}
}

// earlierReceipt is the Payment-Receipt the version that stored receipts
// sent (and stored for replays), written out by hand: base64url of its
// JSON with the members in this order, the timestamp in UTC to the
// microsecond with trailing zeros dropped.
func earlierReceipt(method, timestamp, reference, challengeID, requestID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(`{"status":"success","method":"` + method + `","timestamp":"` + timestamp +
		`","reference":"` + reference + `","challengeId":"` + challengeID + `","externalId":"` + requestID + `"}`))
}

// noReference is a method whose charges come back without a reference:
// the receipt names the charge instead.
type noReference struct{ payments.PaymentMethod }

func (n noReference) Charge(ctx context.Context, r payments.ChargeRequest) (payments.Result, error) {
	res, err := n.PaymentMethod.Charge(ctx, r)
	res.Reference = ""
	return res, err
}

// The receipt derived from the charge is, byte for byte, the one the
// version that stored it sent, at payment and on every replay, so rows it
// wrote need nothing.
func TestMachineReceiptAsBefore(t *testing.T) {
	m := newMachineEnv(t, func(_ *services.Config, d *services.Deps) {
		d.Machine[0].Method = noReference{d.Machine[0].Method}
	})
	m.clk.Advance(1234567891 * time.Nanosecond) // 12:00:01.234567891, stored to the microsecond
	encode := func(r *machine.Receipt) string {
		t.Helper()
		if r == nil {
			t.Fatal("no receipt")
		}
		v, err := mpp.ReceiptOf(*r).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	r := machineBody(deliverable, "req-receipt", 1)
	ch := challenge(t, m.fax(t, r), "tempo")
	var req struct{ Amount string }
	_ = json.Unmarshal(ch.Request, &req)
	amount, _ := new(big.Int).SetString(req.Amount, 10)
	m.tempo.AddTransfer(hashOf('c'), tempoPayer, tempoRecipient, tempoToken, amount, true)
	r.Credential = credential(ch, tempoPayload(hashOf('c')))
	out := m.fax(t, r)
	want := earlierReceipt("tempo", "2026-11-01T12:00:01.234567Z", hashOf('c'), ch.ID, "req-receipt")
	if got := encode(out.Receipt); got != want {
		t.Fatalf("receipt\n got %s\nwant %s", got, want)
	}
	m.clk.Advance(24 * time.Hour)
	r.Credential = nil
	if got := encode(m.fax(t, r).Receipt); got != want {
		t.Fatalf("replayed receipt\n got %s\nwant %s", got, want)
	}

	// No reference from the method: the charge's id, as before.
	m.clk.Advance(500 * time.Millisecond)
	s := machineBody(deliverable, "req-receipt-card", 1)
	sch := challenge(t, m.fax(t, s), "stripe")
	s.Credential = credential(sch, m.spt(t, "pm_card_visa"))
	paid := m.fax(t, s)
	if paid.Order == nil {
		t.Fatalf("card: %+v", paid.Refusal)
	}
	c := m.charge(t, paid.Order.ID)
	if c.Reference != "" || !strings.HasPrefix(c.ID, "chg_") {
		t.Fatalf("charge %+v", c)
	}
	want = earlierReceipt("stripe", "2026-11-02T12:00:01.734567Z", c.ID, sch.ID, "req-receipt-card")
	if got := encode(paid.Receipt); got != want {
		t.Fatalf("receipt without reference\n got %s\nwant %s", got, want)
	}
	s.Credential = nil
	if got := encode(m.fax(t, s).Receipt); got != want {
		t.Fatalf("replayed receipt without reference\n got %s\nwant %s", got, want)
	}
}

// A challenge lives 5 minutes (ChallengeTTL, to the second), driven by the
// injected clock: paid a nanosecond before its expiry it is charged and the
// fax is ordered; presented at its expiry it is refused payment-expired
// with fresh challenges, and nothing is charged or claimed for it.
func TestMachineChallengeExpiry(t *testing.T) {
	m := newMachineEnv(t)
	inTime, late := machineBody(deliverable, "req-in-time", 1), machineBody(deliverable, "req-late", 2)
	chIn, chLate := challenge(t, m.fax(t, inTime), "stripe"), challenge(t, m.fax(t, late), "stripe")
	if want := m.clk.Now().Add(5 * time.Minute).Truncate(time.Second); !chIn.Expires.Equal(want) || !chLate.Expires.Equal(want) {
		t.Fatalf("challenges expire %v and %v, want %v", chIn.Expires, chLate.Expires, want)
	}
	inTime.Credential, late.Credential = credential(chIn, m.spt(t, "pm_card_visa")), credential(chLate, m.spt(t, "pm_card_visa"))

	m.clk.Advance(chIn.Expires.Sub(m.clk.Now()) - time.Nanosecond)
	if out := m.fax(t, inTime); out.Order == nil || out.Receipt == nil || out.Receipt.ChallengeID != chIn.ID {
		t.Fatalf("paid a nanosecond before the expiry: %+v", out.Refusal)
	}

	m.clk.Advance(time.Nanosecond)
	out := m.fax(t, late)
	wantRefusal(t, out, machine.PaymentExpired)
	if fresh := challenge(t, out, "stripe"); fresh.ID == chLate.ID || !fresh.Expires.After(m.clk.Now()) {
		t.Fatalf("payment-expired without a fresh challenge: %+v", fresh)
	}
	if m.stripe.Charges() != 1 || m.count(t, "SELECT count(*) FROM machine_claims WHERE challenge_id = ?", chLate.ID) != 0 {
		t.Fatal("the expired challenge was charged or claimed")
	}
}
