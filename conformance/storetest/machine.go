package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/services"
)

// testMachine: machine requests are recorded once per request_id and
// re-issued and paid by compare-and-set; a challenge is claimed once (also
// under concurrency), a lapsed settling claim is taken over keeping its
// key, a failed one is taken by another key only; a Tempo hash (method,
// reference) pays one charge; refunds are set once, leased by one caller
// and finished once; purges keep what is live.
func testMachine(t *testing.T, s services.Store) {
	ctx := t.Context()
	if o, err := s.GetOwner(ctx, core.MachineOwnerID); err != nil || o.Email != "machine-payments@faxhub.invalid" {
		t.Fatalf("machine owner: %+v %v", o, err)
	}
	r := &machine.Request{RequestID: "req-1", BodyDigest: "sha-256=:x:", Destination: "+12125550100", Country: "US", Pages: 2,
		PriceMicros: 210_000, Challenges: []byte(`[{"id":"c1"}]`), ChallengesExpireAt: at(300), Status: machine.RequestOpen,
		CreatedAt: at(0), UpdatedAt: at(0)}
	must(t, s.CreateMachineRequest(ctx, r))
	dup := *r
	wantErr(t, "second request_id", s.CreateMachineRequest(ctx, &dup), core.ErrExists)
	got, err := s.GetMachineRequest(ctx, "req-1")
	must(t, err)
	wantEqual(t, "GetMachineRequest", got, r)

	next := *r
	next.Generation, next.Challenges, next.ChallengesExpireAt, next.UpdatedAt = 1, []byte(`[{"id":"c2"}]`), at(600), at(301)
	must(t, s.ReissueMachineChallenges(ctx, &next))
	wantErr(t, "stale reissue", s.ReissueMachineChallenges(ctx, &next), core.ErrConflict)

	doc := newDocument(t, s, newOwner(t, s), core.ModeTest)
	f := newFax(t, s, doc)
	claim := &machine.Claim{ChallengeID: "c2", RequestID: "req-1", Method: "stripe", Mode: core.ModeTest, IdempotencyKey: "k1",
		Amount: 50, Currency: "usd", Credential: []byte("sealed"), State: machine.ClaimSettling, LeaseUntil: at(420),
		DocumentID: "doc_1", CreatedAt: at(300), UpdatedAt: at(300)}
	// Fifty concurrent claims of one challenge: one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range concurrency {
		wg.Go(func() {
			c := *claim
			if err := s.InsertMachineClaim(ctx, &c); err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else if !errors.Is(err, core.ErrExists) {
				t.Errorf("claim: %v", err)
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d claims won", won)
	}
	other := *claim
	other.IdempotencyKey, other.Credential, other.DocumentID, other.LeaseUntil = "k2", []byte("other"), "doc_2", at(600)
	wantErr(t, "take over a leased claim", s.TakeOverMachineClaim(ctx, &other, at(400)), core.ErrConflict)
	must(t, s.TakeOverMachineClaim(ctx, &other, at(420)))
	c, err := s.GetMachineClaim(ctx, "c2")
	must(t, err)
	if c.IdempotencyKey != "k1" || string(c.Credential) != "sealed" || c.DocumentID != "doc_1" || !c.LeaseUntil.Equal(at(600)) {
		t.Fatalf("a lapsed claim taken over lost its key: %+v", c)
	}
	stale, err := s.StaleMachineClaims(ctx, at(600), 10)
	must(t, err)
	if len(stale) != 1 {
		t.Fatalf("stale claims %d", len(stale))
	}
	wantErr(t, "renew with a stale lease", s.RenewMachineClaim(ctx, "c2", at(420), at(900)), core.ErrConflict)
	must(t, s.RenewMachineClaim(ctx, "c2", at(600), at(900)))
	must(t, s.ReleaseMachineClaim(ctx, "c2", at(500)))

	// Failed: another key takes it, the same key does not.
	must(t, s.FinishMachineClaim(ctx, "c2", machine.ClaimFailed, nil, "declined", at(501)))
	wantErr(t, "finish twice", s.FinishMachineClaim(ctx, "c2", machine.ClaimPaid, nil, "", at(502)), core.ErrConflict)
	same := *claim
	same.LeaseUntil = at(700)
	wantErr(t, "retake under the failed key", s.TakeOverMachineClaim(ctx, &same, at(502)), core.ErrConflict)
	must(t, s.TakeOverMachineClaim(ctx, &other, at(502)))
	c, err = s.GetMachineClaim(ctx, "c2")
	must(t, err)
	if c.State != machine.ClaimSettling || c.IdempotencyKey != "k2" || c.DocumentID != "doc_2" || c.Failure != "" {
		t.Fatalf("failed claim taken by another key: %+v", c)
	}
	must(t, s.FinishMachineClaim(ctx, "c2", machine.ClaimPaid, &f.ID, "", at(503)))
	c, err = s.GetMachineClaim(ctx, "c2")
	must(t, err)
	if c.State != machine.ClaimPaid || c.Credential != nil || c.FaxID == nil || *c.FaxID != f.ID {
		t.Fatalf("paid claim: %+v", c)
	}

	must(t, s.MarkMachineRequestPaid(ctx, "req-1", f.ID, []byte(`{"id":"x"}`), "rcpt", at(503)))
	wantErr(t, "pay twice", s.MarkMachineRequestPaid(ctx, "req-1", f.ID, nil, "", at(504)), core.ErrConflict)
	got, err = s.GetMachineRequest(ctx, "req-1")
	must(t, err)
	if got.Status != machine.RequestPaid || string(got.Response) != `{"id":"x"}` || got.Receipt != "rcpt" {
		t.Fatalf("paid request: %+v", got)
	}

	// Charges: a reference pays once per method; refunds.
	ch := &credits.Charge{ID: core.NewID(core.PrefixCharge), Mode: core.ModeTest, Method: "tempo", Purpose: credits.ChargeMachineFax,
		IdempotencyKey: "mpp_c2_a", AmountMicros: 210_000, Currency: "0xtoken", Reference: "0xhash", Status: credits.ChargeSucceeded,
		FaxID: &f.ID, Subject: "c2", CreatedAt: at(503), RequestID: "req-1", AmountUnits: 210_000}
	must(t, s.CreateCharge(ctx, ch))
	reuse := *ch
	reuse.ID, reuse.IdempotencyKey, reuse.FaxID = core.NewID(core.PrefixCharge), "mpp_c3_a", nil
	wantErr(t, "a reference paying twice", s.CreateCharge(ctx, &reuse), core.ErrExists)
	reuse.Method = "stripe"
	must(t, s.CreateCharge(ctx, &reuse))
	byFax, err := s.GetChargeByFax(ctx, f.ID)
	must(t, err)
	wantEqual(t, "GetChargeByFax", byFax, ch)

	must(t, s.SetChargeRefund(ctx, ch.ID, machine.RefundDue, 105_000))
	wantErr(t, "refund set twice", s.SetChargeRefund(ctx, ch.ID, machine.RefundDue, 1), core.ErrConflict)
	due, err := s.DueRefunds(ctx, at(600), 10)
	must(t, err)
	if len(due) != 1 || due[0].RefundDueUnits != 105_000 {
		t.Fatalf("due refunds: %+v", due)
	}
	must(t, s.LeaseRefund(ctx, ch.ID, at(600), at(720)))
	wantErr(t, "lease a leased refund", s.LeaseRefund(ctx, ch.ID, at(601), at(721)), core.ErrConflict)
	if due, _ := s.DueRefunds(ctx, at(601), 10); len(due) != 0 {
		t.Fatalf("a leased refund is listed: %+v", due)
	}
	must(t, s.FinishRefund(ctx, ch.ID, machine.RefundDone, "re_1", at(602)))
	wantErr(t, "finish a refund twice", s.FinishRefund(ctx, ch.ID, machine.RefundDone, "re_2", at(603)), core.ErrConflict)
	got2, err := s.GetCharge(ctx, ch.ID)
	must(t, err)
	if got2.Status != credits.ChargeRefunded || got2.RefundState != machine.RefundDone || got2.RefundReference != "re_1" {
		t.Fatalf("refunded: %+v", got2)
	}

	// Purges: an open request whose challenges expired, with its failed
	// claims; failed claims on their own after their retention.
	open := *r
	open.RequestID, open.ChallengesExpireAt = "req-open", at(100)
	must(t, s.CreateMachineRequest(ctx, &open))
	failed := *claim
	failed.ChallengeID, failed.RequestID, failed.State = "c-open", "req-open", machine.ClaimFailed
	must(t, s.InsertMachineClaim(ctx, &failed))
	n, err := s.PurgeMachineRequests(ctx, at(100))
	must(t, err)
	if n != 0 {
		t.Fatalf("purged %d requests before their expiry", n)
	}
	n, err = s.PurgeMachineRequests(ctx, at(101))
	must(t, err)
	if n != 1 {
		t.Fatalf("purged %d requests", n)
	}
	if _, err := s.GetMachineRequest(ctx, "req-1"); err != nil {
		t.Fatalf("a paid request was purged: %v", err)
	}
	wantErr(t, "claim of a purged request", func() error { _, err := s.GetMachineClaim(ctx, "c-open"); return err }(), core.ErrNoRows)
	failed.ChallengeID = "c-old"
	must(t, s.InsertMachineClaim(ctx, &failed))
	n, err = s.PurgeMachineClaims(ctx, at(301))
	must(t, err)
	if n != 1 {
		t.Fatalf("purged %d failed claims", n)
	}
}
