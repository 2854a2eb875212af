package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/services"
)

// newNumber stores a number of owner o in status st, created at sec.
func newNumber(t *testing.T, s services.Store, o *accounts.Owner, e164 string, st numbers.Status, sec int) *numbers.Number {
	t.Helper()
	n := &numbers.Number{
		ID: core.NewID(core.PrefixNumber), OwnerID: o.ID, Mode: core.ModeTest, E164: e164, Country: "US", Region: "NY",
		Locality: "New York", Status: st, Provider: "simulated", MonthlyMicros: 2_000_000, CreatedAt: at(sec), UpdatedAt: at(sec),
	}
	switch st {
	case numbers.AwaitingPayment:
		until := at(sec + 3600)
		n.ReservedUntil = &until
	case numbers.Active, numbers.PastDue, numbers.Pending:
		through := at(sec + 30*86400)
		n.PaidThrough = &through
	}
	must(t, s.CreateNumber(t.Context(), n))
	return n
}

// testNumbers: a number reads back exactly, by owner, id, order and held
// e164; one number is held by one owner at a time in a mode (a released
// one frees it, the other mode is separate); updates are compare-and-set;
// counts and the sweeper's due list are right.
func testNumbers(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	n := newNumber(t, s, o, "+12125550110", numbers.AwaitingPayment, 0)
	got, err := s.GetNumber(ctx, o.ID, core.ModeTest, n.ID)
	must(t, err)
	wantEqual(t, "GetNumber", got, n)
	_, err = s.GetNumber(ctx, other.ID, core.ModeTest, n.ID)
	wantErr(t, "GetNumber of another owner", err, core.ErrNoRows)
	_, err = s.GetNumber(ctx, o.ID, core.ModeLive, n.ID)
	wantErr(t, "GetNumber in the other mode", err, core.ErrNoRows)
	got, err = s.GetHeldNumber(ctx, core.ModeTest, n.E164)
	must(t, err)
	wantEqual(t, "GetHeldNumber", got.ID, n.ID)

	// Held: nobody else can take it in test mode; live mode is separate.
	dup := *n
	dup.ID, dup.OwnerID = core.NewID(core.PrefixNumber), other.ID
	wantErr(t, "a held number again", s.CreateNumber(ctx, &dup), core.ErrExists)
	live := dup
	live.ID, live.Mode, live.ReservedUntil = core.NewID(core.PrefixNumber), core.ModeLive, ptr(at(100*86400))
	must(t, s.CreateNumber(ctx, &live))

	held, err := s.HeldNumbers(ctx, core.ModeTest, []string{n.E164, "+12125550111"})
	must(t, err)
	wantEqual(t, "HeldNumbers", held, map[string]bool{n.E164: true})
	counts, err := s.CountNumbers(ctx, o.ID, core.ModeTest)
	must(t, err)
	wantEqual(t, "CountNumbers", counts, map[numbers.Status]int{numbers.AwaitingPayment: 1})

	// Compare-and-set.
	n.Status, n.OrderRef, n.UpdatedAt = numbers.Pending, "ord_1", at(10)
	wantErr(t, "update from the wrong status", s.UpdateNumber(ctx, n, numbers.Active), core.ErrConflict)
	must(t, s.UpdateNumber(ctx, n, numbers.AwaitingPayment))
	got, err = s.GetNumberByOrderRef(ctx, "simulated", "ord_1")
	must(t, err)
	wantEqual(t, "GetNumberByOrderRef", got.ID, n.ID)
	_, err = s.GetNumberByOrderRef(ctx, "telnyx", "ord_1")
	wantErr(t, "GetNumberByOrderRef of another provider", err, core.ErrNoRows)

	// Released, it is free again and listed only with all.
	n.Status, n.ReleasedAt = numbers.Released, ptr(at(20))
	must(t, s.UpdateNumber(ctx, n, numbers.Pending))
	again := newNumber(t, s, other, n.E164, numbers.Active, 30)
	list, err := s.ListNumbers(ctx, o.ID, core.ModeTest, false)
	must(t, err)
	wantEqual(t, "ListNumbers held", len(list), 0)
	list, err = s.ListNumbers(ctx, o.ID, core.ModeTest, true)
	must(t, err)
	wantEqual(t, "ListNumbers all", len(list), 1)

	// Due: the active number once its month ends; a lapsed reservation.
	lapsed := newNumber(t, s, o, "+12125550112", numbers.AwaitingPayment, 0)
	due, err := s.DueNumbers(ctx, at(3601), at(0), "", 10)
	must(t, err)
	wantEqual(t, "DueNumbers at 3601", ids(due), []string{lapsed.ID})
	due, err = s.DueNumbers(ctx, at(31*86400), at(0), "", 10)
	must(t, err)
	if len(due) != 2 || !contains(ids(due), again.ID) || !contains(ids(due), lapsed.ID) {
		t.Fatalf("DueNumbers a month on: %v", ids(due))
	}
	first := min(due[0].ID, due[1].ID)
	due, err = s.DueNumbers(ctx, at(31*86400), at(0), first, 10)
	must(t, err)
	wantEqual(t, "DueNumbers after a cursor", len(due), 1)

	// A pending number is due once it has not moved since stalePending.
	stuck := newNumber(t, s, o, "+12125550113", numbers.Pending, 100)
	due, err = s.DueNumbers(ctx, at(101), at(99), "", 10)
	must(t, err)
	wantEqual(t, "DueNumbers, pending not stale yet", contains(ids(due), stuck.ID), false)
	due, err = s.DueNumbers(ctx, at(101), at(100), "", 10)
	must(t, err)
	wantEqual(t, "DueNumbers, pending stale", contains(ids(due), stuck.ID), true)
}

// testNumbersConcurrent: many owners racing for one number: exactly one
// holds it.
func testNumbersConcurrent(t *testing.T, s services.Store) {
	const racers = 8
	owners := make([]*accounts.Owner, racers)
	for i := range owners {
		owners[i] = newOwner(t, s)
	}
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.CreateNumber(t.Context(), &numbers.Number{
				ID: core.NewID(core.PrefixNumber), OwnerID: owners[i].ID, Mode: core.ModeTest, E164: "+14155550150", Country: "US",
				Status: numbers.AwaitingPayment, Provider: "simulated", MonthlyMicros: 1, CreatedAt: at(i), UpdatedAt: at(i),
			})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, core.ErrExists):
			t.Fatalf("racer: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d racers hold the number, want 1", won)
	}
}

// testInbound: a received fax reads back exactly, by owner and reference;
// a reference is recorded once; lists page newest first with a preview;
// updates are compare-and-set.
func testInbound(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	n := newNumber(t, s, o, "+12125550120", numbers.Active, 0)
	var made []*inbox.InboundFax
	for i := range 3 {
		f := &inbox.InboundFax{
			ID: core.NewID(core.PrefixInbound), OwnerID: o.ID, Mode: core.ModeTest, NumberID: n.ID, From: "+13125550100",
			To: n.E164, Status: inbox.Receiving, Provider: "simulated", ProviderRef: fmt.Sprintf("ref-%d", i),
			MediaURL: "https://media.example/x", ReceivedAt: at(i), CreatedAt: at(i), UpdatedAt: at(i),
		}
		must(t, s.CreateInboundFax(ctx, f))
		made = append(made, f)
	}
	got, err := s.GetInboundFax(ctx, o.ID, core.ModeTest, made[0].ID)
	must(t, err)
	wantEqual(t, "GetInboundFax", got, made[0])
	_, err = s.GetInboundFax(ctx, other.ID, core.ModeTest, made[0].ID)
	wantErr(t, "GetInboundFax of another owner", err, core.ErrNoRows)
	got, err = s.GetInboundFaxByRef(ctx, "simulated", "ref-1")
	must(t, err)
	wantEqual(t, "GetInboundFaxByRef", got.ID, made[1].ID)
	dup := *made[1]
	dup.ID = core.NewID(core.PrefixInbound)
	wantErr(t, "the same reference again", s.CreateInboundFax(ctx, &dup), core.ErrExists)

	f := made[2]
	long := make([]byte, inbox.PreviewChars+50)
	for i := range long {
		long[i] = 'a'
	}
	f.Status, f.Pages, f.Text, f.TextStatus, f.TextMethod, f.MediaURL, f.DocumentKey, f.Bytes = inbox.Received, 2, string(long), inbox.TextExtracted, "text", "", "inbox/x.pdf", 99
	f.ProcessedAt = ptr(at(50))
	wantErr(t, "update from the wrong status", s.UpdateInboundFax(ctx, f, inbox.Failed), core.ErrConflict)
	must(t, s.UpdateInboundFax(ctx, f, inbox.Receiving))
	got, err = s.GetInboundFaxByID(ctx, f.ID)
	must(t, err)
	wantEqual(t, "after update", got, f)

	page, err := s.ListInboundFaxes(ctx, inbox.Filter{OwnerID: o.ID, Mode: core.ModeTest, Limit: 2})
	must(t, err)
	wantEqual(t, "first page", ids2(page), []string{made[2].ID, made[1].ID})
	wantEqual(t, "preview length", len(page[0].Text), inbox.PreviewChars)
	wantEqual(t, "no media url in lists", page[1].MediaURL, "")
	page, err = s.ListInboundFaxes(ctx, inbox.Filter{OwnerID: o.ID, Mode: core.ModeTest, StartingAfter: made[1].ID, Limit: 2})
	must(t, err)
	wantEqual(t, "second page", ids2(page), []string{made[0].ID})
	page, err = s.ListInboundFaxes(ctx, inbox.Filter{OwnerID: other.ID, Mode: core.ModeTest, Limit: 2})
	must(t, err)
	wantEqual(t, "another owner's inbox", len(page), 0)
}

func ids(ns []numbers.Number) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

func ids2(fs []inbox.InboundFax) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
