package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

func testIdempotency(t *testing.T, s services.Store) {
	ctx := t.Context()
	r := &core.IdempotencyRecord{
		Scope: "own_x:live:send_fax", Key: "key-1", RequestHash: core.HashSecret("request"), ResponseCode: 200,
		Response: []byte("{\"id\":\"fax_1\"}\x00\xff binary-safe"), CreatedAt: at(0),
	}
	must(t, s.InsertIdempotency(ctx, r))
	got, err := s.GetIdempotency(ctx, r.Scope, r.Key)
	must(t, err)
	wantEqual(t, "GetIdempotency", got, r)

	dup := *r
	dup.RequestHash, dup.Response = core.HashSecret("other"), []byte("other")
	wantErr(t, "InsertIdempotency of a taken key", s.InsertIdempotency(ctx, &dup), core.ErrExists)
	got, err = s.GetIdempotency(ctx, r.Scope, r.Key)
	must(t, err)
	wantEqual(t, "record after a refused insert", got, r)

	// The key is scoped.
	other := *r
	other.Scope = "own_x:test:send_fax"
	must(t, s.InsertIdempotency(ctx, &other))
	_, err = s.GetIdempotency(ctx, r.Scope, "key-2")
	wantErr(t, "GetIdempotency of a missing key", err, core.ErrNoRows)
	_, err = s.GetIdempotency(ctx, "own_y:live:send_fax", r.Key)
	wantErr(t, "GetIdempotency in another scope", err, core.ErrNoRows)
}

// testIdempotencyConcurrent races requests with one key, each writing an
// fax and the record in one transaction as SendFax does: one wins, the
// others get ErrExists and leave nothing behind.
func testIdempotencyConcurrent(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeLive)
	scope := o.ID + ":live:send_fax"
	errs := race(concurrency, func(i int) error {
		return inTx(ctx, s, func(tx services.Tx) error {
			ord := faxOf(doc, at(i))
			if err := tx.CreateFax(ctx, ord); err != nil {
				return err
			}
			return tx.InsertIdempotency(ctx, &core.IdempotencyRecord{
				Scope: scope, Key: "same-key", RequestHash: "h", ResponseCode: 200, Response: []byte(ord.ID), CreatedAt: at(i),
			})
		})
	})
	ok, exists := countErrs(t, "InsertIdempotency", errs, core.ErrExists)
	if ok != 1 || exists != concurrency-1 {
		t.Fatalf("InsertIdempotency: %d succeeded and %d got ErrExists, want 1 and %d", ok, exists, concurrency-1)
	}
	faxes, err := s.ListFaxes(ctx, faxes.Filter{OwnerID: o.ID, Mode: core.ModeLive})
	must(t, err)
	rec, err := s.GetIdempotency(ctx, scope, "same-key")
	must(t, err)
	if len(faxes) != 1 || string(rec.Response) != faxes[0].ID {
		t.Fatalf("after the race: %d faxes, record for %q; want exactly the winner's fax", len(faxes), rec.Response)
	}
}

// jsonEqual compares JSON by value: PostgreSQL's jsonb does not keep
// formatting.
func jsonEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if len(want) == 0 {
		if len(got) != 0 {
			t.Fatalf("%s: got %s, want empty", what, got)
		}
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got invalid JSON %q: %v", what, got, err)
	}
	must(t, json.Unmarshal(want, &w))
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: got %s, want %s", what, got, want)
	}
}

func wantApproval(t *testing.T, what string, got, want *approvals.Approval) {
	t.Helper()
	jsonEqual(t, what+": details", got.Details, want.Details)
	jsonEqual(t, what+": decision", got.Decision, want.Decision)
	g, w := *got, *want
	g.Details, g.Decision, w.Details, w.Decision = nil, nil, nil, nil
	wantEqual(t, what, g, w)
}

func newApproval(t *testing.T, s services.Store, o *accounts.Owner, created, expires int) *approvals.Approval {
	t.Helper()
	a := &approvals.Approval{
		ID: core.NewID(core.PrefixApproval), OwnerID: o.ID, Mode: core.ModeTest, Kind: approvals.KindOAuthConsent, Requester: "Claude",
		Summary: "Claude wants to send faxes", Details: json.RawMessage(`{"scopes": ["fax:send", "fax:read"], "client": {"name": "Claude"}}`),
		BindingHash: approvals.BindingHash(created), RequiresUV: true, Status: approvals.Pending,
		CreatedAt: at(created), ExpiresAt: at(expires),
	}
	must(t, s.CreateApproval(t.Context(), a))
	return a
}

func testApprovals(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	a1, a2, a3 := newApproval(t, s, o, 0, 600), newApproval(t, s, o, 10, 600), newApproval(t, s, o, 20, 30)
	newApproval(t, s, other, 5, 600)
	noDetails := &approvals.Approval{ID: core.NewID(core.PrefixApproval), OwnerID: o.ID, Mode: core.ModeTest, Kind: approvals.KindDevice, BindingHash: "h", Status: approvals.Pending, CreatedAt: at(1), ExpiresAt: at(600)}
	must(t, s.CreateApproval(ctx, noDetails))
	wantErr(t, "approval with a taken id", s.CreateApproval(ctx, a1), core.ErrExists)

	get := func(what string, want *approvals.Approval) {
		t.Helper()
		got, err := s.GetApproval(ctx, o.ID, want.ID)
		must(t, err)
		wantApproval(t, what, got, want)
	}
	get("GetApproval", a1)
	get("GetApproval without details", noDetails)
	_, err := s.GetApproval(ctx, other.ID, a1.ID)
	wantErr(t, "GetApproval of another owner's", err, core.ErrNoRows)

	list := func(what string, status approvals.Status, limit int, want ...*approvals.Approval) {
		t.Helper()
		got, err := s.ListApprovals(ctx, o.ID, status, limit)
		must(t, err)
		if len(got) != len(want) {
			t.Fatalf("%s: got %d approvals, want %d", what, len(got), len(want))
		}
		for i := range got {
			wantApproval(t, fmt.Sprintf("%s[%d]", what, i), &got[i], want[i])
		}
	}
	list("pending, newest first", approvals.Pending, 10, a3, a2, noDetails, a1)
	list("pending, limited", approvals.Pending, 2, a3, a2)

	decision := []byte(`{"scopes": ["fax:read"]}`)
	must(t, s.DecideApproval(ctx, o.ID, a1.ID, approvals.Approved, decision, at(100)))
	a1.Status, a1.Decision, a1.DecidedAt = approvals.Approved, decision, ptr(at(100))
	get("approved", a1)
	wantErr(t, "DecideApproval twice", s.DecideApproval(ctx, o.ID, a1.ID, approvals.Declined, nil, at(101)), core.ErrConflict)
	get("approved after a refused second decision", a1)

	must(t, s.DecideApproval(ctx, o.ID, a2.ID, approvals.Declined, nil, at(100)))
	a2.Status, a2.DecidedAt = approvals.Declined, ptr(at(100))
	get("declined without a decision", a2)

	wantErr(t, "DecideApproval after expiry", s.DecideApproval(ctx, o.ID, a3.ID, approvals.Approved, nil, at(31)), core.ErrConflict)
	get("expired approval left pending", a3)
	wantErr(t, "DecideApproval of another owner's", s.DecideApproval(ctx, other.ID, noDetails.ID, approvals.Approved, nil, at(50)), core.ErrNoRows)
	wantErr(t, "DecideApproval of a missing approval", s.DecideApproval(ctx, o.ID, "apr_missing", approvals.Approved, nil, at(50)), core.ErrNoRows)

	list("approved", approvals.Approved, 10, a1)
	list("any status", "", 0, a3, a2, noDetails, a1)

	// FindApproval: the newest of the owner's approvals of a kind with a
	// binding, in any status; never another owner's or another kind's.
	again := *a1
	again.ID, again.Status, again.Decision, again.DecidedAt, again.CreatedAt = core.NewID(core.PrefixApproval), approvals.Pending, nil, nil, at(40)
	must(t, s.CreateApproval(ctx, &again))
	found, err := s.FindApproval(ctx, o.ID, approvals.KindOAuthConsent, a1.BindingHash)
	must(t, err)
	wantApproval(t, "FindApproval: the newest with the binding", found, &again)
	found, err = s.FindApproval(ctx, o.ID, approvals.KindOAuthConsent, a2.BindingHash)
	must(t, err)
	wantApproval(t, "FindApproval of a declined one", found, a2)
	_, err = s.FindApproval(ctx, other.ID, approvals.KindOAuthConsent, a1.BindingHash)
	wantErr(t, "FindApproval for another owner", err, core.ErrNoRows)
	_, err = s.FindApproval(ctx, o.ID, approvals.KindDevice, a1.BindingHash)
	wantErr(t, "FindApproval of another kind", err, core.ErrNoRows)

	// A chat_send binding is asked once per owner: a second approval of it
	// is refused; another owner's, or another kind's, is not.
	chat := again
	chat.ID, chat.Kind, chat.BindingHash = core.NewID(core.PrefixApproval), approvals.KindChatSend, "chat-binding"
	must(t, s.CreateApproval(ctx, &chat))
	twice := chat
	twice.ID = core.NewID(core.PrefixApproval)
	wantErr(t, "a second chat_send approval of a binding", s.CreateApproval(ctx, &twice), core.ErrExists)
	twice.OwnerID = other.ID
	must(t, s.CreateApproval(ctx, &twice))
	consent := chat
	consent.ID, consent.Kind = core.NewID(core.PrefixApproval), approvals.KindOAuthConsent
	must(t, s.CreateApproval(ctx, &consent))
	found, err = s.FindApproval(ctx, o.ID, approvals.KindChatSend, "chat-binding")
	must(t, err)
	wantApproval(t, "FindApproval of a chat_send", found, &chat)
}

func newCheckout(t *testing.T, s services.Store, o *accounts.Owner, draftID *string) *checkout.Checkout {
	t.Helper()
	c := &checkout.Checkout{
		ID: core.NewID(core.PrefixCheckout), OwnerID: o.ID, Mode: core.ModeTest, Kind: checkout.KindCreditPack,
		PackID: "pack_25", AmountMicros: 25_000_000, CreditMicros: 27_500_000, Status: checkout.Open,
		ExternalID: "cs_test_" + core.RandomString(8), CreatedAt: at(0), ExpiresAt: at(3600),
	}
	if draftID != nil {
		c.Kind, c.PackID, c.DraftID, c.CreditMicros = checkout.KindDraft, "", draftID, 0
	}
	must(t, s.CreateCheckout(t.Context(), c))
	return c
}

func testCheckouts(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	pack := newCheckout(t, s, o, nil)
	draft := newDraft(t, s, newDocument(t, s, o, core.ModeTest))
	forDraft := newCheckout(t, s, o, &draft.ID)
	wantErr(t, "checkout with a taken id", s.CreateCheckout(ctx, pack), core.ErrExists)

	for _, want := range []*checkout.Checkout{pack, forDraft} {
		got, err := s.GetCheckout(ctx, want.ID)
		must(t, err)
		wantEqual(t, "GetCheckout", got, want)
	}
	_, err := s.GetCheckout(ctx, "chk_missing")
	wantErr(t, "GetCheckout of a missing checkout", err, core.ErrNoRows)

	must(t, s.MarkCheckoutPaid(ctx, pack.ID, at(60)))
	pack.Status, pack.PaidAt = checkout.Paid, ptr(at(60))
	got, err := s.GetCheckout(ctx, pack.ID)
	must(t, err)
	wantEqual(t, "paid checkout", got, pack)
	wantErr(t, "MarkCheckoutPaid twice", s.MarkCheckoutPaid(ctx, pack.ID, at(61)), core.ErrConflict)
	wantErr(t, "MarkCheckoutPaid of a missing checkout", s.MarkCheckoutPaid(ctx, "chk_missing", at(61)), core.ErrNoRows)

	// A processor's payment settles a checkout that ended locally too.
	live := newCheckout(t, s, o, nil)
	must(t, s.EndCheckout(ctx, live.ID, checkout.Expired))
	wantErr(t, "EndCheckout twice", s.EndCheckout(ctx, live.ID, checkout.Failed), core.ErrConflict)
	wantErr(t, "EndCheckout of a missing checkout", s.EndCheckout(ctx, "chk_missing", checkout.Expired), core.ErrNoRows)
	must(t, s.SettleCheckout(ctx, live.ID, "pi_"+live.ID, at(70)))
	wantErr(t, "SettleCheckout twice", s.SettleCheckout(ctx, live.ID, "pi_other", at(71)), core.ErrConflict)
	wantErr(t, "EndCheckout of a paid checkout", s.EndCheckout(ctx, live.ID, checkout.Expired), core.ErrConflict)
	live.Status, live.PaidAt, live.PaymentRef = checkout.Paid, ptr(at(70)), "pi_"+live.ID
	got, err = s.GetCheckoutByPaymentRef(ctx, "pi_"+live.ID)
	must(t, err)
	wantEqual(t, "GetCheckoutByPaymentRef", got, live)
	_, err = s.GetCheckoutByPaymentRef(ctx, "")
	wantErr(t, "GetCheckoutByPaymentRef of no payment", err, core.ErrNoRows)

	must(t, s.RecordCheckoutRefund(ctx, live.ID, 1000, 5_000_000, at(80)))
	wantErr(t, "RecordCheckoutRefund of the same amount", s.RecordCheckoutRefund(ctx, live.ID, 1000, 5_000_000, at(81)), core.ErrConflict)
	wantErr(t, "RecordCheckoutRefund of less", s.RecordCheckoutRefund(ctx, live.ID, 500, 1, at(81)), core.ErrConflict)
	must(t, s.RecordCheckoutRefund(ctx, live.ID, 2500, 1_000_000, at(82)))
	live.RefundedCents, live.ReversedMicros, live.RefundedAt = 2500, 6_000_000, ptr(at(82))
	got, err = s.GetCheckout(ctx, live.ID)
	must(t, err)
	wantEqual(t, "refunded checkout", got, live)
	wantErr(t, "RecordCheckoutRefund of an unpaid checkout", s.RecordCheckoutRefund(ctx, forDraft.ID, 1, 0, at(83)), core.ErrConflict)
}

func testReverseCredits(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	reversal := func(amount int64) *credits.LedgerEntry {
		return &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeLive, Kind: credits.LedgerReversal,
			AmountMicros: -amount, Reason: "refund", CreatedAt: at(1)}
	}
	took, err := s.ReverseCredits(ctx, reversal(1_000_000))
	must(t, err)
	if took != 0 {
		t.Fatalf("reversed %d of an empty balance", took)
	}
	grant(t, s, o, core.ModeLive, 3_000_000)
	for _, want := range []int64{2_000_000, 1_000_000, 0} { // asks 2 each time: takes what is left
		took, err := s.ReverseCredits(ctx, reversal(2_000_000))
		must(t, err)
		if took != want {
			t.Fatalf("reversed %d, want %d", took, want)
		}
	}
	b, err := s.GetBalance(ctx, o.ID, core.ModeLive)
	must(t, err)
	if b.AvailableMicros != 0 {
		t.Fatalf("balance %d after the reversals, want 0", b.AvailableMicros)
	}
	if _, err := s.ReverseCredits(ctx, &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeLive, Kind: credits.LedgerRefund, AmountMicros: -1}); err == nil {
		t.Fatal("ReverseCredits took a refund entry")
	}
}

// testClaimOnce races many callers at each single-use transition: exactly
// one wins, the others get ErrConflict, whether they call the store
// directly or inside a transaction.
func testClaimOnce(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeTest)
	for _, tc := range []struct {
		name string
		// setup prepares one fresh subject and returns the racing call.
		setup func(t *testing.T) func(q services.Tx, i int) error
	}{
		{"ClaimUpload", func(t *testing.T) func(services.Tx, int) error {
			u := newUpload(t, s, o)
			return func(q services.Tx, i int) error {
				return q.ClaimUpload(ctx, u.ID, fmt.Sprint("put", i), at(i), at(i+60))
			}
		}},
		{"MarkCheckoutPaid", func(t *testing.T) func(services.Tx, int) error {
			c := newCheckout(t, s, o, nil)
			return func(q services.Tx, i int) error { return q.MarkCheckoutPaid(ctx, c.ID, at(i)) }
		}},
		{"DecideApproval", func(t *testing.T) func(services.Tx, int) error {
			a := newApproval(t, s, o, 0, 3600)
			return func(q services.Tx, i int) error {
				status := approvals.Approved
				if i%2 == 1 {
					status = approvals.Declined
				}
				return q.DecideApproval(ctx, o.ID, a.ID, status, []byte(fmt.Sprintf(`{"caller": %d}`, i)), at(i))
			}
		}},
		{"SettleHold", func(t *testing.T) func(services.Tx, int) error {
			grant(t, s, o, core.ModeTest, 1_000_000)
			ord := newFax(t, s, doc)
			must(t, s.PlaceHold(ctx, holdFor(ord, 1_000_000)))
			return func(q services.Tx, i int) error {
				kind := credits.LedgerCapture
				if i%2 == 1 {
					kind = credits.LedgerRelease
				}
				_, err := q.SettleHold(ctx, ord.ID, kind, at(i))
				return err
			}
		}},
		{"MarkDraftPaid", func(t *testing.T) func(services.Tx, int) error {
			d := newDraft(t, s, doc)
			ord := faxOf(doc, at(1))
			ord.DraftID = &d.ID
			must(t, s.CreateFax(ctx, ord))
			return func(q services.Tx, i int) error { return q.MarkDraftPaid(ctx, d.ID, ord.ID) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := tc.setup(t)
			errs := race(concurrency, func(i int) error {
				if i%2 == 0 {
					return call(s, i)
				}
				return inTx(ctx, s, func(tx services.Tx) error { return call(tx, i) })
			})
			ok, conflicts := countErrs(t, tc.name, errs, core.ErrConflict)
			if ok != 1 || conflicts != concurrency-1 {
				t.Fatalf("%s: %d won and %d got ErrConflict, want 1 and %d", tc.name, ok, conflicts, concurrency-1)
			}
		})
	}
	if b := consistentBalance(t, s, o, core.ModeTest); b.HeldMicros != 0 {
		t.Fatalf("held %d after the hold was settled", b.HeldMicros)
	}
}

func testSecret(t *testing.T, s services.Store) {
	ctx := t.Context()
	a, err := s.Secret(ctx, "upload")
	must(t, err)
	if len(a) != 32 || bytes.Equal(a, make([]byte, 32)) {
		t.Fatalf("secret: %x, want 32 random bytes", a)
	}
	again, err := s.Secret(ctx, "upload")
	must(t, err)
	if !bytes.Equal(a, again) {
		t.Fatal("Secret changed between calls")
	}
	b, err := s.Secret(ctx, "session")
	must(t, err)
	if bytes.Equal(a, b) {
		t.Fatal("two secrets are equal")
	}

	got := make([][]byte, concurrency)
	errs := race(concurrency, func(i int) (err error) {
		got[i], err = s.Secret(ctx, "fresh")
		return err
	})
	for i, err := range errs {
		must(t, err)
		if !bytes.Equal(got[i], got[0]) {
			t.Fatalf("concurrent callers got different secrets: %x and %x", got[i], got[0])
		}
	}
}
