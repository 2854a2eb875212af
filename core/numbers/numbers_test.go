package numbers_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestNumberSearchBuyAndIsolation(t *testing.T) {
	e := testenv.New(t)
	pa, pb := e.Principal(t, e.KeyATest), e.Principal(t, e.KeyBTest)

	found, err := e.Svc.Numbers.Search(ctx, pa, numbers.Search{Country: "us", AreaCode: "415", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 3 || !strings.HasPrefix(found[0].E164, "+1415555") || found[0].MonthlyPrice != "2.00" || found[0].Locality != "San Francisco" {
		t.Fatalf("search: %+v", found)
	}
	for _, bad := range []numbers.Search{{Country: "USA"}, {AreaCode: "41a"}, {Limit: 51}, {Locality: strings.Repeat("x", 65)}, {Locality: "a\x00b"}} {
		if _, err := e.Svc.Numbers.Search(ctx, pa, bad); core.ErrorCode(err) != core.CodeInvalidRequest {
			t.Errorf("search %+v: %v, want invalid_request", bad, err)
		}
	}
	if _, err := e.Svc.Numbers.Search(ctx, pa, numbers.Search{Country: "DE"}); core.ErrorCode(err) != core.CodeNumbersNotOffered {
		t.Errorf("search in DE: %v", err)
	}

	want := found[0].E164
	n, err := e.Svc.Numbers.Buy(ctx, pa, numbers.BuyRequest{Number: want})
	if err != nil {
		t.Fatal(err)
	}
	if n.Status != numbers.AwaitingPayment || n.CheckoutURL == "" || n.MonthlyCents != 200 {
		t.Fatalf("bought: %+v", n)
	}
	// Held: B cannot buy it, and searches no longer offer it.
	if _, err := e.Svc.Numbers.Buy(ctx, pb, numbers.BuyRequest{Number: want}); core.ErrorCode(err) != numbers.CodeNumberUnavailable {
		t.Fatalf("B buys A's number: %v", err)
	}
	again, _ := e.Svc.Numbers.Search(ctx, pb, numbers.Search{AreaCode: "415", Limit: 3})
	for _, a := range again {
		if a.E164 == want {
			t.Fatalf("held number still offered: %+v", again)
		}
	}
	if _, err := e.Svc.Numbers.Buy(ctx, pa, numbers.BuyRequest{Number: "+14155550999"}); core.ErrorCode(err) != numbers.CodeNumberUnavailable {
		t.Fatalf("buy a number not in the inventory: %v", err)
	}
	// B sees nothing of A's.
	if _, err := e.Svc.Numbers.Get(ctx, pb, n.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("B reads A's number: %v", err)
	}
	if _, err := e.Svc.Checkout.StartNumber(ctx, pb, n.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("B pays A's number: %v", err)
	}
	if _, err := e.Svc.Numbers.Release(ctx, pb, n.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("B releases A's number: %v", err)
	}

	cs, err := e.Svc.Checkout.StartNumber(ctx, pa, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	e.DrainQueue(t)
	n, err = e.Svc.Numbers.Get(ctx, pa, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n.Status != numbers.Active || n.PaidThrough == nil || n.ActivatedAt == nil || n.CheckoutURL != "" {
		t.Fatalf("after payment: %+v", n)
	}
	// Paying twice delivers nothing more.
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	list, err := e.Svc.Numbers.List(ctx, pa, false)
	if err != nil || len(list) != 1 || list[0].ID != n.ID {
		t.Fatalf("list A: %+v %v", list, err)
	}
	if list, _ := e.Svc.Numbers.List(ctx, pb, true); len(list) != 0 {
		t.Fatalf("list B: %+v", list)
	}
	// Released, it is offered again.
	n, err = e.Svc.Numbers.Release(ctx, pa, n.ID)
	if err != nil || n.Status != numbers.Released {
		t.Fatalf("release: %+v %v", n, err)
	}
	if _, err := e.Svc.Numbers.Release(ctx, pa, n.ID); core.ErrorCode(err) != numbers.CodeNumberState {
		t.Fatalf("release twice: %v", err)
	}
	if _, err := e.Svc.Numbers.Buy(ctx, pb, numbers.BuyRequest{Number: want}); err != nil {
		t.Fatalf("B buys the released number: %v", err)
	}
}

func TestNumberScopes(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	read := p
	read.Scopes = []core.Scope{core.ScopeFaxRead}
	if _, err := e.Svc.Numbers.Search(ctx, read, numbers.Search{}); err != nil {
		t.Fatalf("fax:read searches: %v", err)
	}
	if _, err := e.Svc.Numbers.Buy(ctx, read, numbers.BuyRequest{Number: "+14155550110"}); core.ErrorCode(err) != core.CodeInsufficientScope {
		t.Fatalf("fax:read buys: %v", err)
	}
	if _, err := e.Svc.Inbox.List(ctx, read, inbox.Query{}); core.ErrorCode(err) != core.CodeInsufficientScope {
		t.Fatalf("fax:read lists the inbox: %v", err)
	}
}

func TestNumberProvisioningFailureRefunds(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	before := avail(t, e, p)
	n := e.BuyNumber(t, p, simulated.FailingNumber)
	if n.Status != numbers.Failed || n.FailureCode != "provisioning_failed" {
		t.Fatalf("failing number: %+v", n)
	}
	if after := avail(t, e, p); after != before+2*core.MicrosPerDollar {
		t.Fatalf("balance %d → %d: the month paid at checkout should return as credits", before, after)
	}
}

func TestNumberRenewalFromCredits(t *testing.T) {
	e, clk := testenv.WithClock(t)
	p := e.Principal(t, e.KeyATest)
	n := e.BuyNumber(t, p, "+12025550150")
	if n.Status != numbers.Active {
		t.Fatalf("bought: %+v", n)
	}
	before := avail(t, e, p)
	clk.Advance(32 * 24 * time.Hour)
	if err := e.Svc.Numbers.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	n2, _ := e.Svc.Numbers.Get(ctx, p, n.ID)
	if n2.Status != numbers.Active || !n2.PaidThrough.After(*n.PaidThrough) {
		t.Fatalf("renewed: %+v", n2)
	}
	if after := avail(t, e, p); after != before-2*core.MicrosPerDollar {
		t.Fatalf("balance %d → %d, want the month (2.00) taken", before, after)
	}
	// Sweeping again the same day charges nothing more.
	if err := e.Svc.Numbers.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if after := avail(t, e, p); after != before-2*core.MicrosPerDollar {
		t.Fatalf("second sweep charged again: %d", after)
	}

	// Spend the rest; the next month cannot be paid: past_due, then
	// released after the grace period.
	spendAll(t, e, p)
	clk.Advance(31 * 24 * time.Hour)
	if err := e.Svc.Numbers.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	n3, _ := e.Svc.Numbers.Get(ctx, p, n.ID)
	if n3.Status != numbers.PastDue || n3.FailureCode != numbers.CodeRenewalInsufficientCredits || !strings.Contains(n3.FailureReason, "add credits") {
		t.Fatalf("unpaid renewal: %+v", n3)
	}
	clk.Advance(8 * 24 * time.Hour)
	if err := e.Svc.Numbers.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	n4, _ := e.Svc.Numbers.Get(ctx, p, n.ID)
	if n4.Status != numbers.Released || n4.FailureCode != numbers.CodeRenewalInsufficientCredits {
		t.Fatalf("after grace: %+v", n4)
	}
}

func TestNumberReservationLapses(t *testing.T) {
	e, clk := testenv.WithClock(t)
	pa, pb := e.Principal(t, e.KeyATest), e.Principal(t, e.KeyBTest)
	n, err := e.Svc.Numbers.Buy(ctx, pa, numbers.BuyRequest{Number: "+12125550130"})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	if _, err := e.Svc.Checkout.StartNumber(ctx, pa, n.ID); core.ErrorCode(err) != numbers.CodeNumberState {
		t.Fatalf("pay a lapsed reservation: %v", err)
	}
	if err := e.Svc.Numbers.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ = e.Svc.Numbers.Get(ctx, pa, n.ID); n.Status != numbers.Canceled {
		t.Fatalf("lapsed: %+v", n)
	}
	if _, err := e.Svc.Numbers.Buy(ctx, pb, numbers.BuyRequest{Number: "+12125550130"}); err != nil {
		t.Fatalf("B buys the freed number: %v", err)
	}
}

func TestSendFromOwnedNumber(t *testing.T) {
	e := testenv.New(t)
	pa, pb := e.Principal(t, e.KeyATest), e.Principal(t, e.KeyBTest)
	n := e.BuyNumber(t, pa, "+12125550140")
	f, _, err := e.Svc.Faxes.Send(ctx, pa, "from-1", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, pa, 1), From: n.E164})
	if err != nil {
		t.Fatal(err)
	}
	if f.From != n.E164 {
		t.Fatalf("from: %q", f.From)
	}
	f, _, err = e.Svc.Faxes.Send(ctx, pa, "from-2", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, pa, 1), From: n.ID})
	if err != nil || f.From != n.E164 {
		t.Fatalf("from by id: %+v %v", f, err)
	}
	if _, _, err := e.Svc.Faxes.Send(ctx, pb, "from-3", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, pb, 1), From: n.E164}); core.ErrorCode(err) != numbers.CodeFromNumberNotOwned {
		t.Fatalf("B sends from A's number: %v", err)
	}
	d, err := e.Svc.Faxes.CreateDraft(ctx, pa, faxes.CreateDraftRequest{To: "+12125550100", UploadToken: e.Upload(t, pa, 1), From: n.E164})
	if err != nil || d.From != n.E164 {
		t.Fatalf("draft from: %+v %v", d, err)
	}
}

func avail(t *testing.T, e *testenv.Env, p core.Principal) int64 {
	t.Helper()
	return e.Credits(t, p).AvailableMicros
}

// spendAll takes the whole available balance back (a reversal).
func spendAll(t *testing.T, e *testenv.Env, p core.Principal) {
	t.Helper()
	if _, err := e.Store.ReverseCredits(ctx, &credits.LedgerEntry{
		ID: core.NewID(core.PrefixLedger), OwnerID: p.OwnerID, Mode: p.Mode, Kind: credits.LedgerReversal,
		AmountMicros: -avail(t, e, p), Reason: "test: spend everything", CreatedAt: e.Svc.Kernel.Now(),
	}); err != nil {
		t.Fatal(err)
	}
}

func TestBuyNumberWithCredits(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	before := avail(t, e, p)
	n, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+14155550160", PayWithCredits: true})
	if err != nil {
		t.Fatal(err)
	}
	if n.Status != numbers.Pending || n.CheckoutURL != "" {
		t.Fatalf("bought with credits: %+v", n)
	}
	e.DrainQueue(t)
	if n, _ = e.Svc.Numbers.Get(ctx, p, n.ID); n.Status != numbers.Active {
		t.Fatalf("after the order: %+v", n)
	}
	if after := avail(t, e, p); after != before-2*core.MicrosPerDollar {
		t.Fatalf("balance %d → %d, want the month taken", before, after)
	}
	draftOnly := p
	draftOnly.Scopes = []core.Scope{core.ScopeFaxDraft}
	if _, err := e.Svc.Numbers.Buy(ctx, draftOnly, numbers.BuyRequest{Number: "+14155550161", PayWithCredits: true}); core.ErrorCode(err) != core.CodeInsufficientScope {
		t.Fatalf("fax:draft pays with credits: %v", err)
	}
	spendAll(t, e, p)
	if _, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+14155550162", PayWithCredits: true}); core.ErrorCode(err) != credits.CodeInsufficientCredits {
		t.Fatalf("no credits: %v", err)
	}
	// The refused purchase holds nothing.
	if _, err := e.Svc.Numbers.Buy(ctx, e.Principal(t, e.KeyBTest), numbers.BuyRequest{Number: "+14155550162"}); err != nil {
		t.Fatalf("B buys the number A could not pay for: %v", err)
	}
	// A task never spends credits.
	v, err := e.Svc.Tasks.StartNumberTask(ctx, p, "buy_number", "", numbers.BuyRequest{Number: "+14155550163", PayWithCredits: true})
	if err != nil || v.State != tasks.InputRequired {
		t.Fatalf("task with payWithCredits: %+v %v", v, err)
	}
}

// TestNumberOrderGivenUp: an order the provider never accepted fails the
// number and credits its month back, once.
func TestNumberOrderGivenUp(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	before := avail(t, e, p)
	n, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+14155550170", PayWithCredits: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.Svc.Numbers.GiveUpOrder(ctx, n.ID, errors.New("provider down")); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ = e.Svc.Numbers.Get(ctx, p, n.ID); n.Status != numbers.Failed || n.FailureCode != "provisioning_failed" {
		t.Fatalf("given up: %+v", n)
	}
	if after := avail(t, e, p); after != before {
		t.Fatalf("balance %d → %d: the month should be back, once", before, after)
	}
}

// TestNumberOrderRechecked: a pending number whose order's answer was lost
// (a webhook faxhub never got) is asked about again by the sweeper once it
// has not moved for a while, and becomes active.
func TestNumberOrderRechecked(t *testing.T) {
	e, clk := testenv.WithClock(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	n, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+14155550171", PayWithCredits: true})
	if err != nil {
		t.Fatal(err)
	}
	// The provider accepted the order; its answer never arrived.
	n.OrderRef = "simord_lost"
	if err := e.Store.UpdateNumber(ctx, n, numbers.Pending); err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Numbers.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Svc.Numbers.Get(ctx, p, n.ID); got.Status != numbers.Pending {
		t.Fatalf("rechecked too early: %+v", got)
	}
	clk.Advance(16 * time.Minute)
	if err := e.Svc.Numbers.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Svc.Numbers.Get(ctx, p, n.ID); got.Status != numbers.Active {
		t.Fatalf("after the recheck: %+v", got)
	}
}

// TestCutUTF8: cutting never splits a character (PostgreSQL refuses
// invalid UTF-8), so a caller id or a provider's reason in another script
// is stored cut, not refused.
func TestCutUTF8(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 2, "ab"},
		{"aé", 2, "a"},
		{"aé", 3, "aé"},
		{"日本", 4, "日"},
		{"日本", 0, ""},
		{"€uro", 2, ""},
		{"€uro", 3, "€"},
	} {
		if got := core.CutUTF8(tc.s, tc.n); got != tc.want {
			t.Errorf("CutUTF8(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	n, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+14155550172", PayWithCredits: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Numbers.PlaceOrder(ctx, n.ID); err != nil {
		t.Fatal(err)
	}
	f, err := e.Svc.Inbox.ReceiveFax(ctx, inbox.InboundNotice{Provider: n.Provider, ProviderRef: "ref-long", To: n.E164, From: strings.Repeat("日", 30)})
	if err != nil {
		t.Fatalf("a long caller id in another script: %v", err)
	}
	if got, _ := e.Svc.Inbox.Get(ctx, p, f.ID); got == nil || got.From != strings.Repeat("日", 21) {
		t.Fatalf("caller id stored %+v", got)
	}
}
