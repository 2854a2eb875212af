package tasks_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/payments/testcard"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/internal/testenv"
)

// testSigner is core.Signer with an in-test Ed25519 key, so the test can
// verify what core signs.
type testSigner struct {
	key ed25519.PrivateKey
	pub ed25519.PublicKey
}

func newTestSigner(t *testing.T) *testSigner {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &testSigner{key: key, pub: pub}
}

func (s *testSigner) SignJWT(ctx context.Context, typ string, claims any) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: s.key},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)).WithHeader("kid", "test-key"))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	obj, err := sig.Sign(payload)
	if err != nil {
		return "", err
	}
	return obj.CompactSerialize()
}

func (s *testSigner) JWKSURL() string { return "http://faxhub.test/api/auth/jwks" }

// countingCard is the test card, counting charges and failing the first
// failFirst of them without a verdict (a processor that cannot be reached).
type countingCard struct {
	testcard.Method
	charges   atomic.Int64
	failFirst atomic.Int64
	keys      sync.Map
	refunds   atomic.Int64
	// during, when set, runs inside Charge (a race with the charge).
	during func()
}

func (c *countingCard) Refund(ctx context.Context, r payments.RefundRequest) (payments.Result, error) {
	c.refunds.Add(1)
	return c.Method.Refund(ctx, r)
}

func (c *countingCard) Charge(ctx context.Context, r payments.ChargeRequest) (payments.Result, error) {
	c.charges.Add(1)
	c.keys.Store(r.IdempotencyKey, true)
	if c.during != nil {
		c.during()
	}
	if c.failFirst.Add(-1) >= 0 {
		return payments.Result{}, errors.New("processor unreachable")
	}
	return c.Method.Charge(ctx, r)
}

type ap2Env struct {
	*testenv.Env
	svc    *services.Set
	clk    *testenv.Clock
	signer *testSigner
	card   *countingCard
	p      core.Principal
}

// newAP2Env builds a service over a testenv store with the in-test signer
// and a counting test card, on an adjustable clock.
func newAP2Env(t *testing.T) *ap2Env {
	t.Helper()
	clk := testenv.NewClockAt(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.Now = clk.Now }))
	ae := &ap2Env{Env: e, clk: clk, signer: newTestSigner(t), card: &countingCard{}}
	svc, err := services.New(services.Config{Config: core.Config{BaseURL: "http://faxhub.test", Now: clk.Now}, Documents: documents.Config{UploadSecret: bytes.Repeat([]byte{7}, 32)}}, services.Deps{Store: e.Store, Signer: ae.signer, PaymentMethods: map[core.Mode]payments.PaymentMethod{core.ModeTest: ae.card}})
	if err != nil {
		t.Fatal(err)
	}
	ae.svc, ae.p = svc, e.Principal(t, e.KeyATest)
	// An agent as the owner knows it: the approval names it.
	ae.p.ClientID, ae.p.ClientName = "oac_test", "Claude Desktop"
	return ae
}

func (e *ap2Env) start(t *testing.T, pack string) *tasks.View {
	t.Helper()
	v, err := e.svc.Tasks.StartCreditPurchase(ctx, e.p, "buy_credits", "", pack)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mandateFor(v *tasks.View, id, token string) tasks.PaymentMandate {
	return tasks.PaymentMandate{
		ID: id, CartID: v.Purchase.ID, Currency: "USD", Value: core.FormatUSD(v.Purchase.AmountMicros),
		MethodName: "CARD", Details: json.RawMessage(fmt.Sprintf(`{"token":%q}`, token)),
	}
}

func (e *ap2Env) submit(t *testing.T, v *tasks.View, m tasks.PaymentMandate) (*tasks.View, *approvals.Approval) {
	t.Helper()
	got, err := e.svc.Tasks.SubmitPaymentMandate(ctx, e.p, v.ID, m)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != tasks.InputRequired || got.Purchase.ApprovalID == nil {
		t.Fatalf("after the mandate: %s %q %+v", got.State, got.Message, got.Purchase)
	}
	a, err := e.svc.Approvals.Get(ctx, e.OwnerA.ID, *got.Purchase.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	return got, a
}

func (e *ap2Env) task(t *testing.T, id string) *tasks.View {
	t.Helper()
	v, err := e.svc.Tasks.Get(ctx, e.p, id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (e *ap2Env) purchases(t *testing.T) (purchased int64, entries int) {
	t.Helper()
	c, err := e.svc.Credits.Get(ctx, e.p, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, le := range c.Ledger {
		if le.Kind == credits.LedgerPurchase {
			entries++
		}
	}
	return c.AvailableMicros, entries
}

func (e *ap2Env) wantNoCharge(t *testing.T, cartID string) {
	t.Helper()
	if _, err := e.Store.GetChargeByKey(ctx, "ap2:"+cartID); !errors.Is(err, core.ErrNoRows) {
		t.Fatalf("a charge was recorded for %s: %v", cartID, err)
	}
}

func approve(uv bool, a *approvals.Approval) approvals.Decision {
	return approvals.Decision{Approve: true, BindingHash: a.BindingHash, UserVerified: uv}
}

// verifyCart checks a cart mandate as an agent would: the signature with
// the merchant's public key, the claims, and cart_hash over the contents
// exactly as received.
func verifyCart(t *testing.T, m *tasks.CartMandate, pub ed25519.PublicKey, cartID string, exp time.Time) {
	t.Helper()
	obj, err := jose.ParseSignedCompact(m.MerchantAuthorization, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	if h := obj.Signatures[0].Header; h.Algorithm != "EdDSA" || h.KeyID == "" || h.ExtraHeaders["typ"] != "JWT" {
		t.Fatalf("header %+v", h)
	}
	payload, err := obj.Verify(pub)
	if err != nil {
		t.Fatalf("merchant_authorization does not verify: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(payload, &raw); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(m.Contents)
	if raw["iss"] != "http://faxhub.test/api/auth" || raw["sub"] != cartID || raw["jti"] == "" ||
		raw["exp"] != float64(exp.Unix()) || raw["cart_hash"] != base64.RawURLEncoding.EncodeToString(sum[:]) {
		t.Fatalf("claims %s (cart hash of the contents %s)", payload, base64.RawURLEncoding.EncodeToString(sum[:]))
	}
}

func TestCreditPurchaseApprovedWithPasskey(t *testing.T) {
	e := newAP2Env(t)
	before, _ := e.purchases(t)
	v := e.start(t, "pack_10")
	if v.State != tasks.InputRequired || v.Kind != tasks.KindCreditPurchase || v.SubjectID != v.Purchase.ID ||
		!strings.HasPrefix(v.ID, core.PrefixTask) || !strings.HasPrefix(v.Purchase.ID, core.PrefixCart) || v.ContextID == "" {
		t.Fatalf("started: %+v", v)
	}
	if !strings.Contains(v.Message, v.Purchase.ID) || !strings.Contains(v.Message, "PaymentMandate") {
		t.Errorf("message %q", v.Message)
	}
	cartID := v.Purchase.ID
	exp := e.clk.Now().Add(tasks.CartTTL)
	want := `{"cart_expiry":"` + exp.Format(time.RFC3339) + `","id":"` + cartID + `","merchant_name":"faxhub",` +
		`"payment_request":{"details":{"display_items":[{"amount":{"currency":"USD","value":10},"label":"10 USD of fax credits"}],` +
		`"id":"` + cartID + `","total":{"amount":{"currency":"USD","value":10},"label":"Total"}},` +
		`"method_data":[{"data":{"mode":"test","network":["mastercard","visa"]},"supported_methods":"CARD"}]},` +
		`"user_cart_confirmation_required":true}`
	if string(v.CartMandate.Contents) != want {
		t.Fatalf("cart contents\n got %s\nwant %s", v.CartMandate.Contents, want)
	}
	verifyCart(t, v.CartMandate, e.signer.pub, cartID, exp)
	// Read again, the contents are the same bytes the signature covers.
	if again := e.task(t, v.ID); !bytes.Equal(again.CartMandate.Contents, v.CartMandate.Contents) || again.CartMandate.MerchantAuthorization != v.CartMandate.MerchantAuthorization {
		t.Fatal("the cart mandate changed between reads")
	}

	m := mandateFor(v, "pm_1", testcard.TokenVisa)
	m.Currency, m.Value, m.UserAuthorization = "usd", "10", "eyJ.user.auth"
	w, a := e.submit(t, v, m)
	if w.ApprovalURL != "http://faxhub.test/console/approvals/"+a.ID || !strings.Contains(w.Message, "approv") || w.CartMandate != nil {
		t.Fatalf("awaiting approval: %q %q", w.ApprovalURL, w.Message)
	}
	if a.Kind != approvals.KindCreditPurchase || !a.RequiresUV || a.Status != approvals.Pending ||
		a.BindingHash != approvals.BindingHash(map[string]any{"cartId": cartID, "amountMicros": int64(10_000_000), "packId": "pack_10", "paymentMandateId": "pm_1"}) ||
		a.Summary != "Buy 10 USD of fax credits for $10.00" || a.Requester != "Claude Desktop" || !a.ExpiresAt.Equal(e.clk.Now().Add(tasks.PurchaseApprovalTTL)) {
		t.Fatalf("approval %+v", a)
	}
	var details map[string]string
	if err := json.Unmarshal(a.Details, &details); err != nil || details["cartId"] != cartID || details["paymentMandateId"] != "pm_1" ||
		details["method"] != "card" || details["amount"] != "10.00 USD" || details["pack"] != "10 USD of fax credits" || details["userAuthorizationSha256"] == "" {
		t.Fatalf("approval details %s", a.Details)
	}
	if strings.Contains(string(a.Details), "tok_visa") || bytes.Contains(w.Purchase.Credential, []byte("tok_visa")) || len(w.Purchase.Credential) == 0 {
		t.Fatal("the card credential is stored or shown in the clear")
	}
	// The same mandate again (a retried message) reports where it stands.
	if again, err := e.svc.Tasks.SubmitPaymentMandate(ctx, e.p, v.ID, m); err != nil || *again.Purchase.ApprovalID != a.ID {
		t.Fatalf("resubmitted mandate: %+v %v", again, err)
	}
	if pending, _ := e.svc.Approvals.ListPending(ctx, e.OwnerA.ID); len(pending) != 1 {
		t.Fatalf("%d approvals pending after a resubmission", len(pending))
	}
	// A second mandate on the same task is refused.
	_, err := e.svc.Tasks.SubmitPaymentMandate(ctx, e.p, v.ID, mandateFor(v, "pm_2", testcard.TokenVisa))
	testenv.WantCode(t, err, tasks.CodePurchaseState)

	_, err = e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(false, a))
	testenv.WantCode(t, err, approvals.CodeUserVerification)
	if e.card.charges.Load() != 0 {
		t.Fatal("charged before the owner approved")
	}
	if _, err := e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a)); err != nil {
		t.Fatal(err)
	}
	done := e.task(t, v.ID)
	if done.State != tasks.Completed || done.Receipt == nil || done.Purchase.Credential != nil {
		t.Fatalf("after approval: %s %q %+v", done.State, done.Message, done.Purchase)
	}
	r := done.Receipt
	ch, err := e.Store.GetChargeByKey(ctx, "ap2:"+cartID)
	if err != nil {
		t.Fatal(err)
	}
	if r.CartID != cartID || r.ChargeID != ch.ID || r.Amount != "10.00" || r.Credit != "10.00" || r.Currency != "usd" || r.Method != "card" ||
		!strings.HasPrefix(r.Reference, "ch_test_") || r.Reference != ch.Reference || r.PackID != "pack_10" {
		t.Fatalf("receipt %+v", r)
	}
	if ch.Purpose != credits.ChargeCreditPack || ch.Subject != a.ID || ch.AmountMicros != 10_000_000 || ch.OwnerID != e.OwnerA.ID || ch.Mode != core.ModeTest {
		t.Fatalf("charge %+v", ch)
	}
	after, entries := e.purchases(t)
	if after-before != 10_000_000 || entries != 1 {
		t.Fatalf("balance %d → %d, %d purchase entries", before, after, entries)
	}
	if _, err := e.svc.Tasks.Cancel(ctx, e.p, v.ID); core.ErrorCode(err) != tasks.CodeNotCancelable {
		t.Fatalf("cancel of a completed purchase: %v", err)
	}
	if e.card.charges.Load() != 1 {
		t.Fatalf("%d charges", e.card.charges.Load())
	}
}

func TestCreditPurchaseDeclinedByOwner(t *testing.T) {
	e := newAP2Env(t)
	before, _ := e.purchases(t)
	v := e.start(t, "pack_25")
	_, a := e.submit(t, v, mandateFor(v, "pm_decline", testcard.TokenVisa))
	if _, err := e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{BindingHash: a.BindingHash}); err != nil {
		t.Fatal(err)
	}
	got := e.task(t, v.ID)
	if got.State != tasks.Failed || got.FailureCode != "approval_declined" || got.Purchase.Credential != nil {
		t.Fatalf("declined: %s %s %+v", got.State, got.FailureCode, got.Purchase)
	}
	e.wantNoCharge(t, v.Purchase.ID)
	if after, n := e.purchases(t); after != before || n != 0 || e.card.charges.Load() != 0 {
		t.Fatalf("declined purchase moved money: %d → %d, %d entries, %d charges", before, after, n, e.card.charges.Load())
	}
}

func TestCreditPurchaseCardDeclined(t *testing.T) {
	e := newAP2Env(t)
	before, _ := e.purchases(t)
	v := e.start(t, "pack_10")
	_, a := e.submit(t, v, mandateFor(v, "pm_card_declined", testcard.TokenDeclined))
	if _, err := e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a)); err != nil {
		t.Fatalf("a declined card must not fail the owner's approval: %v", err)
	}
	got := e.task(t, v.ID)
	if got.State != tasks.Failed || got.FailureCode != "payment_declined" || !strings.Contains(got.Message, "declined") || got.Purchase.Credential != nil {
		t.Fatalf("card declined: %s %s %q", got.State, got.FailureCode, got.Message)
	}
	e.wantNoCharge(t, v.Purchase.ID)
	if after, n := e.purchases(t); after != before || n != 0 {
		t.Fatalf("credits after a declined card: %d → %d, %d entries", before, after, n)
	}

	// An unknown token is invalid, not declined.
	v = e.start(t, "pack_10")
	_, a = e.submit(t, v, mandateFor(v, "pm_card_invalid", "tok_nope"))
	if _, err := e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a)); err != nil {
		t.Fatal(err)
	}
	if got := e.task(t, v.ID); got.State != tasks.Failed || got.FailureCode != "payment_invalid" || !strings.Contains(got.Message, "tok_visa") {
		t.Fatalf("invalid card: %s %s %q", got.State, got.FailureCode, got.Message)
	}
}

func TestPaymentMandateReplayedWritesNothing(t *testing.T) {
	e := newAP2Env(t)
	first := e.start(t, "pack_10")
	e.submit(t, first, mandateFor(first, "pm_once", testcard.TokenVisa))
	pending, _ := e.svc.Approvals.ListPending(ctx, e.OwnerA.ID)

	second := e.start(t, "pack_10")
	_, err := e.svc.Tasks.SubmitPaymentMandate(ctx, e.p, second.ID, mandateFor(second, "pm_once", testcard.TokenVisa))
	testenv.WantCode(t, err, tasks.CodeMandateReplayed)
	if got := e.task(t, second.ID); got.State != tasks.InputRequired || got.Purchase.Status != tasks.PurchaseCartOffered ||
		got.Purchase.PaymentMandateID != nil || got.Purchase.Credential != nil || got.Purchase.ApprovalID != nil {
		t.Fatalf("the replayed mandate wrote to the second cart: %+v", got.Purchase)
	}
	if now, _ := e.svc.Approvals.ListPending(ctx, e.OwnerA.ID); len(now) != len(pending) {
		t.Fatalf("the replayed mandate left an approval: %d → %d", len(pending), len(now))
	}
	// A fresh mandate id still works on the second cart.
	e.submit(t, second, mandateFor(second, "pm_fresh", testcard.TokenVisa))
}

func TestPaymentMandateMismatch(t *testing.T) {
	e := newAP2Env(t)
	v := e.start(t, "pack_10")
	other := e.start(t, "pack_25")
	for _, tc := range []struct {
		name  string
		edit  func(*tasks.PaymentMandate)
		code  string
		field string
	}{
		{"another cart", func(m *tasks.PaymentMandate) { m.CartID = other.Purchase.ID }, tasks.CodeCartMismatch, "payment_details_id"},
		{"unknown cart", func(m *tasks.PaymentMandate) { m.CartID = "cart_nope" }, tasks.CodeCartMismatch, "payment_details_id"},
		{"another amount", func(m *tasks.PaymentMandate) { m.Value = "25.00" }, tasks.CodeCartMismatch, "amount.value"},
		{"a cent less", func(m *tasks.PaymentMandate) { m.Value = "9.99" }, tasks.CodeCartMismatch, "amount.value"},
		{"not a number", func(m *tasks.PaymentMandate) { m.Value = "ten" }, tasks.CodeCartMismatch, "amount.value"},
		{"exponent", func(m *tasks.PaymentMandate) { m.Value = "1e1" }, tasks.CodeCartMismatch, "amount.value"},
		{"another currency", func(m *tasks.PaymentMandate) { m.Currency = "EUR" }, tasks.CodeCartMismatch, "currency"},
		{"another method", func(m *tasks.PaymentMandate) { m.MethodName = "https://tempo.xyz/pay" }, tasks.CodeCartMismatch, "method_name"},
		{"no mandate id", func(m *tasks.PaymentMandate) { m.ID = "" }, core.CodeInvalidRequest, "payment_mandate_id"},
		{"long mandate id", func(m *tasks.PaymentMandate) { m.ID = strings.Repeat("x", 129) }, core.CodeInvalidRequest, "payment_mandate_id"},
		{"no credential", func(m *tasks.PaymentMandate) { m.Details = nil }, core.CodeInvalidRequest, "details"},
		{"huge credential", func(m *tasks.PaymentMandate) {
			m.Details = json.RawMessage(`{"token":"` + strings.Repeat("a", 5000) + `"}`)
		}, core.CodeInvalidRequest, "details"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mandateFor(v, "pm_mismatch", testcard.TokenVisa)
			tc.edit(&m)
			_, err := e.svc.Tasks.SubmitPaymentMandate(ctx, e.p, v.ID, m)
			testenv.WantCode(t, err, tc.code)
			var ce *core.Error
			if !errors.As(err, &ce) || !strings.Contains(fmt.Sprint(ce.Fields["field"]), tc.field) {
				t.Fatalf("error %v names field %v, want %s", err, ce.Fields, tc.field)
			}
		})
	}
	if got := e.task(t, v.ID); got.Purchase.Status != tasks.PurchaseCartOffered {
		t.Fatalf("a refused mandate moved the purchase to %s", got.Purchase.Status)
	}
	// Nobody else's task, nor a task of another mode, takes a mandate.
	pb := e.Principal(t, e.KeyBTest)
	_, err := e.svc.Tasks.SubmitPaymentMandate(ctx, pb, v.ID, mandateFor(v, "pm_b", testcard.TokenVisa))
	testenv.WantCode(t, err, core.CodeNotFound)
	_, err = e.svc.Tasks.Get(ctx, pb, v.ID)
	testenv.WantCode(t, err, core.CodeNotFound)
}

func TestCartAndApprovalExpire(t *testing.T) {
	e := newAP2Env(t)
	v := e.start(t, "pack_10")
	e.clk.Advance(tasks.CartTTL)
	_, err := e.svc.Tasks.SubmitPaymentMandate(ctx, e.p, v.ID, mandateFor(v, "pm_late", testcard.TokenVisa))
	testenv.WantCode(t, err, tasks.CodeCartExpired)
	if got := e.task(t, v.ID); got.State != tasks.Failed || got.FailureCode != "cart_expired" || got.CartMandate != nil {
		t.Fatalf("expired cart: %s %s", got.State, got.FailureCode)
	}
	if _, err := e.svc.Tasks.Cancel(ctx, e.p, v.ID); core.ErrorCode(err) != tasks.CodeNotCancelable {
		t.Fatalf("cancel of an expired cart: %v", err)
	}

	v = e.start(t, "pack_10")
	_, a := e.submit(t, v, mandateFor(v, "pm_unapproved", testcard.TokenVisa))
	e.clk.Advance(tasks.PurchaseApprovalTTL + time.Second)
	_, err = e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a))
	testenv.WantCode(t, err, approvals.CodeApprovalState)
	got := e.task(t, v.ID)
	if got.State != tasks.Failed || got.FailureCode != "approval_expired" || got.Purchase.Credential != nil {
		t.Fatalf("expired approval: %s %s %+v", got.State, got.FailureCode, got.Purchase)
	}
	e.wantNoCharge(t, v.Purchase.ID)
}

func TestCancelCreditPurchase(t *testing.T) {
	e := newAP2Env(t)
	v := e.start(t, "pack_10")
	// Canceling needs the scope that started the task: an agent that may
	// buy credits but not draft faxes cancels its purchase; one that may
	// only draft faxes cannot.
	buyer, drafter := e.p, e.p
	buyer.Scopes = []core.Scope{core.ScopeCreditsCheckout}
	drafter.Scopes = []core.Scope{core.ScopeFaxDraft}
	_, err := e.svc.Tasks.Cancel(ctx, drafter, v.ID)
	testenv.WantCode(t, err, core.CodeInsufficientScope)
	got, err := e.svc.Tasks.Cancel(ctx, buyer, v.ID)
	if err != nil || got.State != tasks.Canceled {
		t.Fatalf("cancel offered cart: %+v %v", got, err)
	}
	_, err = e.svc.Tasks.SubmitPaymentMandate(ctx, e.p, v.ID, mandateFor(v, "pm_after_cancel", testcard.TokenVisa))
	testenv.WantCode(t, err, tasks.CodePurchaseState)

	v = e.start(t, "pack_10")
	_, a := e.submit(t, v, mandateFor(v, "pm_cancel", testcard.TokenVisa))
	got, err = e.svc.Tasks.Cancel(ctx, e.p, v.ID)
	if err != nil || got.State != tasks.Canceled || got.Purchase.Credential != nil {
		t.Fatalf("cancel awaiting approval: %+v %v", got, err)
	}
	// The request left the owner's inbox; approving it now changes nothing.
	if pending, _ := e.svc.Approvals.ListPending(ctx, e.OwnerA.ID); len(pending) != 0 {
		t.Fatalf("%d approvals still pending", len(pending))
	}
	_, err = e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a))
	testenv.WantCode(t, err, approvals.CodeApprovalState)
	if _, err := e.svc.Tasks.Cancel(ctx, e.p, v.ID); core.ErrorCode(err) != tasks.CodeNotCancelable {
		t.Fatalf("second cancel: %v", err)
	}
	e.wantNoCharge(t, v.Purchase.ID)
	if e.card.charges.Load() != 0 {
		t.Fatal("a canceled purchase was charged")
	}
}

// The owner's approval and agents reading the task race to complete the
// purchase: exactly one charge and one ledger entry come out, and a charge
// that could not reach a verdict when the owner approved is retried by the
// next read.
func TestCreditPurchaseCompletesOnce(t *testing.T) {
	e := newAP2Env(t)
	before, _ := e.purchases(t)
	v := e.start(t, "pack_100")
	_, a := e.submit(t, v, mandateFor(v, "pm_race", testcard.TokenMastercard))
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a)); err != nil {
			t.Error(err)
		}
	})
	for range 8 {
		wg.Go(func() {
			if _, err := e.svc.Tasks.Get(ctx, e.p, v.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := e.task(t, v.ID); got.State != tasks.Completed || got.Receipt.Credit != "105.00" {
		t.Fatalf("after the race: %s %q", got.State, got.Message)
	}
	after, n := e.purchases(t)
	if after-before != 105_000_000 || n != 1 {
		t.Fatalf("balance %d → %d with %d purchase entries", before, after, n)
	}
	e.card.keys.Range(func(k, _ any) bool {
		if k != "ap2:"+v.Purchase.ID {
			t.Errorf("charged under key %v", k)
		}
		return true
	})

	// The processor is unreachable when the owner approves: the approval
	// stands, the task says the charge is under way, the next read charges.
	e.card.failFirst.Store(1)
	v = e.start(t, "pack_10")
	_, a = e.submit(t, v, mandateFor(v, "pm_retry", testcard.TokenVisa))
	if got, err := e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a)); err != nil || got.Status != approvals.Approved {
		t.Fatalf("approval with the processor down: %+v %v", got, err)
	}
	if _, err := e.svc.Tasks.Cancel(ctx, e.p, v.ID); core.ErrorCode(err) != tasks.CodeNotCancelable {
		t.Fatalf("cancel of an approved purchase: %v", err)
	}
	if got := e.task(t, v.ID); got.State != tasks.Completed {
		t.Fatalf("retry on read: %s %q", got.State, got.Message)
	}
	if _, n := e.purchases(t); n != 2 {
		t.Fatalf("%d purchase entries, want 2", n)
	}
}

func TestStartCreditPurchaseRefusals(t *testing.T) {
	e := newAP2Env(t)
	_, err := e.svc.Tasks.StartCreditPurchase(ctx, e.p, "buy_credits", "", "pack_7")
	testenv.WantCode(t, err, credits.CodeUnknownPack)
	readOnly := e.p
	readOnly.Scopes = []core.Scope{core.ScopeFaxRead, core.ScopeCreditsRead}
	_, err = e.svc.Tasks.StartCreditPurchase(ctx, readOnly, "buy_credits", "", "pack_10")
	testenv.WantCode(t, err, core.CodeInsufficientScope)
	// Live mode has no AP2 payment method yet.
	_, err = e.svc.Tasks.StartCreditPurchase(ctx, e.Principal(t, e.KeyALive), "buy_credits", "", "pack_10")
	testenv.WantCode(t, err, tasks.CodePaymentUnavailable)
	if core.ErrorKind(err) != core.KindUnavailable {
		t.Fatalf("kind %v", core.ErrorKind(err))
	}
}

// The production wiring signs carts with the OAuth server's key.
func TestCreditPurchaseProductionWiring(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	v, err := e.Svc.Tasks.StartCreditPurchase(ctx, e.Principal(t, e.KeyATest), "buy_credits", "ctx-1", "pack_10")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := jose.ParseSignedCompact(v.CartMandate.MerchantAuthorization, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || obj.Signatures[0].Header.KeyID == "" || obj.Signatures[0].Header.Algorithm != "EdDSA" || v.ContextID != "ctx-1" {
		t.Fatalf("cart mandate %q: %v", v.CartMandate.MerchantAuthorization, err)
	}
	var cl map[string]any
	if err := json.Unmarshal(obj.UnsafePayloadWithoutVerification(), &cl); err != nil || cl["iss"] != "http://faxhub.test/api/auth" {
		t.Fatalf("claims %v %v", cl, err)
	}
}

// A purchase canceled while its card is being charged gets its money back
// and no credits.
func TestCreditPurchaseCanceledDuringCharge(t *testing.T) {
	e := newAP2Env(t)
	before, _ := e.purchases(t)
	v := e.start(t, "pack_10")
	w, a := e.submit(t, v, mandateFor(v, "pm_cancel_race", testcard.TokenVisa))
	e.card.during = func() {
		c := *w.Purchase
		c.Status, c.FailureCode, c.Credential = tasks.PurchaseCanceled, "canceled", nil
		if err := e.Store.UpdateCreditPurchase(ctx, &c, tasks.PurchaseAwaitingApproval); err != nil {
			t.Error(err)
		}
	}
	if _, err := e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a)); err != nil {
		t.Fatal(err)
	}
	e.card.during = nil
	if got := e.task(t, v.ID); got.State != tasks.Canceled {
		t.Fatalf("after the race: %s", got.State)
	}
	if e.card.charges.Load() != 1 || e.card.refunds.Load() != 1 {
		t.Fatalf("%d charges, %d refunds", e.card.charges.Load(), e.card.refunds.Load())
	}
	e.wantNoCharge(t, v.Purchase.ID)
	if after, n := e.purchases(t); after != before || n != 0 {
		t.Fatalf("credits after a canceled charge: %d → %d, %d entries", before, after, n)
	}
}
